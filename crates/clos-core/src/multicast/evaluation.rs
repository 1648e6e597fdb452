//! The paper's statistical evaluation (Li & Freedman §4.1-4.3): build the fabric, populate it with
//! tenants and groups, and count forwarding entries, aggregation overhead, group capacity and
//! switch updates under churn. Like the paper, nothing is simulated packet by packet.
//!
//! One call, [`evaluate`], runs the sections its [`Params`] ask for:
//! - **entries** (Figure 5): `groups` groups; per-switch entry counts per layer against `capacity`;
//! - **aggregation** (Figure 5, "(la)"): Algorithm 2 at every switch of the `aggregate` layer, the
//!   entries left and the traffic overhead on that layer's downlinks;
//! - **capacity** (Figure 6, the "supports about 30K groups" statements): groups generated one by
//!   one until a switch first exceeds `capacity`; with aggregation, until a switch of a layer that
//!   is *not* aggregated does (the aggregated layer fits by construction: Algorithm 2 never uses
//!   more than `capacity` meta-groups); and with one-port edge entries as unicast rules (§4.2);
//! - **churn** (Table 2): `churn_events` joins and leaves over the groups, each group's share
//!   proportional to its size, a fair coin for join or leave;
//! - **batching** (Figure 7, §4.3.1): one group of a tenant spread over every host of
//!   `batching_pods` pods; `batching_joins` joins at once, with and without batching;
//! - **failover** (Figure 8, §4.4): for each count `f` in `failover`, that many random
//!   aggregation switches fail, and every group's route stretch and unreachable receivers under
//!   local rerouting are counted from one member, drawn, as its sender (`failover.rs`); reported
//!   under `failover.failed_<f>`.
//!
//! Results are deterministic for a given `seed`: every stage draws from its own stream.

use super::assign::Assigner;
use super::churn::{batch_updates, update_load, Footprint, Updates};
use super::failover::{reach, Failures};
use super::fat_tree::{FatTree, Wiring};
use super::group_sizes::{check_min, SizeDist, TenantPicker};
use super::meta_group::{aggregate, AggregationParams, LocalGroup};
use super::partition::Partitioning;
use super::placement::{place, Placement};
use super::table::{layer_stats, Tables};
use super::tenants::{tenant_sizes, TenantParams};
use super::tree::{GroupTree, Layer};
use crate::error::{bad, Result};
use crate::rng::{below, unit, Stream, Streams};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Instant;

/// The evaluation's parameters; the defaults are the paper's setup (§4.1).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Switch ports (48: 27,648 hosts).
    pub k: u32,
    /// "ab" (F10, the paper's) or "standard".
    pub wiring: String,
    /// Multicast entries per switch, C.
    pub capacity: u32,
    /// Address partitions n, cores per partition r_c, aggregation switches per partition and pod r_a.
    pub n: u32,
    pub rc: u32,
    pub ra: u32,
    pub tenants: u32,
    pub vm_min: u32,
    pub vm_median: u32,
    pub vm_max: u32,
    /// Large tenants added to the exponential body (see `tenants.rs`).
    pub tail_tenants: u32,
    pub tail_min: u32,
    pub vms_per_host: u32,
    /// "near" or "random".
    pub placement: String,
    /// "wve" or "uniform".
    pub group_sizes: String,
    pub min_group_size: u32,
    /// Groups for the entries, aggregation and churn sections (0 skips them).
    pub groups: u32,
    /// Traffic rate per group, an integer uniform in [rate_min, rate_max].
    pub rate_min: u32,
    pub rate_max: u32,
    /// A group with at least this rate is "heavy" for address assignment.
    pub heavy_rate: u32,
    /// Where to apply Algorithm 2: "none", "edge" or "aggr".
    pub aggregate: String,
    /// Algorithm 2's Δ and δ (see `meta_group.rs`).
    pub delta_ports: u32,
    pub delta_cost: f64,
    /// Run the capacity search.
    pub capacity_search: bool,
    /// Stop the capacity search after this many groups (reported as a lower bound).
    pub capacity_limit: u32,
    /// Join/leave events over the groups (0: no churn section).
    pub churn_events: u32,
    /// §4.3.2's load: join and leave events a second in every pod, for the churn section's
    /// updates a second per switch (`update_load`).
    pub events_per_pod_per_s: f64,
    /// The single-group batching example (0 joins: skipped).
    pub batching_joins: u32,
    pub batching_pods: u32,
    pub batching_trials: u32,
    /// Counts of failed aggregation switches for the failover section (empty: skipped).
    pub failover: Vec<u32>,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            k: 48,
            wiring: "ab".into(),
            capacity: 1000,
            n: 64,
            rc: 9,
            ra: 3,
            tenants: 3000,
            vm_min: 10,
            vm_median: 100,
            vm_max: 5000,
            tail_tenants: 27,
            tail_min: 3000,
            vms_per_host: 20,
            placement: "near".into(),
            group_sizes: "wve".into(),
            min_group_size: 5,
            groups: 100_000,
            rate_min: 1,
            rate_max: 10,
            heavy_rate: 8,
            aggregate: "edge".into(),
            delta_ports: 0,
            delta_cost: 0.0,
            capacity_search: false,
            capacity_limit: 2_000_000,
            churn_events: 0,
            events_per_pod_per_s: 1000.0,
            batching_joins: 0,
            batching_pods: 8,
            batching_trials: 200,
            failover: Vec::new(),
            seed: 1,
        }
    }
}

const F: &str = "multicast";

fn field(name: &str) -> String {
    format!("{F}.{name}")
}

/// Parameters from JSON (unknown fields are errors naming them), then the evaluation.
pub fn evaluate_json(json: &str) -> Result<Value> {
    let params: Params = serde_json::from_str(json).map_err(|e| bad(F, format!("{e} (parameters are documented in docs/multicast.md)")))?;
    evaluate(&params)
}

/// A generated group.
struct Group {
    tenant: u32,
    members: Vec<u32>,
    rate: f64,
    tree: GroupTree,
}

/// Everything the groups are drawn from.
struct World {
    tree: FatTree,
    part: Partitioning,
    tenant_hosts: Vec<Vec<u32>>,
    picker: TenantPicker,
    dist: SizeDist,
}

impl World {
    fn group(&mut self, rng: &mut Stream, assigner: &mut Assigner, p: &Params) -> Group {
        let t = self.picker.pick(rng);
        let hosts = &mut self.tenant_hosts[t];
        let size = self.dist.sample(rng, hosts.len() as u32, p.min_group_size) as usize;
        // Partial Fisher-Yates: a uniform subset whatever the array's current order.
        for i in 0..size {
            let j = i + below(rng, (hosts.len() - i) as u64) as usize;
            hosts.swap(i, j);
        }
        let members = hosts[..size].to_vec();
        let rate = (p.rate_min + below(rng, (p.rate_max - p.rate_min + 1) as u64) as u32) as f64;
        let partition = assigner.assign(rate >= p.heavy_rate as f64);
        let tree = GroupTree::build(&self.tree, partition, &members);
        Group { tenant: t as u32, members, rate, tree }
    }
}

fn check(p: &Params) -> Result<()> {
    if p.capacity == 0 {
        return Err(bad(field("capacity"), "a switch needs room for at least one entry"));
    }
    if p.vms_per_host == 0 {
        return Err(bad(field("vms_per_host"), "at least 1"));
    }
    if p.rate_min == 0 || p.rate_min > p.rate_max {
        return Err(bad(field("rate_min"), format!("need 1 <= rate_min <= rate_max, got {} and {}", p.rate_min, p.rate_max)));
    }
    if !(p.events_per_pod_per_s >= 0.0 && p.events_per_pod_per_s.is_finite()) {
        return Err(bad(field("events_per_pod_per_s"), "a non-negative number of events a second"));
    }
    if !(p.delta_cost >= 0.0 && p.delta_cost.is_finite()) {
        return Err(bad(field("delta_cost"), "a non-negative number"));
    }
    if p.batching_joins > 0 && (p.batching_pods == 0 || p.batching_pods > p.k || p.batching_trials == 0) {
        return Err(bad(field("batching_pods"), format!("1 to k = {} pods and at least one trial", p.k)));
    }
    if let Some(&f) = p.failover.iter().find(|&&f| f > p.k * p.k / 2) {
        return Err(bad(field("failover"), format!("{f} failed aggregation switches, but the fabric has k²/2 = {}", p.k * p.k / 2)));
    }
    if !p.failover.is_empty() && p.groups == 0 {
        return Err(bad(field("failover"), "the failover section reroutes the groups section's groups: set groups above 0"));
    }
    check_min(p.min_group_size, &field("min_group_size"))
}

/// Runs the sections `p` asks for and reports them as JSON.
pub fn evaluate(p: &Params) -> Result<Value> {
    let start = Instant::now();
    check(p)?;
    let tree = FatTree::new(p.k, Wiring::parse(&p.wiring, &field("wiring"))?, &field("k"))?;
    let part = Partitioning::distribute(&tree, p.n, p.rc, p.ra, F)?;
    let placement = Placement::parse(&p.placement, &field("placement"))?;
    let dist = SizeDist::parse(&p.group_sizes, &field("group_sizes"))?;
    let layer = match p.aggregate.as_str() {
        "none" => None,
        "edge" => Some(Layer::Edge),
        "aggr" => Some(Layer::Aggr),
        other => return Err(bad(field("aggregate"), format!("unknown layer {other:?}: use \"none\", \"edge\" or \"aggr\""))),
    };
    let agg = AggregationParams { capacity: p.capacity, delta_ports: p.delta_ports, delta_cost: p.delta_cost };
    if layer.is_some() && p.capacity < tree.half() + 1 {
        return Err(bad(
            field("capacity"),
            format!("Algorithm 2 reserves k/2 + 1 = {} meta-groups: use a capacity of at least that, or aggregate = \"none\"", tree.half() + 1),
        ));
    }
    let tp = TenantParams { count: p.tenants, min: p.vm_min, median: p.vm_median, max: p.vm_max, tail_count: p.tail_tenants, tail_min: p.tail_min };
    tp.check(F)?;

    let mut streams = Streams::new(p.seed);
    let sizes = tenant_sizes(&mut streams.stream(), &tp);
    let tenant_hosts = place(&tree, &sizes, p.vms_per_host, placement, &mut streams.stream(), &field("tenants"))?;
    // Drawing a group reorders its tenant's hosts; the capacity search starts from the placement
    // itself, so its result does not depend on whether the groups section ran.
    let placed = tenant_hosts.clone();
    let mut world = World { picker: TenantPicker::new(&sizes), tree, part, tenant_hosts, dist };
    let mut group_rng = streams.stream();
    let mut capacity_rng = streams.stream();
    let mut churn_rng = streams.stream();
    let mut batching_rng = streams.stream();
    let mut failover_rng = streams.stream();

    let total_vms: u64 = sizes.iter().map(|&s| s as u64).sum();
    let mut sorted = sizes.clone();
    sorted.sort_unstable();
    let mut out = json!({
        "population": {
            "hosts": world.tree.hosts(),
            "tenants": sizes.len(),
            "vms": total_vms,
            "occupancy": total_vms as f64 / (world.tree.hosts() as f64 * p.vms_per_host as f64),
            "tenant_median": sorted[sorted.len() / 2],
            "tenant_max": sorted[sorted.len() - 1],
        },
        "model": {
            "core_capacity": world.tree.cores() / p.rc * p.capacity,
            "pod_aggr_capacity": world.tree.half() / p.ra * p.capacity,
        },
    });

    if p.groups > 0 {
        let mut assigner = Assigner::new(p.n);
        let groups: Vec<Group> = (0..p.groups).map(|_| world.group(&mut group_rng, &mut assigner, p)).collect();
        let mut tables = Tables::new(&world.tree, p.capacity);
        for g in &groups {
            for e in g.tree.entries(&world.tree, &world.part) {
                tables.add(&e);
            }
        }
        out["groups"] = group_stats(&world, &groups);
        out["entries"] = json!({
            "core": layer_stats(&tables.core, p.capacity),
            "aggr": layer_stats(&tables.aggr, p.capacity),
            "edge": layer_stats(&tables.edge, p.capacity),
            "edge_multi": layer_stats(&tables.edge_multi, p.capacity),
        });
        if let Some(layer) = layer {
            out["aggregation"] = aggregation(&world, &groups, layer, agg)?;
        }
        if p.churn_events > 0 {
            out["churn"] = churn(&world, &groups, p.churn_events, p.events_per_pod_per_s, &mut churn_rng);
        }
        if !p.failover.is_empty() {
            let by_count = p.failover.iter().map(|&f| (format!("failed_{f}"), failover(&world, &groups, f, &mut failover_rng)));
            out["failover"] = Value::Object(by_count.collect());
        }
    }
    if p.capacity_search {
        world.tenant_hosts = placed;
        out["capacity"] = capacity(&mut world, p, layer, &mut capacity_rng);
    }
    if p.batching_joins > 0 {
        out["batching"] = batching(&world, p, &mut batching_rng)?;
    }
    out["seconds"] = json!(start.elapsed().as_secs_f64());
    Ok(out)
}

/// Figure 8: `failed` random aggregation switches down; per group, from a member drawn as the
/// sender, the mean stretch over the receivers reached and the share not reached.
fn failover(world: &World, groups: &[Group], failed: u32, rng: &mut Stream) -> Value {
    let f = Failures::draw(&world.tree, failed, rng);
    let (mut stretch, mut lost) = (Vec::with_capacity(groups.len()), Vec::with_capacity(groups.len()));
    let (mut three, mut five) = (0u64, 0u64);
    for g in groups {
        let sender = g.members[below(rng, g.members.len() as u64) as usize];
        let r = reach(&world.tree, &world.part, &f, g.tree.partition, &g.members, sender, rng);
        stretch.push(r.stretch);
        lost.push(f64::from(r.unreachable) / f64::from(r.receivers.max(1)));
        (three, five) = (three + u64::from(r.three_hop), five + u64::from(r.five_hop));
    }
    let n = groups.len().max(1) as f64;
    let summary = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
        json!({"mean": v.iter().sum::<f64>() / n, "p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": at(1.0)})
    };
    json!({
        "failed": failed,
        "failed_fraction": f64::from(failed) / f64::from(world.tree.aggrs()),
        "groups_stretched": stretch.iter().filter(|&&s| s > 1.0).count() as f64 / n,
        "groups_unreachable": lost.iter().filter(|&&u| u > 0.0).count() as f64 / n,
        "stretch": summary(&mut stretch),
        "unreachable": summary(&mut lost),
        "three_hop_detours": three,
        "five_hop_detours": five,
    })
}

fn group_stats(world: &World, groups: &[Group]) -> Value {
    let n = groups.len().max(1) as f64;
    let sizes: Vec<usize> = groups.iter().map(|g| g.members.len()).collect();
    let pods: Vec<u32> = groups.iter().map(|g| g.tree.pod_count()).collect();
    let (mut edge_sum, mut pod_sum) = (0u64, 0u64);
    for g in groups {
        // Member edge switches per member pod, over every (group, pod) pair.
        if g.tree.pods.is_empty() {
            edge_sum += g.tree.edges.len() as u64;
            pod_sum += 1;
        } else {
            edge_sum += g.tree.pods.iter().map(|&(_, m)| m.count_ones() as u64).sum::<u64>();
            pod_sum += g.tree.pods.len() as u64;
        }
    }
    let members: usize = sizes.iter().sum();
    json!({
        "count": groups.len(),
        "size_mean": members as f64 / n,
        "size_under_40": sizes.iter().filter(|&&s| s < 40).count() as f64 / n,
        "size_over_2000": sizes.iter().filter(|&&s| s > 2000).count() as f64 / n,
        "pods_mean": pods.iter().map(|&x| x as f64).sum::<f64>() / n,
        "pods_max": pods.iter().copied().max().unwrap_or(0),
        "multi_pod_fraction": pods.iter().filter(|&&x| x >= 2).count() as f64 / n,
        "edges_per_pod_mean": edge_sum as f64 / pod_sum.max(1) as f64,
        "subscriptions_per_host": members as f64 / world.tree.hosts() as f64,
    })
}

/// Algorithm 2 at every switch of `layer`; entries after, and the overhead on its downlinks.
fn aggregation(world: &World, groups: &[Group], layer: Layer, params: AggregationParams) -> Result<Value> {
    let switches = match layer {
        Layer::Edge => world.tree.edges(),
        Layer::Aggr => world.tree.aggrs(),
        Layer::Core => world.tree.cores(),
    } as usize;
    let mut local: Vec<Vec<LocalGroup>> = vec![Vec::new(); switches];
    for g in groups {
        for e in g.tree.entries(&world.tree, &world.part).filter(|e| e.layer == layer) {
            local[e.switch as usize].push(LocalGroup { ports: e.ports, rate: g.rate });
        }
    }
    let ports = world.tree.half();
    let mu = vec![0.0; ports as usize];
    let mut entries = Vec::with_capacity(switches);
    let mut links: Vec<(f64, f64)> = Vec::new();
    for groups in &local {
        let a = aggregate(ports, groups, &mu, params, &field("capacity"))?;
        entries.push(a.entries());
        links.extend(a.carried.iter().zip(&a.needed).filter(|(_, &n)| n > 0.0).map(|(&c, &n)| (c, n)));
    }
    let (carried, needed): (f64, f64) = links.iter().fold((0.0, 0.0), |(c, n), l| (c + l.0, n + l.1));
    let ratio = |&(c, n): &(f64, f64)| (c - n) / n;
    let link_mean = links.iter().map(ratio).sum::<f64>() / links.len().max(1) as f64;
    // The 1% of links with the highest traffic rate (carried), their mean overhead.
    let mut by_rate = links.clone();
    by_rate.sort_by(|a, b| b.0.total_cmp(&a.0));
    let top = &by_rate[..(by_rate.len().div_ceil(100)).max(1).min(by_rate.len())];
    Ok(json!({
        "layer": match layer { Layer::Edge => "edge", Layer::Aggr => "aggr", Layer::Core => "core" },
        "entries": layer_stats(&entries, params.capacity),
        "overhead_total": (carried - needed) / needed.max(f64::MIN_POSITIVE),
        "overhead_link_mean": link_mean,
        "overhead_top1pct": top.iter().map(ratio).sum::<f64>() / top.len().max(1) as f64,
        "links": links.len(),
    }))
}

/// Groups generated one by one until a switch exceeds the capacity (Figure 6). Three limits:
/// without aggregation (any switch), with aggregation (a switch of a layer not aggregated), and
/// with aggregation and one-port edge entries as unicast rules (§4.2, Figure 5c's "(m)E": the edge
/// layer then counts only entries with two or more ports; the unicast rules it needs are reported).
fn capacity(world: &mut World, p: &Params, aggregated: Option<Layer>, rng: &mut Stream) -> Value {
    let mut assigner = Assigner::new(p.n);
    let mut tables = Tables::new(&world.tree, p.capacity);
    let name = |l: Layer| match l {
        Layer::Core => "core",
        Layer::Aggr => "aggr",
        Layer::Edge => "edge",
    };
    let mut without: Option<(u32, Layer)> = None;
    let mut with: Option<(u32, Layer)> = None;
    let mut unicast: Option<(u32, Layer, u32)> = None;
    let mut generated = 0;
    while generated < p.capacity_limit {
        let g = world.group(rng, &mut assigner, p);
        for e in g.tree.entries(&world.tree, &world.part) {
            let n = tables.add(&e);
            let multi = tables.edge_multi[e.switch as usize];
            if n > p.capacity {
                if without.is_none() {
                    without = Some((generated, e.layer));
                }
                if with.is_none() && Some(e.layer) != aggregated {
                    with = Some((generated, e.layer));
                }
            }
            let over = if e.layer == Layer::Edge { multi > p.capacity } else { n > p.capacity };
            if unicast.is_none() && over && Some(e.layer) != aggregated {
                // The unicast rules the edge switches then hold: their one-port entries.
                let rules = tables.edge.iter().zip(&tables.edge_multi).map(|(a, m)| a - m).max().unwrap_or(0);
                unicast = Some((generated, e.layer, rules));
            }
        }
        generated += 1;
        if without.is_some() && (aggregated.is_none() || (with.is_some() && unicast.is_some())) {
            break;
        }
    }
    let report = |r: Option<(u32, Layer)>| match r {
        Some((n, l)) => json!({"groups": n, "limited_by": name(l), "at_limit": false}),
        None => json!({"groups": generated, "limited_by": null, "at_limit": true}),
    };
    let mut v = json!({ "without_aggregation": report(without) });
    if aggregated.is_some() {
        v["with_aggregation"] = report(with);
        v["with_unicast_edges"] = match unicast {
            Some((n, l, rules)) => json!({"groups": n, "limited_by": name(l), "at_limit": false, "unicast_rules_max": rules}),
            None => {
                let rules = tables.edge.iter().zip(&tables.edge_multi).map(|(a, m)| a - m).max().unwrap_or(0);
                json!({"groups": generated, "limited_by": null, "at_limit": true, "unicast_rules_max": rules})
            }
        };
    }
    v
}

fn rates(u: &Updates, events: u64) -> Value {
    let e = events.max(1) as f64;
    json!({
        "events": events,
        "edge": u.edge as f64 / e,
        "aggr": u.aggr as f64 / e,
        "core": u.core as f64 / e,
        "total": u.total() as f64 / e,
    })
}

/// Table 2: join/leave events spread over the groups in proportion to their sizes; and §4.3.2's
/// updates a second per switch at `events_per_pod` events a second in every pod.
fn churn(world: &World, groups: &[Group], events: u32, events_per_pod: f64, rng: &mut Stream) -> Value {
    let sizes: Vec<u32> = groups.iter().map(|g| g.members.len() as u32).collect();
    let picker = TenantPicker::new(&sizes);
    let mut per_group = vec![0u32; groups.len()];
    for _ in 0..events {
        per_group[picker.pick(rng)] += 1;
    }
    let (mut join, mut leave) = (Updates::default(), Updates::default());
    let (mut joins, mut leaves) = (0u64, 0u64);
    for (g, &count) in groups.iter().zip(&per_group) {
        if count == 0 {
            continue;
        }
        let hosts = &world.tenant_hosts[g.tenant as usize];
        let p = g.tree.partition;
        let mut members = g.members.clone();
        let mut position: HashMap<u32, usize> = members.iter().enumerate().map(|(i, &h)| (h, i)).collect();
        let mut fp = Footprint::default();
        for &h in &members {
            fp.join(&world.tree, &world.part, p, h);
        }
        for _ in 0..count {
            let full = members.len() == hosts.len();
            let is_join = !full && (members.len() <= 1 || unit(rng) < 0.5);
            if is_join {
                let h = loop {
                    let h = hosts[below(rng, hosts.len() as u64) as usize];
                    if !position.contains_key(&h) {
                        break h;
                    }
                };
                position.insert(h, members.len());
                members.push(h);
                join.add(fp.join(&world.tree, &world.part, p, h));
                joins += 1;
            } else {
                let i = below(rng, members.len() as u64) as usize;
                let h = members.swap_remove(i);
                position.remove(&h);
                if i < members.len() {
                    position.insert(members[i], i);
                }
                leave.add(fp.leave(&world.tree, &world.part, p, h));
                leaves += 1;
            }
        }
    }
    let mut all = join;
    all.add(leave);
    let n = (joins + leaves).max(1) as f64;
    let [edge, aggr, core] = update_load(&world.tree, events_per_pod, [all.edge as f64 / n, all.aggr as f64 / n, all.core as f64 / n]);
    json!({
        "join": rates(&join, joins),
        "leave": rates(&leave, leaves),
        "update_load": {"events_per_pod_per_s": events_per_pod, "edge": edge, "aggr": aggr, "core": core},
    })
}

/// §4.3.1: a tenant on every host of the first `batching_pods` pods; `batching_joins` joins.
fn batching(world: &World, p: &Params, rng: &mut Stream) -> Result<Value> {
    let tree = &world.tree;
    let hosts: Vec<u32> = (0..p.batching_pods * tree.hosts_per_pod()).collect();
    let n = p.batching_joins as usize;
    if n >= hosts.len() {
        return Err(bad(field("batching_joins"), format!("{n} joins need more than {n} hosts: the tenant has {}", hosts.len())));
    }
    let (mut seq, mut batched, mut next_join, mut next_leave) = (Updates::default(), Updates::default(), Updates::default(), Updates::default());
    let mut pool = hosts.clone();
    for _ in 0..p.batching_trials {
        for i in 0..n {
            let j = i + below(rng, (pool.len() - i) as u64) as usize;
            pool.swap(i, j);
        }
        let mut fp = Footprint::default();
        for &h in &pool[..n] {
            seq.add(fp.join(tree, &world.part, 0, h));
        }
        let before = GroupTree::build(tree, 0, &[]);
        let after = GroupTree::build(tree, 0, &pool[..n]);
        batched.add(batch_updates(tree, &world.part, &before, &after));
        let outsider = pool[n + below(rng, (pool.len() - n) as u64) as usize];
        next_join.add(fp.clone().join(tree, &world.part, 0, outsider));
        let member = pool[below(rng, n as u64) as usize];
        next_leave.add(fp.clone().leave(tree, &world.part, 0, member));
    }
    let per_join = (p.batching_trials as u64) * n as u64;
    Ok(json!({
        "joins": n,
        "hosts": hosts.len(),
        "unbatched": rates(&seq, per_join),
        "batched": rates(&batched, per_join),
        "next_join": rates(&next_join, p.batching_trials as u64),
        "next_leave": rates(&next_leave, p.batching_trials as u64),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Params {
        Params {
            k: 8,
            n: 4,
            rc: 4,
            ra: 2,
            tenants: 40,
            vm_median: 20,
            vm_max: 60,
            tail_tenants: 0,
            tail_min: 30,
            groups: 300,
            capacity: 100,
            churn_events: 2000,
            capacity_search: true,
            batching_joins: 30,
            batching_pods: 2,
            batching_trials: 20,
            ..Params::default()
        }
    }

    #[test]
    fn small_run_is_deterministic_and_consistent() {
        let mut a = evaluate(&small()).unwrap();
        let mut b = evaluate(&small()).unwrap();
        a["seconds"] = json!(0);
        b["seconds"] = json!(0);
        assert_eq!(a, b);
        // Every join and leave updates exactly one edge switch.
        assert_eq!(a["churn"]["join"]["edge"], 1.0);
        assert_eq!(a["churn"]["leave"]["edge"], 1.0);
        let events = a["churn"]["join"]["events"].as_u64().unwrap() + a["churn"]["leave"]["events"].as_u64().unwrap();
        assert_eq!(events, 2000);
        // §4.3.2's load: an edge switch sees its pod's 1,000 events a second over its k/2 = 4.
        assert_eq!(a["churn"]["update_load"]["edge"], 250.0);
        // Aggregation never leaves more entries than the capacity and never less traffic than needed.
        assert!(a["aggregation"]["entries"]["max"].as_u64().unwrap() <= 100);
        assert!(a["aggregation"]["overhead_total"].as_f64().unwrap() >= 0.0);
        // Batching never costs more than joining one by one.
        assert!(a["batching"]["batched"]["total"].as_f64().unwrap() <= a["batching"]["unbatched"]["total"].as_f64().unwrap());
    }

    /// §4.3.1 at the paper's scale, which our model reproduces from first principles: 300 joins
    /// over 4,608 hosts (192 edges, 8 pods) touch ≈154 edges (192·(1 − (1 − 300/4608)^24)),
    /// 8·3 aggregation and 9 core switches: (154 + 24 + 9)/300 ≈ 0.62 per join with batching
    /// (paper 0.62); without, 300 + 3·153 + 9·7 ≈ 822 updates, 2.74 per join (paper 2.78).
    #[test]
    fn batching_example_matches_the_paper() {
        let p = Params { groups: 0, batching_joins: 300, batching_trials: 100, ..Params::default() };
        let v = evaluate(&p).unwrap();
        let with = v["batching"]["batched"]["total"].as_f64().unwrap();
        let without = v["batching"]["unbatched"]["total"].as_f64().unwrap();
        assert!((with - 0.62).abs() < 0.02, "{with}");
        assert!((without - 2.74).abs() < 0.05, "{without}");
    }

    /// The capacity search draws from its own stream and the placement itself: the groups
    /// section before it changes nothing.
    #[test]
    fn capacity_does_not_depend_on_the_groups_section() {
        let a = evaluate(&Params { groups: 0, churn_events: 0, ..small() }).unwrap();
        let b = evaluate(&small()).unwrap();
        assert_eq!(a["capacity"], b["capacity"]);
        let c = &a["capacity"];
        let n = |k: &str| c[k]["groups"].as_u64().unwrap();
        assert!(n("without_aggregation") <= n("with_aggregation") && n("with_aggregation") <= n("with_unicast_edges"));
    }

    #[test]
    fn unknown_parameter_is_an_error_naming_it() {
        let e = evaluate_json(r#"{"groupz": 3}"#).unwrap_err().to_string();
        assert!(e.starts_with("multicast: unknown field `groupz`"), "{e}");
        let e = evaluate_json(r#"{"placement": "far"}"#).unwrap_err().to_string();
        assert!(e.starts_with("multicast.placement: unknown placement"), "{e}");
    }
}
