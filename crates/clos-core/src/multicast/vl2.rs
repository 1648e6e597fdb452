//! Multicast trees on VL2 (Li & Freedman §2.3 and §3.1 carried to VL2's fabric, Greenberg et
//! al. §4.1): ToRs each linked to two aggregation switches, aggregation and intermediate
//! switches joined as a complete bipartite graph.
//!
//! **Partitions.** The address space is cut into `n` partitions, each held by `r` intermediate
//! switches (`multicast.partitions`, `multicast.cores_per_partition`; `n·r` = the intermediates):
//! partition `p` on intermediates `p·r .. (p+1)·r`. Every aggregation switch reaches every
//! intermediate, so any such map is connected (Algorithm 1's constraints, which make a fat
//! tree's core holders sit above aggregation holders of the same partition in every pod, have
//! nothing to do here): the intermediate layer holds each group `r` times, `n·C` groups in all
//! (Eq. 1 with the intermediates for cores), for any `n` and `r` whose product is the layer.
//!
//! **The aggregation layer is not partitioned.** A ToR reaches only its two aggregation
//! switches, and ToRs share them in overlapping pairs (no pod whose aggregation switches could
//! split its groups, as Algorithm 1 splits a fat-tree pod's): a partition held by `r_a` of them
//! would have to be held by one of every ToR's pair, which for `r_a = 1` leaves each member ToR
//! one possible switch and for `r_a = 2` is no partitioning. Instead each group picks its own
//! aggregation switches: the elements are the group's ToRs (members' and senders'), an
//! aggregation switch covers the ToRs linked to it, and the greedy set cover
//! (`set_cover::greedy`, the fewest switches it finds, the lowest index on ties) serves every
//! ToR from the switch that took it. Only the chosen switches keep the group's entry, so a group
//! costs the aggregation layer as many entries as its cover has switches, not `r_a` per pod.
//!
//! **The tree**, for a datagram from a sender on ToR `s`:
//! - ToR `s` delivers to its own members and, when the group has other ToRs, sends one copy up
//!   to the aggregation switch serving it;
//! - that switch sends a copy down to each other member ToR it serves and, when another chosen
//!   switch serves member ToRs, one copy up to an intermediate holding the group's partition
//!   (the first of the `r`, or as `multicast.spread` picks);
//! - the intermediate sends a copy down to every other chosen switch serving member ToRs, which
//!   sends one to each of its member ToRs, which deliver to their members.
//!
//! **Entries**, as on a fat tree (`tree.rs`): every ToR of the tree keeps one (its member and
//! sender hosts' ports); when the tree has two or more ToRs, every chosen aggregation switch
//! (its ToRs); when it has two or more chosen switches, the `r` holding intermediates (the
//! chosen switches). Counted against `C` per switch, overflow reported.
//!
//! Failures (`vl2_failover.rs`): a copy whose next hop is across a failed link detours,
//! tagged with the switch beyond it, and the controller rebuilds the cover without the link.
//!
//! **Meta-groups** (§3.2; `aggregation.rs`, through [`LayerSource`]): at the ToRs (ports: the
//! servers, which restore the address and discard what they did not join) or at the aggregation
//! switches (a switch holds the groups whose cover took it; ports: the ToRs below it). An
//! aggregated switch sends a group's copy out of its meta-group's ports but the sender's (as
//! the tree does); a meta-group's copy whose port is down is detoured only to a ToR the group's
//! own entry there sends to (any other would discard it). A rebuild that moves groups between
//! aggregation switches recomputes the meta-groups (`vl2_failover.rs`).

use super::aggregation::{Aggregated, Dest, LayerSource};
use super::fabric::{port_to, table_summary, Datagram, Group, McFabric, Mode, Out, Root, Switch};
use super::set_cover::greedy;
use super::spec::{MulticastSpec, Spread};
use super::table::Tables;
use super::tree::{Entry, Layer};
use crate::error::{bad, Result};
use crate::topology::{Role, Topology};
use serde_json::Value;
use std::collections::HashMap;

/// One group's aggregation switches: the set cover of its ToRs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vl2Tree {
    /// (aggregation switch, the ToRs of the tree it serves, ascending), in the order the greedy
    /// cover took them.
    pub serving: Vec<(u32, Vec<u32>)>,
    /// The chosen switches serving at least one member ToR (the intermediate's downstream).
    pub member_aggs: Vec<u32>,
}

impl Vl2Tree {
    /// The aggregation switch serving ToR `t`, if it is on the tree.
    pub fn agg_of(&self, t: u32) -> Option<u32> {
        self.serving.iter().find(|(_, tors)| tors.contains(&t)).map(|&(a, _)| a)
    }

    /// Group `grp`'s tree over `aggs` aggregation switches, `covers(a, t)` saying whether switch
    /// `a` reaches ToR `t`: the greedy set cover of its ToRs (none for a group on one ToR);
    /// `None` when a ToR of the group has no such switch.
    pub(super) fn cover(grp: &Group, aggs: u32, covers: impl Fn(u32, u32) -> bool) -> Option<Vl2Tree> {
        let serving = if grp.spans_edges() {
            let all_aggs: Vec<u32> = (0..aggs).collect();
            greedy(grp.tree_edges(), &all_aggs, covers)?
        } else {
            Vec::new()
        };
        let has_members = |t: u32| grp.edge_members.iter().any(|&(e, _)| e == t);
        let member_aggs: Vec<u32> = serving.iter().filter(|(_, tors)| tors.iter().any(|&t| has_members(t))).map(|&(a, _)| a).collect();
        let mut serving = serving;
        for (_, tors) in &mut serving {
            tors.sort_unstable();
        }
        Some(Vl2Tree { serving, member_aggs })
    }
}

/// Every group's tree on a VL2 fabric, and the port maps.
pub struct Vl2Fabric {
    pub spread: Spread,
    pub groups: Vec<Group>,
    pub trees: Vec<Vl2Tree>,
    pub tables: Tables,
    /// n partitions of r intermediates each.
    pub n: u32,
    pub r: u32,
    pub(super) n_hosts: u32,
    pub(super) tors: u32,
    pub(super) aggs: u32,
    pub(super) ints: u32,
    /// Dense port maps (`u32::MAX` where there is no link): ToR → aggregation `[t·A + a]`,
    /// aggregation → ToR `[a·T + t]`, aggregation → intermediate `[a·I + i]`, intermediate →
    /// aggregation `[i·A + a]`.
    pub(super) tor_up: Vec<u32>,
    pub(super) agg_down: Vec<u32>,
    pub(super) agg_up: Vec<u32>,
    pub(super) int_down: Vec<u32>,
    host_down: Vec<u32>,
    /// The ToR (index) of each host, each ToR's first host and host count (a ToR's hosts are
    /// numbered consecutively; a host's port there is its place among them).
    tor_of: Vec<u32>,
    first_host: Vec<u32>,
    hosts_of: Vec<u32>,
    /// Each aggregation switch's ToRs, ascending (a ToR's port there is its place among them).
    agg_tors: Vec<Vec<u32>>,
    /// Meta-groups at one layer (`aggregation.rs`), if on.
    pub aggregation: Option<Aggregated>,
    /// A detour's hop counts to each target switch over the links up (`vl2_failover.rs`),
    /// cleared when a link changes.
    pub(super) routes: HashMap<u32, Vec<u32>>,
}

impl Vl2Fabric {
    /// The groups' trees on `topo`, a VL2 fabric; `senders[g]` are group g's sending hosts.
    pub fn new(spec: &MulticastSpec, topo: &Topology, senders: &[Vec<u32>], seed: u64) -> Result<Vl2Fabric> {
        let nh = topo.n_hosts as u32;
        let of_role = |r: Role| (0..topo.nodes.len() as u32).filter(|&n| topo.role(n) == r).collect::<Vec<u32>>();
        let (tor_nodes, agg_nodes, int_nodes) = (of_role(Role::Tor), of_role(Role::Agg), of_role(Role::Core));
        let (tors, aggs, ints) = (tor_nodes.len() as u32, agg_nodes.len() as u32, int_nodes.len() as u32);
        // Nodes are hosts, then ToRs, aggregation and intermediate switches (`topology/vl2.rs`).
        let consecutive = |nodes: &[u32], first: u32| nodes.iter().enumerate().all(|(i, &n)| n == first + i as u32);
        if !consecutive(&tor_nodes, nh) || !consecutive(&agg_nodes, nh + tors) || !consecutive(&int_nodes, nh + tors + aggs) {
            return Err(bad("multicast", "needs topology.kind = \"vl2\" or \"fat_tree\""));
        }
        let tor_of = |h: u32| topo.host_tor[h as usize] - nh;
        // A host's port on its ToR: its place among the ToR's hosts (numbered ToR by ToR).
        let (mut first_host, mut per_tor) = (vec![u32::MAX; tors as usize], 0);
        let mut count = vec![0u32; tors as usize];
        for h in 0..nh {
            let t = tor_of(h) as usize;
            first_host[t] = first_host[t].min(h);
            count[t] += 1;
            per_tor = per_tor.max(count[t]);
        }
        // Entries keep port sets as 64-bit masks (`tree.rs`).
        if per_tor > 64 || aggs > 64 {
            return Err(bad(
                "topology",
                format!("multicast on VL2 keeps port sets in 64 bits: at most 64 servers per ToR and 64 aggregation switches (have {per_tor} and {aggs})"),
            ));
        }
        let r = spec.cores_per_partition;
        let n = spec.partitions.unwrap_or(ints / r.max(1));
        if r == 0 || n == 0 || n * r != ints {
            return Err(bad(
                "multicast.partitions",
                format!("n·r = {n}·{r} but VL2 has {ints} intermediate switches: choose multicast.partitions · multicast.cores_per_partition = {ints}"),
            ));
        }
        if spec.aggrs_per_partition != 1 {
            return Err(bad(
                "multicast.aggrs_per_partition",
                "VL2's aggregation layer is not partitioned (each group's set cover picks its aggregation switches): remove it",
            ));
        }
        let link = |from: u32, to: u32| -> Result<u32> {
            if topo.ports_of(from).any(|p| topo.ports[p as usize].to == to) {
                port_to(topo, from, to, "VL2")
            } else {
                Ok(u32::MAX)
            }
        };
        let (mut tor_up, mut agg_down) = (vec![u32::MAX; (tors * aggs) as usize], vec![u32::MAX; (aggs * tors) as usize]);
        for t in 0..tors {
            for a in 0..aggs {
                tor_up[(t * aggs + a) as usize] = link(nh + t, nh + tors + a)?;
                agg_down[(a * tors + t) as usize] = link(nh + tors + a, nh + t)?;
            }
        }
        let (mut agg_up, mut int_down) = (Vec::new(), vec![u32::MAX; (ints * aggs) as usize]);
        for a in 0..aggs {
            for i in 0..ints {
                // Complete bipartite: every pair is linked.
                agg_up.push(port_to(topo, nh + tors + a, nh + tors + aggs + i, "VL2")?);
                int_down[(i * aggs + a) as usize] = port_to(topo, nh + tors + aggs + i, nh + tors + a, "VL2")?;
            }
        }
        let mut tables = Tables::sized(tors, aggs, ints, spec.capacity);
        let mut groups = Vec::with_capacity(spec.groups.len());
        let mut trees = Vec::with_capacity(spec.groups.len());
        // Groups go to partitions round robin, as on fat trees.
        for (g, gs) in spec.groups.iter().enumerate() {
            let members = spec.members(g, nh, seed)?;
            let mut senders_g = senders.get(g).cloned().unwrap_or_default();
            senders_g.sort_unstable();
            senders_g.dedup();
            // VL2 has no pods: one.
            let mut grp = Group::lay_out(gs.name.clone(), g as u32 % n, members, senders_g, tor_of, |_| 0);
            let covers = |a: u32, t: u32| tor_up[(t * aggs + a) as usize] != u32::MAX;
            let tree = Vl2Tree::cover(&grp, aggs, covers)
                .ok_or_else(|| bad("topology", "a ToR of a multicast group has no aggregation switch: VL2 needs its uplinks"))?;
            let serving = &tree.serving;
            // Its entries (see the module comment).
            let mut entries: Vec<Entry> = Vec::new();
            for t in grp.tree_edges().to_vec() {
                let ports = grp.hosts().iter().filter(|&&h| tor_of(h) == t).fold(0u64, |m, &h| m | 1 << (h - first_host[t as usize]));
                entries.push(Entry { layer: Layer::Edge, switch: t, ports });
            }
            for (a, tors_a) in serving {
                let downs: Vec<u32> = (0..tors).filter(|&t| agg_down[(a * tors + t) as usize] != u32::MAX).collect();
                let ports = tors_a.iter().fold(0u64, |m, t| m | 1 << downs.iter().position(|x| x == t).expect("a ToR it serves is below it").min(63));
                entries.push(Entry { layer: Layer::Aggr, switch: *a, ports });
            }
            if serving.len() >= 2 {
                let ports = serving.iter().fold(0u64, |m, &(a, _)| m | 1 << a);
                for i in grp.partition * r..(grp.partition + 1) * r {
                    entries.push(Entry { layer: Layer::Core, switch: i, ports });
                }
            }
            for e in &entries {
                grp.overflow |= tables.add(e) > spec.capacity;
            }
            groups.push(grp);
            trees.push(tree);
        }
        let agg_tors = (0..aggs).map(|a| (0..tors).filter(|&t| agg_down[(a * tors + t) as usize] != u32::MAX).collect()).collect();
        Ok(Vl2Fabric {
            spread: spec.spread,
            groups,
            trees,
            tables,
            n,
            r,
            n_hosts: nh,
            tors,
            aggs,
            ints,
            tor_up,
            agg_down,
            agg_up,
            int_down,
            host_down: topo.host_down_port.clone(),
            tor_of: (0..nh).map(tor_of).collect(),
            first_host,
            hosts_of: count,
            agg_tors,
            aggregation: None,
            routes: HashMap::new(),
        })
    }

    /// The layer and index of switch `node` (ToRs as edge switches, intermediates as cores).
    pub fn switch(&self, node: u32) -> Switch {
        let i = node - self.n_hosts;
        if i < self.tors {
            Switch::Edge(i)
        } else if i < self.tors + self.aggs {
            Switch::Aggr(i - self.tors)
        } else {
            Switch::Core(i - self.tors - self.aggs)
        }
    }

    pub fn node(&self, s: Switch) -> u32 {
        self.n_hosts
            + match s {
                Switch::Edge(i) => i,
                Switch::Aggr(i) => self.tors + i,
                Switch::Core(i) => self.tors + self.aggs + i,
            }
    }

    /// The copies switch `node` sends of datagram `d`, travelling in `mode` (see the module
    /// comment); `up(port)`: whether a port's link is up (a copy whose next hop is across a
    /// failed link detours, tagged with the switch beyond it: `vl2_failover.rs`). Appends to
    /// `out`.
    pub fn replicate(&self, d: Datagram, node: u32, mode: Mode, up: &dyn Fn(u32) -> bool, out: &mut Vec<Out>) {
        let Datagram { group: g, src, choice } = d;
        let (grp, tree) = (&self.groups[g], &self.trees[g]);
        let src_tor = self.tor_of[src as usize];
        let from = tree.agg_of(src_tor);
        let port_or_detour = |p: u32, beyond: Switch, resume: Mode| if up(p) { Out::Port(p) } else { Out::Detour { target: self.node(beyond), resume } };
        match self.switch(node) {
            Switch::Edge(t) => {
                if let Some(mask) = self.aggregated(Layer::Edge, t, g) {
                    // The meta-group's entry: every server port of it but the sender's.
                    let first = self.first_host[t as usize];
                    for h in (0..64).filter(|i| mask >> i & 1 == 1).map(|i| first + i).filter(|&h| h != src) {
                        out.push(Out::Port(self.host_down[h as usize]));
                    }
                } else if let Some((_, hosts)) = grp.edge_members.iter().find(|(x, _)| *x == t) {
                    for &h in hosts.iter().filter(|&&h| h != src) {
                        out.push(Out::Port(self.host_down[h as usize]));
                    }
                }
                if let (Mode::Up, true, Some(a)) = (mode, t == src_tor, from) {
                    out.push(port_or_detour(self.tor_up[(t * self.aggs + a) as usize], Switch::Aggr(a), Mode::Up));
                }
            }
            Switch::Aggr(a) => {
                if let Some(mask) = self.aggregated(Layer::Aggr, a, g) {
                    // The meta-group's entry, but the sender's ToR; a copy whose port is down
                    // detours only to a ToR this switch serves the group's members on.
                    let tors = &self.agg_tors[a as usize];
                    for t in (0..tors.len()).filter(|&i| mask >> i & 1 == 1).map(|i| tors[i]).filter(|&t| t != src_tor) {
                        let p = self.agg_down[(a * self.tors + t) as usize];
                        if up(p) {
                            out.push(Out::Port(p));
                        } else if self.wanted(Layer::Aggr, Some(a), g, Dest::Edge(t)) {
                            out.push(Out::Detour { target: self.node(Switch::Edge(t)), resume: Mode::Down });
                        }
                    }
                } else if let Some((_, tors)) = tree.serving.iter().find(|(x, _)| *x == a) {
                    for &t in tors.iter().filter(|&&t| t != src_tor && grp.edge_members.iter().any(|&(e, _)| e == t)) {
                        out.push(port_or_detour(self.agg_down[(a * self.tors + t) as usize], Switch::Edge(t), Mode::Down));
                    }
                }
                if mode == Mode::Up && tree.member_aggs.iter().any(|&x| x != a) {
                    // The partition's holders, or the intermediate a rebuild moved the group to;
                    // a holder whose link is down is skipped.
                    let (first, count) = match grp.root {
                        Some(Root::Core(i)) => (i, 1),
                        _ => (grp.partition * self.r, self.r),
                    };
                    let port = |i: usize| self.agg_up[(a * self.ints + first + i as u32) as usize];
                    let (i, _) = McFabric::pick(count as usize, choice, |i| up(port(i)));
                    out.push(port_or_detour(port(i), Switch::Core(first + i as u32), Mode::Down));
                }
            }
            Switch::Core(i) => {
                for &a in tree.member_aggs.iter().filter(|&&a| Some(a) != from) {
                    out.push(port_or_detour(self.int_down[(i * self.aggs + a) as usize], Switch::Aggr(a), Mode::Down));
                }
            }
        }
    }

    /// The ports aggregated switch `switch` of `layer` sends group `g` out of: its meta-group's
    /// entry (`aggregation.rs`), or `None` where the group keeps its own entry.
    fn aggregated(&self, layer: Layer, switch: u32, g: usize) -> Option<u64> {
        self.aggregation.as_ref().and_then(|a| a.forwarding(layer, switch, g))
    }

    /// The per-switch tables (intermediates as `core`, ToRs as `edge`), with the groups that
    /// overflowed.
    pub fn table_summary(&self) -> Value {
        table_summary(&self.tables, &self.groups)
    }
}

/// VL2's layers as meta-groups see them (`aggregation.rs`): a ToR's ports are its servers, an
/// aggregation switch's the ToRs below it; a group's entries are those of its current tree
/// (every ToR of it; every aggregation switch its cover took, when it has two ToRs or more).
impl LayerSource for Vl2Fabric {
    fn layer_switches(&self, layer: Layer) -> u32 {
        match layer {
            Layer::Edge => self.tors,
            Layer::Aggr => self.aggs,
            Layer::Core => self.ints,
        }
    }

    fn layer_ports(&self, layer: Layer, switch: u32) -> u32 {
        match layer {
            Layer::Edge => self.hosts_of[switch as usize],
            Layer::Aggr => self.agg_tors[switch as usize].len() as u32,
            Layer::Core => self.aggs,
        }
    }

    fn layer_entries(&self, layer: Layer, g: usize) -> Vec<(u32, u64)> {
        let grp = &self.groups[g];
        let member_tor = |t: u32| grp.edge_members.iter().find(|(e, _)| *e == t).map(|(_, hosts)| hosts);
        match layer {
            Layer::Edge => grp
                .tree_edges()
                .iter()
                .map(|&t| (t, member_tor(t).map_or(0, |hosts| hosts.iter().fold(0u64, |m, &h| m | 1 << (h - self.first_host[t as usize])))))
                .collect(),
            Layer::Aggr => self.trees[g]
                .serving
                .iter()
                .map(|(a, tors_a)| {
                    let below = &self.agg_tors[*a as usize];
                    let ports = tors_a
                        .iter()
                        .filter(|&&t| member_tor(t).is_some())
                        .fold(0u64, |m, t| m | 1 << below.iter().position(|x| x == t).expect("a ToR it serves is below it"));
                    (*a, ports)
                })
                .collect(),
            Layer::Core => Vec::new(),
        }
    }

    /// A member host, or a ToR with members that switch `from` serves in the group's current
    /// tree (any ToR with members when the copy came by a detour tagged with it).
    fn wanted(&self, _: Layer, from: Option<u32>, g: usize, d: Dest) -> bool {
        let grp = &self.groups[g];
        match d {
            Dest::Host(h) => grp.members.binary_search(&h).is_ok(),
            Dest::Edge(t) => grp.edge_members.iter().any(|&(e, _)| e == t) && from.is_none_or(|a| self.trees[g].agg_of(t) == Some(a)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::vl2::{build, Vl2};
    use crate::units::Rate;

    /// A VL2 fabric of 4 ToRs with 2 servers each (h0, h1 on tor0, ..., h6, h7 on tor3) and
    /// `spec`'s groups, all sent by host 0.
    fn fabric(aggs: u32, spec: &str) -> (Topology, Vl2Fabric) {
        let topo = build(&Vl2 { tors: 4, servers_per_tor: 2, aggs, intermediates: 2 }, Rate(1), Rate(1), 0).unwrap();
        let spec: MulticastSpec = serde_json::from_str(spec).unwrap();
        let senders = vec![vec![0]; spec.groups.len()];
        let f = Vl2Fabric::new(&spec, &topo, &senders, 1).unwrap();
        (topo, f)
    }

    /// The names of the nodes `node` sends copies of group `g`'s datagram to.
    fn copies(topo: &Topology, f: &Vl2Fabric, g: usize, choice: u64, node: &str, mode: Mode) -> Vec<String> {
        let mut out = Vec::new();
        f.replicate(Datagram { group: g, src: 0, choice }, topo.node_named(node).unwrap(), mode, &|_| true, &mut out);
        out.iter().map(|o| o.name(topo)).collect()
    }

    /// 3 aggregation switches (`tor_uplinks`: tor0 on agg0, agg1; tor1 on agg2, agg0; tor2 on
    /// agg1, agg2; tor3 on agg0, agg1), 2 intermediates, n = 2 (r = 1). Group 0 (partition 0,
    /// int0): host 0 sends to 1 (tor0), 2 (tor1) and 4 (tor2). By hand, the greedy cover of
    /// {tor0, tor1, tor2}: every switch covers two, agg0 (lowest) takes tor0 and tor1, then agg1
    /// (covering tor2 as agg2 does, lower) takes tor2. The tree: tor0 -> h1, agg0; agg0 ->
    /// tor1, int0 (agg1 serves a member ToR); int0 -> agg1 only (agg0 is the sender's); agg1 ->
    /// tor2; tor1 -> h2; tor2 -> h4. Entries: tor0, tor1, tor2; agg0, agg1; int0.
    #[test]
    fn the_tree_over_three_aggregation_switches_by_hand() {
        let (topo, f) = fabric(3, r#"{"groups": [{"name": "g", "members": [1, 2, 4]}]}"#);
        assert_eq!(f.trees[0].serving, vec![(0, vec![0, 1]), (1, vec![2])]);
        assert_eq!((f.n, f.r, f.groups[0].partition), (2, 1, 0));
        assert_eq!(copies(&topo, &f, 0, 0, "tor0", Mode::Up), ["h1", "agg0"]);
        assert_eq!(copies(&topo, &f, 0, 0, "agg0", Mode::Up), ["tor1", "int0"]);
        assert_eq!(copies(&topo, &f, 0, 0, "int0", Mode::Down), ["agg1"]);
        assert_eq!(copies(&topo, &f, 0, 0, "agg1", Mode::Down), ["tor2"]);
        assert_eq!(copies(&topo, &f, 0, 0, "tor1", Mode::Down), ["h2"]);
        assert_eq!(copies(&topo, &f, 0, 0, "tor2", Mode::Down), ["h4"]);
        assert_eq!(f.tables.edge, [1, 1, 1, 0]);
        assert_eq!(f.tables.aggr, [1, 1, 0]);
        assert_eq!(f.tables.core, [1, 0]);
        // tor0's entry has both its hosts' ports (member 1 and sender 0), as on a fat tree.
        assert_eq!(f.tables.edge_multi, [1, 0, 0, 0]);
    }

    /// 2 aggregation switches: every ToR is on both, so agg0 covers every group's ToRs and no
    /// datagram climbs to an intermediate (none keeps an entry). The tree: tor0 -> h1, agg0;
    /// agg0 -> tor1, tor2.
    #[test]
    fn on_two_aggregation_switches_one_serves_every_tor() {
        let (topo, f) = fabric(2, r#"{"groups": [{"name": "g", "members": [1, 2, 4]}]}"#);
        assert_eq!(f.trees[0].serving, vec![(0, vec![0, 1, 2])]);
        assert_eq!(copies(&topo, &f, 0, 0, "tor0", Mode::Up), ["h1", "agg0"]);
        assert_eq!(copies(&topo, &f, 0, 0, "agg0", Mode::Up), ["tor1", "tor2"]);
        assert_eq!((f.tables.aggr.as_slice(), f.tables.core.as_slice()), (&[1, 0][..], &[0, 0][..]));
    }

    /// n = 1, r = 2: both intermediates hold the one partition and keep the entry; the
    /// spreading choice picks which one a datagram climbs to. A group inside one ToR (host 1)
    /// keeps one entry, on its ToR, and never leaves it.
    #[test]
    fn replicas_of_a_partition_and_a_group_inside_one_tor() {
        let (topo, f) =
            fabric(3, r#"{"partitions": 1, "cores_per_partition": 2, "groups": [{"name": "g", "members": [1, 2, 4]}, {"name": "h", "members": [1]}]}"#);
        assert_eq!(f.tables.core, [1, 1]);
        assert_eq!(copies(&topo, &f, 0, 0, "agg0", Mode::Up), ["tor1", "int0"]);
        assert_eq!(copies(&topo, &f, 0, 1, "agg0", Mode::Up), ["tor1", "int1"]);
        assert_eq!(copies(&topo, &f, 0, 1, "int1", Mode::Down), ["agg1"]);
        assert_eq!(copies(&topo, &f, 1, 0, "tor0", Mode::Up), ["h1"]);
        assert_eq!(f.tables.edge, [2, 1, 1, 0]);
    }

    #[test]
    fn bad_partitions_are_errors_naming_the_field() {
        let topo = build(&Vl2 { tors: 4, servers_per_tor: 2, aggs: 3, intermediates: 2 }, Rate(1), Rate(1), 0).unwrap();
        let err = |json: &str| Vl2Fabric::new(&serde_json::from_str(json).unwrap(), &topo, &[], 1).err().unwrap().to_string();
        let e = err(r#"{"partitions": 3, "groups": [{"name": "g", "members": 2}]}"#);
        assert!(e.starts_with("multicast.partitions: n·r = 3·1 but VL2 has 2 intermediate switches"), "{e}");
        let e = err(r#"{"aggrs_per_partition": 2, "groups": [{"name": "g", "members": 2}]}"#);
        assert!(e.starts_with("multicast.aggrs_per_partition: VL2's aggregation layer is not partitioned"), "{e}");
    }
}
