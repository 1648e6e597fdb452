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
use crate::topology::Topology;

pub struct Wcmp {
    ecmp: Ecmp,
}

/// `routing.weights` as a per-port table (links not listed weigh their capacity in Mb/s), or
/// `None` when not given: then routing derives weights from path capacities.
pub fn fixed_weights(spec: &RoutingSpec, topo: &Topology) -> Result<Option<Vec<u64>>> {
    let Some(list) = &spec.weights else { return Ok(None) };
    let mut weight: Vec<u64> = topo.ports.iter().map(|p| (p.rate_bps / 1_000_000).max(1)).collect();
    for (i, w) in list.iter().enumerate() {
        let lookup = |field: &str, name: &str| {
            topo.node_named(name).ok_or_else(|| {
                bad(format!("routing.weights[{i}].{field}"), format!("no switch named \"{name}\" (switches are named like {})", topo.example_switch_names()))
            })
        };
        let (a, b) = (lookup("from", &w.from)?, lookup("to", &w.to)?);
        let mut found = false;
        for p in topo.ports_of(a).filter(|&p| topo.ports[p as usize].to == b) {
            weight[p as usize] = w.weight as u64;
            found = true;
        }
        if !found {
            return Err(bad(format!("routing.weights[{i}]"), format!("there is no link from {} to {}", w.from, w.to)));
        }
    }
    Ok(Some(weight))
}

impl Wcmp {
    pub fn new(topo: &Topology, streams: &mut Streams) -> Self {
        Wcmp { ecmp: Ecmp::new(topo, streams) }
    }

    /// Routing's per-port split (`SplitMode::PerPort`) holds the weights; pick by flow hash.
    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let classes = f.routes.split_toward_tor(switch, f.dst_tor_index(pkt));
        let g = super::pick_class(classes, self.ecmp.hash(switch, pkt.entropy));
        f.routes.group(g)[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::lb::params::LinkWeight;
    use crate::lb::Scheme;
    use crate::rng::mix64;
    use crate::routing::Routes;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::Rate;

    /// WCMP splits flows in its weights' ratio: weights 1 : 3 over two spines, 40,000 flows.
    /// Binomial with p = 0.25: sd of the fraction = sqrt(p(1-p)/n) = 0.0022; allow 5 sd.
    #[test]
    fn wcmp_splits_in_the_ratio_of_its_weights() {
        let t = build(&LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(1), Rate(1), 0).unwrap();
        let ports = Ports::new(&t, u64::MAX, None);
        let leaf = t.host_tor[0];
        let routes0 = Routes::compute(&t);
        let name = |n: u32| t.nodes[n as usize].name.clone();
        let g = routes0.toward_tor(leaf, 1).to_vec();
        let (s0, s1) = (t.ports[g[0] as usize].to, t.ports[g[1] as usize].to);
        let spec = RoutingSpec {
            scheme: Scheme::Wcmp,
            weights: Some(vec![LinkWeight { from: name(leaf), to: name(s0), weight: 1 }, LinkWeight { from: name(leaf), to: name(s1), weight: 3 }]),
            ..Default::default()
        };
        let mode = crate::lb::split_mode(&spec, &t).unwrap();
        let routes = Routes::with_state(&t, &crate::routing::LinkState::all_up(&t), mode);
        let mut w = Wcmp::new(&t, &mut Streams::new(4));
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
        let spec =
            RoutingSpec { scheme: Scheme::Wcmp, weights: Some(vec![LinkWeight { from: "nope".into(), to: "x".into(), weight: 1 }]), ..Default::default() };
        let e = fixed_weights(&spec, &t).err().unwrap().to_string();
        assert!(e.contains("routing.weights[0].from") && e.contains("nope"), "{e}");
    }
}
