//! Failures, routing dynamics and asymmetry (issue 5), checked against the papers' examples and
//! against capacity arithmetic. Each test says where its expected values come from.

mod common;
use clos_core::metrics::Report;
use clos_core::routing::{Class, LinkState, Routes, SplitMode};
use clos_core::topology::{fat_tree, leaf_spine, Topology};
use clos_core::units::{Rate, PS_PER_MS};
use common::{run, scenario};
use serde_json::{json, Value};

fn down(t: &Topology, state: &mut LinkState, a: &str, b: &str) {
    let (a, b) = (t.node_named(a).unwrap(), t.node_named(b).unwrap());
    for l in t.links_between(a, b) {
        state.rate[l as usize] = 0;
    }
}

/// The split at `switch` toward `tor` as (far ends of each class's ports, class weight).
fn components(t: &Topology, r: &Routes, switch: &str, tor: &str) -> Vec<(Vec<String>, u64)> {
    let s = t.node_named(switch).unwrap();
    let ti = t.tor_index[t.node_named(tor).unwrap() as usize];
    let mut prev = 0;
    r.split_toward_tor(s, ti)
        .iter()
        .map(|&Class { group, cumulative }| {
            let names = r.group(group).iter().map(|&p| t.nodes[t.ports[p as usize].to as usize].name.clone()).collect();
            let w = cumulative - prev;
            prev = cumulative;
            (names, w)
        })
        .collect()
}

/// A k=4 fat tree at 10 Gb/s with agg0-core0 down, its routes with per-port path-capacity
/// weights, and its ports (the weighted Presto and LocalFlow tests).
fn k4_with_agg0_core0_down() -> (Topology, Routes, clos_core::fabric::Ports) {
    let t = fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(10_000_000_000), Rate(10_000_000_000), 0).unwrap();
    let mut state = LinkState::all_up(&t);
    down(&t, &mut state, "agg0", "core0");
    let r = Routes::with_state(&t, &state, SplitMode::PerPort { fixed: None });
    let ports = clos_core::fabric::Ports::new(&t, u64::MAX, None);
    (t, r, ports)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// DRILL Fig. 4: 4 leaves, 3 spines, 40 Gb/s links, L0-S0 failed. L3 -> L1 splits into {via S0}
/// and {via S1, via S2} with weights 1 : 2 (§3.4.1: "{P0}.w = 1 and {P1, P2}.w = 2").
#[test]
fn drill_fig4_decomposes_into_the_papers_components() {
    let c = leaf_spine::LeafSpine { leaves: 4, spines: 3, hosts_per_leaf: 1, links_per_pair: 1 };
    let t = leaf_spine::build(&c, Rate(10_000_000_000), Rate(40_000_000_000), 0).unwrap();
    let mut state = LinkState::all_up(&t);
    down(&t, &mut state, "tor0", "spine0");
    let r = Routes::with_state(&t, &state, SplitMode::Components);
    assert_eq!(components(&t, &r, "tor3", "tor1"), vec![(names(&["spine0"]), 1), (names(&["spine1", "spine2"]), 2)]);
    // L0 itself has only the two symmetric paths left.
    assert_eq!(components(&t, &r, "tor0", "tor1"), vec![(names(&["spine1", "spine2"]), 1)]);
}

/// DRILL §3.4.3's worked example: Fig. 4(a)'s fabric with L0-S0, L0-S1 and L1-S0 at 40 Gb/s and
/// the other links at 10 Gb/s. Of the L0 -> L1 paths H0 = L0 S0 L1, H1 = L0 S1 L1 and
/// H2 = L0 S2 L1, "we have H0 ~ H2 but H0 !~ H1": the capacity factors on the last link are
/// 40/40 = 1 (H0), 10/10 = 1 (H2) and 40/10 = 4 (H1). Weights are the paths' capacities:
/// {H0, H2} = 40 + 10 and {H1} = 10, so 5 : 1.
#[test]
fn drill_heterogeneous_example_groups_paths_by_their_own_capacity_factors() {
    let c = leaf_spine::LeafSpine { leaves: 4, spines: 3, hosts_per_leaf: 1, links_per_pair: 1 };
    let t = leaf_spine::build(&c, Rate(10_000_000_000), Rate(10_000_000_000), 0).unwrap();
    let mut state = LinkState::all_up(&t);
    for (a, b) in [("tor0", "spine0"), ("tor0", "spine1"), ("tor1", "spine0")] {
        let (a, b) = (t.node_named(a).unwrap(), t.node_named(b).unwrap());
        for l in t.links_between(a, b) {
            state.rate[l as usize] = 40_000_000_000;
        }
    }
    let r = Routes::with_state(&t, &state, SplitMode::Components);
    assert_eq!(components(&t, &r, "tor0", "tor1"), vec![(names(&["spine0", "spine2"]), 5), (names(&["spine1"]), 1)]);
}

/// A symmetric fabric has one component per destination: the whole equal-cost group.
#[test]
fn a_symmetric_fabric_has_one_component_per_destination() {
    let t = fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(1_000), Rate(1_000), 0).unwrap();
    let r = Routes::with_state(&t, &LinkState::all_up(&t), SplitMode::Components);
    for s in t.n_hosts as u32..t.nodes.len() as u32 {
        for ti in 0..t.tors.len() as u32 {
            let split = r.split_toward_tor(s, ti);
            let group = r.toward_tor(s, ti);
            if group.is_empty() {
                assert!(split.is_empty());
            } else {
                assert_eq!(split.len(), 1, "{} toward tor{ti}", t.nodes[s as usize].name);
                assert_eq!(r.group(split[0].group), group);
            }
        }
    }
}

/// DRILL Fig. 5 on a k=4 fat tree (pods of two racks and two fabric switches; fabric switch j
/// of every pod joins spine plane j). With R0-F0 (tor0-agg0) down, R5 -> R1 paths through plane
/// 0 and plane 1 are asymmetric (plane 1 also carries pod 2's traffic to R0), so R5 has two
/// components of two paths each, weight 1 : 1; F3 -> R1 (agg5 -> tor1) paths stay symmetric.
#[test]
fn drill_fig5_multi_plane_splits_by_plane() {
    let t = fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(10_000), Rate(10_000), 0).unwrap();
    let mut state = LinkState::all_up(&t);
    down(&t, &mut state, "tor0", "agg0");
    let r = Routes::with_state(&t, &state, SplitMode::Components);
    assert_eq!(components(&t, &r, "tor5", "tor1"), vec![(names(&["agg4"]), 1), (names(&["agg5"]), 1)]);
    assert_eq!(components(&t, &r, "agg5", "tor1"), vec![(names(&["core2", "core3"]), 1)]);
    assert_eq!(components(&t, &r, "agg4", "tor1"), vec![(names(&["core0", "core1"]), 1)]);
}

/// DRILL Fig. 13's imbalanced striping: leaf i has two links to spines i and i+1 mod n.
#[test]
fn imbalanced_striping_gives_two_links_to_two_spines() {
    let s = scenario(
        json!({"topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 1, "striping": "imbalanced"},
               "workload": {"kind": "permutation", "bytes": "10KB"}}),
        json!({}),
    );
    let t = s.topology.build().unwrap();
    let count = |a: &str, b: &str| t.links_between(t.node_named(a).unwrap(), t.node_named(b).unwrap()).len();
    assert_eq!((count("tor1", "spine1"), count("tor1", "spine2"), count("tor1", "spine3"), count("tor1", "spine0")), (2, 2, 1, 1));
    assert_eq!((count("tor3", "spine3"), count("tor3", "spine0")), (2, 2));
}

/// A flow file of 1 GB flows starting at 0 (`src -> dst` pairs).
fn flow_file(name: &str, pairs: &[(u32, u32)]) -> String {
    flow_file_with(name, pairs, "1GB", |_| 0.0)
}

/// A flow file: `bytes` per flow, flow i starting at `start_us(i)` microseconds.
fn flow_file_with(name: &str, pairs: &[(u32, u32)], bytes: &str, start_us: impl Fn(usize) -> f64) -> String {
    common::flow_file(name, pairs.iter().enumerate().map(|(i, &(s, d))| (s, d, bytes, format!("{}us", start_us(i)))))
}

fn leaf_spine_with_failure(extra: Value) -> Report {
    // 2 leaves x 2 spines x 4 hosts, 10 Gb/s; 4 long flows leaf 0 -> leaf 1; the link
    // tor0-spine0 fails at 2 ms. Timers: 1 ms detection, 100 us per flooding hop, 1 ms install.
    let base = json!({
        "seed": 3,
        "stop": "8ms",
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4, "link_delay": "1us"},
        "switch": {"buffer": "200KB", "ecn_threshold": "65KB"},
        "transport": {"kind": "dctcp"},
        "workload": {"kind": "flows", "file": flow_file("leaf0-to-leaf1.csv", &[(0, 4), (1, 5), (2, 6), (3, 7)])},
        "failures": [{"at": "2ms", "link": ["tor0", "spine0"]}],
        "convergence": {"detection": "1ms", "propagation": "100us", "install": "1ms"},
    });
    run(&scenario(base, extra))
}

/// Before convergence, switches keep sending into the failed link and those packets are lost and
/// counted; after it (2 ms + 1 ms detection + 1 hop x 100 us + 1 ms install = 4.1 ms for the
/// farthest switch, spine1), no packet enters a failed link. Flows keep going over the surviving
/// spine at its 10 Gb/s.
#[test]
fn after_convergence_nothing_is_sent_into_a_failed_link() {
    let r = leaf_spine_with_failure(json!({}));
    let f = &r.summary["failures"];
    assert!(f["lost_on_failed_links"].as_u64().unwrap() > 10, "{f}");
    assert_eq!(f["sent_into_failed_links_after_convergence"], 0, "{f}");
    let event = &f["timeline"][0];
    assert!((event["advertised_s"].as_f64().unwrap() - 0.003).abs() < 1e-12, "{event}");
    assert!((event["converged_s"].as_f64().unwrap() - 0.0041).abs() < 1e-12, "{event}");
    // Goodput after convergence: one 10 Gb/s spine path left; DCTCP keeps it > 90 % busy.
    let ts = &r.timeseries;
    let late: u64 = ts.bin_start_ps.iter().zip(&ts.bytes).filter(|(&t, _)| t >= 5 * PS_PER_MS).map(|(_, &b)| b).sum();
    let bps = late as f64 * 8.0 / 0.003;
    assert!(bps > 0.9 * 10e9 * 1460.0 / 1538.0 && bps <= 10e9, "goodput after convergence {bps}");
}

/// In ideal mode routing reacts at the instant of the failure: only what was queued on or
/// crossing the link is lost (at most one buffer plus the wire, 200 KB / 1538 B ~ 130 packets).
#[test]
fn ideal_convergence_loses_only_what_the_link_held() {
    let r = leaf_spine_with_failure(json!({"convergence": {"mode": "ideal", "detection": null, "propagation": null, "install": null}}));
    let f = &r.summary["failures"];
    let lost = f["lost_on_failed_links"].as_u64().unwrap();
    assert!(lost > 0 && lost <= 135, "{f}");
    assert!((f["timeline"][0]["converged_s"].as_f64().unwrap() - 0.002).abs() < 1e-12);
    assert_eq!(f["sent_into_failed_links_after_convergence"], 0);
}

/// A lossy link drops the share of packets it is told to: 1 % of the ~20,000 packets crossing
/// tor0-spine0, binomial sd ~14, so within 5 sd of 1 %.
#[test]
fn a_lossy_link_loses_its_share() {
    let r = leaf_spine_with_failure(json!({"failures": [{"link": ["tor0", "spine0"], "action": "loss", "loss": 0.01}], "routing": {"scheme": "spray-rr"}}));
    let lost = r.summary["failures"]["lost_to_link_loss"].as_f64().unwrap();
    let l = &r.links;
    let crossing: f64 = (0..l.id.len())
        .filter(|&i| matches!((l.src[i].as_str(), l.dst[i].as_str()), ("tor0", "spine0") | ("spine0", "tor0")))
        .map(|i| l.packets[i] as f64)
        .sum();
    let expect = 0.01 * crossing;
    assert!((lost - expect).abs() < 5.0 * (expect * 0.99).sqrt(), "lost {lost}, expected {expect} of {crossing}");
}

/// VL2 §5.4: links to Intermediate 1, then Intermediate 2, unplugged and later restored, under an
/// all-to-all shuffle on the testbed. The remaining capacity is what the intact fabric delivers
/// (host-bound), or what VLB can push through the surviving Intermediates, whichever is less.
/// VLB splits each ToR's traffic evenly over its two aggregation switches, and the testbed wires
/// ToR uplinks 3/3/2 onto its three aggregation switches (`vl2::tor_uplinks`), so agg0 and agg1
/// each carry 3/8 of all inter-rack traffic up to the Intermediates, spread over the n that are
/// left: inter-rack goodput is at most n x 10 Gb/s x (8/3) x (payload share of a frame with
/// VL2's two extra headers, 1460 / 1578). Goodput must reach 85 % of the remaining capacity after
/// each step (the bound), never beat it by more than measurement noise, and come back
/// after the restoration.
#[test]
fn vl2_degrades_gracefully_and_recovers() {
    // All-to-all among the 80 servers, inter-rack pairs only (intra-rack flows never cross an
    // Intermediate and would take up whatever host capacity the core leaves idle). Starts are
    // spread over 5 ms so that 4,800 flows do not open in one incast.
    let inter_rack: Vec<(u32, u32)> = (0..80).flat_map(|s| (0..80).filter(move |d| d / 20 != s / 20).map(move |d| (s, d))).collect();
    let s = scenario(
        json!({
            "seed": 1, "stop": "75ms",
            "topology": {"kind": "vl2", "preset": "testbed"},
            "switch": {"buffer": "1MB", "ecn_threshold": "30KB"},
            "routing": {"scheme": "vlb"},
            "transport": {"kind": "dctcp"},
            "workload": {"kind": "flows", "file": flow_file_with("vl2-shuffle.csv", &inter_rack, "1MB", |i| (i % 50) as f64 * 100.0)},
            "output": {"bin": "1ms"},
            "failures": [
                {"at": "30ms", "switch": "int1", "until": "60ms"},
                {"at": "45ms", "switch": "int2", "until": "60ms"},
            ],
            "convergence": {"detection": "1ms", "propagation": "100us", "install": "1ms"},
        }),
        json!({}),
    );
    let r = run(&s);
    let ts = &r.timeseries;
    let window = |a: u64, b: u64| {
        let bytes: u64 = ts.bin_start_ps.iter().zip(&ts.bytes).filter(|(&t, _)| t >= a * PS_PER_MS && t < b * PS_PER_MS).map(|(_, &b)| b).sum();
        bytes as f64 * 8.0 / ((b - a) as f64 / 1e3)
    };
    let intact = window(20, 30);
    let core_bound = |n: f64| n * 10e9 * (8.0 / 3.0) * (1460.0 / 1578.0);
    let steps = [(35, 45, 2.0), (50, 60, 1.0)];
    for (a, b, n) in steps {
        let got = window(a, b);
        let remaining = intact.min(core_bound(n));
        assert!(got >= 0.85 * remaining, "{n} Intermediates: {got:.3e} b/s < 85% of {remaining:.3e}");
        assert!(got <= 1.02 * core_bound(n), "{n} Intermediates: {got:.3e} b/s beats the core bound {:.3e}", core_bound(n));
    }
    let after = window(65, 75);
    assert!(after >= 0.85 * intact, "after restoration {after:.3e} vs intact {intact:.3e}");
    assert_eq!(r.summary["failures"]["sent_into_failed_links_after_convergence"], 0);
    assert_eq!(r.summary["failures"]["links_down_at_end"], 0);
}

/// DRILL §3.4's argument (Fig. 4): with L0-S0 down, hosts under L0 and L3 send to L1. The links
/// into L1 (3 x 10 Gb/s) are the bottleneck. Splitting L3's flows packet by packet over all three
/// spines ties the rate on the uncontended S0 path to the contended ones and leaves part of it
/// idle; decomposing ({S0} and {S1, S2}, weights 1 : 2) lets TCP fill it, like ECMP does. So
/// decomposed DRILL is not worse than ECMP (within 5 %) and beats DRILL without decomposition.
#[test]
fn drill_decomposition_beats_plain_drill_under_asymmetry() {
    let throughput = |routing: Value| {
        let base = json!({
            "seed": 5, "stop": "30ms",
            "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 3, "hosts_per_leaf": 8, "link_delay": "1us"},
            "switch": {"buffer": "300KB", "ecn_threshold": "65KB"},
            "transport": {"kind": "dctcp"},
            "routing": routing,
            "output": {"bin": "1ms"},
            // Hosts 0-7 (L0) and 24-31 (L3) each send four flows to hosts under L1 (8-15):
            // 64 flows, so that hashing flows to components is close to its 1 : 2 weights.
            "workload": {"kind": "flows", "file": flow_file("to-leaf1.csv", &(0..8).flat_map(|i| (0..4).flat_map(move |k| [(i, 8 + (i + k) % 8), (24 + i, 8 + (i + k) % 8)])).collect::<Vec<_>>())},
            "failures": [{"link": ["tor0", "spine0"]}],
        });
        let r = run(&scenario(base, json!({})));
        let ts = &r.timeseries;
        let bytes: u64 = ts.bin_start_ps.iter().zip(&ts.bytes).filter(|(&t, _)| t >= 10 * PS_PER_MS).map(|(_, &b)| b).sum();
        bytes as f64 * 8.0 / 0.020
    };
    let ecmp = throughput(json!({"scheme": "ecmp"}));
    let drill = throughput(json!({"scheme": "drill"}));
    let plain = throughput(json!({"scheme": "drill", "decompose": false}));
    assert!(drill >= 0.95 * ecmp, "DRILL {drill:.3e} vs ECMP {ecmp:.3e}");
    assert!(drill > 1.05 * plain, "DRILL {drill:.3e} vs DRILL without decomposition {plain:.3e}");
}

/// Bad failure entries name the field and the fix.
#[test]
fn bad_failures_are_named() {
    let err = |f: Value| {
        let s = json!({"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 1},
                       "workload": {"kind": "permutation", "bytes": "1KB"}, "failures": [f]});
        clos_core::scenario::Scenario::from_json(&s.to_string()).unwrap_err().to_string()
    };
    assert!(err(json!({"link": ["tor0", "spine9"]})).starts_with("failures[0].link: no node named \"spine9\""));
    assert!(err(json!({"link": ["tor0", "tor1"]})).contains("there is no link between tor0 and tor1"));
    assert!(err(json!({"switch": "spine0", "link": ["tor0", "spine0"]})).starts_with("failures[0]: name exactly one"));
    assert!(err(json!({"random": {"count": 9, "tier": "tor_up"}})).starts_with("failures[0].random.count"));
    assert!(err(json!({"random": {"count": 1, "tier": "core"}})).starts_with("failures[0].random.tier"));
    assert!(err(json!({"switch": "spine0", "action": "degrade"})).starts_with("failures[0].rate"));
    assert!(err(json!({"switch": "spine0", "at": "2ms", "until": "1ms"})).starts_with("failures[0].until"));
    assert!(err(json!({"link": ["tor0", "spine0"], "index": 3})).starts_with("failures[0].index"));
}

/// Oversubscription by ratio sets the fabric rate: 20 hosts x 10 Gb/s over 4 spine links at 2:1
/// is 25 Gb/s per link; VL2's testbed at 1:1 is its own 10 Gb/s (20 x 1 Gb/s over 2 uplinks).
/// A normalised scenario keeps both fields and normalises again to itself.
#[test]
fn oversubscription_sets_the_fabric_rate() {
    let s = scenario(
        json!({"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 20, "oversubscription": 2.0},
               "workload": {"kind": "permutation", "bytes": "1KB"}}),
        json!({}),
    );
    assert_eq!(s.topology.fabric_rate, Some(Rate(25_000_000_000)));
    let again = clos_core::scenario::Scenario::from_json(&s.to_json()).unwrap();
    assert_eq!(again.to_json(), s.to_json());
    let v = scenario(
        json!({"topology": {"kind": "vl2", "preset": "testbed", "oversubscription": 1.0}, "workload": {"kind": "shuffle", "bytes": "1KB"}}),
        json!({}),
    );
    assert_eq!(v.topology.fabric_rate, Some(Rate(10_000_000_000)));
    let err = |t: Value| {
        clos_core::scenario::Scenario::from_json(&json!({"topology": t, "workload": {"kind": "permutation", "bytes": "1KB"}}).to_string())
            .unwrap_err()
            .to_string()
    };
    assert!(err(json!({"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 20, "oversubscription": 2.0, "fabric_rate": "40Gbps"}))
        .starts_with("topology.oversubscription"));
    assert!(err(json!({"kind": "fat_tree", "k": 4, "oversubscription": 2.0})).starts_with("topology.oversubscription: applies to"));
    assert!(
        err(json!({"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 2, "oversubscription": -1.0})).starts_with("topology.oversubscription")
    );
}

/// Link overrides: rates and counts change, and a fabric they would disconnect is refused.
#[test]
fn link_overrides_change_rates_and_counts_and_refuse_a_disconnected_fabric() {
    let base = |links: Value| {
        json!({"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 1, "links": links},
                                     "workload": {"kind": "permutation", "bytes": "1KB"}})
    };
    let s = scenario(base(json!([{"between": ["tor0", "spine1"], "count": 3, "rate": "40Gbps"}])), json!({}));
    let t = s.topology.build().unwrap();
    let (l0, s1) = (t.node_named("tor0").unwrap(), t.node_named("spine1").unwrap());
    let links = t.links_between(l0, s1);
    assert_eq!(links.len(), 3);
    assert!(links.iter().all(|&l| t.ports[t.links[l as usize][0] as usize].rate_bps == 40_000_000_000));
    let err = |links: Value| clos_core::scenario::Scenario::from_json(&base(links).to_string()).unwrap_err().to_string();
    assert!(err(json!([{"between": ["tor0", "spine0"], "count": 0}, {"between": ["tor0", "spine1"], "count": 0}])).contains("cannot reach"));
    assert!(err(json!([{"between": ["tor0", "spine7"], "count": 1}])).starts_with("topology.links[0].between"));
    assert!(err(json!([{"between": ["tor0", "tor1"], "rate": "1Gbps"}])).contains("no link between tor0 and tor1"));
    assert!(err(json!([{"between": ["tor0", "spine0"]}])).contains("give `count`, `rate` or both"));
}

/// Random failures pick distinct links of the named tier, the same ones for the same seed.
#[test]
fn random_failures_pick_distinct_links_of_a_tier_reproducibly() {
    let t = fat_tree::build(&fat_tree::FatTree { k: 8, remove_cores: 0 }, Rate(1_000), Rate(1_000), 0).unwrap();
    let spec: Vec<clos_core::failures::FailureSpec> = serde_json::from_value(json!([{"random": {"count": 10, "tier": "agg_up"}}])).unwrap();
    let a = clos_core::failures::resolve(&spec, &t, 7).unwrap();
    let b = clos_core::failures::resolve(&spec, &t, 7).unwrap();
    let c = clos_core::failures::resolve(&spec, &t, 8).unwrap();
    assert_eq!(a, b);
    assert_ne!(a[0].links, c[0].links);
    let mut links = a[0].links.clone();
    links.dedup();
    assert_eq!(links.len(), 10);
    for &l in &links {
        let [p, _] = t.links[l as usize];
        let roles = (t.role(t.ports[p as usize].from), t.role(t.ports[p as usize].to));
        assert!(matches!(
            roles,
            (clos_core::topology::Role::Agg, clos_core::topology::Role::Core) | (clos_core::topology::Role::Core, clos_core::topology::Role::Agg)
        ));
    }
}

/// A failure that partitions the fabric: once routing has converged, the spine has no route to
/// leaf 1 and drops what reaches it as unroutable (counted, conserved); after the repair the flow
/// completes.
#[test]
fn a_partitioned_fabric_drops_unroutable_packets_and_recovers() {
    let s = scenario(
        json!({
            "seed": 2, "stop": "all_flows_done", "max_time": "200ms",
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1, "link_delay": "1us"},
            "workload": {"kind": "flows", "file": flow_file_with("partition.csv", &[(0, 1)], "5MB", |_| 0.0)},
            "failures": [{"at": "1ms", "link": ["tor1", "spine0"], "until": "10ms"}],
            "convergence": {"detection": "100us", "propagation": "10us", "install": "100us"},
        }),
        json!({}),
    );
    let r = run(&s);
    let f = &r.summary["failures"];
    assert!(f["unroutable"].as_u64().unwrap() > 0, "{f}");
    assert_eq!(r.summary["flows"]["finished"], 1);
}

/// Presto's weighted multipathing: on a k=4 fat tree with one agg0-core link down, an edge in
/// pod 0 weighs agg0 : agg1 = 1 : 2 toward another pod (one healthy core path against two), so
/// of any 3 consecutive flowcells one climbs to agg0 and two to agg1.
#[test]
fn presto_weighted_sends_flowcells_in_proportion_to_path_capacity() {
    use clos_core::lb::{params::RoutingSpec, presto::Presto, Fabric, Scheme};
    use clos_core::packet::Packet;
    use clos_core::rng::Streams;
    let (t, r, ports) = k4_with_agg0_core0_down();
    let f = Fabric { topo: &t, routes: &r, ports: &ports, now: 0 };
    let spec = RoutingSpec { scheme: Scheme::Presto, ..Default::default() };
    let mut p = Presto::new(&spec, 1460, &mut Streams::new(3));
    let edge = t.node_named("tor0").unwrap();
    let per_cell = 65536 / 1460 + 1;
    let mut counts = std::collections::BTreeMap::new();
    for cell in 0..30u32 {
        let mut pkt = Packet { src: 0, dst: 15, seg: cell * per_cell, entropy: 42, ..Default::default() };
        p.label(&mut pkt);
        let port = p.next_port(&f, edge, &mut pkt);
        *counts.entry(t.nodes[t.ports[port as usize].to as usize].name.clone()).or_insert(0) += 1;
    }
    assert_eq!(counts, [("agg0".to_string(), 10), ("agg1".to_string(), 20)].into_iter().collect());
}

/// LocalFlow §4.3: after a partial failure the upstream switch sizes its bins in proportion to
/// the capacity left behind each link. k=4 fat tree with agg0-core0 down: from tor0 toward pod 3,
/// agg0 has one path left and agg1 two (the weights the Presto test above checks), so after a
/// scheduling round agg0 should carry a third of ten equal flows' packets, where equal bins give
/// it half. Tolerance: split ratios are multiples of 1/16 (5/16 = 0.31 for a third).
#[test]
fn localflow_sizes_its_bins_by_the_capacity_left() {
    use clos_core::lb::{localflow::LocalFlow, params::RoutingSpec, Fabric, Scheme};
    use clos_core::packet::Packet;
    use clos_core::rng::{mix64, Streams};
    let (t, r, ports) = k4_with_agg0_core0_down();
    let f = Fabric { topo: &t, routes: &r, ports: &ports, now: 0 };
    let edge = t.node_named("tor0").unwrap();
    let agg0 = t.node_named("agg0").unwrap();
    let share_via_agg0 = |weighted: bool| {
        let spec = RoutingSpec { scheme: Scheme::Localflow, weighted: Some(weighted), ..Default::default() };
        let mut lf = LocalFlow::new(&spec, &t, 1460, &mut Streams::new(3));
        let send = |lf: &mut LocalFlow, segs: std::ops::Range<u32>| {
            let mut via_agg0 = 0;
            for flow in 0..10u64 {
                for seg in segs.clone() {
                    let mut pkt = Packet { src: 0, dst: 15, seg, payload: 1460, entropy: mix64(flow), ..Default::default() };
                    via_agg0 += u32::from(t.ports[lf.next_port(&f, edge, &mut pkt) as usize].to == agg0);
                }
            }
            via_agg0 as f64 / (10 * segs.len()) as f64
        };
        send(&mut lf, 0..100); // measured over the first interval
        lf.schedule(&f);
        send(&mut lf, 100..612)
    };
    let (weighted, equal) = (share_via_agg0(true), share_via_agg0(false));
    assert!((weighted - 1.0 / 3.0).abs() < 0.05, "agg0 carries {weighted} with resized bins");
    assert!((equal - 0.5).abs() < 0.05, "agg0 carries {equal} with equal bins");
}

/// A run that ends mid-convergence: on a k = 4 fat tree agg0-tor1 fails at 400 us and, with
/// 200 us to detect and 200 us to install, the run stops at 1 ms with some switches on the new
/// routes and some on the old, and the routes toward tor1 loop (8 flows' walks). Each flow's
/// ideal FCT walks the routes at the end; through that loop it once walked forever, growing its
/// path until memory ran out. It now takes the path of
/// fewest hops over the links instead, so every flow has an ideal and a finished flow's
/// slowdown is at least 1 (the ideal is a lower bound).
#[test]
fn a_run_that_ends_mid_convergence_still_has_every_flows_ideal() {
    let hosts = [2, 3, 5, 7, 9, 11];
    let base = json!({
        "seed": 1,
        "stop": "1ms",
        "topology": {"kind": "fat_tree", "k": 4, "link_delay": "1us"},
        "workload": {"kind": "services", "services": [{"kind": "shuffle", "hosts": hosts, "bytes": "50KB"}]},
        "failures": [{"at": "400us", "action": "down", "link": ["agg0", "tor1"]}],
        "convergence": {"detection": "200us", "install": "200us"},
    });
    let r = run(&scenario(base, json!({})));
    let f = &r.flows;
    assert_eq!(f.id.len(), hosts.len() * (hosts.len() - 1));
    for i in 0..f.id.len() {
        assert!(f.ideal_fct_ps[i] > 0, "flow {i} has no ideal");
        if f.finished[i] {
            assert!(f.slowdown[i] >= 1.0, "flow {i}: slowdown {}", f.slowdown[i]);
        }
    }
}
