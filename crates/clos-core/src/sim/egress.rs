//! The simulator's side of a host's egress (`host/`): it asks the host's discipline whether a
//! flow's next data packet may enter the NIC queue, schedules the wake-ups the discipline asks
//! for (`HostDrain`, `TsqWake`), and sends when they come.

use super::World;
use crate::event::Event;
use crate::host::tsq::Admit;
use crate::host::Egress;
use crate::packet::wire;

impl World {
    /// Whether `flow`'s next data packet may go into its host's NIC queue now. If not, the
    /// flow waits (in the host's round robin, or for its TSQ wake-up) and is pumped again then.
    #[inline]
    pub(super) fn egress_admits(&mut self, flow: u32) -> bool {
        let Some(e) = self.egress.as_deref_mut() else { return true };
        let f = flow as usize;
        let host = self.flows[f].src;
        let port = self.topo.port_start[host as usize];
        let frame = wire::frame(self.senders[f].mss(), 0);
        match e {
            Egress::Fq(fq) => {
                let room = fq.room(&self.ports, port, frame, self.now);
                match fq.admits(flow, host, room, self.now) {
                    Ok(()) => true,
                    Err(due) => {
                        if let Some(at) = due {
                            self.queue.schedule(at, Event::HostDrain { host });
                        }
                        false
                    }
                }
            }
            Egress::Tsq(t) => {
                let wake = match t.admits(flow, &self.senders[f], frame, &self.ports, port, self.now) {
                    Admit::Send => return true,
                    Admit::Wait(wake) => wake,
                    Admit::Congested(wake) => {
                        self.senders[f].local_congestion();
                        wake
                    }
                };
                if let Some(at) = wake {
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
        if let Some(Egress::Tsq(t)) = self.egress.as_deref_mut() {
            let port = self.topo.port_start[self.flows[flow as usize].src as usize];
            t.sent(flow, self.ports.busy_until(port), wire::frame(payload as u64, 0));
        }
    }

    /// `fq`'s round robin: the NIC queue of `host` has room again; the flows waiting there send
    /// a packet each in turn while it has.
    pub(super) fn on_host_drain(&mut self, host: u32) {
        let port = self.topo.port_start[host as usize];
        loop {
            let Some(Egress::Fq(fq)) = self.egress.as_deref_mut() else { return };
            let Some(flow) = fq.next(host) else { return };
            let frame = wire::frame(self.senders[flow as usize].mss(), 0);
            if let Err(at) = fq.room(&self.ports, port, frame, self.now) {
                // Not before the next picosecond: where the backlog's rounding (at rates with no
                // whole number of picoseconds per byte) leaves a byte too many, no loop in place.
                self.queue.schedule(at.max(self.now + 1), Event::HostDrain { host });
                return;
            }
            fq.take_turn(host);
            // One packet; a flow with more to send goes to the back of the ring.
            if self.send_segment::<super::shape::General>(flow) {
                let Some(Egress::Fq(fq)) = self.egress.as_deref_mut() else { unreachable!() };
                fq.requeue(host, flow);
            }
            self.arm_rto_if_outstanding(flow);
        }
    }

    /// TSQ: the oldest packet `flow` had in the NIC queue has left.
    pub(super) fn on_tsq_wake(&mut self, flow: u32) {
        if let Some(Egress::Tsq(t)) = self.egress.as_deref_mut() {
            t.woke(flow);
        }
        self.pump::<super::shape::General>(flow);
    }
}
