//! The memory guard: what a run will hold, estimated from the scenario's fields before anything
//! is built, and one error naming the field when that cannot fit in the memory available.
//!
//! A scenario can be valid field by field and still ask for more than any machine holds: a
//! shuffle over 31,600 hosts is 10^9 flows, a periodic workload 1 ps apart is 10^12, queue
//! samples every 10 ns over a second are 10^8 samples of every switch port. Such a run would
//! allocate for seconds or minutes and then abort with the allocator's `memory allocation of N
//! bytes failed` and a backtrace. [`guard_fabric`] runs before the fabric is built
//! ([`TopologySpec`]'s normalisation) and [`guard`] at the end of
//! [`Scenario::normalize`], so `clos validate` and `clos run` refuse the same scenarios, in
//! microseconds: every count here is arithmetic on the fields (a host range is counted, never
//! expanded), and a flows file is only counted line by line.
//!
//! The estimate is a sum of items, each a count times a cost per item ([`cost`]); the costs are
//! slopes of the peak resident memory of whole `clos run`s (the Rust core, the tables handed to
//! Python and the saved files) between two sizes of one scenario, so that they hold what a real
//! run holds. A sum of peaks is above the true peak where phases do not overlap (the weighted
//! splits' distances are freed before the flows' results are made), so the estimate leans high.
//!
//! The budget is the memory the machine has available now (`MemAvailable` in `/proc/meminfo`;
//! [`DEFAULT_BUDGET`] where that cannot be read), or less where the process's address-space
//! limit or its container's memory limit leaves less ([`Budget::of_this_machine`]); or
//! `CLOS_MEMORY_BUDGET` (a byte size such as `64GB`) where the user sets it, to run a large
//! scenario knowingly or to leave room for other work. Limits the simulator cannot go past
//! whatever the memory (hosts, 32-bit ids) are checked whether or not the budget is overridden.

use super::{Scenario, Stop, Striping, TopologyKind, TopologySpec};
use crate::error::{bad, Result};
use crate::topology::fat_tree;
use crate::units::{parse_bytes, Duration, Time, PS_PER_S};
use crate::workload::hosts::{Concurrency, HostSet};
use crate::workload::spec::{WorkloadKind, WorkloadSpec};

/// The environment variable that replaces the machine's available memory as the budget.
pub const BUDGET_VARIABLE: &str = "CLOS_MEMORY_BUDGET";

/// The budget where `/proc/meminfo` cannot be read (not Linux, or a sandbox): 8 GB, what a
/// laptop can usually spare.
pub const DEFAULT_BUDGET: u64 = 8_000_000_000;

/// The most hosts a fabric may have, whatever its kind.
pub const MAX_HOSTS: u64 = 1 << 20;

/// Bytes per item, with how each was measured: the slope of peak resident memory (`/usr/bin/time
/// -f %M`) of `clos run -q` between two sizes of one scenario, on x86-64 Linux, Python 3.11.
/// Where an item could not be isolated so, its cost is the size of what holds it, and says so.
pub mod cost {
    /// A host, beyond the two ports of its link: its node, name, ToR entries and NIC state.
    /// Two leaves of 50,000 and 200,000 hosts: 1,300 B a host; with 5 leaves of 2,000 and 12,000,
    /// 1,190 B; less two ports, about 180 B.
    pub const HOST: u64 = 180;
    /// Packets a busy host's traffic keeps alive (queued or on a wire), each a slot of the
    /// packet pool: between what a leaf-spine permutation of 200 KB flows keeps, about 25 (the
    /// slope of 1,000 leaves x 30 and x 100 hosts was 2.2 KB a host above its other items), and
    /// benchmark B2's DCTCP permutation of long flows, about 110 (docs/performance.md). The pool
    /// reserves 128 a host (`sim::World::new`), but a page of it is only resident once used.
    pub const PACKETS_PER_HOST: u64 = 64;
    /// A packet's slot in the pool.
    pub const PACKET: u64 = std::mem::size_of::<crate::packet::Packet>() as u64;
    /// A directed link (an output port): its queue, counters, routing state, and its row in the
    /// links table. 40 leaves x 40 spines with 20 and with 80 links a pair (64,080 and 256,080
    /// ports): 561 B a port.
    pub const PORT: u64 = 560;
    /// A flow: its spec, sender, receiver and timers, its start event, and its row in the flows
    /// table. A shuffle of 300 and of 600 hosts (89,700 and 359,400 flows of 1 MB): 894 B a flow
    /// when none has started, 957 B when each has sent its first window.
    pub const FLOW: u64 = 960;
    /// A routing table entry (a switch toward a ToR): the installed group id, its span, and the
    /// version being computed, 3 x 4 B (the size of what holds it; 1,000 and 3,000 leaves under
    /// one spine, 1 and 9 million entries, measured 9 B an entry besides the distances).
    pub const ROUTE_ENTRY: u64 = 12;
    /// A routing table entry's split, and its copy being computed, for the schemes that weigh
    /// ports (WCMP, Presto, LocalFlow, DRILL): 2 x 4 B (the size of what holds it).
    pub const SPLIT_ENTRY: u64 = 8;
    /// A hop distance from a ToR to a node, kept for every ToR while the weighted splits are
    /// computed (`routing::Routes::tables`; other schemes drop each ToR's after its row): a
    /// `u32` (1,000 leaves of 50 and of 200 hosts, when every scheme kept them: 649 MB more for
    /// 600 MB of distances and 180 MB of hosts, so a little less than 4 B).
    pub const DISTANCE: u64 = 4;
    /// A queue sample of one switch port (`output.queue_interval`), with its share of the
    /// uplink spread samples. 12 switch ports sampled every 1 us for 100 ms and for 400 ms
    /// (1.2 and 4.8 million rows): 29 B a row.
    pub const QUEUE_SAMPLE: u64 = 29;
    /// One link's bytes in one time bin (`output.link_timeseries`). 16 ports in 1 us bins for
    /// 100 ms and for 400 ms (1.6 and 6.4 million rows): 61 B a row.
    pub const LINK_BIN: u64 = 61;
    /// Jain's index of one switch's uplink split in one bin, and a service's goodput in one
    /// bin: an `f64` or `u64` each (the size of what holds it).
    pub const BIN_VALUE: u64 = 8;
    /// A row of the packet trace (`output.trace`). One traced flow of 20 MB and of 80 MB
    /// (54,792 and 219,176 rows): 156 B a row.
    pub const TRACE_ROW: u64 = 156;
    /// Trace rows a segment makes: `send`, `arrive`, `ack_send`, `ack` (as counted in those runs).
    pub const TRACE_ROWS_PER_SEGMENT: u64 = 4;
}

/// A fabric's counts, from its parameters alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FabricSize {
    pub hosts: u64,
    pub switches: u64,
    pub tors: u64,
    /// Directed links: two per physical link.
    pub ports: u64,
    /// Switches with two or more uplinks, whose split the recorder scores in every bin.
    pub split_switches: u64,
}

impl FabricSize {
    /// The counts of the fabric `t` describes, or `None` where its parameters are ones its
    /// builder refuses (which then says why). `t` is normalised as far as its kind's defaults
    /// (`TopologySpec::normalize` calls [`guard_fabric`] just before building). Link overrides
    /// count as added links (an upper bound: one that removes links is counted as adding).
    pub fn of(t: &TopologySpec) -> Option<FabricSize> {
        let n = |v: Option<u32>| v.map(u64::from).filter(|&v| v > 0);
        let (hosts, switches, tors, links, split_switches) = match t.kind {
            TopologyKind::LeafSpine => {
                let (leaves, spines, per_leaf, per_pair) = (n(t.leaves)?, n(t.spines)?, n(t.hosts_per_leaf)?, n(t.links_per_pair)?);
                let imbalanced = t.striping == Some(Striping::Imbalanced);
                let hosts = leaves.saturating_mul(per_leaf);
                let uplinks = spines.saturating_mul(per_pair).saturating_add(if imbalanced { 2 } else { 0 });
                let links = hosts.saturating_add(leaves.saturating_mul(uplinks));
                (hosts, leaves + spines, leaves, links, if uplinks >= 2 { leaves } else { 0 })
            }
            TopologyKind::FatTree => {
                let (k, removed) = (t.k?, t.remove_cores.unwrap_or(0));
                let h = k / 2;
                if k < 2 || k % 2 == 1 || k > 64 || removed >= h * h || removed / h >= h {
                    return None;
                }
                let kept = fat_tree::cores_per_group(k, removed);
                let (k, h) = (u64::from(k), u64::from(h));
                let cores: u64 = kept.iter().map(|&c| u64::from(c)).sum();
                let hosts = k * h * h;
                // Host links, edge-aggregation links, and each aggregation switch to its group.
                let links = hosts + k * h * h + k * cores;
                let split_aggs = k * kept.iter().filter(|&&c| c >= 2).count() as u64;
                (hosts, 2 * k * h + cores, k * h, links, if h >= 2 { k * h } else { 0 } + split_aggs)
            }
            TopologyKind::Vl2 => {
                let (tors, per_tor, aggs, ints) = (n(t.tors)?, n(t.servers_per_tor)?, n(t.aggs)?, n(t.intermediates)?);
                if aggs < 2 {
                    return None;
                }
                let hosts = tors.saturating_mul(per_tor);
                // VL2 §4.1: two uplinks per ToR; aggregation and intermediate switches fully joined.
                let links = hosts.saturating_add(2 * tors).saturating_add(aggs.saturating_mul(ints));
                (hosts, tors + aggs + ints, tors, links, tors + if ints >= 2 { aggs } else { 0 })
            }
        };
        let added: u64 = t.links.iter().flatten().map(|o| o.count.map_or(0, u64::from)).sum();
        let ports = links.saturating_add(added).saturating_mul(2);
        Some(FabricSize { hosts, switches, tors, ports, split_switches })
    }

    /// Output ports of switches: every port but the hosts' own.
    pub fn switch_ports(&self) -> u64 {
        self.ports.saturating_sub(self.hosts)
    }
}

/// One line of an estimate: a count of something and the bytes it takes, with the field that
/// sets the count and how to lower it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub of: Of,
    pub field: String,
    /// What is counted, for the error: "4,000 flows (every host to every other of 64)".
    pub what: String,
    /// How many of what is counted, for the limits that are not about memory.
    pub count: u64,
    pub bytes: u64,
    /// How to make it smaller, for the error.
    pub fix: String,
}

/// What an [`Item`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Of {
    /// Hosts, ports and routing state (counting hosts, or route entries).
    Fabric,
    /// Flows made before the run starts.
    Flows,
    /// Bytes of a file read whole.
    Text,
    /// Rows of a table the run records.
    Rows,
}

/// What a run will hold in memory, item by item.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    pub items: Vec<Item>,
}

impl Footprint {
    pub fn total(&self) -> u64 {
        self.items.iter().fold(0, |sum, i| sum.saturating_add(i.bytes))
    }

    fn push(&mut self, of: Of, field: impl Into<String>, what: String, count: u64, bytes: u64, fix: &str) {
        self.items.push(Item { of, field: field.into(), what, count, bytes, fix: fix.into() });
    }

    /// The fabric's share: hosts (and the packets a busy one keeps), ports and routing tables.
    pub fn of_fabric(f: &FabricSize) -> Footprint {
        let per_host = cost::HOST + cost::PACKETS_PER_HOST * cost::PACKET;
        let bytes = f
            .hosts
            .saturating_mul(per_host)
            .saturating_add(f.ports.saturating_mul(cost::PORT))
            .saturating_add(f.switches.saturating_mul(f.tors).saturating_mul(cost::ROUTE_ENTRY));
        let what =
            format!("the fabric ({} hosts, {} ports, routes from {} switches to {} ToRs)", count(f.hosts), count(f.ports), count(f.switches), count(f.tors));
        let mut fp = Footprint::default();
        fp.push(Of::Fabric, "topology", what, f.hosts, bytes, "build a smaller fabric");
        fp
    }

    /// Everything a run of `s` (normalised) holds: the fabric, the flows its workload makes before
    /// the run starts, the samples and bins its outputs record, and its packet traces. Flows a
    /// closed loop starts later, as others finish, are not counted, nor the directory's state.
    pub fn of_scenario(s: &Scenario) -> Footprint {
        let Some(fabric) = FabricSize::of(&s.topology) else { return Footprint::default() };
        let mut fp = Footprint::of_fabric(&fabric);
        if weighs_ports(s) {
            // The splits, and the distances from every ToR they are computed from.
            let entries = fabric.switches.saturating_mul(fabric.tors);
            let distances = fabric.tors.saturating_mul(fabric.hosts.saturating_add(fabric.switches));
            let what = format!("the {} weighted splits of {}", count(entries), s.routing.scheme.name());
            let bytes = entries.saturating_mul(cost::SPLIT_ENTRY).saturating_add(distances.saturating_mul(cost::DISTANCE));
            fp.push(Of::Fabric, "routing.scheme", what, entries, bytes, "build a smaller fabric");
        }
        for (path, part) in crate::workload::parts_of(&s.workload) {
            flows_of(&mut fp, &path, part, &fabric, s);
        }
        service_of(&mut fp, &fabric, s);
        outputs_of(&mut fp, &fabric, s);
        fp
    }

    /// `Ok` if the footprint fits in `budget`, else one line naming the field of its largest item.
    pub fn check(&self, budget: &Budget) -> Result<()> {
        let total = self.total();
        if total <= budget.bytes {
            return Ok(());
        }
        let largest = self.items.iter().max_by_key(|i| i.bytes).expect("a footprint above a budget has items");
        Err(bad(
            &largest.field,
            format!(
                "the run needs about {} of memory, more than {}; {} of it for {}: {}, or set {BUDGET_VARIABLE} to \"{}GB\" or more to run it anyway",
                size(total),
                budget.describe(),
                size(largest.bytes),
                largest.what,
                largest.fix,
                suggested_gb(total)
            ),
        ))
    }
}

/// A budget in whole GB that covers `bytes`, rounded up to three significant digits so that it
/// reads as the estimate does (4.70 TB: \"4700GB\").
fn suggested_gb(bytes: u64) -> u64 {
    let gb = bytes.div_ceil(1_000_000_000).max(1);
    let unit = 10u64.pow(gb.ilog10().saturating_sub(2));
    gb.div_ceil(unit) * unit
}

/// Whether routing keeps a weighted split beside every entry (`lb::split_mode`).
fn weighs_ports(s: &Scenario) -> bool {
    use crate::lb::Scheme::*;
    let r = &s.routing;
    match r.scheme {
        Drill | DrillFlow => r.decompose != Some(false),
        Presto | Localflow | LocalflowNs => r.weighted != Some(false),
        Wcmp => true,
        _ => false,
    }
}

/// The flows a workload part makes before the run starts, as an item of `fp`.
fn flows_of(fp: &mut Footprint, path: &str, w: &WorkloadSpec, fabric: &FabricSize, s: &Scenario) {
    use WorkloadKind::*;
    let n = fabric.hosts;
    let m = match &w.hosts {
        Some(HostSet::First(k)) => u64::from(*k).min(n),
        Some(HostSet::Listed(ranges)) => ranges.iter().fold(0u64, |sum, &(a, b)| sum.saturating_add(u64::from(b.saturating_sub(a)) + 1)).min(n),
        None => n,
    };
    let start = w.start.map_or(0, |d| d.0);
    let span = w.stop.map_or(0, |d| d.0.saturating_sub(start));
    let field = |f: &str| format!("{path}.{f}");
    let (flows, field, what, fix) = match w.kind {
        Shuffle => (m.saturating_mul(m.saturating_sub(1)), field("hosts"), format!("every host to every other of {}", count(m)), "give fewer hosts"),
        Permutation | Stride | Bijection => (m, field("hosts"), format!("one from each of {} hosts", count(m)), "give fewer hosts"),
        Periodic => {
            let every = w.interval.map_or(1, |d| d.0.max(1));
            let each = span.div_ceil(every);
            (
                m.saturating_mul(each),
                field("interval"),
                format!("{} hosts, one every {} over {}", count(m), Duration(every), Duration(span)),
                "give a longer interval or a shorter stop",
            )
        }
        Incast => {
            let rounds = w.interval.map_or(1, |d| span.div_ceil(d.0.max(1)).max(1));
            let requesters = w.requesters.map_or(1, |r| r.of(m as usize) as u64).min(m);
            let fan_in = match (w.fan_in, w.responders) {
                (Some(k), _) => u64::from(k),
                (None, r) => r.map_or(1, |r| r.of(m.saturating_sub(1) as usize) as u64),
            }
            .min(m.saturating_sub(1));
            let per_round = requesters.saturating_mul(fan_in).saturating_mul(if w.request.is_some() { 2 } else { 1 });
            let field = if w.interval.is_some() { field("interval") } else { field("requesters") };
            let what = format!("{} rounds of {} x {} responses", count(rounds), count(requesters), count(fan_in));
            (rounds.saturating_mul(per_round), field, what, "give a longer interval, fewer requesters or a shorter stop")
        }
        ClosedLoop => {
            let each = match &w.concurrency {
                Some(Concurrency::Fixed(k)) => u64::from(*k),
                Some(Concurrency::Distribution(name)) => {
                    crate::workload::cdf::concurrency_cdf(name, &field("concurrency")).map_or(1, |c| c.mean().ceil() as u64)
                }
                None => 1,
            };
            (m.saturating_mul(each), field("concurrency"), format!("{} hosts keeping {} open each", count(m), count(each)), "give a lower concurrency")
        }
        Poisson => {
            let mean = w.cdf.as_deref().and_then(|c| crate::workload::cdf::size_cdf(c, &field("cdf")).ok()).map_or(1.0, |c| c.mean().max(1.0));
            let offered = w.load.unwrap_or(0.0) * host_rate(s) as f64 * m as f64 * span as f64 / PS_PER_S as f64;
            // Saturates, as `as` does for a float beyond the integer's range.
            let flows = (offered / (8.0 * mean)).ceil() as u64;
            (
                flows,
                field("load"),
                format!("{} hosts at load {} over {}", count(m), w.load.unwrap_or(0.0), Duration(span)),
                "give a lower load or a shorter stop",
            )
        }
        Flows => {
            let (lines, text) = w.file.as_deref().map_or((0, 0), count_lines);
            let flows = lines.saturating_sub(1);
            fp.push(Of::Text, field("file"), format!("the flows file's text ({} lines)", count(lines)), text, text, "give a shorter file");
            (flows, field("file"), "one a line of the file".into(), "give a shorter file")
        }
        Multicast => (m, field("hosts"), format!("one from each of {} senders", count(m)), "give fewer hosts"),
        Services => unreachable!("parts_of lists the services' parts"),
    };
    fp.push(Of::Flows, field, format!("{} flows ({what})", count(flows)), flows, flows.saturating_mul(cost::FLOW), fix);
}

/// The host links' rate, or where a link override gives one of them more, that (the upper
/// bound of what a host can send, for open-loop arrivals and traces).
fn host_rate(s: &Scenario) -> u64 {
    let base = s.topology.host_rate.map_or(0, |r| r.0);
    let is_host = |name: &str| name.strip_prefix('h').is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    let overrides = s.topology.links.iter().flatten().filter(|o| o.between.iter().any(|e| is_host(e))).filter_map(|o| o.rate.map(|r| r.0));
    overrides.fold(base, u64::max)
}

/// The lines of a file and its size, read a block at a time; `(0, 0)` if it cannot be read (the
/// workload then says why).
fn count_lines(path: &str) -> (u64, u64) {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else { return (0, 0) };
    let mut block = vec![0u8; 1 << 16];
    let (mut lines, mut bytes, mut last) = (0u64, 0u64, b'\n');
    while let Ok(k) = file.read(&mut block) {
        if k == 0 {
            break;
        }
        lines += block[..k].iter().filter(|&&b| b == b'\n').count() as u64;
        bytes += k as u64;
        last = block[k - 1];
    }
    (lines + u64::from(last != b'\n'), bytes)
}

/// The time-driven tables (queue samples, link bins, per-bin summaries) over the run's horizon,
/// and the packet traces.
fn outputs_of(fp: &mut Footprint, fabric: &FabricSize, s: &Scenario) {
    let horizon = horizon(s);
    let o = &s.output;
    let through = match s.stop {
        Stop::At(_) => format!("over the run's {}", Duration(horizon)),
        Stop::AllFlowsDone => format!("over the run's time limit of {} (when all_flows_done comes later)", Duration(horizon)),
    };
    if let Some(every) = o.queue_interval.filter(|d| d.0 > 0) {
        let samples = horizon / every.0 + 1;
        let rows = samples.saturating_mul(fabric.switch_ports());
        let what =
            format!("{} queue samples ({} samples of {} switch ports every {} {through})", count(rows), count(samples), count(fabric.switch_ports()), every);
        fp.push(
            Of::Rows,
            "output.queue_interval",
            what,
            rows,
            rows.saturating_mul(cost::QUEUE_SAMPLE),
            "sample less often, or give a shorter stop or max_time",
        );
    }
    let bins = horizon / o.bin.0.max(1) + 1;
    if o.link_timeseries {
        let rows = bins.saturating_mul(fabric.ports);
        let what = format!("{} link bins ({} bins of {} ports, {} wide {through})", count(rows), count(bins), count(fabric.ports), o.bin);
        fp.push(
            Of::Rows,
            "output.link_timeseries",
            what,
            rows,
            rows.saturating_mul(cost::LINK_BIN),
            "give wider bins (output.bin), or leave the per-link table out",
        );
    }
    let services = crate::workload::parts_of(&s.workload).len() as u64;
    // Goodput bins are reserved up to 2^20 a service (`sim::World::new`).
    let values = bins.saturating_mul(fabric.split_switches).saturating_add(bins.min(1 << 20).saturating_mul(services));
    let what = format!(
        "{} per-bin values ({} bins {} wide {through}, each with the uplink split of {} switches and the goodput of {} workload part{})",
        count(values),
        count(bins),
        o.bin,
        count(fabric.split_switches),
        services,
        if services == 1 { "" } else { "s" }
    );
    fp.push(Of::Rows, "output.bin", what, values, values.saturating_mul(cost::BIN_VALUE), "give wider bins, or a shorter stop or max_time");
    if !o.trace.is_empty() {
        let mss = u64::from(s.transport.mss_min.unwrap_or(s.transport.mss).max(1));
        let sendable = (host_rate(s) as u128 * horizon as u128 / (8 * PS_PER_S as u128)).min(u64::MAX as u128) as u64;
        let longest = largest_flow(s).map_or(sendable, |b| b.min(sendable));
        let rows = (o.trace.len() as u64).saturating_mul(longest.div_ceil(mss)).saturating_mul(cost::TRACE_ROWS_PER_SEGMENT);
        let what = format!("{} trace rows ({} flows of up to {} segments)", count(rows), o.trace.len(), count(longest.div_ceil(mss)));
        fp.push(Of::Rows, "output.trace", what, rows, rows.saturating_mul(cost::TRACE_ROW), "trace fewer or shorter flows, or give a shorter stop or max_time");
    }
}

/// When the run stops at the latest (`sim::World::new`'s `max_time`).
fn horizon(s: &Scenario) -> Time {
    match s.stop {
        Stop::At(d) => d.0.min(s.time_limit().0),
        Stop::AllFlowsDone => s.time_limit().0,
    }
}

/// The storage service's flows (`[service]`): a request and a response for every request its
/// servers can process by the horizon, or its open-loop tenants offer, and those outstanding.
fn service_of(fp: &mut Footprint, fabric: &FabricSize, s: &Scenario) {
    let Some(svc) = &s.service else { return };
    let servers = match &svc.servers {
        HostSet::First(k) => u64::from(*k),
        HostSet::Listed(ranges) => ranges.iter().fold(0u64, |sum, &(a, b)| sum.saturating_add(u64::from(b.saturating_sub(a)) + 1)),
    }
    .min(fabric.hosts);
    let secs = horizon(s) as f64 / PS_PER_S as f64;
    let served = servers as f64 * svc.capacity * secs;
    let (mut offered, mut outstanding) = (0.0, 0.0);
    for t in &s.tenants {
        match svc.demand.iter().find(|d| d.tenant == t.name) {
            Some(d) if d.rate.is_some() => offered += d.rate.unwrap_or(0.0) * secs,
            Some(d) => outstanding += f64::from(d.concurrency.unwrap_or(0)),
            None => outstanding += f64::from(svc.concurrency),
        }
    }
    let flows = (2.0 * (served.max(offered) + outstanding)).min(u64::MAX as f64) as u64;
    let what = format!("the {} request and response flows of [service]", count(flows));
    fp.push(Of::Flows, "service.capacity", what, flows, flows.saturating_mul(cost::FLOW), "use a shorter stop, or fewer or slower servers");
}

/// The largest flow any part can make, where every part says (fixed sizes, a size CDF's top).
fn largest_flow(s: &Scenario) -> Option<u64> {
    let parts = crate::workload::parts_of(&s.workload);
    parts.iter().try_fold(0u64, |most, (path, w)| {
        let own = match (w.bytes, w.request, w.cdf.as_deref()) {
            (Some(b), r, _) => Some(b.0.max(r.map_or(0, |r| r.0))),
            (None, _, Some(cdf)) => crate::workload::cdf::size_cdf(cdf, &format!("{path}.cdf")).ok().map(|c| c.max().ceil() as u64),
            _ => None,
        };
        own.map(|b| most.max(b))
    })
}

/// How much memory a run may take, and where that figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub source: Source,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `MemAvailable` in `/proc/meminfo`.
    Available,
    /// [`DEFAULT_BUDGET`]: `/proc/meminfo` could not be read.
    Default,
    /// What the process's address-space limit (`ulimit -v`) leaves beyond what it maps now.
    AddressSpace,
    /// What the container's memory limit (`memory.max` of cgroup v2) leaves beyond its use.
    Container,
    /// `CLOS_MEMORY_BUDGET`.
    Variable,
}

impl Budget {
    /// `CLOS_MEMORY_BUDGET` if set; else what this machine has available now, or less where
    /// an address-space limit or the container's memory limit leaves less. (The estimate counts
    /// resident memory; under an address-space limit, reservations never touched count too,
    /// so there it is a little low.)
    pub fn of_this_machine() -> Result<Budget> {
        if let Ok(text) = std::env::var(BUDGET_VARIABLE) {
            let bytes = parse_bytes(&text).map_err(|e| bad(BUDGET_VARIABLE, e))?;
            return Ok(Budget { bytes, source: Source::Variable });
        }
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let available = match read("/proc/meminfo").as_deref().and_then(|t| kib_field(t, "MemAvailable:")) {
            Some(bytes) => Budget { bytes, source: Source::Available },
            None => Budget { bytes: DEFAULT_BUDGET, source: Source::Default },
        };
        let mapped = read("/proc/self/status").as_deref().and_then(|t| kib_field(t, "VmSize:")).unwrap_or(0);
        let address_space = address_space_limit().map(|limit| Budget { bytes: limit.saturating_sub(mapped), source: Source::AddressSpace });
        let number = |path: &str| read(path).and_then(|t| t.trim().parse::<u64>().ok());
        // "max" (no limit) does not parse, and leaves the budget alone.
        let container = number("/sys/fs/cgroup/memory.max")
            .map(|limit| Budget { bytes: limit.saturating_sub(number("/sys/fs/cgroup/memory.current").unwrap_or(0)), source: Source::Container });
        Ok([address_space, container].into_iter().flatten().fold(available, |least, b| if b.bytes < least.bytes { b } else { least }))
    }

    fn describe(&self) -> String {
        let bytes = size(self.bytes);
        match self.source {
            Source::Available => format!("the {bytes} this machine has available (MemAvailable)"),
            Source::Default => format!("the {bytes} assumed available (this system has no MemAvailable in /proc/meminfo)"),
            Source::AddressSpace => format!("the {bytes} of address space the process may still map (ulimit -v)"),
            Source::Container => format!("the {bytes} the container's memory limit leaves (memory.max)"),
            Source::Variable => format!("the {bytes} that {BUDGET_VARIABLE} allows"),
        }
    }
}

/// A `/proc` field given in kB (`MemAvailable:   23643300 kB`), in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix(name))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The process's address-space limit (`RLIMIT_AS`, `ulimit -v`), if it has one.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // `rlim_t` is u64 on 64-bit Linux, not on every Unix
fn address_space_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct we pass.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) };
    (rc == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as u64)
}

#[cfg(not(unix))]
fn address_space_limit() -> Option<u64> {
    None
}

/// Refuse a fabric of more than [`MAX_HOSTS`] hosts (counted before it is built, and again
/// once built, for a kind whose size the count could not tell).
pub fn check_hosts(hosts: u64) -> Result<()> {
    if hosts > MAX_HOSTS {
        return Err(bad("topology", format!("{hosts} hosts is more than the supported 1,048,576")));
    }
    Ok(())
}

/// Refuse, before it is built, a fabric beyond the hosts or ports a run can hold, or one whose
/// share alone does not fit in the budget.
pub fn guard_fabric(t: &TopologySpec) -> Result<()> {
    let Some(f) = FabricSize::of(t) else { return Ok(()) };
    check_hosts(f.hosts)?;
    Footprint::of_fabric(&f).check(&Budget::of_this_machine()?)?;
    if f.ports > u64::from(u32::MAX) {
        return Err(bad("topology", format!("{} ports is more than a run can number ({})", count(f.ports), count(u32::MAX.into()))));
    }
    Ok(())
}

/// Refuse a scenario (normalised) whose run would not fit in the budget, or whose flows are
/// more than 32-bit ids can number.
pub fn guard(s: &Scenario) -> Result<()> {
    let fp = Footprint::of_scenario(s);
    fp.check(&Budget::of_this_machine()?)?;
    let parts = || fp.items.iter().filter(|i| i.of == Of::Flows);
    let flows = parts().fold(0u64, |sum, i| sum.saturating_add(i.count));
    if flows >= u64::from(u32::MAX) {
        let field = parts().max_by_key(|i| i.count).map_or("workload".into(), |i| i.field.clone());
        return Err(bad(field, format!("{} flows is more than a run can number ({})", count(flows), count(u64::from(u32::MAX) - 1))));
    }
    Ok(())
}

/// A count with thousands separators: 1,000,000.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in decimal units with three significant digits: 61.4 MB, 2.20 GB, 352 TB.
fn size(bytes: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ if value >= 99.95 => format!("{value:.0} {}", units[unit]),
        _ if value >= 9.995 => format!("{value:.1} {}", units[unit]),
        _ => format!("{value:.2} {}", units[unit]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn scenario(topology: &str, workload: &str) -> Scenario {
        Scenario::from_json(&format!(r#"{{"stop": "1s", "topology": {topology}, "workload": {workload}}}"#)).unwrap()
    }

    const TINY: &str = r#"{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2}"#;

    /// The counts from the parameters are those of the fabric built from them, for every kind.
    #[test]
    fn fabric_counts_match_the_built_fabric() {
        let topologies = [
            TINY,
            r#"{"kind": "leaf_spine", "leaves": 16, "spines": 4, "hosts_per_leaf": 20, "links_per_pair": 3}"#,
            r#"{"kind": "leaf_spine", "leaves": 5, "spines": 3, "hosts_per_leaf": 2, "striping": "imbalanced"}"#,
            r#"{"kind": "leaf_spine", "leaves": 3, "spines": 1, "hosts_per_leaf": 2}"#,
            r#"{"kind": "fat_tree", "k": 8}"#,
            r#"{"kind": "fat_tree", "k": 8, "remove_cores": 6}"#,
            r#"{"kind": "fat_tree", "k": 2}"#,
            r#"{"kind": "vl2", "preset": "testbed"}"#,
            r#"{"kind": "vl2", "d_a": 8, "d_i": 6, "servers_per_tor": 4}"#,
        ];
        for t in topologies {
            let s = scenario(t, r#"{"kind": "permutation", "bytes": 1000}"#);
            let built = s.topology.build().unwrap();
            let f = FabricSize::of(&s.topology).unwrap();
            let switches = built.n_switches() as u64;
            assert_eq!((f.hosts, f.switches, f.tors, f.ports), (built.n_hosts as u64, switches, built.tors.len() as u64, built.ports.len() as u64), "{t}");
            let splits = (built.n_hosts as u32..built.nodes.len() as u32).filter(|&n| built.ports_of(n).filter(|&p| built.is_uplink(p)).count() >= 2).count();
            assert_eq!(f.split_switches, splits as u64, "{t}");
        }
    }

    /// By hand: DRILL's leaf-spine (16 leaves x 4 spines x 20 hosts) has 320 hosts, 20 switches
    /// and 2 x (320 + 64) ports; its fabric takes per host 180 B and 64 packets, per port 560 B,
    /// per switch and ToR 12 B of routes (ECMP keeps no distances).
    #[test]
    fn the_fabric_is_costed_item_by_item() {
        let s = scenario(r#"{"kind": "leaf_spine", "leaves": 16, "spines": 4, "hosts_per_leaf": 20}"#, r#"{"kind": "permutation", "bytes": 1000}"#);
        let f = FabricSize::of(&s.topology).unwrap();
        assert_eq!(f, FabricSize { hosts: 320, switches: 20, tors: 16, ports: 768, split_switches: 16 });
        let fp = Footprint::of_fabric(&f);
        assert_eq!(fp.total(), 320 * (180 + 64 * cost::PACKET) + 768 * 560 + 20 * 16 * 12);
        assert_eq!(fp.items[0].what, "the fabric (320 hosts, 768 ports, routes from 20 switches to 16 ToRs)");
    }

    /// The schemes counted with weighted splits are those `lb::split_mode` gives splits.
    #[test]
    fn splits_are_counted_for_the_schemes_that_keep_them() {
        for (scheme, _) in crate::lb::Scheme::ALL {
            let mut s = scenario(TINY, r#"{"kind": "permutation", "bytes": 1000}"#);
            s.routing.scheme = scheme;
            let splits = crate::lb::split_mode(&s.routing, &s.topology.build().unwrap()).unwrap() != crate::routing::SplitMode::None;
            assert_eq!(weighs_ports(&s), splits, "{}", scheme.name());
            let counted = Footprint::of_scenario(&s).items.iter().any(|i| i.field == "routing.scheme");
            assert_eq!(counted, splits, "{}", scheme.name());
        }
    }

    fn flows(s: &Scenario) -> (String, u64, u64) {
        let fp = Footprint::of_scenario(s);
        let i = fp.items.iter().find(|i| i.of == Of::Flows).unwrap();
        (i.field.clone(), i.count, i.bytes)
    }

    /// By hand, the flows each generator makes before the run, counted without making them.
    #[test]
    fn flows_are_counted_from_the_workload_fields() {
        let mut s = scenario(TINY, r#"{"kind": "shuffle", "bytes": 1000}"#);
        // A shuffle over 31,600 hosts: 31,600 x 31,599 flows of 960 B.
        s.topology.hosts_per_leaf = Some(15_800);
        assert_eq!(flows(&s), ("workload.hosts".into(), 998_528_400, 958_587_264_000));
        // Listed hosts are counted by their ranges, never expanded.
        s.workload.hosts = Some(HostSet::Listed(vec![(0, 0), (2, 99)]));
        assert_eq!(flows(&s).1, 99 * 98);
        // Periodic: 4 hosts, one flow every picosecond each for 1 s.
        let mut s = scenario(TINY, r#"{"kind": "periodic", "bytes": 1000, "interval": "1ms"}"#);
        assert_eq!(flows(&s).1, 4 * 1000);
        s.workload.interval = Some(Duration(1));
        assert_eq!(flows(&s), ("workload.interval".into(), 4_000_000_000_000, 3_840_000_000_000_000));
        // Incast: one requester, two responders, a request each, a round every 1 ms for 1 s.
        let s = scenario(TINY, r#"{"kind": "incast", "bytes": 1000, "requesters": 1, "fan_in": 2, "interval": "1ms", "request": 100}"#);
        assert_eq!(flows(&s), ("workload.interval".into(), 1000 * 2 * 2, 4000 * 960));
        // A closed loop of a billion flows a host.
        let mut s = scenario(TINY, r#"{"kind": "closed_loop", "cdf": "websearch_dctcp", "concurrency": 1}"#);
        s.workload.concurrency = Some(Concurrency::Fixed(1_000_000_000));
        assert_eq!(flows(&s).0, "workload.concurrency");
        assert_eq!(flows(&s).1, 4_000_000_000);
        // Poisson: load x rate x hosts x time / (8 x mean size).
        let s = scenario(TINY, r#"{"kind": "poisson", "cdf": "websearch_dctcp", "load": 0.5}"#);
        let mean = crate::workload::cdf::size_cdf("websearch_dctcp", "").unwrap().mean();
        assert_eq!(flows(&s).1, (0.5 * 10e9 * 4.0 * 1.0 / (8.0 * mean)).ceil() as u64);
    }

    /// A thousand copies of a million-host range would be 4 GB expanded: they are refused from
    /// the ranges themselves (`HostSet::resolve`).
    #[test]
    fn overlapping_ranges_are_refused_before_they_are_expanded() {
        let e = HostSet::Listed(vec![(0, 999_999); 1000]).resolve(1 << 20, "workload.hosts").unwrap_err().to_string();
        assert_eq!(e, "workload.hosts: host 0 is listed twice");
        let e = HostSet::Listed(vec![(5, 9), (0, 4), (3, 3)]).resolve(16, "w").unwrap_err().to_string();
        assert_eq!(e, "w: host 3 is listed twice");
    }

    /// By hand: 10 ns queue samples over 1 s on the tiny fabric are 10^8 + 1 samples of its 12
    /// switch ports, 29 B each; 1 us link bins are 10^6 + 1 bins of its 16 ports, 61 B each.
    #[test]
    fn samples_count_every_switch_port() {
        let mut s = scenario(TINY, r#"{"kind": "permutation", "bytes": 1000}"#);
        s.output.queue_interval = Some(Duration(10_000));
        s.output.bin = Duration(1_000_000);
        s.output.link_timeseries = true;
        let fp = Footprint::of_scenario(&s);
        let item = |field: &str| fp.items.iter().find(|i| i.field == field).unwrap().clone();
        assert_eq!(item("output.queue_interval").bytes, 1_200_000_012 * 29);
        assert_eq!(item("output.link_timeseries").bytes, 16_000_016 * 61);
        // Two leaves' uplink splits and one service's goodput, per bin.
        assert_eq!(item("output.bin").bytes, (2 + 1) * 1_000_001 * 8);
    }

    /// By hand: one traced flow of 1 MB at a 1,460 B MSS is 685 segments, 4 rows each; with
    /// 10 GB flows, what a 10 Gb/s host can send in the 1 s run bounds it (1.25 GB).
    #[test]
    fn traces_count_the_traced_flows_segments() {
        let mut s = scenario(TINY, r#"{"kind": "permutation", "bytes": "1MB"}"#);
        s.output.trace = vec![0];
        let trace = |s: &Scenario| Footprint::of_scenario(s).items.into_iter().find(|i| i.field == "output.trace").unwrap().count;
        assert_eq!(trace(&s), 685 * 4);
        s.workload.bytes = Some(crate::units::ByteSize(10_000_000_000));
        assert_eq!(trace(&s), 1_250_000_000u64.div_ceil(1460) * 4);
        assert_eq!(s.topology.host_rate, Some(Rate(10_000_000_000)));
    }

    /// A footprint above its budget is one line: the largest item's field, the total, the
    /// budget and where it came from, and the fix.
    #[test]
    fn a_footprint_beyond_the_budget_names_its_largest_item() {
        let mut fp = Footprint::default();
        fp.push(Of::Fabric, "topology", "the fabric".into(), 4, 400, "build a smaller fabric");
        fp.push(Of::Flows, "workload.interval", "3,000 flows".into(), 3000, 2_880_000, "give a longer interval");
        assert!(fp.check(&Budget { bytes: 2_880_400, source: Source::Variable }).is_ok());
        let e = fp.check(&Budget { bytes: 1_000_000, source: Source::Variable }).unwrap_err().to_string();
        assert_eq!(
            e,
            "workload.interval: the run needs about 2.88 MB of memory, more than the 1.00 MB that CLOS_MEMORY_BUDGET allows; \
             2.88 MB of it for 3,000 flows: give a longer interval, or set CLOS_MEMORY_BUDGET to \"1GB\" or more to run it anyway"
        );
        assert!(fp.check(&Budget { bytes: 8_000_000_000, source: Source::Default }).is_ok());
    }

    /// The budget an error suggests covers the estimate, in GB to three significant digits.
    #[test]
    fn the_suggested_budget_covers_the_estimate() {
        assert_eq!(suggested_gb(1), 1);
        assert_eq!(suggested_gb(999_000_000_000), 999);
        assert_eq!(suggested_gb(4_698_000_000_000), 4_700);
        assert_eq!(suggested_gb(3_840_000_000_000_000), 3_840_000);
        assert_eq!(suggested_gb(3_840_000_000_000_001), 3_850_000);
    }

    #[test]
    fn available_memory_is_read_from_proc() {
        let text = "MemTotal:       24576000 kB\nMemFree:        17000000 kB\nMemAvailable:   23643300 kB\n";
        assert_eq!(kib_field(text, "MemAvailable:"), Some(23_643_300 * 1024));
        assert_eq!(kib_field("MemTotal: 1 kB\n", "MemAvailable:"), None);
    }

    #[test]
    fn sizes_and_counts_read_as_people_write_them() {
        assert_eq!([size(999), size(61_400_000), size(2_204_000_000), size(352_000_000_000_000)], ["999 B", "61.4 MB", "2.20 GB", "352 TB"]);
        assert_eq!([count(0), count(999), count(1000), count(4_000_000_000_000)], ["0", "999", "1,000", "4,000,000,000,000"]);
    }
}
