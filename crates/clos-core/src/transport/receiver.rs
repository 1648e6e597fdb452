//! The TCP receiver: cumulative ACKs with SACK blocks, delayed ACKs (RFC 5681 §4.2: at most
//! every `delayed_ack` segments or after a timeout, immediately when out of order or when a hole
//! fills), Linux's exceptions to delaying (`quickack`: each of a connection's first segments,
//! and the next `MAX_QUICKACKS` after a duplicate arrives or after a silence longer than the
//! RTO; `push_ack`: a segment shorter than the MSS), and DCTCP's ECE echo with the RFC 8257 §3.2 rule that an ACK is sent at once when the
//! CE state changes while ACKs are held back. It counts out-of-order arrivals and duplicate ACKs,
//! and tells reordering from loss: a first transmission that arrives after a later segment was
//! reordered; a hole that a retransmission fills was a loss (or a reordering so long that the
//! sender gave up on it), and the duplicate ACKs sent while it was open are charged to the
//! cause that closed it; a retransmission of a segment already received was spurious.

use super::reorder_shim::Segment;
use super::sack::RangeSet;
use super::TcpParams;
use crate::packet::SackBlocks;
use crate::units::Time;

/// Linux's `TCP_MAX_QUICKACKS`: segments ACKed at once after `tcp_enter_quickack_mode`, which
/// `tcp_data_queue` calls when a segment arrives that was already received, and that
/// `tcp_event_data_recv` grants when data arrives after a silence longer than the RTO ("the
/// sender failed to restart its window").
pub const MAX_QUICKACKS: u32 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub cum: u32,
    pub sack: SackBlocks,
    pub ece: bool,
    /// Echoed send time of the segment that triggered the ACK.
    pub echo: Time,
}

#[derive(Debug, Default)]
pub struct RxResult {
    /// Segments that became in order with this arrival (delivered to the application).
    pub delivered: u32,
    /// ACKs to send now, in order.
    pub acks: [Option<Ack>; 2],
    /// Start the delayed-ACK timer.
    pub arm_delayed_ack: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Receiver {
    /// Next in-order segment expected.
    pub nxt: u32,
    ooo: RangeSet,
    unacked: u32,
    ce_state: bool,
    last_echo: Time,
    last_ack: Option<u32>,
    /// Bumped on every ACK sent, so a pending delayed-ACK timer knows it is stale.
    pub ack_gen: u32,
    pub out_of_order: u64,
    pub dupacks_sent: u64,
    /// One past the highest segment received.
    highest: u32,
    /// First transmissions that arrived after a later segment.
    pub reordered: u64,
    /// Retransmissions of segments already received.
    pub spurious: u64,
    /// Duplicate ACKs sent while holes were open, not yet charged to a cause.
    pending_dupacks: u64,
    /// Duplicate ACKs charged to the retransmissions that closed their holes.
    pub dupacks_loss: u64,
    /// Duplicate ACKs charged to first transmissions that closed their holes.
    pub dupacks_reordering: u64,
    /// Segments still to ACK at once after a duplicate or a silence (`quickack` on).
    quick: u32,
    /// When the last data segment arrived.
    last_arrival: Option<Time>,
}

impl Receiver {
    /// Start loading the ranges held out of order (`World::prefetch_ahead`).
    #[inline]
    pub fn prefetch_ranges(&self) {
        self.ooo.prefetch();
    }

    /// Duplicate ACKs still charged to no cause (holes never closed) go to loss.
    pub fn dupacks_by_cause(&self) -> (u64, u64) {
        (self.dupacks_loss + self.pending_dupacks, self.dupacks_reordering)
    }

    /// Segment `s` arrived at `now` (`short`: its payload is less than the MSS).
    pub fn on_data(&mut self, now: Time, s: Segment, short: bool, p: &TcpParams) -> RxResult {
        let Segment { seg, ce, ts, retx } = s;
        let mut out = RxResult::default();
        if p.quickack > 0 {
            // A receiver's RTO is at least rto_min; in a datacenter it is rto_min.
            if self.last_arrival.is_some_and(|t| now.saturating_sub(t) > p.rto_min) {
                self.quick = MAX_QUICKACKS;
            }
            self.last_arrival = Some(now);
        }
        if p.dctcp_g.is_some() {
            if ce != self.ce_state && self.unacked > 0 {
                out.acks[0] = Some(self.ack(None));
            }
            self.ce_state = ce;
        }
        self.last_echo = ts;
        let immediate;
        let duplicate = seg < self.nxt || self.ooo.contains(seg);
        if !duplicate && !retx && seg + 1 < self.highest {
            self.reordered += 1;
        }
        self.highest = self.highest.max(seg + 1);
        if duplicate {
            self.spurious += u64::from(retx);
            if p.quickack > 0 {
                self.quick = MAX_QUICKACKS;
            }
            immediate = Some(None); // duplicate: re-ACK at once so the sender learns
        } else if seg == self.nxt {
            let had_holes = !self.ooo.is_empty();
            if had_holes {
                let pending = std::mem::take(&mut self.pending_dupacks);
                if retx {
                    self.dupacks_loss += pending;
                } else {
                    self.dupacks_reordering += pending;
                }
            }
            self.nxt += 1;
            if let Some(end) = self.ooo.pop_front_from(self.nxt) {
                self.nxt = end;
            }
            out.delivered = self.nxt - seg;
            self.unacked += 1;
            // Linux ACKs at once while the receive window opens (a connection's first segments,
            // `tcp_grow_window` setting `quick`), in quickack mode, and when the application reads
            // a segment shorter than the MSS (`ICSK_ACK_PUSHED`, `tcp_cleanup_rbuf`).
            let quick = seg < p.quickack || self.quick > 0 || (short && p.push_ack);
            self.quick = self.quick.saturating_sub(1);
            immediate = (had_holes || quick || self.unacked >= p.delayed_ack).then_some(None);
        } else {
            self.out_of_order += 1;
            self.ooo.insert(seg, seg + 1);
            immediate = Some(Some(seg));
        }
        match immediate {
            Some(trigger) => out.acks[usize::from(out.acks[0].is_some())] = Some(self.ack(trigger)),
            None => out.arm_delayed_ack = true,
        }
        out
    }

    /// The delayed-ACK timer fired for generation `gen`.
    pub fn on_delayed_ack_timer(&mut self, gen: u32) -> Option<Ack> {
        (gen == self.ack_gen && self.unacked > 0).then(|| self.ack(None))
    }

    fn ack(&mut self, trigger: Option<u32>) -> Ack {
        let mut sack = [(0, 0); 3];
        let ranges = self.ooo.ranges();
        // RFC 2018: the block holding the segment that triggered this ACK comes first, then the
        // others (highest first, as the most recently extended ones usually are).
        let first = trigger.and_then(|s| ranges.iter().position(|r| r.0 <= s && s < r.1));
        let mut k = 0;
        if let Some(i) = first {
            sack[0] = ranges[i];
            k = 1;
        }
        for (i, &r) in ranges.iter().enumerate().rev() {
            if k == sack.len() {
                break;
            }
            if Some(i) != first {
                sack[k] = r;
                k += 1;
            }
        }
        if self.last_ack == Some(self.nxt) {
            self.dupacks_sent += 1;
            self.pending_dupacks += u64::from(!self.ooo.is_empty());
        }
        self.last_ack = Some(self.nxt);
        self.unacked = 0;
        self.ack_gen = self.ack_gen.wrapping_add(1);
        Ack { cum: self.nxt, sack, ece: self.ce_state, echo: self.last_echo }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first transmission of segment `n`, unmarked.
    fn segment(n: u32) -> Segment {
        Segment { seg: n, ce: false, ts: 0, retx: false }
    }

    fn params(delayed_ack: u32, dctcp: bool) -> TcpParams {
        TcpParams { delayed_ack, dctcp_g: dctcp.then_some(1.0 / 16.0), ..TcpParams::for_tests() }
    }

    #[test]
    fn out_of_order_segments_produce_sack_blocks_and_dupacks() {
        let p = params(1, false);
        let mut r = Receiver::default();
        r.on_data(0, segment(0), false, &p);
        let a = r.on_data(0, segment(2), false, &p).acks[0].unwrap();
        assert_eq!((a.cum, a.sack[0]), (1, (2, 3)));
        let b = r.on_data(0, segment(4), false, &p).acks[0].unwrap();
        assert_eq!(b.sack[..2], [(4, 5), (2, 3)]);
        let c = r.on_data(0, segment(1), false, &p);
        assert_eq!(c.delivered, 2);
        assert_eq!(c.acks[0].unwrap().cum, 3);
        // ACKs sent: cum 1, then two duplicates of cum 1 carrying SACK blocks.
        assert_eq!((r.out_of_order, r.dupacks_sent), (2, 2));
    }

    /// By hand: 0, 2, 3 arrive, then 1 as a first transmission (reordered: the two dupACKs
    /// sent for 2 and 3 were reordering's); then 5, 6, and 4 as a retransmission (a loss: two
    /// dupACKs to loss); then 6 again, retransmitted (spurious).
    #[test]
    fn duplicate_acks_are_charged_to_the_cause_that_closed_their_hole() {
        let p = params(1, false);
        let mut r = Receiver::default();
        for (seg, retx) in [(0, false), (2, false), (3, false), (1, false), (5, false), (6, false), (4, true), (6, true)] {
            r.on_data(0, Segment { retx, ..segment(seg) }, false, &p);
        }
        assert_eq!(r.reordered, 1, "segment 1, a first transmission after 2 and 3");
        assert_eq!(r.dupacks_by_cause(), (2, 2), "(loss, reordering)");
        assert_eq!(r.spurious, 1);
        assert_eq!(r.dupacks_sent, 5, "four for the holes, one for the duplicate 6");
    }

    #[test]
    fn delayed_acks_cover_two_segments_and_ce_changes_flush() {
        let p = params(2, true);
        let mut r = Receiver::default();
        assert!(r.on_data(0, segment(0), false, &p).arm_delayed_ack);
        let x = r.on_data(0, segment(1), false, &p);
        assert_eq!(x.acks[0].unwrap().cum, 2);
        r.on_data(0, segment(2), false, &p);
        // CE arrives while segment 2 is un-ACKed: ACK 3 without ECE first.
        let y = r.on_data(0, Segment { ce: true, ..segment(3) }, false, &p);
        assert_eq!(y.acks[0].map(|a| (a.cum, a.ece)), Some((3, false)));
        assert!(y.arm_delayed_ack);
        let gen = r.ack_gen;
        assert_eq!(r.on_delayed_ack_timer(gen).map(|a| (a.cum, a.ece)), Some((4, true)));
    }

    /// By hand, delayed ACKs every 2 segments with `quickack = 3` and `push_ack`: segments 0, 1
    /// and 2 are each ACKed at once; 3 waits; 4 makes two; 5 waits, then 6 arrives short and is
    /// ACKed at once. A duplicate of 6 then makes the next `MAX_QUICKACKS` segments immediate.
    #[test]
    fn linux_acks_a_connections_first_segments_and_short_ones_at_once() {
        let mut p = params(2, false);
        (p.quickack, p.push_ack) = (3, true);
        let mut r = Receiver::default();
        let acked = |x: RxResult| x.acks[0].map(|a| a.cum);
        for seg in 0..3 {
            assert_eq!(acked(r.on_data(0, segment(seg), false, &p)), Some(seg + 1), "segment {seg}");
        }
        assert!(r.on_data(0, segment(3), false, &p).arm_delayed_ack);
        assert_eq!(acked(r.on_data(0, segment(4), false, &p)), Some(5));
        assert!(r.on_data(0, segment(5), false, &p).arm_delayed_ack);
        assert_eq!(acked(r.on_data(0, segment(6), true, &p)), Some(7), "a short segment is ACKed at once");
        assert_eq!(acked(r.on_data(0, Segment { retx: true, ..segment(6) }, false, &p)), Some(7), "a duplicate is re-ACKed");
        for seg in 7..7 + MAX_QUICKACKS {
            assert_eq!(acked(r.on_data(0, segment(seg), false, &p)), Some(seg + 1), "quickack after the duplicate: {seg}");
        }
        assert!(r.on_data(0, segment(7 + MAX_QUICKACKS), false, &p).arm_delayed_ack);
        // After a silence longer than rto_min (1,000 here) the next segments are ACKed at once.
        let n = 8 + MAX_QUICKACKS;
        assert_eq!(acked(r.on_data(0, segment(n), false, &p)), Some(n + 1), "two segments");
        assert_eq!(acked(r.on_data(5_000, segment(n + 1), false, &p)), Some(n + 2), "after a silence");
        // Without the Linux rules the first segment waits.
        let q = params(2, false);
        assert!(Receiver::default().on_data(0, segment(0), false, &q).arm_delayed_ack);
    }
}
