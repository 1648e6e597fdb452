//! Tree reconstruction over several cores by set cover (Li & Freedman §3.3.2): "if multiple
//! failures happen, it is possible that no single core switch can reach all group members ...
//! the packets of the group have to be forwarded to multiple core switches during upstream
//! routing, and some pods may need more than one aggregation switch to receive downstream
//! packets. We can reconstruct the multicast tree by solving a set cover problem".
//!
//! The sets, as built here: the elements are the group's member edge switches (less an edge
//! whose every sender sits on it: its members get their copies there); a core covers the member
//! edges it reaches over links that are up, down through the one aggregation switch below it in
//! each pod, and it is a candidate only if every sender's edge reaches it over links that are up
//! (through the aggregation switch below it in the sender's pod). The cover is the greedy one
//! (the core covering the most uncovered edges, the lowest index on ties, until none is left):
//! within a factor ln(edges) of the smallest, which is what the paper's reference [29] offers.
//! The paper does not say which algorithm; greedy is ours.
//!
//! The tree it gives, for a packet from a sender in pod `s`:
//! - the sender's edge delivers to its own members and sends one copy up to each aggregation
//!   switch of pod `s` below a chosen core;
//! - such an aggregation switch sends a copy down to the member edges of pod `s` it was given
//!   (its *feed*) and one up to each chosen core above it;
//! - a chosen core sends a copy to each aggregation switch it feeds in the other pods, which
//!   sends one down to each edge of its feed.
//!
//! A group inside one pod ([`Cover::solve_pod`]) is covered the same way by the pod's
//! aggregation switches: an aggregation switch covers the member edges its links down reach, and
//! is a candidate if every sender's edge reaches it. The sender's edge sends one copy up to each
//! chosen switch, which sends down to the member edges it took; no core is involved.
//!
//! Two chosen cores never feed the same aggregation switch (the second would reach no edge the
//! first does not), so every member edge gets one copy. A copy that meets a link failed after
//! the reconstruction detours as on a single-root tree.

use super::fabric::{Group, McFabric, Mode, Out, Switch};

/// One aggregation switch a chosen core sends a group's packets down to, and the member edge
/// switches it sends them on to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feed {
    pub pod: u32,
    /// Index in the pod.
    pub aggr: u32,
    /// The chosen core feeding it; `None` in a cover over one pod's aggregation switches.
    pub core: Option<u32>,
    /// Edge switches (global index), ascending.
    pub edges: Vec<u32>,
}

/// A group's tree over several cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cover {
    /// The chosen cores, in the order the greedy cover took them.
    pub cores: Vec<u32>,
    pub feeds: Vec<Feed>,
}

/// Whether the links of the fabric are up, by index arithmetic over `f`'s port maps.
struct Links<'a> {
    f: &'a McFabric,
    up: &'a dyn Fn(u32) -> bool,
}

impl Links<'_> {
    /// The uplink index `j` of aggregation switch `a` (in `pod`) that reaches core `c`.
    fn uplink(&self, pod: u32, a: u32, c: u32) -> u32 {
        let t = &self.f.tree;
        (0..t.half()).find(|&j| t.core_above(pod, a, j) == c).expect("the aggregation switch below a core reaches it")
    }
    /// Core `c` and the aggregation switch below it in `pod`, both directions.
    fn core_pod(&self, c: u32, pod: u32) -> bool {
        let t = &self.f.tree;
        let a = t.aggr_below(c, pod);
        let down = self.f.core_down[(c * t.pods() + pod) as usize];
        let upl = self.f.aggr_up[((pod * t.half() + a) * t.half() + self.uplink(pod, a, c)) as usize];
        (self.up)(down) && (self.up)(upl)
    }
    /// Aggregation switch `a` (index in the pod of edge `e`) and edge `e`, both directions.
    fn aggr_edge(&self, a: u32, e: u32) -> bool {
        let t = &self.f.tree;
        let ag = t.pod_of_edge(e) * t.half() + a;
        (self.up)(self.f.aggr_down[(ag * t.half() + t.edge_in_pod(e)) as usize]) && (self.up)(self.f.edge_up[(e * t.half() + a) as usize])
    }
    /// Whether core `c` reaches edge `e` down the tree.
    fn reaches(&self, c: u32, e: u32) -> bool {
        let pod = self.f.tree.pod_of_edge(e);
        self.core_pod(c, pod) && self.aggr_edge(self.f.tree.aggr_below(c, pod), e)
    }
}

/// The greedy set cover (the paper's reference [29]; which algorithm is ours): repeatedly the
/// set (of `sets`, in the order given) that `covers` the most elements not yet covered, the first
/// one on ties, until none is left. Returns each chosen set with the elements it took, in the
/// order taken; `None` when some element is in no set. Within a factor ln(elements) of the
/// smallest cover. Used over cores (a fat tree's groups spanning pods), over a pod's aggregation
/// switches (a group inside one pod) and over VL2's aggregation switches (`vl2.rs`).
pub fn greedy(elements: &[u32], sets: &[u32], covers: impl Fn(u32, u32) -> bool) -> Option<Vec<(u32, Vec<u32>)>> {
    let mut uncovered = elements.to_vec();
    let mut chosen: Vec<(u32, Vec<u32>)> = Vec::new();
    while !uncovered.is_empty() {
        let gain = |s: u32| uncovered.iter().filter(|&&e| covers(s, e)).count();
        let (n, s) = sets
            .iter()
            .enumerate()
            .filter(|&(_, s)| !chosen.iter().any(|(c, _)| c == s))
            .map(|(i, &s)| (gain(s), std::cmp::Reverse(i), s))
            .max_by_key(|&(n, i, _)| (n, i))
            .map(|(n, _, s)| (n, s))?;
        if n == 0 {
            return None;
        }
        let (took, left): (Vec<u32>, Vec<u32>) = uncovered.iter().partition(|&&e| covers(s, e));
        chosen.push((s, took));
        uncovered = left;
    }
    Some(chosen)
}

impl Cover {
    /// The greedy set cover of group `g`'s member edges by cores, over the links `up` says are
    /// up; `None` when some member edge is reached by no candidate core.
    pub fn solve(f: &McFabric, g: &Group, up: &dyn Fn(u32) -> bool) -> Option<Cover> {
        let t = &f.tree;
        let links = Links { f, up };
        let sender_edges: Vec<u32> = {
            let mut v: Vec<u32> = g.senders.iter().map(|&h| t.edge_of_host(h)).collect();
            v.dedup();
            v
        };
        let uncovered: Vec<u32> = g.edge_members.iter().map(|&(e, _)| e).filter(|&e| sender_edges != [e]).collect();
        let candidate = |c: u32| {
            sender_edges.iter().all(|&e| {
                let pod = t.pod_of_edge(e);
                links.core_pod(c, pod) && links.aggr_edge(t.aggr_below(c, pod), e)
            })
        };
        let candidates: Vec<u32> = (0..t.cores()).filter(|&c| candidate(c)).collect();
        let mut cover = Cover { cores: Vec::new(), feeds: Vec::new() };
        for (c, took) in greedy(&uncovered, &candidates, |c, e| links.reaches(c, e))? {
            cover.cores.push(c);
            for e in took {
                let (pod, aggr) = (t.pod_of_edge(e), t.aggr_below(c, t.pod_of_edge(e)));
                match cover.feeds.iter_mut().find(|fd| fd.pod == pod && fd.aggr == aggr) {
                    Some(fd) => fd.edges.push(e),
                    None => cover.feeds.push(Feed { pod, aggr, core: Some(c), edges: vec![e] }),
                }
            }
        }
        Some(cover)
    }

    /// The greedy set cover of a group inside one pod (no single working aggregation switch of
    /// the pod reaches all its member edges): the elements are its member edges (less an edge
    /// whose every sender sits on it), an aggregation switch of the pod covers those its links
    /// down reach and is a candidate if every sender's edge reaches it; `None` when some member
    /// edge is reached by no candidate.
    pub fn solve_pod(f: &McFabric, g: &Group, up: &dyn Fn(u32) -> bool) -> Option<Cover> {
        let t = &f.tree;
        let links = Links { f, up };
        let pod = *g.tree_pods.first()?;
        let mut sender_edges: Vec<u32> = g.senders.iter().map(|&h| t.edge_of_host(h)).collect();
        sender_edges.dedup();
        let elements: Vec<u32> = g.edge_members.iter().map(|&(e, _)| e).filter(|&e| sender_edges != [e]).collect();
        let candidates: Vec<u32> = (0..t.half()).filter(|&a| sender_edges.iter().all(|&e| links.aggr_edge(a, e))).collect();
        let chosen = greedy(&elements, &candidates, |a, e| links.aggr_edge(a, e))?;
        Some(Cover { cores: Vec::new(), feeds: chosen.into_iter().map(|(aggr, edges)| Feed { pod, aggr, core: None, edges }).collect() })
    }

    /// The copies switch `node` sends of a packet of group `g` from host `src`, travelling in
    /// `mode` (see the module comment). Appends to `out`.
    pub fn replicate(&self, f: &McFabric, g: &Group, src: u32, (node, mode): (u32, Mode), up: &dyn Fn(u32) -> bool, out: &mut Vec<Out>) {
        let t = &f.tree;
        let half = t.half();
        let (src_edge, src_pod) = (t.edge_of_host(src), t.pod_of_host(src));
        let to_edges = |a: u32, fd: &Feed, out: &mut Vec<Out>| {
            for &e in fd.edges.iter().filter(|&&e| e != src_edge) {
                let p = f.aggr_down[(a * half + t.edge_in_pod(e)) as usize];
                out.push(if up(p) { Out::Port(p) } else { Out::Detour { target: f.node(Switch::Edge(e)), resume: Mode::Down } });
            }
        };
        match f.switch(node) {
            Switch::Edge(e) => {
                if let Some((_, hosts)) = g.edge_members.iter().find(|(x, _)| *x == e) {
                    for &h in hosts.iter().filter(|&&h| h != src) {
                        out.push(Out::Port(f.host_down[h as usize]));
                    }
                }
                if mode == Mode::Up && e == src_edge {
                    // Below the chosen cores, and (a cover inside one pod) the chosen switches.
                    let own = self.feeds.iter().filter(|fd| fd.pod == src_pod && fd.core.is_none()).map(|fd| fd.aggr);
                    let mut aggrs: Vec<u32> = self.cores.iter().map(|&c| t.aggr_below(c, src_pod)).chain(own).collect();
                    aggrs.sort_unstable();
                    aggrs.dedup();
                    for a in aggrs {
                        let p = f.edge_up[(e * half + a) as usize];
                        out.push(if up(p) { Out::Port(p) } else { Out::Detour { target: f.node(Switch::Aggr(src_pod * half + a)), resume: Mode::Up } });
                    }
                }
            }
            Switch::Aggr(a) => {
                let (pod, ia) = (a / half, a % half);
                let mine = self.feeds.iter().find(|fd| fd.pod == pod && fd.aggr == ia);
                match (mode, mine) {
                    (Mode::Up, _) => {
                        if let Some(fd) = mine {
                            to_edges(a, fd, out);
                        }
                        for &c in self.cores.iter().filter(|&&c| t.aggr_below(c, pod) == ia) {
                            let j = (0..half).find(|&j| t.core_above(pod, ia, j) == c).expect("the aggregation switch below a core reaches it");
                            let p = f.aggr_up[(a * half + j) as usize];
                            out.push(if up(p) { Out::Port(p) } else { Out::Detour { target: f.node(Switch::Core(c)), resume: Mode::Down } });
                        }
                    }
                    (Mode::Down, Some(fd)) => to_edges(a, fd, out),
                    // Reached by a pod-tagged detour: the feeds of this pod whose core lost
                    // its link here.
                    (Mode::Down, None) => {
                        for fd in self.feeds.iter().filter(|fd| fd.pod == pod && fd.core.is_some_and(|c| !up(f.core_down[(c * t.pods() + pod) as usize]))) {
                            to_edges(a, fd, out);
                        }
                    }
                }
            }
            Switch::Core(c) => {
                for fd in self.feeds.iter().filter(|fd| fd.core == Some(c) && fd.pod != src_pod) {
                    let p = f.core_down[(c * t.pods() + fd.pod) as usize];
                    out.push(if up(p) { Out::Port(p) } else { Out::Detour { target: f.node(Switch::Aggr(fd.pod * half + fd.aggr)), resume: Mode::Down } });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fabric::{Datagram, Root};
    use crate::multicast::spec::MulticastSpec;
    use crate::topology::fat_tree::{build, FatTree};
    use crate::units::Rate;

    /// Standard k = 4, one group sent by host 0 to hosts 1, 5 and 9, and the directed links
    /// (both ways) between each pair of switches named, to be taken down.
    fn group_with_links_down(pairs: &[(&str, &str)]) -> (crate::topology::Topology, McFabric, Vec<u32>) {
        let topo = build(&FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let spec: MulticastSpec = serde_json::from_str(r#"{"groups": [{"name": "g", "members": [1, 5, 9]}]}"#).unwrap();
        let f = McFabric::new(&spec, &topo, 4, &[vec![0]], 1).unwrap();
        let n = |name: &str| topo.node_named(name).unwrap();
        let down = pairs.iter().flat_map(|&(a, b)| topo.links[topo.links_between(n(a), n(b))[0] as usize]).collect();
        (topo, f, down)
    }

    /// Standard k = 4, group on core 0 sent by host 0 to 1, 5 (tor2) and 9 (tor4); agg2 - tor2
    /// and agg5 - tor4 down. By hand (`tests/multicast_failover.rs` runs it): cover {core 0 ->
    /// agg4 -> tor4, core 2 -> agg3 -> tor2}; tor0 sends to h1, agg0, agg1; agg0 to core0, agg1 to
    /// core2; core0 to agg4 only (pod 1's agg2 feeds nothing), core2 to agg3 only.
    #[test]
    fn the_cover_tree_by_hand() {
        let (topo, mut f, down) = group_with_links_down(&[("agg2", "tor2"), ("agg5", "tor4")]);
        let n = |name: &str| topo.node_named(name).unwrap();
        let up = move |x: u32| !down.contains(&x);
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.groups[0].root, Some(Root::Cover));
        let run = |node: &str, mode: Mode| {
            let mut out = Vec::new();
            f.replicate(Datagram { group: 0, src: 0, choice: 0 }, n(node), mode, &up, &mut out);
            out.iter().map(|o| o.name(&topo)).collect::<Vec<_>>()
        };
        assert_eq!(run("tor0", Mode::Up), ["h1", "agg0", "agg1"]);
        assert_eq!(run("agg0", Mode::Up), ["core0"]);
        assert_eq!(run("agg1", Mode::Up), ["core2"]);
        assert_eq!(run("core0", Mode::Down), ["agg4"]);
        assert_eq!(run("core2", Mode::Down), ["agg3"]);
        assert_eq!(run("agg4", Mode::Down), ["tor4"]);
        assert_eq!(run("agg3", Mode::Down), ["tor2"]);
        // Every link back: the group returns to its partition's core.
        assert_eq!(f.rebuild(&|_| true), (1, 0));
        assert_eq!((f.groups[0].root, f.groups[0].cover.is_none()), (None, true));
    }

    /// A group inside one pod (standard k = 6: pod 0 has tor0 with h0-h2, tor1 with h3-h5, tor2
    /// with h6-h8, and agg0-agg2; partition 0's holder there is agg0), sent by host 0 to 1, 3
    /// and 6, with agg0 - tor1, agg1 - tor2 and agg2 - tor2 down: no aggregation switch reaches
    /// tor0, tor1 and tor2 at once, so no single root repairs it (before this cover it stayed
    /// unrepaired). By hand: the elements are tor1 and tor2 (tor0 is the sender's own); every
    /// switch reaches tor0, so all three are candidates; each covers one element (agg0 tor2,
    /// agg1 and agg2 tor1), so agg0 (lowest) takes tor2, then agg1 tor1. The tree: tor0 -> h1,
    /// agg0, agg1; agg0 -> tor2; agg1 -> tor1; tor1 -> h3; tor2 -> h6; no core.
    #[test]
    fn a_group_inside_one_pod_is_covered_by_its_aggregation_switches() {
        let topo = build(&FatTree { k: 6, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let spec: MulticastSpec = serde_json::from_str(r#"{"groups": [{"name": "g", "members": [1, 3, 6]}]}"#).unwrap();
        let mut f = McFabric::new(&spec, &topo, 6, &[vec![0]], 1).unwrap();
        assert_eq!(f.part.aggrs(0, 0), &[0]);
        let n = |name: &str| topo.node_named(name).unwrap();
        let down: Vec<u32> =
            [("agg0", "tor1"), ("agg1", "tor2"), ("agg2", "tor2")].iter().flat_map(|&(a, b)| topo.links[topo.links_between(n(a), n(b))[0] as usize]).collect();
        let up = move |x: u32| !down.contains(&x);
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.groups[0].root, Some(Root::Cover));
        let cover = f.groups[0].cover.clone().unwrap();
        assert!(cover.cores.is_empty());
        assert_eq!(cover.feeds, [Feed { pod: 0, aggr: 0, core: None, edges: vec![2] }, Feed { pod: 0, aggr: 1, core: None, edges: vec![1] }]);
        let run = |node: &str, mode: Mode| {
            let mut out = Vec::new();
            f.replicate(Datagram { group: 0, src: 0, choice: 0 }, n(node), mode, &up, &mut out);
            out.iter().map(|o| o.name(&topo)).collect::<Vec<_>>()
        };
        assert_eq!(run("tor0", Mode::Up), ["h1", "agg0", "agg1"]);
        assert_eq!(run("agg0", Mode::Up), ["tor2"]);
        assert_eq!(run("agg1", Mode::Up), ["tor1"]);
        assert_eq!(run("agg2", Mode::Up), Vec::<String>::new());
        assert_eq!(run("tor1", Mode::Down), ["h3"]);
        assert_eq!(run("tor2", Mode::Down), ["h6"]);
        // Every link back: the group returns to its holder.
        assert_eq!(f.rebuild(&|_| true), (1, 0));
        assert_eq!((f.groups[0].root, f.groups[0].cover.is_none()), (None, true));
        // tor1 reached by no switch that tor0 reaches: no cover, unrepaired.
        let topo2 = &topo;
        let cut: Vec<u32> = [("agg0", "tor1"), ("agg1", "tor1"), ("agg2", "tor1")]
            .iter()
            .flat_map(|&(a, b)| topo2.links[topo2.links_between(n(a), n(b))[0] as usize])
            .collect();
        assert_eq!(f.rebuild(&move |x: u32| !cut.contains(&x)), (0, 1));
    }

    /// A member edge no core reaches (both of tor2's uplinks down) leaves no cover.
    #[test]
    fn an_unreachable_member_leaves_the_group_unrepaired() {
        let (_, mut f, down) = group_with_links_down(&[("agg2", "tor2"), ("agg3", "tor2")]);
        let up = move |x: u32| !down.contains(&x);
        assert!(Cover::solve(&f, &f.groups[0], &up).is_none());
        assert_eq!(f.rebuild(&up), (0, 1));
    }
}
