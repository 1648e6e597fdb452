//! VM placement (Li & Freedman §4.1): at most `vms_per_host` VMs per host, no two VMs of a tenant
//! on one host, and either
//! - **near**: a tenant's VMs on hosts near one another. We fill the hosts in index order (host,
//!   then edge switch, then pod) in layers of one VM per host: a tenant takes the next hosts of
//!   the current layer, so it occupies a contiguous run of hosts; a tenant crossing the end of a
//!   layer continues at host 0 of the next (two runs). The paper does not say how it placed them.
//! - **random**: each tenant's VMs on distinct hosts drawn uniformly among those with a free slot.

use super::fat_tree::FatTree;
use crate::error::{bad, Result};
use crate::rng::{below, Stream};

/// The placement policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Near,
    Random,
}

impl Placement {
    pub fn parse(name: &str, field: &str) -> Result<Placement> {
        match name {
            "near" => Ok(Placement::Near),
            "random" => Ok(Placement::Random),
            other => Err(bad(field, format!("unknown placement {other:?}: use \"near\" or \"random\""))),
        }
    }
}

/// The hosts of each tenant's VMs.
pub fn place(tree: &FatTree, sizes: &[u32], vms_per_host: u32, policy: Placement, rng: &mut Stream, field: &str) -> Result<Vec<Vec<u32>>> {
    let hosts = tree.hosts();
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    let slots = hosts as u64 * vms_per_host as u64;
    if total > slots {
        return Err(bad(field, format!("{total} VMs do not fit {hosts} hosts with {vms_per_host} VMs each: fewer or smaller tenants, or more vms_per_host")));
    }
    if let Some(&s) = sizes.iter().find(|&&s| s > hosts) {
        return Err(bad(field, format!("a tenant of {s} VMs cannot have them on distinct hosts of {hosts}: lower vm_max")));
    }
    match policy {
        Placement::Near => {
            let mut cursor: u64 = 0;
            Ok(sizes
                .iter()
                .map(|&s| {
                    let run = (0..s as u64).map(|i| ((cursor + i) % hosts as u64) as u32).collect();
                    cursor += s as u64;
                    run
                })
                .collect())
        }
        Placement::Random => {
            let mut used = vec![0u32; hosts as usize];
            let mut free: Vec<u32> = (0..hosts).collect();
            let mut out = Vec::with_capacity(sizes.len());
            for (t, &s) in sizes.iter().enumerate() {
                if s as usize > free.len() {
                    return Err(bad(
                        field,
                        format!("tenant {t} needs {s} distinct hosts but only {} have a free slot: fewer VMs or more vms_per_host", free.len()),
                    ));
                }
                // Partial Fisher-Yates: the first s entries become a uniform sample.
                for i in 0..s as usize {
                    let j = i + below(rng, (free.len() - i) as u64) as usize;
                    free.swap(i, j);
                }
                let chosen: Vec<u32> = free[..s as usize].to_vec();
                for &h in &chosen {
                    used[h as usize] += 1;
                }
                free.retain(|&h| used[h as usize] < vms_per_host);
                out.push(chosen);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fat_tree::Wiring;
    use crate::rng::Streams;

    #[test]
    fn near_is_contiguous_and_wraps_into_the_next_layer() {
        let t = FatTree::new(4, Wiring::Ab, "k").unwrap();
        let p = place(&t, &[10, 10], 2, Placement::Near, &mut Streams::new(1).stream(), "m").unwrap();
        assert_eq!(p[0], (0..10).collect::<Vec<_>>());
        assert_eq!(p[1], vec![10, 11, 12, 13, 14, 15, 0, 1, 2, 3]);
    }

    #[test]
    fn random_respects_the_slot_limit_and_distinct_hosts() {
        let t = FatTree::new(4, Wiring::Ab, "k").unwrap();
        let p = place(&t, &[16, 8, 8], 2, Placement::Random, &mut Streams::new(3).stream(), "m").unwrap();
        let mut load = [0; 16];
        for hosts in &p {
            let mut h = hosts.clone();
            h.sort_unstable();
            h.dedup();
            assert_eq!(h.len(), hosts.len());
            for &x in hosts {
                load[x as usize] += 1;
            }
        }
        assert!(load.iter().all(|&l| l == 2));
        assert!(place(&t, &[16, 16, 1], 2, Placement::Random, &mut Streams::new(3).stream(), "m").unwrap_err().to_string().contains("do not fit"));
    }
}
