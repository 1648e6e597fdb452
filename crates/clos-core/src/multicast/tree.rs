//! A group's multicast tree on a fat tree and the forwarding entries it needs (Li & Freedman §2.3,
//! §3.1, §4.3).
//!
//! Traffic from a member goes up from its edge switch to one of the `r_a` aggregation switches of
//! its pod holding the group's partition and, when the group spans several pods, on to one of the
//! `r_c` cores holding it; from there it goes down to every pod and edge switch with members.
//! Upstream forwarding is a per-partition prefix rule (any holder will do), so per-group state is
//! only the downstream replication, and since any holder may carry a packet, **every** holder
//! keeps the group's entry (this is what Eq. 1 and 2 count):
//!
//! - an **edge** switch with members keeps an entry whose ports are its member hosts;
//! - when the group spans at least two edge switches, each of the `r_a` holders in every pod with
//!   members keeps an entry whose ports are the pod's member edge switches;
//! - when it spans at least two pods, each of the `r_c` holding cores keeps an entry whose ports
//!   are the member pods.
//!
//! A group inside one edge switch never leaves it; one inside one pod never reaches the cores.
//! These are exactly the counts behind the paper's single-group example (§4.3.1): 300 joins over
//! 192 edge switches in 8 pods touch ≈154 edges, 8·3 aggregation and 9 core switches, 0.62
//! updates per join with batching. The packet engine can replicate from [`GroupTree`] directly.

use super::fat_tree::FatTree;
use super::partition::Partitioning;

/// The layers of the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    Core,
    Aggr,
    Edge,
}

/// A group's downstream forwarding state, by layer. Masks are over the switch's downlinks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTree {
    pub partition: u32,
    /// (edge switch, member host ports), ascending by switch.
    pub edges: Vec<(u32, u64)>,
    /// (pod, member edge switches in the pod), ascending by pod; empty when the group spans one
    /// edge switch (no aggregation-layer state).
    pub pods: Vec<(u32, u64)>,
    /// Member pods; 0 when the group spans one pod (no core state).
    pub core_ports: u64,
}

/// One switch's entry for a group: which switch and out of which downlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub layer: Layer,
    /// Global index in its layer (edge and aggregation: `pod·k/2 + i`).
    pub switch: u32,
    pub ports: u64,
}

impl GroupTree {
    /// The tree of a group with these member hosts (distinct) and partition.
    pub fn build(tree: &FatTree, partition: u32, members: &[u32]) -> GroupTree {
        let mut edges: Vec<(u32, u64)> = Vec::new();
        let mut sorted: Vec<u32> = members.to_vec();
        sorted.sort_unstable();
        for &h in &sorted {
            let e = tree.edge_of_host(h);
            let bit = 1u64 << tree.host_port(h);
            match edges.last_mut() {
                Some((last, mask)) if *last == e => *mask |= bit,
                _ => edges.push((e, bit)),
            }
        }
        let mut pods: Vec<(u32, u64)> = Vec::new();
        if edges.len() >= 2 {
            for &(e, _) in &edges {
                let pod = tree.pod_of_edge(e);
                let bit = 1u64 << tree.edge_in_pod(e);
                match pods.last_mut() {
                    Some((last, mask)) if *last == pod => *mask |= bit,
                    _ => pods.push((pod, bit)),
                }
            }
        }
        let core_ports = if pods.len() >= 2 { pods.iter().fold(0u64, |m, &(p, _)| m | 1u64 << p) } else { 0 };
        GroupTree { partition, edges, pods, core_ports }
    }

    /// Every switch entry the group needs: edge, then aggregation, then core.
    pub fn entries<'a>(&'a self, tree: &'a FatTree, part: &'a Partitioning) -> impl Iterator<Item = Entry> + 'a {
        let edges = self.edges.iter().map(|&(e, ports)| Entry { layer: Layer::Edge, switch: e, ports });
        let aggrs = self.pods.iter().flat_map(move |&(pod, ports)| {
            part.aggrs(pod, self.partition).iter().map(move |&a| Entry { layer: Layer::Aggr, switch: pod * tree.half() + a, ports })
        });
        let cores = part.cores(self.partition).iter().filter(move |_| self.core_ports != 0).map(move |&c| Entry {
            layer: Layer::Core,
            switch: c,
            ports: self.core_ports,
        });
        edges.chain(aggrs).chain(cores)
    }

    /// Number of pods with members.
    pub fn pod_count(&self) -> u32 {
        if self.edges.is_empty() {
            0
        } else if self.pods.is_empty() {
            1
        } else {
            self.pods.len() as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fat_tree::Wiring;

    /// k = 4 standard fat tree, n = 4, r_c = 1, r_a = 1 (Algorithm 1: N_p = 2, aggr 0 of every
    /// pod takes partitions 0, 1 = cores 0, 1; aggr 1 takes 2, 3 = cores 2, 3). Group in
    /// partition 2 with hosts 0, 1 (pod 0, edge 0), 3 (pod 0, edge 1) and 9 (pod 2, edge 4).
    #[test]
    fn k4_group_entries_by_hand() {
        let t = FatTree::new(4, Wiring::Standard, "k").unwrap();
        let p = Partitioning::distribute(&t, 4, 1, 1, "m").unwrap();
        assert_eq!(p.cores(2), &[2]);
        let g = GroupTree::build(&t, 2, &[9, 3, 0, 1]);
        assert_eq!(g.edges, vec![(0, 0b11), (1, 0b10), (4, 0b10)]);
        assert_eq!(g.pods, vec![(0, 0b11), (2, 0b01)]);
        assert_eq!(g.core_ports, 0b101);
        let e: Vec<Entry> = g.entries(&t, &p).collect();
        let expect = [
            Entry { layer: Layer::Edge, switch: 0, ports: 0b11 },
            Entry { layer: Layer::Edge, switch: 1, ports: 0b10 },
            Entry { layer: Layer::Edge, switch: 4, ports: 0b10 },
            // aggr 1 of pod 0 (global 1) and of pod 2 (global 5) hold partition 2.
            Entry { layer: Layer::Aggr, switch: 1, ports: 0b11 },
            Entry { layer: Layer::Aggr, switch: 5, ports: 0b01 },
            Entry { layer: Layer::Core, switch: 2, ports: 0b101 },
        ];
        assert_eq!(e, expect);
        assert_eq!(g.pod_count(), 2);
    }

    #[test]
    fn single_edge_and_single_pod_groups_stay_low() {
        let t = FatTree::new(4, Wiring::Ab, "k").unwrap();
        let p = Partitioning::distribute(&t, 4, 1, 1, "m").unwrap();
        let one_edge = GroupTree::build(&t, 0, &[4, 5]);
        assert_eq!(one_edge.entries(&t, &p).count(), 1);
        let one_pod = GroupTree::build(&t, 0, &[4, 6]);
        // 2 edges + r_a = 1 aggregation switch, no core.
        assert_eq!(one_pod.entries(&t, &p).count(), 3);
        assert_eq!(one_pod.core_ports, 0);
    }
}
