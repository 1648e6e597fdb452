//! The load a generated workload offers, for `summary.json`: per part, against its hosts' link
//! capacity (the definition open-loop `load` uses); overall, against each upward tier.
//!
//! Tier loads are expectations computed from the flows alone, before any packet moves: a flow
//! climbs to the ToR uplinks when it leaves its rack and to the top tier when it leaves its pod.
//! That is exact for leaf-spine and fat-tree shortest paths and for VL2 under VLB (every
//! cross-rack flow bounces off an Intermediate; VL2 racks are its "pods" here). Under ECMP on VL2,
//! flows between two ToRs sharing an aggregation switch stay below the Intermediates, so
//! `agg_up` overstates their load.

use super::spec::{WorkloadKind, WorkloadSpec};
use super::FlowSpec;
use crate::topology::Topology;
use crate::units::{seconds, Time};
use serde_json::{json, Value};

/// Open-loop parts have an arrival window over which a rate means something (a closed loop's
/// flows are mostly made during the run, so it has no up-front rate).
fn window(w: &WorkloadSpec) -> Option<(Time, Time)> {
    let timed = matches!(w.kind, WorkloadKind::Poisson | WorkloadKind::Periodic | WorkloadKind::Incast);
    match (w.start, w.stop) {
        (Some(a), Some(b)) if timed => Some((a.0, b.0)),
        _ => None,
    }
}

/// Name, kind, flows and bytes generated up front, and the offered load on the part's hosts.
pub fn describe_part(name: &str, w: &WorkloadSpec, flows: &[FlowSpec], topo: &Topology) -> Value {
    let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
    let offered = window(w).map(|(a, b)| {
        let hosts: Vec<u32> = match &w.hosts {
            Some(h) => h.resolve(topo.n_hosts as u32, "").unwrap_or_default(),
            None => (0..topo.n_hosts as u32).collect(),
        };
        let capacity: f64 = hosts.iter().map(|&h| topo.ports[topo.port_start[h as usize] as usize].rate_bps as f64).sum();
        bytes as f64 * 8.0 / (capacity * seconds(b - a))
    });
    json!({
        "name": name,
        "kind": super::spec::kind_name(w.kind),
        "flows": flows.len(),
        "bytes": bytes,
        "offered_load": offered,
    })
}

/// Expected utilisation of the upward tiers (`host_up`, `tor_up`, `agg_up`) over the union of
/// the arrival windows, from every flow generated up front that starts in it; `null` when no
/// part has a window (a shuffle has no rate to speak of).
pub fn expected_load(w: &WorkloadSpec, flows: &[FlowSpec], topo: &Topology) -> Value {
    let mut windows = Vec::new();
    collect_windows(w, &mut windows);
    let (Some(a), Some(b)) = (windows.iter().map(|x| x.0).min(), windows.iter().map(|x| x.1).max()) else {
        return Value::Null;
    };
    let mut capacity = [0f64; 3];
    for p in 0..topo.ports.len() as u32 {
        if let Some(t) = tier_index(topo.tier(p)) {
            capacity[t] += topo.ports[p as usize].rate_bps as f64;
        }
    }
    let mut bytes = [0f64; 3];
    for f in flows.iter().filter(|f| f.start >= a && f.start < b) {
        let (s, d) = (f.src as usize, f.dst as usize);
        bytes[0] += f.bytes as f64;
        if topo.host_tor[s] != topo.host_tor[d] {
            bytes[1] += f.bytes as f64;
        }
        if topo.nodes[s].pod != topo.nodes[d].pod {
            bytes[2] += f.bytes as f64;
        }
    }
    let span = seconds(b - a);
    let load = |t: usize| (capacity[t] > 0.0).then(|| bytes[t] * 8.0 / (capacity[t] * span));
    // On two-tier fabrics the ToR uplinks are the top tier: leaving a rack is leaving the "pod".
    json!({"window_s": span, "host_up": load(0), "tor_up": load(1), "agg_up": load(2)})
}

fn collect_windows(w: &WorkloadSpec, out: &mut Vec<(Time, Time)>) {
    out.extend(window(w));
    for s in w.services.iter().flatten() {
        collect_windows(s, out);
    }
    if let Some(b) = &w.background {
        collect_windows(b, out);
    }
}

fn tier_index(name: &str) -> Option<usize> {
    match name {
        "host_up" => Some(0),
        "tor_up" => Some(1),
        "agg_up" => Some(2),
        _ => None,
    }
}
