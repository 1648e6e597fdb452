//! The FIFO host (`[host] qdisc = "fifo"`): TCP small queues bound each flow's bytes in the NIC
//! queue (`tsq`), and `queue` bounds the queue as a whole, a packet that would not fit being
//! local congestion for its flow.

use crate::fabric::Ports;
use crate::packet::wire;
use crate::transport::tcp::Sender;
use crate::units::Time;
use std::collections::VecDeque;

/// Linux's `tcp_limit_output_bytes`.
pub const TSQ_MAX_BYTES: u64 = 1 << 20;

pub struct Tsq {
    /// A fixed limit (`tsq` a size, or no limit with `"off"`); `None`: Linux's, which follows
    /// each flow's pacing rate (`tsq = "auto"`).
    limit: Option<u64>,
    /// Bytes the whole NIC queue may hold before data is refused (`queue`; `u64::MAX`: none).
    queue: u64,
    /// Per flow, its packets in the NIC queue as (departure, bytes), oldest first.
    queued: Vec<VecDeque<(Time, u64)>>,
    /// Per flow: the bytes `queued` holds, kept beside it rather than summed at every send.
    queued_bytes: Vec<u64>,
    /// Per flow: a wake-up is in the calendar.
    wake_due: Vec<bool>,
}

/// What a flow may do with its next data packet.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Send it.
    Send,
    /// Wait; wake the flow at this time, unless `None` (a wake-up is due already).
    Wait(Option<Time>),
    /// The NIC queue is full: the flow reduces its window (local congestion), then waits as
    /// `Wait` says.
    Congested(Option<Time>),
}

impl Tsq {
    pub fn new(limit: Option<u64>, queue: u64, flows: usize) -> Tsq {
        Tsq { limit, queue, queued: vec![VecDeque::new(); flows], queued_bytes: vec![0; flows], wake_due: vec![false; flows] }
    }

    pub fn add_flow(&mut self) {
        self.queued.push(VecDeque::new());
        self.queued_bytes.push(0);
        self.wake_due.push(false);
    }

    /// Whether `flow`'s next frame of `frame` bytes may enter its host's NIC queue (`port`) at
    /// `now`. The queue's backlog is read only where `queue` bounds it.
    #[inline]
    pub fn admits(&mut self, flow: u32, sender: &Sender, frame: u64, ports: &Ports, port: u32, now: Time) -> Admit {
        let f = flow as usize;
        if self.queue != u64::MAX && ports.backlog(port, now) + frame > self.queue {
            // Tried again once the queue has room for it (not before the next picosecond).
            let room = self.queue - frame;
            return Admit::Congested(self.wake(f, || ports.time_backlog_falls_to(port, room, now).max(now + 1)));
        }
        let q = &mut self.queued[f];
        while let Some(&(_, bytes)) = q.front().filter(|&&(departs, _)| departs <= now) {
            self.queued_bytes[f] -= bytes;
            q.pop_front();
        }
        let limit = self.limit.unwrap_or_else(|| linux_limit(sender));
        if self.queued_bytes[f] < limit {
            return Admit::Send;
        }
        let oldest = q.front().expect("over the limit, so something is queued").0;
        Admit::Wait(self.wake(f, || oldest))
    }

    /// A wake-up for flow `f` at `at()`, unless one is due already.
    fn wake(&mut self, f: usize, at: impl FnOnce() -> Time) -> Option<Time> {
        if self.wake_due[f] {
            return None;
        }
        self.wake_due[f] = true;
        Some(at())
    }

    /// `flow` put a frame of `bytes` into the NIC queue, which it leaves at `departs`.
    #[inline]
    pub fn sent(&mut self, flow: u32, departs: Time, bytes: u64) {
        self.queued[flow as usize].push_back((departs, bytes));
        self.queued_bytes[flow as usize] += bytes;
    }

    /// `flow`'s wake-up came.
    pub fn woke(&mut self, flow: u32) {
        self.wake_due[flow as usize] = false;
    }
}

/// Linux's TSQ limit for a flow (`tcp_small_queue_check`): 1/1024 s of its pacing rate
/// (`sk_pacing_shift` 10), at least two packets, at most `tcp_limit_output_bytes`. Before a
/// round-trip sample the pacing rate is unlimited, and so is the limit up to that cap.
fn linux_limit(s: &Sender) -> u64 {
    let floor = 2 * wire::frame(s.mss(), 0);
    match s.pacing_rate() {
        Some(rate) => ((rate / 1024.0) as u64).clamp(floor, TSQ_MAX_BYTES),
        None => TSQ_MAX_BYTES,
    }
}

#[cfg(test)]
mod tests {
    use super::{linux_limit as linux_tsq_limit, TSQ_MAX_BYTES};
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
