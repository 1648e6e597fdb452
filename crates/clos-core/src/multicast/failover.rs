//! Fast failover by local rerouting when aggregation switches fail (Li & Freedman §3.3.1, §4.4,
//! Figure 8): for each group, the route stretch its receivers see and the share it cannot reach.
//!
//! Like the rest of the statistical evaluation this counts hops, it sends no packets (the packet
//! simulator's detours are `fabric.rs`'s). A packet from a group's sender climbs, as in `tree.rs`,
//! from its edge switch to one of the `r_a` aggregation switches of its pod holding the group's
//! partition and on to one of the `r_c/r_a` cores above that switch holding it. The paper's
//! rules under failures (§3.3.1):
//!
//! - **Upstream**, a failed holder is replaced by another holder of the pod at no extra hop ("the
//!   switch only needs to forward the packets to other upper-layer switches that are assigned
//!   with the associated partitions"); with no holder of the sender's pod alive, nothing beyond
//!   the sender's edge switch is reached.
//! - **Downstream**, a core's downlink into a member pod ends at the aggregation switch below it
//!   there, a holder (Algorithm 1 puts a core's partition on the switch below it in every pod).
//!   If that switch failed, the core sends the packet tagged with the pod by unicast: the
//!   three-hop detour core → aggregation switch of another pod → another core → an aggregation
//!   switch of the pod, else the five-hop one core → aggregation → edge → another aggregation
//!   switch of that pod → another core → the pod. The switch that takes the tag off must hold
//!   the group's partition, since only holders keep the group's entry (`tree.rs`): the detour
//!   counts only if it can end on a live holder.
//!
//! Only aggregation switches fail here, as in Figure 8 (the paper: an edge switch's failure cuts
//! its hosts off whatever the routing, and a core's is absorbed upstream at no stretch). Hops
//! count every link from the sender to a receiver: 2 on one edge switch, 4 in one pod, 6 across
//! pods, 8 or 10 through a detour. A receiver's stretch is its hops over its hops without
//! failures; a group's is the mean over the receivers it reaches. Which holder and which core a
//! packet goes up to is drawn per group, as a hash of the flow would pick it.

use super::fat_tree::FatTree;
use super::partition::Partitioning;
use crate::rng::{below, Stream};

/// A set of failed aggregation switches, and where each core's detours can still end.
pub struct Failures {
    half: u32,
    pods: u32,
    /// Per pod, the live aggregation switches (bit `a`: the `a`-th of the pod).
    alive: Vec<u64>,
    /// Per core and pod (`core·pods + pod`): the live aggregation switches of the pod a three-hop
    /// and a five-hop detour from the core can end on.
    three: Vec<u64>,
    five: Vec<u64>,
}

impl Failures {
    /// `failed` aggregation switches drawn uniformly without replacement (at most all of them).
    pub fn draw(tree: &FatTree, failed: u32, rng: &mut Stream) -> Failures {
        let mut all: Vec<u32> = (0..tree.aggrs()).collect();
        let failed = (failed as usize).min(all.len());
        for i in 0..failed {
            let j = i + below(rng, (all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        Failures::of(tree, &all[..failed])
    }

    /// These aggregation switches (global index `pod·k/2 + a`) failed.
    pub fn of(tree: &FatTree, failed: &[u32]) -> Failures {
        let (half, pods) = (tree.half(), tree.pods());
        let mut alive = vec![(1u64 << half) - 1; pods as usize];
        for &g in failed {
            alive[(g / half) as usize] &= !(1u64 << (g % half));
        }
        // below[(pod_j·half + a)·pods + pod_r]: the live switches of pod_r below the cores above
        // switch `a` of pod_j (one switch if the pods are wired alike, all of them if not).
        let mut below_cores = vec![0u64; (pods * half * pods) as usize];
        for j in 0..pods {
            for a in 0..half {
                for u in 0..half {
                    let core = tree.core_above(j, a, u);
                    for r in 0..pods {
                        let b = tree.aggr_below(core, r);
                        below_cores[((j * half + a) * pods + r) as usize] |= alive[r as usize] & 1u64 << b;
                    }
                }
            }
        }
        let mut three = vec![0u64; (tree.cores() * pods) as usize];
        let mut five = vec![0u64; (tree.cores() * pods) as usize];
        // Per (pod_j, pod_r): what every live switch of pod_j reaches in pod_r, for the five-hop
        // detour's second climb (from any live switch of pod_j, through one of its edge switches).
        let mut any_below = vec![0u64; (pods * pods) as usize];
        for j in 0..pods {
            for a in (0..half).filter(|&a| alive[j as usize] >> a & 1 == 1) {
                for r in 0..pods {
                    any_below[(j * pods + r) as usize] |= below_cores[((j * half + a) * pods + r) as usize];
                }
            }
        }
        for c in 0..tree.cores() {
            for r in 0..pods {
                let (mut m3, mut m5) = (0, 0);
                for j in (0..pods).filter(|&j| j != r) {
                    let a = tree.aggr_below(c, j);
                    if alive[j as usize] >> a & 1 == 0 {
                        continue;
                    }
                    m3 |= below_cores[((j * half + a) * pods + r) as usize];
                    m5 |= any_below[(j * pods + r) as usize];
                }
                three[(c * pods + r) as usize] = m3;
                five[(c * pods + r) as usize] = m5;
            }
        }
        Failures { half, pods, alive, three, five }
    }

    fn alive(&self, pod: u32, a: u32) -> bool {
        self.alive[pod as usize] >> a & 1 == 1
    }
}

/// What one group's receivers see under a set of failures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reach {
    /// Receivers (members but the sender).
    pub receivers: u32,
    pub unreachable: u32,
    /// Mean stretch over the receivers reached (1 with none reached).
    pub stretch: f64,
    /// Member pods reached by a three-hop and by a five-hop detour.
    pub three_hop: u32,
    pub five_hop: u32,
}

/// The hops from `sender` to each other member of a group in `partition`, under `f`; the holder
/// and core the packet climbs to are drawn from `rng`.
pub fn reach(tree: &FatTree, part: &Partitioning, f: &Failures, partition: u32, members: &[u32], sender: u32, rng: &mut Stream) -> Reach {
    let (edge, pod) = (tree.edge_of_host(sender), tree.pod_of_host(sender));
    let mut out = Reach { receivers: 0, unreachable: 0, stretch: 1.0, three_hop: 0, five_hop: 0 };
    let others: Vec<u32> = members.iter().copied().filter(|&m| m != sender).collect();
    out.receivers = others.len() as u32;
    let holders: Vec<u32> = part.aggrs(pod, partition).iter().copied().filter(|&a| f.alive(pod, a)).collect();
    let climb = (!holders.is_empty()).then(|| {
        let a = holders[below(rng, holders.len() as u64) as usize];
        let cores: Vec<u32> = (0..f.half).map(|u| tree.core_above(pod, a, u)).filter(|c| part.cores(partition).contains(c)).collect();
        cores[below(rng, cores.len() as u64) as usize]
    });
    // Per member pod, the hops its receivers take beyond the sender's pod (0: unreachable).
    let mut pod_hops = vec![None; f.pods as usize];
    let (mut sum, mut reached) = (0.0, 0u32);
    for &m in &others {
        let (m_edge, m_pod) = (tree.edge_of_host(m), tree.pod_of_host(m));
        let (hops, intact) = if m_edge == edge {
            (Some(2), 2)
        } else if m_pod == pod {
            (climb.map(|_| 4), 4)
        } else {
            let hops = *pod_hops[m_pod as usize].get_or_insert_with(|| {
                let core = climb?;
                if f.alive(m_pod, tree.aggr_below(core, m_pod)) {
                    return Some(6);
                }
                let live_holders = part.aggrs(m_pod, partition).iter().filter(|&&a| f.alive(m_pod, a)).fold(0u64, |s, &a| s | 1 << a);
                let i = (core * f.pods + m_pod) as usize;
                if f.three[i] & live_holders != 0 {
                    out.three_hop += 1;
                    Some(8)
                } else if f.five[i] & live_holders != 0 {
                    out.five_hop += 1;
                    Some(10)
                } else {
                    None
                }
            });
            (hops, 6)
        };
        match hops {
            Some(h) => {
                sum += f64::from(h) / f64::from(intact);
                reached += 1;
            }
            None => out.unreachable += 1,
        }
    }
    if reached > 0 {
        out.stretch = sum / f64::from(reached);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fat_tree::Wiring;
    use crate::rng::Streams;

    /// k = 4 (16 hosts, 4 hosts a pod, aggregation switches 2 a pod), n = 4, r_c = 1, r_a = 1:
    /// Algorithm 1 gives switch 0 of every pod partitions 0, 1 and switch 1 partitions 2, 3.
    fn k4(wiring: Wiring) -> (FatTree, Partitioning) {
        let t = FatTree::new(4, wiring, "k").unwrap();
        let p = Partitioning::distribute(&t, 4, 1, 1, "m").unwrap();
        (t, p)
    }

    #[test]
    fn without_failures_every_receiver_is_reached_at_no_stretch() {
        let (t, p) = k4(Wiring::Ab);
        let f = Failures::of(&t, &[]);
        let r = reach(&t, &p, &f, 2, &[0, 1, 3, 9, 15], 0, &mut Streams::new(1).stream());
        assert_eq!(r, Reach { receivers: 4, unreachable: 0, stretch: 1.0, three_hop: 0, five_hop: 0 });
    }

    #[test]
    fn with_one_holder_a_pod_a_failed_holder_cuts_the_pod_off() {
        // Partition 2: core 2 (Algorithm 1 on the AB tree), held by switch 1 of the A pods (0, 2)
        // and by the switch below core 2 in the B pods (1, 3): switch 0, which reaches cores 0, 2.
        let (t, p) = k4(Wiring::Ab);
        assert_eq!(p.cores(2), &[2]);
        let b = t.aggr_below(2, 1);
        assert_eq!(p.aggrs(1, 2), &[b]);
        // Sender host 0 (pod 0), one receiver in pod 1 (host 4); pod 1's holder fails. With
        // r_a = 1 it is the pod's only holder: no detour can end on a holder, so host 4 is lost.
        let f = Failures::of(&t, &[2 + b]);
        let r = reach(&t, &p, &f, 2, &[0, 4], 0, &mut Streams::new(1).stream());
        assert_eq!((r.receivers, r.unreachable, r.stretch), (1, 1, 1.0));
    }

    #[test]
    fn detours_end_on_a_live_holder_three_hops_in_ab_five_in_standard() {
        // k = 8, n = 16, r_c = 1, r_a = 1 would break Algorithm 1's r_a² = r_c; take r_c = 4,
        // r_a = 2, n = 4 (k²/4 = 16 cores), so each pod holds a partition on two switches.
        for (wiring, hops, three, five) in [(Wiring::Ab, 8.0, 1, 0), (Wiring::Standard, 10.0, 0, 1)] {
            let t = FatTree::new(8, wiring, "k").unwrap();
            let p = Partitioning::distribute(&t, 4, 4, 2, "m").unwrap();
            let (sender, receiver) = (0, t.hosts_per_pod() * 5); // pod 0 to pod 5
                                                                 // Fail one of pod 5's two holders of partition 0: the one below the first of its cores.
            let victim = t.aggr_below(p.cores(0)[0], 5);
            let f = Failures::of(&t, &[5 * t.half() + victim]);
            let mut total = (0, 0, 0, 0);
            for seed in 0..64 {
                let r = reach(&t, &p, &f, 0, &[sender, receiver], sender, &mut Streams::new(seed).stream());
                assert_eq!(r.unreachable, 0, "{wiring:?}");
                if r.stretch > 1.0 {
                    assert_eq!(r.stretch, hops / 6.0, "{wiring:?}");
                    total = (total.0 + 1, total.1 + r.three_hop, total.2 + r.five_hop, total.3);
                } else {
                    total.3 += 1;
                }
            }
            // Some draws climb to a core whose switch in pod 5 is the failed one: those detour.
            assert!(total.0 > 0 && total.3 > 0, "{wiring:?}: {total:?}");
            assert_eq!((total.1, total.2), (three * total.0, five * total.0), "{wiring:?}");
        }
    }

    #[test]
    fn with_no_live_holder_in_the_senders_pod_only_its_own_edge_is_reached() {
        let (t, p) = k4(Wiring::Standard);
        let holder = p.aggrs(0, 0)[0];
        let f = Failures::of(&t, &[holder]);
        // Hosts 0 and 1 share edge switch 0; 2 is on edge 1 of pod 0; 5 in pod 1.
        let r = reach(&t, &p, &f, 0, &[0, 1, 2, 5], 0, &mut Streams::new(3).stream());
        assert_eq!((r.receivers, r.unreachable, r.stretch), (3, 2, 1.0));
    }

    #[test]
    fn draws_fail_exactly_as_many_switches_as_asked() {
        let t = FatTree::new(48, Wiring::Ab, "k").unwrap();
        let f = Failures::draw(&t, 58, &mut Streams::new(7).stream());
        let down: u32 = f.alive.iter().map(|m| 24 - m.count_ones()).sum();
        assert_eq!(down, 58);
    }
}
