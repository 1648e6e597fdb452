//! Multicast address distribution: the address space cut into `n` partitions, each held by `r_c`
//! core switches and by `r_a` aggregation switches in every pod (Li & Freedman §3.1, Eq. 1-2,
//! Algorithm 1 for AB fat trees).
//!
//! Algorithm 1 (preconditions `n·r_c = k²/4`, `r_a² = r_c`, `2·r_a | k`): in one type-A pod,
//! aggregation switch `i_a` takes the `N_p = 2·n·r_a/k` partitions of range `R = ⌊i_a/r_a⌋`, and each
//! of them goes to `r_c/r_a` of the cores above `i_a`, in order; every aggregation switch of every
//! other pod then takes the partitions of the cores it reaches. Each core ends with exactly one
//! partition. On a standard fat tree the same procedure gives every pod the layout of the first.
//! [`Partitioning::distribute`] checks the result (every core one partition, `r_a` holders per pod
//! and partition, every core's partition held by the aggregation switch below it in every pod)
//! rather than trusting the preconditions alone.

use super::fat_tree::FatTree;
use crate::error::{bad, Error, Result};

/// Which switches hold which address partitions.
#[derive(Clone, Debug)]
pub struct Partitioning {
    pub n: u32,
    pub rc: u32,
    pub ra: u32,
    /// The partition of each core.
    pub core_partition: Vec<u32>,
    /// The partitions of each aggregation switch (global index), ascending.
    pub aggr_partitions: Vec<Vec<u32>>,
    /// `cores_of[p]`: the cores holding partition `p`.
    pub cores_of: Vec<Vec<u32>>,
    /// `aggrs_of[pod·n + p]`: the aggregation switches (index in the pod) holding `p` in `pod`.
    pub aggrs_of: Vec<Vec<u32>>,
}

impl Partitioning {
    /// Algorithm 1. `field` prefixes error messages (e.g. `multicast`).
    pub fn distribute(tree: &FatTree, n: u32, rc: u32, ra: u32, field: &str) -> Result<Partitioning> {
        let k = tree.k;
        let half = tree.half();
        if n == 0 || rc == 0 || ra == 0 {
            return Err(bad(format!("{field}.n"), "n, r_c and r_a must be positive"));
        }
        if n * rc != k * k / 4 {
            return Err(bad(
                format!("{field}.n"),
                format!("n·r_c = {n}·{rc} = {} but Algorithm 1 needs n·r_c = k²/4 = {}: choose n = {}/r_c", n * rc, k * k / 4, k * k / 4),
            ));
        }
        if ra * ra != rc {
            return Err(bad(format!("{field}.ra"), format!("r_a = {ra} but Algorithm 1 needs r_a² = r_c = {rc}")));
        }
        if !k.is_multiple_of(2 * ra) {
            return Err(bad(format!("{field}.ra"), format!("r_a = {ra} but Algorithm 1 needs 2·r_a to divide k = {k}")));
        }
        let np = 2 * n * ra / k;
        let mut core_partition = vec![u32::MAX; tree.cores() as usize];
        let mut aggr_partitions = vec![Vec::new(); tree.aggrs() as usize];
        // Lines 2-12: the first pod (type A in an AB tree).
        for ia in 0..half {
            let mut ic = 0;
            let r = ia / ra;
            for ip in r * np..(r + 1) * np {
                aggr_partitions[ia as usize].push(ip);
                for _ in 0..rc / ra {
                    let c = tree.core_above(0, ia, ic);
                    core_partition[c as usize] = ip;
                    ic += 1;
                }
            }
        }
        if core_partition.contains(&u32::MAX) {
            return Err(Error::Invariant("Algorithm 1 left a core without a partition".into()));
        }
        // Lines 13-19: every other pod takes its cores' partitions.
        for pod in 1..tree.pods() {
            for ia in 0..half {
                let mut parts: Vec<u32> = (0..half).map(|ic| core_partition[tree.core_above(pod, ia, ic) as usize]).collect();
                parts.sort_unstable();
                parts.dedup();
                aggr_partitions[(pod * half + ia) as usize] = parts;
            }
        }
        let mut cores_of = vec![Vec::new(); n as usize];
        for (c, &p) in core_partition.iter().enumerate() {
            cores_of[p as usize].push(c as u32);
        }
        let mut aggrs_of = vec![Vec::new(); (tree.pods() * n) as usize];
        for pod in 0..tree.pods() {
            for ia in 0..half {
                for &p in &aggr_partitions[(pod * half + ia) as usize] {
                    aggrs_of[(pod * n + p) as usize].push(ia);
                }
            }
        }
        let part = Partitioning { n, rc, ra, core_partition, aggr_partitions, cores_of, aggrs_of };
        part.check(tree)?;
        Ok(part)
    }

    fn check(&self, tree: &FatTree) -> Result<()> {
        for (p, cores) in self.cores_of.iter().enumerate() {
            if cores.len() != self.rc as usize {
                return Err(Error::Invariant(format!("partition {p} is on {} cores, not r_c = {}", cores.len(), self.rc)));
            }
            for pod in 0..tree.pods() {
                if self.aggrs_of[(pod * self.n) as usize + p].len() != self.ra as usize {
                    return Err(Error::Invariant(format!(
                        "partition {p} is on {} aggregation switches of pod {pod}, not r_a = {}",
                        self.aggrs_of[(pod * self.n) as usize + p].len(),
                        self.ra
                    )));
                }
                for &c in cores {
                    if !self.aggrs_of[(pod * self.n) as usize + p].contains(&tree.aggr_below(c, pod)) {
                        return Err(Error::Invariant(format!("core {c} holds {p} but its switch in pod {pod} does not")));
                    }
                }
            }
        }
        Ok(())
    }

    /// The aggregation switches (index in the pod) holding partition `p` in `pod`.
    pub fn aggrs(&self, pod: u32, p: u32) -> &[u32] {
        &self.aggrs_of[(pod * self.n + p) as usize]
    }
    pub fn cores(&self, p: u32) -> &[u32] {
        &self.cores_of[p as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fat_tree::Wiring;

    /// Figure 2's setting: k = 8, n = r_c = 4, r_a = 2, AB wiring. Worked by hand from Algorithm 1:
    /// N_p = 2·4·2/8 = 2. Pod 0 aggr 0 and 1 (R = 0) take partitions 0, 1; aggr 2, 3 (R = 1) take
    /// 2, 3. Cores above aggr 0 are 0..4: partition 0 to cores 0, 1 and partition 1 to cores 2, 3;
    /// aggr 1 (cores 4..8) the same; aggr 2 (8..12) and 3 (12..16) get 2, 2, 3, 3.
    #[test]
    fn algorithm_1_by_hand_k8() {
        let t = FatTree::new(8, Wiring::Ab, "k").unwrap();
        let p = Partitioning::distribute(&t, 4, 4, 2, "multicast").unwrap();
        assert_eq!(p.core_partition, vec![0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3]);
        assert_eq!(p.aggr_partitions[0..4], [vec![0, 1], vec![0, 1], vec![2, 3], vec![2, 3]]);
        // Type-B pod 1, aggr 0 reaches cores 0, 4, 8, 12: partitions 0, 0, 2, 2 -> {0, 2};
        // aggr 1: cores 1, 5, 9, 13 -> {0, 2}; aggr 2: cores 2, 6, 10, 14 -> {1, 3}; aggr 3 -> {1, 3}.
        assert_eq!(p.aggr_partitions[4..8], [vec![0, 2], vec![0, 2], vec![1, 3], vec![1, 3]]);
        // Type-A pod 2 repeats pod 0.
        assert_eq!(p.aggr_partitions[8..12], p.aggr_partitions[0..4]);
        assert_eq!(p.cores(0), &[0, 1, 4, 5]);
        assert_eq!(p.aggrs(1, 3), &[2, 3]);
        // Eq. 1 and 2: 16/4·C at the core layer, 4/2·C per pod.
    }

    #[test]
    fn paper_setting_k48_holds_every_invariant() {
        let t = FatTree::new(48, Wiring::Ab, "k").unwrap();
        let p = Partitioning::distribute(&t, 64, 9, 3, "multicast").unwrap();
        // Each aggregation switch holds N_p = 2·64·3/48 = 8 partitions.
        assert!(p.aggr_partitions.iter().all(|a| a.len() == 8));
        let std = FatTree::new(48, Wiring::Standard, "k").unwrap();
        Partitioning::distribute(&std, 64, 9, 3, "multicast").unwrap();
        // r_a = 2 needs r_c = 4 and n = 144.
        Partitioning::distribute(&t, 144, 4, 2, "multicast").unwrap();
    }

    #[test]
    fn preconditions_are_errors_naming_the_field() {
        let t = FatTree::new(48, Wiring::Ab, "k").unwrap();
        let e = Partitioning::distribute(&t, 64, 9, 2, "multicast").unwrap_err().to_string();
        assert!(e.starts_with("multicast.ra: r_a = 2 but Algorithm 1 needs r_a² = r_c = 9"), "{e}");
        let e = Partitioning::distribute(&t, 60, 9, 3, "multicast").unwrap_err().to_string();
        assert!(e.starts_with("multicast.n: "), "{e}");
    }
}
