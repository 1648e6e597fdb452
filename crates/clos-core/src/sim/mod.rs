//! The world and its event loop.
//!
//! A [`World`] owns the fabric (ports, routes, forwarder), the flows' transport state, the packet
//! pool and the calendar. `run` pops events in `(time, scheduling order)` and dispatches them with
//! a `match`; every handler runs in O(1) amortised time and, once pools and queues have grown to
//! their working size, allocates nothing. Host-side transport glue lives in `host.rs`.

mod arrivals;
mod barrier;
mod directory;
mod egress;
pub mod failures;
mod host;
mod jitter;
mod merge;
pub mod multicast;
pub mod parallel;
pub mod report;
mod service;
mod shape;
mod udp;
pub mod windows;

use crate::error::{Error, Result};
use crate::event::{Event, EventQueue, Next};
use crate::fabric::scheduler::Class;
use crate::fabric::{Enqueued, Offered, Ports};
use crate::lb::{Fabric, Forwarder, Known};
use crate::metrics::recorder::Recorder;
use crate::metrics::trace::{Event as TraceEvent, Marks, Trace, NO_LINK};
use crate::metrics::Counters;
use crate::packet::{Packet, PacketPool, FLAG_ACK, FLAG_CE};
use crate::rng::{mix64, Streams};
use crate::routing::{LinkState, Routes};
use crate::scenario::{EcnMarking, OutputSpec, Scenario, Stop};
use crate::topology::Topology;
use crate::transport::receiver::Receiver;
use crate::transport::reorder_shim::{ReorderShim, Segment};
use crate::transport::tcp::Sender;
use crate::transport::TcpParams;
use crate::units::Time;
use crate::workload::{self, ClosedLoop, FlowSpec};
pub use report::RunOutput;
use shape::{General, Look, Plain, Shape};
use std::sync::Arc;

/// Packets that have crossed this many switches are dropped as looping (never happens with the
/// shortest-path tables; a guard against a forwarding bug silently spinning forever).
const MAX_HOPS: u8 = 32;

/// Per-flow timer bookkeeping: timers are never cancelled in the calendar; a fired event whose
/// generation is stale is ignored, and a deadline pushed later re-schedules lazily.
#[derive(Clone, Copy)]
struct RtoTimer {
    deadline: Option<Time>,
    gen: u32,
    /// Time of the live calendar entry, if any.
    pending: Option<Time>,
}

pub struct World {
    /// The fabric: each partition of a parallel run holds a copy of it, as the hop reads it
    /// through a shared pointer 0.8% dearer (callgrind, B1).
    pub topo: Topology,
    /// The routes, built once and shared by the partitions of a parallel run (`parallel.rs`);
    /// a sequential run holds them alone, so `Arc::make_mut` changes them in place.
    routes: Arc<Routes>,
    pub ports: Ports,
    fwd: Forwarder,
    pool: PacketPool,
    queue: EventQueue,
    params: TcpParams,
    pub flows: Vec<FlowSpec>,
    /// Starts a new flow when a closed-loop flow ends (see `arrivals.rs`).
    closed_loop: ClosedLoop,
    /// Incast's simulated requests: request flow -> the response its arrival starts
    /// (`arrivals.rs`); empty without any.
    answers: std::collections::HashMap<u32, u32>,
    /// Persistent connections (incast's `connections`): flow -> the connection's previous flow,
    /// and previous flow -> the flow waiting for it to arrive (`arrivals.rs`).
    continues: std::collections::HashMap<u32, u32>,
    waiting: std::collections::HashMap<u32, u32>,
    /// Names of the workload's parts (indexed by `FlowSpec::service`) and what they offer.
    pub services: Vec<String>,
    pub workload_summary: serde_json::Value,
    entropy: Vec<[u64; 2]>,
    pub senders: Vec<Sender>,
    pub receivers: Vec<Receiver>,
    rto: Vec<RtoTimer>,
    /// Receiver reorder shims (one per flow) when `transport.reorder_shim` is on.
    pub shims: Option<Vec<ReorderShim>>,
    shim_timeout: Time,
    shim_out: Vec<Segment>,
    /// Time each flow's last byte reached its receiver.
    pub finished: Vec<Option<Time>>,
    pub delivered_bytes: Vec<u64>,
    /// Packets of each flow (data and ACKs) lost anywhere.
    pub flow_drops: Vec<u32>,
    /// Packet traces of the flows `output.trace` lists (`metrics/trace.rs`); `None`: none.
    pub trace: Option<Box<Trace>>,
    /// The hosts' software waits (`[host] jitter`, `jitter.rs`).
    jitter: Option<Box<jitter::Jitter>>,
    /// The links' timing noise (`topology.link_jitter`, `jitter.rs`).
    link_jitter: Option<Box<jitter::LinkJitter>>,
    flows_done: usize,
    pub counters: Counters,
    /// Payload delivered per service per bin: `goodput_bins[service][bin]`.
    pub goodput_bins: Vec<Vec<u64>>,
    bin: Time,
    /// Queue samples and per-link bins (see `metrics::recorder`).
    pub recorder: Recorder,
    /// What the scenario asked to be measured.
    pub output: OutputSpec,
    pub now: Time,
    pub events: u64,
    stop: Stop,
    max_time: Time,
    /// `run_until` returns when `events` reaches this (see `run_with_progress`), or when the
    /// run has ended (`hold_if_ended`).
    pause_at: u64,
    /// Failures and the control plane (`failures.rs`); `None` costs nothing per packet.
    pub faults: Option<Box<failures::Faults>>,
    /// The VL2 directory model (`directory.rs`), when the scenario has a `[directory]` table.
    directory: Option<Box<crate::directory::Directory>>,
    /// The hosts' qdisc and TCP small queues (`host/`, `egress.rs`); `None` is an unbounded FIFO.
    egress: Option<Box<crate::host::Egress>>,
    /// Whether the loop walks the next hops' loads ahead (`prefetch_ahead`): only where the
    /// state a hop reads outgrows the caches ([`LOOK_AHEAD_BYTES`]).
    look_ahead: bool,
    /// Whether it also loads the flow state of the host events ahead: only where that state
    /// outgrows the caches too ([`FLOW_LOOK_AHEAD_BYTES`]).
    look_ahead_flows: bool,
    /// Whether the look-ahead's prediction of a hop is the hop itself (`NextHop`).
    exact_hops: bool,
    /// Every event through the general loop (`shape.rs`), for tests that compare the shapes.
    general_only: bool,
    /// The partition this world runs in a parallel run (`parallel.rs`); `None`: the whole fabric.
    part: Option<Box<parallel::Part>>,
    /// Switch ports hold class queues (`fabric/scheduler.rs`), which only the general loop asks.
    scheduled: bool,
    /// Traffic class of each workload part's flows, indexed by `FlowSpec::service`.
    service_class: Vec<u8>,
    /// The tenants, their weights and each part's tenant (`[[tenants]]`), for the report.
    pub tenancy: crate::metrics::tenants::Tenancy,
    /// Constant-rate flows (`workload.transport = "udp"`, `udp.rs`); `None`: every flow is TCP.
    udp: Option<Box<crate::transport::udp::UdpFlows>>,
    /// Whether each part's flow sizes are rounded up to whole segments (`workload.whole_segments`).
    whole_segments: Vec<bool>,
    /// Multicast groups, their trees and receivers (`[multicast]`, `multicast.rs`); `None`
    /// costs nothing per packet.
    pub mcast: Option<Box<multicast::Multicast>>,
    /// The storage service (`[service]`, `sim/service.rs`); `None`: no service.
    pub service: Option<Box<crate::service::Service>>,
}

/// `f`'s size, rounded up to whole segments of `mss` if its part asks (`workload.whole_segments`).
fn whole_segments(parts: &[bool], f: &FlowSpec, mss: u32) -> u64 {
    match parts.get(f.service as usize) {
        Some(true) => f.bytes.div_ceil(mss as u64).max(1) * mss as u64,
        _ => f.bytes,
    }
}

/// A switch hop chosen one event ahead: the look-ahead predicts the port of the next event's
/// packet to prefetch its queue line, and where that prediction is exact (ECMP and random
/// spraying, functions of the packet and the routes, with no failures to change the routes in
/// between: `Forwarder::prediction_is_exact`) the event takes the port instead of choosing
/// again, which halves the hashing and route reads of a hop. Matched on node and packet: an
/// event that runs first (scheduled after the look) finds no hint for itself.
#[derive(Clone, Copy)]
struct NextHop {
    node: u32,
    pkt: u32,
    port: u32,
}

impl NextHop {
    const NONE: NextHop = NextHop { node: u32::MAX, pkt: u32::MAX, port: u32::MAX };
}

/// What the look-ahead found of the event two ahead, kept for the next event, to which that
/// event is then one ahead (`World::prefetch_ahead`): a switch hop's destination ToR and that
/// ToR's index, read once instead of twice. Matched on node and packet, as `NextHop` is; the
/// bucket being run only shrinks between two events, so it nearly always matches.
#[derive(Clone, Copy)]
struct Seen {
    node: u32,
    pkt: u32,
    tor: u32,
    tor_index: u32,
}

impl Seen {
    const NONE: Seen = Seen { node: u32::MAX, pkt: u32::MAX, tor: u32::MAX, tor_index: u32::MAX };
}

/// Queue lines and route rows above this many bytes make the loop look ahead
/// (`World::prefetch_ahead`). Measured in alternating runs (docs/performance.md): B2 (560 KB)
/// 0.85x and B3 (2.1 MB) 0.87x with it; B1 (60 KB) no faster and B4 (50 KB) 3-12% slower,
/// where the lines stay in the second-level cache (512 KB on this machine class; a quarter of
/// it is left for them, as packets and events stream through the rest).
const LOOK_AHEAD_BYTES: usize = 128 << 10;

/// How many events ahead the look-ahead prefetches a packet (`World::prefetch_ahead`). Its
/// destination is read two events ahead, to prefetch the route entry, so the packet has
/// `PACKET_AHEAD - 2` events (about 65 ns each on B2) to come from memory (about 170 ns here).
/// At four ahead, that read was still 6% of B2's samples; measured in alternating runs
/// (docs/performance.md): B2 0.95-0.97x at six ahead, 0.93-0.95x at eight and ten, B3 and B5
/// (cut to 3 ms) unchanged within the noise.
const PACKET_AHEAD: usize = 8;

/// Per-flow state above this many bytes makes the look-ahead load the flow state of host events
/// as well (`World::prefetch_flow`). Measured in alternating runs (docs/performance.md): B3
/// (3,456 flows, 1.4 MB) 0.79-0.90x at full length with it. B2 (1,024 flows, 0.4 MB) was no
/// faster with it at first, and 1-4% slower; once its hops read less (route spans, the plain
/// hop) its host events' waits on that state showed (a tenth of its samples), and under random
/// spraying it is 0.98x with it (four pairs), under ECMP unchanged (eight pairs, 0.97-1.02x).
/// B1's 128 flows stay below (50 KB).
const FLOW_LOOK_AHEAD_BYTES: usize = 256 << 10;

/// Bytes of the per-flow arrays a host event reads, for one flow.
const FLOW_BYTES: usize = std::mem::size_of::<FlowSpec>()
    + std::mem::size_of::<[u64; 2]>()
    + std::mem::size_of::<Sender>()
    + std::mem::size_of::<Receiver>()
    + std::mem::size_of::<RtoTimer>()
    + std::mem::size_of::<Option<Time>>()
    + std::mem::size_of::<u64>();

/// Whether routing has no next hop for `pkt` at `node` (a partitioned fabric). Given the
/// packet rather than its handle, so that `forward` keeps the one it looked up across the call.
#[inline(never)]
fn no_route(topo: &Topology, routes: &Routes, node: u32, pkt: &Packet) -> bool {
    if pkt.encap == 2 && topo.role(node) != crate::topology::Role::Core {
        return routes.toward_core(node).is_empty();
    }
    let tor = topo.tor_index[topo.host_tor[pkt.dst as usize] as usize];
    routes.toward_tor(node, tor).is_empty()
}

/// How far a run has got, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: Time,
    /// Simulated time at which the run stops at the latest.
    pub end: Time,
    pub flows_done: usize,
    pub flows: usize,
    pub events: u64,
}

/// 5-tuple hash per direction: (src, dst, src port, dst port, TCP). Source ports are distinct
/// per flow, so flows between the same pair hash independently.
fn flow_entropy(i: usize, f: &FlowSpec) -> [u64; 2] {
    let sport = 1024 + i as u64;
    let fwd = mix64((f.src as u64) << 40 ^ (f.dst as u64) << 16 ^ mix64(sport << 16 | 80) ^ 6);
    let rev = mix64((f.dst as u64) << 40 ^ (f.src as u64) << 16 ^ mix64(80 << 16 | sport) ^ 6);
    [fwd, rev]
}

impl World {
    pub fn new(s: &Scenario) -> Result<World> {
        World::build(s, None)
    }

    /// What the partitions of a parallel run share, built once: the fabric and, with every
    /// link up (a parallel run has no failures), its routes.
    pub(super) fn common(s: &Scenario) -> Result<(Arc<Topology>, Arc<Routes>)> {
        let topo = s.topology.build()?;
        let routes = Routes::with_state(&topo, &LinkState::all_up(&topo), crate::lb::split_mode(&s.routing, &topo)?);
        Ok((Arc::new(topo), Arc::new(routes)))
    }

    /// The world of a whole run, or with `part` of one partition of a parallel run
    /// (`parallel.rs`): it holds every flow and node, but starts only its own hosts' flows,
    /// records only its own ports, hands packets for other partitions' nodes over, and draws
    /// from random streams of its own.
    fn build(s: &Scenario, part: Option<parallel::Part>) -> Result<World> {
        let topo = match &part {
            Some(p) => Topology::clone(&p.topo),
            None => s.topology.build()?,
        };
        let mut streams = Streams::new(s.seed);
        let mut workload_rng = streams.stream();
        let generated = workload::generate(&s.workload, &topo, &mut workload_rng)?;
        let link_jitter = jitter::LinkJitter::new(s.topology.link_jitter.map(|d| d.0), topo.ports.len(), s.seed);
        let jitter = jitter::Jitter::new(s.host.jitter.map(|d| d.0), topo.n_hosts, s.seed);
        let mut flows = generated.flows;
        let mut ports = Ports::new(&topo, s.switch.buffer.0, s.switch.ecn_threshold.map(|b| b.0));
        if let Some(pool) = s.switch.pool {
            ports.pool_switches(&topo, pool.0, s.switch.alpha.unwrap_or(2.0));
        }
        let scheduled = !s.switch.classes.is_empty() || s.switch.tenant_queues || s.switch.ecn_marking == EcnMarking::Dequeue;
        let tenancy = workload::tenants::tenancy(&s.tenants, &generated.tenants);
        if scheduled {
            // With tenant queues, tenant i is class i (`workload/tenants.rs`).
            let classes: Vec<Class> = if s.switch.tenant_queues {
                workload::tenants::port_classes(&s.tenants)
            } else if s.switch.classes.is_empty() {
                vec![Class { priority: 0, weight: 1 }]
            } else {
                s.switch.classes.iter().map(|c| Class { priority: c.priority, weight: c.weight }).collect()
            };
            let quantum = s.switch.quantum.map_or(crate::packet::wire::frame(s.transport.mss as u64, 0), |b| b.0);
            ports.schedule_classes(&topo, &classes, quantum, s.switch.ecn_marking == EcnMarking::Dequeue);
            if s.switch.tenant_queues {
                ports.limit_classes(&workload::tenants::class_limits(&s.tenants));
            }
        }
        let (mut faults, state) = if s.failures.is_empty() {
            (None, LinkState::all_up(&topo))
        } else {
            let changes = crate::failures::resolve(&s.failures, &topo, s.seed)?;
            let spec = s.convergence.clone().expect("normalised with failures");
            let (f, state) = failures::Faults::new(&topo, changes, spec, &mut ports, s.seed);
            (Some(Box::new(f)), state)
        };
        let routes = match &part {
            Some(p) => p.routes.clone(),
            None => {
                let mut routes = Routes::with_state(&topo, &state, crate::lb::split_mode(&s.routing, &topo)?);
                if let Some(f) = faults.as_mut() {
                    f.start_control(&topo, &mut routes, &state)?; // `[convergence] mode = "controller"`
                }
                Arc::new(routes)
            }
        };
        let mut fwd = Forwarder::new(&s.routing, &topo, &routes, s.transport.mss, &mut streams)?;
        if let Some(p) = &part {
            fwd.reseed(&mut Streams::new(mix64(s.seed ^ mix64(u64::from(p.me) + 1))));
        }
        if let Some(c) = s.convergence.as_ref().filter(|c| c.mode == crate::failures::ConvergenceMode::Controller) {
            let c = c.controller_settings();
            let names = topo.nodes[topo.n_hosts..].iter().map(|n| n.name.clone()).collect();
            fwd.use_control_channel(&c, names); // LocalFlow's rewrites
        }
        if fwd.reads_visible_backlog() {
            ports.model_entering(s.routing.entering.unwrap_or(crate::lb::params::DEFAULT_ENTERING).0);
        }
        let params = s.tcp_params();
        for (i, f) in flows.iter_mut().enumerate() {
            f.bytes = whole_segments(&generated.whole_segments, f, params.flow_mss(i));
        }
        let mcast = multicast::Multicast::new(s, &topo, &mut flows, &generated.groups, &generated.udp_rates)?.map(Box::new);
        let entropy = flows.iter().enumerate().map(|(i, f)| flow_entropy(i, f)).collect();
        for (i, f) in flows.iter().enumerate() {
            TcpParams::check_flow_size(f.bytes as f64, params.flow_mss(i), || format!("flow {i} (host {} to host {})", f.src, f.dst))?;
        }
        for l in &generated.closed_loop.loops {
            let smallest_mss = params.mss_min.unwrap_or(params.mss);
            TcpParams::check_flow_size(l.sizes.max().round(), smallest_mss, || "the flow size distribution's largest flow".into())?;
        }
        let senders = flows.iter().enumerate().map(|(i, f)| Sender::new(f.bytes, params.flow_mss(i), &params)).collect();
        let udp = crate::transport::udp::UdpFlows::new(generated.udp_rates.clone()).map(|mut u| {
            for (i, f) in flows.iter().enumerate() {
                u.add(i as u32, f.service, f.bytes, params.flow_mss(i));
                if let Some(n) = mcast.as_ref().and_then(|m| m.receivers_of(i as u32, f.src)) {
                    u.set_copies(i as u32, n);
                }
            }
            Box::new(u)
        });
        let n = flows.len();
        // Buckets sized to the events this fabric makes per microsecond (event.rs).
        // A partition's calendar holds its own hosts' share.
        let host_bps: u64 = topo.ports.iter().filter(|p| topo.is_host(p.from) && part.as_ref().is_none_or(|q| q.owns(p.from))).map(|p| p.rate_bps).sum();
        let mut queue = EventQueue::with_bucket_bits(crate::event::bucket_bits_for(host_bps as f64), 1024);
        // Each flow keeps one retransmission timer in the far heap, and a timer moved earlier
        // leaves its old entry there until it fires (`RtoTimer`): four a flow is ample.
        queue.reserve_far(4 * n + 64);
        let answers: std::collections::HashMap<u32, u32> = generated.starts_on_arrival.iter().copied().collect();
        let answered: std::collections::HashSet<u32> = answers.values().copied().collect();
        for (i, f) in flows.iter().enumerate() {
            if !answered.contains(&(i as u32)) && part.as_ref().is_none_or(|p| p.owns(f.src)) {
                queue.schedule(f.start, Event::FlowStart { flow: i as u32 });
            }
        }
        if let Some(t) = fwd.tick_interval() {
            queue.schedule(t, Event::Tick);
        }
        let max_time = match s.stop {
            Stop::At(d) => d.0.min(s.time_limit().0),
            Stop::AllFlowsDone => s.time_limit().0,
        };
        let mut recorder = Recorder::new(&topo, s.output.queue_interval.map(|d| d.0), s.output.bin.0, s.output.link_timeseries, max_time);
        if let Some(p) = &part {
            recorder.keep_only(&topo, |port| p.owns(topo.ports[port as usize].from));
        }
        if let Some(t) = recorder.queue_interval {
            queue.schedule(t, Event::QueueSample);
        }
        queue.schedule(recorder.bin, Event::CloseBin);
        if let Some(f) = &faults {
            for (i, at) in f.change_times() {
                if at > 0 {
                    queue.schedule(at, Event::LinkChange { change: i });
                }
            }
        }
        let bins = (max_time / s.output.bin.0 + 1).min(1 << 20) as usize;
        let directory = directory::build(s, &topo, &mut streams, &mut queue);
        // About what the benchmarks keep alive (B2: 110 packets per host, most of them queued);
        // more only costs address space, as pages never touched are never mapped.
        let pool = PacketPool::with_capacity(topo.n_hosts * 128);
        let look_ahead = ports.queue_bytes() + routes.row_bytes() > LOOK_AHEAD_BYTES;
        let look_ahead_flows = look_ahead && n * FLOW_BYTES > FLOW_LOOK_AHEAD_BYTES;
        let exact_hops = fwd.prediction_is_exact() && faults.is_none() && directory.is_none();
        let egress = crate::host::Egress::new(&s.host, s.transport.mss, topo.n_hosts, n).map(Box::new);
        let mut world = World {
            topo,
            routes,
            ports,
            fwd,
            pool,
            queue,
            params,
            flows,
            closed_loop: generated.closed_loop,
            answers,
            continues: generated.continues.iter().map(|&(prev, next)| (next, prev)).collect(),
            waiting: Default::default(),
            services: generated.services.clone(),
            workload_summary: generated.summary,
            entropy,
            senders,
            receivers: vec![Receiver::default(); n],
            rto: vec![RtoTimer { deadline: None, gen: 0, pending: None }; n],
            shims: (s.transport.reorder_shim == Some(true)).then(|| vec![ReorderShim::default(); n]),
            shim_timeout: s.transport.reorder_timeout.0,
            shim_out: Vec::new(),
            finished: vec![None; n],
            delivered_bytes: vec![0; n],
            flow_drops: vec![0; n],
            trace: Trace::new(&s.output.trace),
            jitter,
            link_jitter,
            flows_done: 0,
            counters: Counters::default(),
            // Sized for the whole run so that delivering never allocates.
            goodput_bins: (0..generated.services.len().max(1)).map(|_| Vec::with_capacity(bins)).collect(),
            bin: s.output.bin.0,
            recorder,
            output: s.output.clone(),
            now: 0,
            events: 0,
            stop: s.stop,
            max_time,
            pause_at: u64::MAX,
            faults,
            directory,
            egress,
            look_ahead,
            look_ahead_flows,
            exact_hops,
            general_only: false,
            part: part.map(Box::new),
            scheduled,
            service_class: if s.switch.tenant_queues {
                tenancy.of_service.iter().map(|t| t.expect("validated: every part has a tenant") as u8).collect()
            } else {
                generated.classes
            },
            tenancy,
            udp,
            whole_segments: generated.whole_segments,
            mcast,
            service: None,
        };
        world.start_service(s)?;
        Ok(world)
    }

    /// Run to the stop condition; returns the simulated end time.
    pub fn run(&mut self) -> Time {
        self.run_until(self.max_time);
        self.finish()
    }

    /// `run`, pausing every `every` events to tell `report` how far it got (for progress bars; a
    /// pause costs one comparison per event and changes nothing in the simulation). `report`
    /// returns whether to go on: `None` if it stopped the run (Ctrl-C), which then has no end.
    pub fn run_with_progress(&mut self, every: u64, report: &mut dyn FnMut(&Progress) -> bool) -> Option<Time> {
        loop {
            self.pause_at = self.events.saturating_add(every.max(1));
            self.run_until(self.max_time);
            if self.events < self.pause_at || self.ended() {
                break;
            }
            if !report(&Progress { now: self.now, end: self.max_time, flows_done: self.flows_done, flows: self.flows.len(), events: self.events }) {
                return None;
            }
        }
        self.pause_at = u64::MAX;
        Some(self.finish())
    }

    /// End the run at the stop time: close the last, partial, time-series bin.
    pub fn finish(&mut self) -> Time {
        if let Stop::At(d) = self.stop {
            self.now = self.now.max(d.0.min(self.max_time));
        }
        self.recorder.close_bin(&self.ports, self.now, self.activity());
        self.now
    }

    /// Run events up to and including time `limit` (or the stop condition, if earlier); lets
    /// tests and samplers observe the fabric between steps.
    pub fn run_until(&mut self, limit: Time) -> Time {
        const OFF: u8 = Look::Off.code();
        const HOPS: u8 = Look::Hops.code();
        const FLOWS: u8 = Look::HopsAndFlows.code();
        match (self.shape(), self.look(), self.part.is_some()) {
            (Known::Any, _, _) | (_, Look::Asked, _) => self.run_loop::<General>(limit),
            (Known::Ecmp, Look::Off, false) => self.run_loop::<Plain<false, OFF, false>>(limit),
            (Known::Ecmp, Look::Hops, false) => self.run_loop::<Plain<false, HOPS, false>>(limit),
            (Known::Ecmp, Look::HopsAndFlows, false) => self.run_loop::<Plain<false, FLOWS, false>>(limit),
            (Known::SprayRandom, Look::Off, false) => self.run_loop::<Plain<true, OFF, false>>(limit),
            (Known::SprayRandom, Look::Hops, false) => self.run_loop::<Plain<true, HOPS, false>>(limit),
            (Known::SprayRandom, Look::HopsAndFlows, false) => self.run_loop::<Plain<true, FLOWS, false>>(limit),
            (Known::Ecmp, Look::Off, true) => self.run_loop::<Plain<false, OFF, true>>(limit),
            (Known::Ecmp, Look::Hops, true) => self.run_loop::<Plain<false, HOPS, true>>(limit),
            (Known::Ecmp, Look::HopsAndFlows, true) => self.run_loop::<Plain<false, FLOWS, true>>(limit),
            (Known::SprayRandom, Look::Off, true) => self.run_loop::<Plain<true, OFF, true>>(limit),
            (Known::SprayRandom, Look::Hops, true) => self.run_loop::<Plain<true, HOPS, true>>(limit),
            (Known::SprayRandom, Look::HopsAndFlows, true) => self.run_loop::<Plain<true, FLOWS, true>>(limit),
        }
    }

    /// The shape of this run, for the loop compiled for it (`shape.rs`): a known scheme where
    /// nothing else is in play, else `Any`. Failures, the directory and the shim are fixed when
    /// the world is built, so a run keeps its shape.
    fn shape(&self) -> Known {
        let plain = self.faults.is_none()
            && self.directory.is_none()
            && self.shims.is_none()
            && !self.scheduled
            && self.trace.is_none()
            && self.jitter.is_none()
            && self.link_jitter.is_none()
            && self.udp.is_none()
            && self.mcast.is_none();
        if plain && !self.general_only {
            self.fwd.known()
        } else {
            Known::Any
        }
    }

    /// How far this run looks ahead (fixed when the world is built; tests switch it).
    fn look(&self) -> Look {
        match (self.look_ahead, self.look_ahead_flows) {
            (false, _) => Look::Off,
            (true, false) => Look::Hops,
            (true, true) => Look::HopsAndFlows,
        }
    }

    /// `run_until`, compiled for shape `S`.
    /// The next event due by `limit`, taken off the calendar; `None` once none is (the clock
    /// then moves to `limit` unless the run has ended), or at a progress pause.
    #[inline(always)]
    fn next_due(&mut self, limit: Time) -> Option<(Time, crate::event::Packed)> {
        match self.queue.pop_due(limit, self.events < self.pause_at) {
            Next::Due(t, packed) => Some((t, packed)),
            Next::Later => {
                if !self.ended() {
                    self.now = limit;
                }
                None
            }
            Next::Held | Next::Empty => None,
        }
    }

    fn run_loop<S: Shape>(&mut self, limit: Time) -> Time {
        let limit = limit.min(self.max_time);
        if self.ended() {
            return self.now;
        }
        // The next event's hop, as the look-ahead predicted it (`NextHop`); a pause forgets it,
        // which only costs the first event after it a second choice.
        let mut next_hop = NextHop::NONE;
        let mut seen = Seen::NONE;
        while let Some((t, packed)) = self.next_due(limit) {
            // An arrival, nearly every event, stays in registers (`event::Packed`).
            let arrival = packed.as_arrival();
            // The hop this event's packet was predicted to take, one event ago.
            let hint = std::mem::replace(&mut next_hop, NextHop::NONE);
            let look_ahead = match S::LOOK {
                Look::Asked => self.look_ahead,
                look => look != Look::Off,
            };
            if look_ahead {
                next_hop = self.prefetch_ahead::<S>(&mut seen);
            } else {
                // The packets of the next two events: on small fabrics the rest is in the cache.
                for i in 0..2 {
                    if let Some((_, pkt)) = self.queue.arrival_ahead(i) {
                        self.pool.prefetch(pkt);
                    }
                }
            }
            self.now = t;
            self.events += 1;
            match arrival {
                Some((node, pkt)) => self.arrive::<S>(node, pkt, hint),
                None => {
                    let event = self.queue.unpack(packed);
                    self.on_event(event);
                }
            }
        }
        self.now
    }

    /// Whether the run is over before its time: every flow done, under `all_flows_done`.
    fn ended(&self) -> bool {
        self.stop == Stop::AllFlowsDone && self.all_done()
    }

    /// Make the loop stop after the event being run if the run has ended: called where a flow
    /// finishes, instead of asking after every event (six instructions per event on B2). It
    /// holds the loop as a progress pause does (`pause_at`); `run_loop` sees it has ended.
    fn hold_if_ended(&mut self) {
        if self.ended() {
            self.pause_at = self.pause_at.min(self.events);
        }
    }

    /// Packet `pkt` arrives at `node`: a host takes it, a switch forwards it (by `hint` where
    /// the look-ahead chose its hop already).
    #[inline(always)]
    fn arrive<S: Shape>(&mut self, node: u32, pkt: u32, hint: NextHop) {
        if !S::PLAIN && self.faults.is_some() && self.lost_in_transit(pkt) {
            return;
        }
        if !S::PLAIN && self.mcast.is_some() && self.pool.get(pkt).has(multicast::FLAG_MC) {
            self.mc_arrive(node, pkt); // a multicast copy (`multicast.rs`)
            return;
        }
        if self.topo.is_host(node) {
            self.host_receive::<S>(pkt);
        } else {
            self.forward::<S>(node, pkt, hint);
        }
    }

    /// Every event but an arrival packed whole: timers, the scheme's control loop, samplers,
    /// failures and the directory. Out of the loop, which keeps arrivals in registers.
    #[inline(never)]
    fn on_event(&mut self, event: Event) {
        match event {
            // Only a node numbered u32::MAX, which no fabric has (`event::Packed`).
            Event::Arrive { node, pkt } => self.arrive::<General>(node, pkt, NextHop::NONE),
            Event::FlowStart { flow } => match self.resume_connection(flow) {
                Some(false) => {} // waits for its connection's previous message
                Some(true) => self.pump::<General>(flow),
                None => {
                    if self.start_udp(flow) {
                        return; // constant-rate (`udp.rs`): no window, no handshake
                    }
                    if self.params.handshake_rtt {
                        self.handshake(flow);
                    }
                    self.pump::<General>(flow)
                }
            },
            Event::Rto { flow, gen } => self.on_rto_event(flow, gen),
            Event::Rack { flow } => self.on_rack_event(flow),
            Event::HostDrain { host } => self.on_host_drain(host),
            Event::TsqWake { flow } => self.on_tsq_wake(flow),
            Event::PortDrain { port } => self.on_port_drain(port),
            Event::UdpSend { flow } => self.on_udp_send(flow),
            Event::DelayedAck { flow, gen } => {
                if let Some(ack) = self.receivers[flow as usize].on_delayed_ack_timer(gen) {
                    self.send_ack::<General>(flow, ack);
                }
            }
            Event::ShimFlush { flow, gen } => self.on_shim_timeout(flow, gen),
            Event::Tick => {
                let f = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now: self.now };
                for (at, switch, generation) in self.fwd.tick(&f) {
                    self.queue.schedule(at, Event::RulesInstalled { switch, generation });
                }
                if let Some(t) = self.fwd.tick_interval() {
                    self.queue.schedule(self.now + t, Event::Tick);
                }
            }
            Event::RulesInstalled { switch, generation } => self.fwd.rules_installed(switch, generation),
            Event::QueueSample => {
                self.recorder.sample_queues(&self.ports, self.now);
                let t = self.recorder.queue_interval.expect("sampling only when asked");
                self.queue.schedule(self.now + t, Event::QueueSample);
            }
            Event::CloseBin => {
                self.recorder.close_bin(&self.ports, self.now, self.activity());
                self.queue.schedule(self.now + self.recorder.bin, Event::CloseBin);
            }
            Event::LinkChange { change } => self.on_link_change(change),
            Event::Advertise { change } => self.on_advertise(change),
            Event::RouteInstall { switch, version } => self.on_route_install(switch, version),
            Event::Directory(e) => self.on_directory_event(e),
            Event::Service(e) => self.on_service_event(e),
            Event::McRebuild => self.on_mc_rebuild(),
        }
    }

    /// Walk the next switch hops' chains of loads ahead of time, one step per event, each step
    /// reading only what an earlier one prefetched (`prefetch.rs`): the packet eight events
    /// ahead ([`PACKET_AHEAD`]), with its destination the route entry two ahead, with that the
    /// output port's queue line one ahead (where the scheme's choice is predictable). On B2
    /// these were the three largest costs (docs/performance.md). What it found two ahead is kept
    /// in `seen` for the next step. A host event two ahead gets its NIC's queue line, which
    /// what it sends in answer is queued on (B2 under spraying 0.976x); where flows are many
    /// (`look_ahead_flows`), also the flow's state two ahead and the ranges it holds out of
    /// order one ahead. Changes no result. Returns the next event's hop where its prediction is
    /// exact (`exact_hops`), for that event to use instead of choosing again.
    #[inline]
    fn prefetch_ahead<S: Shape>(&self, seen: &mut Seen) -> NextHop {
        if let Some((_, pkt)) = self.queue.arrival_ahead(PACKET_AHEAD - 1) {
            self.pool.prefetch(pkt);
        }
        // A handle looked at ahead may be stale by the time its event runs, and any packet
        // anywhere: only hints come of it, and indexes are checked.
        let at_switch = |e: Option<(u32, u32)>| match e {
            Some((node, pkt)) if !self.topo.is_host(node) => {
                let p = self.pool.peek(pkt)?;
                let tor = *self.topo.host_tor.get(p.dst as usize)?;
                Some(Seen { node, pkt, tor, tor_index: *self.topo.tor_index.get(tor as usize)? })
            }
            _ => None,
        };
        // A host event, where flows are many enough to look ahead for: its packet.
        let at_host = |e: Option<(u32, u32)>| match e {
            Some((node, pkt)) if self.look_ahead_flows::<S>() && self.topo.is_host(node) => self.pool.peek(pkt),
            _ => None,
        };
        let (one, two) = (self.queue.arrival_ahead(0), self.queue.arrival_ahead(1));
        // The event one ahead, as seen two ahead one event ago where it was.
        let carried = std::mem::replace(seen, Seen::NONE);
        if let Some(s) = at_switch(two) {
            // A switch hop short of the destination's ToR: one that routing and the scheme decide.
            if s.tor != s.node {
                self.routes.prefetch_toward_tor(s.node, s.tor_index, self.fwd.picks_by_span_known(S::KNOWN));
            }
            *seen = s;
        } else if let Some((node, _)) = two.filter(|&(node, _)| self.topo.is_host(node)) {
            // What the host sends in answer leaves by its NIC's queue.
            if let Some(&port) = self.topo.port_start.get(node as usize) {
                self.ports.prefetch(port);
            }
            if let Some(p) = at_host(two) {
                self.prefetch_flow(p.flow as usize, p.has(crate::packet::FLAG_ACK));
            }
        }
        let one_at_switch = match one {
            Some((node, pkt)) if (node, pkt) == (carried.node, carried.pkt) => Some(carried),
            _ => at_switch(one),
        };
        let mut hop = NextHop::NONE;
        if let Some(Seen { node, pkt, tor, tor_index }) = one_at_switch {
            let port = match self.pool.peek(pkt) {
                Some(p) if tor == node => self.topo.host_down_port.get(p.dst as usize).copied(),
                Some(p) => {
                    let f = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now: self.now };
                    let port = self.fwd.predicted_port_known(S::KNOWN, &f, node, tor_index, p);
                    if let (Some(port), true) = (port, S::PLAIN || self.exact_hops) {
                        hop = NextHop { node, pkt, port };
                    }
                    port
                }
                None => None,
            };
            if let Some(port) = port {
                self.ports.prefetch(port);
            }
        } else if let Some(p) = at_host(one) {
            self.prefetch_flow_ranges(p.flow as usize, p.has(crate::packet::FLAG_ACK));
        }
        hop
    }

    /// Whether the look-ahead loads the flow state of host events, as shape `S` fixes it.
    #[inline(always)]
    fn look_ahead_flows<S: Shape>(&self) -> bool {
        match S::LOOK {
            Look::Asked => self.look_ahead_flows,
            look => look == Look::HopsAndFlows,
        }
    }

    /// Start loading the ranges flow `f` holds out of order (the sender's SACKed ranges for an
    /// ACK, the receiver's for data), read through the state `prefetch_flow` loaded one event
    /// earlier. `f` may be stale, as there.
    #[inline]
    fn prefetch_flow_ranges(&self, f: usize, ack: bool) {
        if ack {
            if let Some(s) = self.senders.get(f) {
                s.prefetch_ranges();
            }
        } else if let Some(r) = self.receivers.get(f) {
            r.prefetch_ranges();
        }
    }

    /// Start loading what a host event of flow `f` reads (`host_receive`): for an ACK the
    /// sender and its timer, for data the receiver and what delivering touches; for both the
    /// flow's addresses and hashes, which the packets it sends in answer need. `f` comes from a
    /// packet looked at ahead, which may be stale: indexes are checked.
    #[inline]
    fn prefetch_flow(&self, f: usize, ack: bool) {
        use crate::prefetch::{line, lines};
        let Some(spec) = self.flows.get(f) else { return };
        line(spec);
        line(&self.entropy[f]);
        if ack {
            lines(&self.senders[f]);
            line(&self.rto[f]);
        } else {
            lines(&self.receivers[f]);
            line(&self.senders[f]);
            line(&self.delivered_bytes[f]);
            line(&self.finished[f]);
        }
    }

    pub fn bin_width(&self) -> Time {
        self.bin
    }

    pub fn all_done(&self) -> bool {
        self.flows_done == self.flows.len()
    }

    /// What the recorder needs to tell an idle bin.
    fn activity(&self) -> crate::metrics::recorder::Activity {
        crate::metrics::recorder::Activity { sent: self.counters.sent, alive: self.in_flight() }
    }

    /// Packets still alive (in a queue or on a wire) after `run`.
    pub fn in_flight(&self) -> u64 {
        self.pool.live() as u64 + self.part.as_ref().map_or(0, |p| p.elsewhere)
    }

    /// sent = delivered + dropped + in flight, or an error.
    /// With multicast, every copy a switch made counts as sent too (`multicast.rs`).
    pub fn check_conservation(&self) -> Result<()> {
        let c = &self.counters;
        let replicas = self.mcast.as_ref().map_or(0, |m| m.counters.replicas);
        if c.sent + replicas != c.delivered + c.dropped + self.in_flight() {
            return Err(Error::Invariant(format!(
                "packet conservation: sent {} + multicast replicas {replicas} != delivered {} + dropped {} + in flight {}",
                c.sent,
                c.delivered,
                c.dropped,
                self.in_flight()
            )));
        }
        if let Some(m) = &self.mcast {
            let mc = &m.counters;
            if mc.sent + mc.replicas < mc.delivered + mc.dropped || m.in_flight() > self.in_flight() {
                return Err(Error::Invariant(format!(
                    "multicast conservation: sent {} + replicas {} against delivered {} + dropped {} + in flight {} (of {} packets alive)",
                    mc.sent,
                    mc.replicas,
                    mc.delivered,
                    mc.dropped,
                    m.in_flight(),
                    self.in_flight()
                )));
            }
        }
        Ok(())
    }

    /// A switch forwards a packet: straight down if it is the destination's ToR (which strips
    /// any VL2 encapsulation), otherwise wherever the load balancer says, or `hint` says for it.
    fn forward<S: Shape>(&mut self, node: u32, h: u32, hint: NextHop) {
        // VL2 directory (directory.rs): the ToR of a packet's LA delivers only AAs under it.
        if !S::PLAIN && self.directory.is_some() && !self.directory_at_switch(node, h) {
            return; // misdelivered: reported and dropped
        }
        if hint.node == node && hint.pkt == h {
            // A hop in transit, chosen by the look-ahead (`NextHop`). It hints only where the
            // scheme's choice is exact (ECMP, random spraying: no egress hook) on a fabric that
            // never changes, whose shortest paths cannot loop: no hop to count.
            self.transmit::<S>(hint.port, h);
            return;
        }
        // Controller mode (`control/`): the packet's versions; a two-phase update's old rows.
        let old_rows = !S::PLAIN && self.faults.as_ref().is_some_and(|f| f.control.is_some()) && {
            match self.control_hop(node, h) {
                Some(old) => old,
                None => return, // its version's rules are gone: dropped
            }
        };
        let pkt = self.pool.get_mut(h);
        if !S::PLAIN {
            pkt.hops += 1;
            if pkt.hops > MAX_HOPS {
                // Transient micro-loops are possible while switches hold different routing
                // versions; with a fixed fabric a loop is a bug.
                debug_assert!(self.faults.is_some(), "forwarding loop");
                if let Some(f) = self.faults.as_mut() {
                    f.looped += 1;
                }
                self.drop_packet(h, NO_LINK);
                return;
            }
        }
        let dst = pkt.dst as usize;
        let at_destination = self.topo.host_tor[dst] == node;
        if old_rows {
            failures::swap_old_rows(Arc::make_mut(&mut self.routes), &mut self.faults);
        }
        if !at_destination && !S::PLAIN && self.routes.has_holes && no_route(&self.topo, &self.routes, node, pkt) {
            if old_rows {
                failures::swap_old_rows(Arc::make_mut(&mut self.routes), &mut self.faults);
            }
            self.faults.as_mut().expect("holes only after failures").unroutable += 1;
            self.drop_packet(h, NO_LINK);
            return;
        }
        let f = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now: self.now };
        let port = if at_destination {
            self.fwd.at_destination_tor_known(S::KNOWN, &f, node, pkt);
            pkt.encap = 0;
            self.topo.host_down_port[dst]
        } else {
            let port = self.fwd.next_port_known(S::KNOWN, &f, node, pkt);
            self.fwd.on_egress_known(S::KNOWN, &f, port, pkt);
            port
        };
        if old_rows {
            failures::swap_old_rows(Arc::make_mut(&mut self.routes), &mut self.faults);
        }
        self.transmit::<S>(port, h);
    }

    /// A packet arriving over a link that failed since it was sent, or lost to the link's loss
    /// rate, is dropped and counted.
    #[inline(never)]
    fn lost_in_transit(&mut self, h: u32) -> bool {
        let via = self.pool.get(h).via;
        let faults = self.faults.as_mut().expect("checked by the caller");
        let lost = if self.ports.epoch[via as usize] != self.pool.get(h).epoch {
            self.ports.link_losses[via as usize] += 1;
            true
        } else if faults.lossy_drop(via) {
            faults.lost_to_loss += 1;
            true
        } else {
            false
        };
        if lost {
            self.drop_packet(h, via);
        }
        lost
    }

    /// Packet `h` is lost (at `port`, or `NO_LINK`): counted for the run and for its flow,
    /// traced if its flow is, and freed.
    pub(super) fn drop_packet(&mut self, h: u32, port: u32) {
        let pkt = self.pool.get(h);
        let flow = pkt.flow as usize;
        if let Some(d) = self.flow_drops.get_mut(flow) {
            *d += 1;
        }
        if let Some(t) = self.trace.as_mut() {
            let event = if pkt.has(FLAG_ACK) { TraceEvent::DropAck } else { TraceEvent::Drop };
            t.record(self.now, pkt.flow, event, pkt.seg, port, Marks::of(pkt));
        }
        let mc = pkt.has(multicast::FLAG_MC);
        self.pool.free(h);
        self.counters.dropped += 1;
        if let (true, Some(m)) = (mc, self.mcast.as_mut()) {
            m.counters.dropped += 1;
        }
        if self.udp.is_some() {
            self.udp_dropped(flow as u32);
        }
    }

    /// Offer packet `h` to `port`; it is dropped or scheduled to arrive at the far end.
    fn transmit<S: Shape>(&mut self, port: u32, h: u32) {
        if let (false, Some(f)) = (S::PLAIN, self.faults.as_mut()) {
            if self.ports.is_down(port) {
                let from = self.topo.ports[port as usize].from;
                let to = self.ports.peer(port);
                if !self.topo.is_host(from) && !self.topo.is_host(to) && f.converged() {
                    f.into_failed_converged += 1;
                }
                f.into_failed += 1;
                self.ports.link_losses[port as usize] += 1;
                self.drop_packet(h, port);
                return;
            }
            self.pool.get_mut(h).epoch = self.ports.epoch[port as usize];
        }
        let pkt = self.pool.get_mut(h);
        // Only DRILL and lost packets ask by which link a packet came, and neither runs plain.
        if !S::PLAIN {
            pkt.via = port;
        }
        // Nothing encapsulates a packet in a plain run (VLB and the directory do not run so).
        debug_assert!(!S::PLAIN || pkt.encap == 0);
        let wire = if S::PLAIN { crate::packet::wire::frame(pkt.payload as u64, 0) } else { pkt.wire_bytes() };
        if !S::PLAIN && self.ports.schedules(port) {
            self.offer(port, h, wire);
            return;
        }
        match self.ports.enqueue(port, wire, pkt.has(crate::packet::FLAG_ECT), self.now, !S::PLAIN) {
            Enqueued::Dropped => {
                self.drop_packet(h, port);
            }
            Enqueued::Accepted { arrival, to, mark, .. } => {
                if mark {
                    self.pool.get_mut(h).flags |= FLAG_CE;
                }
                // Plain runs have no link noise (`shape`), and do not ask.
                let arrival = if S::PLAIN { arrival } else { self.link_arrival(port, arrival) };
                self.send_on::<S>(arrival, to, h);
            }
        }
    }

    /// Offer packet `h` to a port with class queues (`fabric/scheduler.rs`).
    #[inline(never)]
    fn offer(&mut self, port: u32, h: u32, wire: u64) {
        let pkt = self.pool.get(h);
        let class = self.service_class[self.flows[pkt.flow as usize].service as usize];
        match self.ports.offer(port, class, h, wire, pkt.has(crate::packet::FLAG_ECT), self.now) {
            Offered::Dropped => self.drop_packet(h, port),
            Offered::Started(accepted) => self.depart(port, h, accepted),
            Offered::Waiting { drain_at } => {
                if let Some(at) = drain_at {
                    self.queue.schedule(at, Event::PortDrain { port });
                }
            }
        }
    }

    /// `port`'s link is free: its scheduler's next packet leaves.
    fn on_port_drain(&mut self, port: u32) {
        let (started, next) = self.ports.drain(port, self.now);
        if let Some((h, accepted)) = started {
            self.depart(port, h, accepted);
        }
        if let Some(at) = next {
            self.queue.schedule(at, Event::PortDrain { port });
        }
    }

    /// A packet a scheduled port accepted leaves for the far end.
    fn depart(&mut self, port: u32, h: u32, accepted: Enqueued) {
        if let Enqueued::Accepted { arrival, to, mark, .. } = accepted {
            if mark {
                self.pool.get_mut(h).flags |= FLAG_CE;
            }
            let arrival = self.link_arrival(port, arrival);
            self.send_on::<General>(arrival, to, h);
        }
    }

    /// Packet `h` is on its way to node `to`, where it arrives at `arrival`: an event in this
    /// world's calendar, or, in a parallel run, a message to the partition that runs `to`.
    #[inline(always)]
    fn send_on<S: Shape>(&mut self, arrival: Time, to: u32, h: u32) {
        if let (true, Some(p)) = (S::PARTED, self.part.as_deref_mut()) {
            if !p.owns(to) {
                let dest = p.of_node[to as usize] as usize;
                p.outbox[dest].push(parallel::Message { time: arrival, node: to, pkt: *self.pool.get(h) });
                self.pool.free(h);
                return;
            }
        }
        self.queue.schedule_arrival(arrival, to, h);
    }

    /// Packets other partitions handed over in the window that ends at `end` (`parallel.rs`),
    /// into the calendar in the order given.
    fn take_messages(&mut self, messages: &mut Vec<parallel::Message>, end: Time) {
        for m in messages.drain(..) {
            debug_assert!(m.time >= end, "a message arrives within the window it was sent in");
            let h = self.pool.alloc(m.pkt);
            self.queue.schedule_arrival(m.time, m.node, h);
        }
    }

    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The load balancer's own counters (LocalFlow splits, flowlets ...).
    pub fn load_balancer_stats(&self) -> serde_json::Value {
        self.fwd.stats()
    }

    /// Reorder-shim counters: segments held, and flushes forced by the timeout.
    pub fn shim_stats(&self) -> Option<(u64, u64)> {
        self.shims.as_ref().map(|v| (v.iter().map(|s| s.held_total).sum(), v.iter().map(|s| s.timeouts).sum()))
    }

    /// Everything a run produces, for `metrics`.
    pub fn output(&self, cpu_seconds: f64, wall_seconds: f64, peak_memory: u64) -> RunOutput<'_> {
        RunOutput { world: self, cpu_seconds, wall_seconds, peak_memory, params: &self.params }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmarks' traffic for the tests that compare two ways of running it: a DCTCP
    /// permutation of long cross-pod flows on a k-ary fat tree at 10 Gb/s, for 300 us.
    pub(in crate::sim) fn dctcp_permutation(seed: u64, k: u32, buffer: &str, ecn_threshold: &str, scheme: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"seed": {seed}, "stop": "300us",
                "topology": {{"kind": "fat_tree", "k": {k}, "host_rate": "10Gbps", "fabric_rate": "10Gbps"}},
                "switch": {{"buffer": "{buffer}", "ecn_threshold": "{ecn_threshold}"}},
                "routing": {{"scheme": "{scheme}"}}, "transport": {{"kind": "dctcp"}},
                "workload": {{"kind": "permutation", "bytes": "1GB", "cross_pod": true}}}}"#
        ))
        .unwrap()
    }

    /// By hand, a connection's handshake (`transport.handshake_rtt`, on in the `linux` preset):
    /// two hosts under one leaf at 10 Gb/s with 1 us links; a SYN or SYN-ACK is an 84-byte
    /// frame (40 B of headers, 18 of Ethernet, 20 of preamble and gap), 67.2 ns a hop, so the
    /// round trip is 4 x (67.2 ns + 1 us) = 4.2688 us. The sender has it as its first sample
    /// before its first segment: Linux's RTO is that plus `rto_min` (200 ms), and the loss probe
    /// after the initial window is due two round trips and 2 ms on.
    #[test]
    fn a_connection_starts_with_its_handshakes_round_trip() {
        let s = Scenario::from_json(
            r#"{"topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2, "host_rate": "10Gbps",
                "fabric_rate": "10Gbps", "link_delay": "1us"}, "transport": {"preset": "linux"},
                "workload": {"kind": "permutation", "bytes": 100000}}"#,
        )
        .unwrap();
        let mut w = World::new(&s).unwrap();
        w.run_until(0);
        let rtt = 4_268_800;
        assert_eq!(w.senders[0].srtt(), Some(rtt));
        assert_eq!(w.senders[0].rto(&w.params), rtt + 200_000_000_000);
        assert_eq!(w.senders[0].probe_at, 2 * rtt + crate::transport::tcp::TIMEOUT_MIN);
    }

    /// By hand, Linux's RTO restart when the oldest segment is resent
    /// (`transport.resend_restarts_rto`, on in both Linux presets; `tcp_xmit_retransmit_queue`):
    /// the handshake test's two hosts (a FIFO NIC queue without TSQ, so that nothing holds the
    /// resent segment back), whose first window leaves at 0 with the RTO due a round trip and
    /// 200 ms on. At 1 ms three SACKs above segment 0 (made up: 0 lost) start recovery,
    /// and 0 goes out again: with the restart the RTO is due a whole RTO after 1 ms; without
    /// (RFC 6298), it stays where the first window set it.
    #[test]
    fn resending_the_oldest_segment_restarts_the_rto_as_linux() {
        for restart in [true, false] {
            let s = Scenario::from_json(&format!(
                r#"{{"topology": {{"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2, "host_rate": "10Gbps",
                    "fabric_rate": "10Gbps", "link_delay": "1us"}}, "host": {{"qdisc": "fifo", "tsq": "off"}},
                    "transport": {{"preset": "linux", "resend_restarts_rto": {restart}}},
                    "workload": {{"kind": "permutation", "bytes": 100000}}}}"#
            ))
            .unwrap();
            let mut w = World::new(&s).unwrap();
            w.run_until(0);
            let first = 4_268_800 + 200_000_000_000;
            assert_eq!(w.rto[0].deadline, Some(first));
            w.now = crate::units::PS_PER_MS;
            let now = w.now;
            w.senders[0].on_ack(now, 0, &[(1, 4), (0, 0), (0, 0)], false, 0, &w.params);
            w.pump::<shape::General>(0);
            assert_eq!(w.senders[0].stats.retransmits, 1, "segment 0 resent");
            let due = if restart { now + w.senders[0].rto(&w.params) } else { first };
            assert_eq!(w.rto[0].deadline, Some(due), "restart {restart}");
        }
    }

    /// Where the flow state is loaded ahead: B2's 1,024 flows and B3's 3,456, whose runs were
    /// measured faster with it, and not B1's 128, whose state the caches hold
    /// (`FLOW_LOOK_AHEAD_BYTES`). A per-flow struct that grows or shrinks moves the line, and
    /// this says so.
    #[test]
    #[allow(clippy::assertions_on_constants)] // a runtime check, to print the size when it fails
    fn flow_state_is_loaded_ahead_for_b2_and_b3_not_b1() {
        assert!(128 * FLOW_BYTES < FLOW_LOOK_AHEAD_BYTES, "B1: {} B per flow", FLOW_BYTES);
        assert!(1024 * FLOW_BYTES > FLOW_LOOK_AHEAD_BYTES, "B2: {} B per flow", FLOW_BYTES);
    }

    /// Looking ahead (`prefetch_ahead`, with the flow state of host events) only hints at the
    /// cache: B2's fabric, where it is on, runs the same events to the same counts with it off,
    /// under the schemes whose choices it predicts (ECMP, random spraying) and one whose
    /// choices it does not (DRILL).
    #[test]
    fn looking_ahead_changes_no_result() {
        for scheme in ["ecmp", "spray-random", "drill"] {
            looking_ahead_changes_no_result_under(scheme);
        }
    }

    fn looking_ahead_changes_no_result_under(scheme: &str) {
        let s = dctcp_permutation(1, 16, "300KB", "97.5KB", scheme);
        let run = |look_ahead: bool| {
            let mut w = World::new(&s).unwrap();
            assert!(w.look_ahead, "B2's fabric holds more than LOOK_AHEAD_BYTES of queues and rows");
            assert!(w.look_ahead_flows, "B2's 1,024 flows hold more than FLOW_LOOK_AHEAD_BYTES");
            w.look_ahead = look_ahead;
            w.look_ahead_flows = look_ahead;
            w.run();
            (w.events, w.counters.clone(), w.delivered_bytes.clone(), w.in_flight())
        };
        let (with, without) = (run(true), run(false));
        assert!(with.0 > 500_000, "{scheme}: long enough to fill queues: {} events", with.0);
        assert_eq!(with, without, "{scheme}");
    }
}
