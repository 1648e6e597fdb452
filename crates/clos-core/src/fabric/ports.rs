//! The ports (directed links) of the fabric: their FIFO queues, drop-tail and ECN, failures and
//! rate changes, and the hooks to the shared buffer, the class scheduler and DRILL's visibility
//! window (the files beside this one).

use crate::histogram::Histograms;
use crate::topology::{Topology, TIERS};
use crate::units::{bytes_in, exact_ps_per_byte, tx_time, Time};

use super::scheduler;
use super::shared_buffer;
use super::visibility::{Entering, Visibility};

/// What `enqueue` and `backlog` read and write at one port, kept together in one cache line.
/// As separate arrays they were eight cache lines per packet-hop, and on B2 (6,144 ports) the
/// arrays outgrow the L2 cache; the backlog read and the enqueue were then 14% of B2's samples
/// (docs/performance.md, "Design decisions"). What the port accepted is in the line too: as an
/// array beside it, its line was the one a hop still missed on (6% of B2's samples), since the
/// look-ahead prefetches the queue line only.
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
    /// Per port where enqueues keep the packets still entering each queue, for
    /// `visible_backlog`: only where the load balancer reads them (DRILL), as keeping them costs
    /// every hop a few instructions. Empty otherwise ([`Ports::model_entering`]).
    entering: Vec<Entering>,
    visibility: Visibility,
    /// Switches that pool their ports' buffers (`shared_buffer.rs`); `None` for static buffers.
    shared: Option<Box<shared_buffer::SharedBuffers>>,
    /// Class queues at switch ports (`scheduler.rs`); `None`: every port is one FIFO.
    sched: Option<Box<scheduler::Scheduler>>,
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
            visibility: Visibility::After(0),
            shared: None,
            sched: None,
            drops: vec![0; n],
            ecn_marks: vec![0; n],
            queueing: Histograms::new(TIERS.len()),
            epoch: vec![0; n],
            link_losses: vec![0; n],
        }
    }

    /// Take the state of the ports `mine` keeps from a partition's world of a parallel run
    /// (`sim/merge.rs`), which alone ran them (their class queues too: what they hold counts in
    /// the bytes sent); the queueing delays of all its ports are added. A switch's shared
    /// buffer only decides admission, and is not taken.
    pub fn absorb(&mut self, other: &mut Ports, mine: impl Fn(u32) -> bool) {
        for p in 0..self.queues.len() {
            if mine(p as u32) {
                self.queues[p] = other.queues[p];
                self.drops[p] = other.drops[p];
                self.ecn_marks[p] = other.ecn_marks[p];
                self.epoch[p] = other.epoch[p];
                self.link_losses[p] = other.link_losses[p];
                if let (Some(a), Some(b)) = (self.entering.get_mut(p), other.entering.get(p)) {
                    *a = b.clone();
                }
                if let (Some(a), Some(b)) = (self.sched.as_deref_mut(), other.sched.as_deref_mut()) {
                    a.swap_port(b, p);
                }
            }
        }
        self.queueing.absorb(&other.queueing);
    }

    /// Keep the packets still entering each queue from now on, for `visible_backlog` (DRILL),
    /// each invisible for as long as `visibility` says. `After(0)` keeps nothing: every enqueued
    /// byte is visible at once.
    pub fn model_entering(&mut self, visibility: Visibility) {
        self.visibility = visibility;
        self.entering = match visibility {
            Visibility::After(0) => Vec::new(),
            _ => vec![Entering::default(); self.queues.len()],
        };
    }

    /// Every switch pools its ports' buffers: `pool` bytes each, dynamic thresholds with
    /// `alpha` (`shared_buffer.rs`); the static buffer stays a cap on each queue.
    pub fn pool_switches(&mut self, t: &Topology, pool: u64, alpha: f64) {
        let mut switch_ports = vec![(0, 0); self.queues.len()];
        let mut cap = 0;
        for node in t.n_hosts..t.nodes.len() {
            let (first, end) = (t.port_start[node], t.port_start[node + 1]);
            for p in first..end {
                switch_ports[p as usize] = (first, end);
                cap = cap.max(self.queues[p as usize].buffer as u64);
                // Every enqueue here falls through the static test to the pool's.
                self.queues[p as usize].buffer = 0;
            }
        }
        self.shared = Some(Box::new(shared_buffer::SharedBuffers::new(pool, alpha, cap, switch_ports)));
    }

    /// Every switch port holds `classes` queues (`scheduler.rs`), served by strict priority and
    /// DWRR with `quantum` bytes per unit of weight, marking at dequeue if `dequeue_marking`.
    pub fn schedule_classes(&mut self, t: &Topology, classes: &[scheduler::Class], quantum: u64, dequeue_marking: bool) {
        let s = scheduler::Scheduler::new(classes, quantum, dequeue_marking, self.queues.len(), |p| !t.is_host(t.ports[p].from));
        self.sched = Some(Box::new(s));
    }

    /// Each class's limit on its waiting bytes at every scheduled port (`u64::MAX`: none;
    /// `scheduler.rs`).
    pub fn limit_classes(&mut self, limits: &[u64]) {
        if let Some(s) = self.sched.as_deref_mut() {
            s.limit_classes(limits);
        }
    }

    /// Whether packets offered to `port` go through class queues ([`Ports::offer`]) rather
    /// than [`Ports::enqueue`].
    #[inline]
    pub fn schedules(&self, port: u32) -> bool {
        self.sched.as_ref().is_some_and(|s| s.schedules(port))
    }

    /// Bytes at `port`: its backlog and what waits in its class queues.
    pub fn occupancy(&self, port: u32, now: Time) -> u64 {
        self.backlog(port, now) + self.sched.as_ref().map_or(0, |s| s.held(port))
    }

    /// The pool's admission test for a packet the static test refused; false without a pool.
    #[cold]
    #[inline(never)]
    fn pooled_admits(&self, port: u32, backlog: u64, wire: u64, now: Time) -> bool {
        match &self.shared {
            None => false,
            Some(s) => s.admits(port, backlog, wire, |p| self.occupancy(p, now)),
        }
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

    /// Keep `port`'s link from starting anything before `until` (a host's software wait,
    /// `sim/jitter.rs`); what it holds already starts as before.
    pub fn hold_until(&mut self, port: u32, until: Time) {
        let q = &mut self.queues[port as usize];
        q.busy_until = q.busy_until.max(until);
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

    /// When `port`'s last accepted byte will have been serialised.
    #[inline]
    pub fn busy_until(&self, port: u32) -> Time {
        self.queues[port as usize].busy_until
    }

    /// The first time from `now` at which `port`'s backlog is at most `bytes`.
    pub fn time_backlog_falls_to(&self, port: u32, bytes: u64, now: Time) -> Time {
        let p = port as usize;
        self.queues[p].busy_until.saturating_sub(self.tx_time(p, bytes)).max(now)
    }

    /// Serialisation time of `bytes` at port `p`'s rate (`units::tx_time`).
    #[inline]
    fn tx_time(&self, p: usize, bytes: u64) -> Time {
        match self.queues[p].ps_per_byte {
            0 => tx_time(bytes, self.rate_bps[p]),
            ppb => bytes * ppb,
        }
    }

    /// Bytes `port` has finished serialising by `now`: what it accepted minus what it holds
    /// (`accepted` counts a packet when it is accepted, which may be long before it is sent).
    /// A host's software wait ([`Ports::hold_until`]) holds the link idle, and the backlog
    /// counts that time at the link's rate, so while a wait is pending the backlog may exceed
    /// what the port accepted: then nothing more has been sent.
    #[inline]
    pub fn sent_bytes(&self, port: u32, now: Time) -> u64 {
        self.queues[port as usize].accepted.bytes.saturating_sub(self.occupancy(port, now))
    }

    /// The queue length a forwarding engine can read (DRILL §3.2.1): the backlog minus the
    /// packets "just entering the queue", each for its own window ([`Visibility`]) after its
    /// enqueue. Entering packets are the newest, at the FIFO's tail, so whatever of the backlog
    /// has been sent is theirs last: the visible part is the backlog less their bytes, or 0.
    /// The window's length is ours: the paper says only that such packets are not yet counted.
    /// Without [`Ports::model_entering`], every byte counts as visible: the whole backlog.
    #[inline]
    pub fn visible_backlog(&self, port: u32, now: Time) -> u64 {
        let b = self.occupancy(port, now);
        match self.entering.get(port as usize) {
            Some(e) => b.saturating_sub(e.invisible_bytes(now)),
            None => b,
        }
    }

    /// Nothing is entering `port`'s queue any more (its backlog was just dropped or restated).
    fn clear_entering(&mut self, port: usize) {
        if let Some(e) = self.entering.get_mut(port) {
            e.clear();
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
        self.clear_entering(p);
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
        self.clear_entering(p);
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
        let buffer = self.queues[p].buffer;
        // Limits are compared only once passed, which at a host NIC (`NO_LIMIT`) is never in
        // practice; the second test keeps it exact beyond 4 GiB of backlog all the same. A
        // pooled port's static limit is 0, so its every packet asks the pool.
        if backlog + wire > buffer as u64 && buffer != NO_LIMIT && !self.pooled_admits(port, backlog, wire, now) {
            self.drops[p] += 1;
            return Enqueued::Dropped;
        }
        let q = &mut self.queues[p];
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
            e.enter(now, self.visibility.window(tx), wire);
        }
        self.queueing.record(tier, queueing);
        Enqueued::Accepted { arrival: done + delay, to, queueing, mark }
    }

    /// Offer packet `pkt` of `wire` bytes and traffic `class` to a port with class queues
    /// (`scheduler.rs`). The buffer (static or pooled) counts every class together, and a class
    /// with a limit of its own (`Scheduler::limit_classes`) drops beyond it; a mark at
    /// enqueue reads the class's queue with the packet on the wire. A packet that finds the link
    /// idle and nothing waiting starts at once; otherwise it waits, and the port must drain
    /// ([`Ports::drain`]) at the time returned, if one is (none: a drain is due already).
    pub fn offer(&mut self, port: u32, class: u8, pkt: u32, wire: u64, ect: bool, now: Time) -> Offered {
        let p = port as usize;
        let backlog = self.backlog(port, now);
        let sched = self.sched.as_deref().expect("offered only where scheduled");
        let held = sched.held(port);
        let buffer = self.queues[p].buffer;
        if backlog + held + wire > buffer as u64 && !self.pooled_admits(port, backlog + held, wire, now) {
            self.drops[p] += 1;
            return Offered::Dropped;
        }
        let sched = self.sched.as_deref().expect("checked above");
        if !sched.admits(port, class, wire) {
            self.drops[p] += 1;
            return Offered::Dropped;
        }
        let threshold = self.queues[p].ecn_threshold;
        let mark = !sched.dequeue_marking && ect && threshold != NO_LIMIT && sched.class_bytes(port, class) + backlog > threshold as u64;
        if mark {
            self.ecn_marks[p] += 1;
        }
        // Counted as accepted now, as a FIFO port counts it; its queueing when it starts.
        self.queues[p].accepted.bytes += wire;
        self.queues[p].accepted.packets += 1;
        if held == 0 && self.queues[p].busy_until <= now {
            return Offered::Started(self.start(p, wire, now, now, mark));
        }
        let sched = self.sched.as_deref_mut().expect("checked above");
        sched.push(port, class, scheduler::Waiting { pkt, wire, since: now, ect, mark });
        Offered::Waiting { drain_at: sched.arm_drain(port).then_some(self.queues[p].busy_until.max(now)) }
    }

    /// `port`'s link is free at `now`: the scheduler's next packet starts. Returns it with
    /// where and when it arrives, and when to drain again (none: nothing waits).
    pub fn drain(&mut self, port: u32, now: Time) -> (Option<(u32, Enqueued)>, Option<Time>) {
        let p = port as usize;
        let sched = self.sched.as_deref_mut().expect("drained only where scheduled");
        if self.queues[p].busy_until > now {
            // The link is still busy (a rate change stretched the packet on the wire).
            return (None, Some(self.queues[p].busy_until));
        }
        let Some((class, w)) = sched.pop(port) else {
            sched.disarm_drain(port);
            return (None, None);
        };
        let threshold = self.queues[p].ecn_threshold;
        let late_mark = sched.dequeue_marking && w.ect && threshold != NO_LIMIT && sched.class_bytes(port, class) > threshold as u64;
        let more = sched.has_waiting(port);
        if !more {
            sched.disarm_drain(port);
        }
        if late_mark {
            self.ecn_marks[p] += 1;
        }
        let accepted = self.start(p, w.wire, w.since, now, w.mark || late_mark);
        (Some((w.pkt, accepted)), more.then_some(self.queues[p].busy_until))
    }

    /// Put a packet that arrived at `since` on port `p`'s idle link at `now`.
    fn start(&mut self, p: usize, wire: u64, since: Time, now: Time, mark: bool) -> Enqueued {
        let tx = self.tx_time(p, wire);
        let q = &mut self.queues[p];
        q.busy_until = now + tx;
        let queueing = now - since;
        q.accepted.queueing_ps += queueing;
        let (tier, arrival, to) = (q.tier as usize, q.busy_until + q.delay, q.peer);
        self.queueing.record(tier, queueing);
        Enqueued::Accepted { arrival, to, queueing, mark }
    }
}

/// What happened to a packet offered to a port with class queues ([`Ports::offer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    Dropped,
    /// The link was idle: it started at once.
    Started(Enqueued),
    /// It waits in its class queue; drain the port at `drain_at` if given.
    Waiting {
        drain_at: Option<Time>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::Rate;

    fn ports() -> (Ports, u32) {
        let t =
            build(&LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(10_000_000_000), Rate(10_000_000_000), 1_000_000).unwrap();
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
        p.model_entering(Visibility::Serialisation);
        p.enqueue(port, 1500, false, 0, true);
        assert_eq!((p.backlog(port, 600_000), p.visible_backlog(port, 600_000)), (750, 0));
        p.enqueue(port, 1500, false, 1_000_000, true);
        // The second packet has entered by 2.2 us; 0.2 us of it is left to serialise: 250 B.
        assert_eq!((p.backlog(port, 2_200_000), p.visible_backlog(port, 2_200_000)), (250, 250));
        let (mut p, port) = ports();
        p.model_entering(Visibility::After(0));
        p.enqueue(port, 1500, false, 0, true);
        assert_eq!(p.visible_backlog(port, 0), 1500, "exact visibility: the whole backlog at once");
    }

    /// A busy port stays visible while packets keep arriving less than a serialisation time
    /// apart: each packet is hidden only for its own window. By hand: at 40 Gb/s a 1,538 B frame
    /// takes 307.6 ns. Eleven frames enqueued at 0, 100, ..., 1,000 ns leave 11 x 1,538 - 1,050
    /// x 5 = 11,668 B unsent at 1,050 ns, of which the frames of 800, 900 and 1,000 ns (4,614 B)
    /// are still entering (until 1,107.6, 1,207.6 and 1,307.6 ns): 7,054 B are visible. With a
    /// 100 ns window only the frame of 1,000 ns is entering: 10,130 B are visible.
    #[test]
    fn a_streak_of_arrivals_hides_only_the_packets_still_entering() {
        let t =
            build(&LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(40_000_000_000), Rate(40_000_000_000), 1_000_000).unwrap();
        let port = t.ports_of(t.tors[0]).find(|&p| !t.is_host(t.ports[p as usize].to)).unwrap();
        for (visibility, visible) in [(Visibility::Serialisation, 7_054), (Visibility::After(100_000), 10_130), (Visibility::After(0), 11_668)] {
            let mut p = Ports::new(&t, 1_000_000, None);
            p.model_entering(visibility);
            for i in 0..11 {
                assert!(matches!(p.enqueue(port, 1538, false, i * 100_000, true), Enqueued::Accepted { .. }));
            }
            assert_eq!((p.backlog(port, 1_050_000), p.visible_backlog(port, 1_050_000)), (11_668, visible), "{visibility:?}");
        }
    }

    /// Marking at enqueue against at dequeue, by hand: K = 1,000 B, three 1,500 B packets of
    /// one class offered at once to an idle 10 Gb/s port. The first starts at once, unmarked.
    /// At enqueue, the second sees 1,500 B ahead (the first on the wire) and the third 3,000 B:
    /// both marked. At dequeue, the second starts at 1.2 us with the third (1,500 B) behind it:
    /// marked; the third starts with nothing behind it: not marked. Each waits for the one
    /// ahead: 1.2 us and 2.4 us of queueing.
    #[test]
    fn class_queues_mark_at_enqueue_or_at_dequeue() {
        let (_, port) = ports();
        let t =
            build(&LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(10_000_000_000), Rate(10_000_000_000), 1_000_000).unwrap();
        for (dequeue, marks) in [(false, [false, true, true]), (true, [false, true, false])] {
            let mut p = Ports::new(&t, 30_000, Some(1000));
            p.schedule_classes(&t, &[scheduler::Class { priority: 0, weight: 1 }], 1538, dequeue);
            let Offered::Started(Enqueued::Accepted { mark, queueing: 0, .. }) = p.offer(port, 0, 0, 1500, true, 0) else {
                panic!("an idle port starts at once")
            };
            assert!(!mark);
            assert_eq!(p.offer(port, 0, 1, 1500, true, 0), Offered::Waiting { drain_at: Some(1_200_000) });
            assert_eq!(p.offer(port, 0, 2, 1500, true, 0), Offered::Waiting { drain_at: None }, "a drain is due already");
            assert_eq!(p.occupancy(port, 0), 4500);
            let mut got = vec![mark];
            for (pkt, at, next) in [(1, 1_200_000, Some(2_400_000)), (2, 2_400_000, None)] {
                let (started, again) = p.drain(port, at);
                let Some((h, Enqueued::Accepted { mark, queueing, .. })) = started else { panic!("a packet waits") };
                assert_eq!((h, queueing, again), (pkt, at, next), "dequeue marking: {dequeue}");
                got.push(mark);
            }
            assert_eq!(got, marks, "dequeue marking: {dequeue}");
            assert_eq!(p.ecn_marks[port as usize], marks.iter().filter(|&&m| m).count() as u64);
        }
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
