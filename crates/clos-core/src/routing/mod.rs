//! Shortest-path next-hop groups, computed once into dense tables.
//!
//! For every switch and every destination ToR, the group is the set of ports whose far end is one
//! hop closer to that ToR (all equal-cost next hops; parallel links count separately). A second
//! table gives, for VLB, the ports one hop closer to the nearest top-tier switch (VL2's
//! Intermediate anycast address, §4.2.2). Identical groups are stored once, so the per-packet
//! lookup is two array reads and the tables stay small at 8,192 hosts.

use crate::topology::{Role, Topology};
use std::collections::{HashMap, VecDeque};

const UNREACHABLE: u32 = u32::MAX;

pub struct Routes {
    /// Flat storage of all distinct groups' ports.
    ports: Vec<u32>,
    /// Group `g` is `ports[start[g]..start[g + 1]]`.
    start: Vec<u32>,
    /// `to_tor[switch_index * n_tors + tor_index]` = group id.
    to_tor: Vec<u32>,
    /// `to_core[switch_index]` = group id toward the nearest top-tier switch (empty at the top).
    to_core: Vec<u32>,
    n_tors: usize,
    n_hosts: usize,
}

impl Routes {
    pub fn compute(t: &Topology) -> Routes {
        let mut interner = GroupInterner::default();
        let n_sw = t.n_switches();
        let n_tors = t.tors.len();
        let mut to_tor = vec![0u32; n_sw * n_tors];
        for (ti, &tor) in t.tors.iter().enumerate() {
            let dist = switch_distances(t, &[tor]);
            for s in 0..n_sw {
                let node = (t.n_hosts + s) as u32;
                to_tor[s * n_tors + ti] = interner.intern(closer_ports(t, node, &dist));
            }
        }
        let cores: Vec<u32> = (0..t.nodes.len() as u32).filter(|&n| t.role(n) == Role::Core).collect();
        let dist = switch_distances(t, &cores);
        let to_core =
            (0..n_sw).map(|s| interner.intern(closer_ports(t, (t.n_hosts + s) as u32, &dist))).collect();
        Routes { ports: interner.ports, start: interner.start, to_tor, to_core, n_tors, n_hosts: t.n_hosts }
    }

    /// Equal-cost ports at `switch` toward ToR number `tor_index`.
    #[inline]
    pub fn toward_tor(&self, switch: u32, tor_index: u32) -> &[u32] {
        self.group(self.group_toward_tor(switch, tor_index))
    }

    /// The id of that group. Groups are sets of one switch's ports, so an id also names the
    /// switch: per-group scheme state (round-robin pointers, DRILL memory) is indexed by it.
    #[inline]
    pub fn group_toward_tor(&self, switch: u32, tor_index: u32) -> u32 {
        self.to_tor[(switch as usize - self.n_hosts) * self.n_tors + tor_index as usize]
    }

    #[inline]
    pub fn group_toward_core(&self, switch: u32) -> u32 {
        self.to_core[switch as usize - self.n_hosts]
    }

    /// Where group `g`'s ports start in the flat port storage (for per-port-of-group tables).
    #[inline]
    pub fn group_offset(&self, g: u32) -> usize {
        self.start[g as usize] as usize
    }

    /// Total length of the flat port storage.
    pub fn group_storage_len(&self) -> usize {
        self.ports.len()
    }

    /// Equal-cost ports at `switch` toward the nearest top-tier switch.
    #[inline]
    pub fn toward_core(&self, switch: u32) -> &[u32] {
        self.group(self.to_core[switch as usize - self.n_hosts])
    }

    #[inline]
    pub fn group(&self, g: u32) -> &[u32] {
        &self.ports[self.start[g as usize] as usize..self.start[g as usize + 1] as usize]
    }

    pub fn distinct_groups(&self) -> usize {
        self.start.len() - 1
    }
}

#[derive(Default)]
struct GroupInterner {
    ports: Vec<u32>,
    start: Vec<u32>,
    ids: HashMap<Vec<u32>, u32>,
}

impl GroupInterner {
    fn intern(&mut self, group: Vec<u32>) -> u32 {
        if self.start.is_empty() {
            self.start.push(0);
        }
        if let Some(&g) = self.ids.get(&group) {
            return g;
        }
        let g = (self.start.len() - 1) as u32;
        self.ports.extend_from_slice(&group);
        self.start.push(self.ports.len() as u32);
        self.ids.insert(group, g);
        g
    }
}

/// Hop distance from every node to the nearest of `sources`, walking switch-to-switch links only
/// (hosts never forward).
fn switch_distances(t: &Topology, sources: &[u32]) -> Vec<u32> {
    let mut dist = vec![UNREACHABLE; t.nodes.len()];
    let mut q = VecDeque::new();
    for &s in sources {
        dist[s as usize] = 0;
        q.push_back(s);
    }
    while let Some(n) = q.pop_front() {
        for p in t.ports_of(n) {
            let m = t.ports[p as usize].to;
            if !t.is_host(m) && dist[m as usize] == UNREACHABLE {
                dist[m as usize] = dist[n as usize] + 1;
                q.push_back(m);
            }
        }
    }
    dist
}

fn closer_ports(t: &Topology, node: u32, dist: &[u32]) -> Vec<u32> {
    let d = dist[node as usize];
    if d == 0 || d == UNREACHABLE {
        return Vec::new();
    }
    t.ports_of(node).filter(|&p| dist[t.ports[p as usize].to as usize] == d - 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{fat_tree, leaf_spine, vl2};
    use crate::units::Rate;

    #[test]
    fn fat_tree_edges_have_k_over_2_upward_choices() {
        let t = fat_tree::build(&fat_tree::FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let r = Routes::compute(&t);
        let edge0 = t.tors[0];
        // Same pod, other edge: via any of the 4 aggs. Other pod: also 4 aggs.
        assert_eq!(r.toward_tor(edge0, 1).len(), 4);
        assert_eq!(r.toward_tor(edge0, 31).len(), 4);
        // An aggregation switch going cross-pod has 4 cores to choose from; inside the pod, 1 port.
        let agg0 = t.ports[r.toward_tor(edge0, 31)[0] as usize].to;
        assert_eq!(r.toward_tor(agg0, 31).len(), 4);
        assert_eq!(r.toward_tor(agg0, 1).len(), 1);
        assert_eq!(r.toward_tor(edge0, 0).len(), 0);
    }

    #[test]
    fn parallel_links_are_separate_equal_cost_choices() {
        let c = leaf_spine::LeafSpine { leaves: 3, spines: 2, hosts_per_leaf: 1, links_per_pair: 2 };
        let t = leaf_spine::build(&c, Rate(1), Rate(1), 0).unwrap();
        let r = Routes::compute(&t);
        assert_eq!(r.toward_tor(t.tors[0], 2).len(), 4);
    }

    #[test]
    fn vl2_tor_reaches_intermediates_through_both_aggs() {
        let t = vl2::build(&vl2::Vl2::TESTBED, Rate(1), Rate(1), 0).unwrap();
        let r = Routes::compute(&t);
        assert_eq!(r.toward_core(t.tors[0]).len(), 2);
        let agg = t.ports[r.toward_core(t.tors[0])[0] as usize].to;
        assert_eq!(r.toward_core(agg).len(), 3);
    }
}
