//! Packet-level multicast on VL2 (issue 36; Li & Freedman §2.3, §3.1 on VL2's fabric,
//! `multicast/vl2.rs`): replicas per link, deliveries, latency and table entries, worked by hand.

use clos_core::scenario::Scenario;
use clos_core::sim::World;
use clos_core::units::PS_PER_MS;

/// VL2 with 4 ToRs of 2 servers, 3 aggregation and 2 intermediate switches, everything at
/// 10 Gb/s with 1 us links; host 0 sends 100 datagrams of 1,460 bytes at 1 Gb/s to `members`.
fn scenario(members: &str, extra: &str) -> String {
    format!(
        r#"{{"topology": {{"kind": "vl2", "tors": 4, "servers_per_tor": 2, "aggs": 3, "intermediates": 2,
                "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"}},
            "multicast": {{"groups": [{{"name": "g", "members": {members}}}]{extra}}},
            "workload": {{"kind": "multicast", "group": "g", "hosts": [0], "bytes": 146000, "rate": "1Gbps"}}}}"#
    )
}

/// Members 1 (tor0), 2 (tor1), 4 (tor2). By hand (`vl2.rs`'s test): the set cover serves tor0
/// and tor1 from agg0, tor2 from agg1; group 0 is partition 0 on int0 (n = 2, r = 1). Each
/// datagram crosses h0 -> tor0, tor0 -> h1, tor0 -> agg0, agg0 -> tor1, tor1 -> h2, agg0 ->
/// int0, int0 -> agg1, agg1 -> tor2, tor2 -> h4: nine links, one copy each, 100 on each and
/// nothing anywhere else; tor0 and agg0 each make one copy beyond the one that came in, 200
/// replicas, 300 deliveries. Without queueing (1 Gb/s on 10 Gb/s links) a 1,538-byte frame
/// takes 1,230.4 ns a hop plus 1 us: 2 hops to h1 (4.4608 us), 4 to h2 (8.9216 us), 6 to h4
/// (13.3824 us), exactly.
#[test]
fn replicas_per_link_deliveries_and_latency_by_hand() {
    let mut w = World::new(&Scenario::from_json(&scenario("[1, 2, 4]", "")).unwrap()).unwrap();
    w.run();
    w.check_conservation().unwrap();
    let m = w.mcast.as_ref().unwrap();
    let c = &m.counters;
    assert_eq!((c.sent, c.replicas, c.delivered, c.dropped, m.in_flight()), (100, 200, 300, 0, 0));
    let hop = 1_230_400 + 1_000_000;
    for (r, hops) in m.delivery.groups[0].receivers.iter().zip([2, 4, 6]) {
        assert_eq!(r.total(), 100, "host {}", r.host);
        assert_eq!((r.latency_min(), r.latency_max()), (Some(hops * hop), hops * hop), "host {}", r.host);
    }
    let tree = [
        ("h0", "tor0"),
        ("tor0", "h1"),
        ("tor0", "agg0"),
        ("agg0", "tor1"),
        ("tor1", "h2"),
        ("agg0", "int0"),
        ("int0", "agg1"),
        ("agg1", "tor2"),
        ("tor2", "h4"),
    ];
    let topo = &w.topo;
    for p in 0..topo.ports.len() as u32 {
        let (from, to) = (&topo.nodes[topo.ports[p as usize].from as usize].name, &topo.nodes[topo.ports[p as usize].to as usize].name);
        let want = if tree.contains(&(from.as_str(), to.as_str())) { 100 } else { 0 };
        assert_eq!(w.ports.accepted(p).packets, want, "{from} -> {to}");
    }
    let s = w.multicast_summary().unwrap();
    assert_eq!(s["tables"]["edge"]["max"], 1);
    assert_eq!((s["tables"]["aggr"]["mean"].as_f64(), s["tables"]["core"]["mean"].as_f64()), (Some(2.0 / 3.0), Some(0.5)));
    assert_eq!(s["groups"][0]["aggs"], serde_json::json!({"agg0": ["tor0", "tor1"], "agg1": ["tor2"]}));
    assert_eq!(s["partitions"], 2);
}

/// Per-packet spreading over a partition's r = 2 intermediates (n = 1): both carry copies
/// down, and every member still gets every datagram once.
#[test]
fn spreading_over_the_replica_intermediates() {
    let extra = r#", "partitions": 1, "cores_per_partition": 2, "spread": "packet""#;
    let mut w = World::new(&Scenario::from_json(&scenario("[1, 2, 4]", extra)).unwrap()).unwrap();
    w.run();
    w.check_conservation().unwrap();
    let m = w.mcast.as_ref().unwrap();
    assert!(m.delivery.groups[0].receivers.iter().all(|r| r.total() == 100));
    let topo = &w.topo;
    let agg1 = topo.node_named("agg1").unwrap();
    let down = |int: &str| w.ports.accepted(topo.ports_of(topo.node_named(int).unwrap()).find(|&p| topo.ports[p as usize].to == agg1).unwrap()).packets;
    let (a, b) = (down("int0"), down("int1"));
    eprintln!("int0 {a}, int1 {b} copies down to agg1");
    // 100 datagrams, each to int0 or int1 by a hash: binomial(100, 1/2), both well used.
    assert_eq!(a + b, 100);
    assert!((25..=75).contains(&a), "{a} / {b}");
}

/// Host 0 sends 1 Gb/s to members 1 (tor0), 2 (tor1), 4 (tor2) for 3 ms; the link between
/// `a` and `b` fails at 0.5 ms and the controller rebuilds at 1.5 ms (detection 0.5 ms, install
/// 0.5 ms).
fn failover(a: &str, b: &str) -> World {
    let s = scenario("[1, 2, 4]", "").replace(r#""bytes": 146000"#, r#""bytes": "10MB""#).replace(
        r#""workload""#,
        &format!(
            r#""stop": "3ms", "failures": [{{"at": "500us", "action": "down", "link": ["{a}", "{b}"]}}],
                    "convergence": {{"detection": "500us", "install": "500us"}}, "workload""#
        ),
    );
    let mut w = World::new(&Scenario::from_json(&s).unwrap()).unwrap();
    w.run();
    w.check_conservation().unwrap();
    w
}

const HOP: u64 = 1_230_400 + 1_000_000;

/// Every receiver, in the detour period and after the rebuild, gets every datagram sent in it
/// but the one on the failed link as it failed and those still on their way at 3 ms (two at
/// most); every detour is `hops` long, one per datagram sent in the detour period (give or take
/// the copies caught on the way as it began and ended), and the group is repaired.
fn recovers(w: &World, hops: usize) {
    let m = w.mcast.as_ref().unwrap();
    let c = &m.counters;
    assert_eq!(m.delivery.began[1], Some(PS_PER_MS / 2));
    assert_eq!(m.delivery.began[2], Some(3 * PS_PER_MS / 2), "rebuilt: every group repaired");
    assert_eq!((c.rebuilds, c.moved, c.unrepaired, c.unreachable), (1, 1, 0, 0));
    let d = &m.delivery.groups[0];
    for r in &d.receivers {
        for period in [1, 2] {
            let expected = d.expected(r.host, Some(period));
            // 1 ms at 1 Gb/s of 1,538-byte frames: 81 datagrams; 1.5 ms: 122.
            assert!(expected >= 80 && r.received[period] + 2 >= expected, "host {} period {period}: {} of {expected}", r.host, r.received[period]);
        }
    }
    assert_eq!(c.detour_hops.iter().enumerate().filter(|&(h, &n)| n > 0 && h != hops).count(), 0, "{:?}", c.detour_hops);
    let during = d.expected(0, Some(1)).max(d.expected(1, Some(1)));
    assert!(c.detours + 2 >= during && c.detours <= during + 2, "{} detours for {during} datagrams", c.detours);
}

/// agg0 - tor1 fails (`vl2_failover.rs`'s test by hand): agg0 sends tor1's copy tagged with
/// tor1 through tor1's other aggregation switch, agg0 -> int0 -> agg2 -> tor1 (3 hops); the
/// rebuilt cover serves tor0 and tor2 from agg1 and tor1 from agg2, through int0. Latency, with
/// no queueing but where stated, in hops of 2.2304 us: host 1 always 2 (4.4608 us); host 2 4
/// before the failure, 6 on the detour (h0, tor0, agg0, int0, agg2, tor1, h2) and 6 after the
/// rebuild (tor0, agg1, int0, agg2, tor1): 8.9216 to 13.3824 us; host 4 6 before the failure,
/// and during it one frame more (agg0 sends the detoured copy to int0 first, the tree's copy
/// waits 1,230.4 ns behind it): 14.6128 us, then 4 after the rebuild (tor0, agg1, tor2):
/// 8.9216 us. Only host 2 receives detoured copies.
#[test]
fn a_tor_link_failure_is_detoured_through_the_other_aggregation_switch_then_rebuilt() {
    let w = failover("agg0", "tor1");
    recovers(&w, 3);
    let m = w.mcast.as_ref().unwrap();
    let r = &m.delivery.groups[0].receivers;
    assert_eq!((r[0].latency_min(), r[0].latency_max()), (Some(2 * HOP), 2 * HOP));
    assert_eq!((r[1].latency_min(), r[1].latency_max()), (Some(4 * HOP), 6 * HOP));
    assert_eq!((r[2].latency_min(), r[2].latency_max()), (Some(4 * HOP), 6 * HOP + 1_230_400));
    assert_eq!((r[0].detoured, r[2].detoured), (0, 0));
    assert!(r[1].detoured + 1 >= r[1].received[1] && r[1].detoured <= r[1].received[1] + 2, "{} detoured", r[1].detoured);
    let s = w.multicast_summary().unwrap();
    assert_eq!(s["groups"][0]["aggs"], serde_json::json!({"agg1": ["tor0", "tor2"], "agg2": ["tor1"]}));
}

/// int0 - agg1 fails: int0 sends agg1's copy tagged with agg1 through another aggregation
/// switch and the other intermediate, int0 -> agg0 -> int1 -> agg1 (3 hops); the rebuild keeps
/// the cover and moves the group to int1. Host 4's latency: 6 hops before, 8 on the detour
/// (17.8432 us, no link shared with another copy), 6 after (through int1); hosts 1 and 2 never
/// touch the failed link.
#[test]
fn an_intermediate_link_failure_is_detoured_through_the_other_intermediate_then_rebuilt() {
    let w = failover("int0", "agg1");
    recovers(&w, 3);
    let m = w.mcast.as_ref().unwrap();
    let r = &m.delivery.groups[0].receivers;
    assert_eq!((r[1].latency_min(), r[1].latency_max()), (Some(4 * HOP), 4 * HOP));
    assert_eq!((r[2].latency_min(), r[2].latency_max()), (Some(6 * HOP), 8 * HOP));
    assert_eq!((r[0].detoured, r[1].detoured), (0, 0));
    assert_eq!(m.fabric.groups()[0].root, Some(clos_core::multicast::fabric::Root::Core(1)));
}

/// The 4-ToR fabric above with `groups` (name, members, sender), each sender sending
/// `datagrams` datagrams at 1 Gb/s (no queueing that loses anything), `multicast` the table's
/// other fields and `extra` top-level fields (each starting with a comma).
fn aggregated(multicast: &str, groups: &[(&str, &str, u32)], datagrams: u64, extra: &str) -> (World, serde_json::Value) {
    let defs: Vec<String> = groups.iter().map(|(n, m, _)| format!(r#"{{"name": "{n}", "members": {m}}}"#)).collect();
    let parts: Vec<String> = groups
        .iter()
        .map(|(n, _, s)| format!(r#"{{"kind": "multicast", "group": "{n}", "hosts": [{s}], "bytes": {}, "rate": "1Gbps"}}"#, datagrams * 1460))
        .collect();
    let s = Scenario::from_json(&format!(
        r#"{{"topology": {{"kind": "vl2", "tors": 4, "servers_per_tor": 2, "aggs": 3, "intermediates": 2,
                "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"}},
            "multicast": {{{multicast}, "groups": [{}]}},
            "workload": {{"kind": "services", "services": [{}]}}{extra}}}"#,
        defs.join(", "),
        parts.join(", ")
    ))
    .unwrap();
    let mut w = World::new(&s).unwrap();
    w.run();
    w.check_conservation().unwrap();
    let summary = w.multicast_summary().unwrap();
    (w, summary)
}

/// (group, members' (expected, received)) for every group.
fn receipts(s: &serde_json::Value) -> Vec<(u64, u64)> {
    s["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["receivers"].as_array().unwrap().iter().map(|r| (r["expected"].as_u64().unwrap(), r["received"].as_u64().unwrap())))
        .collect()
}

/// Five groups sent from tor3 (hosts 6, 7), all within tor0, tor1 and tor3, which agg0 alone
/// reaches (tor0 on agg0, agg1; tor1 on agg2, agg0; tor3 on agg0, agg1): each group's greedy
/// cover is agg0 (lowest index among the switches covering all its ToRs), so agg0 holds five
/// entries; its ports are tor0, tor1, tor3 (0, 1, 2).
const AGG0_GROUPS: [(&str, &str, u32); 5] = [("a", "[0]", 6), ("b", "[2]", 6), ("c", "[2, 7]", 6), ("d", "[1]", 7), ("e", "[1, 2, 7]", 6)];

/// Aggregation-layer meta-groups on VL2, by hand. C = 4 = |P| + 1 (no meta-group beyond the
/// reserved ones), Δ = 0. Algorithm 2 at agg0 over its downstream ports (ToRs with members):
/// a {tor0} → m_0, b {tor1} → m_1, c {tor1, tor3} (two of three ports, no free meta-group) →
/// m_3, the all-ports one, d {tor0} → m_0, e {tor0, tor1, tor3} → m_3: 5 entries become 3.
/// agg0 sends each copy out of its meta-group's ports but the sender's ToR (tor3), so the only
/// copy nobody asked for is c's to tor0 (no member of c), which tor0 discards: 50 extra against
/// the wanted a 1, b 1, c 1 (tor1), d 1, e 2 (tor0, tor1) a datagram, 300: 1/6. Algorithm 2's
/// prediction counts the port to tor3 too (c and e want it), (9 − 8) / 8 = 1/8: the shared tree
/// never sends a copy back down to its sender's ToR. Every copy of the five groups through agg0
/// is rewritten above it (250) and restored below it (a, b, d 50 each, c and e 100: 350).
/// Every member still receives its 50 datagrams. tor3 (the senders' ToR) holds five entries of
/// senders (and of members 7) and overflows C = 4, which is reported, not aggregated.
#[test]
fn aggregation_layer_meta_groups_by_hand() {
    let (w, s) = aggregated(r#""capacity": 4, "aggregate": "aggr""#, &AGG0_GROUPS, 50, "");
    for g in 0..5 {
        assert_eq!(
            s["groups"][g]["aggs"],
            serde_json::json!({"agg0": if g == 0 || g == 3 { vec!["tor0", "tor3"] } else if g == 4 { vec!["tor0", "tor1", "tor3"] } else { vec!["tor1", "tor3"] }}),
            "group {g}"
        );
    }
    let a = &s["aggregation"];
    assert_eq!(a["layer"], "aggr");
    let sw = a["switches"].as_array().unwrap();
    assert_eq!(sw.len(), 1);
    assert_eq!((sw[0]["switch"].as_str(), sw[0]["entries_before"].as_u64(), sw[0]["entries_after"].as_u64()), (Some("agg0"), Some(5), Some(3)));
    assert_eq!(
        sw[0]["meta_groups"],
        serde_json::json!([{"meta": 0, "ports": 1, "groups": ["a", "d"]}, {"meta": 1, "ports": 2, "groups": ["b"]}, {"meta": 3, "ports": 7, "groups": ["c", "e"]}])
    );
    assert_eq!((a["copies"]["needed"].as_u64(), a["copies"]["extra"].as_u64()), (Some(300), Some(50)));
    assert_eq!(a["copies"]["overhead"].as_f64(), Some(50.0 / 300.0));
    assert_eq!(a["predicted_overhead"].as_f64(), Some(1.0 / 8.0));
    assert_eq!(a["copies"]["discarded_by_node"], serde_json::json!({"tor0": 50}));
    assert_eq!((a["rewritten"].as_u64(), a["restored"].as_u64()), (Some(250), Some(350)));
    assert_eq!(a["recomputed"], serde_json::json!({"runs": 0, "switches_changed": []}));
    assert_eq!(s["packets"]["discarded"], 50);
    assert_eq!(s["tables"]["edge"]["max"], 5);
    assert!(receipts(&s).iter().all(|&(e, r)| e == 50 && r == 50), "{:?}", receipts(&s));
    let m = w.mcast.as_ref().unwrap();
    assert_eq!((m.counters.dropped, m.in_flight()), (0, 0));
}

/// Edge meta-groups on VL2 (the ToR's ports are its servers, which restore the address and
/// discard what they did not join), by hand: C = 3, Δ = 1, four groups on tor0 (hosts 0, 1)
/// sent from host 6 (tor3), their other member host 2 (tor1): a {0, 2}, b {1, 2}, c {0, 1},
/// d {0, 2}. tor0 holds 4 > 3 entries, each group on at least |P| − Δ = 1 of its 2 ports, so
/// all four share m_2 (1 entry): every datagram of a and d also reaches host 1, every one of b
/// host 0, 150 extra copies against the wanted tor0 5 and tor1 3 a round, 400: 0.375, and
/// Algorithm 2 predicts the same, (8 + 3 − 8) / 8 (tor0 carries 4 λ on each port against
/// 5 λ wanted; tor1 is not aggregated). The switch above tor0 that rewrites is agg0, the one
/// each group's cover took.
#[test]
fn edge_meta_groups_at_the_tors_by_hand() {
    let groups = [("a", "[0, 2]", 6), ("b", "[1, 2]", 6), ("c", "[0, 1]", 6), ("d", "[0, 2]", 6)];
    let (w, s) = aggregated(r#""capacity": 3, "aggregate": "edge", "delta_ports": 1"#, &groups, 50, "");
    let a = &s["aggregation"];
    let sw = a["switches"].as_array().unwrap();
    assert_eq!(sw.len(), 1, "{sw:?}");
    assert_eq!((sw[0]["switch"].as_str(), sw[0]["entries_before"].as_u64(), sw[0]["entries_after"].as_u64()), (Some("tor0"), Some(4), Some(1)));
    assert_eq!(sw[0]["meta_groups"], serde_json::json!([{"meta": 2, "ports": 3, "groups": ["a", "b", "c", "d"]}]));
    assert_eq!((a["copies"]["needed"].as_u64(), a["copies"]["extra"].as_u64()), (Some(400), Some(150)));
    assert_eq!((a["copies"]["overhead"].as_f64(), a["predicted_overhead"].as_f64()), (Some(0.375), Some(0.375)));
    assert_eq!(a["copies"]["discarded_by_node"], serde_json::json!({"h0": 50, "h1": 100}));
    assert!(receipts(&s).iter().all(|&(e, r)| e == 50 && r == 50), "{:?}", receipts(&s));
    let m = w.mcast.as_ref().unwrap();
    assert_eq!((m.counters.sent, m.counters.delivered, m.counters.discarded, m.counters.dropped), (200, 550, 150, 0));
}

/// §3.2.2's tracking: the aggregation-layer case above, with agg0 - tor1 failing at 0.5 ms and
/// the rebuild at 1.5 ms (the senders send through the 3 ms run). The rebuilt covers of
/// b, c and e (the groups with tor1) take agg0 for tor3 (and tor0) and agg2 for tor1, through
/// their partition's intermediate; a and d stay. Algorithm 2 again at agg0: a {tor0} → m_0,
/// b (senders only there now, no ports), c {tor3} → m_2, d {tor0} → m_0, e {tor0, tor3} → m_3:
/// 5 entries, 3 after; agg2 holds b, c, e (3 ≤ C) unaggregated. So agg0's meta-groups change,
/// and the summary names it. Before the failure and after the rebuild, members get every
/// datagram but those on their way as the link failed and at 3 ms; during the detour period
/// agg0's copies for tor1 detour (3 hops) and arrive.
#[test]
fn a_rebuild_that_moves_groups_recomputes_the_meta_groups() {
    let extra = r#", "stop": "3ms", "failures": [{"at": "500us", "action": "down", "link": ["agg0", "tor1"]}],
                   "convergence": {"detection": "500us", "install": "500us"}"#;
    let (w, s) = aggregated(r#""capacity": 4, "aggregate": "aggr""#, &AGG0_GROUPS, 10_000, extra);
    let a = &s["aggregation"];
    assert_eq!(a["recomputed"], serde_json::json!({"runs": 1, "switches_changed": ["agg0"]}));
    assert_eq!(s["groups"][2]["aggs"], serde_json::json!({"agg0": ["tor3"], "agg2": ["tor1"]}));
    let sw = a["switches"].as_array().unwrap();
    assert_eq!(sw.len(), 1);
    assert_eq!(
        sw[0]["meta_groups"],
        serde_json::json!([{"meta": 0, "ports": 1, "groups": ["a", "d"]}, {"meta": 2, "ports": 4, "groups": ["c"]}, {"meta": 3, "ports": 7, "groups": ["e"]}])
    );
    assert_eq!((sw[0]["entries_before"].as_u64(), sw[0]["entries_after"].as_u64()), (Some(5), Some(3)));
    let m = w.mcast.as_ref().unwrap();
    assert_eq!((m.counters.rebuilds, m.counters.moved, m.counters.unrepaired), (1, 3, 0));
    assert!(m.counters.detours > 0 && m.counters.detour_hops.iter().enumerate().all(|(h, &n)| n == 0 || h == 3), "{:?}", m.counters.detour_hops);
    for (g, d) in m.delivery.groups.iter().enumerate() {
        for r in &d.receivers {
            for period in [0, 1, 2] {
                let expected = d.expected(r.host, Some(period));
                assert!(r.received[period] + 2 >= expected, "group {g} host {} period {period}: {} of {expected}", r.host, r.received[period]);
            }
        }
    }
}

/// Meta-groups need room for Algorithm 2's |P| + 1 reserved meta-groups at every switch of the
/// layer (a rebuild may move groups onto any of them): on VL2 with 2 servers per ToR, C = 2 is
/// an error naming the field.
#[test]
fn a_capacity_below_the_reserved_meta_groups_is_an_error_naming_it() {
    let s = Scenario::from_json(&scenario("[1, 2, 4]", r#", "capacity": 2, "aggregate": "edge""#)).unwrap();
    let e = World::new(&s).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.starts_with("multicast.capacity: capacity 2 is below the |P| + 1 = 3"), "{e}");
}
