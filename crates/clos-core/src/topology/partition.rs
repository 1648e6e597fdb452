//! Cutting a fabric into partitions for a parallel engine (issue 34): which nodes run together,
//! which links cross between partitions, and the lookahead, the least time an event in one
//! partition takes to affect another.
//!
//! A partition is a set of nodes that one thread would run as one logical process. The cut
//! follows each fabric's own structure, as its paper builds it, so that most links stay inside
//! a partition and partitions carry equal shares of the hosts:
//!
//! - **Fat tree** (Al-Fares et al., §3): one partition per pod (its k/2 edge switches with
//!   their hosts and its k/2 aggregation switches, whose k²/4 links stay inside), and the
//!   (k/2)² cores spread over the pods, core `i` (in node order) with pod `i mod k`. Every core
//!   has one link to each pod, so wherever a core goes k - 1 of its k links are cut: the
//!   placement changes only the balance, and spreading gives every pod the same share (k/4
//!   cores, for k >= 4). Cores as partitions of their own would cut all k of their links and
//!   add partitions that carry a sixth of a cross-pod hop's work each.
//! - **VL2** (§4.1, Fig. 5): ToR `t` takes aggregation switches `2t` and `2t + 1` (mod D_I,
//!   `vl2::tor_uplinks`), so with an even number of aggregation switches the pairs (2g, 2g + 1)
//!   and the ToRs under them (`t ≡ g mod D_I/2`) form closed groups: one partition per pair,
//!   no ToR link cut, and the intermediates spread, intermediate `i` with group `i mod G`. With
//!   an odd count (the §5 testbed's 3) pairs overlap; then one partition per aggregation switch,
//!   with the ToRs whose first uplink it is (their second uplink is cut).
//! - **Leaf-spine** (DRILL §4): groups of leaves, each with its hosts, and the spines spread,
//!   spine `j` with group `j mod G`. Every spine reaches every leaf, so the group size changes
//!   the cut little (a spine keeps only its own group's links): one leaf per group, for the
//!   finest balance, up to [`MAX_TOR_GROUPS`] groups; beyond, consecutive leaves share one.
//! - **Any other fabric** (a [`Layout::Other`]): the leaf-spine rule over its ToRs, with every
//!   other switch spread in node order.
//!
//! Hosts always run with their ToR: a host's link never crosses. The partitioning is a function
//! of the fabric only, never of the thread count, so that a parallel run can be bit-identical
//! whatever the number of threads; a thread runs several partitions (more partitions than
//! threads, so that load can be balanced).
//!
//! The lookahead is the least propagation delay of a cut link plus the time its smallest frame
//! ([`wire::frame`] of no payload: 84 bytes on the wire) takes to serialise: a packet that starts
//! onto a cut link at `t` arrives no earlier than `t` plus that. Other effects that cross
//! partitions without a link today are listed in docs/parallel.md (the next step's to-do).

use super::{Role, Topology};
use crate::packet::wire;
use crate::units::{tx_time, Time};

/// The most partitions the ToR-group rule makes: 4 per thread on 16 threads.
pub const MAX_TOR_GROUPS: usize = 64;

/// What the partitioner knows of a fabric's shape besides its nodes and links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A k-ary fat tree: nodes carry their pod (`Node::pod`); cores carry none.
    FatTree { k: u32 },
    /// VL2: ToRs with two uplinks to aggregation switches, those joined to every intermediate.
    Vl2,
    /// Two tiers: leaves (ToRs) and spines.
    LeafSpine,
    /// Anything else: ToR groups, other switches spread.
    Other,
}

/// A fabric cut into partitions.
#[derive(Clone, Debug)]
pub struct Partitioning {
    /// Each node's partition.
    pub of_node: Vec<u32>,
    pub count: usize,
    /// The rule that made it, in words.
    pub rule: &'static str,
    /// The physical links (indexes into `Topology::links`) whose ends are in different partitions.
    pub cut: Vec<u32>,
    /// The least time an event in one partition takes to affect another over a link; `None`
    /// with a single partition.
    pub lookahead: Option<Time>,
}

/// One partition's share of the fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub nodes: u32,
    pub hosts: u32,
    pub switches: u32,
    /// Output ports (directed links) owned by the partition's nodes.
    pub ports: u32,
}

/// Bytes on the wire of the smallest frame a link carries: a segment with no payload, padded
/// to Ethernet's minimum, with preamble and gap (84 bytes).
pub fn smallest_frame() -> u64 {
    wire::frame(0, 0)
}

/// Cut `topo` into partitions following `layout`.
pub fn partition(topo: &Topology, layout: Layout) -> Partitioning {
    let (of_node, rule) = match layout {
        Layout::FatTree { k } => (by_pod(topo, k), "one per pod, cores spread (core i with pod i mod k)"),
        Layout::Vl2 => by_aggregation_pairs(topo),
        Layout::LeafSpine => (by_tor_groups(topo), "leaf groups (one leaf each up to 64), spines spread"),
        Layout::Other => (by_tor_groups(topo), "ToR groups (one ToR each up to 64), other switches spread"),
    };
    Partitioning::of_nodes(topo, of_node, rule)
}

impl Partitioning {
    /// The partitioning that puts node n in partition `of_node[n]`: its cut and lookahead.
    fn of_nodes(topo: &Topology, of_node: Vec<u32>, rule: &'static str) -> Partitioning {
        let count = of_node.iter().map(|&p| p as usize + 1).max().unwrap_or(0);
        let cut: Vec<u32> = (0..topo.links.len() as u32)
            .filter(|&l| {
                let port = &topo.ports[topo.links[l as usize][0] as usize];
                of_node[port.from as usize] != of_node[port.to as usize]
            })
            .collect();
        let lookahead = cut
            .iter()
            .flat_map(|&l| topo.links[l as usize])
            .map(|p| {
                let port = &topo.ports[p as usize];
                port.delay + tx_time(smallest_frame(), port.rate_bps)
            })
            .min();
        Partitioning { of_node, count, rule, cut, lookahead }
    }

    /// These partitions joined into `groups` of consecutive ones, as even in number as they
    /// divide (`run.partitions`): fewer messages and calendars, less to balance.
    pub fn grouped(self, topo: &Topology, groups: usize) -> Partitioning {
        let (count, groups) = (self.count as u64, groups.clamp(1, self.count.max(1)) as u64);
        let of_node = self.of_node.iter().map(|&p| (p as u64 * groups / count) as u32).collect();
        Partitioning::of_nodes(topo, of_node, self.rule)
    }

    /// Each partition's nodes, hosts, switches and ports.
    pub fn shares(&self, topo: &Topology) -> Vec<Share> {
        let mut shares = vec![Share::default(); self.count];
        for (n, &p) in self.of_node.iter().enumerate() {
            let s = &mut shares[p as usize];
            s.nodes += 1;
            if topo.is_host(n as u32) {
                s.hosts += 1;
            } else {
                s.switches += 1;
            }
            s.ports += topo.ports_of(n as u32).len() as u32;
        }
        shares
    }

    /// Whether a packet over `port` crosses from one partition to another.
    pub fn crosses(&self, topo: &Topology, port: u32) -> bool {
        let p = &topo.ports[port as usize];
        self.of_node[p.from as usize] != self.of_node[p.to as usize]
    }
}

/// Hosts with their ToR: the ToR's partition, once every switch has one.
fn hosts_follow_tors(topo: &Topology, of_node: &mut [u32]) {
    for h in 0..topo.n_hosts {
        of_node[h] = of_node[topo.host_tor[h] as usize];
    }
}

/// Nodes of `role` in node order.
fn nodes_of(topo: &Topology, role: Role) -> Vec<u32> {
    (0..topo.nodes.len() as u32).filter(|&n| topo.role(n) == role).collect()
}

fn by_pod(topo: &Topology, k: u32) -> Vec<u32> {
    let mut of_node: Vec<u32> = topo.nodes.iter().map(|n| n.pod).collect();
    for (i, c) in nodes_of(topo, Role::Core).into_iter().enumerate() {
        of_node[c as usize] = i as u32 % k.max(1);
    }
    of_node
}

fn by_aggregation_pairs(topo: &Topology) -> (Vec<u32>, &'static str) {
    let aggs = nodes_of(topo, Role::Agg);
    let paired = aggs.len().is_multiple_of(2);
    let (groups, rule) = if paired {
        (aggs.len() / 2, "one per pair of aggregation switches with the ToRs under both, intermediates spread")
    } else {
        (aggs.len(), "one per aggregation switch with the ToRs whose first uplink it is, intermediates spread")
    };
    let group_of_agg = |a: usize| if paired { a / 2 } else { a } as u32;
    let mut of_node = vec![0u32; topo.nodes.len()];
    let mut agg_index = vec![usize::MAX; topo.nodes.len()];
    for (a, &n) in aggs.iter().enumerate() {
        agg_index[n as usize] = a;
        of_node[n as usize] = group_of_agg(a);
    }
    for &t in &topo.tors {
        // The ToR's first uplink in declaration order (`vl2::tor_uplinks`).
        let first = topo.ports_of(t).map(|p| topo.ports[p as usize].to).find(|&m| topo.role(m) == Role::Agg);
        of_node[t as usize] = first.map_or(0, |a| group_of_agg(agg_index[a as usize]));
    }
    for (i, n) in nodes_of(topo, Role::Core).into_iter().enumerate() {
        of_node[n as usize] = (i % groups.max(1)) as u32;
    }
    hosts_follow_tors(topo, &mut of_node);
    (of_node, rule)
}

fn by_tor_groups(topo: &Topology) -> Vec<u32> {
    let tors = topo.tors.len().max(1);
    let groups = tors.min(MAX_TOR_GROUPS);
    let mut of_node = vec![0u32; topo.nodes.len()];
    for (i, &t) in topo.tors.iter().enumerate() {
        of_node[t as usize] = (i * groups / tors) as u32;
    }
    let others = (topo.n_hosts as u32..topo.nodes.len() as u32).filter(|&n| topo.role(n) != Role::Tor);
    for (i, n) in others.enumerate() {
        of_node[n as usize] = (i % groups) as u32;
    }
    hosts_follow_tors(topo, &mut of_node);
    of_node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{fat_tree, leaf_spine, vl2};
    use crate::units::{Rate, PS_PER_US};

    const G10: Rate = Rate(10_000_000_000);

    fn fat_tree(k: u32) -> Topology {
        fat_tree::build(&fat_tree::FatTree { k, remove_cores: 0 }, G10, G10, PS_PER_US).unwrap()
    }

    /// By hand, k = 4: four pods of 4 hosts, 2 edge and 2 aggregation switches, and core i with
    /// pod i: 9 nodes, 5 switches and 4 + 2·4 + 2·4 + 4 = 24 ports each. Each core keeps its
    /// link to its own pod and cuts the other 3: 12 cut links of 16 aggregation-core links.
    /// Lookahead: 1 us of propagation plus 84 bytes at 10 Gb/s (67.2 ns).
    #[test]
    fn k4_fat_tree_by_hand() {
        let t = fat_tree(4);
        let p = partition(&t, Layout::FatTree { k: 4 });
        assert_eq!(p.count, 4);
        let want = Share { nodes: 9, hosts: 4, switches: 5, ports: 24 };
        assert_eq!(p.shares(&t), vec![want; 4]);
        assert_eq!(p.cut.len(), 12);
        for &l in &p.cut {
            let port = &t.ports[t.links[l as usize][0] as usize];
            assert_eq!((t.role(port.from), t.role(port.to)), (Role::Agg, Role::Core), "only aggregation-core links are cut");
        }
        assert_eq!(smallest_frame(), 84);
        assert_eq!(p.lookahead, Some(PS_PER_US + 67_200));
    }

    /// A host's link never crosses, in every layout.
    #[test]
    fn hosts_run_with_their_tor() {
        let ls = leaf_spine::build(&leaf_spine::LeafSpine { leaves: 70, spines: 3, hosts_per_leaf: 2, links_per_pair: 1 }, G10, G10, 0).unwrap();
        let v = vl2::build(&vl2::Vl2::TESTBED, Rate(1_000_000_000), G10, PS_PER_US).unwrap();
        let ft = fat_tree(8);
        for (t, layout) in [(&ls, Layout::LeafSpine), (&v, Layout::Vl2), (&ft, Layout::FatTree { k: 8 }), (&ft, Layout::Other)] {
            let p = partition(t, layout);
            for h in 0..t.n_hosts {
                assert_eq!(p.of_node[h], p.of_node[t.host_tor[h] as usize], "{layout:?}");
                assert!(!p.crosses(t, t.port_start[h]), "{layout:?}");
            }
        }
        // 70 leaves: 64 groups, the first 6 of them with two leaves.
        let p = partition(&ls, Layout::LeafSpine);
        assert_eq!(p.count, MAX_TOR_GROUPS);
        let hosts: Vec<u32> = p.shares(&ls).iter().map(|s| s.hosts).collect();
        assert_eq!((hosts.iter().min(), hosts.iter().max(), hosts.iter().sum::<u32>()), (Some(&2), Some(&4), 140));
    }

    /// By hand, the VL2 testbed (§5): 3 aggregation switches, an odd count, so one partition
    /// each. ToR t's first uplink is aggregation switch 2t mod 3: ToRs 0 and 3 go with agg0,
    /// ToR 2 with agg1, ToR 1 with agg2, and intermediate i with agg i. Cut: each ToR's second
    /// uplink (4) and the 6 aggregation-intermediate links between different partitions.
    /// Lookahead on those 10 Gb/s links: 1 us + 67.2 ns.
    #[test]
    fn vl2_testbed_by_hand() {
        let t = vl2::build(&vl2::Vl2::TESTBED, Rate(1_000_000_000), G10, PS_PER_US).unwrap();
        let p = partition(&t, Layout::Vl2);
        assert_eq!(p.count, 3);
        let hosts: Vec<u32> = p.shares(&t).iter().map(|s| s.hosts).collect();
        assert_eq!(hosts, vec![40, 20, 20]);
        assert!(p.shares(&t).iter().all(|s| s.switches == 3 + u32::from(s.hosts == 40)));
        assert_eq!(p.cut.len(), 4 + 6);
        assert_eq!(p.lookahead, Some(PS_PER_US + 67_200));
    }

    /// By hand, VL2 sized from D_A = D_I = 4 (§4.1): 4 ToRs, 4 aggregation switches, 2
    /// intermediates. An even count: pairs (agg0, agg1) and (agg2, agg3), ToRs 0, 2 under the
    /// first and 1, 3 under the second, so no ToR link is cut; each intermediate keeps its 2
    /// links to its own pair and cuts the other 2: 4 cut links.
    #[test]
    fn vl2_pairs_keep_every_tor_link() {
        let t = vl2::build(&vl2::Vl2::from_degrees(4, 4, 3).unwrap(), G10, G10, PS_PER_US).unwrap();
        let p = partition(&t, Layout::Vl2);
        assert_eq!(p.count, 2);
        assert_eq!(p.cut.len(), 4);
        assert_eq!(p.shares(&t), vec![Share { nodes: 2 * 3 + 2 + 2 + 1, hosts: 6, switches: 5, ports: 6 + 2 * 5 + 2 * 4 + 4 }; 2]);
    }

    /// By hand, DRILL's leaf-spine (§4): 16 leaves of 20 hosts, 4 spines at 40 Gb/s. One
    /// partition per leaf, spine j with leaf j: 64 leaf-spine links, 4 kept, 60 cut. Lookahead:
    /// 1 us + 84 bytes at 40 Gb/s (16.8 ns).
    #[test]
    fn drill_leaf_spine_by_hand() {
        let c = leaf_spine::LeafSpine { leaves: 16, spines: 4, hosts_per_leaf: 20, links_per_pair: 1 };
        let t = leaf_spine::build(&c, G10, Rate(40_000_000_000), PS_PER_US).unwrap();
        let p = partition(&t, Layout::LeafSpine);
        assert_eq!(p.count, 16);
        assert_eq!(p.cut.len(), 60);
        let shares = p.shares(&t);
        assert_eq!(shares[0], Share { nodes: 22, hosts: 20, switches: 2, ports: 20 + 24 + 16 });
        assert_eq!(shares[15], Share { nodes: 21, hosts: 20, switches: 1, ports: 20 + 24 });
        assert_eq!(p.lookahead, Some(PS_PER_US + 16_800));
    }

    /// A single partition has no cut and no lookahead.
    #[test]
    fn one_leaf_is_one_partition() {
        let c = leaf_spine::LeafSpine { leaves: 1, spines: 2, hosts_per_leaf: 3, links_per_pair: 1 };
        let t = leaf_spine::build(&c, G10, G10, PS_PER_US).unwrap();
        let p = partition(&t, Layout::LeafSpine);
        assert_eq!((p.count, p.cut.len(), p.lookahead), (1, 0, None));
    }
}
