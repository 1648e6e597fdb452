//! The simulator's side of constant-rate flows (`transport/udp.rs`): a flow of a workload with
//! `transport = "udp"` sends a datagram on each `UdpSend` event instead of following a TCP
//! window, its receiver counts what arrives and sends nothing back, and a datagram dropped
//! anywhere is only counted. Runs without such flows never come here (`World::udp` is `None`
//! and the plain loop stays as it was).

use super::shape::General;
use super::World;
use crate::event::Event;
use crate::packet::Packet;
use crate::transport::udp::Fate;

impl World {
    /// Flow `flow` starts: if it is constant-rate, its first datagram leaves now (true).
    pub(super) fn start_udp(&mut self, flow: u32) -> bool {
        if !self.udp.as_ref().is_some_and(|u| u.is_udp(flow)) {
            return false;
        }
        self.on_udp_send(flow);
        true
    }

    /// Flow `flow`'s next datagram is due: send it and schedule the one after.
    pub(super) fn on_udp_send(&mut self, flow: u32) {
        let Some((seg, payload, next)) = self.udp.as_mut().and_then(|u| u.send(flow, self.now)) else { return };
        let (src, dst) = (self.flows[flow as usize].src, self.flows[flow as usize].dst);
        let mut pkt = Packet { flow, src, dst, seg, payload, ts: self.now, entropy: self.entropy[flow as usize][0], ..Packet::default() };
        if let Some(g) = self.mcast.as_ref().and_then(|m| m.group_of(flow)) {
            self.mc_emit(g, pkt); // to a group (`multicast.rs`)
            if let Some(at) = next {
                self.queue.schedule(at, Event::UdpSend { flow });
            }
            return;
        }
        // Straight to the NIC, as an ACK goes: the rate is at most the host's link rate
        // (`workload::udp_rate`), so its queue stays short. A datagram the VL2 agent holds for
        // a lookup is in flight there.
        self.emit::<General>(src, &mut pkt);
        if let Some(at) = next {
            self.queue.schedule(at, Event::UdpSend { flow });
        }
    }

    /// A data packet reached its receiver: if its flow is constant-rate, count it (true).
    pub(super) fn udp_receive(&mut self, pkt: &Packet) -> bool {
        if !self.udp.as_ref().is_some_and(|u| u.is_udp(pkt.flow)) {
            return false;
        }
        self.count_delivered(pkt.flow as usize, pkt.payload as u64);
        let fate = self.udp.as_mut().expect("checked above").arrived(pkt.flow);
        self.udp_settled(pkt.flow, fate);
        true
    }

    /// A packet of `flow` was dropped; if the flow is constant-rate, that may end it.
    pub(super) fn udp_dropped(&mut self, flow: u32) {
        if let Some(u) = self.udp.as_mut().filter(|u| u.is_udp(flow)) {
            let fate = u.dropped(flow);
            self.udp_settled(flow, fate);
        }
    }

    /// A constant-rate flow is over once every datagram is accounted for; it finished (has an
    /// FCT) only if all of them arrived, but it no longer holds an `all_flows_done` run open.
    fn udp_settled(&mut self, flow: u32, fate: Fate) {
        let Fate::Over { complete } = fate else { return };
        if complete {
            self.finished[flow as usize] = Some(self.now);
        }
        self.flows_done += 1;
        self.flow_finished(flow);
        self.hold_if_ended();
    }
}
