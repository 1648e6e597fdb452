//! Which writes a provisioner's credential authorises (issue 42).
//!
//! In VL2 "updates come from the network provisioning system" (§4.3.2) while agents only look
//! up, and the directory is where access control between services is enforced (§4.2.1). The
//! service an AA belongs to decides who may resolve it, so writing a mapping is writing policy:
//! a provisioner's credential names the services it may write (`services = ["web"]`, or
//! `["*"]` for all), and every update or removal is checked against the AA's current mapping:
//!
//! - the new mapping's service must be in scope (no AA can be created in, or moved into, a
//!   service outside it, such as registering oneself into `secret` to read its AAs);
//! - the AA's current service must be in scope (no re-pointing or removing another service's
//!   AA);
//! - an update never moves an AA from one service to another, whatever the scope: that takes a
//!   removal and a new update, so a service's membership only changes on purpose.
//!
//! The check runs in the batcher against the current mapping, and the store transaction that
//! commits the batch is guarded by the revision each decision was based on (`store.rs`), so a
//! decision made on a stale table is made again on the store's values rather than committed.

use rustc_hash::FxHashSet;

use crate::address::Aa;
use crate::mapping::Mapping;

/// The services a provisioner may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Services {
    /// `services = ["*"]`.
    Any,
    Only(FxHashSet<String>),
}

impl Services {
    pub fn contains(&self, service: &str) -> bool {
        match self {
            Services::Any => true,
            Services::Only(set) => set.contains(service),
        }
    }

    /// For messages: `*`, or the names in order.
    pub fn describe(&self) -> String {
        match self {
            Services::Any => "*".into(),
            Services::Only(set) => {
                let mut names: Vec<&str> = set.iter().map(String::as_str).collect();
                names.sort_unstable();
                names.join(", ")
            }
        }
    }
}

/// Decides whether a provisioner with `services` may change `aa` from `current` to `next`
/// (`None`: removed). The error names the field and says what would be allowed instead.
pub fn authorise(services: &Services, aa: Aa, current: Option<&Mapping>, next: Option<&Mapping>) -> Result<(), String> {
    let what = if next.is_some() { "Update" } else { "Remove" };
    if let Some(next) = next {
        if !services.contains(&next.service) {
            return Err(format!(
                "Update.service: {} is outside this credential's services ({}); updates of {} need a provisioner credential scoped to it",
                next.service,
                services.describe(),
                next.service
            ));
        }
    }
    if let Some(current) = current {
        if !services.contains(&current.service) {
            return Err(format!(
                "{what}.aa: {aa} belongs to service {}, outside this credential's services ({}); only a provisioner scoped to {} may change it",
                current.service,
                services.describe(),
                current.service
            ));
        }
        if let Some(next) = next {
            if next.service != current.service {
                return Err(format!(
                    "Update.service: {aa} belongs to service {}; an update never moves an AA to another service ({}): remove it, then add it to {}",
                    current.service, next.service, next.service
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::La;

    fn m(service: &str) -> Mapping {
        Mapping { la: La(1), service: service.into() }
    }

    fn only(services: &[&str]) -> Services {
        Services::Only(services.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn a_scoped_provisioner_writes_its_own_services_only() {
        let web = only(&["web"]);
        assert_eq!(authorise(&web, Aa(1), None, Some(&m("web"))), Ok(()), "a new AA in scope");
        assert_eq!(authorise(&web, Aa(1), Some(&m("web")), Some(&m("web"))), Ok(()), "re-pointing its own AA");
        assert_eq!(authorise(&web, Aa(1), Some(&m("web")), None), Ok(()), "removing its own AA");
        assert_eq!(authorise(&web, Aa(1), None, None), Ok(()), "removing an AA that does not exist");
        let err = authorise(&web, Aa(1), None, Some(&m("secret"))).unwrap_err();
        assert!(err.starts_with("Update.service: secret is outside this credential's services (web)"), "{err}");
        let err = authorise(&web, Aa(1), Some(&m("secret")), Some(&m("secret"))).unwrap_err();
        assert!(err.starts_with("Update.service: secret is outside"), "{err}");
        let err = authorise(&web, Aa(1), Some(&m("db")), Some(&m("web"))).unwrap_err();
        assert!(err.starts_with("Update.aa: 0.0.0.1 belongs to service db, outside this credential's services (web)"), "{err}");
        let err = authorise(&web, Aa(1), Some(&m("secret")), None).unwrap_err();
        assert!(err.starts_with("Remove.aa: 0.0.0.1 belongs to service secret"), "{err}");
    }

    #[test]
    fn no_update_moves_an_aa_between_services_even_for_every_service() {
        let err = authorise(&Services::Any, Aa(1), Some(&m("db")), Some(&m("web"))).unwrap_err();
        assert!(err.contains("never moves an AA to another service (web): remove it, then add it to web"), "{err}");
        assert_eq!(authorise(&Services::Any, Aa(1), Some(&m("db")), None), Ok(()));
        assert_eq!(authorise(&Services::Any, Aa(1), None, Some(&m("web"))), Ok(()));
        assert_eq!(only(&["web", "db"]).describe(), "db, web");
    }
}
