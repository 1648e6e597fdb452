//! Flowlets: bursts of a flow separated by an idle gap longer than the path-delay difference,
//! which can take different paths without reordering (FLARE; CONGA §3.4; LetFlow).
//!
//! [`FlowletTable`] is the hardware structure: per switch, a hashed table of `(port, last seen)`
//! entries indexed by the flow's 5-tuple hash. Colliding flows share an entry, as in hardware.
//! [`LetFlow`] picks a uniformly random next hop for every new flowlet and nothing else: the
//! flowlet sizes adapt to congestion by themselves (flows on congested paths slow down, leave
//! larger gaps and are moved more often).

use super::{params::RoutingSpec, pick_index, Fabric};
use crate::packet::Packet;
use crate::rng::{next_u64, Stream, Streams};
use crate::topology::Topology;
use crate::units::Time;

const NONE: u32 = u32::MAX;

pub struct FlowletTable {
    size: usize,
    gap: Time,
    /// Per switch (index = node - n_hosts) and slot: the current flowlet's port, or NONE.
    port: Vec<u32>,
    last: Vec<Time>,
    n_hosts: usize,
    pub flowlets: u64,
}

impl FlowletTable {
    pub fn new(spec: &RoutingSpec, topo: &Topology) -> Self {
        let size = spec.flowlet_table.unwrap_or(4096) as usize;
        let n = topo.n_switches() * size;
        FlowletTable { size, gap: spec.flowlet_gap.map_or(500_000_000, |d| d.0), port: vec![NONE; n], last: vec![0; n], n_hosts: topo.n_hosts, flowlets: 0 }
    }

    /// The port of the packet's current flowlet at `switch`, or `None` if this packet starts a
    /// new flowlet (gap exceeded, or the remembered port is not a next hop for this packet, as
    /// happens when colliding flows go to different destinations). Marks the entry as seen.
    #[inline]
    pub fn current(&mut self, switch: u32, entropy: u64, group: &[u32], now: Time) -> (usize, Option<u32>) {
        let slot = (switch as usize - self.n_hosts) * self.size + pick_index(self.size, entropy);
        let port = self.port[slot];
        let fresh = port != NONE && now.saturating_sub(self.last[slot]) <= self.gap && group.contains(&port);
        self.last[slot] = now;
        (slot, fresh.then_some(port))
    }

    #[inline]
    pub fn set(&mut self, slot: usize, port: u32) {
        self.port[slot] = port;
        self.flowlets += 1;
    }
}

pub struct LetFlow {
    table: FlowletTable,
    pub(crate) rng: Stream,
}

impl LetFlow {
    pub fn new(spec: &RoutingSpec, topo: &Topology, streams: &mut Streams) -> Self {
        LetFlow { table: FlowletTable::new(spec, topo), rng: streams.stream() }
    }

    pub fn flowlets(&self) -> u64 {
        self.table.flowlets
    }

    /// Count another partition's flowlets too (`sim/merge.rs`).
    pub fn add_flowlets(&mut self, n: u64) {
        self.table.flowlets += n;
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let group = f.routes.toward_tor(switch, f.dst_tor_index(pkt));
        if group.len() == 1 {
            return group[0];
        }
        match self.table.current(switch, pkt.entropy, group, f.now) {
            (_, Some(port)) => port,
            (slot, None) => {
                let port = group[pick_index(group.len(), next_u64(&mut self.rng))];
                self.table.set(slot, port);
                port
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::lb::Scheme;
    use crate::routing::Routes;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::{Duration, Rate, PS_PER_US};

    /// LetFlow moves a flow only between flowlets: packets closer than the gap keep the port;
    /// after an idle gap the choice is redrawn (and over many gaps, all ports get used).
    #[test]
    fn letflow_moves_a_flow_only_between_flowlets() {
        let t = build(&LeafSpine { leaves: 2, spines: 4, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        let spec = RoutingSpec { scheme: Scheme::Letflow, flowlet_gap: Some(Duration(100 * PS_PER_US)), ..Default::default() };
        let mut lf = LetFlow::new(&spec, &t, &mut Streams::new(2));
        let leaf = t.host_tor[0];
        let mut pkt = Packet { src: 0, dst: 1, entropy: 12345, ..Default::default() };
        let mut used = std::collections::BTreeSet::new();
        let mut now = 0;
        for _burst in 0..40 {
            let first = lf.next_port(&Fabric { topo: &t, routes: &routes, ports: &ports, now }, leaf, &mut pkt);
            used.insert(first);
            for _ in 0..20 {
                now += 10 * PS_PER_US; // 10 us apart: well inside the 100 us gap
                let p = lf.next_port(&Fabric { topo: &t, routes: &routes, ports: &ports, now }, leaf, &mut pkt);
                assert_eq!(p, first, "moved inside a flowlet");
            }
            now += 150 * PS_PER_US; // idle longer than the gap: a new flowlet
        }
        assert_eq!(used.len(), 4, "new flowlets should be spread over all spines: {used:?}");
    }
}
