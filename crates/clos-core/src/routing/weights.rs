//! Per-port weights from path capacities (WCMP after a failure; Presto's weighted variant).
//!
//! A port's weight toward a destination ToR is the summed bottleneck capacity of the shortest
//! paths that leave by it: Σ over paths p through the port of min over p's links of their rate.
//! This is the weight DRILL gives a component (§3.4.1, "proportional to the aggregate capacity
//! of its paths") applied to single ports, and the quantity WCMP (Zhou et al., EuroSys'14)
//! balances: with one of an aggregation switch's four core links down, the edge switches below it
//! send it 3/4 of what they send each of its healthy peers. With equal links and no failure every
//! weight is equal, so WCMP is ECMP.

use super::LinkState;
use crate::topology::Topology;

/// Bottleneck capacities of the shortest paths from a node to the destination, with how many
/// paths have each (few distinct values, so a short list).
type Caps = Vec<(u64, u64)>;

fn add(caps: &mut Caps, cap: u64, count: u64) {
    match caps.iter_mut().find(|c| c.0 == cap) {
        Some(c) => c.1 += count,
        None => caps.push((cap, count)),
    }
}

/// Weight of every port toward the ToR whose switch distances are `dist` (0 for ports that are
/// not next hops). `fixed` replaces the computed weight of a next hop by a configured one.
pub fn port_weights(t: &Topology, state: &LinkState, dist: &[u32], fixed: Option<&[u64]>) -> Vec<u64> {
    let mut weight = vec![0u64; t.ports.len()];
    let mut caps: Vec<Caps> = vec![Vec::new(); t.nodes.len()];
    let mut order: Vec<u32> = (t.n_hosts as u32..t.nodes.len() as u32).filter(|&n| dist[n as usize] != u32::MAX).collect();
    order.sort_by_key(|&n| dist[n as usize]);
    for n in order {
        let d = dist[n as usize];
        if d == 0 {
            caps[n as usize] = vec![(u64::MAX, 1)];
            continue;
        }
        let mut mine = Caps::new();
        for p in t.ports_of(n) {
            let peer = t.ports[p as usize].to as usize;
            if !state.port_up(t, p) || t.is_host(peer as u32) || dist[peer] != d - 1 {
                continue;
            }
            let rate = state.port_rate(t, p);
            let mut w = 0;
            for &(c, k) in &caps[peer] {
                let cap = c.min(rate);
                w += cap * k;
                add(&mut mine, cap, k);
            }
            weight[p as usize] = fixed.map_or(w, |f| f[p as usize]);
        }
        caps[n as usize] = mine;
    }
    weight
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::switch_distances;
    use crate::topology::fat_tree::{build, FatTree};
    use crate::units::Rate;

    /// k=4 fat tree, one aggregation-core link down: toward another pod, the edge below that
    /// aggregation switch weighs it 1 (one healthy core path of 10G) against 2 for its peer.
    #[test]
    fn a_failed_core_link_halves_the_weight_of_its_aggregation_switch() {
        let t = build(&FatTree { k: 4, remove_cores: 0 }, Rate(10), Rate(10), 0).unwrap();
        let mut state = LinkState::all_up(&t);
        let edge = t.tors[0];
        let aggs: Vec<u32> = t.ports_of(edge).filter(|&p| !t.is_host(t.ports[p as usize].to)).collect();
        let agg0 = t.ports[aggs[0] as usize].to;
        let core_link = t.ports_of(agg0).find(|&p| t.role(t.ports[p as usize].to) == crate::topology::Role::Core).unwrap();
        state.rate[t.link_of[core_link as usize] as usize] = 0;
        let far = t.tors[7];
        let dist = switch_distances(&t, &[far], &|p| state.port_up(&t, p));
        let w = port_weights(&t, &state, &dist, None);
        assert_eq!((w[aggs[0] as usize], w[aggs[1] as usize]), (10, 20));
    }
}
