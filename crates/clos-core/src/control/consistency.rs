//! Per-packet consistency, measured: was a packet forwarded by one routing version's rules, or
//! by a mix of old and new ones (Frenetic, seed 004 L5124-L5156)?
//!
//! A hop forwards by one rule: switch `s`'s entry `e` (the packet's destination ToR, or the top
//! tier for a VL2 packet going up) as written by version `w`. That rule agrees with every
//! version in which the entry holds the same thing: an interval of versions around `w`, from
//! the last version up to `w` that changed the entry to just before the next one that changes it
//! (open-ended while no later version has). A packet keeps the intersection of its hops'
//! intervals; when it becomes empty, no single version forwards the packet the way it went:
//! it was processed by a mix of old and new rules, and is counted once.
//!
//! Counting by interval, not by version number, keeps a hop whose rule no version changed (most
//! of the fabric, after one link fails) from counting as "old" or "new". A rule that goes back to
//! an earlier value (a repair undoing a failure) is taken as new: a packet that mixes the rules
//! before the failure with those after the repair counts, though the two agree.

/// The entries each version changed, for the intervals.
#[derive(Default)]
pub struct VersionLog {
    /// `changed[v]`: the entries (switch index x entries per row + entry) version `v` changed
    /// from `v - 1`, sorted; `changed[0]` (the starting version) is empty.
    changed: Vec<Vec<u32>>,
}

/// A packet's versions, in its spare bytes: `[lo, 255 - hi_inv]`. A fresh packet (zeros) agrees
/// with every version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agreed {
    pub lo: u8,
    pub hi_inv: u8,
}

impl Agreed {
    pub fn hi(self) -> u8 {
        255 - self.hi_inv
    }
    pub fn is_empty(self) -> bool {
        self.lo > self.hi()
    }
}

impl VersionLog {
    pub fn new() -> VersionLog {
        VersionLog { changed: vec![Vec::new()] }
    }

    /// The latest version.
    pub fn latest(&self) -> u8 {
        (self.changed.len() - 1) as u8
    }

    /// Record the next version: the entries it changed.
    pub fn push(&mut self, mut changed: Vec<u32>) {
        changed.sort_unstable();
        self.changed.push(changed);
    }

    /// The versions whose rule for `entry` equals version `w`'s: `(lo, hi)`, `hi` 255 while no
    /// later version changed it.
    pub fn interval(&self, entry: u32, w: u8) -> (u8, u8) {
        let changes = |v: usize| self.changed[v].binary_search(&entry).is_ok();
        let w = w as usize;
        let lo = (1..=w).rev().find(|&v| changes(v)).unwrap_or(0);
        let hi = (w + 1..self.changed.len()).find(|&v| changes(v)).map_or(255, |v| v - 1);
        (lo as u8, hi as u8)
    }

    /// A packet with versions `agreed` is forwarded by entry `entry` as version `w` wrote it:
    /// its new versions, and whether this hop made it mixed (the intersection just emptied).
    pub fn hop(&self, agreed: Agreed, entry: u32, w: u8) -> (Agreed, bool) {
        if agreed.is_empty() {
            return (agreed, false);
        }
        let (lo, hi) = self.interval(entry, w);
        let next = Agreed { lo: agreed.lo.max(lo), hi_inv: 255 - agreed.hi().min(hi) };
        (next, next.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version 1 changes entries 3 and 7, version 2 changes 7 back. A packet that crossed entry
    /// 3 by version 1's rule ([1, 255]) and then entry 7 by version 0's ([0, 0]) was mixed; one
    /// that crossed entry 5 (never changed: [0, 255]) and then entry 3 by version 0 was not.
    #[test]
    fn a_packet_is_mixed_when_no_version_agrees_with_all_its_hops() {
        let mut log = VersionLog::new();
        log.push(vec![7, 3]);
        log.push(vec![7]);
        assert_eq!(log.interval(3, 1), (1, 255));
        assert_eq!(log.interval(3, 0), (0, 0));
        assert_eq!(log.interval(7, 1), (1, 1));
        assert_eq!(log.interval(5, 2), (0, 255));
        let fresh = Agreed { lo: 0, hi_inv: 0 };
        let (a, mixed) = log.hop(fresh, 3, 1);
        assert!(!mixed);
        let (a, mixed) = log.hop(a, 7, 0);
        assert!(mixed && a.is_empty());
        // Counted once: a further hop does not count it again.
        assert!(!log.hop(a, 3, 0).1);
        let (b, _) = log.hop(fresh, 5, 2);
        let (b, mixed) = log.hop(b, 3, 0);
        assert!(!mixed && (b.lo, b.hi()) == (0, 0));
    }
}
