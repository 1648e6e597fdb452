//! A receiver-side reorder shim below TCP, like the GRO-layer buffers of Presto (§3.3) and
//! Juggler, which DRILL evaluates with and without (DRILL §3.3, §4).
//!
//! Per flow it passes in-order segments up at once and holds segments that arrive beyond a hole,
//! releasing them as soon as the hole fills. If no hole has filled for `timeout`, it releases
//! everything it holds in order (the hole is then probably a
//! loss, which TCP must see to recover), and from then on treats anything below the released
//! data as late and passes it straight up. Holding is bounded (`MAX_HELD` segments).

use crate::units::Time;

/// Beyond this many held segments the shim flushes. It must exceed the reordering extent of a
/// window (a whole flowcell can be overtaken), so it is sized like a large receive window
/// (1,024 segments = 1.5 MB), not like one GRO batch.
pub const MAX_HELD: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seg: u32,
    pub ce: bool,
    pub ts: Time,
    /// A retransmission.
    pub retx: bool,
}

#[derive(Clone, Debug, Default)]
pub struct ReorderShim {
    /// Next segment the shim expects to pass up.
    next: u32,
    /// Held segments, sorted by `seg`, all above `next`.
    held: Vec<Segment>,
    /// Timer generation: a flush event with an older generation is stale.
    pub gen: u32,
    pub held_total: u64,
    pub timeouts: u64,
}

impl ReorderShim {
    /// A data segment arrives; segments to pass up go to `out` in order. Returns true when the
    /// caller must arm the flush timer (generation `self.gen`).
    pub fn on_data(&mut self, s: Segment, out: &mut Vec<Segment>) -> bool {
        if s.seg < self.next {
            out.push(s); // retransmission or late: TCP sorts it out
            return false;
        }
        if s.seg == self.next {
            out.push(s);
            self.next += 1;
            while let Some(first) = self.held.first() {
                if first.seg != self.next {
                    break;
                }
                out.push(self.held.remove(0));
                self.next += 1;
            }
            // Progress: a pending timer is stale either way; if a new hole remains, its
            // timeout starts now (the shim waits `timeout` per hole, not per holding spell).
            self.gen = self.gen.wrapping_add(1);
            return !self.held.is_empty();
        }
        let was_empty = self.held.is_empty();
        match self.held.binary_search_by_key(&s.seg, |h| h.seg) {
            Ok(_) => return false, // duplicate of a held segment
            Err(i) => self.held.insert(i, s),
        }
        self.held_total += 1;
        if self.held.len() > MAX_HELD {
            self.flush(out);
            return false;
        }
        was_empty
    }

    /// The flush timer of generation `gen` fired.
    pub fn on_timeout(&mut self, gen: u32, out: &mut Vec<Segment>) {
        if gen == self.gen && !self.held.is_empty() {
            self.timeouts += 1;
            self.flush(out);
        }
    }

    fn flush(&mut self, out: &mut Vec<Segment>) {
        if let Some(last) = self.held.last() {
            self.next = last.seg + 1;
        }
        out.append(&mut self.held);
        self.gen = self.gen.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(n: u32) -> Segment {
        Segment { seg: n, ce: false, ts: 0, retx: false }
    }

    fn segs(v: &[Segment]) -> Vec<u32> {
        v.iter().map(|s| s.seg).collect()
    }

    /// Out-of-order arrivals come out in order once the hole fills: TCP sees no reordering.
    #[test]
    fn reordered_segments_are_delivered_in_order() {
        let mut shim = ReorderShim::default();
        let mut out = Vec::new();
        assert!(!shim.on_data(seg(0), &mut out));
        assert!(shim.on_data(seg(2), &mut out), "first held segment arms the timer");
        assert!(!shim.on_data(seg(3), &mut out));
        assert_eq!(segs(&out), vec![0]);
        shim.on_data(seg(1), &mut out);
        assert_eq!(segs(&out), vec![0, 1, 2, 3]);
    }

    /// A real loss: after the timeout the held data goes up (TCP then sees the hole), and the
    /// retransmission later passes straight through.
    #[test]
    fn a_hole_that_does_not_fill_is_released_at_the_timeout() {
        let mut shim = ReorderShim::default();
        let mut out = Vec::new();
        shim.on_data(seg(0), &mut out);
        shim.on_data(seg(2), &mut out);
        let gen = shim.gen;
        shim.on_data(seg(3), &mut out);
        shim.on_timeout(gen, &mut out);
        assert_eq!(segs(&out), vec![0, 2, 3]);
        shim.on_data(seg(1), &mut out);
        shim.on_data(seg(4), &mut out);
        assert_eq!(segs(&out), vec![0, 2, 3, 1, 4]);
        // A stale timer does nothing.
        shim.on_timeout(gen, &mut out);
        assert_eq!(out.len(), 5);
    }
}
