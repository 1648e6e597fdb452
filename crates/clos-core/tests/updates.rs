//! Forwarding-state changes that take time, and consistent updates (issue 38; docs/updates.md):
//! the controller's update strategies on a VL2 fabric whose tor0-agg0 link fails, checked
//! against what each strategy guarantees (Frenetic, seed 004 L5106-L5270) and against the
//! channel's arithmetic (latency + rules / rate).

mod common;
use clos_core::scenario::Scenario;
use common::{run, scenario};
use serde_json::{json, Value};

/// The VL2 testbed (4 ToRs x 20 servers at 1 Gb/s, 3 + 3 switches at 10 Gb/s) under VLB and
/// DCTCP, every server sending 20 MB to another; tor0-agg0 fails at 2 ms and is repaired at
/// 12 ms, each detected 1 ms later. Switches write 10,000 rules/s, so that both two-phase
/// updates end within the 40 ms run.
fn base() -> Value {
    json!({
        "seed": 3, "stop": "40ms",
        "topology": {"kind": "vl2", "preset": "testbed"},
        "switch": {"buffer": "1MB", "ecn_threshold": "30KB"},
        "routing": {"scheme": "vlb"},
        "transport": {"kind": "dctcp"},
        "workload": {"kind": "permutation", "bytes": "20MB"},
        "failures": [{"at": "2ms", "link": ["tor0", "agg0"], "until": "12ms"}],
        "convergence": {"mode": "controller", "detection": "1ms", "rule_rate": 10000}
    })
}

fn update_section(strategy: &str, more: Value) -> Value {
    let mut c = json!({"mode": "controller", "detection": "1ms", "rule_rate": 10000, "update": strategy});
    for (k, v) in more.as_object().unwrap() {
        c[k] = v.clone();
    }
    let r = run(&scenario(base(), json!({ "convergence": c })));
    r.summary["failures"]["update"].clone()
}

fn n(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing: {v}"))
}

/// Per-packet consistency: under two-phase every packet is forwarded by one version (0 mixed,
/// by construction, and measured so), none is left without rules (0 stale); the same failure
/// under unordered updates at 1000 rules/s sends some packets through switches at different
/// versions whose rules for them differ: after the repair, an Intermediate that sends to agg0
/// again while agg0 still sends up (its rule while the link was down) loops the packet. Ordered
/// updates never loop (`control/ordered.rs`).
#[test]
fn two_phase_has_no_mixed_packets_and_unordered_has_some() {
    let two = update_section("two_phase", json!({}));
    assert_eq!((n(&two, "mixed_version_packets"), n(&two, "stale_version_dropped")), (0.0, 0.0), "{two}");
    assert!(two["updates"][1]["old_rules_removed_s"].is_number(), "both updates end in the run: {two}");
    // At 1000 rules/s (seed 004 L1310) the switches' updates end milliseconds apart.
    let un = update_section("unordered", json!({"rule_rate": 1000}));
    assert!(n(&un, "mixed_version_packets") > 0.0, "{un}");
    let ord = update_section("ordered", json!({"rule_rate": 1000}));
    assert_eq!(n(&ord, "looped"), 0.0, "{ord}");
    for s in [&two, &un, &ord] {
        assert!(n(s, "black_holed") > 0.0, "packets go into the failed link until tor0 and agg0 are told: {s}");
    }
}

/// The channel's arithmetic on a whole run: under unordered updates the last switch is done
/// `latency + its rules / rate` after detection (no switch has an earlier message queued): 2.5
/// ms + 6 rules / 10,000 per s = 3.1 ms here. Ordered adds a round trip per extra round.
#[test]
fn update_time_is_latency_plus_rules_over_rate() {
    let un = update_section("unordered", json!({}));
    let u = &un["updates"][0];
    let most = n(u, "most_rules_one_switch");
    // agg0 rewrites its entry toward tor0 (now 3 hops: through tor3 or an Intermediate) and the
    // one toward tor2 (one way fewer: through tor0), adds those 2 groups and drops the 2 old.
    assert_eq!((most, u["busiest_switch"].as_str().unwrap()), (6.0, "agg0"), "{u}");
    assert!((n(u, "time_to_complete_s") - (2.5e-3 + most / 10_000.0)).abs() < 1e-12, "{u}");
    assert_eq!(n(u, "time_to_complete_s"), n(u, "time_to_remove_old_s"));
}

/// Two-phase holds both versions at once: the peak is the old version's rules plus the new
/// one's (Frenetic L5188-L5196), where in-place updates add at most the groups a switch adds.
#[test]
fn two_phase_peak_rule_space_is_old_plus_new() {
    let two = update_section("two_phase", json!({}));
    // The ToRs' stamping rules (one per server port, 80) are held throughout, in both versions.
    let stamps = 80.0;
    let start = n(&two, "rules_at_start_total");
    let u = &two["updates"][0];
    let (old, new) = (n(u, "rules_old_version"), n(u, "rules_new_version"));
    assert_eq!(start, old + stamps);
    assert_eq!(n(&two, "peak_rules_total"), old + new + stamps, "{two}");
    // The repair brings the first version back, and the end holds it alone.
    assert_eq!(n(&two, "rules_at_end_total"), start, "{two}");
    let un = update_section("unordered", json!({}));
    assert!(n(&un, "peak_rules_total") <= n(&un, "rules_at_start_total") + 10.0, "{un}");
    assert_eq!(n(&un, "rules_at_start_total") + stamps, start);
}

/// A table too small for two versions: every switch refuses the two-phase staging (reported,
/// never silently ignored), the flip never happens, and routing never converges.
#[test]
fn a_table_too_small_for_two_versions_is_reported_and_the_update_never_flips() {
    let two = update_section("two_phase", json!({"table_size": 60}));
    let overflows = two["table_overflows"].as_array().unwrap();
    assert!(!overflows.is_empty(), "{two}");
    assert!(overflows.iter().all(|o| o["needed"].as_u64().unwrap() > 60), "{two}");
    assert!(n(&two["updates"][0], "refused_switches") > 0.0);
    assert!(two["updates"][0]["completed_s"].is_null(), "{two}");
}

/// Starting routes that do not fit, and controller fields without controller mode, are errors
/// that name the field.
#[test]
fn input_errors_name_the_field() {
    let err = |c: Value| {
        let mut s = base();
        s["convergence"] = c;
        match Scenario::from_json(&s.to_string()) {
            Ok(s) => clos_core::run(&s).err().map(|e| e.to_string()).unwrap_or_default(),
            Err(e) => e.to_string(),
        }
    };
    let e = err(json!({"mode": "controller", "table_size": 20}));
    assert!(e.starts_with("convergence.table_size") && e.contains("tor0 needs 27 rules"), "{e}");
    let e = err(json!({"update": "two_phase"}));
    assert!(e.starts_with("convergence.update") && e.contains("mode = \"controller\""), "{e}");
    let e = err(json!({"mode": "controller", "install": "1ms"}));
    assert!(e.starts_with("convergence.install"), "{e}");
    let e = err(json!({"mode": "controller", "drain": "1ms"}));
    assert!(e.starts_with("convergence.drain") && e.contains("two_phase"), "{e}");
    let e = err(json!({"mode": "controller", "rule_rate": 0}));
    assert!(e.starts_with("convergence.rule_rate"), "{e}");
    let e = err(json!({"mode": "controller", "update": "per_packet"}));
    assert!(e.contains("update") && e.contains("two_phase"), "{e}");
    let e = err(json!({"mode": "controller", "flow_timeout": "1ms"}));
    assert!(e.starts_with("convergence.flow_timeout") && e.contains("per_flow"), "{e}");
    let e = err(json!({"mode": "controller", "update": "per_flow", "flow_timeout": "0s"}));
    assert!(e.starts_with("convergence.flow_timeout") && e.contains("at least"), "{e}");
}

/// Per-flow consistency (Frenetic L5226-L5270): a flow keeps the version it started on until it
/// has been idle for `flow_timeout`, so no flow's packets see two versions while it lasts, where
/// a two-phase update moves every long flow over mid-flow (per-packet consistency only). The
/// 20 MB flows outlast the 40 ms run (at least 160 ms at 1 Gb/s), so flows stay on the old
/// version and its rules never expire: the seed's "they may never die" (L5253-L5256).
#[test]
fn per_flow_keeps_each_flow_on_one_version() {
    let pf = update_section("per_flow", json!({"flow_timeout": "2ms"}));
    assert_eq!((n(&pf, "mixed_version_packets"), n(&pf, "stale_version_dropped")), (0.0, 0.0), "{pf}");
    assert_eq!(n(&pf, "flows_switched_version"), 0.0, "{pf}");
    assert!(n(&pf, "flows_kept_on_old_version") > 0.0, "{pf}");
    assert!(pf["updates"][0]["old_rules_removed_s"].is_null(), "long flows keep the old rules: {pf}");
    let two = update_section("two_phase", json!({}));
    assert!(n(&two, "flows_switched_version") > 0.0, "two-phase moves live flows: {two}");
}

/// Once every flow on the old version is over, its rules go: the last old-stamped packet's rule
/// times out `flow_timeout` later, the controller hears one way later and sends the removal,
/// which arrives one way later and takes the old rules / rate. With 1 MB flows (8 ms at 1 Gb/s)
/// that finish within the 60 ms run, both updates end, and the removal comes at least `flow_timeout`
/// + `latency` + 27 rules (a ToR's old routing rules) / 10,000 per s after the last flip.
#[test]
fn per_flow_removes_the_old_rules_once_the_old_flows_are_over() {
    let mut base = base();
    base["workload"]["bytes"] = json!("1MB");
    base["stop"] = json!("60ms");
    let c = json!({"mode": "controller", "detection": "1ms", "rule_rate": 10000, "update": "per_flow", "flow_timeout": "2ms"});
    let r = run(&scenario(base, json!({ "convergence": c })));
    let pf = &r.summary["failures"]["update"];
    assert_eq!((n(pf, "mixed_version_packets"), n(pf, "flows_switched_version")), (0.0, 0.0), "{pf}");
    for u in pf["updates"].as_array().unwrap() {
        let (done, removed) = (n(u, "completed_s"), n(u, "old_rules_removed_s"));
        assert!(removed >= done + 2e-3 + 2.5e-3 + 27.0 / 10_000.0 - 1e-12, "{u}");
    }
    assert_eq!(pf["updates"].as_array().unwrap().len(), 2, "{pf}");
}
