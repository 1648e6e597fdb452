//! Three-tier k-ary fat tree (Al-Fares et al.), the fabric of the PLTS and LocalFlow evaluations.
//!
//! k pods, each with k/2 edge (ToR) and k/2 aggregation switches; (k/2)^2 cores in k/2 groups,
//! aggregation switch j of every pod connecting to core group j. PLTS oversubscribes it by removing
//! cores evenly across the groups (16 cores at k=8: removing 4, 8, 12 gives 4:3, 2:1, 4:1).
//! `topology.wiring = "ab"` wires the odd pods as F10's type B instead (`ab_wiring.rs`).

use super::ab_wiring::Wiring;
use super::{FabricBuilder, Role, Topology};
use crate::error::{bad, Result};
use crate::units::{Rate, Time};

#[derive(Clone, Debug)]
pub struct FatTree {
    pub k: u32,
    pub remove_cores: u32,
}

/// Cores kept in each core group after removing `remove` of them evenly (groups with lower index
/// lose one more when `remove` is not a multiple of the group count).
pub fn cores_per_group(k: u32, remove: u32) -> Vec<u32> {
    let h = k / 2;
    (0..h).map(|g| h - remove / h - u32::from(g < remove % h)).collect()
}

pub fn build(c: &FatTree, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<Topology> {
    Ok(describe(c, host_rate, fabric_rate, delay)?.build())
}

/// The fabric's nodes and links, before lowering (scenario link overrides apply here).
pub fn describe(c: &FatTree, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<FabricBuilder> {
    describe_wired(c, Wiring::Standard, host_rate, fabric_rate, delay)
}

/// [`describe`] with the aggregation-core wiring given (`topology.wiring`).
pub fn describe_wired(c: &FatTree, wiring: Wiring, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<FabricBuilder> {
    if c.k < 2 || !c.k.is_multiple_of(2) {
        return Err(bad("topology.k", format!("must be an even number >= 2, got {}", c.k)));
    }
    if c.k > 64 {
        return Err(bad("topology.k", format!("{} gives {} hosts; the largest supported is k = 64", c.k, c.k.pow(3) / 4)));
    }
    let h = c.k / 2;
    if c.remove_cores >= h * h || c.remove_cores / h >= h {
        return Err(bad(
            "topology.remove_cores",
            format!("removing {} of {} cores leaves a core group empty; remove at most {}", c.remove_cores, h * h, h * h - h),
        ));
    }
    if wiring == Wiring::Ab && c.remove_cores > 0 {
        return Err(bad(
            "topology.wiring",
            "\"ab\" needs every core (F10 pairs each type-A and type-B aggregation switch on one): remove topology.remove_cores",
        ));
    }
    let mut b = FabricBuilder::new(delay, "core");
    let hosts: Vec<Vec<u32>> = (0..c.k * h).map(|e| (0..h).map(|_| b.node(Role::Host, e / h)).collect()).collect();
    let edges: Vec<u32> = (0..c.k * h).map(|e| b.node(Role::Tor, e / h)).collect();
    let aggs: Vec<u32> = (0..c.k * h).map(|a| b.node(Role::Agg, a / h)).collect();
    let kept = cores_per_group(c.k, c.remove_cores);
    let groups: Vec<Vec<u32>> = kept.iter().map(|&n| (0..n).map(|_| b.node(Role::Core, u32::MAX)).collect()).collect();
    for (e, &edge) in edges.iter().enumerate() {
        for &host in &hosts[e] {
            b.link(host, edge, host_rate);
        }
        let pod = e as u32 / h;
        for j in 0..h {
            b.link(edge, aggs[(pod * h + j) as usize], fabric_rate);
        }
    }
    let all_cores: Vec<u32> = groups.iter().flatten().copied().collect();
    for (a, &agg) in aggs.iter().enumerate() {
        if wiring == Wiring::Ab {
            let pod = a as u32 / h;
            for j in 0..h {
                b.link(agg, all_cores[wiring.core_above(h, pod, a as u32 % h, j) as usize], fabric_rate);
            }
            continue;
        }
        for &core in &groups[a % h as usize] {
            b.link(agg, core, fabric_rate);
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k8_has_128_hosts_80_switches() {
        let t = build(&FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        assert_eq!(t.n_hosts, 128);
        assert_eq!(t.n_switches(), 32 + 32 + 16);
    }

    #[test]
    fn removing_cores_spreads_over_groups() {
        assert_eq!(cores_per_group(8, 4), vec![3, 3, 3, 3]);
        assert_eq!(cores_per_group(8, 6), vec![2, 2, 3, 3]);
        let t = build(&FatTree { k: 8, remove_cores: 8 }, Rate(1), Rate(1), 0).unwrap();
        assert_eq!(t.n_switches(), 64 + 8);
    }

    #[test]
    fn impossible_parameters_are_named() {
        assert!(build(&FatTree { k: 7, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap_err().to_string().starts_with("topology.k"));
        let e = build(&FatTree { k: 4, remove_cores: 4 }, Rate(1), Rate(1), 0).unwrap_err();
        assert!(e.to_string().starts_with("topology.remove_cores"), "{e}");
    }
}
