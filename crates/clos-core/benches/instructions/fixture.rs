//! What the benchmarks run on: B1's scenario, read from the file `clos bench` runs, so that a
//! change to B1 reaches these benchmarks too, and B1's fabric for the component benchmarks.

use clos_core::fabric::Ports;
use clos_core::rng::mix64;
use clos_core::routing::Routes;
use clos_core::scenario::Scenario;
use clos_core::topology::Topology;

const B1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/clos/data/bench/b1-fat-tree-k8.toml");

/// B1 with `stop` (e.g. "5ms") and `routing.scheme` replaced. The Python front end hands the core
/// the TOML table as JSON unchanged, and so does this.
pub fn b1(stop: &str, scheme: &str) -> Scenario {
    let text = std::fs::read_to_string(B1).unwrap_or_else(|e| panic!("{B1}: {e}"));
    let table: toml::Table = text.parse().unwrap_or_else(|e| panic!("{B1}: {e}"));
    let mut json = serde_json::to_value(table).expect("a TOML table is JSON");
    json["stop"] = stop.into();
    json["routing"]["scheme"] = scheme.into();
    Scenario::from_json(&json.to_string()).expect("B1 is a valid scenario")
}

/// B1's topology, routes and ports (queues empty).
pub struct Fabric {
    pub scenario: Scenario,
    pub topo: Topology,
    pub routes: Routes,
    pub ports: Ports,
}

pub fn fabric(scheme: &str) -> Fabric {
    let scenario = b1("20ms", scheme);
    let topo = scenario.topology.build().expect("B1's fat tree builds");
    let routes = Routes::compute(&topo);
    let ports = Ports::new(&topo, scenario.switch.buffer.0, scenario.switch.ecn_threshold.map(|b| b.0));
    Fabric { scenario, topo, routes, ports }
}

impl Fabric {
    /// A host in another pod than `src`, as B1's cross-pod permutation picks (chosen by `key`).
    pub fn cross_pod_peer(&self, src: u32, key: u64) -> u32 {
        let k = self.scenario.topology.k.expect("B1 is a fat tree") as u64;
        let hosts = self.topo.n_hosts as u64;
        let per_pod = k * k / 4;
        let other_pods = hosts - per_pod;
        let pod_start = src as u64 / per_pod * per_pod;
        let k = mix64(key) % other_pods;
        ((pod_start + per_pod + k) % hosts) as u32
    }
}
