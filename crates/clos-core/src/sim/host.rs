//! Hosts: the transport endpoints and the agent that stamps packets on their way out.

use super::shape::{General, Shape};
use super::World;
use crate::event::Event;
use crate::lb::Fabric;
use crate::metrics::trace::{Event as TraceEvent, Marks, NO_LINK};
use crate::packet::{Packet, FLAG_ACK, FLAG_CE, FLAG_ECE, FLAG_ECT, FLAG_RETX};
use crate::transport::receiver::Ack;
use crate::transport::reorder_shim::Segment;
use crate::units::Time;

impl World {
    /// Send whatever the flow's window and its host's egress (`host/`, `egress.rs`) allow, and keep its
    /// retransmission timer running.
    pub(super) fn pump<S: Shape>(&mut self, flow: u32) {
        let nxt = self.senders[flow as usize].nxt;
        let mut sent = false;
        while self.egress_admits(flow) && self.send_segment::<S>(flow) {
            sent = true;
        }
        if self.params.grow_when_limited {
            self.senders[flow as usize].cwnd_validate(sent);
        }
        self.arm_rto_if_outstanding(flow);
        // Linux schedules the tail loss probe anew whenever it sends new data.
        if self.params.tlp && self.senders[flow as usize].nxt != nxt {
            self.arm_probe(flow);
        }
    }

    /// Send the flow's next segment if its window allows one; whether it did.
    pub(super) fn send_segment<S: Shape>(&mut self, flow: u32) -> bool {
        let Some((seg, retx)) = self.senders[flow as usize].next_segment(self.now) else { return false };
        // Traced runs take the general loop (`shape.rs`), so the plain one pays nothing.
        let event = if retx { TraceEvent::Resend } else { TraceEvent::Send };
        self.send_given::<S>(flow, seg, retx, event);
        if retx && self.params.resend_restarts_rto && seg == self.senders[flow as usize].una {
            self.arm_rto(flow);
        }
        true
    }

    /// Send segment `seg` of `flow` (`retx`: a retransmission), traced as `event`.
    fn send_given<S: Shape>(&mut self, flow: u32, seg: u32, retx: bool, event: TraceEvent) {
        let f = flow as usize;
        let spec = &self.flows[f];
        let mut pkt = Packet {
            flow,
            src: spec.src,
            dst: spec.dst,
            seg,
            payload: self.senders[f].payload(seg),
            flags: if self.params.dctcp_g.is_some() { FLAG_ECT } else { 0 } | if retx { FLAG_RETX } else { 0 },
            ts: self.now,
            entropy: self.entropy[f][0],
            ..Packet::default()
        };
        if let (false, Some(t)) = (S::PLAIN, self.trace.as_mut()) {
            let cwr = pkt.has(FLAG_ECT) && !retx && t.cwr(flow, self.senders[f].cwr_end());
            t.record(self.now, flow, event, seg, NO_LINK, Marks { cwr, ..Marks::of(&pkt) });
        }
        let payload = pkt.payload;
        if self.emit::<S>(spec.src, &mut pkt) {
            self.egress_sent(flow, payload);
        }
    }

    pub(super) fn arm_rto_if_outstanding(&mut self, flow: u32) {
        let f = flow as usize;
        if self.senders[f].outstanding() && self.rto[f].deadline.is_none() {
            self.arm_rto(flow);
        }
    }

    pub(super) fn send_ack<S: Shape>(&mut self, flow: u32, ack: Ack) {
        let f = flow as usize;
        let spec = &self.flows[f];
        let mut pkt = Packet {
            flow,
            src: spec.dst,
            dst: spec.src,
            seg: ack.cum,
            flags: FLAG_ACK | if ack.ece { FLAG_ECE } else { 0 },
            ts: ack.echo,
            entropy: self.entropy[f][1],
            sack: ack.sack,
            ..Packet::default()
        };
        if let (false, Some(t)) = (S::PLAIN, self.trace.as_mut()) {
            t.record(self.now, flow, TraceEvent::AckSend, ack.cum, NO_LINK, Marks::of(&pkt));
        }
        self.emit::<S>(spec.dst, &mut pkt);
    }

    /// The host agent's last word (VL2 encapsulation), then the NIC queue; false where the
    /// agent held the packet.
    pub(super) fn emit<S: Shape>(&mut self, host: u32, pkt: &mut Packet) -> bool {
        // VL2 directory (directory.rs): the agent maps the AAs to servers, or holds the packet.
        let host = if S::PLAIN || self.directory.is_none() {
            host
        } else {
            match self.agent_resolve(pkt) {
                Some(server) => server,
                None => return false,
            }
        };
        let f = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now: self.now };
        self.fwd.at_source_known(S::KNOWN, &f, pkt);
        let h = self.pool.alloc(*pkt);
        self.counters.sent += 1;
        let port = self.topo.port_start[host as usize];
        if !S::PLAIN && self.jitter.is_some() {
            self.host_software_wait(host, port);
        }
        self.transmit::<S>(port, h);
        true
    }

    pub(super) fn host_receive<S: Shape>(&mut self, h: u32) {
        if !S::PLAIN && self.directory.is_some() && !self.directory_at_host(h) {
            return; // VL2 directory (directory.rs): the AA moved away while the packet was on its way
        }
        let pkt = *self.pool.get(h);
        self.pool.free(h);
        self.counters.delivered += 1;
        let f = pkt.flow as usize;
        if let (false, Some(t)) = (S::PLAIN, self.trace.as_mut()) {
            let event = if pkt.has(FLAG_ACK) { TraceEvent::Ack } else { TraceEvent::Arrive };
            t.record(self.now, pkt.flow, event, pkt.seg, NO_LINK, Marks::of(&pkt));
        }
        if !S::PLAIN && self.udp.is_some() && self.udp_receive(&pkt) {
            return; // a constant-rate flow's datagram (`udp.rs`): counted, never acknowledged
        }
        if pkt.has(FLAG_ACK) {
            let rack_before = if self.params.rack { self.senders[f].rack_at } else { 0 };
            let advanced = self.senders[f].on_ack(self.now, pkt.seg, &pkt.sack, pkt.has(FLAG_ECE), pkt.ts, &self.params);
            if self.params.rack && self.senders[f].rack_at != rack_before && self.senders[f].rack_at != 0 {
                self.queue.schedule(self.senders[f].rack_at, Event::Rack { flow: pkt.flow });
            }
            if !self.senders[f].outstanding() {
                self.rto[f].deadline = None;
            } else if advanced {
                self.arm_rto(pkt.flow); // RFC 6298 (5.3): restart on new data acknowledged
            }
            self.pump::<S>(pkt.flow);
            return;
        }
        let seg = Segment { seg: pkt.seg, ce: pkt.has(FLAG_CE), ts: pkt.ts, retx: pkt.has(FLAG_RETX) };
        if S::PLAIN {
            // No shim (`shape.rs`).
            self.receive_data::<S>(pkt.flow, seg);
            return;
        }
        match self.shims.as_mut() {
            None => self.receive_data::<S>(pkt.flow, seg),
            Some(shims) => {
                let mut out = std::mem::take(&mut self.shim_out);
                if shims[f].on_data(seg, &mut out) {
                    let gen = shims[f].gen;
                    self.queue.schedule(self.now + self.shim_timeout, Event::ShimFlush { flow: pkt.flow, gen });
                }
                self.pass_up(pkt.flow, out);
            }
        }
    }

    pub(super) fn on_shim_timeout(&mut self, flow: u32, gen: u32) {
        let mut out = std::mem::take(&mut self.shim_out);
        if let Some(shims) = self.shims.as_mut() {
            shims[flow as usize].on_timeout(gen, &mut out);
        }
        self.pass_up(flow, out);
    }

    /// Hand segments the shim released to TCP, then give the (emptied) buffer back.
    fn pass_up(&mut self, flow: u32, mut out: Vec<Segment>) {
        for s in out.drain(..) {
            self.receive_data::<General>(flow, s);
        }
        self.shim_out = out;
    }

    /// TCP receives a data segment.
    fn receive_data<S: Shape>(&mut self, flow: u32, s: Segment) {
        let f = flow as usize;
        let before = self.receivers[f].nxt;
        let short = (self.senders[f].payload(s.seg) as u64) < self.senders[f].mss();
        let r = self.receivers[f].on_data(self.now, s, short, &self.params);
        if r.delivered > 0 {
            let bytes: u64 = (before..before + r.delivered).map(|s| self.senders[f].payload(s) as u64).sum();
            self.count_delivered(f, bytes);
            if self.receivers[f].nxt >= self.senders[f].total && self.finished[f].is_none() {
                self.finished[f] = Some(self.now);
                self.flows_done += 1;
                self.flow_finished(flow);
                self.hold_if_ended();
            }
        }
        for ack in r.acks.into_iter().flatten() {
            self.send_ack::<S>(flow, ack);
        }
        if r.arm_delayed_ack {
            let gen = self.receivers[f].ack_gen;
            self.queue.schedule(self.now + self.params.delayed_ack_timeout, Event::DelayedAck { flow, gen });
        }
    }

    fn arm_rto(&mut self, flow: u32) {
        let f = flow as usize;
        let deadline = self.params.timer_at(self.now, self.senders[f].rto(&self.params));
        self.rto[f].deadline = Some(deadline);
        if self.params.tlp {
            self.arm_probe(flow);
        } else {
            self.wake_timer_by(flow, deadline);
        }
    }

    /// The flow's retransmission timer also fires for its tail loss probe (`transport.tlp`), as
    /// Linux's one transmit timer does: arm the probe before the RTO deadline.
    #[cold]
    #[inline(never)]
    fn arm_probe(&mut self, flow: u32) {
        let f = flow as usize;
        let Some(rto_at) = self.rto[f].deadline else { return };
        let probe_at = self.senders[f].arm_probe(self.now, rto_at, &self.params);
        self.wake_timer_by(flow, if probe_at != 0 { probe_at } else { rto_at });
    }

    /// Make sure the flow's timer event fires no later than `at`.
    fn wake_timer_by(&mut self, flow: u32, at: Time) {
        let t = &mut self.rto[flow as usize];
        if t.pending.is_none_or(|p| p > at) {
            t.gen = t.gen.wrapping_add(1);
            t.pending = Some(at);
            self.queue.schedule(at, Event::Rto { flow, gen: t.gen });
        }
    }

    /// The tail loss probe is due: send it, and restart the RTO from now (`tcp_send_loss_probe`).
    #[cold]
    #[inline(never)]
    fn send_probe(&mut self, flow: u32) {
        let f = flow as usize;
        self.senders[f].probe_at = 0;
        if !self.egress_admits(flow) {
            return; // the flow's data still waits in its host: its tail has not left
        }
        if let Some((seg, retx)) = self.senders[f].probe(self.now) {
            self.send_given::<General>(flow, seg, retx, TraceEvent::Probe);
            self.arm_rto(flow);
        }
    }

    /// The flow's handshake (`transport.handshake_rtt`): a SYN and its SYN-ACK over the empty
    /// shortest paths, each a header-only frame serialised and propagated at every hop.
    #[cold]
    #[inline(never)]
    pub(super) fn handshake(&mut self, flow: u32) {
        use crate::metrics::slowdown::shortest_path;
        let (src, dst) = (self.flows[flow as usize].src, self.flows[flow as usize].dst);
        let syn = crate::packet::wire::frame(0, 0);
        let way = |a, b| shortest_path(&self.topo, &self.routes, a, b).iter().map(|h| crate::units::tx_time(syn, h.rate_bps) + h.delay).sum::<Time>();
        let rtt = way(src, dst) + way(dst, src);
        self.senders[flow as usize].handshake(rtt, &self.params);
    }

    /// RACK's reordering timer: the hole is lost, and what recovery allows is sent at once.
    pub(super) fn on_rack_event(&mut self, flow: u32) {
        let f = flow as usize;
        if self.senders[f].rack_at == self.now && self.senders[f].on_rack_timer(self.now, &self.params) {
            self.pump::<General>(flow);
        }
    }

    pub(super) fn on_rto_event(&mut self, flow: u32, gen: u32) {
        let f = flow as usize;
        let t = &mut self.rto[f];
        if gen != t.gen {
            return;
        }
        t.pending = None;
        let probe_at = self.senders[f].probe_at;
        if probe_at != 0 && probe_at <= self.now {
            self.send_probe(flow);
        }
        let t = &mut self.rto[f];
        match t.deadline {
            None => {}
            Some(d) if d > self.now => {
                let at = match self.senders[f].probe_at {
                    0 => d,
                    probe_at => probe_at.min(d),
                };
                self.wake_timer_by(flow, at);
            }
            Some(_) => {
                if let Some(tr) = self.trace.as_mut() {
                    tr.record(self.now, flow, TraceEvent::Timeout, self.senders[f].una, NO_LINK, Marks::default());
                }
                self.senders[f].on_timeout(self.now);
                self.rto[f].deadline = None;
                self.pump::<General>(flow); // re-arms the timer with the backed-off RTO
            }
        }
    }

    /// `bytes` of flow `f`'s payload reached its receiver now: its total and its part's goodput
    /// bin.
    #[inline]
    pub(super) fn count_delivered(&mut self, f: usize, bytes: u64) {
        self.delivered_bytes[f] += bytes;
        let bin = (self.now / self.bin) as usize;
        let series = &mut self.goodput_bins[self.flows[f].service as usize];
        if series.len() <= bin {
            series.resize(bin + 1, 0);
        }
        series[bin] += bytes;
    }
}
