//! Traffic classes at switch ports (docs/model.md, "Traffic classes"): strict priority and DWRR
//! share a congested port as their definitions say, and one class is the FIFO port it replaces.
//! Each test says where its bar comes from.

mod common;
use clos_core::metrics::Report;
use common::{flow_file, run, scenario};
use serde_json::{json, Value};

/// Header-limited goodput of a 10 Gb/s port: 1,460 B of payload in 1,538 B frames.
const LINE_GBPS: f64 = 10.0 * 1460.0 / 1538.0;

/// Two long flows, from hosts 0 and 1, into host 2 on one switch, in classes 0 and 1 (two
/// workload parts), for 20 ms, with `switch` as the `[switch]` table.
fn two_classes(name: &str, switch: Value) -> Report {
    let part = |src: u32, class: u32| json!({"kind": "flows", "file": flow_file(&format!("{name}-{src}.csv"), [(src, 2, "1GB", 0)]), "class": class});
    let base = json!({
        "seed": 1,
        "stop": "20ms",
        "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 3, "host_rate": "10Gbps", "fabric_rate": "10Gbps"},
        "switch": {"buffer": "300KB", "ecn_threshold": "100KB"},
        "transport": {"kind": "dctcp"},
        "workload": {"kind": "services", "services": [part(0, 0), part(1, 1)]},
    });
    run(&scenario(base, json!({ "switch": switch })))
}

fn gbps(r: &Report, flow: usize) -> f64 {
    r.flows.delivered[flow] as f64 * 8.0 / 0.02 / 1e9
}

/// DWRR with weights 1 and 3: while both classes have packets waiting, class 1 gets three
/// quarters of the port (Shreedhar and Varghese: within one quantum per round of the weights'
/// shares, which over 20 ms of 1.2 us packets is nothing). DCTCP keeps each class queue near its
/// marking threshold, so both stay backlogged: the ratio within 10% of 3 (TCP's start), the port
/// within 5% of full.
#[test]
fn dwrr_shares_a_port_by_weight() {
    let r = two_classes("dwrr", json!({"classes": [{"weight": 1}, {"weight": 3}]}));
    let (a, b) = (gbps(&r, 0), gbps(&r, 1));
    assert!((b / a - 3.0).abs() < 0.3, "weights 1:3 gave {a:.2} and {b:.2} Gb/s");
    assert!(a + b > 0.95 * LINE_GBPS, "work-conserving: {:.2} Gb/s of {LINE_GBPS:.2}", a + b);
}

/// Strict priority: the class at priority 0 fills the port (within 5% of line rate) and the
/// other gets what it leaves, which for a long TCP flow that never pauses is almost nothing.
#[test]
fn strict_priority_serves_the_high_class_first() {
    let r = two_classes("strict", json!({"classes": [{"priority": 1}, {"priority": 0}]}));
    let (low, high) = (gbps(&r, 0), gbps(&r, 1));
    assert!(high > 0.95 * LINE_GBPS, "the high class got {high:.2} Gb/s");
    assert!(low < 0.05 * LINE_GBPS, "the low class got {low:.2} Gb/s");
}

/// One class is the FIFO port: the same packets leave at the same times. Three DCTCP flows
/// into one port of one switch deliver the same bytes with the same marks, drops and queueing
/// through one class queue as through the FIFO shortcut (which knows each departure at
/// enqueue). On a multi-hop fabric the two agree in total but not packet for packet: where two
/// packets reach a switch at the same picosecond from different ports, the calendar runs them
/// in the order their arrivals were scheduled (`event.rs`), which is at enqueue on a FIFO port
/// and when the packet starts on a scheduled one; the order they join their next queue in
/// then differs. So the k=4 fat tree is held to its total, within 1%.
#[test]
fn one_class_is_the_fifo_port() {
    let flows = flow_file("fifo.csv", [(0u32, 3u32, "1GB", 0), (1, 3, "1GB", 0), (2, 3, "1GB", 0)]);
    let one_switch = json!({
        "seed": 3,
        "stop": "5ms",
        "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 4, "host_rate": "10Gbps", "fabric_rate": "10Gbps"},
        "switch": {"buffer": "100KB", "ecn_threshold": "30KB"},
        "transport": {"kind": "dctcp"},
        "workload": {"kind": "flows", "file": flows},
    });
    let fifo = run(&scenario(one_switch.clone(), json!({})));
    let classes = run(&scenario(one_switch, json!({"switch": {"classes": [{}]}})));
    assert!(fifo.links.ecn_marks.iter().sum::<u64>() > 0, "the queue reaches the threshold");
    assert_eq!(fifo.flows.delivered, classes.flows.delivered);
    assert_eq!((&fifo.links.bytes, &fifo.links.ecn_marks, &fifo.links.drops), (&classes.links.bytes, &classes.links.ecn_marks, &classes.links.drops));
    // Queueing is known at enqueue on a FIFO port and when the packet starts on a scheduled
    // one, so the packets still waiting when the run stops count only on the FIFO: equal
    // within the last of them (a 100 KB buffer's 65 packets of at most 80 us each).
    for (a, b) in fifo.links.queueing_ps.iter().zip(&classes.links.queueing_ps) {
        assert!(b <= a && (a - b) as f64 <= 65.0 * 80e6, "queueing {b} ps through classes against {a} ps");
    }

    let fat_tree = json!({
        "seed": 3,
        "stop": "3ms",
        "topology": {"kind": "fat_tree", "k": 4, "host_rate": "10Gbps", "fabric_rate": "10Gbps"},
        "switch": {"buffer": "100KB", "ecn_threshold": "30KB"},
        "transport": {"kind": "dctcp"},
        "workload": {"kind": "permutation", "bytes": "1GB", "cross_pod": true},
    });
    let total = |r: &Report| r.flows.delivered.iter().sum::<u64>() as f64;
    let (fifo, classes) = (run(&scenario(fat_tree.clone(), json!({}))), run(&scenario(fat_tree, json!({"switch": {"classes": [{}]}}))));
    assert!((total(&classes) / total(&fifo) - 1.0).abs() < 0.01, "{} against {} B", total(&classes), total(&fifo));
}
