//! Per-packet spraying (PLTS, seed 002): every switch with several equal-cost next hops sends
//! each packet on its own choice. The seed holds only the second half of the PLTS paper, which
//! names PLTS-RR and PLTS-CNT without defining them; we implement the natural reading
//! (REPRODUCTION.md §2):
//! - `RoundRobin`: a pointer per (switch, next-hop group) advances by one per packet, so one
//!   flow's consecutive packets leave by consecutive ports. (LocalFlow §7 found a simulator bug
//!   that turned "spraying" into bursts of packets per port; the test below guards against it.)
//! - `Random`: a uniform random port per packet (RPS, DRILL's "Per-packet Random").
//! - `Counter`: the port with the fewest bytes sent so far, which stays balanced when packet
//!   sizes vary (PLTS-CNT). Ties go to the earliest port of the group.

use super::{pick, Fabric};
use crate::packet::Packet;
use crate::rng::{next_u64, Stream, Streams};
use crate::routing::Routes;

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
    rng: Stream,
}

impl Spray {
    pub fn new(mode: Mode, routes: &Routes, streams: &mut Streams) -> Self {
        Spray { mode, next: vec![0; routes.distinct_groups()], rng: streams.stream() }
    }

    pub fn on_routes_changed(&mut self, routes: &Routes) {
        self.next.resize(routes.distinct_groups(), 0);
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let (g, group) = f.group_for(switch, pkt);
        match self.mode {
            Mode::RoundRobin => {
                let i = &mut self.next[g as usize];
                let port = group[*i as usize % group.len()];
                *i = (*i + 1) % group.len() as u32;
                port
            }
            Mode::Random => random_port(group, &mut self.rng),
            Mode::Counter => *group.iter().min_by_key(|&&p| f.ports.accepted(p).bytes).expect("non-empty group"),
        }
    }

    /// The port `next_port` will choose for `pkt` if `draws_first` random choices are made
    /// before it (and, round robin, none in its group), without choosing: for prefetching its
    /// queue line (`Forwarder::predicted_port`). None for the counter mode, whose choice reads
    /// the very counters a prefetch would be for.
    #[inline]
    pub fn predicted_port(&self, f: &Fabric, switch: u32, pkt: &Packet, draws_first: u32) -> Option<u32> {
        let (g, group) = f.group_for(switch, pkt);
        if group.is_empty() {
            return None;
        }
        match self.mode {
            Mode::RoundRobin => Some(group[self.next[g as usize] as usize % group.len()]),
            Mode::Random => {
                let mut rng = self.rng.clone();
                for _ in 0..draws_first {
                    next_u64(&mut rng);
                }
                Some(random_port(group, &mut rng))
            }
            Mode::Counter => None,
        }
    }
}

/// Random spraying's choice, one draw from `rng`: shared by the choice and its prediction, so
/// that the two cannot drift apart.
#[inline]
fn random_port(group: &[u32], rng: &mut Stream) -> u32 {
    pick(group, next_u64(rng))
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
    /// `next_port` then picks, also when another choice comes first (`draws_first` = 1).
    #[test]
    fn random_spraying_predicts_its_next_choices() {
        let (t, routes, ports) = k8();
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let mut s = Spray::new(Mode::Random, &routes, &mut Streams::new(1));
        let edge = t.host_tor[0];
        let mut p = Packet { src: 0, dst: 127, ..Default::default() };
        let mut chosen = std::collections::BTreeSet::new();
        for _ in 0..100 {
            let (first, second) = (s.predicted_port(&f, edge, &p, 0), s.predicted_port(&f, edge, &p, 1));
            let port = s.next_port(&f, edge, &mut p);
            assert_eq!(Some(port), first);
            assert_eq!(s.predicted_port(&f, edge, &p, 0), second);
            chosen.insert(port);
        }
        assert_eq!(chosen.len(), 4, "all four uplinks chosen, so a match is no accident");
    }

    /// PLTS-RR sends one flow's consecutive packets on consecutive ports, never two in a row on
    /// the same port (the htsim "PacketScatter" bug LocalFlow §7 reports would fail this).
    #[test]
    fn round_robin_alternates_ports_packet_by_packet() {
        let (t, routes, ports) = k8();
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let mut s = Spray::new(Mode::RoundRobin, &routes, &mut Streams::new(1));
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
        let mut s = Spray::new(Mode::Counter, &routes, &mut Streams::new(1));
        let mut p = Packet { src: 0, dst: 15, ..Default::default() };
        for i in 0..1000u32 {
            let port = {
                let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
                s.next_port(&f, edge, &mut p)
            };
            ports.enqueue(port, if i % 2 == 0 { 1500 } else { 64 }, false, 0);
        }
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let g = routes.toward_tor(edge, f.dst_tor_index(&p));
        let (a, b) = (ports.accepted(g[0]).bytes, ports.accepted(g[1]).bytes);
        // Greedy least-bytes keeps the two within one packet of each other.
        assert!(a.abs_diff(b) <= 1500, "{a} vs {b}");
    }
}
