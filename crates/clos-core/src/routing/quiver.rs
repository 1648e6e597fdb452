//! DRILL's decomposition of an asymmetric Clos into symmetric components (DRILL §3.4.1).
//!
//! Step 1, the Quiver: for every ordered pair of leaves (ToRs) and every link (a, b) on one of
//! their shortest paths, the label (src, dst). Parallel links between two switches are one
//! Quiver edge with their summed capacity ("one 40Gbps link or four 10Gbps links", §3.4.3). An
//! edge's *score* is a hash of its set of labels. Step 2: at each switch, the shortest paths
//! toward a destination ToR are grouped by their sequence of (edge score, capacity factor);
//! paths with equal sequences are symmetric and form a component, whose weight is the summed
//! capacity of its paths (the capacity of a path is that of its slowest link). The data plane
//! hashes a flow to a component by weight and runs DRILL(d, m) over the component's first-hop
//! ports (§3.4.2).
//!
//! The capacity factor (§3.4.3) of a path p at its link (a, b) is the bottleneck capacity of p
//! from its start to a over the capacity of (a, b), infinite at the first link: the rate at
//! which p's traffic can build a queue at a toward b. It belongs to the path, not to the edge:
//! §3.4.3's worked example (Fig. 4(a) with L0-S0, L0-S1 and L1-S0 at 40 Gb/s, the rest at 10)
//! has H0 = L0 S0 L1 ~ H2 = L0 S2 L1 but not ~ H1 = L0 S1 L1, which holds when edges are
//! compared by their (src, dst) labels and each path by its own factors (1 on S0 -> L1 and on
//! S2 -> L1, 4 on S1 -> L1); folding every pair's factor into the edge's label set instead
//! would tell S0 -> L1 (L2's factor 1/4) from S2 -> L1 (L2's factor 1) and split H0 from H2.
//! A switch decomposes its own paths, so a path starts at the deciding switch (§3.4.1: "each
//! source switch decomposes its set of shortest paths"), with its first link's factor infinite.
//!
//! Scores are sums of 64-bit label hashes over each edge's label set, so a set hash does not
//! depend on the order labels are found in; two different label sets collide with probability
//! about 2^-64.

use super::{gcd, LinkState};
use crate::rng::mix64;
use crate::topology::Topology;
use std::collections::{HashMap, HashSet};

/// The capacity factor of a path's first link.
const INFINITE: (u64, u64) = (1, 0);

pub struct Quiver {
    /// Score of each Quiver edge (a, b).
    score: HashMap<(u32, u32), u64>,
}

/// Summed capacity of the up links from `a` to `b` (a Quiver edge's capacity).
fn capacity(t: &Topology, state: &LinkState, a: u32, b: u32) -> u64 {
    t.ports_of(a).filter(|&p| t.ports[p as usize].to == b).map(|p| state.port_rate(t, p)).sum()
}

/// The switches one hop closer to the destination (by `dist`) over up links, each once.
fn next_switches(t: &Topology, state: &LinkState, node: u32, dist: &[u32]) -> Vec<u32> {
    let d = dist[node as usize];
    let mut out: Vec<u32> = Vec::new();
    if d == 0 || d == u32::MAX {
        return out;
    }
    for p in t.ports_of(node) {
        let peer = t.ports[p as usize].to;
        if state.port_up(t, p) && !t.is_host(peer) && dist[peer as usize] == d - 1 && !out.contains(&peer) {
            out.push(peer);
        }
    }
    out
}

/// The capacity factor x / c in lowest terms, hashed.
fn factor_hash(x: u64, c: u64) -> u64 {
    let (a, b) = if x == u64::MAX { INFINITE } else { (x / gcd(x, c).max(1), c / gcd(x, c).max(1)) };
    mix64(a ^ mix64(b.rotate_left(17)))
}

impl Quiver {
    /// `dists[i]`: switch distances to ToR `t.tors[i]` over the up links of `state`.
    pub fn build(t: &Topology, state: &LinkState, dists: &[Vec<u32>]) -> Quiver {
        let mut score: HashMap<(u32, u32), u64> = HashMap::new();
        for (di, dist) in dists.iter().enumerate() {
            let dst = t.tors[di];
            for &src in &t.tors {
                if src == dst || dist[src as usize] == u32::MAX {
                    continue;
                }
                // Every edge on a shortest src -> dst path gets the label (src, dst) once,
                // walking down the shortest-path DAG one distance level at a time.
                let label = mix64((src as u64) << 32 | dst as u64);
                let mut labelled: HashSet<(u32, u32)> = HashSet::new();
                let mut level = vec![src];
                while !level.is_empty() {
                    let mut next_level = Vec::new();
                    for &a in &level {
                        for b in next_switches(t, state, a, dist) {
                            if labelled.insert((a, b)) {
                                let edge = score.entry((a, b)).or_insert(0);
                                *edge = edge.wrapping_add(label);
                            }
                            if !next_level.contains(&b) {
                                next_level.push(b);
                            }
                        }
                    }
                    level = next_level;
                }
            }
        }
        Quiver { score }
    }

    /// Score of the Quiver edge (a, b) (0 if no shortest path between leaves uses it).
    pub fn score(&self, a: u32, b: u32) -> u64 {
        self.score.get(&(a, b)).copied().unwrap_or(0)
    }

    /// The components at `node` toward the ToR whose switch distances are `dist`: for each, the
    /// first-hop ports of its paths (in port order) and its weight (summed path capacity).
    pub fn components(&self, t: &Topology, state: &LinkState, node: u32, dist: &[u32]) -> Vec<(Vec<u32>, u64)> {
        // (hash of the path's (score, capacity factor) sequence, first hop, capacity) of every
        // shortest path, depth first.
        let mut paths: Vec<(u64, u32, u64)> = Vec::new();
        let mut stack: Vec<(u32, u32, u64, u64)> = Vec::new(); // (node, first hop, sequence hash, bottleneck)
        for b in next_switches(t, state, node, dist) {
            let c = capacity(t, state, node, b);
            stack.push((b, b, mix64(self.score(node, b) ^ factor_hash(u64::MAX, c)), c));
        }
        stack.reverse();
        while let Some((n, first, h, cap)) = stack.pop() {
            if dist[n as usize] == 0 {
                paths.push((h, first, cap));
                continue;
            }
            let mut children: Vec<(u32, u32, u64, u64)> = next_switches(t, state, n, dist)
                .into_iter()
                .map(|b| {
                    let c = capacity(t, state, n, b);
                    (b, first, mix64(h ^ self.score(n, b) ^ factor_hash(cap, c)), cap.min(c))
                })
                .collect();
            children.reverse();
            stack.extend(children);
        }
        let mut components: Vec<(u64, Vec<u32>, u64)> = Vec::new();
        for (h, first, cap) in paths {
            match components.iter_mut().find(|c| c.0 == h) {
                Some(c) => {
                    if !c.1.contains(&first) {
                        c.1.push(first);
                    }
                    c.2 += cap;
                }
                None => components.push((h, vec![first], cap)),
            }
        }
        components
            .into_iter()
            .map(|(_, firsts, w)| {
                let ports = t.ports_of(node).filter(|&p| state.port_up(t, p) && firsts.contains(&t.ports[p as usize].to)).collect();
                (ports, w)
            })
            .collect()
    }
}
