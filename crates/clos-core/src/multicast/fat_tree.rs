//! The three-tier fat tree as the multicast control plane sees it (Li & Freedman, CoNEXT'13,
//! §2.2 and Figure 1): `k` pods of `k/2` edge and `k/2` aggregation switches, `k²/4` core
//! switches, `k/2` hosts per edge switch, `k³/4` hosts.
//!
//! Numbering: host `h` sits on edge switch `h / (k/2)` at port `h % (k/2)`; edge and aggregation
//! switch `pod·(k/2) + i` is the `i`-th of its pod; cores are `0..k²/4`. The wiring between
//! aggregation and core switches is either the "standard" one of Al-Fares et al. (aggregation
//! switch `a` of every pod reaches cores `a·k/2 .. (a+1)·k/2`) or the AB wiring of F10 (Liu et al.,
//! the paper's [26]): even pods are type A and wired like the standard tree, odd pods are type B
//! and aggregation switch `a` reaches cores `a, a + k/2, a + 2·k/2, …` (strided).
//!
//! This is an index calculator, not the packet simulator's fabric: the statistical evaluation
//! needs 27,648 hosts and nothing but who connects to whom.

use crate::error::{bad, Result};

/// How the aggregation layer is wired to the cores (Figure 1a and 1c): the simulator's own
/// `topology.wiring`, so the control plane and the packet-level fabric agree.
pub use crate::topology::ab_wiring::Wiring;

/// A k-ary fat tree's switch and host indices.
#[derive(Clone, Debug)]
pub struct FatTree {
    pub k: u32,
    pub wiring: Wiring,
}

impl FatTree {
    /// `k` must be even and at most 64 (port sets are kept as 64-bit masks).
    pub fn new(k: u32, wiring: Wiring, field: &str) -> Result<FatTree> {
        if k < 4 || !k.is_multiple_of(2) || k > 64 {
            return Err(bad(field, format!("k = {k}: use an even number of switch ports from 4 to 64 (the paper uses 48)")));
        }
        Ok(FatTree { k, wiring })
    }

    pub fn half(&self) -> u32 {
        self.k / 2
    }
    pub fn pods(&self) -> u32 {
        self.k
    }
    pub fn hosts(&self) -> u32 {
        self.k * self.k * self.k / 4
    }
    pub fn edges(&self) -> u32 {
        self.k * self.half()
    }
    pub fn aggrs(&self) -> u32 {
        self.k * self.half()
    }
    pub fn cores(&self) -> u32 {
        self.half() * self.half()
    }
    pub fn hosts_per_pod(&self) -> u32 {
        self.half() * self.half()
    }
    /// The edge switch (global index) host `h` hangs off.
    pub fn edge_of_host(&self, h: u32) -> u32 {
        h / self.half()
    }
    /// The port of its edge switch host `h` uses.
    pub fn host_port(&self, h: u32) -> u32 {
        h % self.half()
    }
    pub fn pod_of_edge(&self, e: u32) -> u32 {
        e / self.half()
    }
    /// The edge switch's index inside its pod (its port on every aggregation switch of the pod).
    pub fn edge_in_pod(&self, e: u32) -> u32 {
        e % self.half()
    }
    pub fn pod_of_host(&self, h: u32) -> u32 {
        h / self.hosts_per_pod()
    }
    /// Whether the pod is wired as type B (only in AB trees: the odd pods).
    pub fn type_b(&self, pod: u32) -> bool {
        self.wiring.type_b(pod)
    }
    /// The core at the `j`-th uplink of aggregation switch `a` (index in its pod) of `pod`.
    pub fn core_above(&self, pod: u32, a: u32, j: u32) -> u32 {
        self.wiring.core_above(self.half(), pod, a, j)
    }
    /// The aggregation switch (index in the pod) that core `c` reaches in `pod`.
    pub fn aggr_below(&self, c: u32, pod: u32) -> u32 {
        self.wiring.aggr_below(self.half(), c, pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k4_counts_and_wiring() {
        let t = FatTree::new(4, Wiring::Ab, "k").unwrap();
        assert_eq!((t.hosts(), t.edges(), t.aggrs(), t.cores()), (16, 8, 8, 4));
        // Type A pod 0: aggr 0 -> cores 0, 1; aggr 1 -> cores 2, 3 (Figure 1c, red pods).
        assert_eq!([t.core_above(0, 0, 0), t.core_above(0, 0, 1), t.core_above(0, 1, 0), t.core_above(0, 1, 1)], [0, 1, 2, 3]);
        // Type B pod 1: aggr 0 -> cores 0, 2; aggr 1 -> cores 1, 3 (blue pods).
        assert_eq!([t.core_above(1, 0, 0), t.core_above(1, 0, 1), t.core_above(1, 1, 0), t.core_above(1, 1, 1)], [0, 2, 1, 3]);
        for pod in 0..4 {
            for a in 0..2 {
                for j in 0..2 {
                    assert_eq!(t.aggr_below(t.core_above(pod, a, j), pod), a);
                }
            }
        }
        // Host 13 = pod 3, edge 6 (the pod's second), port 1.
        assert_eq!((t.pod_of_host(13), t.edge_of_host(13), t.edge_in_pod(6), t.host_port(13)), (3, 6, 0, 1));
    }

    #[test]
    fn bad_k_is_an_error_naming_the_field() {
        let e = FatTree::new(5, Wiring::Standard, "multicast.k").unwrap_err();
        assert!(e.to_string().starts_with("multicast.k: k = 5"));
    }
}
