//! Join/leave churn and the switch updates it causes, with and without batching (Li & Freedman
//! §4.3, Table 2, Figure 7).
//!
//! A switch is updated when its entry for the group appears, disappears or changes ports (the
//! entries of [`super::tree`]). So a join or leave always updates its edge switch; it updates the
//! `r_a` holders of its pod when it is the first join (last leave) at its edge switch and the
//! group spans, or spanned, two edge switches; and the `r_c` holding cores when it is the first
//! join (last leave) in its pod and the group spans, or spanned, two pods. When the group goes
//! from one edge switch to two in different pods, the holders of the other pod are updated too.
//! Counts are per switch: one event can update several switches of a layer, which is how the
//! paper's Table 2b reaches 1.64 core updates per event.
//!
//! [`Footprint`] counts per event in O(1). With batching, a burst of events costs one round: the
//! switches whose entry differs between the tree before and the tree after ([`batch_updates`]);
//! joins and leaves at the same place cancel.

use super::fat_tree::FatTree;
use super::partition::Partitioning;
use super::tree::GroupTree;
use std::collections::HashMap;

/// Switch updates, per layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Updates {
    pub edge: u64,
    pub aggr: u64,
    pub core: u64,
}

impl Updates {
    pub fn total(&self) -> u64 {
        self.edge + self.aggr + self.core
    }
    pub fn add(&mut self, o: Updates) {
        self.edge += o.edge;
        self.aggr += o.aggr;
        self.core += o.core;
    }
}

/// Where a group's members are: members per edge switch, member edges per pod.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    per_edge: HashMap<u32, u32>,
    per_pod: HashMap<u32, u32>,
}

impl Footprint {
    pub fn edges(&self) -> u32 {
        self.per_edge.len() as u32
    }
    pub fn pods(&self) -> u32 {
        self.per_pod.len() as u32
    }

    /// Add host `h` (not a member yet); the updates the join causes.
    pub fn join(&mut self, tree: &FatTree, part: &Partitioning, partition: u32, h: u32) -> Updates {
        let e = tree.edge_of_host(h);
        let first_at_edge = !self.per_edge.contains_key(&e);
        let u = if first_at_edge { self.grow_cost(tree, part, partition, e) } else { Updates { edge: 1, aggr: 0, core: 0 } };
        *self.per_edge.entry(e).or_insert(0) += 1;
        if first_at_edge {
            *self.per_pod.entry(tree.pod_of_edge(e)).or_insert(0) += 1;
        }
        u
    }

    /// Remove member `h`; the updates the leave causes (those of the join it undoes).
    pub fn leave(&mut self, tree: &FatTree, part: &Partitioning, partition: u32, h: u32) -> Updates {
        let e = tree.edge_of_host(h);
        let n = self.per_edge.get_mut(&e).expect("leave of a host that is not a member");
        *n -= 1;
        if *n > 0 {
            return Updates { edge: 1, aggr: 0, core: 0 };
        }
        self.per_edge.remove(&e);
        let pod = tree.pod_of_edge(e);
        let m = self.per_pod.get_mut(&pod).expect("pod of a member edge");
        *m -= 1;
        if *m == 0 {
            self.per_pod.remove(&pod);
        }
        self.grow_cost(tree, part, partition, e)
    }

    /// Updates when edge switch `e` (not in the footprint) gets its first member.
    fn grow_cost(&self, tree: &FatTree, part: &Partitioning, partition: u32, e: u32) -> Updates {
        let pod = tree.pod_of_edge(e);
        let mut u = Updates { edge: 1, aggr: 0, core: 0 };
        let edges = self.edges();
        if edges >= 1 {
            u.aggr += part.aggrs(pod, partition).len() as u64;
        }
        if edges == 1 {
            // One edge switch to two: the other one's pod gets aggregation entries too.
            let (&other, _) = self.per_edge.iter().next().expect("one edge");
            let other_pod = tree.pod_of_edge(other);
            if other_pod != pod {
                u.aggr += part.aggrs(other_pod, partition).len() as u64;
            }
        }
        if !self.per_pod.contains_key(&pod) && self.pods() >= 1 {
            u.core += part.cores(partition).len() as u64;
        }
        u
    }
}

/// §4.3.2's update load on the switches: `events_per_pod` join and leave events a second in
/// every pod, each costing `per_event` switch updates per layer (edge, aggregation, core: the
/// mean over joins and leaves), spread evenly over the layer's switches. Returns updates a second
/// per switch, per layer: edge and aggregation switches see their own pod's events
/// (`events_per_pod · u / (k/2)`), the cores every pod's (`events_per_pod · k · u / (k²/4)`).
pub fn update_load(tree: &FatTree, events_per_pod: f64, per_event: [f64; 3]) -> [f64; 3] {
    let events = events_per_pod * tree.pods() as f64;
    let [edge, aggr, core] = per_event;
    [events * edge / tree.edges() as f64, events * aggr / tree.aggrs() as f64, events * core / tree.cores() as f64]
}

/// One round of updates taking the group from `before` to `after`: every switch whose entry
/// differs.
pub fn batch_updates(tree: &FatTree, part: &Partitioning, before: &GroupTree, after: &GroupTree) -> Updates {
    fn differing(a: &[(u32, u64)], b: &[(u32, u64)]) -> Vec<u32> {
        let a: HashMap<u32, u64> = a.iter().copied().collect();
        let b: HashMap<u32, u64> = b.iter().copied().collect();
        let mut keys: Vec<u32> = a.keys().chain(b.keys()).copied().collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter().filter(|k| a.get(k) != b.get(k)).collect()
    }
    let p = after.partition;
    let _ = tree;
    Updates {
        edge: differing(&before.edges, &after.edges).len() as u64,
        aggr: differing(&before.pods, &after.pods).iter().map(|&pod| part.aggrs(pod, p).len() as u64).sum(),
        core: if before.core_ports != after.core_ports { part.cores(p).len() as u64 } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fat_tree::Wiring;
    use crate::rng::{below, Streams};

    fn setup() -> (FatTree, Partitioning) {
        let t = FatTree::new(8, Wiring::Ab, "k").unwrap();
        let p = Partitioning::distribute(&t, 4, 4, 2, "m").unwrap();
        (t, p)
    }

    /// k = 8, r_a = 2, r_c = 4. Hosts 0 and 1 share edge 0 (pod 0); host 4 is on edge 1 (pod 0);
    /// host 16 is on edge 4 (pod 1).
    #[test]
    fn per_event_counts_by_hand() {
        let (t, p) = setup();
        let mut f = Footprint::default();
        let j = |f: &mut Footprint, h| f.join(&t, &p, 0, h);
        assert_eq!(j(&mut f, 0), Updates { edge: 1, aggr: 0, core: 0 });
        assert_eq!(j(&mut f, 1), Updates { edge: 1, aggr: 0, core: 0 });
        // Second edge switch, same pod: the pod's two holders get an entry.
        assert_eq!(j(&mut f, 4), Updates { edge: 1, aggr: 2, core: 0 });
        // Second pod: its two holders and the four cores.
        assert_eq!(j(&mut f, 16), Updates { edge: 1, aggr: 2, core: 4 });
        assert_eq!(f.leave(&t, &p, 0, 16), Updates { edge: 1, aggr: 2, core: 4 });
        assert_eq!(f.leave(&t, &p, 0, 0), Updates { edge: 1, aggr: 0, core: 0 });
        assert_eq!(f.leave(&t, &p, 0, 4), Updates { edge: 1, aggr: 2, core: 0 });
        // One edge (host 1) to two in different pods: holders of both pods and the cores.
        let mut g = Footprint::default();
        j(&mut g, 1);
        assert_eq!(j(&mut g, 16), Updates { edge: 1, aggr: 4, core: 4 });
    }

    /// Event by event, the incremental counts equal the diff of the trees before and after.
    #[test]
    fn incremental_counts_equal_tree_diffs() {
        let (t, p) = setup();
        let mut rng = Streams::new(7).stream();
        let mut f = Footprint::default();
        let mut members: Vec<u32> = Vec::new();
        for _ in 0..2000 {
            let before = GroupTree::build(&t, 1, &members);
            let h = below(&mut rng, t.hosts() as u64) as u32;
            let u = if let Some(i) = members.iter().position(|&m| m == h) {
                members.swap_remove(i);
                f.leave(&t, &p, 1, h)
            } else {
                members.push(h);
                f.join(&t, &p, 1, h)
            };
            let after = GroupTree::build(&t, 1, &members);
            assert_eq!(u, batch_updates(&t, &p, &before, &after));
        }
    }

    /// §4.3.2's arithmetic from Table 2b's own numbers (k = 48: 24 edge and 24 aggregation
    /// switches a pod, 576 cores; 149,923 joins and 150,077 leaves): 1,000 events a second in a
    /// pod give 1,000 · 1 / 24 = 41.7 edge updates a second per switch, 1,000 · 1.875 / 24 = 78.1
    /// aggregation updates ((1.89 · 149,923 + 1.86 · 150,077) / 300,000 = 1.875 per event) and
    /// 48,000 · 1.595 / 576 = 132.9 core updates (1.64 and 1.55: 1.595): the paper's "42", "78"
    /// and "133", which so average joins and leaves.
    #[test]
    fn update_load_is_the_papers_arithmetic() {
        let t = FatTree::new(48, Wiring::Ab, "k").unwrap();
        let mean = |j: f64, l: f64| (j * 149_923.0 + l * 150_077.0) / 300_000.0;
        let [edge, aggr, core] = update_load(&t, 1000.0, [1.0, mean(1.89, 1.86), mean(1.64, 1.55)]);
        assert_eq!((edge.round(), aggr.round(), core.round()), (42.0, 78.0, 133.0), "{edge} {aggr} {core}");
    }

    /// Batching: three joins on one edge switch of an empty group cost 1 edge update, not 3;
    /// a join and a leave of the same host cost nothing.
    #[test]
    fn batching_counts_by_hand() {
        let (t, p) = setup();
        let empty = GroupTree::build(&t, 0, &[]);
        let three = GroupTree::build(&t, 0, &[0, 1, 2]);
        assert_eq!(batch_updates(&t, &p, &empty, &three), Updates { edge: 1, aggr: 0, core: 0 });
        let spread = GroupTree::build(&t, 0, &[0, 4, 16]);
        // 3 edges, pods 0 and 1 (2 holders each), 4 cores.
        assert_eq!(batch_updates(&t, &p, &empty, &spread), Updates { edge: 3, aggr: 4, core: 4 });
        assert_eq!(batch_updates(&t, &p, &spread, &spread), Updates::default());
    }
}
