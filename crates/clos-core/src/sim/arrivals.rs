//! Flows that join a running simulation or start on another's arrival: the hook closed-loop
//! workloads use to start a new flow the moment one ends (VL2 §5.2), and the one that starts an
//! incast response when its simulated request has arrived. Other open-loop flows are generated
//! before the run and never come through here.

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
        if let Some(u) = self.udp.as_mut() {
            u.add(id as u32, f.service, f.bytes, self.params.flow_mss(id));
        }
        self.flows.push(f);
        self.queue.schedule(start, Event::FlowStart { flow: id as u32 });
        id as u32
    }

    /// `flow` starts: on a persistent connection (incast's `connections`) it resumes the
    /// connection's state from the previous message if that has arrived whole, and otherwise
    /// waits for it (false). `None`: `flow` opens a fresh connection.
    pub(super) fn resume_connection(&mut self, flow: u32) -> Option<bool> {
        let &prev = (!self.continues.is_empty()).then(|| self.continues.get(&flow)).flatten()?;
        let Some(end) = self.finished[prev as usize] else {
            self.waiting.insert(prev, flow);
            return Some(false);
        };
        // The connection's messages are numbered in order, so its previous one comes first.
        let (before, from) = self.senders.split_at_mut(flow as usize);
        from[0].resume(&before[prev as usize], self.now - end, &self.params);
        Some(true)
    }

    /// Called once when `flow` delivers its last byte.
    pub(super) fn flow_finished(&mut self, flow: u32) {
        if self.service.is_some() && self.service_flow_done(flow) {
            return; // the storage service's request or response (`service.rs`)
        }
        if let Some(next) = (!self.waiting.is_empty()).then(|| self.waiting.remove(&flow)).flatten() {
            // The message that waited for this one on their connection goes now.
            self.queue.schedule(self.now, Event::FlowStart { flow: next });
        }
        if let Some(&answer) = (!self.answers.is_empty()).then(|| self.answers.get(&flow)).flatten() {
            // A request has arrived: its response starts now (`workload/incast.rs`).
            self.flows[answer as usize].start = self.now;
            self.queue.schedule(self.now, Event::FlowStart { flow: answer });
        }
        if self.closed_loop.is_empty() {
            return;
        }
        if let Some(next) = self.closed_loop.replace(&self.flows[flow as usize], self.now) {
            self.add_flow(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::sim::World;

    fn incast(request: &str) -> World {
        run(&format!(
            r#"{{"seed": 3, "stop": "all_flows_done",
                "topology": {{"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 5, "host_rate": "10Gbps", "link_delay": "1us"}},
                "workload": {{"kind": "incast", "requesters": 1, "fan_in": 4, "bytes": "14600B"{request}}}}}"#
        ))
    }

    fn run(json: &str) -> World {
        let s = Scenario::from_json(json).unwrap();
        let mut w = World::new(&s).unwrap();
        w.run();
        w.check_conservation().unwrap();
        w
    }

    /// By hand: one requester asks 4 hosts for 10 segments each over one 10 Gb/s switch with 1 us
    /// links. A 100 B request is a 178 B frame (40 B of IP and TCP, 38 B of Ethernet), 142.4 ns
    /// at 10 Gb/s. The four requests leave the requester back to back, so the k-th arrives at
    /// 142.4 (its NIC) + 1,000 (link) + 142.4 (switch port) + 1,000 (link) + k x 142.4 ns, and
    /// its response starts then; without `request` every response starts at 0.
    #[test]
    fn a_response_starts_when_its_request_arrives() {
        let plain = incast("");
        assert_eq!(plain.flows.len(), 4);
        assert!(plain.flows.iter().all(|f| f.start == 0));
        let w = incast(r#", "request": "100B""#);
        assert_eq!(w.flows.len(), 8);
        assert_eq!(w.services, ["incast", "incast requests"]);
        let requests: Vec<usize> = (0..8).filter(|&i| w.flows[i].service == 1).collect();
        let mut starts = Vec::new();
        for &q in &requests {
            let r = &w.flows[q];
            assert_eq!(r.bytes, 100);
            let answer = (0..8).find(|&i| w.flows[i].service == 0 && w.flows[i].src == r.dst && w.flows[i].dst == r.src).unwrap();
            assert_eq!(w.flows[answer].start, w.finished[q].unwrap(), "response {answer} starts as request {q} arrives");
            starts.push(w.flows[answer].start);
        }
        starts.sort();
        let first = 142_400 + 1_000_000 + 142_400 + 1_000_000;
        assert_eq!(starts, (0..4).map(|k| first + k * 142_400).collect::<Vec<u64>>());
        assert!(w.finished.iter().all(|f| f.is_some()));
    }

    /// A sequential shuffle (DRILL §4: "each server sends flows to all other servers in a random
    /// order") among 3 hosts on one switch (10 Gb/s, 1 us links), 100 B a flow: one 178 B frame,
    /// 142.4 ns a hop. Each host's second flow starts the instant its first has arrived, so no
    /// host ever has two flows open. A flow alone on its path arrives 142.4 (NIC) + 1,000 +
    /// 142.4 (switch port) + 1,000 = 2,284.8 ns after it starts; one that shares its receiver's
    /// port with another host's frame, arriving at the same instant, waits one more frame.
    #[test]
    fn a_sequential_shuffle_sends_one_flow_at_a_time() {
        let w = run(r#"{"seed": 1, "stop": "all_flows_done",
                "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 3, "host_rate": "10Gbps", "link_delay": "1us"},
                "workload": {"kind": "shuffle", "bytes": "100B", "sequential": true}}"#);
        assert_eq!(w.flows.len(), 6);
        assert!(w.finished.iter().all(|f| f.is_some()));
        for src in 0..3u32 {
            let mine: Vec<usize> = (0..6).filter(|&i| w.flows[i].src == src).collect();
            assert_eq!(mine.len(), 2);
            let (a, b) = (mine[0], mine[1]);
            let mut dsts = [w.flows[a].dst, w.flows[b].dst];
            dsts.sort();
            assert_eq!(dsts.to_vec(), (0..3).filter(|&d| d != src).collect::<Vec<u32>>(), "host {src} sends once to each other host");
            assert_eq!(w.flows[a].start, 0);
            assert_eq!(w.flows[b].start, w.finished[a].unwrap(), "host {src}'s second flow starts as its first arrives");
        }
        // Seed 1's orders: h0 to h1 then h2, h1 to h0 then h2, h2 to h1 then h0. At 0, h0's and
        // h2's frames reach h1's switch port together: one arrives at 2,284.8 ns, the other a
        // frame later (2,427.2); h1's reaches h0 alone (2,284.8). At 2,284.8 h0 and h1 each send
        // an ACK (84 B, 67.2 ns) and then their second flow's frame, both to h2: they reach h2's
        // port together, one a frame behind the other (2,284.8 + 67.2 and + 67.2 + 142.4). h2's
        // second flow, to h0, starts at 2,427.2 with no ACK to send first: alone again.
        let got: Vec<(u32, u32, u64, u64)> =
            (0..6).map(|i| (w.flows[i].src, w.flows[i].dst, w.flows[i].start, w.finished[i].unwrap() - w.flows[i].start)).collect();
        let want = vec![
            (0, 1, 0, 2_284_800),
            (0, 2, 2_284_800, 2_284_800 + 67_200),
            (1, 0, 0, 2_284_800),
            (1, 2, 2_284_800, 2_284_800 + 67_200 + 142_400),
            (2, 1, 0, 2_284_800 + 142_400),
            (2, 0, 2_427_200, 2_284_800),
        ];
        assert_eq!(got, want);
        // Without `sequential` all six start at once.
        let all = run(r#"{"seed": 1, "stop": "all_flows_done",
                "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 3, "host_rate": "10Gbps", "link_delay": "1us"},
                "workload": {"kind": "shuffle", "bytes": "100B"}}"#);
        assert!(all.flows.iter().all(|f| f.start == 0));
    }

    /// Rounds of one 100-segment response between two hosts (10 Gb/s, 100 us links, IW10, an
    /// ACK per segment) on fresh or persistent connections, `interval` apart.
    fn rounds(connections: &str, interval: &str) -> World {
        run(&format!(
            r#"{{"seed": 1, "stop": "all_flows_done",
                "topology": {{"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2, "host_rate": "10Gbps", "link_delay": "100us"}},
                "workload": {{"kind": "incast", "requesters": 1, "fan_in": 1, "bytes": "146000B", "request": "100B",
                              "interval": "{interval}", "stop": "5.5ms", "connections": "{connections}"}}}}"#
        ))
    }

    /// Each response with the one before it on the same connection (same source and destination).
    fn on_one_connection(w: &World) -> Vec<(usize, usize)> {
        let responses: Vec<usize> = (0..w.flows.len()).filter(|&i| w.flows[i].service == 0).collect();
        let mut pairs = Vec::new();
        for (k, &i) in responses.iter().enumerate() {
            let same = |&&j: &&usize| w.flows[j].src == w.flows[i].src && w.flows[j].dst == w.flows[i].dst;
            if let Some(&prev) = responses[..k].iter().rev().find(same) {
                pairs.push((prev, i));
            }
        }
        pairs
    }

    /// By hand: a response on a persistent connection 5 ms after the last one (within the
    /// 10 ms RTO, so no restart) starts with the window its connection grew to (110 segments)
    /// and goes in one flight: the responder's 84 B ACK of the request (67.2 ns), 100 frames of
    /// 1,538 B at 10 Gb/s (1,230.4 ns each) and the last one again at the switch, and 200 us of
    /// links, 324,337.6 ns; on a fresh connection it takes IW10's slow start, four flights (10,
    /// 20, 40 and 30 segments) so at least three 400 us round trips and the links once more,
    /// as the first. With rounds 1 ms apart a response waits for its connection's previous one,
    /// so it ends at least one flight after that one.
    #[test]
    fn a_persistent_connection_keeps_its_window_and_serves_one_response_at_a_time() {
        let one_flight = 67_200 + 101 * 1_230_400 + 200_000_000;
        let fresh = rounds("fresh", "5ms");
        let first = fresh.finished[0].unwrap() - fresh.flows[0].start;
        assert!(first > 3 * 400_000_000 + 200_000_000, "slow start takes four flights (10, 20, 40, 30): {first}");
        assert!((0..fresh.flows.len()).filter(|&i| fresh.flows[i].service == 0).all(|i| fresh.finished[i].unwrap() - fresh.flows[i].start == first));
        let kept = rounds("persistent", "5ms");
        let pairs = on_one_connection(&kept);
        assert!(!pairs.is_empty());
        for (prev, next) in pairs {
            assert_eq!(kept.finished[prev].unwrap() - kept.flows[prev].start, if prev == 0 { first } else { one_flight });
            assert_eq!(kept.finished[next].unwrap() - kept.flows[next].start, one_flight, "response {next} after {prev}");
        }
        let busy = rounds("persistent", "1ms");
        let pairs = on_one_connection(&busy);
        assert!(pairs.iter().any(|&(prev, next)| busy.flows[next].start < busy.finished[prev].unwrap()), "some response found its connection busy");
        for (prev, next) in pairs {
            // Its request's ACK left long before, so the flight is the frames and the links alone.
            assert!(busy.finished[next].unwrap() >= busy.finished[prev].unwrap() + one_flight - 67_200, "response {next} waited for {prev}");
        }
    }
}
