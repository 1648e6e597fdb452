//! Local address aggregation into meta-groups at a bottleneck switch (Li & Freedman §3.2,
//! Algorithm 2, Eq. 6).
//!
//! A switch with `|P|` downlinks and more groups than its capacity `C` maps them onto at most `C`
//! meta-groups; a meta-group is sent out of the union of its groups' ports, so a port may receive
//! traffic of groups none of its receivers joined. The cost of an aggregation is Eq. 6,
//! `Φ = Σ_p F(Σ_{m∈M_p} Σ_{g∈G_m} λ_g + μ_p)`.
//!
//! What the paper leaves open, and what we chose:
//! - **F** is `F(x) = x²`: convex, as the paper asks, and the simplest such (the marginal cost of
//!   traffic grows linearly with the load already on the link).
//! - **μ_p** (background unicast) is an input; the evaluation uses 0, as the paper's has no
//!   unicast traffic.
//! - **Δ** (`delta_ports`): a group on at least `|P| − Δ` ports joins the all-ports meta-group
//!   `m_|P|`. Default 0: only groups on every port.
//! - **δ(g, m)** (`delta_cost`): the cost threshold for opening a new meta-group. We take
//!   `δ(g, m) = (1 + delta_cost) · COST_own(g)`, where `COST_own(g)` is the increase of Φ if `g` had a
//!   meta-group of its own (the part no aggregation can avoid). So a group joins the cheapest
//!   existing meta-group unless that costs more than `delta_cost` (relative) beyond the unavoidable,
//!   while unused meta-groups remain. The evaluation's default is `delta_cost = 0`: a group shares
//!   a meta-group for free (same ports) or only once the switch's `C` meta-groups are all in use,
//!   so the overhead is what the capacity forces, not a tuning choice.
//! - "`|M| > 0`" in line 11 is read as "unused meta-groups remain", and the argmin of line 10
//!   runs over the meta-groups already opened (an empty one always has the least cost, which
//!   would make line 11 moot). With none opened and none left, the group joins `m_|P|`, which is
//!   always a correct superset.
//! - Groups are taken in the order given (the paper: "for g ∈ G").
//!
//! A single-port group goes to its port's `m_p`, which carries nothing extra, and the `|P| + 1`
//! reserved meta-groups count as entries only when used. A group whose exact port set already
//! has a meta-group joins it (no other choice costs less); otherwise the search over meta-groups
//! prunes with a lower bound on COST (valid because loads are non-negative) and evaluates COST from
//! per-byte tables of port-load sums, so the result is that of the plain O(|G|·|M|·|P|) loop up to
//! floating-point ties.

use crate::error::{bad, Result};
use std::collections::HashMap;

/// A group as one switch sees it: its downlink ports and traffic rate.
#[derive(Clone, Copy, Debug)]
pub struct LocalGroup {
    pub ports: u64,
    pub rate: f64,
}

/// Δ and δ of Algorithm 2 (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct AggregationParams {
    pub capacity: u32,
    pub delta_ports: u32,
    pub delta_cost: f64,
}

/// One meta-group: the union of its groups' ports and their total rate.
#[derive(Clone, Copy, Debug, Default)]
pub struct Meta {
    pub ports: u64,
    pub rate: f64,
    pub groups: u32,
}

/// The outcome at one switch.
#[derive(Clone, Debug)]
pub struct Aggregation {
    /// The meta-group of each group (index into `metas`; 0..|P| are `m_p`, |P| is all ports).
    pub meta_of: Vec<u32>,
    pub metas: Vec<Meta>,
    /// Per port: traffic sent (meta-groups) and traffic wanted (the groups' own).
    pub carried: Vec<f64>,
    pub needed: Vec<f64>,
}

impl Aggregation {
    /// Forwarding entries after aggregation: the meta-groups in use.
    pub fn entries(&self) -> u32 {
        self.metas.iter().filter(|m| m.groups > 0).count() as u32
    }
    /// Eq. 6 with F(x) = x² and the given background.
    pub fn phi(&self, mu: &[f64]) -> f64 {
        self.carried.iter().zip(mu).map(|(c, m)| f(c + m)).sum()
    }
}

/// The convex congestion cost of a downlink (see the module doc).
pub fn f(x: f64) -> f64 {
    x * x
}

fn bits(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(b)
        }
    })
}

/// Algorithm 2 at a switch with `ports` downlinks and background rates `mu` (one per port).
pub fn aggregate(ports: u32, groups: &[LocalGroup], mu: &[f64], params: AggregationParams, field: &str) -> Result<Aggregation> {
    let np = ports as usize;
    if params.capacity < ports + 1 {
        return Err(bad(
            field,
            format!(
                "capacity {} is below the |P| + 1 = {} meta-groups Algorithm 2 reserves: use a capacity of at least {}",
                params.capacity,
                ports + 1,
                ports + 1
            ),
        ));
    }
    let all: u64 = if ports == 64 { u64::MAX } else { (1u64 << ports) - 1 };
    let mut metas = vec![Meta::default(); np + 1];
    for (p, m) in metas.iter_mut().enumerate().take(np) {
        m.ports = 1 << p;
    }
    metas[np].ports = all;
    let free_total = (params.capacity - ports - 1) as usize;
    let mut load: Vec<f64> = mu.to_vec();
    let mut needed = vec![0.0; np];
    let mut meta_of = Vec::with_capacity(groups.len());

    // Σ_{p ∈ X} load_p for any port set X, by byte: sums[b][x] is the load of the ports of byte
    // b in x. Rebuilt for the bytes an assignment touches, so a COST is a few lookups.
    let nbytes = np.div_ceil(8);
    let mut sums = vec![[0.0f64; 256]; nbytes];
    let rebuild = |sums: &mut [[f64; 256]], load: &[f64], touched: u64| {
        for (b, table) in sums.iter_mut().enumerate() {
            if (touched >> (8 * b)) & 0xff == 0 {
                continue;
            }
            for x in 1..256usize {
                let p = b * 8 + x.trailing_zeros() as usize;
                table[x] = table[x & (x - 1)] + if p < np { load[p] } else { 0.0 };
            }
        }
    };
    let sum = |sums: &[[f64; 256]], x: u64| -> f64 { sums.iter().enumerate().map(|(b, t)| t[((x >> (8 * b)) & 0xff) as usize]).sum() };
    rebuild(&mut sums, &load, all);
    // COST(g, m), the increase of Φ when g joins m, for F(x) = x²: every port of m gets λ_g more
    // (2·L·λ + λ²), every port of g missing from m gets Λ_m + λ_g more.
    let cost = |sums: &[[f64; 256]], m: &Meta, g: &LocalGroup| -> f64 {
        let lam = g.rate;
        let add = m.rate + lam;
        let missing = g.ports & !m.ports;
        lam * (2.0 * sum(sums, m.ports) + lam * m.ports.count_ones() as f64) + add * (2.0 * sum(sums, missing) + add * missing.count_ones() as f64)
    };
    // The latest meta-group with each exact port set: joining it costs only the unavoidable.
    let mut by_mask: HashMap<u64, usize> = HashMap::new();
    let (mut open_ports, mut open_rate): (Vec<u64>, Vec<f64>) = (Vec::new(), Vec::new());
    for g in groups {
        if g.ports == 0 || g.ports & !all != 0 {
            return Err(crate::error::Error::Invariant(format!("group ports {:#x} outside the switch's {ports} ports", g.ports)));
        }
        for p in bits(g.ports) {
            needed[p] += g.rate;
        }
        let count = g.ports.count_ones();
        let chosen = if count + params.delta_ports >= ports {
            np
        } else if count == 1 {
            g.ports.trailing_zeros() as usize
        } else if let Some(&same) = by_mask.get(&g.ports) {
            same
        } else {
            let own = cost(&sums, &Meta::default(), g);
            let (lam, gp) = (g.rate, g.ports);
            let mut best = usize::MAX;
            let mut best_cost = f64::INFINITY;
            for (i, (&mp, &mr)) in open_ports.iter().zip(&open_rate).enumerate() {
                // Lower bound (loads >= 0): extra ports of m get at least λ², g's ports
                // missing from m get at least Λ_m² + 2Λ_mλ on top of g's own cost.
                let extra = (mp & !gp).count_ones() as f64 * lam * lam + (gp & !mp).count_ones() as f64 * (mr * mr + 2.0 * mr * lam);
                if own + extra >= best_cost {
                    continue;
                }
                let c = cost(&sums, &Meta { ports: mp, rate: mr, groups: 0 }, g);
                if c < best_cost {
                    best_cost = c;
                    best = np + 1 + i;
                }
            }
            let free = metas.len() - (np + 1) < free_total;
            if free && (best == usize::MAX || best_cost > (1.0 + params.delta_cost) * own) {
                metas.push(Meta::default());
                open_ports.push(0);
                open_rate.push(0.0);
                metas.len() - 1
            } else if best == usize::MAX {
                np
            } else {
                best
            }
        };
        // ASSIGN(g, m): loads of m's ports grow by λ_g, g's new ports get all of m.
        let m = metas[chosen];
        for p in bits(m.ports) {
            load[p] += g.rate;
        }
        for p in bits(g.ports & !m.ports) {
            load[p] += m.rate + g.rate;
        }
        rebuild(&mut sums, &load, m.ports | g.ports);
        if chosen > np {
            if by_mask.get(&m.ports) == Some(&chosen) {
                by_mask.remove(&m.ports);
            }
            by_mask.insert(m.ports | g.ports, chosen);
        }
        let m = &mut metas[chosen];
        m.ports |= g.ports;
        m.rate += g.rate;
        m.groups += 1;
        if chosen > np {
            // The opened meta-groups' ports and rates, flat, for the search above.
            open_ports[chosen - np - 1] = m.ports;
            open_rate[chosen - np - 1] = m.rate;
        }
        meta_of.push(chosen as u32);
    }
    let carried = load.iter().zip(mu).map(|(l, m)| l - m).collect();
    Ok(Aggregation { meta_of, metas, carried, needed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(capacity: u32, delta_cost: f64) -> AggregationParams {
        AggregationParams { capacity, delta_ports: 0, delta_cost }
    }

    /// Figure 3: groups 000 and 011 go to edge ports {0, 1}, 001 and 010 to {2, 3}; after
    /// aggregation the switch holds two meta-groups and no port gets traffic it did not want.
    #[test]
    fn figure_3_identical_port_sets_share_a_meta_group() {
        let g = |ports, rate| LocalGroup { ports, rate };
        let groups = [g(0b0011, 1.0), g(0b1100, 1.0), g(0b1100, 2.0), g(0b0011, 3.0)];
        let a = aggregate(4, &groups, &[0.0; 4], params(7, 0.0), "m").unwrap();
        assert_eq!(a.meta_of, vec![5, 6, 6, 5]);
        assert_eq!(a.entries(), 2);
        assert_eq!(a.carried, a.needed);
        assert_eq!(a.carried, vec![4.0, 4.0, 3.0, 3.0]);
    }

    /// Hand-worked: 4 ports, capacity 6 leaves one free meta-group (6 − 4 − 1).
    /// g0 = {0,1} rate 1 opens m5 (loads 1, 1, 0, 0). g1 = {0,1,2} rate 1: its own cost is
    /// (2² − 1²)·2 + 1² = 7; joining m5 costs (2² − 1²)·2 + (0 + 1 + 1)² = 10.
    /// No meta-group is left, so it joins m5 whatever δ. g2 = {3}: m_3. g3 = {0,1,2,3}: m_4.
    /// Port 2 then carries 2 (g0 rides along) but needs 1.
    #[test]
    fn algorithm_2_by_hand() {
        let g = |ports, rate| LocalGroup { ports, rate };
        let groups = [g(0b0011, 1.0), g(0b0111, 1.0), g(0b1000, 5.0), g(0b1111, 2.0)];
        let a = aggregate(4, &groups, &[0.0; 4], params(6, 0.0), "m").unwrap();
        assert_eq!(a.meta_of, vec![5, 5, 3, 4]);
        assert_eq!(a.entries(), 3);
        assert_eq!(a.needed, vec![4.0, 4.0, 3.0, 7.0]);
        assert_eq!(a.carried, vec![4.0, 4.0, 4.0, 7.0]);
        // Φ = 16 + 16 + 16 + 49.
        assert_eq!(a.phi(&[0.0; 4]), 97.0);
    }

    /// With room to spare, δ decides: the same g1 opens its own meta-group when joining costs
    /// more than (1 + δ)·own = 7·(1 + δ): 10 > 7 for δ = 0.2, not for δ = 0.5.
    #[test]
    fn delta_decides_when_room_remains() {
        let g = |ports, rate| LocalGroup { ports, rate };
        let groups = [g(0b0011, 1.0), g(0b0111, 1.0)];
        let a = aggregate(4, &groups, &[0.0; 4], params(10, 0.2), "m").unwrap();
        assert_eq!(a.meta_of, vec![5, 6]);
        let b = aggregate(4, &groups, &[0.0; 4], params(10, 0.5), "m").unwrap();
        assert_eq!(b.meta_of, vec![5, 5]);
    }

    #[test]
    fn capacity_below_the_reserved_meta_groups_is_an_error() {
        let e = aggregate(24, &[], &[0.0; 24], params(20, 0.0), "m").unwrap_err().to_string();
        assert!(e.contains("at least 25"), "{e}");
    }
}
