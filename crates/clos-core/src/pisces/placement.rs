//! Partition placement (Pisces §3.1, "PP"; seed 004 lines 7713-7841, Table 2 eqs. 7-10 at
//! lines 7740-7790): put every tenant's partition replicas on storage nodes so that each
//! tenant's *fair-share* partition demand fits within the node capacities, minimising the
//! maximum node utilisation to leave weight allocation and replica selection headroom.
//!
//! What the seed says, and what is ours:
//! - **Fair-share demand** `f_t,p` (line 7727, eq. 10). Each tenant t has one global weight
//!   `w_t` that sets its fair share `z_t` of the aggregate throughput (lines 7638-7641). Ours:
//!   the system is taken as fully subscribed, so `z_t = w_t / sum(w) x sum_n c_n`, and a
//!   partition's fair-share demand is `f_t,p = z_t x d_t,p` where `d_t,p` is the partition's
//!   share of the tenant's demand (the shares are normalised to sum to 1).
//! - **Replicas** (eq. 9): each partition has `r` replicas on `r` distinct nodes. The seed does
//!   not say how a partition's demand divides among them; ours charges each replica `f_t,p / r`,
//!   the split replica selection aims at (§3.3, line 7973: RS "smooth[s] the demand distribution
//!   across replicas"). A service that reads only a primary would need the full `f_t,p` on one
//!   node; that is not modelled here.
//! - **Objective** (eq. 7): minimise `max_n load_n / c_n`. The seed says only "a simple greedy
//!   algorithm that works reasonably well" (line 7837). Ours is the longest-processing-time
//!   greedy for makespan: partitions in decreasing fair-share demand (ties: lower tenant, then
//!   lower partition index); each partition's replicas go one by one to the node, among those
//!   not yet holding a replica of it, whose utilisation after adding the replica is lowest
//!   (ties: lower node index). Deterministic; `O(P x r x N)` for P partitions and N nodes.
//! - **Feasibility** (eq. 8): the greedy is not optimal (bin packing is NP-hard, line 7834), so
//!   the result says whether every node's load fits its capacity rather than failing: the
//!   controller decides what to do with an infeasible placement.

use crate::error::{bad, Result};

/// One tenant as placement sees it: its global weight and its partitions' demand shares.
#[derive(Clone, Debug, PartialEq)]
pub struct TenantDemand {
    /// Global weight `w_t` (> 0): the tenant's fair share is its weight's fraction of the
    /// aggregate capacity.
    pub weight: f64,
    /// Each partition's share of the tenant's demand (>= 0, not all 0; normalised by their sum).
    pub partition_shares: Vec<f64>,
}

/// One replica of one partition on one node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Replica {
    pub tenant: usize,
    pub partition: usize,
    pub node: usize,
    /// Fair-share demand charged to this replica (`f_t,p / r`), in the capacities' unit.
    pub demand: f64,
}

/// A placement and the per-node load it yields.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// Every replica, in placement order (decreasing partition demand).
    pub replicas: Vec<Replica>,
    /// `nodes_of[t][p]`: the nodes holding tenant t's partition p, in the order chosen.
    pub nodes_of: Vec<Vec<Vec<usize>>>,
    /// Fair-share demand placed on each node (sum of its replicas' demand).
    pub load: Vec<f64>,
    /// `load[n] / capacity[n]`.
    pub utilisation: Vec<f64>,
    /// The largest utilisation: the objective (eq. 7).
    pub max_utilisation: f64,
    /// Whether every node's load fits its capacity (eq. 8), within a relative 1e-9 for rounding.
    pub feasible: bool,
}

/// Place `replication` replicas of every tenant's partitions on nodes of the given capacities.
///
/// Errors (never panics) on: no tenants, no nodes, a capacity that is not finite and > 0, a
/// weight that is not finite and > 0, a tenant without partitions, partition shares that are
/// negative, not finite or all zero, and a replication factor of 0 or above the node count.
pub fn place(tenants: &[TenantDemand], capacities: &[f64], replication: usize) -> Result<Placement> {
    if tenants.is_empty() {
        return Err(bad("pisces.tenants", "no tenants to place; give at least one"));
    }
    if capacities.is_empty() {
        return Err(bad("pisces.nodes", "no storage nodes; give at least one capacity"));
    }
    for (n, &c) in capacities.iter().enumerate() {
        if !(c.is_finite() && c > 0.0) {
            return Err(bad(format!("pisces.nodes[{n}].capacity"), format!("{c} is not a positive finite capacity")));
        }
    }
    if replication == 0 || replication > capacities.len() {
        return Err(bad("pisces.replication", format!("{replication} replicas need between 1 and {} (the node count) distinct nodes", capacities.len())));
    }
    let total_weight = validate_tenants(tenants)?;
    let total_capacity: f64 = capacities.iter().sum();

    // Every partition with its fair-share demand f_t,p = z_t x d_t,p.
    let mut partitions: Vec<(usize, usize, f64)> = Vec::new();
    for (t, tenant) in tenants.iter().enumerate() {
        let fair_share = tenant.weight / total_weight * total_capacity;
        let share_sum: f64 = tenant.partition_shares.iter().sum();
        for (p, &d) in tenant.partition_shares.iter().enumerate() {
            partitions.push((t, p, fair_share * d / share_sum));
        }
    }
    // Longest first; ties keep (tenant, partition) order (the sort is stable).
    partitions.sort_by(|a, b| b.2.total_cmp(&a.2));

    let mut load = vec![0.0; capacities.len()];
    let mut nodes_of: Vec<Vec<Vec<usize>>> = tenants.iter().map(|t| vec![Vec::with_capacity(replication); t.partition_shares.len()]).collect();
    let mut replicas = Vec::with_capacity(partitions.len() * replication);
    for &(t, p, f) in &partitions {
        let demand = f / replication as f64;
        for _ in 0..replication {
            let chosen = &nodes_of[t][p];
            let node = (0..capacities.len())
                .filter(|n| !chosen.contains(n))
                .min_by(|&a, &b| {
                    let ua = (load[a] + demand) / capacities[a];
                    let ub = (load[b] + demand) / capacities[b];
                    ua.total_cmp(&ub).then(a.cmp(&b))
                })
                .expect("replication <= node count leaves a node free");
            load[node] += demand;
            nodes_of[t][p].push(node);
            replicas.push(Replica { tenant: t, partition: p, node, demand });
        }
    }
    let utilisation: Vec<f64> = load.iter().zip(capacities).map(|(l, c)| l / c).collect();
    let max_utilisation = utilisation.iter().copied().fold(0.0, f64::max);
    let feasible = utilisation.iter().all(|&u| u <= 1.0 + 1e-9);
    Ok(Placement { replicas, nodes_of, load, utilisation, max_utilisation, feasible })
}

/// Check the tenants and return the sum of their weights.
fn validate_tenants(tenants: &[TenantDemand]) -> Result<f64> {
    let mut total = 0.0;
    for (t, tenant) in tenants.iter().enumerate() {
        if !(tenant.weight.is_finite() && tenant.weight > 0.0) {
            return Err(bad(format!("pisces.tenants[{t}].weight"), format!("{} is not a positive finite weight", tenant.weight)));
        }
        if tenant.partition_shares.is_empty() {
            return Err(bad(format!("pisces.tenants[{t}].partitions"), "a tenant needs at least one partition"));
        }
        if tenant.partition_shares.iter().any(|d| !(d.is_finite() && *d >= 0.0)) {
            return Err(bad(format!("pisces.tenants[{t}].partitions"), "partition demand shares must be finite and >= 0"));
        }
        if tenant.partition_shares.iter().sum::<f64>() <= 0.0 {
            return Err(bad(format!("pisces.tenants[{t}].partitions"), "partition demand shares are all 0"));
        }
        total += tenant.weight;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(weight: f64, shares: &[f64]) -> TenantDemand {
        TenantDemand { weight, partition_shares: shares.to_vec() }
    }

    #[test]
    fn heterogeneous_nodes_get_the_obvious_optimum() {
        // Capacity 400 in all: A (weight 3) has fair share 300 in one partition, B (weight 1)
        // 100 in two partitions of 50. The optimum puts A alone on the 300-node and B's two
        // partitions on the 100-node: both exactly full. An order-blind round robin would put
        // A's 300 on node 0 and one of B's 50s on node 1 and one on node 0 (350 > 300).
        let p = place(&[tenant(3.0, &[1.0]), tenant(1.0, &[1.0, 1.0])], &[300.0, 100.0], 1).unwrap();
        assert_eq!(p.nodes_of, vec![vec![vec![0]], vec![vec![1], vec![1]]]);
        assert_eq!(p.load, vec![300.0, 100.0]);
        assert_eq!(p.utilisation, vec![1.0, 1.0]);
        assert_eq!(p.max_utilisation, 1.0);
        assert!(p.feasible);
    }

    #[test]
    fn replicas_go_to_distinct_nodes_and_balance_the_load() {
        // One tenant, three equal partitions of fair share 100 each, r = 2: each replica carries
        // 50, six replicas over three nodes of 100 fill every node exactly. By hand: P0 -> 0, 1;
        // P1 -> 2, then 0 (0 and 1 tie at 0.5 + 0.5, lower index); P2 -> 1, 2.
        let p = place(&[tenant(1.0, &[1.0, 1.0, 1.0])], &[100.0; 3], 2).unwrap();
        assert_eq!(p.nodes_of[0], vec![vec![0, 1], vec![2, 0], vec![1, 2]]);
        assert_eq!(p.load, vec![100.0; 3]);
        assert!(p.replicas.iter().all(|r| r.demand == 50.0));
        assert!(p.feasible);
    }

    #[test]
    fn skewed_partitions_are_packed_largest_first() {
        // Two tenants of equal weight on two nodes of 100: each has fair share 100, split
        // 60/40. Largest first: A0 -> 0, B0 -> 1, A1 -> 0 (tie 1.0 vs 1.0, lower index), B1 -> 1.
        let p = place(&[tenant(1.0, &[0.6, 0.4]), tenant(1.0, &[0.6, 0.4])], &[100.0, 100.0], 1).unwrap();
        assert_eq!(p.nodes_of, vec![vec![vec![0], vec![0]], vec![vec![1], vec![1]]]);
        assert!((p.load[0] - 100.0).abs() < 1e-9 && (p.load[1] - 100.0).abs() < 1e-9);
        assert!(p.feasible);
    }

    #[test]
    fn a_partition_larger_than_any_node_is_reported_infeasible() {
        // One partition of fair share 200 (all capacity) cannot fit a node of 100.
        let p = place(&[tenant(1.0, &[1.0])], &[100.0, 100.0], 1).unwrap();
        assert!(!p.feasible);
        assert_eq!(p.max_utilisation, 2.0);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_field() {
        let ok = [tenant(1.0, &[1.0])];
        let field = |r: Result<Placement>| match r {
            Err(crate::Error::Scenario { field, .. }) => field,
            other => panic!("expected a scenario error, got {other:?}"),
        };
        assert_eq!(field(place(&[], &[1.0], 1)), "pisces.tenants");
        assert_eq!(field(place(&ok, &[], 1)), "pisces.nodes");
        assert_eq!(field(place(&ok, &[100.0, 0.0], 1)), "pisces.nodes[1].capacity");
        assert_eq!(field(place(&ok, &[f64::NAN], 1)), "pisces.nodes[0].capacity");
        assert_eq!(field(place(&ok, &[1.0], 0)), "pisces.replication");
        assert_eq!(field(place(&ok, &[1.0], 2)), "pisces.replication");
        assert_eq!(field(place(&[tenant(0.0, &[1.0])], &[1.0], 1)), "pisces.tenants[0].weight");
        assert_eq!(field(place(&[tenant(1.0, &[])], &[1.0], 1)), "pisces.tenants[0].partitions");
        assert_eq!(field(place(&[tenant(1.0, &[0.0, 0.0])], &[1.0], 1)), "pisces.tenants[0].partitions");
        assert_eq!(field(place(&[tenant(1.0, &[-1.0, 2.0])], &[1.0], 1)), "pisces.tenants[0].partitions");
    }
}
