//! What a run reports: per-flow and per-link tables, the goodput time series, and a summary
//! with the statistics the VL2 evaluation uses (goodput efficiency, Jain's fairness index).

pub mod fairness;

use crate::packet::wire;
use crate::sim::World;
use crate::transport::TcpParams;
use crate::units::{seconds, Time};
use serde_json::{json, Value};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
}

pub struct RunOutput<'a> {
    pub world: &'a World,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub peak_memory: u64,
    pub params: &'a TcpParams,
}

/// Column-oriented flow results (one entry per flow).
#[derive(Default, Debug, Clone)]
pub struct FlowTable {
    pub id: Vec<u32>,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub bytes: Vec<u64>,
    /// Payload bytes delivered in order to the receiver (less than `bytes` if unfinished).
    pub delivered: Vec<u64>,
    pub start_ps: Vec<u64>,
    pub end_ps: Vec<u64>,
    pub finished: Vec<bool>,
    pub fct_ps: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub timeouts: Vec<u64>,
    pub dupacks: Vec<u64>,
    pub out_of_order: Vec<u64>,
}

/// Column-oriented link results (one entry per directed link).
#[derive(Default, Debug, Clone)]
pub struct LinkTable {
    pub id: Vec<u32>,
    pub src: Vec<String>,
    pub dst: Vec<String>,
    pub tier: Vec<String>,
    pub rate_bps: Vec<u64>,
    pub bytes: Vec<u64>,
    pub packets: Vec<u64>,
    pub drops: Vec<u64>,
    pub ecn_marks: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub summary: Value,
    pub flows: FlowTable,
    pub links: LinkTable,
    pub goodput_bin_start_ps: Vec<u64>,
    pub goodput_bytes: Vec<u64>,
}

impl Report {
    pub fn summary_f64(&self, section: &str, key: &str) -> Option<f64> {
        self.summary[section][key].as_f64()
    }
}

/// Nearest-rank percentile of sorted data.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// Payload share of a host link's capacity when it sends full segments and, if it also
/// receives, carries one ACK per `delayed_ack` segments the other way (VL2 §5.1 computes its
/// ideal goodput from header overheads the same way; encapsulation is *not* part of the ideal,
/// since VL2 counts it as a cost of the design).
pub fn payload_fraction(p: &TcpParams, also_receives: bool) -> f64 {
    let data = wire::frame(p.mss as u64, 0) as f64;
    let ack = if also_receives { wire::frame(0, 0) as f64 / p.delayed_ack as f64 } else { 0.0 };
    p.mss as f64 / (data + ack)
}

impl RunOutput<'_> {
    pub fn report(&self, scenario: Value) -> Report {
        let w = self.world;
        let end = w.now;
        let n = w.flows.len();
        let mut flows = FlowTable::default();
        for (i, f) in w.flows.iter().enumerate() {
            let fin = w.finished[i];
            let s = &w.senders[i].stats;
            flows.id.push(i as u32);
            flows.src.push(f.src);
            flows.dst.push(f.dst);
            flows.bytes.push(f.bytes);
            flows.delivered.push(w.delivered_bytes[i]);
            flows.start_ps.push(f.start);
            flows.end_ps.push(fin.unwrap_or(0));
            flows.finished.push(fin.is_some());
            flows.fct_ps.push(fin.map_or(0, |t| t - f.start));
            flows.retransmits.push(s.retransmits);
            flows.timeouts.push(s.timeouts);
            flows.dupacks.push(w.receivers[i].dupacks_sent);
            flows.out_of_order.push(w.receivers[i].out_of_order);
        }
        let mut links = LinkTable::default();
        let t = &w.topo;
        for (i, p) in t.ports.iter().enumerate() {
            links.id.push(i as u32);
            links.src.push(t.nodes[p.from as usize].name.clone());
            links.dst.push(t.nodes[p.to as usize].name.clone());
            links.tier.push(t.tier(i as u32).to_string());
            links.rate_bps.push(p.rate_bps);
            links.bytes.push(w.ports.tx_bytes[i]);
            links.packets.push(w.ports.tx_packets[i]);
            links.drops.push(w.ports.drops[i]);
            links.ecn_marks.push(w.ports.ecn_marks[i]);
        }

        let mut fcts: Vec<u64> = (0..n).filter(|&i| flows.finished[i]).map(|i| flows.fct_ps[i]).collect();
        fcts.sort_unstable();
        let pct = |p: f64| percentile(&fcts, p).map(seconds);
        let fct_mean = (!fcts.is_empty()).then(|| fcts.iter().map(|&x| seconds(x)).sum::<f64>() / fcts.len() as f64);

        // Goodput over the active period: from the first flow start to the last completion (or
        // the end of the run, if some flows are unfinished).
        let first_start = w.flows.iter().map(|f| f.start).min().unwrap_or(0);
        let last_end: Time = if w.all_done() { w.finished.iter().flatten().copied().max().unwrap_or(end) } else { end };
        let active = last_end.saturating_sub(first_start);
        let delivered: u64 = w.delivered_bytes.iter().sum();
        let aggregate_bps = (active > 0).then(|| delivered as f64 * 8.0 / seconds(active));
        let mut sends = vec![false; t.n_hosts];
        let mut recvs = vec![false; t.n_hosts];
        for f in &w.flows {
            sends[f.src as usize] = true;
            recvs[f.dst as usize] = true;
        }
        let ideal_bps: f64 = (0..t.n_hosts)
            .filter(|&h| sends[h])
            .map(|h| t.ports[t.port_start[h] as usize].rate_bps as f64 * payload_fraction(self.params, recvs[h]))
            .sum();
        let rates: Vec<f64> = (0..n)
            .map(|i| {
                let span = w.finished[i].unwrap_or(end).saturating_sub(w.flows[i].start);
                if span == 0 { 0.0 } else { w.delivered_bytes[i] as f64 * 8.0 / seconds(span) }
            })
            .collect();
        let c = &w.counters;
        let events_per_sec = if self.cpu_seconds > 0.0 { w.events as f64 / self.cpu_seconds } else { 0.0 };
        let summary = json!({
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
                // DRILL §4 (Fig. 11a): the share of flows whose receiver sent any duplicate ACK.
                "with_dupacks": flows.dupacks.iter().filter(|&&d| d > 0).count(),
                "with_dupacks_fraction": if n > 0 { flows.dupacks.iter().filter(|&&d| d > 0).count() as f64 / n as f64 } else { 0.0 },
                "with_over_3_dupacks": flows.dupacks.iter().filter(|&&d| d > 3).count(),
                "spurious_retransmits": w.senders.iter().map(|s| s.stats.spurious).sum::<u64>(),
            },
            "load_balancer": w.load_balancer_stats(),
            "reorder_shim": w.shim_stats().map(|(held, timeouts)| json!({"held": held, "timeouts": timeouts})),
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
        let goodput_bin_start_ps = (0..w.goodput_bins.len() as u64).map(|b| b * w.bin_width()).collect();
        Report { summary, flows, links, goodput_bin_start_ps, goodput_bytes: w.goodput_bins.clone() }
    }
}
