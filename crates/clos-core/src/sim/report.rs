//! Reading a finished run into a [`Report`] (`metrics`): the flow and link tables, the time
//! series and the summary, from the world's state when the run stopped.

use super::World;
use crate::metrics::{fairness, fct, payload_fraction, percentile, present_tiers, slowdown, tenants, FlowTable, LinkTable, Report, TimeSeries};
use crate::topology::{TIERS, TIER_HOPS};
use crate::transport::TcpParams;
use crate::units::{seconds, Time};
use serde_json::{json, Value};

/// A finished run and what it cost, ready to report.
pub struct RunOutput<'a> {
    pub world: &'a World,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub peak_memory: u64,
    pub params: &'a TcpParams,
}

impl RunOutput<'_> {
    pub fn report(&self, scenario: Value) -> Report {
        let w = self.world;
        let end = w.now;
        let n = w.flows.len();
        let flows = self.flow_table();
        let links = self.link_table();

        let mut fcts: Vec<u64> = (0..n).filter(|&i| flows.finished[i]).map(|i| flows.fct_ps[i]).collect();
        fcts.sort_unstable();
        let pct = |p: f64| percentile(&fcts, p).map(seconds);
        let fct_mean = (!fcts.is_empty()).then(|| fcts.iter().map(|&x| seconds(x)).sum::<f64>() / fcts.len() as f64);
        let samples: Vec<fct::Sample> = (0..n)
            .map(|i| fct::Sample {
                bytes: flows.bytes[i],
                fct_ps: flows.finished[i].then_some(flows.fct_ps[i]),
                slowdown: flows.finished[i].then_some(flows.slowdown[i]),
            })
            .collect();
        let out = &w.output;

        // Goodput over the active period: from the first flow start to the last completion (or
        // the end of the run, if some flows are unfinished).
        let first_start = w.flows.iter().map(|f| f.start).min().unwrap_or(0);
        let last_end: Time = if w.all_done() { w.finished.iter().flatten().copied().max().unwrap_or(end) } else { end };
        let active = last_end.saturating_sub(first_start);
        let delivered: u64 = w.delivered_bytes.iter().sum();
        let aggregate_bps = (active > 0).then(|| delivered as f64 * 8.0 / seconds(active));
        let t = &w.topo;
        let mut sends = vec![false; t.n_hosts];
        let mut recvs = vec![false; t.n_hosts];
        for f in &w.flows {
            sends[f.src as usize] = true;
            recvs[f.dst as usize] = true;
        }
        let ideal_bps: f64 =
            (0..t.n_hosts).filter(|&h| sends[h]).map(|h| t.ports[t.port_start[h] as usize].rate_bps as f64 * payload_fraction(self.params, recvs[h])).sum();
        let rates: Vec<f64> = (0..n)
            .map(|i| {
                let span = w.finished[i].unwrap_or(end).saturating_sub(w.flows[i].start);
                if span == 0 {
                    0.0
                } else {
                    w.delivered_bytes[i] as f64 * 8.0 / seconds(span)
                }
            })
            .collect();
        let c = &w.counters;
        let fraction = |k: usize| if n > 0 { k as f64 / n as f64 } else { 0.0 };
        let reordered = flows.reordered.iter().filter(|&&r| r > 0).count();
        let reordered_without_loss = flows.reordered.iter().zip(&flows.drops).filter(|&(&r, &d)| r > 0 && d == 0).count();
        let (dupacks_loss, dupacks_reordering) = w.receivers.iter().map(|r| r.dupacks_by_cause()).fold((0, 0), |(l, o), (a, b)| (l + a, o + b));
        let events_per_sec = if self.cpu_seconds > 0.0 { w.events as f64 / self.cpu_seconds } else { 0.0 };
        let mut summary = json!({
            "scenario": scenario,
            "stats": {
                "events": w.events,
                "events_per_sec": events_per_sec,
                "cpu_seconds": self.cpu_seconds,
                "wall_seconds": self.wall_seconds,
                "peak_memory_bytes": self.peak_memory,
                "simulated_seconds": seconds(end),
            },
            "packets": {"sent": c.sent, "delivered": c.delivered, "dropped": c.dropped, "in_flight": w.in_flight()},
            "flows": {
                "count": n,
                "finished": fcts.len(),
                "fct_mean_s": fct_mean,
                "fct_p50_s": pct(50.0),
                "fct_p99_s": pct(99.0),
                "fct_p999_s": pct(99.9),
                "fct_max_s": pct(100.0),
                "retransmits": flows.retransmits.iter().sum::<u64>(),
                "timeouts": flows.timeouts.iter().sum::<u64>(),
                "fast_recoveries": w.senders.iter().map(|s| s.stats.fast_recoveries).sum::<u64>(),
                // Window reductions for a full host queue (`[host] queue`, qdisc fifo).
                "local_congestion": w.senders.iter().map(|s| s.stats.local_congestion).sum::<u64>(),
                // Tail loss probes sent (`transport.tlp`; Linux's TCPLossProbes).
                "loss_probes": w.senders.iter().map(|s| s.stats.probes).sum::<u64>(),
                // DRILL §4 (Fig. 11a): the share of flows whose receiver sent any duplicate ACK.
                "with_dupacks": flows.dupacks.iter().filter(|&&d| d > 0).count(),
                "with_dupacks_fraction": if n > 0 { flows.dupacks.iter().filter(|&&d| d > 0).count() as f64 / n as f64 } else { 0.0 },
                "with_over_3_dupacks": flows.dupacks.iter().filter(|&&d| d > 3).count(),
                // Causes told apart (docs/measurements.md, "Reordering and loss").
                "reordered": reordered,
                "reordered_fraction": fraction(reordered),
                "reordered_without_loss_fraction": fraction(reordered_without_loss),
                "dupacks_loss": dupacks_loss,
                "dupacks_reordering": dupacks_reordering,
                "spurious_retransmits": flows.spurious_retransmits.iter().sum::<u64>(),
                "eifel_undos": w.senders.iter().map(|s| s.stats.spurious).sum::<u64>(),
            },
            "fct": fct::summary(&samples, out.short_flow.0, out.long_flow.0),
            "queueing": self.queueing_summary(&links),
            "queues": self.queue_summary(),
            "links": self.link_summary(&links),
            "services": self.service_summary(&flows),
            "tenants": self.tenant_summary(),
            "load_balancer": w.load_balancer_stats(),
            "reorder_shim": w.shim_stats().map(|(held, timeouts)| json!({"held": held, "timeouts": timeouts})),
            "failures": w.failure_summary(),
            "workload": w.workload_summary,
            "goodput": {
                "completion_time_s": w.all_done().then(|| seconds(active)),
                "delivered_bytes": delivered,
                "aggregate_bps": aggregate_bps,
                "ideal_bps": ideal_bps,
                "efficiency": aggregate_bps.map(|a| a / ideal_bps),
                "jain": fairness::jain(&rates),
            },
        });
        if let Some(directory) = w.directory_summary() {
            summary["directory"] = directory;
        }
        if let Some(service) = &w.service {
            summary["service"] = service.summary(end);
        }
        if let Some(multicast) = w.multicast_summary() {
            summary["multicast"] = multicast;
        }
        Report {
            summary,
            flows,
            links,
            timeseries: self.timeseries(),
            queues: w.recorder.queues.clone(),
            link_timeseries: w.recorder.link_bins.clone(),
            trace: w.trace.as_ref().map(|t| t.table()).unwrap_or_default(),
        }
    }

    fn flow_table(&self) -> FlowTable {
        let w = self.world;
        let mut flows = FlowTable::default();
        for (i, f) in w.flows.iter().enumerate() {
            let fin = w.finished[i];
            let s = &w.senders[i].stats;
            let mss = self.params.flow_mss(i);
            let ideal = slowdown::ideal_fct(&slowdown::shortest_path(&w.topo, w.routes(), f.src, f.dst), f.bytes, mss as u64);
            let fct = fin.map(|t| t - f.start);
            flows.id.push(i as u32);
            flows.src.push(f.src);
            flows.dst.push(f.dst);
            flows.service.push(w.services.get(f.service as usize).cloned().unwrap_or_default());
            flows.bytes.push(f.bytes);
            flows.mss.push(mss);
            flows.delivered.push(w.delivered_bytes[i]);
            flows.start_ps.push(f.start);
            flows.end_ps.push(fin.unwrap_or(0));
            flows.finished.push(fin.is_some());
            flows.fct_ps.push(fct.unwrap_or(0));
            flows.ideal_fct_ps.push(ideal);
            flows.slowdown.push(match fct {
                Some(x) if ideal > 0 => x as f64 / ideal as f64,
                _ => f64::NAN,
            });
            flows.retransmits.push(s.retransmits);
            flows.timeouts.push(s.timeouts);
            flows.dupacks.push(w.receivers[i].dupacks_sent);
            flows.out_of_order.push(w.receivers[i].out_of_order);
            flows.reordered.push(w.receivers[i].reordered);
            flows.spurious_retransmits.push(w.receivers[i].spurious);
            flows.drops.push(w.flow_drops[i] as u64);
        }
        flows
    }

    fn link_table(&self) -> LinkTable {
        let w = self.world;
        let t = &w.topo;
        let span = seconds(w.now);
        let mut links = LinkTable::default();
        for (i, p) in t.ports.iter().enumerate() {
            links.id.push(i as u32);
            links.src.push(t.nodes[p.from as usize].name.clone());
            links.dst.push(t.nodes[p.to as usize].name.clone());
            links.tier.push(t.tier(i as u32).to_string());
            links.rate_bps.push(p.rate_bps);
            let accepted = w.ports.accepted(i as u32);
            links.bytes.push(accepted.bytes);
            links.packets.push(accepted.packets);
            links.drops.push(w.ports.drops[i]);
            links.ecn_marks.push(w.ports.ecn_marks[i]);
            links.queueing_ps.push(accepted.queueing_ps);
            let sent = w.ports.sent_bytes(i as u32, w.now) as f64;
            links.utilisation.push(if span > 0.0 { sent * 8.0 / (p.rate_bps as f64 * span) } else { 0.0 });
        }
        links
    }

    /// Queueing delay and drops per link tier (DRILL Fig. 6c, 14c: hop 1, hop 2, last hop).
    fn queueing_summary(&self, links: &LinkTable) -> Value {
        let h = &self.world.ports.queueing;
        let tiers: Vec<Value> = present_tiers(links)
            .map(|(i, name)| {
                let of_tier = |v: &[u64]| -> u64 { (0..links.id.len()).filter(|&l| links.tier[l] == *name).map(|l| v[l]).sum() };
                let packets = of_tier(&links.packets);
                let drops = of_tier(&links.drops);
                let q = |p: f64| h.percentile(i, p).map(seconds);
                json!({
                    "tier": name,
                    "hop": TIER_HOPS[i],
                    "packets": packets,
                    "drops": drops,
                    "drop_fraction": if packets + drops > 0 { drops as f64 / (packets + drops) as f64 } else { 0.0 },
                    "mean_s": (packets > 0).then(|| seconds(of_tier(&links.queueing_ps)) / packets as f64),
                    "p50_s": q(50.0),
                    "p99_s": q(99.0),
                    "p999_s": q(99.9),
                    "max_s": (h.count(i) > 0).then(|| seconds(h.max(i))),
                })
            })
            .collect();
        json!({"tiers": tiers})
    }

    /// Queue-length samples per tier, and the spread across each switch's uplinks (DRILL Fig. 2).
    fn queue_summary(&self) -> Value {
        let w = self.world;
        let r = &w.recorder;
        let Some(interval) = r.queue_interval else { return Value::Null };
        let mut by_tier: Vec<Vec<u64>> = vec![Vec::new(); TIERS.len()];
        for (&l, &b) in r.queues.link.iter().zip(&r.queues.bytes) {
            by_tier[w.topo.tier_of(l)].push(b as u64);
        }
        let tiers: Vec<Value> = by_tier
            .iter_mut()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(i, v)| {
                v.sort_unstable();
                json!({
                    "tier": TIERS[i],
                    "mean_bytes": v.iter().sum::<u64>() as f64 / v.len() as f64,
                    "p50_bytes": percentile(v, 50.0),
                    "p99_bytes": percentile(v, 99.0),
                    "max_bytes": v.last(),
                })
            })
            .collect();
        let mut sd = r.uplink_stdev.clone();
        sd.sort_by(f64::total_cmp);
        let f = |p: f64| percentile(&sd, p);
        json!({
            "interval_s": seconds(interval),
            "samples": r.queues.time_ps.len(),
            "tiers": tiers,
            "uplink_stdev": {
                "mean_bytes": (!sd.is_empty()).then(|| sd.iter().sum::<f64>() / sd.len() as f64),
                "p50_bytes": f(50.0),
                "p99_bytes": f(99.0),
            },
        })
    }

    /// Utilisation per tier (over links, and over link-bins) and the uplink split's fairness.
    fn link_summary(&self, links: &LinkTable) -> Value {
        let r = &self.world.recorder;
        let tiers: Vec<Value> = present_tiers(links)
            .map(|(i, name)| {
                let mut u: Vec<f64> = (0..links.id.len()).filter(|&l| links.tier[l] == *name).map(|l| links.utilisation[l]).collect();
                u.sort_by(f64::total_cmp);
                let p = |q: f64| percentile(&u, q);
                json!({
                    "tier": name,
                    "links": u.len(),
                    "utilisation_mean": u.iter().sum::<f64>() / u.len() as f64,
                    "utilisation_p50": p(50.0),
                    "utilisation_p99": p(99.0),
                    "utilisation_max": u.last(),
                    "bin_utilisation_p50": r.utilisation_percentile(i, 50.0),
                    "bin_utilisation_p99": r.utilisation_percentile(i, 99.0),
                })
            })
            .collect();
        let mut split = serde_json::Map::new();
        for (i, name) in TIERS.iter().enumerate() {
            let mut j = r.split_jain[i].clone();
            if j.is_empty() {
                continue;
            }
            j.sort_by(f64::total_cmp);
            let p = |q: f64| percentile(&j, q);
            split.insert(
                name.to_string(),
                json!({"samples": j.len(), "mean": j.iter().sum::<f64>() / j.len() as f64, "min": j[0], "p1": p(1.0), "p50": p(50.0)}),
            );
        }
        json!({"bin_s": seconds(r.bin), "tiers": tiers, "split_jain": split})
    }

    /// Per service: flows, completions and goodput over its active period.
    fn service_summary(&self, flows: &FlowTable) -> Value {
        let w = self.world;
        let services: Vec<Value> = w
            .services
            .iter()
            .map(|name| {
                let mine: Vec<usize> = (0..flows.id.len()).filter(|&i| &flows.service[i] == name).collect();
                let delivered: u64 = mine.iter().map(|&i| flows.delivered[i]).sum();
                let start = mine.iter().map(|&i| flows.start_ps[i]).min();
                let end = if mine.iter().all(|&i| flows.finished[i]) { mine.iter().map(|&i| flows.end_ps[i]).max() } else { Some(w.now) };
                let span = start.zip(end).map(|(s, e)| e.saturating_sub(s)).filter(|&d| d > 0);
                json!({
                    "name": name,
                    "flows": mine.len(),
                    "finished": mine.iter().filter(|&&i| flows.finished[i]).count(),
                    "delivered_bytes": delivered,
                    "goodput_bps": span.map(|d| delivered as f64 * 8.0 / seconds(d)),
                })
            })
            .collect();
        Value::Array(services)
    }

    /// Per tenant: goodput, FCTs, and the Min-Max Ratio (`metrics/tenants.rs`); null without tenants.
    fn tenant_summary(&self) -> Value {
        let w = self.world;
        let flows: Vec<tenants::FlowRecord> = (0..w.flows.len())
            .map(|i| tenants::FlowRecord { service: w.flows[i].service, start: w.flows[i].start, delivered: w.delivered_bytes[i], end: w.finished[i] })
            .collect();
        tenants::summary(&w.tenancy, &flows, w.now)
    }

    /// Goodput per service per bin (every bin of the run, zeros included).
    fn timeseries(&self) -> TimeSeries {
        let w = self.world;
        let width = w.bin_width();
        let bins = (w.now.div_ceil(width) as usize).max(w.goodput_bins.iter().map(Vec::len).max().unwrap_or(0));
        let mut ts = TimeSeries::default();
        for b in 0..bins {
            for (s, series) in w.goodput_bins.iter().enumerate() {
                let bytes = series.get(b).copied().unwrap_or(0);
                ts.bin_start_ps.push(b as u64 * width);
                ts.service.push(w.services.get(s).cloned().unwrap_or_default());
                ts.bytes.push(bytes);
                ts.goodput_bps.push(bytes as f64 * 8.0 / seconds(width));
            }
        }
        ts
    }
}
