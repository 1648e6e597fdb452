//! Periodic observations of the fabric, made by calendar events outside the packet path so that
//! recording costs nothing per packet:
//!
//! - queue lengths of every switch port every `output.queue_interval` (DRILL samples every 10 us),
//!   and at each sample the standard deviation of the queue lengths across each switch's
//!   equal-cost uplinks (DRILL Fig. 2);
//! - every link's bytes serialised per `output.bin`, from which the utilisation distribution per tier and
//!   Jain's index of each switch's split across its uplinks per bin (VL2 §5.2, Fig. 12) follow.
//!   The per-link table itself is kept only if `output.link_timeseries` asks for it.

use crate::fabric::Ports;
use crate::histogram::rank_bucket;
use crate::topology::{Topology, TIERS};
use crate::units::{seconds, Time};

/// Utilisation histogram resolution: 1% steps (0..=100, plus one for rounding above 100%).
const UTIL_STEPS: usize = 102;

/// Queue samples as columns (one row per switch port per sample).
#[derive(Default, Debug, Clone)]
pub struct QueueSamples {
    pub time_ps: Vec<u64>,
    pub link: Vec<u32>,
    pub bytes: Vec<u32>,
}

/// Bytes each link sent per bin, as columns.
#[derive(Default, Debug, Clone)]
pub struct LinkBins {
    pub bin_start_ps: Vec<u64>,
    pub link: Vec<u32>,
    pub bytes: Vec<u64>,
    pub utilisation: Vec<f64>,
}

impl LinkBins {
    fn push(&mut self, bin_start: Time, link: u32, bytes: u64, utilisation: f64) {
        self.bin_start_ps.push(bin_start);
        self.link.push(link);
        self.bytes.push(bytes);
        self.utilisation.push(utilisation);
    }
}

/// How many packets the fabric has seen, for telling idle bins (`Recorder::close_bin`).
#[derive(Clone, Copy, Debug)]
pub struct Activity {
    /// Packets ever sent into the fabric (every packet alive was counted here when made).
    pub sent: u64,
    /// Packets alive now (queued or on a wire).
    pub alive: u64,
}

pub struct Recorder {
    pub queue_interval: Option<Time>,
    pub bin: Time,
    /// Switch ports, the ones whose queues can build (host NICs have unbounded stacks behind them).
    switch_ports: Vec<u32>,
    /// Per switch with two or more uplinks: its tier index and its uplink ports.
    uplinks: Vec<(usize, Vec<u32>)>,
    pub queues: QueueSamples,
    /// Standard deviation (bytes) of uplink queue lengths, per switch per sample.
    pub uplink_stdev: Vec<f64>,
    keep_link_bins: bool,
    pub link_bins: LinkBins,
    /// Start of the bin being filled, and each port's byte counter at that moment.
    bin_start: Time,
    sent_at_bin_start: Vec<u64>,
    /// Scratch for the counters at the bin's end (kept to allocate nothing per bin).
    sent_now: Vec<u64>,
    /// Utilisation per (tier, 1% step), counted over (link, bin).
    util_steps: Vec<u64>,
    /// Links per tier: what an idle bin adds to the 0% step.
    links_per_tier: [u64; TIERS.len()],
    /// Packets sent into the fabric by the start of the bin being filled, if none was alive
    /// then: the bin is idle if that count has not moved by its end (`Activity`).
    quiet_since: Option<u64>,
    /// Jain's index of the uplink split per (switch, bin with traffic), by the uplinks' tier.
    pub split_jain: Vec<Vec<f64>>,
    /// The ports whose bytes each bin reads: all, or a partition's (`keep_only`).
    read: Vec<u32>,
    /// Whether a bin may be told idle from the packet counts alone (`Activity`).
    idle_shortcut: bool,
}

impl Recorder {
    /// `horizon` is when the run stops at the latest: the tables are sized for it up front (up to
    /// a cap), so that recording allocates nothing while the simulation runs.
    pub fn new(t: &Topology, queue_interval: Option<Time>, bin: Time, keep_link_bins: bool, horizon: Time) -> Recorder {
        let n = t.ports.len() as u32;
        let switch_ports = (0..n).filter(|&p| !t.is_host(t.ports[p as usize].from)).collect();
        let uplinks = (t.n_hosts as u32..t.nodes.len() as u32)
            .map(|s| t.ports_of(s).filter(|&p| t.is_uplink(p)).collect::<Vec<_>>())
            .filter(|ups| ups.len() >= 2)
            .map(|ups| (t.tier_of(ups[0]), ups))
            .collect();
        let mut links_per_tier = [0; TIERS.len()];
        for p in 0..n {
            links_per_tier[t.tier_of(p)] += 1;
        }
        let mut r = Recorder {
            queue_interval,
            bin,
            switch_ports,
            uplinks,
            queues: QueueSamples::default(),
            uplink_stdev: Vec::new(),
            keep_link_bins,
            link_bins: LinkBins::default(),
            bin_start: 0,
            sent_at_bin_start: vec![0; n as usize],
            sent_now: vec![0; n as usize],
            util_steps: vec![0; TIERS.len() * UTIL_STEPS],
            links_per_tier,
            quiet_since: Some(0),
            split_jain: vec![Vec::new(); TIERS.len()],
            read: (0..n).collect(),
            idle_shortcut: true,
        };
        r.reserve(horizon);
        r
    }

    /// Record only the ports `mine` keeps: a partition's in a parallel run (`sim/parallel.rs`),
    /// whose worlds' records are merged afterwards. Every bin is then read in full: a port may
    /// still be sending packets it handed to another partition, which are alive there, not here.
    pub fn keep_only(&mut self, t: &Topology, mine: impl Fn(u32) -> bool) {
        self.switch_ports.retain(|&p| mine(p));
        self.uplinks.retain(|(_, ups)| mine(ups[0]));
        self.read.retain(|&p| mine(p));
        self.links_per_tier = [0; TIERS.len()];
        for &p in &self.read {
            self.links_per_tier[t.tier_of(p)] += 1;
        }
        self.idle_shortcut = false;
    }

    /// Take in the records of another partition's world (`sim/merge.rs`): rows in the order a
    /// whole run writes them (by time, then port), counts added.
    pub fn absorb(&mut self, other: &Recorder) {
        let q = &mut self.queues;
        q.time_ps.extend(&other.queues.time_ps);
        q.link.extend(&other.queues.link);
        q.bytes.extend(&other.queues.bytes);
        self.uplink_stdev.extend(&other.uplink_stdev);
        let l = &mut self.link_bins;
        l.bin_start_ps.extend(&other.link_bins.bin_start_ps);
        l.link.extend(&other.link_bins.link);
        l.bytes.extend(&other.link_bins.bytes);
        l.utilisation.extend(&other.link_bins.utilisation);
        for (a, b) in self.util_steps.iter_mut().zip(&other.util_steps) {
            *a += b;
        }
        for (a, b) in self.split_jain.iter_mut().zip(&other.split_jain) {
            a.extend(b);
        }
    }

    /// Put the merged rows in a whole run's order (after the last `absorb`).
    pub fn sort_rows(&mut self) {
        let q = &mut self.queues;
        let mut order: Vec<usize> = (0..q.time_ps.len()).collect();
        order.sort_by_key(|&i| (q.time_ps[i], q.link[i]));
        *q = QueueSamples { time_ps: permuted(&q.time_ps, &order), link: permuted(&q.link, &order), bytes: permuted(&q.bytes, &order) };
        let l = &mut self.link_bins;
        let mut order: Vec<usize> = (0..l.link.len()).collect();
        order.sort_by_key(|&i| (l.bin_start_ps[i], l.link[i]));
        *l = LinkBins {
            bin_start_ps: permuted(&l.bin_start_ps, &order),
            link: permuted(&l.link, &order),
            bytes: permuted(&l.bytes, &order),
            utilisation: permuted(&l.utilisation, &order),
        };
    }

    fn reserve(&mut self, horizon: Time) {
        /// Rows reserved per table at most; a longer run grows its tables as it goes.
        const CAP: u64 = 1 << 24;
        let rows = |per_step: usize, step: Time| (per_step as u64 * (horizon / step + 1)).min(CAP) as usize;
        if let Some(interval) = self.queue_interval {
            let n = rows(self.switch_ports.len(), interval);
            self.queues.time_ps.reserve(n);
            self.queues.link.reserve(n);
            self.queues.bytes.reserve(n);
            self.uplink_stdev.reserve(rows(self.uplinks.len(), interval));
        }
        let mut switches = [0; TIERS.len()];
        for (tier, _) in &self.uplinks {
            switches[*tier] += 1;
        }
        for (v, n) in self.split_jain.iter_mut().zip(switches) {
            v.reserve(rows(n, self.bin));
        }
        if self.keep_link_bins {
            let n = rows(self.sent_now.len(), self.bin);
            self.link_bins.bin_start_ps.reserve(n);
            self.link_bins.link.reserve(n);
            self.link_bins.bytes.reserve(n);
            self.link_bins.utilisation.reserve(n);
        }
    }

    /// Record every switch port's queue length now (its class queues too), and the spread across
    /// each switch's uplinks.
    pub fn sample_queues(&mut self, ports: &Ports, now: Time) {
        for &p in &self.switch_ports {
            self.queues.time_ps.push(now);
            self.queues.link.push(p);
            self.queues.bytes.push(ports.occupancy(p, now).min(u32::MAX as u64) as u32);
        }
        for (_, ups) in &self.uplinks {
            let (sum, sq) = moments(ups.iter().map(|&p| ports.occupancy(p, now) as f64));
            let n = ups.len() as f64;
            let mean = sum / n;
            self.uplink_stdev.push((sq / n - mean * mean).max(0.0).sqrt());
        }
    }

    /// Close the bin that ends `now` (a full bin, or the run's last partial one). `activity`
    /// is the fabric's packet count now: a bin that began with no packet alive and saw none
    /// sent was idle, and is counted without reading the ports (`close_idle_bin`).
    pub fn close_bin(&mut self, ports: &Ports, now: Time, activity: Activity) {
        let width = now.saturating_sub(self.bin_start);
        if width == 0 {
            return;
        }
        let idle = self.quiet_since == Some(activity.sent);
        self.quiet_since = (self.idle_shortcut && activity.alive == 0).then_some(activity.sent);
        if idle {
            self.close_idle_bin(now);
            return;
        }
        // Bytes serialised during the bin, not accepted: a deep host queue accepts a window at
        // once, but the link can only send at its rate.
        // Never below the last bin's: sent bytes fall back while a host's software wait is
        // pending (`Ports::sent_bytes`), and are counted when they are sent.
        for (p, (s, &last)) in self.sent_now.iter_mut().zip(&self.sent_at_bin_start).enumerate() {
            *s = ports.sent_bytes(p as u32, now).max(last);
        }
        let (sent, before) = (&self.sent_now, &self.sent_at_bin_start);
        let delta = |p: usize| sent[p] - before[p];
        for &p in &self.read {
            let p = p as usize;
            let bytes = delta(p);
            let util = bytes as f64 * 8.0 / (ports.rate_bps[p] as f64 * seconds(width));
            let step = ((util * 100.0).round() as usize).min(UTIL_STEPS - 1);
            self.util_steps[ports.tier(p as u32) * UTIL_STEPS + step] += 1;
            if self.keep_link_bins {
                self.link_bins.push(self.bin_start, p as u32, bytes, util);
            }
        }
        for (tier, ups) in &self.uplinks {
            // Jain's index (sum x)^2 / (n sum x^2), as `fairness::jain`, without a temporary.
            let (sum, sq) = moments(ups.iter().map(|&p| delta(p as usize) as f64));
            if sq > 0.0 {
                self.split_jain[*tier].push(sum * sum / (ups.len() as f64 * sq));
            }
        }
        std::mem::swap(&mut self.sent_now, &mut self.sent_at_bin_start);
        self.bin_start = now;
    }

    /// `close_bin` for a bin in which no packet existed: every link sent nothing, and its
    /// counter is where it was at the bin's start. Without this, a run whose stop lies far past
    /// its last packet spent its time here, reading every port once per bin (B3 stopped at
    /// 100 s: 56 CPU s, against 9 for its packets). Gives exactly what the full pass would.
    fn close_idle_bin(&mut self, now: Time) {
        for (tier, &links) in self.links_per_tier.iter().enumerate() {
            self.util_steps[tier * UTIL_STEPS] += links;
        }
        if self.keep_link_bins {
            for &p in &self.read {
                self.link_bins.push(self.bin_start, p, 0, 0.0);
            }
        }
        // Jain's index is taken only over bins with traffic: nothing to add.
        self.bin_start = now;
    }

    /// The `p`-th percentile of link utilisation in `tier` over (link, bin), in 1% steps.
    pub fn utilisation_percentile(&self, tier: usize, p: f64) -> Option<f64> {
        rank_bucket(&self.util_steps[tier * UTIL_STEPS..(tier + 1) * UTIL_STEPS], p).map(|(step, _)| step as f64 / 100.0)
    }
}

/// `column`'s values in `order`.
fn permuted<T: Copy>(column: &[T], order: &[usize]) -> Vec<T> {
    order.iter().map(|&i| column[i]).collect()
}

/// Sum and sum of squares.
fn moments(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((0.0, 0.0), |(s, q), x| (s + x, q + x * x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::Rate;

    fn fabric() -> (Topology, Ports) {
        let t =
            build(&LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 2, links_per_pair: 1 }, Rate(10_000_000_000), Rate(10_000_000_000), 1_000_000).unwrap();
        let p = Ports::new(&t, 100_000, None);
        (t, p)
    }

    const BIN: Time = 1_000_000;

    /// An idle bin counted without reading the ports gives exactly what reading them gives.
    #[test]
    fn idle_bins_count_as_the_full_pass_would() {
        let (t, ports) = fabric();
        let mut quick = Recorder::new(&t, None, BIN, true, 10 * BIN);
        let mut full = Recorder::new(&t, None, BIN, true, 10 * BIN);
        for b in 1..=3 {
            quick.close_bin(&ports, b * BIN, Activity { sent: 0, alive: 0 });
            // A packet alive at every bin's start: never idle, so every port is read.
            full.close_bin(&ports, b * BIN, Activity { sent: 0, alive: 1 });
        }
        assert_eq!(quick.util_steps, full.util_steps);
        assert_eq!(quick.util_steps.iter().sum::<u64>(), 3 * t.ports.len() as u64);
        let rows = |r: &Recorder| (r.link_bins.bin_start_ps.clone(), r.link_bins.link.clone(), r.link_bins.bytes.clone(), r.link_bins.utilisation.clone());
        assert_eq!(rows(&quick), rows(&full));
        assert_eq!(quick.bin_start, full.bin_start);
    }

    /// A packet sent and gone within one bin leaves no packet alive at either end of it; the
    /// count of packets sent still tells the bin was not idle.
    #[test]
    fn a_bin_with_a_packet_sent_and_gone_is_not_idle() {
        let (t, mut ports) = fabric();
        let mut r = Recorder::new(&t, None, BIN, true, 10 * BIN);
        r.close_bin(&ports, BIN, Activity { sent: 0, alive: 0 });
        ports.enqueue(0, 1000, false, BIN + 1, true);
        r.close_bin(&ports, 2 * BIN, Activity { sent: 1, alive: 0 });
        let second: u64 = r.link_bins.bytes[t.ports.len()..].iter().sum();
        assert_eq!(second, 1000);
    }
}
