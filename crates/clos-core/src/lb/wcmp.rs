//! WCMP (Zhou et al., EuroSys'14): ECMP's per-flow hash, but each next hop is chosen in
//! proportion to a weight. By default a port's weight is its link capacity, so on a fabric with
//! equal links WCMP is ECMP, and with heterogeneous links (DRILL §4, Fig. 13) it follows
//! capacity. `routing.weights` overrides the weight of the links between two named nodes.
//! Hardware replicates next hops in the ECMP table to realise weights (Kang et al.); we draw
//! from the exact cumulative weights instead, which is what such tables approximate.

use super::ecmp::Ecmp;
use super::{params::RoutingSpec, Fabric};
use crate::error::{bad, Result};
use crate::packet::Packet;
use crate::rng::Streams;
use crate::routing::Routes;
use crate::topology::Topology;
use std::collections::HashMap;

pub struct Wcmp {
    ecmp: Ecmp,
    /// Cumulative weights, laid out like the routes' group storage.
    cumulative: Vec<u64>,
}

impl Wcmp {
    pub fn new(spec: &RoutingSpec, topo: &Topology, routes: &Routes, streams: &mut Streams) -> Result<Self> {
        let mut weight: Vec<u64> = topo.ports.iter().map(|p| p.rate_bps / 1_000_000).map(|w| w.max(1)).collect();
        if let Some(list) = &spec.weights {
            let ids: HashMap<&str, u32> = topo.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
            let lookup = |i: usize, field: &str, name: &str| {
                ids.get(name).copied().ok_or_else(|| {
                    let example: Vec<&str> = topo.nodes.iter().skip(topo.n_hosts).take(3).map(|n| n.name.as_str()).collect();
                    bad(format!("routing.weights[{i}].{field}"), format!("no switch named \"{name}\" (switches are named like {})", example.join(", ")))
                })
            };
            for (i, w) in list.iter().enumerate() {
                let (a, b) = (lookup(i, "from", &w.from)?, lookup(i, "to", &w.to)?);
                let mut found = false;
                for p in topo.ports_of(a).filter(|&p| topo.ports[p as usize].to == b) {
                    weight[p as usize] = w.weight as u64;
                    found = true;
                }
                if !found {
                    return Err(bad(format!("routing.weights[{i}]"), format!("there is no link from {} to {}", w.from, w.to)));
                }
            }
        }
        let mut cumulative = vec![0; routes.group_storage_len()];
        for g in 0..routes.distinct_groups() as u32 {
            let off = routes.group_offset(g);
            let mut sum = 0;
            for (i, &p) in routes.group(g).iter().enumerate() {
                sum += weight[p as usize];
                cumulative[off + i] = sum;
            }
        }
        Ok(Wcmp { ecmp: Ecmp::new(topo, streams), cumulative })
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let (g, group) = f.group_for(switch, pkt);
        let cum = &self.cumulative[f.routes.group_offset(g)..f.routes.group_offset(g) + group.len()];
        let total = cum[group.len() - 1];
        let r = ((self.ecmp.hash(switch, pkt.entropy) as u128 * total as u128) >> 64) as u64;
        group[cum.partition_point(|&c| c <= r)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::lb::params::LinkWeight;
    use crate::lb::Scheme;
    use crate::rng::mix64;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::Rate;

    /// WCMP splits flows in its weights' ratio: weights 1 : 3 over two spines, 40,000 flows.
    /// Binomial with p = 0.25: sd of the fraction = sqrt(p(1-p)/n) = 0.0022; allow 5 sd.
    #[test]
    fn wcmp_splits_in_the_ratio_of_its_weights() {
        let t = build(&LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        let leaf = t.host_tor[0];
        let name = |n: u32| t.nodes[n as usize].name.clone();
        let g = routes.toward_tor(leaf, 1).to_vec();
        let (s0, s1) = (t.ports[g[0] as usize].to, t.ports[g[1] as usize].to);
        let spec = RoutingSpec {
            scheme: Scheme::Wcmp,
            weights: Some(vec![
                LinkWeight { from: name(leaf), to: name(s0), weight: 1 },
                LinkWeight { from: name(leaf), to: name(s1), weight: 3 },
            ]),
            ..Default::default()
        };
        let mut w = Wcmp::new(&spec, &t, &routes, &mut Streams::new(4)).unwrap();
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let n = 40_000;
        let on_s0 = (0..n)
            .filter(|&i| {
                let mut p = Packet { src: 0, dst: 1, entropy: mix64(i as u64), ..Default::default() };
                w.next_port(&f, leaf, &mut p) == g[0]
            })
            .count();
        let frac = on_s0 as f64 / n as f64;
        assert!((frac - 0.25).abs() < 5.0 * 0.0022, "fraction on the weight-1 link: {frac}");
    }

    #[test]
    fn unknown_switch_names_are_reported_with_the_field() {
        let t = build(&LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let spec = RoutingSpec {
            scheme: Scheme::Wcmp,
            weights: Some(vec![LinkWeight { from: "nope".into(), to: "x".into(), weight: 1 }]),
            ..Default::default()
        };
        let e = Wcmp::new(&spec, &t, &routes, &mut Streams::new(4)).err().unwrap().to_string();
        assert!(e.contains("routing.weights[0].from") && e.contains("nope"), "{e}");
    }
}
