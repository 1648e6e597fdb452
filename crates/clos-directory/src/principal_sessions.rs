//! A cap on the sessions each principal holds at one server (issue 39).
//!
//! `sessions.max_sessions` bounds a server's sessions in all; without a cap per principal, one
//! credential holder opening sessions up to it would lock every other principal out. With
//! `sessions.max_per_principal` (16 by default: an agent needs one session per directory
//! server, and a few more while it reconnects) a principal's Hello beyond its cap is `Rejected`
//! with the reason, and the other principals keep `max_sessions - max_per_principal` places.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::credentials::Principal;

/// Open authenticated sessions, by principal name (names are unique, `credentials.rs`).
pub struct PrincipalSessions {
    max_per_principal: usize,
    open: Mutex<FxHashMap<Arc<str>, usize>>,
}

/// One session's place in its principal's count, given back when the session ends.
pub struct PrincipalSlot {
    sessions: Arc<PrincipalSessions>,
    name: Arc<str>,
}

impl PrincipalSessions {
    pub fn new(max_per_principal: usize) -> Arc<PrincipalSessions> {
        Arc::new(PrincipalSessions { max_per_principal, open: Mutex::new(FxHashMap::default()) })
    }

    /// A place for one more session of `principal`, or why there is none. One lock and one hash
    /// per Hello, none per request.
    pub fn admit(self: &Arc<Self>, principal: &Principal) -> Result<PrincipalSlot, String> {
        let mut open = self.open.lock().expect("principal sessions lock poisoned");
        let name: Arc<str> = match open.get_key_value(principal.name.as_str()) {
            Some((_, &count)) if count >= self.max_per_principal => {
                return Err(format!(
                    "session cap: principal {} already has {count} sessions here (sessions.max_per_principal); close one, or raise the cap",
                    principal.name
                ));
            }
            Some((name, _)) => name.clone(),
            None => Arc::from(principal.name.as_str()),
        };
        *open.entry(name.clone()).or_insert(0) += 1;
        Ok(PrincipalSlot { sessions: self.clone(), name })
    }

    /// Sessions `name` holds now.
    pub fn open(&self, name: &str) -> usize {
        self.open.lock().expect("principal sessions lock poisoned").get(name).copied().unwrap_or(0)
    }
}

impl Drop for PrincipalSlot {
    fn drop(&mut self) {
        let mut open = self.sessions.open.lock().expect("principal sessions lock poisoned");
        if let Some(count) = open.get_mut(&self.name) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::{Credentials, PrincipalConfig};
    use crate::wire::Role;

    #[test]
    fn a_principal_at_its_cap_is_refused_while_others_are_admitted() {
        let credentials = Credentials::new(&[
            PrincipalConfig::new("flooder", Role::Tor, "flooder-token-0123456"),
            PrincipalConfig::new("victim", Role::Tor, "victim-token-01234567"),
        ])
        .unwrap();
        let flooder = credentials.principal("flooder", Role::Tor).unwrap().clone();
        let victim = credentials.principal("victim", Role::Tor).unwrap().clone();
        let sessions = PrincipalSessions::new(2);
        let first = sessions.admit(&flooder).unwrap();
        let _second = sessions.admit(&flooder).unwrap();
        let err = sessions.admit(&flooder).err().unwrap();
        assert!(err.starts_with("session cap: principal flooder already has 2 sessions"), "{err}");
        let _victim = sessions.admit(&victim).unwrap();
        drop(first);
        assert_eq!(sessions.open("flooder"), 1);
        assert!(sessions.admit(&flooder).is_ok(), "a closed session gives its place back");
    }
}
