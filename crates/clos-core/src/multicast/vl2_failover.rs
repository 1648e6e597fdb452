//! Failover of multicast trees on VL2 (Li & Freedman §3.3, carried from the fat tree to VL2's
//! fabric; the trees are `vl2.rs`'s): location-tagged unicast detours while a link is down, then
//! the tree rebuilt without it.
//!
//! **Detours (§3.3.1).** A switch whose next hop on a group's tree is across a failed link sends
//! the copy as unicast toward the switch beyond it, tagged with that switch (the paper's location
//! identifier: on VL2 there are no pods, so the tag names the switch itself), and the tagged
//! switch takes the tag off and goes on along the tree (`replicate` makes the [`Out::Detour`]).
//! The unicast path is a shortest path over the links up that passes through no ToR: VL2 routes
//! up and down (a ToR forwards nothing between its aggregation switches), as the fat tree's
//! 3-hop detour goes through the layer above. On VL2's complete bipartite upper half that is,
//! for one failed link, always three hops:
//!
//! - aggregation switch `a` → ToR `t` (down): `a` → an intermediate → `t`'s other aggregation
//!   switch → `t`, the ToR-tagged detour through the ToR's other aggregation switch;
//! - ToR `t` → its serving switch `a` (up, the sender's ToR): `t` → its other aggregation
//!   switch → an intermediate → `a`, which goes on up;
//! - intermediate `i` → aggregation switch `a` (down): `i` → another aggregation switch →
//!   another intermediate → `a`;
//! - aggregation switch `a` → intermediate `i` (up): another holder of the partition when one's
//!   link is up (as on a fat tree); with none, `a` → another intermediate → another aggregation
//!   switch → `i`.
//!
//! **Reconstruction (§3.3.2).** When the controller knows of the change, [`Vl2Fabric::rebuild`]
//! recomputes every group's set cover over the ToR-aggregation links that are up (an
//! aggregation switch covers the ToRs it still reaches both ways) and, when the cover has two
//! switches or more, the intermediate they meet at: the partition's holders while every one
//! reaches every chosen switch both ways, else the first holder that does, else the first other
//! intermediate that does (the paper's first case, a single root that reaches every member). A
//! group with a ToR that reaches no aggregation switch, or whose chosen switches meet at no
//! intermediate, keeps its tree and its detours and is counted as unrepaired. With every link up
//! again the rebuild gives the original trees back (the greedy cover is deterministic).
//! As on fat trees, a rebuilt tree's entries are not added to the tables: they count the initial
//! trees. With meta-groups on, a rebuild that moved groups runs Algorithm 2 again over every
//! switch's current groups (§3.2.2's tracking, `Aggregated::recompute`), so a switch a group
//! left no longer forwards it and a switch it joined aggregates it.

use super::fabric::{detour_distances, detour_port, Root};
use super::vl2::{Vl2Fabric, Vl2Tree};
use crate::topology::{Role, Topology};

impl Vl2Fabric {
    /// Whether a detour toward `target` ends at `node`: the tag names one switch.
    pub fn arrived(&self, node: u32, target: u32) -> bool {
        node == target
    }

    /// The links changed: detour routes are recomputed when next asked.
    pub fn links_changed(&mut self) {
        self.routes.clear();
    }

    /// The port `node` forwards a copy detoured toward switch `target` out of, by a shortest
    /// path over the links up through no ToR (lowest port first), and the hops left from `node`;
    /// `None` when `target` cannot be reached so.
    pub fn next_hop(&mut self, topo: &Topology, node: u32, target: u32, up: &dyn Fn(u32) -> bool) -> Option<(u32, u32)> {
        let transit = |n: u32| topo.role(n) != Role::Tor;
        let dist = self.routes.entry(target).or_insert_with(|| detour_distances(topo, &[target], up, transit));
        detour_port(topo, dist, node, up, transit)
    }

    /// ToR `t` and aggregation switch `a` linked, both directions up.
    fn tor_agg_up(&self, t: u32, a: u32, up: &dyn Fn(u32) -> bool) -> bool {
        let (p, q) = (self.tor_up[(t * self.aggs + a) as usize], self.agg_down[(a * self.tors + t) as usize]);
        p != u32::MAX && up(p) && up(q)
    }

    /// Aggregation switch `a` and intermediate `i`, both directions up.
    fn agg_int_up(&self, a: u32, i: u32, up: &dyn Fn(u32) -> bool) -> bool {
        up(self.agg_up[(a * self.ints + i) as usize]) && up(self.int_down[(i * self.aggs + a) as usize])
    }

    /// The controller's reconstruction (see the module comment). Returns (groups moved, groups
    /// left detouring).
    pub fn rebuild(&mut self, up: &dyn Fn(u32) -> bool) -> (u32, u32) {
        let (mut moved, mut stuck) = (0, 0);
        for g in 0..self.groups.len() {
            let grp = &self.groups[g];
            if !grp.spans_edges() {
                continue;
            }
            let Some(tree) = Vl2Tree::cover(grp, self.aggs, |a, t| self.tor_agg_up(t, a, up)) else {
                stuck += 1;
                continue;
            };
            let root = if tree.serving.len() < 2 {
                Some(None) // no intermediate on the tree
            } else {
                let meets = |i: u32| tree.serving.iter().all(|&(a, _)| self.agg_int_up(a, i, up));
                let holders: Vec<u32> = (grp.partition * self.r..(grp.partition + 1) * self.r).collect();
                if holders.iter().all(|&i| meets(i)) {
                    Some(None)
                } else {
                    holders.iter().copied().chain((0..self.ints).filter(|i| !holders.contains(i))).find(|&i| meets(i)).map(|i| Some(Root::Core(i)))
                }
            };
            let Some(root) = root else {
                stuck += 1;
                continue;
            };
            if tree != self.trees[g] || root != grp.root {
                moved += 1;
                self.trees[g] = tree;
                self.groups[g].root = root;
            }
        }
        if moved > 0 {
            // §3.2.2's tracking: the meta-groups over the groups' new switches.
            if let Some(mut agg) = self.aggregation.take() {
                agg.recompute(&*self).expect("every switch's ports leave room for Algorithm 2's reserved meta-groups (checked when built)");
                self.aggregation = Some(agg);
            }
        }
        (moved, stuck)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fabric::{Datagram, Mode, Out};
    use crate::multicast::spec::MulticastSpec;
    use crate::topology::vl2::{build, Vl2};
    use crate::units::Rate;

    /// 4 ToRs of 2 servers, 3 aggregation switches (tor0 on agg0, agg1; tor1 on agg2, agg0;
    /// tor2 on agg1, agg2; tor3 on agg0, agg1), 2 intermediates, n = 2; group 0 (partition 0,
    /// int0): host 0 sends to 1 (tor0), 2 (tor1), 4 (tor2). Its tree (`vl2.rs`'s test): agg0
    /// serves tor0 and tor1, agg1 tor2, through int0.
    fn fabric() -> (Topology, Vl2Fabric) {
        let topo = build(&Vl2 { tors: 4, servers_per_tor: 2, aggs: 3, intermediates: 2 }, Rate(1), Rate(1), 0).unwrap();
        let spec: MulticastSpec = serde_json::from_str(r#"{"groups": [{"name": "g", "members": [1, 2, 4]}]}"#).unwrap();
        let f = Vl2Fabric::new(&spec, &topo, &[vec![0]], 1).unwrap();
        (topo, f)
    }

    /// `up` with the link between the two named nodes down (both directions).
    fn without<'a>(topo: &'a Topology, a: &str, b: &str) -> impl Fn(u32) -> bool + 'a {
        let (a, b) = (topo.node_named(a).unwrap(), topo.node_named(b).unwrap());
        move |p: u32| {
            let port = &topo.ports[p as usize];
            !((port.from == a && port.to == b) || (port.from == b && port.to == a))
        }
    }

    /// What `node` sends of a datagram from host 0: the next hop's name, or `detour:target`.
    fn copies(topo: &Topology, f: &Vl2Fabric, node: &str, mode: Mode, up: &dyn Fn(u32) -> bool) -> Vec<String> {
        let mut out = Vec::new();
        f.replicate(Datagram { group: 0, src: 0, choice: 0 }, topo.node_named(node).unwrap(), mode, up, &mut out);
        out.iter()
            .map(|o| match o {
                Out::Detour { target, .. } => format!("detour:{}", topo.nodes[*target as usize].name),
                Out::Port(_) => o.name(topo),
            })
            .collect()
    }

    /// The path a detour from `from` to `target` takes, node by node.
    fn path(topo: &Topology, f: &mut Vl2Fabric, from: &str, target: &str, up: &dyn Fn(u32) -> bool) -> Vec<String> {
        let (mut at, target) = (topo.node_named(from).unwrap(), topo.node_named(target).unwrap());
        let mut names = vec![from.to_string()];
        while !f.arrived(at, target) {
            let (p, _) = f.next_hop(topo, at, target, up).expect("a path");
            at = topo.ports[p as usize].to;
            names.push(topo.nodes[at as usize].name.clone());
        }
        names
    }

    /// agg0 - tor1 fails. By hand: agg0 detours tor1's copy tagged with tor1, through tor1's other
    /// aggregation switch, agg2, by an intermediate (agg0's lowest port with 2 hops left is
    /// int0's; no path through a ToR, though tor3 would also join agg0 and agg1). The rebuilt
    /// cover: agg0 reaches only tor0 of the group now, agg1 tor0 and tor2, agg2 tor1 and tor2;
    /// greedy takes agg1 (2, lower than agg2) for tor0 and tor2, then agg2 for tor1, both
    /// reaching int0, the partition's holder: the root stays the holder.
    #[test]
    fn a_tor_link_failure_detours_through_the_tors_other_aggregation_switch_then_the_cover_is_rebuilt() {
        let (topo, mut f) = fabric();
        let up = without(&topo, "agg0", "tor1");
        assert_eq!(copies(&topo, &f, "agg0", Mode::Up, &up), ["detour:tor1", "int0"]);
        assert_eq!(path(&topo, &mut f, "agg0", "tor1", &up), ["agg0", "int0", "agg2", "tor1"]);
        assert_eq!(f.next_hop(&topo, topo.node_named("agg0").unwrap(), topo.node_named("tor1").unwrap(), &up).unwrap().1, 3);
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.trees[0].serving, vec![(1, vec![0, 2]), (2, vec![1])]);
        assert_eq!(f.groups[0].root, None);
        assert_eq!(copies(&topo, &f, "tor0", Mode::Up, &up), ["h1", "agg1"]);
        assert_eq!(copies(&topo, &f, "agg1", Mode::Up, &up), ["tor2", "int0"]);
        assert_eq!(copies(&topo, &f, "int0", Mode::Down, &up), ["agg2"]);
        assert_eq!(copies(&topo, &f, "agg2", Mode::Down, &up), ["tor1"]);
        // The link back: the original tree again, nothing left to repair.
        f.links_changed();
        assert_eq!(f.rebuild(&|_| true), (1, 0));
        assert_eq!(f.trees[0].serving, vec![(0, vec![0, 1]), (1, vec![2])]);
    }

    /// int0 - agg1 fails. By hand: int0 detours agg1's copy tagged with agg1 through another
    /// aggregation switch and the other intermediate: int0 -> agg0 -> int1 -> agg1 (3 hops;
    /// agg0 is int0's lowest port with 2 hops left). The rebuild keeps the cover (no
    /// ToR-aggregation link failed) and moves the root to int1, the one intermediate reaching
    /// agg0 and agg1: agg0 sends up to int1.
    #[test]
    fn an_intermediate_link_failure_detours_through_another_intermediate_then_the_root_moves() {
        let (topo, mut f) = fabric();
        let up = without(&topo, "int0", "agg1");
        assert_eq!(copies(&topo, &f, "int0", Mode::Down, &up), ["detour:agg1"]);
        assert_eq!(path(&topo, &mut f, "int0", "agg1", &up), ["int0", "agg0", "int1", "agg1"]);
        assert_eq!(f.rebuild(&up), (1, 0));
        assert_eq!(f.trees[0].serving, vec![(0, vec![0, 1]), (1, vec![2])]);
        assert_eq!(f.groups[0].root, Some(Root::Core(1)));
        assert_eq!(copies(&topo, &f, "agg0", Mode::Up, &up), ["tor1", "int1"]);
        assert_eq!(copies(&topo, &f, "int1", Mode::Down, &up), ["agg1"]);
    }

    /// tor0 - agg0 fails (the sender's ToR's uplink to its serving switch): tor0 detours up,
    /// tagged with agg0, through its other aggregation switch: tor0 -> agg1 -> int0 -> agg0,
    /// which goes on up (down to tor1, up to int0). agg0 - int0 failing instead, with r = 1 and
    /// no other holder, agg0 detours the copy to int0: agg0 -> int1 -> agg1 -> int0.
    #[test]
    fn upward_failures_detour_to_the_switch_beyond() {
        let (topo, mut f) = fabric();
        let up = without(&topo, "tor0", "agg0");
        assert_eq!(copies(&topo, &f, "tor0", Mode::Up, &up), ["h1", "detour:agg0"]);
        assert_eq!(path(&topo, &mut f, "tor0", "agg0", &up), ["tor0", "agg1", "int0", "agg0"]);
        let up = without(&topo, "agg0", "int0");
        f.links_changed();
        assert_eq!(copies(&topo, &f, "agg0", Mode::Up, &up), ["tor1", "detour:int0"]);
        assert_eq!(path(&topo, &mut f, "agg0", "int0", &up), ["agg0", "int1", "agg1", "int0"]);
    }

    /// Both of tor2's uplinks down: no cover reaches it, the group is left as it was, unrepaired.
    #[test]
    fn a_tor_cut_off_leaves_its_group_unrepaired() {
        let (topo, mut f) = fabric();
        let (a, b) = (without(&topo, "tor2", "agg1"), without(&topo, "tor2", "agg2"));
        let up = |p: u32| a(p) && b(p);
        assert_eq!(f.rebuild(&up), (0, 1));
        assert_eq!(f.trees[0].serving, vec![(0, vec![0, 1]), (1, vec![2])]);
    }
}
