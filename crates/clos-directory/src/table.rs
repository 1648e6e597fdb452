//! A directory server's in-memory copy of every AA-to-LA mapping (VL2 §4.3.2: "each directory
//! server caches all the AA-to-LA mappings stored at the RSM servers").
//!
//! Three paths write into it: the lazy full resynchronisation from the store, the store's stream
//! of committed changes, and pushes from peer directory servers. They can arrive in any order, so
//! every write carries the store revision that committed it and an entry only ever moves forward
//! in revision. A peer's push is believed only until the store confirms or contradicts it: the
//! store's stream confirms it (a change at its revision or later), and the next resynchronisation
//! drops it if the store has not, so a peer that pushes a forged revision (even `i64::MAX`,
//! which nothing could ever overtake) poisons an entry for one resynchronisation interval at most. Reads (lookups) vastly outnumber writes, hence a reader-writer lock around a
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
    entries: RwLock<Entries>,
}

#[derive(Default)]
struct Entries {
    map: FxHashMap<Aa, Versioned>,
    /// AAs whose current entry came from a peer's push and no committed change has confirmed.
    pushed: rustc_hash::FxHashSet<Aa>,
}

impl Table {
    pub fn new() -> Table {
        Table::default()
    }

    /// Resolves `target` for `requester`, applying access control (VL2 §4.2.1). A target that
    /// does not exist is reported as not found only to requesters that could have resolved it,
    /// so the directory does not leak which AAs exist to services isolated from them.
    pub fn resolve(&self, policy: &Policy, requester: Aa, target: Aa) -> Resolution {
        let entries = &self.entries.read().expect("table lock poisoned").map;
        let from = entries.get(&requester).and_then(|v| v.mapping.as_ref()).map(|m| m.service.as_str());
        match entries.get(&target).and_then(|v| v.mapping.as_ref().map(|m| (m, v.revision))) {
            Some((m, revision)) if policy.allows(from, &m.service) => Resolution::Found { la: m.la, revision },
            Some(_) => Resolution::Denied,
            None if from.is_some() || !policy.isolates() => Resolution::NotFound,
            None => Resolution::Denied,
        }
    }

    /// The current mapping of `aa`, if any.
    pub fn get(&self, aa: Aa) -> Option<(Mapping, i64)> {
        let entries = &self.entries.read().expect("table lock poisoned").map;
        entries.get(&aa).and_then(|v| v.mapping.clone().map(|m| (m, v.revision)))
    }

    /// Applies one committed change (read from the store, or acknowledged by it); returns false
    /// if the table already held a newer one.
    pub fn apply(&self, aa: Aa, change: Versioned) -> bool {
        let mut entries = self.entries.write().expect("table lock poisoned");
        if entries.map.get(&aa).is_some_and(|v| v.revision == change.revision) {
            // The store confirms a push at the same revision; its content is the authority.
            if entries.pushed.remove(&aa) {
                entries.map.insert(aa, change);
            }
            return false;
        }
        let applied = Self::apply_to(&mut entries.map, aa, change);
        if applied {
            entries.pushed.remove(&aa);
        }
        applied
    }

    /// Applies a peer's push: as `apply`, but unconfirmed until the store says so.
    pub fn apply_pushed(&self, aa: Aa, change: Versioned) -> bool {
        let mut entries = self.entries.write().expect("table lock poisoned");
        let applied = Self::apply_to(&mut entries.map, aa, change);
        if applied {
            entries.pushed.insert(aa);
        }
        applied
    }

    fn apply_to(map: &mut FxHashMap<Aa, Versioned>, aa: Aa, change: Versioned) -> bool {
        match map.get(&aa) {
            Some(current) if current.revision >= change.revision => false,
            _ => {
                map.insert(aa, change);
                true
            }
        }
    }

    /// Replaces the table with a full snapshot read from the store at `revision`, keeping any
    /// committed entry that is newer than the snapshot (it arrived through the change stream
    /// while the snapshot was being read). Tombstones older than the snapshot are dropped: the
    /// snapshot's absence of the key is now the authority. So are peers' pushes the store has
    /// not confirmed, whatever revision they claim: a true one comes back through the stream.
    pub fn merge_snapshot(&self, snapshot: FxHashMap<Aa, Versioned>, revision: i64) {
        let mut entries = self.entries.write().expect("table lock poisoned");
        let Entries { map, pushed } = &mut *entries;
        let mut merged = snapshot;
        for (aa, current) in map.drain() {
            if current.revision > revision && !pushed.contains(&aa) {
                merged.insert(aa, current);
            }
        }
        pushed.clear();
        *map = merged;
    }

    /// Mapped AAs (tombstones excluded).
    pub fn len(&self) -> usize {
        let entries = &self.entries.read().expect("table lock poisoned").map;
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

    /// Issue 42: a peer pushes a forged mapping at revision i64::MAX. Nothing committed can
    /// overtake it, but the store never confirmed it, so the next resynchronisation drops it
    /// and the store's mapping is served again; an honest push newer than the snapshot is
    /// dropped too, and comes back through the change stream.
    #[test]
    fn a_pushed_entry_lasts_only_until_the_store_confirms_or_contradicts_it() {
        let t = Table::new();
        t.apply(Aa(1), put(10, "web", 5));
        assert!(t.apply_pushed(Aa(1), put(66, "web", i64::MAX)));
        assert!(!t.apply(Aa(1), put(11, "web", 6)), "nothing overtakes i64::MAX");
        let mut snap = FxHashMap::default();
        snap.insert(Aa(1), put(11, "web", 6));
        t.merge_snapshot(snap, 7);
        assert_eq!(t.get(Aa(1)), Some((Mapping { la: La(11), service: "web".into() }, 6)));
        // A push the stream then confirms (the same revision) stays through a resynchronisation
        // from before it; one it does not is dropped.
        assert!(t.apply_pushed(Aa(2), put(20, "web", 9)));
        assert!(t.apply_pushed(Aa(3), put(30, "web", 9)));
        assert!(!t.apply(Aa(2), put(20, "web", 9)), "the same revision from the stream");
        t.merge_snapshot(FxHashMap::default(), 8);
        assert_eq!(t.get(Aa(2)).map(|(m, r)| (m.la, r)), Some((La(20), 9)), "confirmed, newer than the snapshot: kept");
        assert_eq!(t.get(Aa(3)), None, "unconfirmed: dropped");
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
