//! Output-queued switch ports and host NICs.
//!
//! Each port is a FIFO drop-tail buffer (bytes) feeding a link of fixed rate and propagation
//! delay. Because the queue is FIFO at a constant rate, a packet's departure time is known the
//! moment it is enqueued: it starts when the link is free (`busy_until`) and takes its wire bytes
//! times 8 / rate. So a hop costs one event (the arrival at the far end) and the queue length at
//! any instant is the unserialised backlog, `(busy_until - now) * rate`. This is exact for FIFO
//! output queues; schemes that need to reorder or pause a queue must not use this shortcut.
//!
//! The backlog read by a decision excludes the packet being enqueued (as in DRILL's hardware,
//! DRILL §3.2.1), and the ECN mark (DCTCP) is set when that backlog exceeds the threshold K.
//!
//! Every accepted packet's queueing delay (its wait before serialisation starts) is added to its
//! port's total and to a histogram of its link tier, for DRILL's per-hop queueing (Fig. 6c, 14c).

use crate::metrics::histogram::Histograms;
use crate::topology::{Topology, TIERS};
use crate::units::{bytes_in, exact_ps_per_byte, tx_time, Time};

/// What `enqueue` and `backlog` read and write at one port, kept together in one cache line.
/// As separate arrays they were eight cache lines per packet-hop, and on B2 (6,144 ports) the
/// arrays outgrow the L2 cache; the backlog read and the enqueue were then 14% of B2's samples
/// (docs/performance.md, "B2: what was tried"). What the port accepted is in the line too: as
/// an array beside it, its line was the one a hop still missed on (6% of B2's samples, "Fewer
/// stalls per event" there), since the look-ahead prefetches the queue line only.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Queue {
    busy_until: Time,
    /// `exact_ps_per_byte` of the port's rate: 0 where the rate needs the u128 forms.
    ps_per_byte: u64,
    /// Propagation delay of the link.
    delay: Time,
    accepted: Accepted,
    /// Drop-tail buffer and ECN marking threshold, bytes; [`NO_LIMIT`] at host NICs. Four bytes
    /// each so that the line has room for `accepted` (`Scenario::validate` keeps a switch's
    /// buffer below 4 GiB).
    buffer: u32,
    ecn_threshold: u32,
    /// Node at the far end, in this line so that a hop reads it from the line it has loaded
    /// already (`Enqueued::Accepted::to`).
    peer: u32,
    /// Tier of the port (index into `TIERS`).
    tier: u8,
}

// One line per port: a field more would make every queue two lines, silently.
const _: () = assert!(std::mem::size_of::<Queue>() == 64);

/// A buffer or threshold that is never reached: a host NIC never drops (its stack applies
/// back-pressure) and never marks.
const NO_LIMIT: u32 = u32::MAX;

/// The largest switch buffer a port can hold, in bytes.
pub const MAX_BUFFER: u64 = NO_LIMIT as u64 - 1;

/// Bytes still being written into a queue (not yet visible to a queue-length read) and when the
/// last of them becomes visible; see [`Ports::visible_backlog`]. Kept only where the scheme
/// reads it ([`Ports::model_entering`]), so beside the queue lines rather than in them.
#[derive(Clone, Copy, Default)]
struct Entering {
    bytes: u64,
    until: Time,
}

/// What a port has accepted: the counters every accepted packet adds to, kept together so that
/// a hop writes one cache line and checks one index for them instead of three.
#[derive(Clone, Copy, Debug, Default)]
pub struct Accepted {
    pub bytes: u64,
    pub packets: u64,
    /// Sum of the queueing delays of the packets the port accepted.
    pub queueing_ps: u64,
}

/// All ports (directed links): their queues, and arrays of counters read by the metrics.
pub struct Ports {
    pub rate_bps: Vec<u64>,
    queues: Vec<Queue>,
    /// Per port where enqueues keep the bytes still entering each queue, for
    /// `visible_backlog`: only where the load balancer reads them (DRILL), as keeping them costs
    /// every hop a few instructions. Empty otherwise ([`Ports::model_entering`]).
    entering: Vec<Entering>,
    pub drops: Vec<u64>,
    pub ecn_marks: Vec<u64>,
    /// Queueing delays per tier.
    pub queueing: Histograms,
    /// Incremented when a port's link fails and when it is repaired: odd means down.
    pub epoch: Vec<u16>,
    /// Packets lost because the link was down: offered to it, or queued on or crossing it when
    /// it failed (counted on the port they were lost at).
    pub link_losses: Vec<u64>,
}

/// What happened to a packet offered to a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    /// The buffer was full (drop-tail).
    Dropped,
    /// Accepted; it reaches the far end, node `to`, at `arrival`, waited `queueing` before
    /// serialisation, and should be CE-marked if `mark`.
    Accepted { arrival: Time, to: u32, queueing: Time, mark: bool },
}

impl Ports {
    /// `switch_buffer` applies to switch ports; host NICs never drop (a host's stack applies
    /// back-pressure instead). `ecn` is the marking threshold in bytes for switch ports.
    pub fn new(t: &Topology, switch_buffer: u64, ecn: Option<u64>) -> Ports {
        let n = t.ports.len();
        let is_host_port = |i: usize| t.is_host(t.ports[i].from);
        // Validated below MAX_BUFFER (`Scenario::validate`); a threshold is below the buffer.
        let limit = |bytes: u64| bytes.min(MAX_BUFFER) as u32;
        Ports {
            rate_bps: t.ports.iter().map(|p| p.rate_bps).collect(),
            queues: (0..n)
                .map(|i| Queue {
                    busy_until: 0,
                    ps_per_byte: exact_ps_per_byte(t.ports[i].rate_bps),
                    delay: t.ports[i].delay,
                    accepted: Accepted::default(),
                    buffer: if is_host_port(i) { NO_LIMIT } else { limit(switch_buffer) },
                    ecn_threshold: match ecn {
                        Some(k) if !is_host_port(i) => limit(k),
                        _ => NO_LIMIT,
                    },
                    peer: t.ports[i].to,
                    tier: t.tier_of(i as u32) as u8,
                })
                .collect(),
            entering: Vec::new(),
            drops: vec![0; n],
            ecn_marks: vec![0; n],
            queueing: Histograms::new(TIERS.len()),
            epoch: vec![0; n],
            link_losses: vec![0; n],
        }
    }

    /// Keep the bytes still entering each queue from now on, for `visible_backlog` (DRILL).
    pub fn model_entering(&mut self) {
        self.entering = vec![Entering::default(); self.queues.len()];
    }

    /// What `port` has accepted so far.
    #[inline]
    pub fn accepted(&self, port: u32) -> Accepted {
        self.queues[port as usize].accepted
    }

    /// Node at the far end of `port`.
    #[inline]
    pub fn peer(&self, port: u32) -> u32 {
        self.queues[port as usize].peer
    }

    /// Index into `TIERS` of a port's tier.
    #[inline]
    pub fn tier(&self, port: u32) -> usize {
        self.queues[port as usize].tier as usize
    }

    pub fn len(&self) -> usize {
        self.queues.len()
    }

    /// Bytes of queue lines, for sizing the look-ahead.
    pub fn queue_bytes(&self) -> usize {
        std::mem::size_of_val(self.queues.as_slice())
    }

    pub fn is_empty(&self) -> bool {
        self.rate_bps.is_empty()
    }

    /// Start loading `port`'s queue line (`prefetch.rs`).
    #[inline]
    pub fn prefetch(&self, port: u32) {
        if let Some(q) = self.queues.get(port as usize) {
            crate::prefetch::line(q);
        }
    }

    /// Bytes queued at `port` and not yet serialised at `now` (includes the unsent part of the
    /// packet on the wire).
    #[inline]
    pub fn backlog(&self, port: u32, now: Time) -> u64 {
        let p = port as usize;
        let q = &self.queues[p];
        let dt = q.busy_until.saturating_sub(now);
        match q.ps_per_byte {
            0 => bytes_in(dt, self.rate_bps[p]),
            ppb => dt / ppb,
        }
    }

    /// Serialisation time of `bytes` at port `p`'s rate (`units::tx_time`).
    #[inline]
    fn tx_time(&self, p: usize, bytes: u64) -> Time {
        match self.queues[p].ps_per_byte {
            0 => tx_time(bytes, self.rate_bps[p]),
            ppb => bytes * ppb,
        }
    }

    /// Bytes `port` has finished serialising by `now`: what it accepted minus its backlog
    /// (`accepted` counts a packet when it is accepted, which may be long before it is sent).
    #[inline]
    pub fn sent_bytes(&self, port: u32, now: Time) -> u64 {
        self.queues[port as usize].accepted.bytes - self.backlog(port, now)
    }

    /// The queue length a forwarding engine can read (DRILL §3.2.1): the backlog minus packets
    /// that are "just entering the queue", i.e. enqueued less than their own serialisation time
    /// ago. The model of "entering" is ours: the paper only says such packets are not counted
    /// until fully enqueued, and writing a packet into the buffer at line rate takes that long.
    /// Without [`Ports::model_entering`], every byte counts as visible: the whole backlog.
    #[inline]
    pub fn visible_backlog(&self, port: u32, now: Time) -> u64 {
        let b = self.backlog(port, now);
        match self.entering.get(port as usize) {
            Some(e) if now < e.until => b.saturating_sub(e.bytes),
            _ => b,
        }
    }

    /// Nothing is entering `port`'s queue any more (its backlog was just dropped or restated).
    fn clear_entering(&mut self, port: usize, now: Time) {
        if let Some(e) = self.entering.get_mut(port) {
            *e = Entering { bytes: 0, until: now };
        }
    }

    #[inline]
    pub fn is_down(&self, port: u32) -> bool {
        self.epoch[port as usize] & 1 == 1
    }

    /// The port's link fails at `now`: everything queued on it is lost (the packets find out
    /// when they would have arrived: their epoch is stale), and so is whatever is offered to it
    /// until it is repaired. The lost backlog never counts as sent.
    pub fn fail(&mut self, port: u32, now: Time) {
        let p = port as usize;
        if self.is_down(port) {
            return;
        }
        let backlog = self.backlog(port, now);
        let q = &mut self.queues[p];
        q.accepted.bytes -= backlog;
        q.busy_until = now;
        self.clear_entering(p, now);
        self.epoch[p] = self.epoch[p].wrapping_add(1);
    }

    /// The link's rate changes at `now` (a degraded link, or its repair). Packets already queued
    /// keep the departure times they were given; the backlog they represent is re-expressed at
    /// the new rate so that queue lengths, drops and marks stay consistent from now on.
    pub fn set_rate(&mut self, port: u32, rate_bps: u64, now: Time) {
        let p = port as usize;
        let backlog = self.backlog(port, now);
        self.rate_bps[p] = rate_bps;
        self.queues[p].ps_per_byte = exact_ps_per_byte(rate_bps);
        self.queues[p].busy_until = now + self.tx_time(p, backlog);
        self.clear_entering(p, now);
    }

    /// The port's link is repaired.
    pub fn repair(&mut self, port: u32) {
        if self.is_down(port) {
            self.epoch[port as usize] = self.epoch[port as usize].wrapping_add(1);
        }
    }

    /// Offer a packet of `wire` bytes to `port` at `now`; `ect` says whether it may be CE-marked.
    /// `entering` false says the scheme does not read entering bytes (`model_entering`), so that
    /// a loop compiled for such schemes does not ask.
    #[inline]
    pub fn enqueue(&mut self, port: u32, wire: u64, ect: bool, now: Time, entering: bool) -> Enqueued {
        let p = port as usize;
        let backlog = self.backlog(port, now);
        let tx = self.tx_time(p, wire);
        let q = &mut self.queues[p];
        // Limits are compared only once passed, which at a host NIC (`NO_LIMIT`) is never in
        // practice; the second test keeps it exact beyond 4 GiB of backlog all the same.
        if backlog + wire > q.buffer as u64 && q.buffer != NO_LIMIT {
            self.drops[p] += 1;
            return Enqueued::Dropped;
        }
        let mark = ect && backlog > q.ecn_threshold as u64 && q.ecn_threshold != NO_LIMIT;
        if mark {
            self.ecn_marks[p] += 1;
        }
        let start = q.busy_until.max(now);
        let done = start + tx;
        q.busy_until = done;
        let queueing = start - now;
        q.accepted.bytes += wire;
        q.accepted.packets += 1;
        q.accepted.queueing_ps += queueing;
        let (tier, delay, to) = (q.tier as usize, q.delay, q.peer);
        if let (true, Some(e)) = (entering, self.entering.get_mut(p)) {
            if now >= e.until {
                e.bytes = 0;
            }
            e.bytes += wire;
            e.until = e.until.max(now + tx);
        }
        self.queueing.record(tier, queueing);
        Enqueued::Accepted { arrival: done + delay, to, queueing, mark }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::Rate;

    fn ports() -> (Ports, u32) {
        let t = build(&LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(10_000_000_000), Rate(10_000_000_000), 1_000_000).unwrap();
        let leaf_up = t.ports_of(t.tors[0]).find(|&p| !t.is_host(t.ports[p as usize].to)).unwrap();
        (Ports::new(&t, 3000, Some(1000)), leaf_up)
    }

    #[test]
    fn fifo_departures_follow_the_link_rate() {
        let (mut p, port) = ports();
        let a = p.enqueue(port, 1500, false, 0, true);
        let b = p.enqueue(port, 1500, false, 0, true);
        // 1500 B at 10 Gb/s = 1.2 us; plus 1 us propagation.
        let to = p.peer(port);
        assert_eq!(a, Enqueued::Accepted { arrival: 2_200_000, to, queueing: 0, mark: false });
        assert_eq!(b, Enqueued::Accepted { arrival: 3_400_000, to, queueing: 1_200_000, mark: false });
        assert_eq!(p.backlog(port, 600_000), 2250);
    }

    /// DRILL §3.2.1: a packet still being written into the queue is not yet counted. At 10 Gb/s
    /// a 1500 B packet takes 1.2 us to enter; half-way, 750 B of backlog are all its own.
    #[test]
    fn entering_bytes_are_invisible_only_where_modelled() {
        let (mut p, port) = ports();
        p.enqueue(port, 1500, false, 0, true);
        assert_eq!((p.backlog(port, 600_000), p.visible_backlog(port, 600_000)), (750, 750), "not modelled: all visible");
        let (mut p, port) = ports();
        p.model_entering();
        p.enqueue(port, 1500, false, 0, true);
        assert_eq!((p.backlog(port, 600_000), p.visible_backlog(port, 600_000)), (750, 0));
        p.enqueue(port, 1500, false, 1_000_000, true);
        // The second packet has entered by 2.2 us; 0.2 us of it is left to serialise: 250 B.
        assert_eq!((p.backlog(port, 2_200_000), p.visible_backlog(port, 2_200_000)), (250, 250));
    }

    #[test]
    fn drop_tail_and_ecn_threshold_use_the_backlog_before_the_arrival() {
        let (mut p, port) = ports();
        assert!(matches!(p.enqueue(port, 1500, true, 0, true), Enqueued::Accepted { mark: false, .. }));
        // Backlog 1500 > K = 1000: marked.
        assert!(matches!(p.enqueue(port, 1500, true, 0, true), Enqueued::Accepted { mark: true, .. }));
        // 3000 + 1 > 3000 B buffer: dropped.
        assert_eq!(p.enqueue(port, 1, true, 0, true), Enqueued::Dropped);
        assert_eq!((p.drops[port as usize], p.ecn_marks[port as usize]), (1, 1));
    }
}
