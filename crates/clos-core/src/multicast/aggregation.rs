//! Meta-groups in the packet simulator (Li & Freedman §3.2.1-3.2.2, Figure 3, Algorithm 2, Eq. 6):
//! a switch of the chosen layer whose multicast table would exceed C maps its groups onto at most
//! C meta-groups with [`meta_group::aggregate`](super::meta_group::aggregate) (the same Algorithm
//! 2, F, Δ and δ as the statistical evaluation), installs one entry per meta-group in use, and
//! forwards a group's packet out of the union of its meta-group's ports.
//!
//! **Address rewriting** (§3.2.1). The switch above the bottleneck switch rewrites a group's
//! global address to its local one under the meta-group's prefix ([`Aggregated::local_address`]);
//! the bottleneck switch forwards by the meta-group's entry alone ([`Aggregated::meta_ports`]);
//! the node below restores the global address, and one with no entry for it (a host that did not
//! join the group, for edge aggregation, whose "switch below" is the host's soft switch; an edge
//! switch without members, for aggregation-layer aggregation) discards the copy. In the simulator
//! a copy names its group by its flow, so the rewrite is the lookup the switch makes as it
//! forwards, and is counted (`rewritten`, `restored`) rather than stored in the packet.
//!
//! **Traffic overhead.** Copies a switch of the layer sends down to a node that does not want
//! them (a non-member host, or an edge switch without members) are the overhead: counted as they
//! are sent, per switch (`extra_sent` against `needed_sent`), and as they are discarded, per
//! receiving node. A discarded copy was delivered (to the node that discards it): conservation
//! counts it as delivered, and the summary's `multicast.packets.discarded` says how many of the
//! delivered copies were. The statistical prediction beside it is Algorithm 2's own
//! (carried − wanted) / wanted on the layer's downlinks, weighted by the groups' rates, as
//! `evaluation.rs` computes it.
//!
//! Groups are aggregated in their order in the scenario (the paper's "for g ∈ G"), with their
//! rates λ_g (the sum of their senders' rates). A switch's table holds the entries its fabric
//! counts (members' and senders'); Algorithm 2 takes a group's downstream ports there, its member
//! hosts or edge switches with members (an entry of senders only sends nothing down and is left
//! out, so it neither needs a meta-group nor counts after aggregation).
//!
//! **Either fabric** ([`LayerSource`]). The fabric says how many switches a layer has, each
//! one's ports, each group's entries there and which receivers want a copy. On a fat tree
//! (`fabric.rs`) the entries are `tree.rs`'s, every partition holder keeping one; on VL2
//! (`vl2.rs`) edge aggregation is at the ToRs (ports: the servers; the switch above is whichever
//! aggregation switch the group's cover took) and aggregation-layer aggregation at the
//! aggregation switches the groups' covers took (ports: the ToRs below; the intermediates and
//! the senders' ToRs rewrite). A VL2 ToR that receives a meta-group's copy of a group it has
//! members of, from an aggregation switch that does not serve it for that group, discards it
//! (its entry's upstream is the serving switch, as a multicast router's incoming-interface
//! check would have it): it gets the group's copy from its own switch.
//!
//! **Tracking** (§3.2.2). A VL2 rebuild that recomputes a group's cover can move the group
//! between aggregation switches; [`Aggregated::recompute`] then runs Algorithm 2 again over the
//! switches' current groups, and the summary's `recomputed` names the switches whose
//! meta-groups changed. A fat tree's holders do not move (a rebuild changes a group's root,
//! not which switches keep its entry), so its aggregation is computed once.

use super::meta_group::{aggregate, Aggregation, AggregationParams, LocalGroup};
use super::table::layer_stats;
use super::tree::Layer;
use crate::error::{bad, Result};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One layer of a fabric's switches as aggregation sees it; both fabrics provide it (a fat
/// tree, `fabric.rs`; VL2, `vl2.rs`), so Algorithm 2 runs on either without knowing its indices.
pub trait LayerSource {
    /// The switches of `layer`.
    fn layer_switches(&self, layer: Layer) -> u32;
    /// |P| of a switch of `layer`: its downstream ports (an edge switch's or ToR's hosts; a fat
    /// tree's aggregation switch's pod edge switches; a VL2 aggregation switch's ToRs).
    fn layer_ports(&self, layer: Layer, switch: u32) -> u32;
    /// Group `g`'s entries at `layer` on its current tree: (switch, the downstream ports with
    /// members, a bit per port); ports 0 for an entry that only carries its senders' traffic.
    fn layer_entries(&self, layer: Layer, g: usize) -> Vec<(u32, u64)>;
    /// Whether `d` wants group `g`'s copy from switch `from` of `layer` (`None`: the copy came
    /// by a detour tagged with `d`): a member host, or an edge switch the group's tree serves
    /// from that switch.
    fn wanted(&self, layer: Layer, from: Option<u32>, g: usize, d: Dest) -> bool;
}

/// One aggregated switch: its groups (ascending) and their meta-groups.
#[derive(Clone, Debug)]
pub struct SwitchMetas {
    /// The groups with an entry here, ascending, and their ports.
    pub groups: Vec<u32>,
    pub ports: Vec<u64>,
    pub result: Aggregation,
}

/// Where a copy a switch of the aggregated layer sends goes: a host, or an edge switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    Host(u32),
    Edge(u32),
}

/// The meta-groups of every switch of one layer that would exceed C, and the overhead measured.
#[derive(Clone, Debug)]
pub struct Aggregated {
    pub layer: Layer,
    pub capacity: u32,
    delta_ports: u32,
    /// λ_g per group, for recomputations.
    rates: Vec<f64>,
    /// Per switch of the layer (global index): its meta-groups, if its table was over C.
    pub switches: Vec<Option<Box<SwitchMetas>>>,
    /// Entries per switch of the layer before and after.
    pub before: Vec<u32>,
    pub after: Vec<u32>,
    /// Algorithm 2's traffic, over every downlink of the layer with wanted traffic: (carried,
    /// wanted), rates.
    predicted: (f64, f64),
    /// Whether the fabric's trees can move groups between switches of the layer (VL2's
    /// rebuilt covers), so that the meta-groups are recomputed ([`Aggregated::recompute`]) and
    /// the summary reports it.
    pub tracks: bool,
    /// Recomputations run, and the switches whose meta-groups any of them changed.
    pub recomputations: u32,
    pub changed: BTreeSet<u32>,
    /// Copies switches of the layer sent down, wanted and not, per switch.
    pub needed_sent: Vec<u64>,
    pub extra_sent: Vec<u64>,
    /// Copies discarded, per receiving node (host, or edge switch by index).
    pub discarded: BTreeMap<Dest, u64>,
    /// Copies that reached an aggregated switch (rewritten above it) and copies it sent down
    /// (restored below it).
    pub rewritten: u64,
    pub restored: u64,
}

impl PartialOrd for Dest {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Dest {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let key = |d: &Dest| match *d {
            Dest::Host(h) => (0, h),
            Dest::Edge(e) => (1, e),
        };
        key(self).cmp(&key(other))
    }
}

/// Algorithm 2 at every switch of `layer` whose entries exceed `capacity`: the switches' meta-
/// groups, entries before and after, and the predicted (carried, wanted) traffic.
type Computed = (Vec<Option<Box<SwitchMetas>>>, Vec<u32>, Vec<u32>, (f64, f64));

fn compute(src: &dyn LayerSource, rates: &[f64], layer: Layer, capacity: u32, delta_ports: u32) -> Result<Computed> {
    let switches = src.layer_switches(layer) as usize;
    let mut local: Vec<(Vec<u32>, Vec<LocalGroup>)> = vec![(Vec::new(), Vec::new()); switches];
    let mut before = vec![0u32; switches];
    for (g, &rate) in rates.iter().enumerate() {
        for (s, ports) in src.layer_entries(layer, g) {
            before[s as usize] += 1;
            // An entry for senders only forwards nothing down and needs no meta-group.
            if ports != 0 {
                let (ids, lg) = &mut local[s as usize];
                ids.push(g as u32);
                lg.push(LocalGroup { ports, rate });
            }
        }
    }
    let params = AggregationParams { capacity, delta_ports, delta_cost: 0.0 };
    let (mut carried, mut wanted) = (0.0, 0.0);
    let mut out = Vec::with_capacity(switches);
    let mut after = Vec::with_capacity(switches);
    for (i, (ids, lg)) in local.into_iter().enumerate() {
        if before[i] <= capacity || lg.is_empty() {
            after.push(before[i]);
            for g in &lg {
                let r = g.rate * g.ports.count_ones() as f64;
                carried += r;
                wanted += r;
            }
            out.push(None);
            continue;
        }
        let nports = src.layer_ports(layer, i as u32);
        let mu = vec![0.0; nports as usize];
        let result = aggregate(nports, &lg, &mu, params, "multicast.capacity")?;
        carried += result.carried.iter().sum::<f64>();
        wanted += result.needed.iter().sum::<f64>();
        after.push(result.entries());
        let ports = lg.iter().map(|g| g.ports).collect();
        out.push(Some(Box::new(SwitchMetas { groups: ids, ports, result })));
    }
    Ok((out, before, after, (carried, wanted)))
}

/// Whether two outcomes at a switch forward alike: the same groups, each in a meta-group of
/// the same ports.
fn same_metas(a: Option<&SwitchMetas>, b: Option<&SwitchMetas>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let ports = |s: &SwitchMetas| s.result.meta_of.iter().map(|&m| s.result.metas[m as usize].ports).collect::<Vec<u64>>();
            a.groups == b.groups && a.result.meta_of == b.result.meta_of && ports(a) == ports(b)
        }
        _ => false,
    }
}

impl Aggregated {
    /// Algorithm 2 at every switch of `layer` (edge or aggregation) of `src` whose entries
    /// exceed `capacity`, with Δ = `delta_ports` and δ = 0 (the evaluation's default,
    /// `meta_group.rs`); `rates[g]`: group g's λ_g. `tracks`: the trees may move groups between
    /// the layer's switches later, so every switch's |P| must leave room for Algorithm 2's
    /// reserved meta-groups now (a recomputation cannot fail mid-run).
    pub fn build(src: &dyn LayerSource, rates: &[f64], layer: Layer, capacity: u32, delta_ports: u32, tracks: bool) -> Result<Aggregated> {
        let switches = src.layer_switches(layer);
        if tracks {
            let ports = (0..switches).map(|s| src.layer_ports(layer, s)).max().unwrap_or(0);
            if ports > 64 {
                return Err(bad(
                    "multicast.aggregate",
                    format!("meta-groups keep port sets in 64 bits, and a switch of the layer has {ports} ports: aggregate at another layer"),
                ));
            }
            if capacity < ports + 1 {
                return Err(bad(
                    "multicast.capacity",
                    format!("capacity {capacity} is below the |P| + 1 = {} meta-groups Algorithm 2 reserves at a switch of the aggregated layer: use a capacity of at least {}", ports + 1, ports + 1),
                ));
            }
        }
        let (out, before, after, predicted) = compute(src, rates, layer, capacity, delta_ports)?;
        let n = switches as usize;
        Ok(Aggregated {
            layer,
            capacity,
            delta_ports,
            rates: rates.to_vec(),
            switches: out,
            before,
            after,
            predicted,
            tracks,
            recomputations: 0,
            changed: BTreeSet::new(),
            needed_sent: vec![0; n],
            extra_sent: vec![0; n],
            discarded: BTreeMap::new(),
            rewritten: 0,
            restored: 0,
        })
    }

    /// §3.2.2's tracking after the trees changed (a rebuild moved groups between switches of
    /// the layer): Algorithm 2 again over every switch's current groups. A switch whose groups
    /// did not change gets the same meta-groups (Algorithm 2 is deterministic); the switches
    /// whose meta-groups changed are recorded. The copies counted so far are kept; the
    /// predicted overhead is the new trees'.
    pub fn recompute(&mut self, src: &dyn LayerSource) -> Result<()> {
        let (out, before, after, predicted) = compute(src, &self.rates, self.layer, self.capacity, self.delta_ports)?;
        for (i, (new, old)) in out.iter().zip(&self.switches).enumerate() {
            if !same_metas(new.as_deref(), old.as_deref()) {
                self.changed.insert(i as u32);
            }
        }
        self.switches = out;
        self.before = before;
        self.after = after;
        self.predicted = predicted;
        self.recomputations += 1;
        Ok(())
    }

    /// The switch above rewrites group `g`'s address for switch `switch` of the layer: its
    /// meta-group there, if the switch is aggregated and holds the group.
    pub fn local_address(&self, switch: u32, g: usize) -> Option<u32> {
        let s = self.switches.get(switch as usize)?.as_ref()?;
        let i = s.groups.binary_search(&(g as u32)).ok()?;
        Some(s.result.meta_of[i])
    }

    /// The ports of meta-group `meta`'s entry at switch `switch`.
    pub fn meta_ports(&self, switch: u32, meta: u32) -> u64 {
        self.switches[switch as usize].as_ref().map_or(0, |s| s.result.metas[meta as usize].ports)
    }

    /// The ports switch `switch` of `layer` sends group `g` out of, if it is aggregated.
    pub fn forwarding(&self, layer: Layer, switch: u32, g: usize) -> Option<u64> {
        if layer != self.layer {
            return None;
        }
        self.local_address(switch, g).map(|m| self.meta_ports(switch, m))
    }

    /// A copy of group `g` reached switch `switch` of the layer: rewritten above it if the
    /// switch aggregates the group.
    pub fn arrived(&mut self, switch: u32, g: usize) {
        if self.local_address(switch, g).is_some() {
            self.rewritten += 1;
        }
    }

    /// Switch `switch` of the layer sent a copy of group `g` down, which its receiver wants
    /// or not ([`LayerSource::wanted`]).
    pub fn sent(&mut self, switch: u32, g: usize, wanted: bool) {
        if wanted {
            self.needed_sent[switch as usize] += 1;
        } else {
            self.extra_sent[switch as usize] += 1;
        }
        if self.switches[switch as usize].as_ref().is_some_and(|s| s.groups.binary_search(&(g as u32)).is_ok()) {
            self.restored += 1;
        }
    }

    /// `d` discarded a copy it did not want.
    pub fn discard(&mut self, d: Dest) {
        *self.discarded.entry(d).or_insert(0) += 1;
    }

    /// `summary.json`'s `multicast.aggregation`; `name(d)` names a receiving node, `switch(i)`
    /// a switch of the layer, `group(g)` a group.
    pub fn summary(&self, name: &dyn Fn(Dest) -> String, switch: &dyn Fn(u32) -> String, group: &dyn Fn(u32) -> String) -> Value {
        let (needed, extra): (u64, u64) = (self.needed_sent.iter().sum(), self.extra_sent.iter().sum());
        let (carried, wanted) = self.predicted;
        let aggregated: Vec<Value> = self
            .switches
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
            .map(|(i, s)| {
                let metas: Vec<Value> = s
                    .result
                    .metas
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.groups > 0)
                    .map(|(m, meta)| {
                        let members: Vec<String> = s.groups.iter().zip(&s.result.meta_of).filter(|(_, &x)| x as usize == m).map(|(&g, _)| group(g)).collect();
                        json!({"meta": m, "ports": meta.ports, "groups": members})
                    })
                    .collect();
                json!({
                    "switch": switch(i as u32),
                    "entries_before": self.before[i],
                    "entries_after": self.after[i],
                    "meta_groups": metas,
                    "extra_sent": self.extra_sent[i],
                    "needed_sent": self.needed_sent[i],
                })
            })
            .collect();
        let per = |v: &[u64]| -> serde_json::Map<String, Value> {
            v.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| (switch(i as u32), json!(n))).collect()
        };
        let mut out = json!({
            "layer": match self.layer { Layer::Edge => "edge", Layer::Aggr => "aggr", Layer::Core => "core" },
            "capacity": self.capacity,
            "entries_before": layer_stats(&self.before, self.capacity),
            "entries_after": layer_stats(&self.after, self.capacity),
            "switches": aggregated,
            "predicted_overhead": (carried - wanted) / wanted.max(f64::MIN_POSITIVE),
            "copies": {
                "needed": needed,
                "extra": extra,
                "overhead": extra as f64 / needed.max(1) as f64,
                "extra_by_switch": per(&self.extra_sent),
                "discarded": self.discarded.values().sum::<u64>(),
                "discarded_by_node": self.discarded.iter().map(|(&d, &n)| (name(d), json!(n))).collect::<serde_json::Map<_, _>>(),
            },
            "rewritten": self.rewritten,
            "restored": self.restored,
        });
        if self.tracks {
            // §3.2.2's tracking: the meta-groups recomputed at each rebuild of the trees.
            out["recomputed"] = json!({
                "runs": self.recomputations,
                "switches_changed": self.changed.iter().map(|&i| switch(i)).collect::<Vec<_>>(),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::sim::World;
    use serde_json::Value;

    /// A k = 4 fat tree at 10 Gb/s; each of `groups` (name, members, sender) sends 50 datagrams
    /// at 1 Gb/s (no queueing anywhere: every copy arrives).
    fn run(multicast: &str, groups: &[(&str, &str, u32)]) -> (World, Value) {
        run_with(multicast, groups, "")
    }

    /// As [`run`], with `extra` top-level fields (starting with a comma).
    fn run_with(multicast: &str, groups: &[(&str, &str, u32)], extra: &str) -> (World, Value) {
        let defs: Vec<String> = groups.iter().map(|(n, m, _)| format!(r#"{{"name": "{n}", "members": {m}}}"#)).collect();
        let parts: Vec<String> = groups
            .iter()
            .map(|(n, _, s)| format!(r#"{{"kind": "multicast", "group": "{n}", "hosts": [{s}], "bytes": {}, "rate": "1Gbps"}}"#, 50 * 1460))
            .collect();
        let s = Scenario::from_json(&format!(
            r#"{{"topology": {{"kind": "fat_tree", "k": 4, "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"}},
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

    /// Edge 0 (hosts 0, 1) holds four groups: a {0}, b {1}, c {0, 1}, d {0}, each sent from its
    /// own edge switch in another pod (hosts 4, 6, 8, 10) to a member there too (12, 13, 14).
    const EDGE_GROUPS: [(&str, &str, u32); 4] = [("a", "[0, 12]", 4), ("b", "[1, 13]", 6), ("c", "[0, 1]", 8), ("d", "[0, 14]", 10)];

    fn receivers(s: &Value) -> Vec<(u64, u64)> {
        s["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["receivers"].as_array().unwrap().iter().map(|r| (r["expected"].as_u64().unwrap(), r["received"].as_u64().unwrap())))
            .collect()
    }

    /// C = 3 and Δ = 0 (Algorithm 2 by hand): at edge 0 (4 entries > 3), a and d are on port 0
    /// only and share m_0, b is on port 1 only (m_1), c on both (m_2, all ports): 3 entries and
    /// no copy a host did not ask for. Every other edge holds at most 2 entries and keeps them.
    #[test]
    fn single_port_groups_share_their_ports_meta_group_at_no_cost() {
        let (_, s) = run(r#""capacity": 3, "aggregate": "edge""#, &EDGE_GROUPS);
        let a = &s["aggregation"];
        assert_eq!(a["switches"].as_array().unwrap().len(), 1);
        let sw = &a["switches"][0];
        assert_eq!((sw["switch"].as_str(), sw["entries_before"].as_u64(), sw["entries_after"].as_u64()), (Some("tor0"), Some(4), Some(3)));
        let metas: Vec<(u64, Vec<String>)> = sw["meta_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["meta"].as_u64().unwrap(), m["groups"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_string()).collect()))
            .collect();
        assert_eq!(metas, [(0, vec!["a".to_string(), "d".into()]), (1, vec!["b".into()]), (2, vec!["c".into()])]);
        assert_eq!(a["copies"]["extra"], 0);
        assert_eq!(a["predicted_overhead"], 0.0);
        assert_eq!(s["packets"]["discarded"], 0);
        assert!(receivers(&s).iter().all(|&(e, r)| e == 50 && r == 50), "{:?}", receivers(&s));
        // The copies of every group through tor0 were rewritten to a meta-group's address
        // above it and restored below it: a, b, c, d each send 50 datagrams through tor0; c's
        // go to two hosts.
        assert_eq!((a["rewritten"].as_u64(), a["restored"].as_u64()), (Some(200), Some(250)));
    }

    /// C = 3 and Δ = 1: at edge 0 every group is on at least |P| − Δ = 1 port, so all four share
    /// the all-ports meta-group m_2 (1 entry). Each datagram of a and d then also reaches host 1,
    /// each of b host 0: one extra copy per datagram of a, b and d, 150 in all, none for c.
    /// Copies wanted by members: 2 per datagram of each group (a: hosts 0 and 12, b: 1 and 13,
    /// c: 0 and 1, d: 0 and 14), 400; the overhead is 150 / 400 = 0.375, and Algorithm 2's
    /// prediction with equal rates is the same: edge 0 carries 4 λ on each port against
    /// 3 λ + 2 λ wanted, edges 6 and 7 carry 2 λ and λ, wanted: (8 + 3 − 8) / 8.
    /// Members still receive every datagram; the extra copies are delivered to hosts 0 and 1,
    /// which discard them, and conservation counts them as delivered.
    #[test]
    fn all_ports_meta_group_sends_extra_copies_that_hosts_discard() {
        let (w, s) = run(r#""capacity": 3, "aggregate": "edge", "delta_ports": 1"#, &EDGE_GROUPS);
        let a = &s["aggregation"];
        let sw = &a["switches"][0];
        assert_eq!((sw["entries_before"].as_u64(), sw["entries_after"].as_u64()), (Some(4), Some(1)));
        assert_eq!(sw["meta_groups"][0]["meta"], 2);
        assert_eq!((sw["extra_sent"].as_u64(), a["copies"]["needed"].as_u64(), a["copies"]["extra"].as_u64()), (Some(150), Some(400), Some(150)));
        assert_eq!(a["copies"]["overhead"], 0.375);
        assert_eq!(a["predicted_overhead"], 0.375);
        assert_eq!(a["copies"]["discarded_by_node"], serde_json::json!({"h0": 50, "h1": 100}));
        assert_eq!(s["packets"]["discarded"], 150);
        assert!(receivers(&s).iter().all(|&(e, r)| e == 50 && r == 50), "{:?}", receivers(&s));
        // 200 datagrams, each copied for its 2 members (+ 1 extra for a, b, d): delivered =
        // 400 + 150, every copy accounted for.
        let m = w.mcast.as_ref().unwrap();
        assert_eq!((m.counters.sent, m.counters.delivered, m.counters.dropped, m.in_flight()), (200, 550, 0, 0));
        for f in 0..4 {
            assert!(w.finished[f].is_some(), "flow {f} finished: its members got everything");
        }
    }

    /// Aggregation-layer meta-groups: n = 1 on all four cores (r_c = 4, r_a = 2), C = 3, Δ = 1.
    /// Both aggregation switches of pod 0 hold a {edges 0, 1}, b {0, 1}, c {0} and d {1} (4 >
    /// 3) and put them all in m_2: each datagram of c also goes to edge 1, each of d to edge 0,
    /// which have no member and discard them (one extra copy a datagram). Pod 1's switches
    /// hold c and d on edge 2 only and keep their entries. Senders are in pod 2 (hosts 8-11).
    /// Wanted copies down from aggregation switches: a 2, b 2, c 2 (edge 0, edge 2), d 2:
    /// overhead 100 / 400 = 0.25; Algorithm 2 predicts the same (each of the r_a holders
    /// counts its links): pod 0, 2·(8 λ carried, 6 λ wanted), pod 1, 2·(2 λ, 2 λ): 4/16.
    #[test]
    fn aggregation_switches_send_extra_copies_that_edges_discard() {
        let groups = [("a", "[0, 2]", 8), ("b", "[1, 3]", 9), ("c", "[0, 4]", 10), ("d", "[3, 5]", 11)];
        let (w, s) =
            run(r#""partitions": 1, "cores_per_partition": 4, "aggrs_per_partition": 2, "capacity": 3, "aggregate": "aggr", "delta_ports": 1"#, &groups);
        let a = &s["aggregation"];
        let names: Vec<&str> = a["switches"].as_array().unwrap().iter().map(|s| s["switch"].as_str().unwrap()).collect();
        assert_eq!(names, ["agg0", "agg1"]);
        assert_eq!((a["copies"]["needed"].as_u64(), a["copies"]["extra"].as_u64()), (Some(400), Some(100)));
        assert_eq!(a["copies"]["overhead"], 0.25);
        assert_eq!(a["predicted_overhead"], 0.25);
        assert_eq!(a["copies"]["discarded_by_node"], serde_json::json!({"tor0": 50, "tor1": 50}));
        assert!(receivers(&s).iter().all(|&(e, r)| e == 50 && r == 50), "{:?}", receivers(&s));
        assert_eq!(w.mcast.as_ref().unwrap().counters.discarded, 100);
    }

    /// `output.trace` marks multicast copies (`metrics/trace.rs`): group a's 50 datagrams
    /// (flow 0, from host 4 in pod 1) with Δ = 1 as above. Per datagram, by hand: tor2 sends it
    /// up (1 copy), pod 1's aggregation switch up (1), core 0 to pods 0 and 3 (2), agg0 to tor0
    /// (1), tor0 to hosts 0 and 1 (2, the meta-group's ports), agg6 to tor6 (1), tor6 to host
    /// 12 (1): 9 `mc_copy` rows; hosts 0 and 12 `mc_arrive`, host 1 `mc_discard`.
    #[test]
    fn the_trace_marks_multicast_copies() {
        let (w, _) = run_with(r#""capacity": 3, "aggregate": "edge", "delta_ports": 1"#, &EDGE_GROUPS, r#", "output": {"trace": [0]}"#);
        let t = w.trace.as_ref().unwrap().table();
        let count = |e: &str| t.event.iter().filter(|x| *x == e).count();
        assert_eq!((count("send"), count("mc_copy"), count("mc_arrive"), count("mc_discard")), (50, 450, 100, 50));
        assert!(t.flow.iter().all(|&f| f == 0));
        // The arrivals name their members by the port they came in by.
        let h1 = w.topo.node_named("h1").unwrap();
        let discards: Vec<u32> = t.event.iter().zip(&t.link).filter(|(e, _)| *e == "mc_discard").map(|(_, &l)| w.topo.ports[l as usize].to).collect();
        assert!(discards.iter().all(|&n| n == h1));
    }

    /// Off (the default), the same groups over capacity are reported and forwarded as before,
    /// and the summary has no aggregation section.
    #[test]
    fn off_by_default() {
        let (_, s) = run(r#""capacity": 3"#, &EDGE_GROUPS);
        assert!(s.get("aggregation").is_none() && s["packets"].get("discarded").is_none());
        assert_eq!(s["tables"]["edge"]["max"], 4);
    }

    #[test]
    fn a_capacity_below_the_reserved_meta_groups_is_an_error_naming_it() {
        let s = Scenario::from_json(
            r#"{"topology": {"kind": "fat_tree", "k": 4},
                "multicast": {"capacity": 2, "aggregate": "edge", "groups": [{"name": "a", "members": [0, 1]}, {"name": "b", "members": [0, 1]}, {"name": "c", "members": [0]}]},
                "workload": {"kind": "multicast", "group": "a", "hosts": [4], "bytes": 1000, "rate": "1Gbps"}}"#,
        )
        .unwrap();
        let e = World::new(&s).err().unwrap().to_string();
        assert!(e.starts_with("multicast.capacity: capacity 2 is below the |P| + 1 = 3"), "{e}");
    }
}
