//! DRILL's decomposition of an asymmetric Clos into symmetric components (DRILL §3.4.1).
//!
//! Step 1, the Quiver: for every ordered pair of leaves (ToRs) and every link (a, b) on one of
//! their shortest paths, the label (src, dst, cf), where the capacity factor cf is the bottleneck
//! capacity from src to a along the path over the capacity of (a, b), or infinity when a = src
//! (§3.4.3). Parallel links between two switches are one Quiver edge with their summed capacity
//! ("one 40Gbps link or four 10Gbps links", §3.4.3). An edge's *score* is a hash of its label
//! set. Step 2: at each switch, the shortest paths toward a destination ToR are grouped by
//! their score sequence; paths with equal sequences are symmetric and form a component, whose
//! weight is the summed capacity of its paths (the capacity of a path is that of its slowest
//! link). The data plane hashes a flow to a component by weight and runs DRILL(d, m) over the
//! component's first-hop ports (§3.4.2).
//!
//! Scores are sums of 64-bit label hashes, so a set hash does not depend on the order labels
//! are found in; two different label sets collide with probability about 2^-64.

use super::{gcd, LinkState};
use crate::rng::mix64;
use crate::topology::Topology;
use std::collections::HashMap;

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
                // Prefix bottlenecks of the paths from src to each node, walking down the
                // shortest-path DAG one distance level at a time.
                let mut prefix: HashMap<u32, Vec<u64>> = HashMap::from([(src, vec![u64::MAX])]);
                let mut level = vec![src];
                while let Some(&first) = level.first() {
                    if dist[first as usize] == 0 {
                        break;
                    }
                    let mut next_level = Vec::new();
                    for &a in &level {
                        let caps = prefix[&a].clone();
                        for b in next_switches(t, state, a, dist) {
                            let c = capacity(t, state, a, b);
                            let edge = score.entry((a, b)).or_insert(0);
                            for &x in &caps {
                                let cf = if a == src {
                                    INFINITE
                                } else {
                                    let g = gcd(x, c).max(1);
                                    (x / g, c / g)
                                };
                                let label = mix64(mix64(mix64((src as u64) << 32 | dst as u64) ^ cf.0) ^ cf.1.rotate_left(17));
                                *edge = edge.wrapping_add(label);
                            }
                            let entry = prefix.entry(b).or_default();
                            if entry.is_empty() {
                                next_level.push(b);
                            }
                            for &x in &caps {
                                let m = x.min(c);
                                if !entry.contains(&m) {
                                    entry.push(m);
                                }
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
        // (score sequence hash, first hop, capacity) of every shortest path, depth first.
        let mut paths: Vec<(u64, u32, u64)> = Vec::new();
        let mut stack: Vec<(u32, u32, u64, u64)> = Vec::new(); // (node, first hop, score hash, bottleneck)
        for b in next_switches(t, state, node, dist) {
            stack.push((b, b, mix64(self.score(node, b)), capacity(t, state, node, b)));
        }
        stack.reverse();
        while let Some((n, first, h, cap)) = stack.pop() {
            if dist[n as usize] == 0 {
                paths.push((h, first, cap));
                continue;
            }
            let mut children: Vec<(u32, u32, u64, u64)> = next_switches(t, state, n, dist)
                .into_iter()
                .map(|b| (b, first, mix64(h ^ self.score(n, b)), cap.min(capacity(t, state, n, b))))
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
