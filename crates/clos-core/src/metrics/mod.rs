//! What a run reports: per-flow and per-link tables, time series (goodput per service, link
//! bytes), queue samples, and a summary with the statistics the seed papers use: goodput
//! efficiency and Jain's index (VL2 §5.1), FCT and slowdown by size (DRILL, CONGA), per-hop
//! queueing and drops (DRILL Fig. 6c), uplink queue spread (DRILL Fig. 2), uplink split fairness
//! (VL2 §5.2) and reordering (DRILL §4). The tables and statistics are here; reading them off a
//! finished run is `sim::report`'s, so that measurement does not depend on the simulator.

pub mod fairness;
pub mod fct;
pub mod parquet;
pub mod recorder;
pub mod slowdown;
pub mod tenants;
pub mod trace;

use crate::packet::wire;
use crate::topology::TIERS;
use crate::transport::TcpParams;
use recorder::{LinkBins, QueueSamples};
use serde_json::Value;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
}

/// Column-oriented flow results (one entry per flow).
#[derive(Default, Debug, Clone)]
pub struct FlowTable {
    pub id: Vec<u32>,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    /// Name of the workload part (service) that made the flow.
    pub service: Vec<String>,
    pub bytes: Vec<u64>,
    /// The flow's MSS (`transport.mss`, or its own draw with `transport.mss_min`).
    pub mss: Vec<u32>,
    /// Payload bytes delivered in order to the receiver (less than `bytes` if unfinished).
    pub delivered: Vec<u64>,
    pub start_ps: Vec<u64>,
    pub end_ps: Vec<u64>,
    pub finished: Vec<bool>,
    pub fct_ps: Vec<u64>,
    /// FCT of this size alone on an empty fabric (see `slowdown`).
    pub ideal_fct_ps: Vec<u64>,
    /// fct / ideal; NaN if unfinished.
    pub slowdown: Vec<f64>,
    pub retransmits: Vec<u64>,
    pub timeouts: Vec<u64>,
    pub dupacks: Vec<u64>,
    pub out_of_order: Vec<u64>,
    /// First transmissions that arrived after a later segment of the flow (reordering).
    pub reordered: Vec<u64>,
    /// Retransmissions that reached a receiver which had the segment already.
    pub spurious_retransmits: Vec<u64>,
    /// The flow's packets (data and ACKs) lost anywhere.
    pub drops: Vec<u64>,
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
    /// Sum of the queueing delays of the packets the link accepted.
    pub queueing_ps: Vec<u64>,
    /// Share of the link's capacity used over the run.
    pub utilisation: Vec<f64>,
}

/// Payload delivered per service per bin, as columns.
#[derive(Default, Debug, Clone)]
pub struct TimeSeries {
    pub bin_start_ps: Vec<u64>,
    pub service: Vec<String>,
    pub bytes: Vec<u64>,
    pub goodput_bps: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub summary: Value,
    pub flows: FlowTable,
    pub links: LinkTable,
    pub timeseries: TimeSeries,
    pub queues: QueueSamples,
    pub link_timeseries: LinkBins,
    pub trace: trace::TraceTable,
}

impl Report {
    pub fn summary_f64(&self, section: &str, key: &str) -> Option<f64> {
        self.summary[section][key].as_f64()
    }
}

/// Nearest-rank percentile of sorted data.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
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

/// The tiers (index into `TIERS`, name) this fabric has, in the order a packet meets them.
pub(crate) fn present_tiers(links: &LinkTable) -> impl Iterator<Item = (usize, &'static str)> + '_ {
    TIERS.iter().copied().enumerate().filter(|(_, name)| links.tier.iter().any(|t| t == name))
}
