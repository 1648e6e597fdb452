//! Weight allocation (Pisces §3.2, "WA"; seed 004 lines 7842-7965, Table 2 eqs. 11-13 at
//! lines 7792-7805): divide each tenant's global share `z_t` into local shares `r_t,n` on the
//! nodes hosting its partitions, moving share to where the tenant's demand is, by reciprocal
//! swaps once per period.
//!
//! What the seed says (line numbers in seed 004):
//! - Each iteration WA reads the per-node tenant demand `x_t,n` (the request rate replica
//!   selection sends there, lines 7864-7868) and prices it with the latency cost
//!   `l_t,n = 1 / (r_t,n - x_t,n)` (line 7900), a proxy for the queueing delay at the node.
//! - It takes the max-latency tenant-node `(t, n) = argmax l` and performs a **reciprocal swap**:
//!   share moves from a lower-latency tenant u to t on n, and back from t to u on a different node
//!   m, so that every tenant's total (eq. 12) and every node's total (eq. 13) are unchanged
//!   (lines 7904-7913).
//! - The step is "the linear bisection of the latencies",
//!   `y(t, u, n) = ((r_u,n - x_u,n) - (r_t,n - x_t,n)) / 2` (lines 7916-7923), and the exchange
//!   uses `min(y(t, u, n), y(t, u, m))` (line 7940), "so that the swap always reduces the
//!   maximum latency". Only swaps above a threshold epsilon are executed (line 7962).
//!
//! How we read it, and what is ours where it is silent:
//! - **Slack.** We work with the slack `s = r - x` rather than `1 / s`: the highest latency cost
//!   is the smallest slack, and a tenant-node with `s <= 0` (demand at or above its share, an
//!   unbounded queue, where `1 / s` is undefined or negative) ranks above every finite cost.
//! - **The step on m.** On n, `y(t, u, n)` is half the slack gap and is positive since t has the
//!   least slack. On m the seed prints `y(t, u, m)` with the same argument order,
//!   `(s_u,m - s_t,m) / 2`, positive only when u also has more slack than t on m; bisecting in
//!   the direction the share moves there (t to u), `(s_t,m - s_u,m) / 2`, is positive only when u
//!   has less. Neither sign is what makes a swap reduce the maximum latency, the property the
//!   seed gives the step (line 7941): of the four entries a swap changes, t's on n and u's on m
//!   gain, so only the two that give matter, u's on n and t's on m. We take
//!   `delta = min((s_u,n - s_t,n) / 2, (s_t,m - s_t,n) / 2)`: the bisection of t's and u's slack
//!   on n, and the bisection of t's own slacks on m and n, the largest step after which neither
//!   giving entry is below t's new slack on n: the least of those three new slacks is as large
//!   as a swap between t and u can make it, and u's on m only gains, whatever it was. Bisecting
//!   t against u on m instead refuses every partner with more slack than t on m; in Figure 4a's
//!   run the only tenants with spare share are the weight-100 ones, with more slack than any
//!   weight-1 tenant on every server, so a weight-1 tenant-server in deficit found no partner
//!   (docs/tenants.md, "Weight allocation across weight classes").
//! - **Partner.** The seed does not say which u and m. Ours: every u != t present on n and every
//!   m != n where both t and u are present; the pair with the largest step wins (ties: lower u,
//!   then lower m). The seed's multilateral form (a max-bottleneck-flow problem, line 7945) is
//!   omitted in the seed and not built: where the trace of Figure 4a's run found weight-1
//!   tenant-servers that no swap helped, a single partner with spare share on n was present on
//!   every node (bilateral swaps with the step above help them).
//! - **When the max cannot move.** If the max-latency tenant-node has no partner with a step
//!   above the threshold (a tenant on one node, or no donor with spare share), the next one in
//!   latency order is tried, and so on; a period makes no swap only when no tenant-node can be
//!   helped. The seed describes one swap at the maximum; stopping there would leave every other
//!   tenant as it is for as long as one tenant-node stays stuck at the top, which in the
//!   Figure 4a run was every period (a weight-10 tenant's noisy demand kept it there, and 40
//!   weight-1 tenants never had a swap).
//! - **A donor gives only spare share.** The step is also capped at the donors' positive slack,
//!   `max(0, s_u,n)` and `max(0, s_t,m)`: a swap never takes a tenant-node below its demand
//!   (`r < x`). The latency cost `1 / (r - x)` is the seed's only within `r > x` (its "operating
//!   regime", line 7952); a donor pushed to `r <= x` would have an unbounded queue, a latency
//!   above any finite one, so the swap would raise the maximum latency, not reduce it as the seed
//!   says it always does (line 7941). A tenant-node already at or above its share gives nothing.
//!   Since `x >= 0` the cap also keeps shares non-negative. (Capping at the share `r` instead, as
//!   we first did, let an overloaded tenant give away all of a share it was using, its requests
//!   then waited behind a floor weight, it arrived nowhere, measured no demand, and starved:
//!   `scripts/pisces_dynamic_experiment.py`, docs/tenants.md.)
//! - **Threshold.** A swap is executed only if `delta > epsilon x r_t,n` (strictly): epsilon is
//!   a fraction of the receiving tenant-node's local share, so it means the same for every weight
//!   class. The seed gives no unit. A threshold in requests/s, the same for every tenant, is
//!   larger than any swap a small tenant can make (a swap is capped at spare share, so at most
//!   the tenant's whole local share): at 0.5% of a 1,000 requests/s server it blocked every swap
//!   of Figure 4a's weight-1 tenants, whose local shares are 3.1 requests/s.
//! - **Presence.** A tenant is on a node when it holds a replica there (from placement); its
//!   initial shares are given, or split evenly over its nodes ([`WeightAllocation::even`]), the
//!   "initially fixed (uniform) local weights" of the evaluation (line 8158).
//! - **Period.** One swap per call of [`WeightAllocation::step`]; the caller runs it every
//!   period (the paper's ran every 2 s: 5 iterations in 10 s, line 8161).

use crate::error::{bad, Result};

/// Local shares of every tenant on every node, kept summing to each tenant's global share.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightAllocation {
    /// `present[t][n]`: tenant t has a partition replica on node n.
    present: Vec<Vec<bool>>,
    /// `shares[t][n]`: the local share `r_t,n` (0 where absent), in the demand's unit.
    shares: Vec<Vec<f64>>,
    /// Smallest swap executed, as a fraction of the receiving tenant-node's local share.
    epsilon: f64,
}

/// One executed reciprocal swap: `amount` moved from `partner` to `tenant` on `node`, and from
/// `tenant` to `partner` on `other_node`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Swap {
    pub tenant: usize,
    pub partner: usize,
    pub node: usize,
    pub other_node: usize,
    pub amount: f64,
}

impl WeightAllocation {
    /// Start from given local shares. `shares[t][n]` must be finite and >= 0, and 0 where
    /// `present[t][n]` is false; every tenant must be present on some node.
    pub fn new(present: Vec<Vec<bool>>, shares: Vec<Vec<f64>>, epsilon: f64) -> Result<Self> {
        if present.is_empty() {
            return Err(bad("pisces.tenants", "no tenants to allocate weight to"));
        }
        let nodes = present[0].len();
        if nodes == 0 {
            return Err(bad("pisces.nodes", "no storage nodes"));
        }
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(bad("pisces.epsilon", format!("{epsilon} is not a finite threshold >= 0")));
        }
        if shares.len() != present.len() {
            return Err(bad("pisces.shares", "one row of local shares per tenant"));
        }
        for (t, (p, s)) in present.iter().zip(&shares).enumerate() {
            if p.len() != nodes || s.len() != nodes {
                return Err(bad(format!("pisces.tenants[{t}]"), format!("needs one entry per node ({nodes})")));
            }
            if !p.iter().any(|&on| on) {
                return Err(bad(format!("pisces.tenants[{t}]"), "the tenant is on no node"));
            }
            for (n, (&on, &r)) in p.iter().zip(s).enumerate() {
                if !(r.is_finite() && r >= 0.0) || (!on && r != 0.0) {
                    return Err(bad(format!("pisces.shares[{t}][{n}]"), format!("{r}: a local share is finite, >= 0, and 0 on a node without the tenant")));
                }
            }
        }
        Ok(WeightAllocation { present, shares, epsilon })
    }

    /// Split each tenant's global share evenly over the nodes it is present on.
    pub fn even(present: Vec<Vec<bool>>, global: &[f64], epsilon: f64) -> Result<Self> {
        if global.len() != present.len() {
            return Err(bad("pisces.tenants", "one global weight per tenant"));
        }
        for (t, &z) in global.iter().enumerate() {
            if !(z.is_finite() && z > 0.0) {
                return Err(bad(format!("pisces.tenants[{t}].weight"), format!("{z} is not a positive finite weight")));
            }
        }
        let shares = present
            .iter()
            .zip(global)
            .map(|(p, &z)| {
                let k = p.iter().filter(|&&on| on).count().max(1) as f64;
                p.iter().map(|&on| if on { z / k } else { 0.0 }).collect()
            })
            .collect();
        Self::new(present, shares, epsilon)
    }

    /// `shares()[t][n]`: tenant t's local share on node n.
    pub fn shares(&self) -> &[Vec<f64>] {
        &self.shares
    }

    /// Tenant t's local weight on node n as fair queuing uses it (line 8060):
    /// `r_t,n / sum_u r_u,n`, or 0 on a node with no share at all.
    pub fn local_weight(&self, t: usize, n: usize) -> f64 {
        let total: f64 = self.shares.iter().map(|s| s[n]).sum();
        if total > 0.0 {
            self.shares[t][n] / total
        } else {
            0.0
        }
    }

    /// One swap of a WA period: given the measured demand `demand[t][n]` (`x_t,n`, same unit as
    /// the shares), execute at most one reciprocal swap and return it.
    pub fn step(&mut self, demand: &[Vec<f64>]) -> Result<Option<Swap>> {
        let nodes = self.present[0].len();
        if demand.len() != self.shares.len() || demand.iter().any(|d| d.len() != nodes) {
            return Err(bad("pisces.demand", "one demand per tenant per node"));
        }
        if demand.iter().flatten().any(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(bad("pisces.demand", "demand must be finite and >= 0"));
        }
        let slack = |t: usize, n: usize| self.shares[t][n] - demand[t][n];
        // Tenant-nodes from the highest latency cost down: least slack first, ties to lower
        // (tenant, node).
        let mut order: Vec<(usize, usize)> =
            (0..self.shares.len()).flat_map(|t| (0..nodes).map(move |n| (t, n))).filter(|&(t, n)| self.present[t][n]).collect();
        order.sort_by(|a, b| slack(a.0, a.1).total_cmp(&slack(b.0, b.1)).then(a.cmp(b)));
        for (t, n) in order {
            let mut best: Option<Swap> = None;
            for u in (0..self.shares.len()).filter(|&u| u != t && self.present[u][n]) {
                for m in (0..nodes).filter(|&m| m != n && self.present[t][m] && self.present[u][m]) {
                    let on_n = (slack(u, n) - slack(t, n)) / 2.0;
                    let on_m = (slack(t, m) - slack(t, n)) / 2.0;
                    let amount = on_n.min(on_m).min(slack(u, n).max(0.0)).min(slack(t, m).max(0.0));
                    if best.is_none_or(|b| amount > b.amount) {
                        best = Some(Swap { tenant: t, partner: u, node: n, other_node: m, amount });
                    }
                }
            }
            if let Some(s) = best.filter(|s| s.amount > self.epsilon * self.shares[t][n]) {
                self.shares[s.partner][s.node] -= s.amount;
                self.shares[s.tenant][s.node] += s.amount;
                self.shares[s.tenant][s.other_node] -= s.amount;
                self.shares[s.partner][s.other_node] += s.amount;
                return Ok(Some(s));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_by_two(epsilon: f64) -> WeightAllocation {
        WeightAllocation::even(vec![vec![true, true]; 2], &[100.0, 100.0], epsilon).unwrap()
    }

    // Demand: tenant 0 is hot on node 0, tenant 1 on node 1 (requests/s).
    fn demand() -> Vec<Vec<f64>> {
        vec![vec![70.0, 10.0], vec![20.0, 40.0]]
    }

    #[test]
    fn a_swap_moves_the_smaller_bisection_to_the_max_latency_tenant() {
        // Shares 50 everywhere. Slack r - x: t0 [-20, 40], t1 [30, 10]. Max latency: t0 on n0
        // (slack -20, overloaded). Partner t1, other node n1: on n0 the bisection of t0 and t1 is
        // (30 - (-20)) / 2 = 25; on n1 the bisection of t0's own slacks is (40 - (-20)) / 2 = 30;
        // the spare caps are t1's 30 on n0 and t0's 40 on n1: the swap is 25.
        let mut wa = two_by_two(0.02);
        let swap = wa.step(&demand()).unwrap().expect("a swap of 25 > 2% of t0's share 50");
        assert_eq!(swap, Swap { tenant: 0, partner: 1, node: 0, other_node: 1, amount: 25.0 });
        assert_eq!(wa.shares(), &[vec![75.0, 25.0], vec![25.0, 75.0]]);
        // Each tenant keeps its global share; each node keeps its total.
        for t in 0..2 {
            assert_eq!(wa.shares()[t].iter().sum::<f64>(), 100.0);
        }
        assert_eq!(wa.shares()[0][0] + wa.shares()[1][0], 100.0);
        // New slacks: t0 [5, 15], t1 [5, 35]. Node 0 has 100 - 90 = 10 of slack in all, now 5
        // each: no allocation lifts its worst entry above 5, the optimum. The next steps are 0
        // (t0 and t1 tie on n0) or negative (t0 on n1 would give on n0, where its slack 5 is
        // below its 15 on n1): no further swap.
        assert_eq!(wa.local_weight(0, 0), 0.75);
        assert_eq!(wa.step(&demand()).unwrap(), None);
        assert_eq!(wa.shares(), &[vec![75.0, 25.0], vec![25.0, 75.0]]);
    }

    #[test]
    fn periods_of_swaps_reach_the_max_min_slack_by_hand() {
        // Two tenants on three nodes, global 90, shares 30 each. Demand t0 [50, 20, 5],
        // t1 [10, 25, 40]: slacks t0 [-20, 10, 25], t1 [20, 5, -10].
        // Swap 1: worst t0 on n0; on n0 the bisection with t1 is (20 + 20) / 2 = 20 (t1's spare
        // there is 20 too); giving back on n1: t0's own bisection (10 + 20) / 2 = 15, capped at
        // its spare 10; on n2: (25 + 20) / 2 = 22.5, spare 25. n2 wins with min(20, 22.5) = 20.
        // Slacks t0 [0, 10, 5], t1 [0, 5, 10].
        // Swap 2: t0 and t1 on n0 (slack 0) tie: step 0. Next t0 on n2 (5, before t1 on n1):
        // with t1 on n2 (10 - 5) / 2 = 2.5, giving back on n1 (10 - 5) / 2 = 2.5 (on n0 it
        // would be negative): 2.5 moves. Slacks t0 [0, 7.5, 7.5], t1 [0, 7.5, 7.5]. Node 0's
        // slack is 60 - 60 = 0 in all, so no allocation lifts its worst entry above 0: this is
        // the optimum, and swap 3 finds nothing. Epsilon 1% of the receiving share: 0.5 and
        // 0.1, below both steps.
        let mut wa = WeightAllocation::even(vec![vec![true; 3]; 2], &[90.0, 90.0], 0.01).unwrap();
        let d = vec![vec![50.0, 20.0, 5.0], vec![10.0, 25.0, 40.0]];
        let s1 = wa.step(&d).unwrap().unwrap();
        assert_eq!((s1.tenant, s1.partner, s1.node, s1.other_node, s1.amount), (0, 1, 0, 2, 20.0));
        let s2 = wa.step(&d).unwrap().unwrap();
        assert_eq!((s2.tenant, s2.partner, s2.node, s2.other_node, s2.amount), (0, 1, 2, 1, 2.5));
        assert_eq!(wa.step(&d).unwrap(), None);
        assert_eq!(wa.shares(), &[vec![50.0, 27.5, 12.5], vec![10.0, 32.5, 47.5]]);
    }

    #[test]
    fn nothing_moves_when_the_step_is_under_epsilon() {
        // The same state offers a step of 25 to t0 on n0 (share 50, above), and to t1 on n1
        // (slack 10, share 50) 10: min((40 - 10) / 2 on n1, t1's own (30 - 10) / 2 on n0, t0's
        // spare 40 on n1, t1's 30 on n0). With epsilon 50% of the share (25, strict) nothing
        // moves; just below it, the swap of 25 happens.
        let mut wa = two_by_two(0.5);
        assert_eq!(wa.step(&demand()).unwrap(), None);
        assert_eq!(wa.shares(), &[vec![50.0, 50.0], vec![50.0, 50.0]]);
        let mut wa = two_by_two(0.498);
        assert_eq!(wa.step(&demand()).unwrap().map(|s| s.amount), Some(25.0));
    }

    #[test]
    fn the_partner_with_the_largest_step_is_chosen() {
        // Three tenants on two nodes, global 100 each, shares 50/50. Demand: t0 [60, 0],
        // t1 [30, 0], t2 [0, 45]. Slacks: t0 [-10, 50], t1 [20, 50], t2 [50, 5]. Max latency:
        // t0 on n0; giving back on n1 t0's own bisection is (50 + 10) / 2 = 30. Partner t1:
        // min((20 + 10) / 2, 30, spare 20) = 15; t2: min((50 + 10) / 2, 30, spare 50) = 30.
        let mut wa = WeightAllocation::even(vec![vec![true, true]; 3], &[100.0; 3], 0.0).unwrap();
        let d = vec![vec![60.0, 0.0], vec![30.0, 0.0], vec![0.0, 45.0]];
        let swap = wa.step(&d).unwrap().unwrap();
        assert_eq!((swap.partner, swap.amount), (2, 30.0));
        assert_eq!(wa.shares(), &[vec![80.0, 20.0], vec![50.0, 50.0], vec![20.0, 80.0]]);
    }

    #[test]
    fn a_donor_gives_only_the_share_it_does_not_use() {
        // Two tenants on two nodes, global 100, shares 50 each. Demand t0 [110, 60],
        // t1 [0, 170]: slacks t0 [-60, -10], t1 [50, -120]. Worst: t1 on n1. Partner t0, other
        // node n0: bisection on n1 (-10 + 120) / 2 = 55, t1's own on n0 (50 + 120) / 2 = 85.
        // Capped at the shares (50 and 50), t0 would give all 50 of its share on n1 while using
        // 60 there: share 0, its requests there wait behind a floor weight (the starvation). t0
        // has no spare share on n1 (slack -10): nothing moves; nor for t0 on n0 (its spare on
        // n1 is 0).
        let mut wa = two_by_two(0.0);
        assert_eq!(wa.step(&[vec![110.0, 60.0], vec![0.0, 170.0]]).unwrap(), None);
        assert_eq!(wa.shares(), &[vec![50.0, 50.0], vec![50.0, 50.0]]);
        // With t0 using 40 on n1 (slack 10) the bisections are (10 + 120) / 2 = 65 and 85; the
        // swap is t0's spare 10, and leaves t0's share on n1 at its demand, 40.
        let swap = wa.step(&[vec![110.0, 40.0], vec![0.0, 170.0]]).unwrap().expect("a swap of 10");
        assert_eq!(swap, Swap { tenant: 1, partner: 0, node: 1, other_node: 0, amount: 10.0 });
        assert_eq!(wa.shares(), &[vec![60.0, 40.0], vec![40.0, 60.0]]);
    }

    #[test]
    fn the_next_tenant_node_is_helped_when_the_max_cannot_be() {
        // t0 only on n0 (global 100), t1 and t2 on both (100 each, 50/50). Demand t0 [150, 0],
        // t1 [55, 10], t2 [20, 40]: slacks t0 [-50], t1 [-5, 40], t2 [30, 10]. t0 on n0 has the
        // highest latency but no other node to reciprocate on. Next, t1 on n0: partner t2 (t0 is
        // not on n1), on n0 (30 + 5) / 2 = 17.5, t1's own on n1 (40 + 5) / 2 = 22.5, spare 30
        // and 40: 17.5.
        let present = vec![vec![true, false], vec![true, true], vec![true, true]];
        let shares = vec![vec![100.0, 0.0], vec![50.0, 50.0], vec![50.0, 50.0]];
        let mut wa = WeightAllocation::new(present, shares, 0.0).unwrap();
        let d = vec![vec![150.0, 0.0], vec![55.0, 10.0], vec![20.0, 40.0]];
        let swap = wa.step(&d).unwrap().expect("t1 helped on n0");
        assert_eq!(swap, Swap { tenant: 1, partner: 2, node: 0, other_node: 1, amount: 17.5 });
        assert_eq!(wa.shares(), &[vec![100.0, 0.0], vec![67.5, 32.5], vec![32.5, 67.5]]);
    }

    #[test]
    fn epsilon_is_a_fraction_of_the_receiving_share() {
        // A small tenant t0 (global 4, shares 2/2) beside a large one t1 (400, 200/200). Demand
        // t0 [3, 0.5], t1 [150, 250]: slacks t0 [-1, 1.5], t1 [50, -50]. First t1 on n1: partner
        // t0 gives at most its spare 1.5 on n1, under 1% of t1's share 200 (2): skipped. Then t0
        // on n0: bisection with t1 (50 + 1) / 2, t0's own on n1 (1.5 + 1) / 2 = 1.25, spare 50
        // and 1.5: the swap is 1.25, above 1% of t0's share 2 (0.02). A threshold of 1% of a
        // node's 202 requests/s would have blocked it.
        let mut wa = WeightAllocation::new(vec![vec![true, true]; 2], vec![vec![2.0, 2.0], vec![200.0, 200.0]], 0.01).unwrap();
        let swap = wa.step(&[vec![3.0, 0.5], vec![150.0, 250.0]]).unwrap().expect("the small tenant's swap");
        assert_eq!(swap, Swap { tenant: 0, partner: 1, node: 0, other_node: 1, amount: 1.25 });
        assert_eq!(wa.shares(), &[vec![3.25, 0.75], vec![198.75, 201.25]]);
    }

    #[test]
    fn a_partner_with_more_slack_on_both_nodes_can_help() {
        // Figure 4a's shape in three tenants on two nodes: a small tenant t0 (shares 10/10,
        // demand [14, 4]: slacks [-4, 6]) whose requests pile up on n0, a large one t1 (100/100,
        // demand [80, 70]: slacks [20, 30]) with spare share on both nodes, a middle one t2
        // (40/40, demand [45, 48]: slacks [-5, -8]) over its share on both.
        // t2 (on n1, then n0) cannot be helped: it has no spare share to give back anywhere.
        // t0 on n0: only t1 has spare there. The bisection with t1 on n0 is (20 + 4) / 2 = 12,
        // t0's own on n1 (6 + 4) / 2 = 5, spare 20 and 6: 5 moves. After it t0's slacks are
        // [1, 1] and t1's [15, 35]: every entry that gave (t1 on n0, t0 on n1) stays above the
        // old -4. Bisecting t0 against t1 on n1, (6 - 30) / 2, refuses this swap, as it refuses
        // every swap with a tenant that has more slack on the node given back on.
        let present = vec![vec![true, true]; 3];
        let shares = vec![vec![10.0, 10.0], vec![100.0, 100.0], vec![40.0, 40.0]];
        let mut wa = WeightAllocation::new(present, shares, 0.01).unwrap();
        let d = vec![vec![14.0, 4.0], vec![80.0, 70.0], vec![45.0, 48.0]];
        let swap = wa.step(&d).unwrap().expect("t0 helped by t1");
        assert_eq!(swap, Swap { tenant: 0, partner: 1, node: 0, other_node: 1, amount: 5.0 });
        assert_eq!(wa.shares(), &[vec![15.0, 5.0], vec![95.0, 105.0], vec![40.0, 40.0]]);
        // Then t0 and t1 on n0 are at 1 and 15: the bisection is 7, but t0's own on n1 is
        // (1 - 1) / 2 = 0. Nothing else can move.
        assert_eq!(wa.step(&d).unwrap(), None);
    }

    #[test]
    fn a_tenant_on_one_node_cannot_swap() {
        // t0 only on n0 and overloaded there: no other node to reciprocate on.
        let present = vec![vec![true, false], vec![true, true]];
        let mut wa = WeightAllocation::even(present, &[100.0, 100.0], 0.0).unwrap();
        assert_eq!(wa.step(&[vec![150.0, 0.0], vec![0.0, 0.0]]).unwrap(), None);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_field() {
        let field = |r: Result<WeightAllocation>| match r {
            Err(crate::Error::Scenario { field, .. }) => field,
            other => panic!("expected a scenario error, got {other:?}"),
        };
        assert_eq!(field(WeightAllocation::even(vec![], &[], 0.0)), "pisces.tenants");
        assert_eq!(field(WeightAllocation::even(vec![vec![]], &[1.0], 0.0)), "pisces.nodes");
        assert_eq!(field(WeightAllocation::even(vec![vec![true]], &[0.0], 0.0)), "pisces.tenants[0].weight");
        assert_eq!(field(WeightAllocation::even(vec![vec![false]], &[1.0], 0.0)), "pisces.tenants[0]");
        assert_eq!(field(WeightAllocation::even(vec![vec![true]], &[1.0], -1.0)), "pisces.epsilon");
        assert_eq!(field(WeightAllocation::new(vec![vec![false, true]], vec![vec![1.0, 0.0]], 0.0)), "pisces.shares[0][0]");
        let mut wa = two_by_two(0.0);
        assert!(matches!(wa.step(&[vec![1.0]]), Err(crate::Error::Scenario { field, .. }) if field == "pisces.demand"));
        assert!(matches!(wa.step(&[vec![-1.0, 0.0], vec![0.0, 0.0]]), Err(crate::Error::Scenario { field, .. }) if field == "pisces.demand"));
    }
}
