//! Flows that join a running simulation: the hook closed-loop workloads use to start a new flow
//! the moment one ends (VL2 §5.2). Open-loop workloads are generated before the run and never
//! come through here.

use super::{flow_entropy, RtoTimer, World};
use crate::event::Event;
use crate::transport::receiver::Receiver;
use crate::transport::tcp::Sender;
use crate::workload::FlowSpec;

impl World {
    /// Add a flow that starts at `f.start` (not before now); returns its id.
    pub fn add_flow(&mut self, mut f: FlowSpec) -> u32 {
        let id = self.flows.len();
        f.bytes = super::whole_segments(&self.whole_segments, &f, self.params.flow_mss(id));
        let start = f.start.max(self.now);
        self.entropy.push(flow_entropy(id, &f));
        self.senders.push(Sender::new(f.bytes, self.params.flow_mss(id), &self.params));
        self.receivers.push(Receiver::default());
        self.rto.push(RtoTimer { deadline: None, gen: 0, pending: None });
        self.finished.push(None);
        self.delivered_bytes.push(0);
        self.flow_drops.push(0);
        if let Some(shims) = self.shims.as_mut() {
            shims.push(Default::default());
        }
        if let Some(e) = self.egress.as_mut() {
            e.add_flow();
        }
        self.flows.push(f);
        self.queue.schedule(start, Event::FlowStart { flow: id as u32 });
        id as u32
    }

    /// Called once when `flow` delivers its last byte.
    pub(super) fn flow_finished(&mut self, flow: u32) {
        if self.closed_loop.is_empty() {
            return;
        }
        if let Some(next) = self.closed_loop.replace(&self.flows[flow as usize], self.now) {
            self.add_flow(next);
        }
    }
}
