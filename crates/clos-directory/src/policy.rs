//! Access control: which services may resolve which (VL2 §4.2.1).
//!
//! "A server cannot send packets to an AA if the directory service refuses to provide it with an
//! LA": the directory is the enforcement point. With isolation on, an AA may resolve AAs of its
//! own service and of services its service is explicitly allowed to reach; everything else gets
//! an explicit `Denied` reply rather than silence, so an agent can tell policy from failure.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;

/// One permitted direction: AAs of `from` may resolve AAs of `to`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Allow {
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// When false every authenticated requester may resolve every AA.
    #[serde(default = "yes")]
    pub isolate_services: bool,
    #[serde(default)]
    pub allow: Vec<Allow>,
}

fn yes() -> bool {
    true
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig { isolate_services: true, allow: Vec::new() }
    }
}

/// The compiled policy. Lookups check it with the two services' names; the same-service case,
/// by far the most common, is a string comparison; no check allocates.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    isolate: bool,
    allowed: FxHashMap<String, FxHashSet<String>>,
    any_to: FxHashSet<String>,
}

impl Policy {
    pub fn new(config: &PolicyConfig) -> Policy {
        let mut policy = Policy { isolate: config.isolate_services, ..Policy::default() };
        for rule in &config.allow {
            if rule.from == "*" {
                policy.any_to.insert(rule.to.clone());
            } else {
                policy.allowed.entry(rule.from.clone()).or_default().insert(rule.to.clone());
            }
        }
        policy
    }

    /// Whether lookups are checked at all.
    pub fn isolates(&self) -> bool {
        self.isolate
    }

    /// May an AA of service `from` (None: the requester has no mapping) resolve one of `to`?
    pub fn allows(&self, from: Option<&str>, to: &str) -> bool {
        if !self.isolate {
            return true;
        }
        if self.any_to.contains(to) {
            return true;
        }
        match from {
            None => false,
            Some(from) => from == to || self.allowed.get(from).is_some_and(|targets| targets.contains(to)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_admits_own_service_and_explicit_rules_only() {
        let p = Policy::new(&PolicyConfig {
            isolate_services: true,
            allow: vec![Allow { from: "web".into(), to: "db".into() }, Allow { from: "*".into(), to: "dns".into() }],
        });
        assert!(p.allows(Some("web"), "web"));
        assert!(p.allows(Some("web"), "db"));
        assert!(!p.allows(Some("db"), "web"));
        assert!(p.allows(None, "dns"));
        assert!(!p.allows(None, "web"));
        let open = Policy::new(&PolicyConfig { isolate_services: false, allow: vec![] });
        assert!(open.allows(None, "anything"));
    }
}
