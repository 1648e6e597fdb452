//! How a fat tree's aggregation switches are wired to its cores (`topology.wiring`): the
//! standard wiring of Al-Fares et al., or F10's AB wiring (Liu et al., NSDI'13; Li & Freedman
//! §2.2 and §3.1.1, Figure 1c), which the multicast paper's Algorithm 1 and 5-hop detours
//! assume.
//!
//! Cores are numbered `0..(k/2)²`. Standard: aggregation switch `a` (index in its pod) of every
//! pod reaches cores `a·k/2 .. (a+1)·k/2`. AB: even pods are type A and wired the standard way;
//! odd pods are type B and their aggregation switch `a` reaches cores `a, a + k/2, a + 2·k/2, …`
//! (strided). Two aggregation switches of a type-A and a type-B pod then share exactly one core,
//! so a core that lost its link to one pod reaches it again in three hops through a pod of the
//! other type and another core, landing on another aggregation switch of that pod (F10's
//! rerouting, which the multicast detours use).

use super::{Role, Topology};
use crate::error::{bad, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `topology.wiring` of a fat tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Wiring {
    /// The same pattern in every pod (Al-Fares et al.).
    #[default]
    Standard,
    /// F10's AB fat tree: type-A (even) pods consecutive, type-B (odd) pods strided.
    Ab,
}

impl Wiring {
    pub fn parse(name: &str, field: &str) -> Result<Wiring> {
        match name {
            "standard" => Ok(Wiring::Standard),
            "ab" => Ok(Wiring::Ab),
            other => Err(bad(field, format!("unknown wiring {other:?}: use \"ab\" (F10) or \"standard\""))),
        }
    }

    /// Whether `pod` is wired as type B (only in AB trees: the odd pods).
    pub fn type_b(self, pod: u32) -> bool {
        self == Wiring::Ab && !pod.is_multiple_of(2)
    }

    /// The core at the `j`-th uplink of aggregation switch `a` (index in its pod) of `pod`, in
    /// a fat tree with `half = k/2`.
    pub fn core_above(self, half: u32, pod: u32, a: u32, j: u32) -> u32 {
        if self.type_b(pod) {
            j * half + a
        } else {
            a * half + j
        }
    }

    /// The aggregation switch (index in the pod) that core `c` reaches in `pod`.
    pub fn aggr_below(self, half: u32, c: u32, pod: u32) -> u32 {
        if self.type_b(pod) {
            c % half
        } else {
            c / half
        }
    }

    /// The wiring of a built fat tree with `k` ports per switch and every core present (nodes:
    /// hosts, edges, aggregation switches, cores): AB if pod 1's first aggregation switch
    /// reaches core `k/2` (its second uplink in a type-B pod; in the standard wiring that core
    /// is above the pod's second aggregation switch).
    pub fn of(topo: &Topology, k: u32) -> Wiring {
        let half = k / 2;
        let (edges, aggrs) = (k * half, k * half);
        let aggr = topo.n_hosts as u32 + edges + half;
        let core = topo.n_hosts as u32 + edges + aggrs + half;
        let fits = (core as usize) < topo.nodes.len() && topo.role(aggr) == Role::Agg && topo.role(core) == Role::Core;
        if half >= 2 && fits && !topo.links_between(aggr, core).is_empty() {
            Wiring::Ab
        } else {
            Wiring::Standard
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fat_tree::{describe_wired, FatTree};
    use crate::units::Rate;

    /// k = 4 by hand (Figure 1c): type-A pods 0 and 2, aggregation 0 -> cores 0, 1 and
    /// aggregation 1 -> cores 2, 3; type-B pods 1 and 3, aggregation 0 -> cores 0, 2 and
    /// aggregation 1 -> cores 1, 3. In node names: agg2 (pod 1's first) reaches core0 and core2.
    #[test]
    fn k4_ab_wiring_by_hand() {
        let t = describe_wired(&FatTree { k: 4, remove_cores: 0 }, Wiring::Ab, Rate(1), Rate(1), 0).unwrap().build();
        let n = |name: &str| t.node_named(name).unwrap();
        let cores_of = |agg: &str| -> Vec<String> {
            t.ports_of(n(agg)).map(|p| t.ports[p as usize].to).filter(|&m| t.role(m) == Role::Core).map(|m| t.nodes[m as usize].name.clone()).collect()
        };
        assert_eq!(cores_of("agg0"), ["core0", "core1"]);
        assert_eq!(cores_of("agg1"), ["core2", "core3"]);
        assert_eq!(cores_of("agg2"), ["core0", "core2"]);
        assert_eq!(cores_of("agg3"), ["core1", "core3"]);
        assert_eq!(cores_of("agg4"), ["core0", "core1"]);
        assert_eq!(cores_of("agg7"), ["core1", "core3"]);
        assert_eq!(Wiring::of(&t, 4), Wiring::Ab);
        let std = describe_wired(&FatTree { k: 4, remove_cores: 0 }, Wiring::Standard, Rate(1), Rate(1), 0).unwrap().build();
        assert_eq!(Wiring::of(&std, 4), Wiring::Standard);
        // Every core still reaches every pod once, and the index arithmetic agrees with the links.
        for pod in 0..4 {
            for a in 0..2 {
                for j in 0..2 {
                    let c = Wiring::Ab.core_above(2, pod, a, j);
                    assert_eq!(Wiring::Ab.aggr_below(2, c, pod), a);
                }
            }
        }
    }

    #[test]
    fn unknown_wiring_is_an_error_naming_the_field() {
        let e = Wiring::parse("f10", "topology.wiring").unwrap_err().to_string();
        assert!(e.starts_with("topology.wiring: unknown wiring \"f10\""), "{e}");
    }
}
