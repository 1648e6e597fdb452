//! Sets of segment ranges: the receiver's out-of-order queue and the sender's SACK scoreboard.
//! Ranges are half-open, sorted and disjoint; there are few of them (one per hole), so a sorted
//! `Vec` beats any tree here and never reallocates once it has seen the flow's worst case.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(u32, u32)>,
}

impl RangeSet {
    /// Start loading the first ranges (`prefetch.rs`).
    #[inline]
    pub fn prefetch(&self) {
        if let Some(r) = self.ranges.first() {
            crate::prefetch::line(r);
        }
    }

    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Insert `[a, b)`, merging neighbours. Returns how many segments were new.
    pub fn insert(&mut self, a: u32, b: u32) -> u32 {
        if a >= b {
            return 0;
        }
        // First range that ends at or after `a` (could touch or overlap).
        let i = self.ranges.partition_point(|r| r.1 < a);
        let mut lo = a;
        let mut hi = b;
        let mut covered = 0;
        let mut j = i;
        while j < self.ranges.len() && self.ranges[j].0 <= hi {
            let (ra, rb) = self.ranges[j];
            covered += rb.min(b).saturating_sub(ra.max(a));
            lo = lo.min(ra);
            hi = hi.max(rb);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once((lo, hi)));
        (b - a) - covered
    }

    pub fn contains(&self, x: u32) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= x);
        i < self.ranges.len() && self.ranges[i].0 <= x
    }

    /// Drop everything below `x`; returns how many segments were removed.
    pub fn remove_below(&mut self, x: u32) -> u32 {
        let mut removed = 0;
        let mut k = 0;
        while k < self.ranges.len() && self.ranges[k].0 < x {
            let (a, b) = self.ranges[k];
            if b <= x {
                removed += b - a;
                k += 1;
            } else {
                removed += x - a;
                self.ranges[k].0 = x;
                break;
            }
        }
        self.ranges.drain(..k);
        removed
    }

    /// If the lowest range starts at `x`, remove it and return its end.
    pub fn pop_front_from(&mut self, x: u32) -> Option<u32> {
        match self.ranges.first() {
            Some(&(a, b)) if a == x => {
                self.ranges.remove(0);
                Some(b)
            }
            _ => None,
        }
    }

    /// Segments in the set that are below `x`.
    pub fn count_below(&self, x: u32) -> u32 {
        self.ranges.iter().take_while(|r| r.0 < x).map(|r| r.1.min(x) - r.0).sum()
    }

    /// The smallest `y >= x` not in the set.
    pub fn next_gap(&self, x: u32) -> u32 {
        let i = self.ranges.partition_point(|r| r.1 <= x);
        match self.ranges.get(i) {
            Some(&(a, b)) if a <= x => b,
            _ => x,
        }
    }

    /// The `n`-th highest segment in the set (n = 1 is the highest), if there are that many.
    pub fn nth_highest(&self, mut n: u32) -> Option<u32> {
        for &(a, b) in self.ranges.iter().rev() {
            if b - a >= n {
                return Some(b - n);
            }
            n -= b - a;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_counts_new_segments() {
        let mut s = RangeSet::default();
        assert_eq!(s.insert(5, 7), 2);
        assert_eq!(s.insert(9, 10), 1);
        assert_eq!(s.insert(6, 9), 2);
        assert_eq!(s.ranges(), &[(5, 10)]);
        assert_eq!(s.insert(1, 2), 1);
        assert_eq!(s.count_below(7), 3);
        assert_eq!(s.next_gap(5), 10);
        assert_eq!(s.next_gap(3), 3);
        assert_eq!(s.nth_highest(3), Some(7));
        assert_eq!(s.nth_highest(6), Some(1));
        assert_eq!(s.nth_highest(7), None);
        assert_eq!(s.remove_below(6), 2);
        assert_eq!(s.ranges(), &[(6, 10)]);
        assert!(s.contains(9) && !s.contains(10));
    }
}
