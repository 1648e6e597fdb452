//! A directory server's in-memory copy of every AA-to-LA mapping (VL2 §4.3.2: "each directory
//! server caches all the AA-to-LA mappings stored at the RSM servers").
//!
//! Three paths write into it: the lazy full resynchronisation from the store, the store's stream
//! of committed changes, and pushes from peer directory servers. They can arrive in any order, so
//! every write carries the store revision that committed it and an entry only ever moves forward
//! in revision. Reads (lookups) vastly outnumber writes, hence a reader-writer lock around a
//! hash map: lookups on different sessions never block each other.
//!
//! Complexity: lookup and apply are O(1) expected; merging a snapshot is O(table + snapshot).

use std::sync::RwLock;

use rustc_hash::FxHashMap;

use crate::address::{Aa, La};
use crate::mapping::{Mapping, Versioned};
use crate::policy::Policy;

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    Found { la: La, revision: i64 },
    NotFound,
    Denied,
}

#[derive(Default)]
pub struct Table {
    entries: RwLock<FxHashMap<Aa, Versioned>>,
}

impl Table {
    pub fn new() -> Table {
        Table::default()
    }

    /// Resolves `target` for `requester`, applying access control (VL2 §4.2.1). A target that
    /// does not exist is reported as not found only to requesters that could have resolved it,
    /// so the directory does not leak which AAs exist to services isolated from them.
    pub fn resolve(&self, policy: &Policy, requester: Aa, target: Aa) -> Resolution {
        let entries = self.entries.read().expect("table lock poisoned");
        let from = entries.get(&requester).and_then(|v| v.mapping.as_ref()).map(|m| m.service.as_str());
        match entries.get(&target).and_then(|v| v.mapping.as_ref().map(|m| (m, v.revision))) {
            Some((m, revision)) if policy.allows(from, &m.service) => {
                Resolution::Found { la: m.la, revision }
            }
            Some(_) => Resolution::Denied,
            None if from.is_some() || !policy.isolates() => Resolution::NotFound,
            None => Resolution::Denied,
        }
    }

    /// The current mapping of `aa`, if any.
    pub fn get(&self, aa: Aa) -> Option<(Mapping, i64)> {
        let entries = self.entries.read().expect("table lock poisoned");
        entries.get(&aa).and_then(|v| v.mapping.clone().map(|m| (m, v.revision)))
    }

    /// Applies one committed change; returns false if the table already held a newer one.
    pub fn apply(&self, aa: Aa, change: Versioned) -> bool {
        let mut entries = self.entries.write().expect("table lock poisoned");
        match entries.get(&aa) {
            Some(current) if current.revision >= change.revision => false,
            _ => {
                entries.insert(aa, change);
                true
            }
        }
    }

    /// Replaces the table with a full snapshot read from the store at `revision`, keeping any
    /// entry that is newer than the snapshot (it arrived through the change stream or a peer
    /// while the snapshot was being read). Tombstones older than the snapshot are dropped: the
    /// snapshot's absence of the key is now the authority.
    pub fn merge_snapshot(&self, snapshot: FxHashMap<Aa, Versioned>, revision: i64) {
        let mut entries = self.entries.write().expect("table lock poisoned");
        let mut merged = snapshot;
        for (aa, current) in entries.drain() {
            if current.revision > revision {
                merged.insert(aa, current);
            }
        }
        *entries = merged;
    }

    /// Mapped AAs (tombstones excluded).
    pub fn len(&self) -> usize {
        let entries = self.entries.read().expect("table lock poisoned");
        entries.values().filter(|v| v.mapping.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Policy, PolicyConfig};

    fn put(la: u32, service: &str, revision: i64) -> Versioned {
        Versioned { mapping: Some(Mapping { la: La(la), service: service.into() }), revision }
    }

    #[test]
    fn older_revisions_never_overwrite_newer_ones() {
        let t = Table::new();
        assert!(t.apply(Aa(1), put(10, "web", 5)));
        assert!(!t.apply(Aa(1), put(11, "web", 4)));
        assert!(t.apply(Aa(1), Versioned { mapping: None, revision: 6 }));
        assert!(!t.apply(Aa(1), put(12, "web", 5)), "a late put must not resurrect a removed AA");
        assert_eq!(t.get(Aa(1)), None);
    }

    #[test]
    fn a_snapshot_keeps_entries_newer_than_itself() {
        let t = Table::new();
        t.apply(Aa(1), put(10, "web", 9));
        t.apply(Aa(2), put(20, "web", 3));
        let mut snap = FxHashMap::default();
        snap.insert(Aa(1), put(99, "web", 7));
        snap.insert(Aa(3), put(30, "web", 7));
        t.merge_snapshot(snap, 8);
        assert_eq!(t.get(Aa(1)).unwrap().0.la, La(10));
        assert_eq!(t.get(Aa(2)), None, "absent from a newer snapshot means removed");
        assert_eq!(t.get(Aa(3)).unwrap().0.la, La(30));
    }

    #[test]
    fn lookups_across_isolated_services_are_denied() {
        let t = Table::new();
        t.apply(Aa(1), put(10, "web", 1));
        t.apply(Aa(2), put(20, "db", 2));
        t.apply(Aa(3), put(30, "web", 3));
        let p = Policy::new(&PolicyConfig::default());
        assert_eq!(t.resolve(&p, Aa(1), Aa(3)), Resolution::Found { la: La(30), revision: 3 });
        assert_eq!(t.resolve(&p, Aa(1), Aa(2)), Resolution::Denied);
        assert_eq!(t.resolve(&p, Aa(1), Aa(9)), Resolution::NotFound);
        assert_eq!(t.resolve(&p, Aa(7), Aa(9)), Resolution::Denied, "unknown requesters learn nothing");
    }
}
