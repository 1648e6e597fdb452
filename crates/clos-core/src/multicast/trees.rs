//! A run's multicast trees on whichever fabric it runs (Li & Freedman §2.3, §3.1): a fat tree,
//! standard or AB (`fabric.rs`, with failover and meta-groups), or VL2 (`vl2.rs`, with failover
//! in `vl2_failover.rs` and meta-groups). The
//! simulator's side (`sim/multicast.rs`) replicates, detours and reports through this one type.

use super::aggregation::{Aggregated, Dest, LayerSource};
use super::fabric::{Datagram, Group, McFabric, Mode, Out, Switch};
use super::spec::{MulticastSpec, Spread};
use super::tree::Layer;
use super::vl2::Vl2Fabric;
use crate::error::Result;
use crate::topology::Topology;
use serde_json::{json, Value};

/// The groups' trees on the run's fabric.
pub enum McTrees {
    FatTree(Box<McFabric>),
    Vl2(Box<Vl2Fabric>),
}

impl McTrees {
    /// The trees on `topo`: a k-ary fat tree when `k` is given, else VL2.
    pub fn new(spec: &MulticastSpec, topo: &Topology, k: Option<u32>, senders: &[Vec<u32>], seed: u64) -> Result<McTrees> {
        Ok(match k {
            Some(k) => McTrees::FatTree(Box::new(McFabric::new(spec, topo, k, senders, seed)?)),
            None => McTrees::Vl2(Box::new(Vl2Fabric::new(spec, topo, senders, seed)?)),
        })
    }

    pub fn groups(&self) -> &[Group] {
        match self {
            McTrees::FatTree(f) => &f.groups,
            McTrees::Vl2(v) => &v.groups,
        }
    }

    pub fn spread(&self) -> Spread {
        match self {
            McTrees::FatTree(f) => f.spread,
            McTrees::Vl2(v) => v.spread,
        }
    }

    /// The fat tree's fabric, if the run is on one.
    pub fn fat_tree(&self) -> Option<&McFabric> {
        match self {
            McTrees::FatTree(f) => Some(f),
            McTrees::Vl2(_) => None,
        }
    }

    /// Meta-groups, if on.
    pub fn aggregation(&self) -> Option<&Aggregated> {
        match self {
            McTrees::FatTree(f) => f.aggregation.as_ref(),
            McTrees::Vl2(v) => v.aggregation.as_ref(),
        }
    }

    pub fn aggregation_mut(&mut self) -> Option<&mut Aggregated> {
        match self {
            McTrees::FatTree(f) => f.aggregation.as_mut(),
            McTrees::Vl2(v) => v.aggregation.as_mut(),
        }
    }

    /// Meta-groups at `layer` with λ_g = `rates[g]` (`aggregation.rs`): once on a fat tree, and
    /// on VL2 tracked through rebuilds.
    pub fn aggregate(&mut self, rates: &[f64], layer: Layer, capacity: u32, delta_ports: u32) -> Result<()> {
        match self {
            McTrees::FatTree(f) => f.aggregation = Some(Aggregated::build(&**f, rates, layer, capacity, delta_ports, false)?),
            McTrees::Vl2(v) => v.aggregation = Some(Aggregated::build(&**v, rates, layer, capacity, delta_ports, true)?),
        }
        Ok(())
    }

    /// Whether `d` wants group `g`'s copy from switch `from` of `layer` ([`LayerSource::wanted`]).
    pub fn wanted(&self, layer: Layer, from: Option<u32>, g: usize, d: Dest) -> bool {
        match self {
            McTrees::FatTree(f) => f.wanted(layer, from, g, d),
            McTrees::Vl2(v) => v.wanted(layer, from, g, d),
        }
    }

    pub fn switch(&self, node: u32) -> Switch {
        match self {
            McTrees::FatTree(f) => f.switch(node),
            McTrees::Vl2(v) => v.switch(node),
        }
    }

    pub fn node(&self, s: Switch) -> u32 {
        match self {
            McTrees::FatTree(f) => f.node(s),
            McTrees::Vl2(v) => v.node(s),
        }
    }

    /// The copies `node` sends of `d` in `mode`; `up(port)`: whether a port's link is up.
    pub fn replicate(&self, d: Datagram, node: u32, mode: Mode, up: &dyn Fn(u32) -> bool, out: &mut Vec<Out>) {
        match self {
            McTrees::FatTree(f) => f.replicate(d, node, mode, up, out),
            McTrees::Vl2(v) => v.replicate(d, node, mode, up, out),
        }
    }

    /// Whether a detour toward `target` ends at `node` ([`McFabric::arrived`]).
    pub fn arrived(&self, node: u32, target: u32, resume: Mode) -> bool {
        match self {
            McTrees::FatTree(f) => f.arrived(node, target, resume),
            McTrees::Vl2(v) => v.arrived(node, target),
        }
    }

    /// A detour's next port and hops left ([`McFabric::next_hop`], [`Vl2Fabric::next_hop`]).
    pub fn next_hop(&mut self, topo: &Topology, node: u32, target: u32, resume: Mode, up: &dyn Fn(u32) -> bool) -> Option<(u32, u32)> {
        match self {
            McTrees::FatTree(f) => f.next_hop(topo, node, target, resume, up),
            McTrees::Vl2(v) => v.next_hop(topo, node, target, up),
        }
    }

    pub fn links_changed(&mut self) {
        match self {
            McTrees::FatTree(f) => f.links_changed(),
            McTrees::Vl2(v) => v.links_changed(),
        }
    }

    /// The reconstruction after a change ([`McFabric::rebuild`], [`Vl2Fabric::rebuild`]):
    /// (groups moved, unrepaired).
    pub fn rebuild(&mut self, up: &dyn Fn(u32) -> bool) -> (u32, u32) {
        match self {
            McTrees::FatTree(f) => f.rebuild(up),
            McTrees::Vl2(v) => v.rebuild(up),
        }
    }

    /// The summary's partitioning keys: n, r_c, r_a (VL2: n, r and no aggregation partitions).
    pub fn partitioning(&self) -> Value {
        match self {
            McTrees::FatTree(f) => json!({"partitions": f.part.n, "cores_per_partition": f.part.rc, "aggrs_per_partition": f.part.ra}),
            McTrees::Vl2(v) => json!({"partitions": v.n, "cores_per_partition": v.r}),
        }
    }

    pub fn table_summary(&self) -> Value {
        match self {
            McTrees::FatTree(f) => f.table_summary(),
            McTrees::Vl2(v) => v.table_summary(),
        }
    }
}
