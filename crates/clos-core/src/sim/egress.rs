//! A host's egress: what stands between TCP and the NIC in a Linux host (issue 32, item 2).
//!
//! The NIC itself is the host's port (`fabric::Ports`), a FIFO whose departures are known at
//! enqueue. In front of it, `[host] qdisc` chooses one of two disciplines:
//!
//! - **`fq`** (the default): Linux's `fq` qdisc in front of a NIC queue kept short by byte
//!   queue limits. The NIC queue takes data only while it holds less than `nic_buffer` bytes
//!   (default two full frames, the least that never lets the link idle while data waits); the
//!   rest waits in its flow's own queue, and flows with data waiting are served round robin,
//!   one packet each per turn (fq's per-flow queues with a quantum of one packet). A flow's data
//!   waits inside TCP rather than in a copy in the qdisc: a flow's packets go out in the order
//!   TCP makes them either way, and the time TCP stamps on a packet (its RTT samples) is when
//!   it enters the NIC queue, not the qdisc. ACKs and other control packets never wait: like the
//!   sparse flows fq serves first, they go straight to the NIC queue, behind at most
//!   `nic_buffer` bytes of data. Each turn of the round robin is one event (`HostDrain`), due
//!   when the NIC queue has room for a frame again.
//! - **`fifo`**: one FIFO of unbounded size for data and ACKs alike (htsim's and ns-3's simplest
//!   host, and clos's before this model), with TCP small queues (`tsq`): a flow stops when its
//!   own packets in the NIC queue reach the limit, and resumes when the oldest of them leaves
//!   (`TsqWake`), as Linux's TSQ wakes a socket on transmit completion. The default limit is
//!   Linux's (`tcp_small_queue_check`): 1/1024 s of the flow's pacing rate (`sk_pacing_rate >>
//!   10`, the window per smoothed round trip times 2 in slow start or 1.2 after), at least two
//!   packets and at most `tcp_limit_output_bytes` (1 MB). In slow start that rate is far above
//!   the line rate, so a flow limited by its own NIC keeps tens of packets there, as the
//!   kernel's do (docs/validation.md, "Short flows beside a long one"). `tsq = "off"` gives the
//!   unbounded FIFO, which lets a flow limited only by its NIC queue milliseconds of data there,
//!   with the host's ACKs behind it.

use super::World;
use crate::event::Event;
use crate::packet::wire;
use crate::scenario::{HostSpec, Qdisc, Tsq};
use crate::units::Time;
use std::collections::VecDeque;

/// Linux's `tcp_limit_output_bytes`.
pub const TSQ_MAX_BYTES: u64 = 1 << 20;

pub(super) struct Egress {
    mode: Mode,
}

enum Mode {
    Fq(Fq),
    Tsq(Tsq_),
}

/// `fq`: per host, the flows with data waiting, in round-robin order.
struct Fq {
    nic_buffer: u64,
    ring: Vec<VecDeque<u32>>,
    /// Per flow: in its host's ring.
    waiting: Vec<bool>,
    /// Per host: a `HostDrain` is in the calendar.
    drain_due: Vec<bool>,
}

/// `fifo` with TSQ: per flow, its packets in the NIC queue as (departure, bytes), oldest first.
#[allow(non_camel_case_types)]
struct Tsq_ {
    /// A fixed limit (`tsq` a size, or no limit with `"off"`); `None`: Linux's, which follows
    /// each flow's pacing rate (`tsq = "auto"`).
    limit: Option<u64>,
    /// Bytes the whole NIC queue may hold before data is refused (`queue`; `u64::MAX`: none).
    queue: u64,
    queued: Vec<VecDeque<(Time, u64)>>,
    /// Per flow: the bytes `queued` holds, kept beside it rather than summed at every send.
    queued_bytes: Vec<u64>,
    /// Per flow: a `TsqWake` is in the calendar.
    wake_due: Vec<bool>,
}

impl Egress {
    /// `None` where the host is today's unbounded FIFO (`fifo` with `tsq = "off"`), which then
    /// costs a sending host nothing but one test.
    pub(super) fn new(spec: &HostSpec, mss: u32, hosts: usize, flows: usize) -> Option<Egress> {
        let mode = match (spec.qdisc, spec.tsq) {
            (Qdisc::Fifo, Tsq::Off) if spec.queue.is_none() => return None,
            (Qdisc::Fq, _) => Mode::Fq(Fq {
                nic_buffer: spec.nic_buffer.map_or(2 * wire::frame(mss as u64, 0), |b| b.0),
                ring: (0..hosts).map(|_| VecDeque::with_capacity(4)).collect(),
                waiting: vec![false; flows],
                drain_due: vec![false; hosts],
            }),
            (Qdisc::Fifo, tsq) => Mode::Tsq(Tsq_ {
                limit: match tsq {
                    Tsq::Auto => None,
                    Tsq::Off => Some(u64::MAX),
                    Tsq::Bytes(b) => Some(b.0),
                },
                queue: spec.queue.map_or(u64::MAX, |b| b.0),
                queued: vec![VecDeque::new(); flows],
                queued_bytes: vec![0; flows],
                wake_due: vec![false; flows],
            }),
        };
        Some(Egress { mode })
    }

    /// A flow joined the run (closed-loop workloads).
    pub(super) fn add_flow(&mut self) {
        match &mut self.mode {
            Mode::Fq(fq) => fq.waiting.push(false),
            Mode::Tsq(t) => {
                t.queued.push(VecDeque::new());
                t.queued_bytes.push(0);
                t.wake_due.push(false);
            }
        }
    }
}

impl Fq {
    /// Whether `port`'s NIC queue has room for a frame of `frame` bytes at `now`, and if not,
    /// when it will.
    fn room(&self, ports: &crate::fabric::Ports, port: u32, frame: u64, now: Time) -> Result<(), Time> {
        if ports.backlog(port, now) + frame <= self.nic_buffer {
            return Ok(());
        }
        Err(ports.time_backlog_falls_to(port, self.nic_buffer.saturating_sub(frame), now))
    }
}

/// Linux's TSQ limit for a flow (`tcp_small_queue_check`): 1/1024 s of its pacing rate
/// (`sk_pacing_shift` 10), at least two packets, at most `tcp_limit_output_bytes`. Before a
/// round-trip sample the pacing rate is unlimited, and so is the limit up to that cap.
fn linux_tsq_limit(s: &crate::transport::tcp::Sender) -> u64 {
    let floor = 2 * wire::frame(s.mss(), 0);
    match s.pacing_rate() {
        Some(rate) => ((rate / 1024.0) as u64).clamp(floor, TSQ_MAX_BYTES),
        None => TSQ_MAX_BYTES,
    }
}

impl World {
    /// Whether `flow`'s next data packet may go into its host's NIC queue now. If not, the
    /// flow waits (in the host's round robin, or for its TSQ wake-up) and is pumped again then.
    #[inline]
    pub(super) fn egress_admits(&mut self, flow: u32) -> bool {
        let Some(e) = self.egress.as_deref_mut() else { return true };
        let f = flow as usize;
        let host = self.flows[f].src;
        let port = self.topo.port_start[host as usize];
        match &mut e.mode {
            Mode::Fq(fq) => {
                let frame = wire::frame(self.senders[f].mss(), 0);
                let room = fq.room(&self.ports, port, frame, self.now);
                let ring = &mut fq.ring[host as usize];
                if ring.is_empty() && room.is_ok() {
                    return true;
                }
                if !fq.waiting[f] {
                    fq.waiting[f] = true;
                    ring.push_back(flow);
                }
                if !fq.drain_due[host as usize] {
                    fq.drain_due[host as usize] = true;
                    self.queue.schedule(room.err().unwrap_or(self.now), Event::HostDrain { host });
                }
                false
            }
            Mode::Tsq(t) => {
                let frame = wire::frame(self.senders[f].mss(), 0);
                if t.queue != u64::MAX && self.ports.backlog(port, self.now) + frame > t.queue {
                    // Local congestion: the packet is not sent; the flow reduces its window and
                    // tries again once the queue has room for it.
                    self.senders[f].local_congestion();
                    if !t.wake_due[f] {
                        t.wake_due[f] = true;
                        let at = self.ports.time_backlog_falls_to(port, t.queue - frame, self.now);
                        self.queue.schedule(at.max(self.now + 1), Event::TsqWake { flow });
                    }
                    return false;
                }
                let q = &mut t.queued[f];
                while let Some(&(_, bytes)) = q.front().filter(|&&(departs, _)| departs <= self.now) {
                    t.queued_bytes[f] -= bytes;
                    q.pop_front();
                }
                let limit = t.limit.unwrap_or_else(|| linux_tsq_limit(&self.senders[f]));
                if t.queued_bytes[f] < limit {
                    return true;
                }
                if !t.wake_due[f] {
                    t.wake_due[f] = true;
                    let at = q.front().expect("over the limit, so something is queued").0;
                    self.queue.schedule(at, Event::TsqWake { flow });
                }
                false
            }
        }
    }

    /// `flow` put a data packet of `payload` bytes into its host's NIC queue (after
    /// `egress_admits`).
    #[inline]
    pub(super) fn egress_sent(&mut self, flow: u32, payload: u32) {
        if let Some(Egress { mode: Mode::Tsq(t) }) = self.egress.as_deref_mut() {
            let port = self.topo.port_start[self.flows[flow as usize].src as usize];
            let bytes = wire::frame(payload as u64, 0);
            t.queued[flow as usize].push_back((self.ports.busy_until(port), bytes));
            t.queued_bytes[flow as usize] += bytes;
        }
    }

    /// `fq`'s round robin: the NIC queue of `host` has room again; the flows waiting there send
    /// a packet each in turn while it has.
    pub(super) fn on_host_drain(&mut self, host: u32) {
        let port = self.topo.port_start[host as usize];
        loop {
            let Some(Egress { mode: Mode::Fq(fq) }) = self.egress.as_deref_mut() else { return };
            let h = host as usize;
            let Some(&flow) = fq.ring[h].front() else {
                fq.drain_due[h] = false;
                return;
            };
            let frame = wire::frame(self.senders[flow as usize].mss(), 0);
            if let Err(at) = fq.room(&self.ports, port, frame, self.now) {
                // Not before the next picosecond: where the backlog's rounding (at rates with no
                // whole number of picoseconds per byte) leaves a byte too many, no loop in place.
                self.queue.schedule(at.max(self.now + 1), Event::HostDrain { host });
                return;
            }
            fq.ring[h].pop_front();
            fq.waiting[flow as usize] = false;
            // One packet; a flow with more to send goes to the back of the ring.
            if self.send_segment::<super::shape::General>(flow) {
                let Some(Egress { mode: Mode::Fq(fq) }) = self.egress.as_deref_mut() else { unreachable!() };
                fq.waiting[flow as usize] = true;
                fq.ring[h].push_back(flow);
            }
            self.arm_rto_if_outstanding(flow);
        }
    }

    /// TSQ: the oldest packet `flow` had in the NIC queue has left.
    pub(super) fn on_tsq_wake(&mut self, flow: u32) {
        if let Some(Egress { mode: Mode::Tsq(t) }) = self.egress.as_deref_mut() {
            t.wake_due[flow as usize] = false;
        }
        self.pump::<super::shape::General>(flow);
    }
}

#[cfg(test)]
mod tests {
    use super::{linux_tsq_limit, TSQ_MAX_BYTES};
    use crate::transport::tcp::Sender;
    use crate::transport::TcpParams;

    /// By hand, a 1,000 B MSS (1,078 B frames): a window of 20 segments over a 1 ms SRTT in slow
    /// start paces at 2 x 20,000 B / 1 ms = 40 MB/s, so TSQ lets 40e6 / 1024 = 39,062 B wait in
    /// the NIC; with ssthresh at 30 segments (the window above half of it) the ratio is 1.2,
    /// 23,437 B; 35 segments in flight count instead of the window (35,000 x 2 / 1 ms / 1024 =
    /// 68,359 B). Over a 1 s SRTT it is the floor, two frames; before any sample, the cap.
    #[test]
    fn linux_tsq_follows_the_pacing_rate() {
        let p = TcpParams::for_tests();
        let mut s = Sender::new(1_000_000, p.mss, &p);
        assert_eq!(linux_tsq_limit(&s), TSQ_MAX_BYTES, "no round trip yet");
        s.handshake(1_000_000_000, &p);
        s.cwnd = 20_000;
        assert_eq!(linux_tsq_limit(&s), 39_062);
        let q = TcpParams { initial_ssthresh: 30_000, ..TcpParams::for_tests() };
        let mut ca = Sender::new(1_000_000, q.mss, &q);
        ca.handshake(1_000_000_000, &q);
        ca.cwnd = 20_000;
        assert_eq!(linux_tsq_limit(&ca), 23_437);
        while s.next_segment(0).is_some() {}
        assert_eq!(s.nxt, 20);
        s.cwnd = 35_000;
        while s.next_segment(0).is_some() {}
        s.cwnd = 20_000;
        assert_eq!(linux_tsq_limit(&s), 68_359, "35 in flight");
        let mut slow = Sender::new(1_000_000, p.mss, &p);
        slow.handshake(1_000_000_000_000, &p);
        slow.cwnd = 20_000;
        assert_eq!(linux_tsq_limit(&slow), 2 * 1_078);
    }
}
