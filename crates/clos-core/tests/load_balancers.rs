//! End-to-end behaviour of the load balancers (issue 4). Each test states the paper claim it
//! protects; tolerances are explained inline.

mod common;
use common::{get, run, scenario};
use serde_json::{json, Value};

/// k=8 fat tree, 10 Gb/s, a cross-pod permutation of long flows, DCTCP (PLTS §IV setup, with
/// DCTCP in place of QualNet's TCP).
fn permutation(scheme: &str, stop: &str, extra_transport: Value) -> Value {
    let mut transport = json!({"kind": "dctcp"});
    transport.as_object_mut().unwrap().extend(extra_transport.as_object().unwrap().clone());
    json!({
        "stop": stop,
        "topology": {"kind": "fat_tree", "k": 8, "host_rate": "10Gbps"},
        "workload": {"kind": "permutation", "bytes": "1GB", "cross_pod": true},
        "transport": transport,
        "switch": {"buffer": "300KB", "ecn_threshold": "97.5KB"},
        "routing": {"scheme": scheme},
    })
}

fn spread(r: &clos_core::metrics::Report) -> f64 {
    let d = &r.flows.delivered;
    let max = *d.iter().max().unwrap() as f64;
    let min = *d.iter().min().unwrap() as f64;
    max / min.max(1.0)
}

/// PLTS (seed 002, Fig. 5a and §IV.B.4): per-packet spraying gets about 1.5x ECMP's goodput on a
/// k=8 fat tree permutation and near-uniform per-flow throughput, where ECMP's best and worst
/// flows differ by an order of magnitude. We require 1.3x and a per-flow max/min spread at
/// most a third of ECMP's. With DCTCP and a dupthresh of 3, spraying's reordering causes
/// spurious fast retransmits; the PLTS host agent (adaptive dupthresh) is on, as in PLTS Fig. 5c
/// (docs/load-balancers.md explains the numbers without it).
#[test]
fn spraying_beats_ecmp_on_a_fat_tree_permutation() {
    let ecmp = run(&scenario(permutation("ecmp", "20ms", json!({})), json!({})));
    let agent = json!({"adaptive_dupack_threshold": true});
    let random = run(&scenario(permutation("spray-random", "20ms", agent.clone()), json!({})));
    let rr = run(&scenario(permutation("spray-rr", "20ms", agent), json!({})));
    let e = get(&ecmp, "goodput", "aggregate_bps");
    for (name, r) in [("spray-random", &random), ("spray-rr", &rr)] {
        let g = get(r, "goodput", "aggregate_bps");
        assert!(g >= 1.3 * e, "{name}: {:.2}x ECMP's goodput", g / e);
    }
    let (se, sr) = (spread(&ecmp), spread(&random));
    assert!(se > 5.0, "ECMP's lucky and unlucky flows should differ several-fold, got {se:.1}");
    assert!(sr < se / 3.0, "spraying's per-flow spread {sr:.2} should be far tighter than ECMP's {se:.2}");
}

/// Presto's receiver shim (Presto §3.3) hides flowcell reordering from TCP: with the shim on
/// (Presto's default) TCP receivers see far fewer out-of-order segments than with it off. Not
/// zero: a real loss is released at the shim timeout and then shows as a hole.
#[test]
fn presto_shim_delivers_in_order() {
    let base = json!({
        "stop": "10ms",
        "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4},
        "workload": {"kind": "permutation", "bytes": "100MB", "cross_pod": true},
        "transport": {"kind": "dctcp"},
        "switch": {"buffer": "300KB", "ecn_threshold": "97.5KB"},
        "routing": {"scheme": "presto", "flowcell": "16KB"},
    });
    let with = run(&scenario(base.clone(), json!({})));
    let without = run(&scenario(base, json!({"transport": {"kind": "dctcp", "reorder_shim": false}})));
    let ooo = |r: &clos_core::metrics::Report| r.flows.out_of_order.iter().sum::<u64>();
    assert_eq!(with.summary["scenario"]["transport"]["reorder_shim"], json!(true), "Presto turns the shim on by default");
    assert!(ooo(&without) > 100, "the test needs reordering to hide: {}", ooo(&without));
    assert!(ooo(&with) * 20 <= ooo(&without), "shim: {} out-of-order segments vs {} without", ooo(&with), ooo(&without));
}

/// LocalFlow (seed 004, §7): on a permutation it balances load by splitting (within 1.4% of
/// PacketScatter at 1,024 hosts in the paper), while LocalFlow-NS never splits. Here we check
/// the part our model reproduces: LocalFlow beats ECMP and LocalFlow-NS, and NS splits nothing.
/// docs/load-balancers.md records the gap to spraying we measure and its suspected causes.
#[test]
fn localflow_splits_to_balance_and_localflow_ns_never_splits() {
    let agent = json!({"adaptive_dupack_threshold": true});
    let lf = run(&scenario(permutation("localflow", "20ms", agent.clone()), json!({"routing": {"scheme": "localflow", "interval": "1ms"}})));
    let ns = run(&scenario(permutation("localflow-ns", "20ms", agent), json!({"routing": {"scheme": "localflow-ns", "interval": "1ms"}})));
    let ecmp = run(&scenario(permutation("ecmp", "20ms", json!({})), json!({})));
    assert_eq!(ns.summary["load_balancer"]["rules_split"], json!(0));
    assert!(lf.summary["load_balancer"]["rules_split"].as_u64().unwrap() > 0);
    let g = |r| get(r, "goodput", "aggregate_bps");
    assert!(g(&lf) > 1.1 * g(&ecmp), "LocalFlow {:.2}x ECMP", g(&lf) / g(&ecmp));
    assert!(g(&lf) > g(&ns), "LocalFlow {:.3e} vs LocalFlow-NS {:.3e}", g(&lf), g(&ns));
}

fn without_timing(r: &clos_core::metrics::Report) -> String {
    let mut v = r.summary.clone();
    v.as_object_mut().unwrap().remove("stats");
    v.to_string()
}

/// Every scheme runs on every fabric kind, conserves packets (checked inside `run`), and is
/// deterministic: the same seed gives the same summary.
#[test]
fn every_scheme_runs_on_every_fabric_deterministically() {
    let fabrics = [
        json!({"kind": "fat_tree", "k": 4}),
        json!({"kind": "leaf_spine", "leaves": 3, "spines": 2, "hosts_per_leaf": 2, "links_per_pair": 2}),
        json!({"kind": "vl2", "tors": 4, "servers_per_tor": 2, "aggs": 2, "intermediates": 2}),
    ];
    for (scheme, _) in clos_core::lb::Scheme::ALL {
        for topo in &fabrics {
            let mut routing = json!({"scheme": scheme.name()});
            if matches!(scheme.name(), "localflow" | "localflow-ns") {
                routing["interval"] = json!("100us");
            }
            let s = scenario(
                json!({
                    "stop": "2ms",
                    "topology": topo,
                    "workload": {"kind": "shuffle", "bytes": "100KB", "start_jitter": "50us"},
                    "switch": {"buffer": "50KB"},
                    "routing": routing,
                }),
                json!({}),
            );
            let (a, b) = (run(&s), run(&s));
            assert_eq!(without_timing(&a), without_timing(&b), "{} on {topo} is not deterministic", scheme.name());
            assert!(get(&a, "goodput", "delivered_bytes") > 0.0, "{} on {topo} delivered nothing", scheme.name());
        }
    }
}

#[test]
fn scheme_parameters_are_checked_against_the_scheme() {
    let base = json!({"topology": {"kind": "fat_tree", "k": 4}, "workload": {"kind": "permutation", "bytes": "1MB"}});
    let err = |routing: Value| {
        let mut s = base.clone();
        s["routing"] = routing;
        clos_core::scenario::Scenario::from_json(&s.to_string()).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = err(json!({"scheme": "ecmp", "d": 2}));
    assert!(e.contains("routing.d") && e.contains("drill"), "{e}");
    let e = err(json!({"scheme": "localflow", "slack": 2.0}));
    assert!(e.contains("routing.slack"), "{e}");
    let e = err(json!({"scheme": "drill", "engines": 0}));
    assert!(e.contains("routing.engines"), "{e}");
    let e = err(json!({"scheme": "hula"}));
    assert!(e.contains("routing.scheme") && e.contains("drill"), "unknown schemes list the known ones: {e}");
    let ok = clos_core::scenario::Scenario::from_json(
        &json!({"topology": {"kind": "fat_tree", "k": 4}, "workload": {"kind": "permutation", "bytes": "1MB"}, "routing": {"scheme": "drill"}}).to_string(),
    )
    .unwrap();
    assert_eq!((ok.routing.d, ok.routing.m, ok.routing.engines), (Some(2), Some(1), Some(1)), "DRILL(2,1), one engine by default (DRILL §4)");
}

/// DRILL (seed 003, §4, E1): on a leaf-spine (40 G fabric, 10 G hosts) at 80% load with a
/// Facebook web-server workload, DRILL(2,1) has a lower mean FCT than ECMP (1.6x in the paper)
/// and fewer flows see duplicate ACKs than under per-packet Random (8x fewer in the paper).
/// Our margins are much smaller (a few percent; docs/load-balancers.md, "DRILL"), so this test
/// protects the direction of both claims, not their size.
#[test]
fn drill_beats_ecmp_on_fct_and_reorders_less_than_random_spraying() {
    let run_scheme = |scheme: &str| {
        run(&scenario(
            json!({
                "stop": "30ms",
                "topology": {"kind": "leaf_spine", "leaves": 8, "spines": 4, "hosts_per_leaf": 16, "host_rate": "10Gbps", "fabric_rate": "40Gbps"},
                "workload": {"kind": "poisson", "load": 0.8, "cdf": "fb_webserver", "pattern": "cross_rack", "stop": "15ms"},
                "transport": {"kind": "dctcp"},
                "switch": {"buffer": "1MB", "ecn_threshold": "97.5KB"},
                "routing": {"scheme": scheme},
            }),
            json!({}),
        ))
    };
    let (ecmp, random, drill) = (run_scheme("ecmp"), run_scheme("spray-random"), run_scheme("drill"));
    for r in [&ecmp, &random, &drill] {
        assert_eq!(get(r, "flows", "finished"), get(r, "flows", "count"), "every flow should finish");
    }
    let fct = |r| get(r, "flows", "fct_mean_s");
    assert!(fct(&drill) < fct(&ecmp), "DRILL mean FCT {:.3e} vs ECMP {:.3e}", fct(&drill), fct(&ecmp));
    let dup = |r| get(r, "flows", "with_dupacks");
    assert_eq!(dup(&ecmp), 0.0, "ECMP keeps each flow on one path: no reordering, and no loss here");
    assert!(dup(&drill) < dup(&random), "flows with dupACKs: DRILL {} vs Random {}", dup(&drill), dup(&random));
}
