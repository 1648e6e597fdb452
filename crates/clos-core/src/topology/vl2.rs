//! The VL2 fabric (VL2 §4.1, Fig. 5): ToRs with two uplinks to aggregation switches, aggregation
//! and intermediate switches joined as a complete bipartite graph.
//!
//! With D_A-port aggregation and D_I-port intermediate switches the paper's sizing is D_A/2
//! intermediates, D_I aggregation switches and D_A·D_I/4 ToRs; `from_degrees` builds exactly that.
//! The testbed (§5) is 4 ToRs x 20 servers at 1 Gb/s, 3 aggregation and 3 intermediate switches
//! at 10 Gb/s.

use super::{FabricBuilder, Role, Topology};
use crate::error::{bad, Result};
use crate::units::{Rate, Time};

#[derive(Clone, Debug, PartialEq)]
pub struct Vl2 {
    pub tors: u32,
    pub servers_per_tor: u32,
    pub aggs: u32,
    pub intermediates: u32,
}

impl Vl2 {
    /// The §5 testbed: 80 servers in 4 racks; 3 aggregation and 3 intermediate switches.
    pub const TESTBED: Vl2 = Vl2 { tors: 4, servers_per_tor: 20, aggs: 3, intermediates: 3 };

    /// §4.1 sizing from switch port counts.
    pub fn from_degrees(d_a: u32, d_i: u32, servers_per_tor: u32) -> Result<Vl2> {
        if d_a < 2 || !d_a.is_multiple_of(2) {
            return Err(bad("topology.d_a", format!("aggregation port count must be even and >= 2, got {d_a}")));
        }
        if d_i < 2 || !(d_a * d_i).is_multiple_of(4) {
            return Err(bad("topology.d_i", format!("D_A·D_I must be a multiple of 4 for whole ToRs, got {d_a}·{d_i}")));
        }
        Ok(Vl2 { tors: d_a * d_i / 4, servers_per_tor, aggs: d_i, intermediates: d_a / 2 })
    }
}

/// The two aggregation switches ToR `t` connects to. Consecutive ToRs take consecutive pairs, so
/// each aggregation switch gets an equal share of ToRs whenever the counts allow (§4.1 sizing),
/// and the testbed's 8 ToR links land 3/3/2 on its 3 aggregation switches.
pub fn tor_uplinks(t: u32, aggs: u32) -> [u32; 2] {
    [(2 * t) % aggs, (2 * t + 1) % aggs]
}

pub fn build(c: &Vl2, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<Topology> {
    Ok(describe(c, host_rate, fabric_rate, delay)?.build())
}

/// The fabric's nodes and links, before lowering (scenario link overrides apply here).
pub fn describe(c: &Vl2, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<FabricBuilder> {
    for (v, f) in [(c.tors, "tors"), (c.servers_per_tor, "servers_per_tor"), (c.intermediates, "intermediates")] {
        if v == 0 {
            return Err(bad(format!("topology.{f}"), "must be at least 1"));
        }
    }
    if c.aggs < 2 {
        return Err(bad("topology.aggs", "VL2 ToRs have two uplinks to distinct aggregation switches: need at least 2"));
    }
    let mut b = FabricBuilder::new(delay, "int");
    let hosts: Vec<Vec<u32>> = (0..c.tors).map(|t| (0..c.servers_per_tor).map(|_| b.node(Role::Host, t)).collect()).collect();
    let tors: Vec<u32> = (0..c.tors).map(|t| b.node(Role::Tor, t)).collect();
    let aggs: Vec<u32> = (0..c.aggs).map(|_| b.node(Role::Agg, u32::MAX)).collect();
    let ints: Vec<u32> = (0..c.intermediates).map(|_| b.node(Role::Core, u32::MAX)).collect();
    for (t, &tor) in tors.iter().enumerate() {
        for &h in &hosts[t] {
            b.link(h, tor, host_rate);
        }
        for a in tor_uplinks(t as u32, c.aggs) {
            b.link(tor, aggs[a as usize], fabric_rate);
        }
    }
    for &a in &aggs {
        for &i in &ints {
            b.link(a, i, fabric_rate);
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testbed_matches_section_5() {
        let t = build(&Vl2::TESTBED, Rate(1_000_000_000), Rate(10_000_000_000), 0).unwrap();
        assert_eq!(t.n_hosts, 80);
        assert_eq!(t.n_switches(), 10);
        // Aggregation switches carry 3, 3 and 2 ToR links plus 3 intermediate links.
        let agg_degrees: Vec<usize> = (0..t.nodes.len() as u32).filter(|&n| t.role(n) == Role::Agg).map(|n| t.ports_of(n).len()).collect();
        assert_eq!(agg_degrees, vec![6, 6, 5]);
    }

    #[test]
    fn degree_sizing_follows_section_4_1() {
        assert_eq!(Vl2::from_degrees(144, 144, 20).unwrap(), Vl2 { tors: 5184, servers_per_tor: 20, aggs: 144, intermediates: 72 });
        assert!(Vl2::from_degrees(3, 4, 20).is_err());
    }
}
