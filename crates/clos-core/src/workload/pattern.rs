//! Who talks to whom: destination choice for generated flows, and the fixed synthetic
//! patterns of the load-balancing literature (permutation, Stride(x), random bijection).
//!
//! Everything here works on a *group*: the hosts one workload uses, in order. Generators pick
//! positions in the group and map them to host ids at the end.

use crate::error::{bad, Result};
use crate::rng::{below, shuffle, Stream};
use crate::topology::Topology;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which destinations an arriving flow may pick, uniformly among the group's other hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Any other host (the usual "all-to-all random" of DCTCP, pFabric and CONGA evaluations).
    #[default]
    AllToAll,
    /// Only hosts under another ToR/leaf, so every flow crosses the fabric.
    CrossRack,
    /// Only hosts in another pod (fat tree); on fabrics without pods, another rack.
    CrossPod,
}

/// Picks destinations for a group's members, honouring a [`Pattern`]: among the group's own
/// hosts, or among another set (`workload.destinations`), so that the hosts that send and the
/// hosts that receive may differ (a source-skewed traffic matrix).
pub struct Destinations {
    pattern: Pattern,
    /// The hosts a flow may go to.
    targets: Vec<u32>,
    /// Rack or pod of each target, for the cross patterns.
    zone: Vec<u32>,
    /// Rack or pod of each group member.
    source_zone: Vec<u32>,
    /// Each group member's index among the targets, if it is one (it never sends to itself).
    source_at: Vec<Option<usize>>,
}

impl Destinations {
    /// Destinations among `targets` (the group itself when `None`). Fails, naming `field`, if
    /// some member would have no destination at all.
    pub fn new(pattern: Pattern, group: &[u32], targets: Option<&[u32]>, topo: &Topology, field: &str) -> Result<Destinations> {
        let zone_of = |h: u32| match pattern {
            Pattern::AllToAll => 0,
            Pattern::CrossRack => topo.host_tor[h as usize],
            Pattern::CrossPod => topo.nodes[h as usize].pod,
        };
        let targets: Vec<u32> = targets.unwrap_or(group).to_vec();
        let zone: Vec<u32> = targets.iter().map(|&h| zone_of(h)).collect();
        let source_zone: Vec<u32> = group.iter().map(|&h| zone_of(h)).collect();
        let source_at: Vec<Option<usize>> = group.iter().map(|h| targets.iter().position(|t| t == h)).collect();
        if pattern != Pattern::AllToAll && zone.iter().chain(&source_zone).all(|&z| z == zone[0]) {
            let what = if pattern == Pattern::CrossRack { "rack" } else { "pod" };
            return Err(bad(
                field,
                format!("every host of this workload is in the same {what}, so no flow can leave it; use more hosts or pattern = \"all_to_all\""),
            ));
        }
        for (i, &z) in source_zone.iter().enumerate() {
            let reachable = (0..targets.len()).any(|d| Some(d) != source_at[i] && (pattern == Pattern::AllToAll || zone[d] != z));
            if reachable {
                continue;
            }
            return Err(bad(
                field,
                match pattern {
                    Pattern::AllToAll => format!("host {} has no other host to send to; give the workload more hosts", group[i]),
                    _ => {
                        let what = if pattern == Pattern::CrossRack { "rack" } else { "pod" };
                        format!(
                            "host {} has no destination outside its own {what}, so no flow can leave it; use more hosts or pattern = \"all_to_all\"",
                            group[i]
                        )
                    }
                },
            ));
        }
        Ok(Destinations { pattern, targets, zone, source_zone, source_at })
    }

    /// A uniformly random valid destination host for the member at position `src` of the group.
    pub fn pick(&self, src: usize, rng: &mut Stream) -> u32 {
        let n = self.targets.len() as u64;
        let own = self.source_at[src];
        loop {
            // Uniform over the targets other than the source: draw among them and skip it.
            let mut d = below(rng, n - own.is_some() as u64) as usize;
            if own.is_some_and(|o| d >= o) {
                d += 1;
            }
            // Rejection keeps the choice uniform among valid hosts; `new` checked one exists.
            if self.pattern == Pattern::AllToAll || self.zone[d] != self.source_zone[src] {
                return self.targets[d];
            }
        }
    }
}

/// Stride(x): position i sends to (i + x) mod n (DRILL §4; Al-Fares et al.'s fat-tree paper).
pub fn stride(n: usize, x: u32, field: &str) -> Result<Vec<usize>> {
    if (x as usize).is_multiple_of(n) {
        return Err(bad(field, format!("a stride of {x} over {n} hosts sends every host to itself; pick a stride that is not a multiple of {n}")));
    }
    Ok((0..n).map(|i| (i + x as usize) % n).collect())
}

/// A random permutation without fixed points; with `zones`, no host maps into its own zone
/// (pod or rack). Starts from a shuffled order and repairs conflicts by swapping targets with
/// random partners (a swap is taken only if it leaves both positions valid), which keeps the
/// result uniform enough for load-balancing experiments and always terminates when a solution
/// exists.
pub fn permutation(n: usize, zones: Option<&[u32]>, rng: &mut Stream, field: &str) -> Result<Vec<usize>> {
    let ok = |s: usize, d: usize| s != d && zones.is_none_or(|z| z[s] != z[d]);
    if let Some(z) = zones {
        let mut count = std::collections::BTreeMap::new();
        for &x in z {
            *count.entry(x).or_insert(0usize) += 1;
        }
        if count.values().any(|&c| 2 * c > n) {
            return Err(bad(field, "one rack or pod holds more than half the hosts, so no host-to-host bijection can leave it"));
        }
    }
    let mut dst: Vec<usize> = (0..n).collect();
    shuffle(rng, &mut dst);
    for _round in 0..1000 {
        let mut clean = true;
        for i in 0..n {
            if ok(i, dst[i]) {
                continue;
            }
            clean = false;
            for _ in 0..4 * n {
                let j = below(rng, n as u64) as usize;
                if ok(i, dst[j]) && ok(j, dst[i]) {
                    dst.swap(i, j);
                    break;
                }
            }
        }
        if clean {
            return Ok(dst);
        }
    }
    Err(bad(field, "could not find a valid permutation; use more hosts"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Streams;
    use crate::topology::fat_tree::{build, FatTree};
    use crate::topology::leaf_spine::{self, LeafSpine};
    use crate::units::Rate;

    #[test]
    fn cross_pod_permutation_is_a_bijection_leaving_every_pod() {
        let t = build(&FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let pods: Vec<u32> = (0..128).map(|h| t.nodes[h].pod).collect();
        let d = permutation(128, Some(&pods), &mut Streams::new(5).stream(), "w").unwrap();
        let mut seen = d.clone();
        seen.sort();
        assert_eq!(seen, (0..128).collect::<Vec<_>>());
        assert!((0..128).all(|s| pods[s] != pods[d[s]]));
    }

    #[test]
    fn stride_wraps_and_rejects_self_loops() {
        assert_eq!(stride(4, 1, "w").unwrap(), vec![1, 2, 3, 0]);
        assert!(stride(32, 64, "workload.stride").unwrap_err().to_string().starts_with("workload.stride: a stride of 64 over 32 hosts"));
    }

    #[test]
    fn cross_rack_destinations_never_stay_in_the_rack_and_cover_the_rest() {
        let t = leaf_spine::build(&LeafSpine { leaves: 4, spines: 2, hosts_per_leaf: 4, links_per_pair: 1 }, Rate(1), Rate(1), 0).unwrap();
        let group: Vec<u32> = (0..16).collect();
        let d = Destinations::new(Pattern::CrossRack, &group, None, &t, "w").unwrap();
        let mut rng = Streams::new(1).stream();
        let mut hits = [0u32; 16];
        for _ in 0..12_000 {
            let x = d.pick(0, &mut rng) as usize;
            assert_ne!(t.host_tor[x], t.host_tor[0]);
            hits[x] += 1;
        }
        // 12 valid destinations, 1000 expected each: Binomial sd ~ 30, so 850..1150 is 5 sd.
        assert!(hits[4..].iter().all(|&h| (850..1150).contains(&h)), "{hits:?}");
        let one_rack: Vec<u32> = (0..4).collect();
        assert!(Destinations::new(Pattern::CrossRack, &one_rack, None, &t, "workload.pattern").is_err());
    }

    /// Senders under rack 0 and receivers everywhere else (`workload.destinations`): every pick
    /// is one of the receivers, uniformly (12 of them, 1000 picks each expected: Binomial sd
    /// about 30, so 850..1150 is 5 sd), and a sender that is also a receiver never picks itself.
    #[test]
    fn destinations_may_be_other_hosts_than_the_senders() {
        let t = leaf_spine::build(&LeafSpine { leaves: 4, spines: 2, hosts_per_leaf: 4, links_per_pair: 1 }, Rate(1), Rate(1), 0).unwrap();
        let senders: Vec<u32> = (0..4).collect();
        let receivers: Vec<u32> = (4..16).collect();
        let d = Destinations::new(Pattern::AllToAll, &senders, Some(&receivers), &t, "w").unwrap();
        let mut rng = Streams::new(1).stream();
        let mut hits = [0u32; 16];
        for _ in 0..12_000 {
            hits[d.pick(2, &mut rng) as usize] += 1;
        }
        assert!(hits[..4].iter().all(|&h| h == 0) && hits[4..].iter().all(|&h| (850..1150).contains(&h)), "{hits:?}");
        let all: Vec<u32> = (0..16).collect();
        let d = Destinations::new(Pattern::AllToAll, &senders, Some(&all), &t, "w").unwrap();
        assert!((0..1000).all(|_| d.pick(1, &mut rng) != 1));
        // A lone sender whose only destination is itself has none.
        let Err(e) = Destinations::new(Pattern::AllToAll, &senders[..1], Some(&senders[..1]), &t, "workload.destinations") else {
            panic!("a lone sender to itself has a destination")
        };
        assert!(e.to_string().starts_with("workload.destinations: host 0 has no other host"), "{e}");
    }
}
