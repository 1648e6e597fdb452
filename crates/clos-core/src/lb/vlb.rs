//! VL2's Valiant load balancing (VL2 §4.2.2).
//!
//! The sending host's agent encapsulates each packet twice: the outer header is addressed to the
//! Intermediate switches' anycast LA, the next to the destination ToR's LA. The outer source
//! address carries a hash of the inner 5-tuple (`Packet::entropy`), and switches ECMP on the
//! outer header, so a flow sticks to one Intermediate while flows spread over all of them. The
//! Intermediate strips the outer header; the destination ToR strips the second. Each header's 20
//! bytes are carried on every link it crosses.
//!
//! Assumption (not stated by the paper): traffic between two servers of the same ToR is not
//! bounced; the agent sees the destination LA is its own ToR and sends it directly.

use super::ecmp::Ecmp;
use super::{pick, Fabric};
use crate::packet::Packet;
use crate::rng::Streams;
use crate::topology::{Role, Topology};

/// Outer-destination tags mixed into the hash: the anycast LA, or the ToR LA after decapsulation.
const ANYCAST_LA: u64 = 0x4c41_414e_5943_4153;

pub struct Vlb {
    ecmp: Ecmp,
}

impl Vlb {
    pub fn new(topo: &Topology, streams: &mut Streams) -> Self {
        Vlb { ecmp: Ecmp::new(topo, streams) }
    }

    /// The agent's encapsulation: two outer IP headers for inter-rack traffic.
    #[inline]
    pub fn encapsulate(&self, f: &Fabric, pkt: &mut Packet) {
        if f.topo.host_tor[pkt.src as usize] != f.topo.host_tor[pkt.dst as usize] {
            pkt.encap = 2;
        }
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        if pkt.encap == 2 && f.topo.role(switch) == Role::Core {
            pkt.encap = 1; // the Intermediate decapsulates the anycast header
        }
        let dst_tor = f.topo.host_tor[pkt.dst as usize];
        if pkt.encap == 2 {
            pick(f.routes.toward_core(switch), self.ecmp.hash(switch, pkt.entropy ^ ANYCAST_LA))
        } else {
            let tor = f.topo.tor_index[dst_tor as usize];
            pick(f.routes.toward_tor(switch, tor), self.ecmp.hash(switch, pkt.entropy ^ dst_tor as u64))
        }
    }
}
