//! Packet-level multicast on the AB (F10) fat tree, the 5-hop detour and the set-cover
//! reconstruction (issue 36; Li & Freedman §3.1.1, §3.3). Every expected value is worked by hand
//! in the test's comment from the wiring (`topology/ab_wiring.rs`) and Algorithm 1.

use clos_core::multicast::fabric::{Datagram, McFabric, Mode, Root};
use clos_core::multicast::spec::MulticastSpec;
use clos_core::scenario::Scenario;
use clos_core::sim::World;
use clos_core::topology::ab_wiring::Wiring;
use clos_core::topology::fat_tree::{describe_wired, FatTree};
use clos_core::topology::Topology;
use clos_core::units::{Rate, PS_PER_MS};

fn k4(wiring: Wiring) -> Topology {
    describe_wired(&FatTree { k: 4, remove_cores: 0 }, wiring, Rate(1), Rate(1), 0).unwrap().build()
}

/// The names of the nodes switch `node` sends copies to (`detour` for a detour).
fn copies(topo: &Topology, f: &McFabric, group: usize, node: &str, mode: Mode, up: &dyn Fn(u32) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    f.replicate(Datagram { group, src: 0, choice: 0 }, topo.node_named(node).unwrap(), mode, up, &mut out);
    out.iter().map(|o| o.name(topo)).collect()
}

/// k = 4 AB, n = 4 partitions of one core each (Algorithm 1: N_p = 2·4·1/4 = 2; pod 0's agg0
/// takes partitions 0, 1 on cores 0, 1 and agg1 takes 2, 3 on cores 2, 3; type-B pod 1's agg2
/// reaches cores 0, 2 and holds {0, 2}, agg3 reaches cores 1, 3 and holds {1, 3}).
/// Groups "a" (partition 0, core 0) and "b" (partition 1, core 1), both sent by host 0 to hosts
/// 1, 5, 7. By hand: both climb tor0 -> agg0 (pod 0's holder of 0 and 1); "a" goes up to
/// core0, which reaches pod 1 at agg2; "b" to core1, which in type-B pod 1 reaches agg3 (on
/// the standard wiring it would be agg2, as for "a"). Each then copies to tor2 and tor3.
#[test]
fn ab_trees_by_hand() {
    let topo = k4(Wiring::Ab);
    let spec: MulticastSpec = serde_json::from_str(r#"{"groups": [{"name": "a", "members": [1, 5, 7]}, {"name": "b", "members": [1, 5, 7]}]}"#).unwrap();
    let f = McFabric::new(&spec, &topo, 4, &[vec![0], vec![0]], 1).unwrap();
    assert_eq!(f.tree.wiring, Wiring::Ab);
    assert_eq!(f.part.aggr_partitions, [vec![0, 1], vec![2, 3], vec![0, 2], vec![1, 3], vec![0, 1], vec![2, 3], vec![0, 2], vec![1, 3]]);
    let all = |_: u32| true;
    assert_eq!(copies(&topo, &f, 0, "tor0", Mode::Up, &all), ["h1", "agg0"]);
    assert_eq!(copies(&topo, &f, 0, "agg0", Mode::Up, &all), ["core0"]);
    assert_eq!(copies(&topo, &f, 0, "core0", Mode::Down, &all), ["agg2"]);
    assert_eq!(copies(&topo, &f, 1, "agg0", Mode::Up, &all), ["core1"]);
    assert_eq!(copies(&topo, &f, 1, "core1", Mode::Down, &all), ["agg3"]);
    assert_eq!(copies(&topo, &f, 1, "agg3", Mode::Down, &all), ["tor2", "tor3"]);
    // Entries: each group on edges 0, 2, 3, on agg0 and one of pod 1's, and on its core.
    assert_eq!(f.tables.core, vec![1, 1, 0, 0]);
    assert_eq!(f.tables.aggr, vec![2, 0, 1, 1, 0, 0, 0, 0]);
}

/// A scenario on k = 4 at 10 Gb/s, host 0 sending 1 Gb/s of 1,460-byte datagrams to `members`
/// for 30 ms, with `failures` at 1 ms (link-state defaults: detection 10 ms, install 10 ms).
fn run(wiring: &str, members: &str, failures: &[(&str, &str)]) -> World {
    let failures: Vec<String> = failures.iter().map(|(a, b)| format!(r#"{{"at": "1ms", "action": "down", "link": ["{a}", "{b}"]}}"#)).collect();
    let s = Scenario::from_json(&format!(
        r#"{{"stop": "30ms", "topology": {{"kind": "fat_tree", "k": 4, "wiring": "{wiring}", "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"}},
            "multicast": {{"groups": [{{"name": "g", "members": {members}}}]}},
            "workload": {{"kind": "multicast", "group": "g", "hosts": [0], "bytes": {}, "rate": "1Gbps"}},
            "failures": [{}]}}"#,
        1_000_000u64 * 1460,
        failures.join(", ")
    ))
    .unwrap();
    let mut w = World::new(&s).unwrap();
    w.run();
    w.check_conservation().unwrap();
    w
}

/// AB k = 4, group on core 0 (reaching pod 1 at agg2), members 1, 5, 7. At 1 ms core0 - agg2,
/// core1 - agg3 and core2 - agg2 fail: the only link left into pod 1 is core3 - agg3, so no
/// 3-hop detour exists (core0's 3-hop ones, through agg0/agg4 and core1 to agg3 or through
/// agg6 and core2 to agg2, both lost their last link). By hand, hops to pod 1's aggregation
/// switches: core3, tor2, tor3 1; agg1, agg5, agg7 2; tor0 .. core1, core2 3; agg0, agg4, agg6
/// 4; core0 5: the 5-hop detour core0 -> agg0 -> tor0 -> agg1 -> core3 -> agg3 carries every
/// copy for pod 1 until the rebuild at 21 ms moves the group to core 3 (pod 0 through agg1,
/// pod 1 through agg3, all links up).
#[test]
fn ab_five_hop_detour_until_the_rebuild() {
    let w = run("ab", "[1, 5, 7]", &[("core0", "agg2"), ("core1", "agg3"), ("core2", "agg2")]);
    let m = w.mcast.as_ref().unwrap();
    let c = &m.counters;
    assert_eq!(m.delivery.began[1], Some(PS_PER_MS));
    assert_eq!(m.delivery.began[2], Some(21 * PS_PER_MS));
    assert_eq!(m.fabric.groups()[0].root, Some(Root::Core(3)));
    // Every detour is 5 hops: one per datagram sent in the detour period (20 ms at 1 Gb/s of
    // 1,460-byte payloads: 20e-3·1e9/(1538·8) = 1625 frames, less what the rate counts of
    // headers), none after.
    assert_eq!(c.detour_hops.iter().enumerate().filter(|&(h, &n)| n > 0 && h != 5).count(), 0, "{:?}", c.detour_hops);
    let d = &m.delivery.groups[0];
    for r in &d.receivers[1..] {
        let expected = d.expected(r.host, Some(1));
        // Copies on the failed links as they went down (one each at most) are lost.
        assert!(r.received[1] + 2 >= expected && expected > 1500, "host {}: {} of {expected}", r.host, r.received[1]);
        // Copies sent just before the failure and caught by it detour too (counted before).
        assert!(r.detoured + 2 >= expected && r.detoured <= expected + 2, "host {}: {} detoured of {expected}", r.host, r.detoured);
        assert!(r.received[2] + 2 >= d.expected(r.host, Some(2)));
    }
    assert!(c.detours + 2 >= d.expected(5, Some(1)) && c.detours <= d.expected(5, Some(1)) + 2, "{} detours", c.detours);
    assert_eq!(c.unrepaired, 0);
}

/// Standard k = 4, group on core 0, host 0 sending to 1 (its edge), 5 (tor2, pod 1) and 9 (tor4,
/// pod 2). At 1 ms agg2 - tor2 and agg5 - tor4 fail. No single core reaches both: cores 0 and 1
/// reach pod 1 only through agg2, cores 2 and 3 pod 2 only through agg5, so before set cover the
/// group stayed unrepaired and detoured for the rest of the run. Greedy set cover over the
/// member edges {tor2, tor4} (tor0 is the sender's own): every core covers one; core 0 (lowest)
/// takes tor4 through agg4, then core 2 takes tor2 through agg3. After the rebuild tor0 sends
/// up to agg0 (for core 0) and agg1 (for core 2), and no copy detours.
#[test]
fn set_cover_repairs_what_no_single_root_can() {
    let w = run("standard", "[1, 5, 9]", &[("agg2", "tor2"), ("agg5", "tor4")]);
    let m = w.mcast.as_ref().unwrap();
    let c = &m.counters;
    let g = &m.fabric.groups()[0];
    assert_eq!(g.root, Some(Root::Cover));
    let cover = g.cover.as_ref().unwrap();
    assert_eq!(cover.cores, [0, 2]);
    let feeds: Vec<(u32, u32, Option<u32>, Vec<u32>)> = cover.feeds.iter().map(|f| (f.pod, f.aggr, f.core, f.edges.clone())).collect();
    assert_eq!(feeds, [(2, 0, Some(0), vec![4]), (1, 1, Some(2), vec![2])]);
    assert_eq!((c.unrepaired, c.moved), (0, 1));
    assert_eq!(m.delivery.began[2], Some(21 * PS_PER_MS), "the rebuilt period begins: every group repaired");
    let d = &m.delivery.groups[0];
    // Host 5 detoured in the detour period (agg2 -> tor3 -> agg3 -> tor2, 3 hops), never after
    // (copies sent just before the failure and caught by it detour too).
    let r5 = &d.receivers[1];
    assert_eq!(r5.host, 5);
    assert!(r5.detoured <= r5.received[1] + 2, "{} detoured, {} received while detouring", r5.detoured, r5.received[1]);
    assert!(r5.received[1] + 2 >= d.expected(5, Some(1)));
    assert_eq!(c.detour_hops.iter().enumerate().filter(|&(h, &n)| n > 0 && h != 3).count(), 0, "{:?}", c.detour_hops);
    // After the rebuild, both remote members get everything (a copy caught at the switch over
    // at most, per member).
    for r in &d.receivers[1..] {
        let expected = d.expected(r.host, Some(2));
        assert!(r.received[2] + 2 >= expected && expected > 500, "host {}: {} of {expected}", r.host, r.received[2]);
    }
    // Host 9's tree never crossed a failed link.
    assert_eq!(d.receivers[2].detoured, 0);
}

/// The same failures without the second one leave a single root (core 2: agg3 to tor2, agg5 to
/// tor4 up) and no cover: the cover is only for what single roots cannot repair.
#[test]
fn a_single_root_is_preferred_to_a_cover() {
    let w = run("standard", "[1, 5, 9]", &[("agg2", "tor2")]);
    let g = &w.mcast.as_ref().unwrap().fabric.groups()[0];
    assert_eq!((g.root, g.cover.is_none()), (Some(Root::Core(2)), true));
}

#[test]
fn ab_wiring_needs_every_core() {
    let e =
        Scenario::from_json(r#"{"topology": {"kind": "fat_tree", "k": 4, "wiring": "ab", "remove_cores": 1}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .err()
            .unwrap()
            .to_string();
    assert!(e.starts_with("topology.wiring: \"ab\" needs every core"), "{e}");
    let e = Scenario::from_json(
        r#"{"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "wiring": "ab"}, "workload": {"kind": "shuffle", "bytes": 1}}"#,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("topology.wiring: applies to fat_tree fabrics"), "{e}");
}

/// Unicast on the AB wiring: shortest paths know no wiring, so a shuffle finishes and the
/// fabric's bisection is the standard one's (every pod still reaches every core once).
#[test]
fn unicast_runs_on_the_ab_wiring() {
    let run = |wiring: &str| {
        let s = Scenario::from_json(&format!(
            r#"{{"topology": {{"kind": "fat_tree", "k": 4, "wiring": "{wiring}"}}, "workload": {{"kind": "permutation", "bytes": "200KB"}}}}"#
        ))
        .unwrap();
        clos_core::run(&s).unwrap()
    };
    let ab = run("ab");
    assert_eq!(ab.summary["flows"]["finished"], 16);
    assert_eq!(run("standard").summary["flows"]["finished"], 16);
}

/// AB k = 4, no failure: group "g" is the second group, so partition 1 on core 1, which enters
/// type-B pod 1 at agg3 (`ab_trees_by_hand`). Host 0 sends to 1, 5 and 7 at 1 Gb/s for 2 ms. By
/// hand: 2 copies a datagram (tor0 to h1 and up; agg3 to tor2 and tor3), 3 deliveries; agg3
/// carries pod 1's copies and agg2 none, where the standard wiring uses agg2.
#[test]
fn ab_replicas_and_deliveries_by_hand() {
    let s = Scenario::from_json(
        r#"{"stop": "2ms", "topology": {"kind": "fat_tree", "k": 4, "wiring": "ab", "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"},
            "multicast": {"groups": [{"name": "other", "members": [2]}, {"name": "g", "members": [1, 5, 7]}]},
            "workload": {"kind": "multicast", "group": "g", "hosts": [0], "bytes": "10MB", "rate": "1Gbps"}}"#,
    )
    .unwrap();
    let mut w = World::new(&s).unwrap();
    w.run();
    w.check_conservation().unwrap();
    let m = w.mcast.as_ref().unwrap();
    let c = &m.counters;
    // 2 ms at one 1,538-byte frame per 12.304 us: 163 datagrams; the last few still on their way.
    assert!((160..=163).contains(&c.sent), "{}", c.sent);
    assert!(c.replicas <= 2 * c.sent && c.replicas + 2 >= 2 * c.sent, "{} replicas of {} sent", c.replicas, c.sent);
    assert!(c.delivered <= 3 * c.sent && c.delivered + 6 >= 3 * c.sent, "{} delivered of {} sent", c.delivered, c.sent);
    assert_eq!(c.detours, 0);
    let bytes_down = |agg: &str| -> u64 {
        let n = w.topo.node_named(agg).unwrap();
        w.topo.ports_of(n).filter(|&p| w.topo.role(w.topo.ports[p as usize].to) == clos_core::topology::Role::Tor).map(|p| w.ports.accepted(p).bytes).sum()
    };
    assert_eq!(bytes_down("agg2"), 0);
    assert!(bytes_down("agg3") >= 2 * (c.sent - 2) * 1460, "{}", bytes_down("agg3"));
}

/// A group inside one pod (standard k = 6, `set_cover.rs`'s test worked by hand): host 0 sends
/// 1 Gb/s to 1, 3 (tor1) and 6 (tor2); at 1 ms agg0 - tor1, agg1 - tor2 and agg2 - tor2 fail, so
/// no aggregation switch of pod 0 reaches both. Until the rebuild (1 ms later) agg0, the holder,
/// detours tor1's copies through the pod (agg0 -> tor0 -> agg1 -> tor1, 3 hops); after it the
/// cover {agg0: tor2, agg1: tor1} carries them and nothing detours: every member receives the
/// rebuilt period's datagrams but those still on their way when the run stops.
#[test]
fn set_cover_inside_one_pod_repairs_the_group() {
    let s = Scenario::from_json(
        r#"{"stop": "5ms", "topology": {"kind": "fat_tree", "k": 6, "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"},
            "multicast": {"groups": [{"name": "g", "members": [1, 3, 6]}]},
            "workload": {"kind": "multicast", "group": "g", "hosts": [0], "bytes": "1GB", "rate": "1Gbps"},
            "failures": [{"at": "1ms", "action": "down", "link": ["agg0", "tor1"]},
                         {"at": "1ms", "action": "down", "link": ["agg1", "tor2"]},
                         {"at": "1ms", "action": "down", "link": ["agg2", "tor2"]}],
            "convergence": {"detection": "500us", "install": "500us"}}"#,
    )
    .unwrap();
    let mut w = World::new(&s).unwrap();
    w.run();
    w.check_conservation().unwrap();
    let m = w.mcast.as_ref().unwrap();
    let c = &m.counters;
    assert_eq!((c.unrepaired, c.moved), (0, 1));
    assert_eq!(m.delivery.began[2], Some(2 * PS_PER_MS));
    assert_eq!(m.fabric.groups()[0].root, Some(Root::Cover));
    let summary = w.multicast_summary().unwrap();
    assert_eq!(summary["groups"][0]["cover_aggrs"], serde_json::json!(["agg0", "agg1"]));
    assert_eq!(c.detour_hops.iter().enumerate().filter(|&(h, &n)| n > 0 && h != 3).count(), 0, "{:?}", c.detour_hops);
    let d = &m.delivery.groups[0];
    for r in &d.receivers {
        let (expected, rebuilt) = (d.expected(r.host, Some(1)), d.expected(r.host, Some(2)));
        assert!(rebuilt > 200, "3 ms at 1 Gb/s");
        assert!(r.received[1] + 2 >= expected, "host {}: {} of {expected} in the detour period", r.host, r.received[1]);
        assert!(r.received[2] + 2 >= rebuilt, "host {}: {} of {rebuilt} after the rebuild", r.host, r.received[2]);
    }
    // Only tor1's copies detoured, and only in the detour period (1 ms at 1 Gb/s: ~81 copies).
    let h3 = d.receivers.iter().find(|r| r.host == 3).unwrap();
    assert!(c.detours > 0 && c.detours <= d.expected(3, Some(1)) + 2, "{} detours", c.detours);
    assert_eq!(h3.detoured, c.detours, "every detoured copy was tor1's");
}
