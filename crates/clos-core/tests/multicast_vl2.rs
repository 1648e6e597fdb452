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

#[test]
fn what_vl2_multicast_does_not_build_is_an_error_naming_the_field() {
    let err = |json: &str| Scenario::from_json(json).err().map(|e| e.to_string()).unwrap_or_default();
    let e = err(&scenario("[1, 2, 4]", r#", "aggregate": "edge""#));
    assert!(e.starts_with("multicast.aggregate: meta-groups are built for fat trees only"), "{e}");
}
