//! Load balancing: how a switch picks one port among the equal-cost next hops.
//!
//! A scheme is one file with a state struct and a `next_port` method, plus one variant in
//! [`Forwarder`] and one line in [`Forwarder::new`]. Dispatch is a `match` (no trait objects on the
//! per-packet path). Each scheme sees the routes, the packet, and the port queues (load-aware
//! schemes read `Ports::backlog`). Delivery from a destination ToR to its host is done by the
//! simulator before the forwarder is asked, so schemes only handle fabric hops.

pub mod ecmp;
pub mod vlb;

use crate::fabric::Ports;
use crate::packet::Packet;
use crate::rng::Streams;
use crate::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// The schemes a scenario can name in `routing.scheme`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// Per-flow hash of the 5-tuple with a per-switch salt.
    #[default]
    Ecmp,
    /// VL2's Valiant load balancing: bounce every inter-rack flow off a random Intermediate.
    Vlb,
}

impl Scheme {
    pub const ALL: [(Scheme, &'static str); 2] = [
        (Scheme::Ecmp, "per-flow 5-tuple hash with a per-switch salt (RFC 2992)"),
        (Scheme::Vlb, "VL2 Valiant load balancing: encapsulate to the Intermediate anycast address, ECMP on the outer header (VL2 §4.2.2)"),
    ];
}

/// What every scheme may read when choosing.
pub struct Fabric<'a> {
    pub topo: &'a Topology,
    pub routes: &'a Routes,
    pub ports: &'a Ports,
    pub now: Time,
}

pub enum Forwarder {
    Ecmp(ecmp::Ecmp),
    Vlb(vlb::Vlb),
}

impl Forwarder {
    pub fn new(scheme: Scheme, topo: &Topology, streams: &mut Streams) -> Forwarder {
        match scheme {
            Scheme::Ecmp => Forwarder::Ecmp(ecmp::Ecmp::new(topo, streams)),
            Scheme::Vlb => Forwarder::Vlb(vlb::Vlb::new(topo, streams)),
        }
    }

    /// Host-agent processing of a packet leaving its source (VL2's agent encapsulates here).
    #[inline]
    pub fn at_source(&self, f: &Fabric, pkt: &mut Packet) {
        if let Forwarder::Vlb(v) = self {
            v.encapsulate(f, pkt);
        }
    }

    /// The output port at `switch` for a packet not yet at its destination ToR.
    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        match self {
            Forwarder::Ecmp(s) => s.next_port(f, switch, pkt),
            Forwarder::Vlb(s) => s.next_port(f, switch, pkt),
        }
    }
}

/// Pick one of `group` with a hash, by multiply-shift (no modulo bias worth mentioning, no division).
#[inline]
pub fn pick(group: &[u32], hash: u64) -> u32 {
    debug_assert!(!group.is_empty(), "no route: the topology builder guarantees connectivity");
    group[((hash as u128 * group.len() as u128) >> 64) as usize]
}
