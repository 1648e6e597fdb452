//! Per-packet spraying (PLTS, seed 002): every switch with several equal-cost next hops sends
//! each packet on its own choice. The seed holds only the second half of the PLTS paper, which
//! names PLTS-RR and PLTS-CNT without defining them; we implement the natural reading
//! (REPRODUCTION.md §2):
//! - `RoundRobin`: a pointer per (switch, next-hop group) advances by one per packet, so one
//!   flow's consecutive packets leave by consecutive ports. (LocalFlow §7 found a simulator bug
//!   that turned "spraying" into bursts of packets per port; the test below guards against it.)
//! - `Random`: a uniform random port per packet (RPS, DRILL's "Per-packet Random"). Each packet
//!   leaves its host with a random nonce (`Packet::lb_tag`), and each switch picks by a salted
//!   hash of it, ECMP's hash with the nonce in place of the flow's: choices independent across
//!   packets (the nonces) and across switches (the salts), and a function of the packet, so the
//!   event loop's look-ahead knows the port before the hop (`Forwarder::prediction_is_exact`).
//! - `Counter`: the port with the fewest bytes sent so far, which stays balanced when packet
//!   sizes vary (PLTS-CNT). Ties go to the earliest port of the group.

use super::{ecmp::Ecmp, Fabric};
use crate::packet::Packet;
use crate::rng::{next_u64, Stream, Streams};
use crate::routing::Routes;
use crate::topology::Topology;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    RoundRobin,
    Random,
    Counter,
}

pub struct Spray {
    mode: Mode,
    /// Round-robin pointer per next-hop group (a group belongs to one switch).
    next: Vec<u32>,
    /// Random: the switches' salts for hashing a packet's nonce.
    salted: Ecmp,
    /// Random: the packets' nonces.
    pub(crate) nonces: Stream,
}

impl Spray {
    pub fn new(mode: Mode, topo: &Topology, routes: &Routes, streams: &mut Streams) -> Self {
        // The other modes draw nothing, and keep the one stream they always took.
        let salted = if mode == Mode::Random { Ecmp::new(topo, streams) } else { Ecmp::unsalted(topo) };
        Spray { mode, next: vec![0; routes.distinct_groups()], salted, nonces: streams.stream() }
    }

    /// A packet leaves its host: random spraying gives it its nonce.
    #[inline]
    pub fn at_source(&mut self, pkt: &mut Packet) {
        if self.mode == Mode::Random {
            self.draw_nonce(pkt);
        }
    }

    /// `at_source` for random spraying (`lb::Known::SprayRandom`).
    #[inline]
    pub fn draw_nonce(&mut self, pkt: &mut Packet) {
        debug_assert!(self.mode == Mode::Random);
        pkt.lb_tag = next_u64(&mut self.nonces) as u32;
    }

    pub fn is_random(&self) -> bool {
        self.mode == Mode::Random
    }

    pub fn on_routes_changed(&mut self, routes: &Routes) {
        self.next.resize(routes.distinct_groups(), 0);
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        match self.mode {
            Mode::RoundRobin => {
                let (g, group) = f.group_for(switch, pkt);
                let i = &mut self.next[g as usize];
                let port = group[*i as usize % group.len()];
                *i = (*i + 1) % group.len() as u32;
                port
            }
            Mode::Random => self.random_next_port(f, switch, pkt),
            Mode::Counter => {
                let (_, group) = f.group_for(switch, pkt);
                *group.iter().min_by_key(|&&p| f.ports.accepted(p).bytes).expect("non-empty group")
            }
        }
    }

    /// The port `next_port` will choose for `pkt`, toward the ToR numbered `tor_index` (its
    /// destination's, which the caller has looked up already), without choosing: for
    /// prefetching its queue line (`Forwarder::predicted_port`). Exact for random spraying (a
    /// function of the packet); round robin's holds if no other packet of the group goes first.
    /// None for the counter mode, whose choice reads the very counters a prefetch would be for.
    #[inline]
    pub fn predicted_port(&self, f: &Fabric, switch: u32, tor_index: u32, pkt: &Packet) -> Option<u32> {
        if self.mode == Mode::Random {
            return self.random_predicted_port(f, switch, tor_index, pkt);
        }
        let g = f.routes.group_toward_tor(switch, tor_index);
        let group = f.routes.group(g);
        match self.mode {
            Mode::RoundRobin if !group.is_empty() => Some(group[self.next[g as usize] as usize % group.len()]),
            _ => None,
        }
    }

    /// Whether `predicted_port` is the port `next_port` chooses (as long as the routes do not
    /// change in between).
    pub fn prediction_is_exact(&self) -> bool {
        self.is_random()
    }

    /// `next_port` for random spraying (`lb::Known::SprayRandom`).
    #[inline]
    pub fn random_next_port(&self, f: &Fabric, switch: u32, pkt: &Packet) -> u32 {
        debug_assert!(self.mode == Mode::Random);
        let port = f.routes.pick_toward_tor(switch, f.dst_tor_index(pkt), self.random_hash(switch, pkt));
        port.expect("no route: the topology builder guarantees connectivity")
    }

    /// `predicted_port` for random spraying (`lb::Known::SprayRandom`).
    #[inline]
    pub fn random_predicted_port(&self, f: &Fabric, switch: u32, tor_index: u32, pkt: &Packet) -> Option<u32> {
        debug_assert!(self.mode == Mode::Random);
        f.routes.pick_toward_tor(switch, tor_index, self.random_hash(switch, pkt))
    }

    /// Random spraying's hash, shared by the choice and its prediction so that the two cannot
    /// drift apart (`Routes::pick_toward_tor` picks with it).
    #[inline]
    fn random_hash(&self, switch: u32, pkt: &Packet) -> u64 {
        self.salted.hash(switch, pkt.lb_tag as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::topology::fat_tree::{self, FatTree};
    use crate::topology::Topology;
    use crate::units::Rate;

    /// A k=8 fat tree with unbounded buffers: four equal-cost uplinks at each edge switch.
    fn k8() -> (Topology, Routes, Ports) {
        let t = fat_tree::build(&FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        (t, routes, ports)
    }

    /// The port the event loop prefetches for random spraying (`predicted_port`) is the one
    /// `next_port` then picks: the look-ahead takes it instead of choosing again.
    #[test]
    fn random_spraying_predicts_its_choices() {
        let (t, routes, ports) = k8();
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let mut s = Spray::new(Mode::Random, &t, &routes, &mut Streams::new(1));
        assert!(s.prediction_is_exact());
        let edge = t.host_tor[0];
        let mut chosen = std::collections::BTreeSet::new();
        for _ in 0..100 {
            let mut p = Packet { src: 0, dst: 127, ..Default::default() };
            s.at_source(&mut p);
            let predicted = s.predicted_port(&f, edge, f.dst_tor_index(&p), &p);
            let port = s.next_port(&f, edge, &mut p);
            assert_eq!(Some(port), predicted);
            chosen.insert(port);
        }
        assert_eq!(chosen.len(), 4, "all four uplinks chosen, so a match is no accident");
    }

    /// Random spraying is uniform per packet and independent across tiers and across a flow's
    /// consecutive packets: one flow's packets from an edge switch to another pod, counted by
    /// (edge uplink, aggregation uplink) and by (this packet's edge uplink, the next one's),
    /// fill each of the 16 cells equally. Without per-switch salts the two tiers would choose
    /// alike (ECMP's polarization, `ecmp.rs`) and only 4 cells would fill. Each cell is
    /// Binomial(16,000, 1/16): mean 1,000, sd 31; the bound is 5 sd.
    #[test]
    fn random_spraying_is_uniform_and_independent() {
        let (t, routes, ports) = k8();
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let mut s = Spray::new(Mode::Random, &t, &routes, &mut Streams::new(2));
        let edge = t.host_tor[0];
        let index = |node: u32, port: u32, p: &Packet| f.group_for(node, p).1.iter().position(|&q| q == port).unwrap();
        let (mut tiers, mut serial) = ([0u32; 16], [0u32; 16]);
        let mut last = None;
        for _ in 0..16_000 {
            let mut p = Packet { src: 0, dst: 127, ..Default::default() };
            s.at_source(&mut p);
            let up = s.next_port(&f, edge, &mut p);
            let agg = t.ports[up as usize].to;
            let core = s.next_port(&f, agg, &mut p);
            let (i, j) = (index(edge, up, &p), index(agg, core, &p));
            tiers[i * 4 + j] += 1;
            if let Some(prev) = last {
                serial[prev * 4 + i] += 1;
            }
            last = Some(i);
        }
        for c in tiers {
            assert!(c.abs_diff(1000) < 155, "edge x aggregation choices: {tiers:?}");
        }
        for c in serial {
            assert!(c.abs_diff(1000) < 155, "consecutive packets' choices: {serial:?}");
        }
    }

    /// PLTS-RR sends one flow's consecutive packets on consecutive ports, never two in a row on
    /// the same port (the htsim "PacketScatter" bug LocalFlow §7 reports would fail this).
    #[test]
    fn round_robin_alternates_ports_packet_by_packet() {
        let (t, routes, ports) = k8();
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let mut s = Spray::new(Mode::RoundRobin, &t, &routes, &mut Streams::new(1));
        let edge = t.host_tor[0];
        let mut p = Packet { src: 0, dst: 127, ..Default::default() };
        let seq: Vec<u32> = (0..16).map(|_| s.next_port(&f, edge, &mut p)).collect();
        let group = routes.toward_tor(edge, f.dst_tor_index(&p));
        assert_eq!(group.len(), 4);
        for w in seq.windows(2) {
            assert_ne!(w[0], w[1], "two consecutive packets on one port: {seq:?}");
        }
        for (i, port) in seq.iter().enumerate() {
            assert_eq!(*port, group[i % 4], "not a rotation: {seq:?}");
        }
    }

    /// PLTS-CNT equalises bytes, not packets: with alternating 1500 B and 64 B packets, round
    /// robin over 2 ports puts all big packets on one port; the counter does not.
    #[test]
    fn counter_balances_bytes_with_mixed_packet_sizes() {
        let t = fat_tree::build(&FatTree { k: 4, remove_cores: 0 }, Rate(1_000_000_000), Rate(1_000_000_000), 0).unwrap();
        let routes = Routes::compute(&t);
        let mut ports = Ports::new(&t, u64::MAX, None);
        let edge = t.host_tor[0];
        let mut s = Spray::new(Mode::Counter, &t, &routes, &mut Streams::new(1));
        let mut p = Packet { src: 0, dst: 15, ..Default::default() };
        for i in 0..1000u32 {
            let port = {
                let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
                s.next_port(&f, edge, &mut p)
            };
            ports.enqueue(port, if i % 2 == 0 { 1500 } else { 64 }, false, 0, true);
        }
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let g = routes.toward_tor(edge, f.dst_tor_index(&p));
        let (a, b) = (ports.accepted(g[0]).bytes, ports.accepted(g[1]).bytes);
        // Greedy least-bytes keeps the two within one packet of each other.
        assert!(a.abs_diff(b) <= 1500, "{a} vs {b}");
    }
}
