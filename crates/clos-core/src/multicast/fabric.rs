//! Multicast forwarding in the packet simulator's fat tree (Li & Freedman §2.3, §3.1, §3.3):
//! which ports a switch replicates a group's packet out of, how a packet climbs to the layer
//! holding its group's partition, the location-tagged unicast detours around a failed link, and
//! the tree's reconstruction once the controller knows of the failure.
//!
//! The tree is the control plane's ([`Partitioning`], [`GroupTree`]) mapped onto the simulator's
//! nodes and ports (`topology/fat_tree.rs`, whose wiring is the standard one: aggregation switch
//! `j` of every pod reaches core group `j`). It is a shared, bidirectional tree, as the paper's
//! upstream prefix rule and per-holder downstream entries make it:
//!
//! - the sender's **edge** switch delivers to its own member hosts and, when the group spans
//!   other edge switches, sends one copy up to an aggregation switch of its pod holding the
//!   group's partition (one of `r_a`);
//! - that **aggregation** switch sends a copy down to every other member edge switch of its pod
//!   and, when the group spans other pods, one copy up to a core holding the partition (one of
//!   the `r_c/r_a` above it);
//! - the **core** sends a copy down to every other member pod, to the aggregation switch below
//!   it there, which sends one to each member edge switch of its pod, which delivers to its
//!   member hosts.
//!
//! A sender outside the group is a node of the tree (its edge and pod carry the group's
//! traffic) but receives nothing. Which holder a packet goes up to is [`Spread`]'s choice.
//!
//! **Failures (§3.3).** A switch whose next hop on the tree is across a failed link sends the
//! copy as unicast toward the switch beyond it, tagged with that switch (the paper's location
//! identifier: a pod's aggregation switch for a core-aggregation failure, an edge switch for an
//! aggregation-edge failure); every switch on the way forwards it by unicast, and the tagged
//! switch takes the tag off and goes on down the tree. A core's detour is tagged with the pod
//! (the paper's pod identifier): any aggregation switch of that pod takes it off. The unicast
//! path is a shortest path over the links up: the paper's 3-hop detour (core → aggregation of
//! another pod → another core → an aggregation switch of the pod) when there is one, else its
//! 5-hop one (core → aggregation → edge → aggregation of another pod → another core → the
//! pod). Going up, a failed link is avoided by another holder, as the paper says, or detoured
//! if there is none. After the reconvergence delay [`McFabric::rebuild`] moves a broken group to
//! a root whose tree avoids every failed link (the paper's first case: one core that still
//! reaches every member), or, where no single root does, to a tree over several cores (or, for a
//! group inside one pod, several of its aggregation switches) found by set cover
//! (`set_cover.rs`, the paper's second case); a group neither repairs keeps
//! detouring, and is counted.
//!
//! The wiring (standard or AB, `topology.wiring`) is read off the built fabric; every index
//! here goes through [`FatTree::core_above`] and [`FatTree::aggr_below`], which know both.

use super::aggregation::{Aggregated, Dest, LayerSource};
use super::fat_tree::{FatTree, Wiring};
use super::partition::Partitioning;
use super::set_cover::Cover;
use super::spec::{MulticastSpec, Spread};
use super::table::{layer_stats, Tables};
use super::tree::{GroupTree, Layer};
use crate::error::{bad, Result};
use crate::topology::{Role, Topology};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The layer a switch is in, with its index there (edge and aggregation: `pod·k/2 + i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    Edge(u32),
    Aggr(u32),
    Core(u32),
}

/// Which way a packet travels the tree at a switch: up from the sender, or down to members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Up,
    Down,
}

/// One copy a switch sends: out of a port on the tree, or on a detour toward `target`, after
/// which the tree goes on in `resume` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    Port(u32),
    Detour { target: u32, resume: Mode },
}

impl Out {
    /// Where the copy goes, by name: the node at the port's far end, or "detour" (for tests
    /// and traces read by people).
    pub fn name(&self, topo: &Topology) -> String {
        match self {
            Out::Port(p) => topo.nodes[topo.ports[*p as usize].to as usize].name.clone(),
            Out::Detour { .. } => "detour".into(),
        }
    }
}

/// What replication reads of a packet: its group, its sender, and the holder choice going up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub group: usize,
    pub src: u32,
    /// Picks the holder a packet goes up to ([`Spread`]); 0 picks the first.
    pub choice: u64,
}

/// Where a group's tree was moved by a reconstruction (the controller's new root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// Every packet goes up to this core.
    Core(u32),
    /// A group inside one pod: this aggregation switch (index in the pod).
    Aggr(u32),
    /// Several cores, or one pod's aggregation switches, found by set cover ([`Group::cover`]).
    Cover,
}

/// One group's tree on the simulator's fabric.
#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    pub partition: u32,
    /// Receiving hosts, ascending.
    pub members: Vec<u32>,
    /// Sending hosts, ascending.
    pub senders: Vec<u32>,
    /// (edge, its member hosts), ascending.
    pub(super) edge_members: Vec<(u32, Vec<u32>)>,
    /// (pod, its member edge switches), ascending.
    pod_edges: Vec<(u32, Vec<u32>)>,
    /// Edge switches and pods of the tree: members' and senders'.
    tree_edges: Vec<u32>,
    pub(super) tree_pods: Vec<u32>,
    /// The reconstruction's root, if the tree was moved.
    pub root: Option<Root>,
    /// The tree over several cores when `root` is [`Root::Cover`].
    pub cover: Option<Cover>,
    /// Whether an entry of the group did not fit in a switch's table (`capacity`).
    pub overflow: bool,
}

impl Group {
    /// A group's members and senders laid out on a fabric: `edge_of` gives a host's edge switch
    /// (ToR), `pod_of` an edge switch's pod. Hosts must be numbered edge switch by edge switch
    /// and edge switches pod by pod (as both fabrics are). `senders`: ascending, distinct.
    pub(super) fn lay_out(
        name: String,
        partition: u32,
        members: Vec<u32>,
        senders: Vec<u32>,
        edge_of: impl Fn(u32) -> u32,
        pod_of: impl Fn(u32) -> u32,
    ) -> Group {
        let mut edge_members: Vec<(u32, Vec<u32>)> = Vec::new();
        for &h in &members {
            let e = edge_of(h);
            match edge_members.last_mut() {
                Some((last, v)) if *last == e => v.push(h),
                _ => edge_members.push((e, vec![h])),
            }
        }
        let mut pod_edges: Vec<(u32, Vec<u32>)> = Vec::new();
        for &(e, _) in &edge_members {
            let pod = pod_of(e);
            match pod_edges.last_mut() {
                Some((last, v)) if *last == pod => v.push(e),
                _ => pod_edges.push((pod, vec![e])),
            }
        }
        let mut hosts: Vec<u32> = members.iter().chain(&senders).copied().collect();
        hosts.sort_unstable();
        hosts.dedup();
        let mut tree_edges: Vec<u32> = hosts.iter().map(|&h| edge_of(h)).collect();
        tree_edges.dedup();
        let mut tree_pods: Vec<u32> = tree_edges.iter().map(|&e| pod_of(e)).collect();
        tree_pods.dedup();
        Group { name, partition, members, senders, edge_members, pod_edges, tree_edges, tree_pods, root: None, cover: None, overflow: false }
    }

    /// Its members and senders, ascending, distinct.
    pub(super) fn hosts(&self) -> Vec<u32> {
        let mut hosts: Vec<u32> = self.members.iter().chain(&self.senders).copied().collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
    }

    /// Edge switches (ToRs) with members or senders, ascending.
    pub(super) fn tree_edges(&self) -> &[u32] {
        &self.tree_edges
    }
    pub(super) fn spans_edges(&self) -> bool {
        self.tree_edges.len() >= 2
    }
    pub(super) fn spans_pods(&self) -> bool {
        self.tree_pods.len() >= 2
    }
}

/// Every group's tree, the port map, and the detour routes.
pub struct McFabric {
    pub tree: FatTree,
    pub part: Partitioning,
    pub spread: Spread,
    pub groups: Vec<Group>,
    pub tables: Tables,
    /// Meta-groups at the switches of one layer over capacity (`aggregation.rs`), if on.
    pub aggregation: Option<Aggregated>,
    n_hosts: u32,
    /// Ports: edge → its pod's aggregation `j` (`[e·k/2 + j]`), aggregation → the core at its
    /// `j`-th uplink, core → pod, aggregation → the pod's edge `i`.
    pub(super) edge_up: Vec<u32>,
    pub(super) aggr_up: Vec<u32>,
    pub(super) core_down: Vec<u32>,
    pub(super) aggr_down: Vec<u32>,
    pub(super) host_down: Vec<u32>,
    /// Shortest-path hop counts to a detour's target over the links up, per target and
    /// whether the target is its whole pod (cleared when a link changes).
    routes: HashMap<(u32, bool), Vec<u32>>,
}

/// The layers of a fat tree as meta-groups see them (`aggregation.rs`): entries are
/// `tree.rs`'s, every partition holder keeping one; an edge switch's ports are its hosts, an
/// aggregation switch's its pod's edge switches.
impl LayerSource for McFabric {
    fn layer_switches(&self, layer: Layer) -> u32 {
        match layer {
            Layer::Edge => self.tree.edges(),
            Layer::Aggr => self.tree.aggrs(),
            Layer::Core => self.tree.cores(),
        }
    }

    fn layer_ports(&self, _: Layer, _: u32) -> u32 {
        self.tree.half()
    }

    fn layer_entries(&self, layer: Layer, g: usize) -> Vec<(u32, u64)> {
        let (tree, grp) = (&self.tree, &self.groups[g]);
        let gt = GroupTree::build(tree, grp.partition, &grp.hosts());
        gt.entries(tree, &self.part)
            .filter(|e| e.layer == layer)
            .map(|e| {
                // Its downstream ports: member hosts, or edge switches with members.
                let ports = grp.members.iter().fold(0u64, |m, &h| {
                    let e_h = tree.edge_of_host(h);
                    match layer {
                        Layer::Edge if e_h == e.switch => m | 1 << tree.host_port(h),
                        Layer::Aggr if tree.pod_of_edge(e_h) == e.switch / tree.half() => m | 1 << tree.edge_in_pod(e_h),
                        _ => m,
                    }
                });
                (e.switch, ports)
            })
            .collect()
    }

    /// A member host, or an edge switch with members (whichever holder of its pod sent it:
    /// a pod's edge switches get each copy from one of them).
    fn wanted(&self, _: Layer, _: Option<u32>, g: usize, d: Dest) -> bool {
        let grp = &self.groups[g];
        match d {
            Dest::Host(h) => grp.members.binary_search(&h).is_ok(),
            Dest::Edge(e) => grp.edge_members.binary_search_by_key(&e, |&(x, _)| x).is_ok(),
        }
    }
}

/// The port of `from` whose link reaches `to`, if exactly one does.
/// `fabric` names the plain fabric it needs (in the error).
pub(super) fn port_to(topo: &Topology, from: u32, to: u32, fabric: &str) -> Result<u32> {
    let mut found = topo.ports_of(from).filter(|&p| topo.ports[p as usize].to == to);
    match (found.next(), found.next()) {
        (Some(p), None) => Ok(p),
        _ => Err(bad(
            "multicast",
            format!(
                "needs the plain {fabric}'s links ({} to {} has not exactly one): remove topology.links overrides{}",
                topo.nodes[from as usize].name,
                topo.nodes[to as usize].name,
                if fabric == "fat tree" { " and remove_cores" } else { "" }
            ),
        )),
    }
}

impl McFabric {
    /// The groups' trees on `topo`, a k-ary fat tree; `senders[g]` are group g's sending hosts.
    pub fn new(spec: &MulticastSpec, topo: &Topology, k: u32, senders: &[Vec<u32>], seed: u64) -> Result<McFabric> {
        let tree = FatTree::new(k, Wiring::of(topo, k), "topology.k")?;
        if topo.n_hosts as u32 != tree.hosts() || topo.n_switches() as u32 != tree.edges() + tree.aggrs() + tree.cores() {
            return Err(bad("multicast", "needs a whole fat tree: remove topology.remove_cores"));
        }
        let rc = spec.cores_per_partition;
        let n = spec.partitions.unwrap_or(tree.cores() / rc.max(1));
        let part = Partitioning::distribute(&tree, n, rc, spec.aggrs_per_partition, "multicast")
            .map_err(|e| rename(e, &[("multicast.n", "multicast.partitions"), ("multicast.ra", "multicast.aggrs_per_partition")]))?;
        let half = tree.half();
        let nh = topo.n_hosts as u32;
        let edge_node = |e: u32| nh + e;
        let aggr_node = |a: u32| nh + tree.edges() + a;
        let core_node = |c: u32| nh + tree.edges() + tree.aggrs() + c;
        for (node, role) in [(edge_node(0), Role::Tor), (aggr_node(0), Role::Agg), (core_node(0), Role::Core)] {
            if topo.role(node) != role {
                return Err(bad("multicast", "needs topology.kind = \"fat_tree\""));
            }
        }
        let mut edge_up = Vec::new();
        let mut aggr_down = Vec::new();
        for e in 0..tree.edges() {
            let pod = tree.pod_of_edge(e);
            for j in 0..half {
                edge_up.push(port_to(topo, edge_node(e), aggr_node(pod * half + j), "fat tree")?);
            }
        }
        let mut aggr_up = Vec::new();
        for a in 0..tree.aggrs() {
            let pod = a / half;
            for j in 0..half {
                aggr_up.push(port_to(topo, aggr_node(a), core_node(tree.core_above(pod, a % half, j)), "fat tree")?);
            }
            for i in 0..half {
                aggr_down.push(port_to(topo, aggr_node(a), edge_node(pod * half + i), "fat tree")?);
            }
        }
        let mut core_down = Vec::new();
        for c in 0..tree.cores() {
            for pod in 0..tree.pods() {
                core_down.push(port_to(topo, core_node(c), aggr_node(pod * half + tree.aggr_below(c, pod)), "fat tree")?);
            }
        }
        let mut tables = Tables::new(&tree, spec.capacity);
        let mut groups = Vec::with_capacity(spec.groups.len());
        // Groups go to partitions round robin (`assign.rs` balances them by size at scale).
        for (g, gs) in spec.groups.iter().enumerate() {
            let members = spec.members(g, nh, seed)?;
            let mut senders_g = senders.get(g).cloned().unwrap_or_default();
            senders_g.sort_unstable();
            senders_g.dedup();
            let partition = g as u32 % part.n;
            let mut grp = Group::lay_out(gs.name.clone(), partition, members, senders_g, |h| tree.edge_of_host(h), |e| tree.pod_of_edge(e));
            let hosts = grp.hosts();
            // Its entries, as the control plane counts them (every holder keeps one).
            let gt = GroupTree::build(&tree, partition, &hosts);
            for entry in gt.entries(&tree, &part) {
                grp.overflow |= tables.add(&entry) > spec.capacity;
            }
            groups.push(grp);
        }
        Ok(McFabric {
            tree,
            part,
            spread: spec.spread,
            groups,
            tables,
            aggregation: None,
            n_hosts: nh,
            edge_up,
            aggr_up,
            core_down,
            aggr_down,
            host_down: topo.host_down_port.clone(),
            routes: HashMap::new(),
        })
    }

    /// The layer and index of switch `node`.
    pub fn switch(&self, node: u32) -> Switch {
        let i = node - self.n_hosts;
        let (e, a) = (self.tree.edges(), self.tree.aggrs());
        if i < e {
            Switch::Edge(i)
        } else if i < e + a {
            Switch::Aggr(i - e)
        } else {
            Switch::Core(i - e - a)
        }
    }

    pub fn node(&self, s: Switch) -> u32 {
        let (e, a) = (self.tree.edges(), self.tree.aggrs());
        self.n_hosts
            + match s {
                Switch::Edge(i) => i,
                Switch::Aggr(i) => e + i,
                Switch::Core(i) => e + a + i,
            }
    }

    /// The aggregation switches (index in `pod`) a packet of group `g` may go up to.
    fn up_aggrs(&self, g: &Group, pod: u32) -> Vec<u32> {
        match g.root {
            Some(Root::Core(c)) => vec![self.tree.aggr_below(c, pod)],
            Some(Root::Aggr(a)) => vec![a],
            Some(Root::Cover) | None => self.part.aggrs(pod, g.partition).to_vec(),
        }
    }

    /// The cores (with their uplink index `j`) aggregation switch `a` may send group `g` up to.
    fn up_cores(&self, g: &Group, a: u32) -> Vec<(u32, u32)> {
        let (pod, ia) = (a / self.tree.half(), a % self.tree.half());
        (0..self.tree.half())
            .map(|j| (self.tree.core_above(pod, ia, j), j))
            .filter(|&(c, _)| match g.root {
                Some(Root::Core(r)) => c == r,
                _ => self.part.core_partition[c as usize] == g.partition,
            })
            .collect()
    }

    /// Pick among `n` candidates by `choice`, the first one whose port is up; `None` if none is.
    pub(super) fn pick(n: usize, choice: u64, port_up: impl Fn(usize) -> bool) -> (usize, bool) {
        let start = (choice % n as u64) as usize;
        for i in 0..n {
            let c = (start + i) % n;
            if port_up(c) {
                return (c, true);
            }
        }
        (start, false)
    }

    /// The copies switch `node` sends of datagram `d`, travelling in `mode`; `up(port)` says
    /// whether a port's link is up. Appends to `out`.
    pub fn replicate(&self, d: Datagram, node: u32, mode: Mode, up: &dyn Fn(u32) -> bool, out: &mut Vec<Out>) {
        let Datagram { group: g, src, choice } = d;
        let grp = &self.groups[g];
        if let Some(cover) = &grp.cover {
            cover.replicate(self, grp, src, (node, mode), up, out);
            return;
        }
        let t = &self.tree;
        let half = t.half();
        let (src_edge, src_pod) = (t.edge_of_host(src), t.pod_of_host(src));
        let to_edge = |a: u32, e: u32, out: &mut Vec<Out>| {
            let p = self.aggr_down[(a * half + t.edge_in_pod(e)) as usize];
            out.push(if up(p) { Out::Port(p) } else { Out::Detour { target: self.node(Switch::Edge(e)), resume: Mode::Down } });
        };
        match self.switch(node) {
            Switch::Edge(e) => {
                if let Some(mask) = self.aggregated(Layer::Edge, e, g) {
                    // The meta-group's entry: every host port of it but the one the copy came in by.
                    for h in (0..half).filter(|i| mask >> i & 1 == 1).map(|i| e * half + i).filter(|&h| h != src) {
                        out.push(Out::Port(self.host_down[h as usize]));
                    }
                } else if let Some((_, hosts)) = grp.edge_members.iter().find(|(x, _)| *x == e) {
                    for &h in hosts.iter().filter(|&&h| h != src) {
                        out.push(Out::Port(self.host_down[h as usize]));
                    }
                }
                if mode == Mode::Up && e == src_edge && grp.spans_edges() {
                    let pod = t.pod_of_edge(e);
                    let aggrs = self.up_aggrs(grp, pod);
                    let port = |i: usize| self.edge_up[(e * half + aggrs[i]) as usize];
                    let (i, ok) = Self::pick(aggrs.len(), choice, |i| up(port(i)));
                    out.push(if ok { Out::Port(port(i)) } else { Out::Detour { target: self.node(Switch::Aggr(pod * half + aggrs[i])), resume: Mode::Up } });
                }
            }
            Switch::Aggr(a) => {
                let pod = a / half;
                if let Some(mask) = self.aggregated(Layer::Aggr, a, g) {
                    for e in (0..half).filter(|i| mask >> i & 1 == 1).map(|i| pod * half + i).filter(|&e| e != src_edge) {
                        to_edge(a, e, out);
                    }
                } else if let Some((_, edges)) = grp.pod_edges.iter().find(|(p, _)| *p == pod) {
                    for &e in edges.iter().filter(|&&e| e != src_edge) {
                        to_edge(a, e, out);
                    }
                }
                if mode == Mode::Up && pod == src_pod && grp.spans_pods() {
                    let cores = self.up_cores(grp, a);
                    if cores.is_empty() {
                        return; // an aggregation switch off the tree (not reached)
                    }
                    let port = |i: usize| self.aggr_up[(a * half + cores[i].1) as usize];
                    let (i, ok) = Self::pick(cores.len(), choice >> 32, |i| up(port(i)));
                    out.push(if ok { Out::Port(port(i)) } else { Out::Detour { target: self.node(Switch::Core(cores[i].0)), resume: Mode::Down } });
                }
            }
            Switch::Core(c) => {
                for &(pod, _) in grp.pod_edges.iter().filter(|&&(p, _)| p != src_pod) {
                    let p = self.core_down[(c * t.pods() + pod) as usize];
                    let below = self.node(Switch::Aggr(pod * half + t.aggr_below(c, pod)));
                    out.push(if up(p) { Out::Port(p) } else { Out::Detour { target: below, resume: Mode::Down } });
                }
            }
        }
    }

    /// The ports aggregated switch `switch` of `layer` sends group `g` out of: its meta-group's
    /// entry (`aggregation.rs`), or `None` where the group keeps its own entry.
    fn aggregated(&self, layer: Layer, switch: u32, g: usize) -> Option<u64> {
        self.aggregation.as_ref().and_then(|a| a.forwarding(layer, switch, g))
    }

    /// The links changed: detour routes are recomputed when next asked.
    pub fn links_changed(&mut self) {
        self.routes.clear();
    }

    /// Whether a detour toward `target`, going on in `resume` mode, may end at this switch:
    /// at `target`, or, for a detour down to an aggregation switch (a core's, tagged with the
    /// pod), at any aggregation switch of its pod (§3.3.1: "a pod identifier").
    pub fn arrived(&self, node: u32, target: u32, resume: Mode) -> bool {
        node == target || self.pod_target(target, resume).is_some_and(|pod| matches!(self.switch(node), Switch::Aggr(a) if a / self.tree.half() == pod))
    }

    /// The pod a detour toward `target` in `resume` mode is tagged with, if it is a pod's.
    fn pod_target(&self, target: u32, resume: Mode) -> Option<u32> {
        match (self.switch(target), resume) {
            (Switch::Aggr(a), Mode::Down) => Some(a / self.tree.half()),
            _ => None,
        }
    }

    /// The port `node` forwards a detoured packet out of toward switch `target` (its pod, see
    /// [`McFabric::arrived`]) by a shortest path over the switch links up, lowest port first,
    /// and the hops left from `node`; `None` when `target` cannot be reached.
    pub fn next_hop(&mut self, topo: &Topology, node: u32, target: u32, resume: Mode, up: &dyn Fn(u32) -> bool) -> Option<(u32, u32)> {
        let pod = self.pod_target(target, resume);
        // A pod's aggregation switches are consecutive nodes.
        let (first, count) = match pod {
            Some(p) => (self.node(Switch::Aggr(p * self.tree.half())), self.tree.half()),
            None => (target, 1),
        };
        let dist = self.routes.entry((target, pod.is_some())).or_insert_with(|| {
            let sources: Vec<u32> = (first..first + count).collect();
            detour_distances(topo, &sources, up, |_| true)
        });
        detour_port(topo, dist, node, up, |_| true)
    }

    /// Whether group `g`'s tree through `root` avoids every failed link (`up`).
    fn works(&self, g: &Group, root: Root, up: &dyn Fn(u32) -> bool) -> bool {
        if root == Root::Cover {
            return false; // not a single root
        }
        let t = &self.tree;
        let half = t.half();
        let link_up = |p: u32, q: u32| up(p) && up(q);
        let aggr_of = |pod: u32| match root {
            Root::Core(c) => t.aggr_below(c, pod),
            Root::Aggr(a) => a,
            Root::Cover => unreachable!("checked above"),
        };
        let edges_ok = g.tree_edges.iter().all(|&e| {
            let a = t.pod_of_edge(e) * half + aggr_of(t.pod_of_edge(e));
            link_up(self.aggr_down[(a * half + t.edge_in_pod(e)) as usize], self.edge_up[(e * half + aggr_of(t.pod_of_edge(e))) as usize])
        });
        let pods_ok = match root {
            Root::Core(c) => g.tree_pods.iter().all(|&pod| {
                let a = pod * half + t.aggr_below(c, pod);
                let j = (0..half).find(|&j| t.core_above(pod, a % half, j) == c).expect("the aggregation switch below a core reaches it");
                link_up(self.core_down[(c * t.pods() + pod) as usize], self.aggr_up[(a * half + j) as usize])
            }),
            Root::Aggr(_) | Root::Cover => true,
        };
        edges_ok && pods_ok
    }

    /// The controller's reconstruction (§3.3.2): every group whose tree crosses a failed link
    /// moves to the first root (holders of its partition first, then any switch of the layer)
    /// whose tree avoids them all; where none does, a group spanning pods moves to a tree over
    /// several cores found by set cover ([`Cover::solve`]), or a group inside one pod to several of
    /// its aggregation switches ([`Cover::solve_pod`]); a group whose holders all work
    /// again goes back to them. Returns (groups moved, groups left detouring).
    pub fn rebuild(&mut self, up: &dyn Fn(u32) -> bool) -> (u32, u32) {
        let (mut moved, mut stuck) = (0, 0);
        for g in 0..self.groups.len() {
            let grp = &self.groups[g];
            if !grp.spans_edges() {
                continue;
            }
            let (holders, others): (Vec<Root>, Vec<Root>) = if grp.spans_pods() {
                let h: Vec<Root> = self.part.cores(grp.partition).iter().map(|&c| Root::Core(c)).collect();
                let o = (0..self.tree.cores()).map(Root::Core).filter(|r| !h.contains(r)).collect();
                (h, o)
            } else {
                let pod = grp.tree_pods[0];
                let h: Vec<Root> = self.part.aggrs(pod, grp.partition).iter().map(|&a| Root::Aggr(a)).collect();
                let o = (0..self.tree.half()).map(Root::Aggr).filter(|r| !h.contains(r)).collect();
                (h, o)
            };
            let (new, cover) = if holders.iter().all(|&r| self.works(grp, r, up)) {
                (None, None)
            } else {
                match holders.iter().chain(&others).copied().find(|&r| self.works(grp, r, up)) {
                    Some(r) => (Some(r), None),
                    // Set cover: over cores for a group spanning pods, else over its pod's
                    // aggregation switches.
                    None => match if grp.spans_pods() { Cover::solve(self, grp, up) } else { Cover::solve_pod(self, grp, up) } {
                        Some(c) => (Some(Root::Cover), Some(c)),
                        None => {
                            stuck += 1;
                            (grp.root, grp.cover.clone())
                        }
                    },
                }
            };
            if new != grp.root || cover != grp.cover {
                moved += 1;
                self.groups[g].root = new;
                self.groups[g].cover = cover;
            }
        }
        (moved, stuck)
    }

    /// The per-switch tables of the initial trees, with the groups that overflowed.
    pub fn table_summary(&self) -> Value {
        table_summary(&self.tables, &self.groups)
    }
}

/// Hop counts from every node to the nearest of `sources` over the switch links up in both
/// directions (`u32::MAX`: unreachable), a detour's unicast routes; `transit(node)`: whether a
/// path may pass through a node (its own distance is kept either way).
pub(super) fn detour_distances(topo: &Topology, sources: &[u32], up: &dyn Fn(u32) -> bool, transit: impl Fn(u32) -> bool) -> Vec<u32> {
    let mut d = vec![u32::MAX; topo.nodes.len()];
    for &s in sources {
        d[s as usize] = 0;
    }
    let mut queue = std::collections::VecDeque::from(sources.to_vec());
    while let Some(x) = queue.pop_front() {
        for p in topo.ports_of(x) {
            let y = topo.ports[p as usize].to;
            // Both directions of the link: the hop taken is y -> x.
            let back = topo.links[topo.link_of[p as usize] as usize].iter().copied().find(|&q| q != p).unwrap_or(p);
            if !topo.is_host(y) && d[y as usize] == u32::MAX && up(p) && up(back) {
                d[y as usize] = d[x as usize] + 1;
                if transit(y) {
                    queue.push_back(y);
                }
            }
        }
    }
    d
}

/// The port `node` forwards a detoured packet out of along `dist` ([`detour_distances`], with the
/// same `transit`: the next node is the target or one a path may pass through), lowest port
/// first, and the hops left from `node`; `None` at the target or where it is unreachable.
pub(super) fn detour_port(topo: &Topology, dist: &[u32], node: u32, up: &dyn Fn(u32) -> bool, transit: impl Fn(u32) -> bool) -> Option<(u32, u32)> {
    let here = dist[node as usize];
    if here == u32::MAX || here == 0 {
        return None;
    }
    topo.ports_of(node)
        .find(|&p| {
            let y = topo.ports[p as usize].to;
            !topo.is_host(y) && up(p) && dist[y as usize] == here - 1 && (here == 1 || transit(y))
        })
        .map(|p| (p, here))
}

/// `tables` as the summary gives them, naming the `groups` that overflowed one.
pub(super) fn table_summary(tables: &Tables, groups: &[Group]) -> Value {
    let c = tables.capacity;
    json!({
        "capacity": c,
        "core": layer_stats(&tables.core, c),
        "aggr": layer_stats(&tables.aggr, c),
        "edge": layer_stats(&tables.edge, c),
        "overflow_groups": groups.iter().filter(|g| g.overflow).map(|g| g.name.clone()).collect::<Vec<_>>(),
    })
}

/// `e` with its field renamed (the control plane names Table 1's symbols; a scenario its keys).
fn rename(e: crate::error::Error, names: &[(&str, &str)]) -> crate::error::Error {
    match e {
        crate::error::Error::Scenario { field, message } => {
            let field = names.iter().find(|(from, _)| *from == field).map_or(field, |(_, to)| to.to_string());
            crate::error::Error::Scenario { field, message }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn k4() -> Topology {
        crate::topology::fat_tree::build(&crate::topology::fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap()
    }

    fn fabric(json: &str, senders: &[Vec<u32>]) -> (Topology, McFabric) {
        let topo = k4();
        let spec: MulticastSpec = serde_json::from_str(json).unwrap();
        let f = McFabric::new(&spec, &topo, 4, senders, 1).unwrap();
        (topo, f)
    }

    /// k = 4, n = 4 partitions on one core each. Group 0 (partition 0, core 0; aggregation 0 of
    /// every pod) with members 1 (edge 0), 5 and 7 (edge 2 and 3, pod 1); sender 0 (edge 0).
    /// By hand: edge 0 delivers to host 1 and sends up to aggregation 0; that one has no
    /// other member edge in pod 0 and sends up to core 0; core 0 sends to pod 1 only; pod 1's
    /// aggregation 0 sends to edges 2 and 3, which deliver to 5 and 7: 3 copies made beyond
    /// the original (edge 0: 2 out, aggregation 2: 2 out) and 3 deliveries.
    #[test]
    fn the_tree_by_hand() {
        let (topo, f) = fabric(r#"{"groups": [{"name": "g", "members": [1, 5, 7]}]}"#, &[vec![0]]);
        let all_up = |_: u32| true;
        let run = |node: u32, mode: Mode| {
            let mut out = Vec::new();
            f.replicate(Datagram { group: 0, src: 0, choice: 0 }, node, mode, &all_up, &mut out);
            out.iter().map(|o| o.name(&topo)).collect::<Vec<_>>()
        };
        let n = |name: &str| topo.node_named(name).unwrap();
        assert_eq!(run(n("tor0"), Mode::Up), ["h1", "agg0"]);
        assert_eq!(run(n("agg0"), Mode::Up), ["core0"]);
        assert_eq!(run(n("core0"), Mode::Down), ["agg2"]);
        assert_eq!(run(n("agg2"), Mode::Down), ["tor2", "tor3"]);
        assert_eq!(run(n("tor2"), Mode::Down), ["h5"]);
        assert_eq!(run(n("tor3"), Mode::Down), ["h7"]);
        // Entries: edges 0, 2, 3; aggregation 0 of pods 0 and 1; core 0.
        assert_eq!(f.tables.edge.iter().sum::<u32>(), 3);
        assert_eq!(f.tables.aggr.iter().sum::<u32>(), 2);
        assert_eq!(f.tables.core, vec![1, 0, 0, 0]);
    }

    /// core0 -> agg2 (pod 1) fails: core 0 detours toward agg2, by agg0 (pod 0, the lowest
    /// port) and core 1 (the other core of group 0): 3 hops. After the rebuild the group's
    /// root is core 1, which reaches agg0 and agg2 over links that are up.
    #[test]
    fn a_core_aggregation_failure_detours_three_hops_then_moves_the_root() {
        let (topo, mut f) = fabric(r#"{"groups": [{"name": "g", "members": [1, 5, 7]}]}"#, &[vec![0]]);
        let n = |name: &str| topo.node_named(name).unwrap();
        let failed = topo.links_between(n("core0"), n("agg2"))[0];
        let [p, q] = topo.links[failed as usize];
        let up = move |x: u32| x != p && x != q;
        let mut out = Vec::new();
        f.replicate(Datagram { group: 0, src: 0, choice: 0 }, n("core0"), Mode::Down, &up, &mut out);
        assert_eq!(out, [Out::Detour { target: n("agg2"), resume: Mode::Down }]);
        let (first, hops) = f.next_hop(&topo, n("core0"), n("agg2"), Mode::Down, &up).unwrap();
        assert_eq!((topo.ports[first as usize].to, hops), (n("agg0"), 3));
        let (second, _) = f.next_hop(&topo, n("agg0"), n("agg2"), Mode::Down, &up).unwrap();
        assert_eq!(topo.ports[second as usize].to, n("core1"));
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.groups[0].root, Some(Root::Core(1)));
        out.clear();
        f.replicate(Datagram { group: 0, src: 0, choice: 0 }, n("agg0"), Mode::Up, &up, &mut out);
        assert_eq!(out.len(), 1);
        let Out::Port(p) = out[0] else { panic!("a port") };
        assert_eq!(topo.ports[p as usize].to, n("core1"));
        // The link back: the group returns to its partition's core.
        assert_eq!(f.rebuild(&|_| true), (1, 0));
        assert_eq!(f.groups[0].root, None);
    }

    /// agg2 -> tor3 (pod 1) fails: agg2 detours toward tor3 by tor2 and agg3: 3 hops.
    #[test]
    fn an_aggregation_edge_failure_detours_through_the_pod() {
        let (topo, mut f) = fabric(r#"{"groups": [{"name": "g", "members": [1, 5, 7]}]}"#, &[vec![0]]);
        let n = |name: &str| topo.node_named(name).unwrap();
        let failed = topo.links_between(n("agg2"), n("tor3"))[0];
        let [p, q] = topo.links[failed as usize];
        let up = move |x: u32| x != p && x != q;
        let mut out = Vec::new();
        f.replicate(Datagram { group: 0, src: 0, choice: 0 }, n("agg2"), Mode::Down, &up, &mut out);
        assert_eq!(out[1], Out::Detour { target: n("tor3"), resume: Mode::Down });
        let (first, hops) = f.next_hop(&topo, n("agg2"), n("tor3"), Mode::Down, &up).unwrap();
        assert_eq!((topo.ports[first as usize].to, hops), (n("tor2"), 3));
        // No single core reaches tor3 through agg2's replacement in pod 1 and agg0 in pod 0
        // at once? Core 2 does: it reaches agg1 and agg3, whose links are all up.
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.groups[0].root, Some(Root::Core(2)));
    }

    /// core0 - agg2 and core1 - agg2 both fail: no core reaches pod 1 in three hops (on the
    /// standard wiring only cores 0 and 1 reach agg2, and agg3's cores 2 and 3 are reached only
    /// from aggregation switches 1 of the other pods), so the detour is the paper's 5-hop one,
    /// tagged with pod 1. By hand, hop counts to pod 1's aggregation switches over the links up:
    /// core2, core3, tor2, tor3 1; agg1 2; tor0 3; agg0 4; core0 5: core0 -> agg0 -> tor0 ->
    /// agg1 -> core2 -> agg3 (§3.3.1's coreSx → aggrSj.c → edgeSj.d → aggrSj.e → coreSy →
    /// aggrSi.b). The rebuild moves the group to core 2, whose tree uses agg1 and agg3.
    #[test]
    fn without_a_three_hop_detour_the_five_hop_one_is_taken() {
        let (topo, mut f) = fabric(r#"{"groups": [{"name": "g", "members": [1, 5, 7]}]}"#, &[vec![0]]);
        let n = |name: &str| topo.node_named(name).unwrap();
        let mut down = Vec::new();
        for core in ["core0", "core1"] {
            down.extend(topo.links[topo.links_between(n(core), n("agg2"))[0] as usize]);
        }
        let up = move |x: u32| !down.contains(&x);
        let (mut at, mut path) = (n("core0"), vec!["core0".to_string()]);
        let (_, hops) = f.next_hop(&topo, at, n("agg2"), Mode::Down, &up).unwrap();
        while !f.arrived(at, n("agg2"), Mode::Down) {
            let (p, _) = f.next_hop(&topo, at, n("agg2"), Mode::Down, &up).unwrap();
            at = topo.ports[p as usize].to;
            path.push(topo.nodes[at as usize].name.clone());
        }
        assert_eq!(hops, 5);
        assert_eq!(path, ["core0", "agg0", "tor0", "agg1", "core2", "agg3"]);
        // agg3 takes the pod tag off and sends down to pod 1's member edges.
        let mut out = Vec::new();
        f.replicate(Datagram { group: 0, src: 0, choice: 0 }, n("agg3"), Mode::Down, &up, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.groups[0].root, Some(Root::Core(2)));
    }

    #[test]
    fn the_fabric_must_be_a_whole_fat_tree() {
        let topo = crate::topology::fat_tree::build(&crate::topology::fat_tree::FatTree { k: 4, remove_cores: 1 }, Rate(1), Rate(1), 0).unwrap();
        let spec: MulticastSpec = serde_json::from_str(r#"{"groups": [{"name": "g", "members": 2}]}"#).unwrap();
        let e = McFabric::new(&spec, &topo, 4, &[], 1).err().unwrap().to_string();
        assert!(e.starts_with("multicast: needs a whole fat tree"), "{e}");
        let spec: MulticastSpec = serde_json::from_str(r#"{"partitions": 3, "groups": [{"name": "g", "members": 2}]}"#).unwrap();
        let e = McFabric::new(&spec, &k4(), 4, &[], 1).err().unwrap().to_string();
        assert!(e.starts_with("multicast.partitions: "), "{e}");
    }
}
