//! Whole-simulation checks against theory and the papers. Each test states its tolerance's source.

mod common;
use clos_core::sim::World;
use clos_core::topology::Role;
use common::{get, run, scenario};
use serde_json::json;

/// Two leaves, one spine: every flow from leaf 0 to leaf 1 crosses the leaf-0 uplink.
fn dumbbell(hosts: u32) -> serde_json::Value {
    json!({
        "seed": 1,
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": hosts,
                     "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "10us"},
        "workload": {"kind": "flows", "file": ""},
    })
}

/// Flows that all start at time 0.
fn flow_file(name: &str, rows: &[(u32, u32, &str)]) -> String {
    common::flow_file(name, rows.iter().map(|&(s, d, b)| (s, d, b, "0")))
}

#[test]
fn one_tcp_flow_fills_a_bottleneck_with_a_bdp_buffer() {
    // RTT: 8 links x 10 us propagation + serialisation ~ 85 us; BDP at 10 Gb/s ~ 106 KB.
    let file = flow_file("one.csv", &[(0, 1, "50MB")]);
    let s = scenario(dumbbell(1), json!({"switch": {"buffer": "110KB"}, "workload": {"file": file}}));
    let r = run(&s);
    // Ideal = 10 Gb/s x 1460/1538 (headers); >= 95% of it is the bar, which leaves room
    // for slow start (~1 ms of a ~42 ms transfer) and one halving: with a BDP buffer a halved
    // window still fills the pipe (Appenzeller et al.), so only slow start costs goodput.
    let eff = get(&r, "goodput", "efficiency");
    assert!(eff >= 0.95, "efficiency {eff}");
}

#[test]
fn a_flow_with_its_own_mss_moves_payload_at_that_sizes_share_of_the_wire() {
    // PLTS Fig. 5(c) draws each flow's MSS from [64, 1460]. A lone flow's goodput is then bound
    // by C x m / frame(m): for m well below 1460 that bound is under what 1460-byte segments
    // get, so a sender that ignored its own MSS would exceed it. Lower bound as in the test
    // above (>= 90% here: slow start is a larger share when segments are small).
    let file = flow_file("mss.csv", &[(0, 1, "20MB")]);
    let s = scenario(dumbbell(1), json!({"switch": {"buffer": "110KB"}, "transport": {"mss_min": 64}, "workload": {"file": file}}));
    let r = run(&s);
    let m = r.flows.mss[0] as u64;
    assert!((64..=1460).contains(&m), "mss {m}");
    assert_eq!(m, s.tcp_params().flow_mss(0) as u64);
    let goodput = r.flows.delivered[0] as f64 * 8.0 / (r.flows.fct_ps[0] as f64 * 1e-12);
    let bound = 10e9 * m as f64 / clos_core::packet::wire::frame(m, 0) as f64;
    assert!(goodput <= bound && goodput >= 0.9 * bound, "mss {m}: goodput {goodput:.3e} against {bound:.3e}");
}

#[test]
fn long_tcp_flows_share_a_bottleneck_fairly() {
    // 4 long flows of equal RTT through one 10 Gb/s uplink, measured over the same 200 ms after
    // a 50 ms warm-up (slow-start overshoot and its timeouts are a start-up transient).
    // Jain >= 0.99 is the bar; TCP flows with equal RTTs converge to equal shares
    // (Chiu & Jain 1989).
    let rows: Vec<(u32, u32, &str)> = (0..4).map(|i| (i, 4 + i, "1GB")).collect();
    let file = flow_file("four.csv", &rows);
    let s = scenario(dumbbell(4), json!({"switch": {"buffer": "200KB"}, "workload": {"file": file}, "stop": "250ms"}));
    let mut w = World::new(&s).unwrap();
    w.run_until(50_000_000_000);
    let before = w.delivered_bytes.clone();
    w.run();
    w.check_conservation().unwrap();
    let shares: Vec<f64> = w.delivered_bytes.iter().zip(&before).map(|(a, b)| (a - b) as f64).collect();
    let jain = clos_core::metrics::fairness::jain(&shares).unwrap();
    assert!(jain >= 0.99, "jain {jain}: delivered {shares:?}");
    // Together they keep the 10 Gb/s bottleneck >= 90% busy with payload (ideal 94.9%).
    let goodput = shares.iter().sum::<f64>() * 8.0 / 0.200;
    assert!(goodput >= 0.90 * 10e9 * 1460.0 / 1538.0, "goodput {goodput}");
}

#[test]
fn dctcp_holds_the_bottleneck_queue_near_k_at_full_utilisation() {
    let k = 97_500u64; // 65 packets: DCTCP's K for 10 Gb/s (DCTCP §3.4)
    let rows: Vec<(u32, u32, &str)> = (0..8).map(|i| (i, 8 + i, "1GB")).collect();
    let file = flow_file("dctcp.csv", &rows);
    let s = scenario(
        dumbbell(8),
        json!({"stop": "30ms", "transport": {"kind": "dctcp"},
               "switch": {"buffer": "1MB", "ecn_threshold": k}, "workload": {"file": file}}),
    );
    let mut w = World::new(&s).unwrap();
    let leaf0 = w.topo.tors[0];
    let uplink = w.topo.ports_of(leaf0).find(|&p| w.topo.role(w.topo.ports[p as usize].to) == Role::Core).unwrap();
    let warmup = 10_000_000_000u64; // 10 ms
    w.run_until(warmup);
    let bytes_before = w.ports.accepted(uplink).bytes;
    let mut samples = Vec::new();
    let mut t = warmup;
    while t < 30_000_000_000 {
        t += 10_000_000; // every 10 us, as DRILL samples queues
        w.run_until(t);
        samples.push(w.ports.backlog(uplink, t) as f64);
    }
    w.check_conservation().unwrap();
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    let max = samples.iter().cloned().fold(0.0, f64::max);
    // DCTCP's analysis (§3.3): the queue oscillates around K with amplitude O(sqrt(N) x MSS)
    // ... about 4 KB here, plus the marking-reaction delay of one RTT at line rate (~110 KB at
    // 10 Gb/s and 85 us). Mean within K/2..2K and no drops is what the analysis predicts.
    assert!(mean > k as f64 / 2.0 && mean < 2.0 * k as f64, "mean queue {mean} vs K {k}");
    assert!(max < 1_000_000.0, "max queue {max}");
    assert_eq!(w.ports.drops.iter().sum::<u64>(), 0);
    // Utilisation of the bottleneck over the sampled 20 ms: >= 99% of the line rate in wire bytes.
    let util = (w.ports.accepted(uplink).bytes - bytes_before) as f64 * 8.0 / (10e9 * 0.020);
    assert!(util > 0.99, "utilisation {util}");
}

fn summary_without_timing(r: &clos_core::metrics::Report) -> serde_json::Value {
    let mut v = r.summary.clone();
    v.as_object_mut().unwrap().remove("stats");
    v
}

#[test]
fn same_seed_gives_identical_results_and_different_seeds_differ() {
    let base = json!({
        "topology": {"kind": "fat_tree", "k": 4},
        "workload": {"kind": "shuffle", "bytes": "200KB", "start_jitter": "100us"},
        "switch": {"buffer": "100KB"},
    });
    let a = run(&scenario(base.clone(), json!({"seed": 7})));
    let b = run(&scenario(base.clone(), json!({"seed": 7})));
    let c = run(&scenario(base, json!({"seed": 8})));
    assert_eq!(summary_without_timing(&a).to_string(), summary_without_timing(&b).to_string());
    assert_eq!(a.flows.end_ps, b.flows.end_ps);
    assert_eq!(a.links.bytes, b.links.bytes);
    assert_eq!(a.summary["stats"]["events"], b.summary["stats"]["events"]);
    assert_ne!(a.flows.end_ps, c.flows.end_ps);
}

#[test]
fn vl2_testbed_shuffle_reaches_the_papers_efficiency_and_fairness() {
    // VL2 §5.1: 75 servers each send to the other 74; 94% of the maximum goodput, Jain 0.995.
    // Scaled down from 500 MB to 1 MB per flow. DCTCP stands in for the testbed's TCP: at this
    // scale a single 10 ms timeout is a large part of a flow's life and makes TCP's many-flow
    // unfairness dominate, which 500 MB flows average out (see docs/validation.md). The start-up
    // burst (74 flows x 10-segment initial windows into each 1 Gb/s port) costs ~4% at 1 MB.
    let s = scenario(
        json!({
            "topology": {"kind": "vl2", "preset": "testbed"},
            "workload": {"kind": "shuffle", "hosts": 75, "bytes": "1MB"},
            "transport": {"kind": "dctcp"},
            "switch": {"buffer": "1MB", "ecn_threshold": "30KB"},
            "routing": {"scheme": "vlb"},
        }),
        json!({}),
    );
    let r = run(&s);
    let (eff, jain) = (get(&r, "goodput", "efficiency"), get(&r, "goodput", "jain"));
    // The bars: >= 0.90 of the ideal and Jain >= 0.99.
    assert!(eff >= 0.90, "efficiency {eff}");
    assert!(jain >= 0.99, "jain {jain}");
    // VLB's encapsulation costs 40 B on 1538 B frames on the fabric, not on host links: the
    // NIC-bound efficiency cannot reach 1.
    assert!(eff < 1.0);
}

#[test]
fn ecmp_collisions_cost_a_fat_tree_permutation_much_of_its_capacity() {
    // A k=8 fat tree is non-blocking, so a permutation could run every host at line rate. ECMP
    // pins each flow to one hashed path; collisions at aggregation and core uplinks leave
    // about 40-50% of the capacity unused (Al-Fares et al. 2008, Hedera; PLTS Fig. 7 reports
    // spraying ~1.5x ECMP). We require clearly below 85%, and above 30% as a sanity floor.
    let s = scenario(
        json!({
            "stop": "20ms",
            "topology": {"kind": "fat_tree", "k": 8, "host_rate": "10Gbps"},
            "workload": {"kind": "permutation", "bytes": "1GB", "cross_pod": true},
            "transport": {"kind": "dctcp"},
            "switch": {"buffer": "300KB", "ecn_threshold": "97.5KB"},
            "routing": {"scheme": "ecmp"},
        }),
        json!({}),
    );
    let r = run(&s);
    let eff = get(&r, "goodput", "efficiency");
    assert!(eff < 0.85 && eff > 0.30, "ECMP permutation efficiency {eff}");
}

#[test]
fn every_run_conserves_packets_even_when_stopped_mid_flight() {
    let s = scenario(
        json!({
            "stop": "200us",
            "topology": {"kind": "vl2", "preset": "testbed"},
            "workload": {"kind": "shuffle", "hosts": 20, "bytes": "1MB"},
            "switch": {"buffer": "20KB"},
            "routing": {"scheme": "vlb"},
        }),
        json!({}),
    );
    let r = run(&s);
    let p = &r.summary["packets"];
    let (sent, del, drop, infl) =
        (p["sent"].as_u64().unwrap(), p["delivered"].as_u64().unwrap(), p["dropped"].as_u64().unwrap(), p["in_flight"].as_u64().unwrap());
    assert_eq!(sent, del + drop + infl);
    assert!(drop > 0 && infl > 0, "the scenario is meant to exercise drops and packets in flight");
}
