//! DRILL(d, m) (seed 003, §3.2): micro load balancing inside each switch.
//!
//! "Upon each packet arrival, the packet's forwarding engine randomly chooses d out of N
//! possible output ports, finds the one with the current minimum queue occupancy between these
//! d samples and m least loaded samples from previous time slots, and routes its packet to that
//! port. Finally, the engine updates its m memory units with the identities of the least loaded
//! output queues among the samples." (§3.2.2)
//!
//! - N is the packet's equal-cost next-hop group; memory is kept per (engine, group), so a
//!   remembered port is always a valid next hop for the packet's destination.
//! - A switch has F engines deciding independently, each with its own memory (§3.2.1). Arrivals
//!   are split among them by ingress port, contiguous port ranges per engine as line cards are.
//! - The queue length read is `Ports::visible_backlog`: packets just entering a queue are not
//!   counted yet (§3.2.1), which is what lets many engines pick the same port at once (the
//!   synchronization effect of §3.2.3).
//! - `drill-flow` is the paper's per-flow strawman (§4): the first packet of a flow at a switch
//!   chooses by DRILL, later packets follow it. Pins are never evicted (it is a strawman).

use super::{params::RoutingSpec, Fabric, PreHashedMap};
use crate::packet::Packet;
use crate::rng::{below, mix64, Stream, Streams};
use crate::routing::Routes;
use crate::topology::Topology;

const EMPTY: u32 = u32::MAX;

pub struct Drill {
    d: u32,
    m: u32,
    engines: u32,
    /// `memory[(group * engines + engine) * m + j]`: a port id or EMPTY.
    memory: Vec<u32>,
    /// For port p = (a -> b): the position of the reverse link (b -> a) among b's ports.
    ingress_index: Vec<u32>,
    scratch: Vec<(u64, u32)>,
    sample: Vec<u32>,
    pub(crate) rng: Stream,
    /// `drill-flow`: (switch, flow) -> port.
    pinned: Option<PreHashedMap<u32>>,
    /// Whether routing splits next hops into symmetric components (`routing.decompose`).
    decompose: bool,
    /// How well decisions read the queues (`stats`), measured on every 16th decision.
    pub audit: Audit,
}

/// What every 16th decision found when the true backlogs were read beside the visible ones:
/// how often the chosen port was the least loaded of its whole group, and how often it read
/// empty while it held packets (DRILL §3.2.1's entering packets, `routing.entering`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Audit {
    pub decisions: u64,
    pub audited: u64,
    pub least_loaded: u64,
    pub read_empty_while_busy: u64,
}

impl Drill {
    pub fn new(spec: &RoutingSpec, topo: &Topology, routes: &Routes, streams: &mut Streams) -> Self {
        let (d, m, engines) = (spec.d.unwrap_or(2), spec.m.unwrap_or(1), spec.engines.unwrap_or(1));
        let mut ingress_index = vec![0; topo.ports.len()];
        for (p, port) in topo.ports.iter().enumerate() {
            // Parallel links: the k-th link a->b pairs with the k-th link b->a.
            let nth = topo.ports_of(port.from).take_while(|&q| q as usize != p).filter(|&q| topo.ports[q as usize].to == port.to).count();
            let rev = topo.ports_of(port.to).filter(|&q| topo.ports[q as usize].to == port.from).nth(nth);
            ingress_index[p] = rev.map_or(0, |q| q - topo.port_start[port.to as usize]);
        }
        Drill {
            d,
            m,
            engines,
            memory: vec![EMPTY; routes.distinct_groups() * (engines * m) as usize],
            ingress_index,
            scratch: Vec::with_capacity(128),
            sample: Vec::with_capacity(128),
            rng: streams.stream(),
            pinned: (spec.scheme == super::Scheme::DrillFlow).then(PreHashedMap::default),
            decompose: spec.decompose != Some(false),
            audit: Audit::default(),
        }
    }

    /// The engine that handles a packet arriving over port `via` (line-card style split).
    #[inline]
    fn engine(&self, topo: &Topology, switch: u32, via: u32) -> u32 {
        if self.engines == 1 {
            return 0;
        }
        let degree = topo.port_start[switch as usize + 1] - topo.port_start[switch as usize];
        (self.ingress_index[via as usize] as u64 * self.engines as u64 / degree as u64) as u32
    }

    /// Routing interned new groups: give them (empty) memory.
    pub fn on_routes_changed(&mut self, routes: &Routes) {
        self.memory.resize(routes.distinct_groups() * (self.engines * self.m) as usize, EMPTY);
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let (mut g, mut group) = f.group_for(switch, pkt);
        if group.len() == 1 {
            return group[0];
        }
        let key = mix64(pkt.entropy ^ (switch as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        if self.decompose {
            // §3.4.2: hash the flow to a symmetric component by weight, then DRILL inside it.
            let classes = f.routes.split_toward_tor(switch, f.dst_tor_index(pkt));
            if classes.len() > 1 {
                g = super::pick_class(classes, key);
                group = f.routes.group(g);
                if group.len() == 1 {
                    return group[0];
                }
            }
        }
        // A pin survives only while its port is still a next hop (routing may have changed).
        if let Some(&port) = self.pinned.as_ref().and_then(|p| p.get(&key)).filter(|p| group.contains(p)) {
            return port;
        }
        let engine = self.engine(f.topo, switch, pkt.via);
        let port = self.choose(g, group, engine, |p| f.ports.visible_backlog(p, f.now));
        self.audit.decisions += 1;
        if self.audit.decisions.is_multiple_of(16) {
            let truth = |p: u32| f.ports.backlog(p, f.now);
            let a = &mut self.audit;
            a.audited += 1;
            let chosen = truth(port);
            a.least_loaded += u64::from(group.iter().all(|&q| chosen <= truth(q)));
            a.read_empty_while_busy += u64::from(f.ports.visible_backlog(port, f.now) == 0 && truth(port) > 0);
        }
        if let Some(p) = self.pinned.as_mut() {
            p.insert(key, port);
        }
        port
    }

    /// One DRILL(d, m) decision for `engine` over `group` (id `g`), reading queue lengths with
    /// `load`; updates the engine's memory.
    pub fn choose(&mut self, g: u32, group: &[u32], engine: u32, load: impl Fn(u32) -> u64) -> u32 {
        let n = group.len();
        // d distinct samples (all ports if d >= N): a partial Fisher-Yates shuffle.
        self.sample.clear();
        self.sample.extend_from_slice(group);
        let d = (self.d as usize).min(n);
        for i in 0..d {
            let j = i + below(&mut self.rng, (n - i) as u64) as usize;
            self.sample.swap(i, j);
        }
        self.scratch.clear();
        for &p in &self.sample[..d] {
            self.scratch.push((load(p), p));
        }
        let m = self.m as usize;
        let mem = (g as usize * self.engines as usize + engine as usize) * m;
        for &p in &self.memory[mem..mem + m] {
            if p != EMPTY && !self.scratch.iter().any(|&(_, q)| q == p) {
                self.scratch.push((load(p), p));
            }
        }
        // Least loaded first; ties keep sampling order (samples are random, so no port is
        // favoured). The stable sort also yields the m least loaded for the memory.
        self.scratch.sort_by_key(|&(l, _)| l);
        let chosen = self.scratch[0].1;
        for j in 0..m {
            self.memory[mem + j] = self.scratch.get(j).map_or(EMPTY, |&(_, p)| p);
        }
        chosen
    }

    #[cfg(test)]
    fn memory_of(&self, g: u32, engine: u32) -> &[u32] {
        let m = self.m as usize;
        let at = (g as usize * self.engines as usize + engine as usize) * m;
        &self.memory[at..at + m]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::lb::Scheme;
    use crate::topology::fat_tree::{self, FatTree};
    use crate::units::Rate;

    fn spec(d: u32, m: u32, engines: u32) -> RoutingSpec {
        RoutingSpec { scheme: Scheme::Drill, d: Some(d), m: Some(m), engines: Some(engines), ..Default::default() }
    }

    /// DRILL samples only the packet's equal-cost next hops (N in §3.2.2), and with m >= 1 the
    /// memory holds the least-loaded port among those compared.
    #[test]
    fn samples_only_equal_cost_ports_and_remembers_the_least_loaded() {
        let t = fat_tree::build(&FatTree { k: 8, remove_cores: 0 }, Rate(10_000_000_000), Rate(10_000_000_000), 0).unwrap();
        let routes = Routes::compute(&t);
        let mut ports = Ports::new(&t, u64::MAX, None);
        let agg = t.ports[routes.toward_tor(t.host_tor[0], 31)[0] as usize].to;
        // Load every port of the aggregation switch differently, including the down ports that
        // are not next hops toward pod 7, so a wrong sample would be visible.
        for (i, p) in t.ports_of(agg).enumerate() {
            for _ in 0..(8 - i) {
                ports.enqueue(p, 1500, false, 0, true);
            }
        }
        let now = 2_000_000; // 2 us: all enqueues visible, backlogs still distinct
        let mut drill = Drill::new(&spec(2, 1, 1), &t, &routes, &mut Streams::new(5));
        let pkt = Packet { dst: 127, ..Default::default() };
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now };
        let g = routes.group_toward_tor(agg, f.dst_tor_index(&pkt));
        let group = routes.group(g).to_vec();
        let least = *group.iter().min_by_key(|&&p| ports.backlog(p, now)).unwrap();
        let mut seen_least = false;
        for _ in 0..200 {
            let port = drill.choose(g, &group, 0, |p| ports.visible_backlog(p, now));
            assert!(group.contains(&port), "port {port} is not an equal-cost next hop");
            let remembered = drill.memory_of(g, 0)[0];
            assert_eq!(remembered, port, "with m = 1 the memory is the port just chosen (least loaded compared)");
            seen_least |= port == least;
            if seen_least {
                assert_eq!(port, least, "once found, the least-loaded port stays in memory and keeps winning");
            }
        }
        assert!(seen_least);
    }

    /// Discrete-time single switch, N output queues with unequal service rates (DRILL §3.2.4):
    /// each slot one packet arrives with probability `lambda`, goes where DRILL says, and queue
    /// j serves a packet with probability mu[j]. Returns the total backlog after `slots`.
    fn backlog_after(d: u32, m: u32, slots: u32) -> u64 {
        let mu = [0.9, 0.04, 0.04];
        let lambda = 0.85; // admissible: below the total service rate 0.98
        let group = [0u32, 1, 2];
        let mut drill = Drill {
            d,
            m,
            engines: 1,
            memory: vec![EMPTY; m as usize],
            ingress_index: vec![],
            scratch: vec![],
            sample: vec![],
            rng: Streams::new(9).stream(),
            pinned: None,
            decompose: false,
            audit: Audit::default(),
        };
        let mut rng = Streams::new(10).stream();
        let mut q = [0u64; 3];
        for _ in 0..slots {
            if crate::rng::unit(&mut rng) < lambda {
                let qs = q;
                let port = drill.choose(0, &group, 0, |p| qs[p as usize]);
                q[port as usize] += 1;
            }
            for j in 0..3 {
                if q[j] > 0 && crate::rng::unit(&mut rng) < mu[j] {
                    q[j] -= 1;
                }
            }
        }
        q.iter().sum()
    }

    /// Theorem 1: DRILL(d, 0) with d < N is unstable under unequal service rates (when the fast
    /// queue is not sampled, a packet must join a slow one: at least (1/3) * 0.85 = 0.28 per
    /// slot into queues serving 0.08, so the backlog grows by about 0.2 per slot). Theorem 2:
    /// DRILL(1, 1) is stable: its memory keeps finding the fast queue.
    #[test]
    fn drill_d0_is_unstable_and_drill_11_is_stable_with_unequal_service_rates() {
        let slots = 200_000;
        let unstable = backlog_after(2, 0, slots);
        let stable = backlog_after(1, 1, slots);
        // Growth of ~0.2/slot gives ~40,000 packets; allow a wide margin.
        assert!(unstable > 20_000, "DRILL(2,0) backlog {unstable} should grow without bound");
        // A stable queue stays within a few dozen packets.
        assert!(stable < 200, "DRILL(1,1) backlog {stable} should stay bounded");
    }

    #[test]
    fn engines_split_arrivals_by_ingress_port_ranges() {
        let t = fat_tree::build(&FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let drill = Drill::new(&spec(2, 1, 2), &t, &routes, &mut Streams::new(1));
        let edge = t.host_tor[0];
        // The edge's ports: 2 hosts then 2 aggs. Host 0's NIC arrives on port index 0 -> engine 0;
        // the links from the aggs arrive on indices 2, 3 -> engine 1.
        let from_host0 = t.port_start[0];
        assert_eq!(drill.engine(&t, edge, from_host0), 0);
        let agg = t.ports[routes.toward_tor(edge, 3)[1] as usize].to;
        let agg_to_edge = t.ports_of(agg).find(|&p| t.ports[p as usize].to == edge).unwrap();
        assert_eq!(drill.engine(&t, edge, agg_to_edge), 1);
    }
}
