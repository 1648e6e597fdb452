//! An unresponsive constant-rate sender: "UDP-like" (issue 37, item 2: the tenant that
//! misbehaves by ignoring congestion; the multicast work reuses it as its sender).
//!
//! A flow of this transport (`transport = "udp"` on a workload, with a `rate`) sends its bytes
//! as datagrams of at most `mss` payload bytes, one every `frame x 8 / rate` seconds, whatever
//! happens to them: no acknowledgement, no retransmission, no congestion control, no ECN. The
//! rate is the rate on the wire (frames with their headers, as a NIC's shaper or a token
//! bucket counts), so `rate` equal to the host's link rate sends back to back. The receiver
//! counts what arrives. A flow is over when its last datagram has been sent and every datagram
//! has arrived or been dropped; it is *finished* (has an FCT) only if every one arrived.
//!
//! What it delivers through a bottleneck follows from the queue: alone on a link of rate C it
//! gets min(rate, C); under DWRR its class gets min(rate, its weighted share), and the others
//! get the rest (work conservation); through a drop-tail FIFO it gets what fraction of the
//! arrivals find room, which TCP flows beside it cannot win back.
//!
//! Frames are sized as TCP's (`packet::wire::frame`: 20 bytes of TCP header where UDP has 8),
//! so the two transports' goodput compares at equal wire cost.

use crate::packet::wire;
use crate::units::{tx_time, Time};

/// One constant-rate sender: what it has sent and when the next datagram is due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdpSender {
    rate_bps: u64,
    bytes: u64,
    mss: u32,
    /// Datagrams in the flow.
    total: u32,
    /// The next datagram to send.
    next: u32,
}

impl UdpSender {
    pub fn new(bytes: u64, mss: u32, rate_bps: u64) -> UdpSender {
        let total = bytes.div_ceil(mss as u64).max(1) as u32;
        UdpSender { rate_bps, bytes, mss, total, next: 0 }
    }

    /// Payload bytes of datagram `seg` (the last may be shorter).
    pub fn payload(&self, seg: u32) -> u32 {
        let rest = self.bytes - seg as u64 * self.mss as u64;
        rest.min(self.mss as u64) as u32
    }

    /// Datagrams in the flow.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// Whether every datagram has been sent.
    pub fn sent_all(&self) -> bool {
        self.next >= self.total
    }

    /// Send the next datagram at `now`: its number and payload, and when the one after it is
    /// due (`None` after the last), one frame time at `rate` later.
    pub fn send(&mut self, now: Time) -> Option<(u32, u32, Option<Time>)> {
        if self.sent_all() {
            return None;
        }
        let seg = self.next;
        self.next += 1;
        let payload = self.payload(seg);
        let gap = tx_time(wire::frame(payload as u64, 0), self.rate_bps);
        Some((seg, payload, (!self.sent_all()).then_some(now + gap)))
    }
}

/// Every constant-rate flow of a run: its sender, and the datagrams still on their way, so that
/// the simulator knows when the flow is over.
#[derive(Clone, Debug, Default)]
pub struct UdpFlows {
    /// Per workload part (`FlowSpec::service`): its rate, if its flows are constant-rate.
    rate_of_service: Vec<Option<u64>>,
    /// Per flow id; `None` for TCP flows.
    senders: Vec<Option<UdpSender>>,
    in_flight: Vec<u32>,
    arrived: Vec<u64>,
    over: Vec<bool>,
    /// Copies of each datagram that should arrive: 1, or a multicast group's receivers
    /// (`sim/multicast.rs`); empty until a flow has more than one.
    copies: Vec<u32>,
}

/// What a datagram's fate means for its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The flow goes on.
    Running,
    /// Its last datagram is accounted for: every one arrived (`true`) or some were lost.
    Over { complete: bool },
}

impl UdpFlows {
    /// `None` when no workload part is constant-rate (every flow is TCP).
    pub fn new(rate_of_service: Vec<Option<u64>>) -> Option<UdpFlows> {
        rate_of_service.iter().any(Option::is_some).then(|| UdpFlows { rate_of_service, ..UdpFlows::default() })
    }

    /// Register flow `flow` (ids in order) of `service` with `bytes` of payload; whether it is
    /// constant-rate.
    pub fn add(&mut self, flow: u32, service: u32, bytes: u64, mss: u32) -> bool {
        debug_assert_eq!(flow as usize, self.senders.len());
        let sender = self.rate_of_service.get(service as usize).copied().flatten().map(|r| UdpSender::new(bytes, mss, r));
        let udp = sender.is_some();
        self.senders.push(sender);
        self.in_flight.push(0);
        self.arrived.push(0);
        self.over.push(false);
        udp
    }

    /// Whether `flow` is constant-rate.
    #[inline]
    pub fn is_udp(&self, flow: u32) -> bool {
        matches!(self.senders.get(flow as usize), Some(Some(_)))
    }

    /// Flow `flow` sends its next datagram at `now` (see [`UdpSender::send`]).
    pub fn send(&mut self, flow: u32, now: Time) -> Option<(u32, u32, Option<Time>)> {
        let sent = self.senders[flow as usize].as_mut()?.send(now);
        if sent.is_some() {
            self.in_flight[flow as usize] += 1;
        }
        sent
    }

    /// Each datagram of `flow` is to reach `n` receivers (a multicast group's).
    pub fn set_copies(&mut self, flow: u32, n: u32) {
        if self.copies.len() < self.senders.len() {
            self.copies.resize(self.senders.len(), 1);
        }
        self.copies[flow as usize] = n;
    }

    /// A switch made one more copy of a datagram of `flow` (multicast replication): one more
    /// on its way, to arrive or be dropped.
    pub fn replicated(&mut self, flow: u32) {
        self.in_flight[flow as usize] += 1;
    }

    /// A datagram of `flow` reached its receiver.
    pub fn arrived(&mut self, flow: u32) -> Fate {
        self.arrived[flow as usize] += 1;
        self.settle(flow)
    }

    /// A datagram of `flow` was dropped.
    pub fn dropped(&mut self, flow: u32) -> Fate {
        self.settle(flow)
    }

    fn settle(&mut self, flow: u32) -> Fate {
        let f = flow as usize;
        self.in_flight[f] -= 1;
        let s = self.senders[f].as_ref().expect("a constant-rate flow");
        if self.in_flight[f] == 0 && s.sent_all() && !self.over[f] {
            self.over[f] = true;
            let copies = self.copies.get(f).copied().unwrap_or(1);
            return Fate::Over { complete: self.arrived[f] == s.total() as u64 * copies as u64 };
        }
        Fate::Running
    }

    /// Payload bytes of datagram `seg` of `flow`.
    pub fn payload(&self, flow: u32, seg: u32) -> u32 {
        self.senders[flow as usize].as_ref().map_or(0, |s| s.payload(seg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_S;

    /// At 5 Gb/s, a 1,460-byte datagram's 1,538-byte frame takes 1,538 x 8 / 5e9 s = 2,460.8 ns,
    /// rounded up to the picosecond (`tx_time`): datagrams leave 2,460,800 ps apart, and the
    /// last, shorter one (40 bytes: a 104-byte frame) ends the flow.
    #[test]
    fn datagrams_leave_one_frame_time_at_the_rate_apart() {
        let mut s = UdpSender::new(2 * 1460 + 40, 1460, 5_000_000_000);
        assert_eq!(s.total(), 3);
        assert_eq!(s.send(0), Some((0, 1460, Some(2_460_800))));
        assert_eq!(s.send(2_460_800), Some((1, 1460, Some(4_921_600))));
        assert_eq!(s.send(4_921_600), Some((2, 40, None)));
        assert_eq!(s.send(5_000_000), None);
        // Over a second at 1 Gb/s: 1e9 / (1,538 x 8) = 81,274 full frames.
        let mut s = UdpSender::new(u32::MAX as u64, 1460, 1_000_000_000);
        let mut t = 0;
        let mut n = 0;
        while t < PS_PER_S {
            t = s.send(t).unwrap().2.unwrap();
            n += 1;
        }
        assert_eq!(n, 81_274 + 1);
    }

    /// A flow is over when every datagram is accounted for, and complete only if all arrived.
    #[test]
    fn a_flow_is_over_when_its_last_datagram_is_accounted_for() {
        let mut u = UdpFlows::new(vec![None, Some(1_000_000_000)]).unwrap();
        assert!(!u.add(0, 0, 1000, 1460));
        assert!(u.add(1, 1, 3000, 1460));
        assert!(!u.is_udp(0) && u.is_udp(1));
        for _ in 0..3 {
            u.send(1, 0);
        }
        assert_eq!(u.send(1, 0), None);
        assert_eq!(u.arrived(1), Fate::Running);
        assert_eq!(u.dropped(1), Fate::Running);
        assert_eq!(u.arrived(1), Fate::Over { complete: false });
        assert_eq!(u.payload(1, 2), 80);
        assert!(UdpFlows::new(vec![None]).is_none());
    }
}
