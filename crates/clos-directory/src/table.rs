//! A directory server's in-memory copy of every AA-to-LA mapping (VL2 §4.3.2: "each directory
//! server caches all the AA-to-LA mappings stored at the RSM servers").
//!
//! Three paths write into it: the lazy full resynchronisation from the store, the store's stream
//! of committed changes (and this server's own commits), and pushes from peer directory
//! servers. They can arrive in any order, so every write carries the store revision that
//! committed it and an entry only ever moves forward in revision.
//!
//! Only the store is believed (issue 42). Committed entries and peers' pushes are kept apart,
//! and the table tracks two revisions: `streamed`, up to which every committed change is in the
//! table (the last snapshot, then each change-stream batch), and `known`, the highest revision
//! the store itself has reported to this server (snapshots, the stream, probes, own commits).
//! A push is accepted only if its revision lies between the two: above `known` it claims a
//! revision the store has not reached as far as this server knows (a forged `i64::MAX` would
//! otherwise outrank every future commit), and at or below `streamed` the stream has already
//! delivered that revision, so a push for it is a duplicate or a forgery. An accepted push is
//! served until the stream passes its revision, which confirms it (the same change) or
//! contradicts it (it is dropped), and the next resynchronisation drops any push left. With the
//! change stream delivering commits within a millisecond the window is usually empty: pushes
//! help only a server whose stream lags behind its probes.
//!
//! Reads (lookups) vastly outnumber writes, hence a reader-writer lock around hash maps:
//! lookups on different sessions never block each other, and while no push is pending (the
//! usual case) a lookup reads the committed map only.
//!
//! Complexity: lookup and apply are O(1) expected; a stream batch is O(batch + pending pushes);
//! merging a snapshot is O(table + snapshot).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::RwLock;

use rustc_hash::FxHashMap;

use crate::address::{Aa, La};
use crate::mapping::{Mapping, Versioned};
use crate::policy::Policy;
use crate::store::Change;

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    Found { la: La, revision: i64 },
    NotFound,
    Denied,
}

/// Why a peer's push was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PushRefused {
    #[error("revision {revision} is above the store's revision as this server knows it ({known})")]
    AboveStore { revision: i64, known: i64 },
    #[error("revision {revision} was already delivered by the change stream (complete through {streamed})")]
    AlreadyStreamed { revision: i64, streamed: i64 },
    #[error("revision {revision} is not newer than the entry held ({held})")]
    NotNewer { revision: i64, held: i64 },
}

#[derive(Default)]
pub struct Table {
    entries: RwLock<Entries>,
    /// The highest revision the store has reported to this server.
    known: AtomicI64,
}

#[derive(Default)]
struct Entries {
    /// What the store committed, as far as the stream and snapshots have told.
    committed: FxHashMap<Aa, Versioned>,
    /// Peers' pushes the store has not confirmed yet; they shadow `committed`.
    pushed: FxHashMap<Aa, Versioned>,
    /// Every committed change up to this revision is in `committed`.
    streamed: i64,
}

impl Entries {
    /// The entry lookups see: a pending push, else the committed one.
    fn view(&self, aa: Aa) -> Option<&Versioned> {
        if !self.pushed.is_empty() {
            if let Some(v) = self.pushed.get(&aa) {
                return Some(v);
            }
        }
        self.committed.get(&aa)
    }

    /// Drops the pushes the stream has passed: it delivered their revision, confirming each
    /// (the committed entry now holds it) or contradicting it.
    fn settle_pushes(&mut self) {
        if !self.pushed.is_empty() {
            let streamed = self.streamed;
            self.pushed.retain(|_, v| v.revision > streamed);
        }
    }
}

fn resolve_in(entries: Option<&Versioned>, requester: Option<&Versioned>, policy: &Policy) -> Resolution {
    let from = requester.and_then(|v| v.mapping.as_ref()).map(|m| m.service.as_str());
    match entries.and_then(|v| v.mapping.as_ref().map(|m| (m, v.revision))) {
        Some((m, revision)) if policy.allows(from, &m.service) => Resolution::Found { la: m.la, revision },
        Some(_) => Resolution::Denied,
        None if from.is_some() || !policy.isolates() => Resolution::NotFound,
        None => Resolution::Denied,
    }
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
        resolve_in(entries.view(target), entries.view(requester), policy)
    }

    /// As `resolve`, from committed entries only: what corrections sent to agents carry, so a
    /// pending push never reaches an agent's cache.
    pub fn resolve_committed(&self, policy: &Policy, requester: Aa, target: Aa) -> Resolution {
        let entries = self.entries.read().expect("table lock poisoned");
        resolve_in(entries.committed.get(&target), entries.committed.get(&requester), policy)
    }

    /// The mapping of `aa` lookups see, if any.
    pub fn get(&self, aa: Aa) -> Option<(Mapping, i64)> {
        let entries = self.entries.read().expect("table lock poisoned");
        entries.view(aa).and_then(|v| v.mapping.clone().map(|m| (m, v.revision)))
    }

    /// The committed entry of `aa` (a tombstone included), ignoring pushes: what an update is
    /// authorised against, and the revision its transaction is guarded with.
    pub fn committed(&self, aa: Aa) -> Option<Versioned> {
        self.entries.read().expect("table lock poisoned").committed.get(&aa).cloned()
    }

    /// Notes a revision the store reported (a probe's, a stream response's).
    pub fn learn(&self, revision: i64) {
        self.known.fetch_max(revision, Ordering::AcqRel);
    }

    /// The highest revision the store has reported to this server.
    pub fn known(&self) -> i64 {
        self.known.load(Ordering::Acquire)
    }

    /// The revision up to which every committed change is in the table.
    pub fn streamed(&self) -> i64 {
        self.entries.read().expect("table lock poisoned").streamed
    }

    /// Applies one committed change (read from the store, or acknowledged by it); returns false
    /// if the table already held a newer one. A pending push at or below its revision is
    /// settled: the store's content is the authority.
    pub fn apply(&self, aa: Aa, change: Versioned) -> bool {
        self.learn(change.revision);
        let mut entries = self.entries.write().expect("table lock poisoned");
        Self::apply_committed(&mut entries, aa, change)
    }

    fn apply_committed(entries: &mut Entries, aa: Aa, change: Versioned) -> bool {
        if !entries.pushed.is_empty() && entries.pushed.get(&aa).is_some_and(|p| p.revision <= change.revision) {
            entries.pushed.remove(&aa);
        }
        match entries.committed.get(&aa) {
            Some(current) if current.revision >= change.revision => false,
            _ => {
                entries.committed.insert(aa, change);
                true
            }
        }
    }

    /// Applies one batch of the change stream, which delivers every committed change in
    /// revision order: afterwards the table is complete through `through` (the batch's highest
    /// revision), and pushes at or below it are settled.
    pub fn apply_stream(&self, changes: Vec<Change>, through: i64) {
        self.learn(through);
        let mut entries = self.entries.write().expect("table lock poisoned");
        for change in changes {
            Self::apply_committed(&mut entries, change.aa, change.versioned);
        }
        entries.streamed = entries.streamed.max(through);
        entries.settle_pushes();
    }

    /// Applies a peer's push, if its revision is one the store has reached but the stream has
    /// not delivered yet (see the module's documentation); it is served until the stream
    /// passes its revision or the next resynchronisation.
    pub fn apply_pushed(&self, aa: Aa, change: Versioned) -> Result<(), PushRefused> {
        let known = self.known();
        if change.revision > known {
            return Err(PushRefused::AboveStore { revision: change.revision, known });
        }
        let mut entries = self.entries.write().expect("table lock poisoned");
        if change.revision <= entries.streamed {
            return Err(PushRefused::AlreadyStreamed { revision: change.revision, streamed: entries.streamed });
        }
        if let Some(held) = entries.view(aa).filter(|v| v.revision >= change.revision) {
            return Err(PushRefused::NotNewer { revision: change.revision, held: held.revision });
        }
        entries.pushed.insert(aa, change);
        Ok(())
    }

    /// Replaces the table with a full snapshot read from the store at `revision`, keeping any
    /// committed entry that is newer than the snapshot (it arrived through the change stream
    /// while the snapshot was being read). Tombstones older than the snapshot are dropped: the
    /// snapshot's absence of the key is now the authority. So are peers' pushes the store has
    /// not confirmed, whatever revision they claim: a true one comes back through the stream.
    pub fn merge_snapshot(&self, snapshot: FxHashMap<Aa, Versioned>, revision: i64) {
        self.learn(revision);
        let mut entries = self.entries.write().expect("table lock poisoned");
        let mut merged = snapshot;
        for (aa, current) in entries.committed.drain() {
            if current.revision > revision {
                merged.insert(aa, current);
            }
        }
        entries.committed = merged;
        entries.pushed.clear();
        entries.streamed = entries.streamed.max(revision);
    }

    /// Committed mapped AAs (tombstones and pending pushes excluded).
    pub fn len(&self) -> usize {
        let entries = self.entries.read().expect("table lock poisoned");
        entries.committed.values().filter(|v| v.mapping.is_some()).count()
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
        Versioned { mapping: Some(Mapping { la: La(la), service: service.into() }), revision, marks: Default::default() }
    }

    fn removed(revision: i64) -> Versioned {
        Versioned { mapping: None, revision, marks: Default::default() }
    }

    #[test]
    fn older_revisions_never_overwrite_newer_ones() {
        let t = Table::new();
        assert!(t.apply(Aa(1), put(10, "web", 5)));
        assert!(!t.apply(Aa(1), put(11, "web", 4)));
        assert!(t.apply(Aa(1), removed(6)));
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

    fn change(aa: u32, la: u32, revision: i64) -> Change {
        Change { aa: Aa(aa), versioned: put(la, "web", revision) }
    }

    /// Issue 42: a peer pushes a forged mapping at revision i64::MAX, which nothing committed
    /// could ever overtake, or a removal. Neither is above the store's revision as the server
    /// knows it, so both are refused and the store's mapping keeps being served.
    #[test]
    fn a_push_above_the_stores_revision_is_refused() {
        let t = Table::new();
        t.apply_stream(vec![change(1, 10, 5)], 5);
        t.learn(7);
        assert_eq!(t.apply_pushed(Aa(1), put(66, "web", i64::MAX)), Err(PushRefused::AboveStore { revision: i64::MAX, known: 7 }));
        assert_eq!(t.apply_pushed(Aa(1), removed(8)), Err(PushRefused::AboveStore { revision: 8, known: 7 }));
        assert_eq!(t.get(Aa(1)).map(|(m, r)| (m.la, r)), Some((La(10), 5)));
        assert!(t.apply(Aa(1), put(11, "web", 9)), "a later commit is applied");
        assert_eq!(t.get(Aa(1)).map(|(m, r)| (m.la, r)), Some((La(11), 9)));
    }

    /// A push for a revision the stream already delivered is a duplicate or a forgery: refused.
    #[test]
    fn a_push_the_stream_already_delivered_is_refused() {
        let t = Table::new();
        t.apply_stream(vec![change(1, 10, 5), change(2, 20, 6)], 6);
        assert_eq!(t.apply_pushed(Aa(1), put(66, "web", 6)), Err(PushRefused::AlreadyStreamed { revision: 6, streamed: 6 }));
        assert_eq!(t.get(Aa(1)).unwrap().0.la, La(10));
    }

    /// A push inside the window (the store reached its revision, the stream has not delivered
    /// it) is served until the stream passes that revision: confirmed if the stream carried the
    /// same change, dropped if not, and the next resynchronisation drops any left.
    #[test]
    fn a_push_inside_the_window_lasts_until_the_stream_confirms_or_contradicts_it() {
        let t = Table::new();
        t.apply_stream(vec![change(1, 10, 5), change(2, 20, 5), change(3, 30, 5)], 5);
        t.learn(9);
        assert_eq!(t.apply_pushed(Aa(1), put(11, "web", 7)), Ok(()), "honest: the stream will carry it");
        assert_eq!(t.apply_pushed(Aa(2), put(66, "web", 8)), Ok(()), "forged: the stream will not");
        assert_eq!(t.apply_pushed(Aa(3), put(77, "web", 9)), Ok(()), "forged, beyond what the stream passes next");
        assert_eq!(t.get(Aa(2)).unwrap().0.la, La(66), "served while pending");
        assert_eq!(t.resolve_committed(&Policy::default(), Aa(1), Aa(2)), Resolution::Found { la: La(20), revision: 5 }, "corrections never carry it");
        assert_eq!(t.committed(Aa(2)).map(|v| v.revision), Some(5), "updates are authorised against the store's entry");
        t.apply_stream(vec![change(1, 11, 7), change(4, 40, 8)], 8);
        assert_eq!(t.get(Aa(1)).map(|(m, r)| (m.la, r)), Some((La(11), 7)), "confirmed");
        assert_eq!(t.get(Aa(2)).map(|(m, r)| (m.la, r)), Some((La(20), 5)), "contradicted: the stream passed 8 without it");
        assert_eq!(t.get(Aa(3)).unwrap().0.la, La(77), "revision 9 not passed yet");
        let mut snap = FxHashMap::default();
        for (aa, la) in [(1, 11), (2, 20), (3, 30), (4, 40)] {
            snap.insert(Aa(aa), put(la, "web", 5));
        }
        t.merge_snapshot(snap, 9);
        assert_eq!(t.get(Aa(3)).unwrap().0.la, La(30), "the resynchronisation drops every pending push");
        // A committed change newer than a pending push overrides it at once.
        t.learn(12);
        assert_eq!(t.apply_pushed(Aa(4), put(44, "web", 10)), Ok(()));
        assert!(t.apply(Aa(4), put(45, "web", 11)));
        assert_eq!(t.get(Aa(4)).unwrap().0.la, La(45));
        assert_eq!(t.apply_pushed(Aa(4), put(46, "web", 11)), Err(PushRefused::NotNewer { revision: 11, held: 11 }));
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
