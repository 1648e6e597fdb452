//! ECMP: every switch hashes the flow's 5-tuple (carried as `Packet::entropy`) with its own salt
//! and picks among the equal-cost next hops. Without the salt, switches at successive tiers make
//! correlated choices (polarization) and use a fraction of the paths; see the test below.

use super::Fabric;
use crate::packet::Packet;
use crate::rng::{mix64, next_u64, Streams};
use crate::topology::Topology;

pub struct Ecmp {
    salt: Vec<u64>,
}

impl Ecmp {
    pub fn new(topo: &Topology, streams: &mut Streams) -> Self {
        let mut s = streams.stream();
        Ecmp { salt: (0..topo.nodes.len()).map(|_| next_u64(&mut s)).collect() }
    }

    /// ECMP with all salts zero: the polarizing configuration, for tests and comparisons.
    pub fn unsalted(topo: &Topology) -> Self {
        Ecmp { salt: vec![0; topo.nodes.len()] }
    }

    #[inline]
    pub fn hash(&self, switch: u32, key: u64) -> u64 {
        mix64(key ^ self.salt[switch as usize])
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let port = f.routes.pick_toward_tor(switch, f.dst_tor_index(pkt), self.hash(switch, pkt.entropy));
        port.expect("no route: the topology builder guarantees connectivity")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::routing::Routes;
    use crate::topology::fat_tree::{self, FatTree};
    use crate::units::Rate;
    use std::collections::BTreeSet;

    /// Cores used by many flows from pod 0's first edge to pod 7.
    fn cores_used(ecmp: &mut Ecmp) -> usize {
        let t = fat_tree::build(&FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let mut cores = BTreeSet::new();
        for i in 0..2000u64 {
            let mut p = Packet { src: 0, dst: 127, entropy: mix64(i), ..Default::default() };
            let mut node = t.host_tor[0];
            while t.role(node) != crate::topology::Role::Core {
                node = t.ports[ecmp.next_port(&f, node, &mut p) as usize].to;
            }
            cores.insert(node);
        }
        cores.len()
    }

    #[test]
    fn salted_hashing_does_not_polarize_across_tiers() {
        let t = fat_tree::build(&FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let mut streams = Streams::new(3);
        // 16 cores are reachable; with independent choices at edge and aggregation all are used.
        assert_eq!(cores_used(&mut Ecmp::new(&t, &mut streams)), 16);
        // Identical hashing at both tiers couples the choices: edge choice j forces core j of group j.
        assert_eq!(cores_used(&mut Ecmp::unsalted(&t)), 4);
    }
}
