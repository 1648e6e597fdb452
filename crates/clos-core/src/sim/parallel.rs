//! The partitioned engine: one run on several threads, with results that do not depend on how
//! many (docs/parallel.md).
//!
//! The fabric is cut into partitions (`topology/partition.rs`: pods, aggregation pairs, leaves),
//! each a [`World`] of its own that runs only its nodes' events and keeps only their state.
//! Time advances in windows of the lookahead L, the least time a packet takes from one partition
//! to another (propagation plus the smallest frame's serialisation on a cut link): every
//! partition runs its events in [s, s + L) on whichever thread holds it, and a packet put onto a
//! cut link is handed over as a message, which cannot arrive before s + L. At the barrier each
//! partition takes the messages addressed to it, in an order fixed by the window and the
//! partitions' numbers alone, and the next window starts at the earliest event left anywhere.
//! Conservative synchronisation with windows rather than null messages: on these fabrics every
//! partition borders nearly every other, so one barrier a window costs far less than a null
//! message per channel (the measurements in docs/parallel.md).
//!
//! What a run computes is a function of the partitions, never of the threads: each partition
//! runs its events in (time, scheduling order) within itself, what its scheme draws per packet
//! comes from a stream of its own (seeded from the scenario's seed and its number; the salts
//! every world draws alike when built), and the messages it receives enter its
//! calendar in the same order at every thread count. One thread runs the same windows as
//! sixteen, one partition after another. At the end the partitions' states are merged into one
//! world (`merge.rs`), which reports as a sequential run does.
//!
//! What crosses partitions other than over a link has no place in this engine yet; a scenario
//! that needs it is refused with an error naming the feature ([`check`]).

use super::barrier::SpinBarrier;
use super::World;
use crate::error::{bad, Result};
use crate::packet::Packet;
use crate::routing::Routes;
use crate::scenario::{Scenario, Stop};
use crate::topology::partition::{partition, Partitioning};
use crate::topology::Topology;
use crate::units::Time;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A packet handed from one partition to another: it arrives at `node` at `time`.
#[derive(Clone, Copy)]
pub struct Message {
    pub time: Time,
    pub node: u32,
    pub pkt: Packet,
}

/// What a world running one partition knows of the others.
#[derive(Clone)]
pub struct Part {
    /// Every node's partition, shared by all.
    pub of_node: Arc<Vec<u32>>,
    pub me: u32,
    /// The fabric (each world takes a copy) and its routes (shared), built once for every
    /// partition (`World::common`).
    pub topo: Arc<Topology>,
    pub routes: Arc<Routes>,
    /// Messages to each partition from this window.
    pub outbox: Vec<Vec<Message>>,
    /// Packets in flight that this world's pool does not hold: after a merge, those alive in
    /// the other partitions' pools (every message has been taken in by then).
    pub elsewhere: u64,
}

impl Part {
    fn new(of_node: Arc<Vec<u32>>, me: u32, partitions: usize, (topo, routes): &(Arc<Topology>, Arc<Routes>)) -> Part {
        Part { of_node, me, topo: topo.clone(), routes: routes.clone(), outbox: vec![Vec::new(); partitions], elsewhere: 0 }
    }

    #[inline]
    pub fn owns(&self, node: u32) -> bool {
        self.of_node[node as usize] == self.me
    }
}

/// What a parallel run did, for its report.
pub struct Ran {
    pub world: World,
    pub threads: usize,
    pub partitions: usize,
    pub windows: u64,
    /// CPU seconds of all its threads.
    pub cpu_seconds: f64,
}

/// Why scenario `s` cannot run partitioned, if it cannot: the first feature that crosses
/// partitions other than over a link (docs/parallel.md, "What else crosses partitions").
pub fn check(s: &Scenario) -> Result<()> {
    use crate::lb::Scheme;
    let refuse = |field: &str, what: &str| Err(refusal(field, what));
    if !s.failures.is_empty() {
        return refuse("failures", "link and switch failures (a global step and routing convergence)");
    }
    if s.directory.is_some() {
        return refuse("directory", "the VL2 directory model (one shared directory state)");
    }
    if s.multicast.is_some() {
        return refuse("multicast", "multicast (tree rebuilds are global steps)");
    }
    if s.service.is_some() {
        return refuse("service", "the storage service (global state)");
    }
    if matches!(s.routing.scheme, Scheme::Localflow | Scheme::LocalflowNs) {
        return refuse("routing.scheme", "LocalFlow (its control loop reads every switch at once)");
    }
    if s.routing.scheme == Scheme::Conga {
        return refuse("routing.scheme", "CONGA (its leaves' congestion tables are shared)");
    }
    Ok(())
}

/// The error for `what`, which field `field` asks for and the engine cannot run.
fn refusal(field: &str, what: &str) -> crate::Error {
    bad(field, format!("{what} cannot run on the partitioned engine yet (docs/parallel.md); remove run.threads (or --threads) to run it sequentially"))
}

/// Why a built world cannot run partitioned: its workload starts flows across partitions at once.
fn check_world(w: &World) -> Result<()> {
    let refuse = |what: &str| Err(refusal("workload", what));
    if !w.closed_loop.is_empty() {
        return refuse("a closed-loop workload (a flow's end at its receiver starts its sender's next flow at once)");
    }
    if !w.continues.is_empty() {
        return refuse("persistent connections (incast's connections: the next message waits for the last one's arrival)");
    }
    if w.udp.is_some() {
        return refuse("constant-rate (UDP-like) flows");
    }
    // A request's arrival starts its response at the same host: inside one partition.
    if w.answers.iter().any(|(&req, &resp)| w.flows[req as usize].dst != w.flows[resp as usize].src) {
        return refuse("flows started by another flow's arrival at another host (incast's responses, a sequential shuffle)");
    }
    Ok(())
}

/// Partitions to threads: by nodes, most first, each to the least loaded thread (ties by
/// number). Which thread runs a partition changes nothing in the results.
fn assign(cut: &Partitioning, threads: usize) -> Vec<Vec<u32>> {
    let mut nodes = vec![0u64; cut.count];
    for &p in &cut.of_node {
        nodes[p as usize] += 1;
    }
    let mut order: Vec<u32> = (0..cut.count as u32).collect();
    order.sort_by_key(|&p| (std::cmp::Reverse(nodes[p as usize]), p));
    let mut load = vec![0u64; threads];
    let mut mine = vec![Vec::new(); threads];
    for p in order {
        let t = (0..threads).min_by_key(|&t| (load[t], t)).expect("a thread");
        load[t] += nodes[p as usize];
        mine[t].push(p);
    }
    for m in &mut mine {
        m.sort_unstable();
    }
    mine
}

/// What the threads share between windows.
struct Shared {
    barrier: SpinBarrier,
    /// The partitions' worlds: a thread takes one's lock for as long as it runs it.
    worlds: Vec<Mutex<World>>,
    /// Each partition's messages of the window just run, by destination (swapped in and out of
    /// its world's outbox).
    outboxes: Vec<Mutex<Vec<Vec<Message>>>>,
    /// Per partition, how many windows it has run, and how many windows' messages it has taken
    /// in: a thread claims a partition for window w by moving its count from w to w + 1.
    ran: Vec<AtomicU64>,
    took: Vec<AtomicU64>,
    /// Each partition's next event time after taking its messages, flows finished, and events.
    next: Vec<AtomicU64>,
    done: Vec<AtomicU64>,
    events: Vec<AtomicU64>,
    /// Set by the first thread between a window's two barriers: stop after it.
    cancelled: AtomicBool,
}

impl Shared {
    /// Do `work` on every partition not yet claimed in window `w` by `claims`: this thread's own
    /// first (`mine`), then any other's still waiting, so that a thread done early helps the
    /// others. Which thread runs a partition changes nothing in what the partition computes.
    fn each(&self, claims: &[AtomicU64], w: u64, mine: &[u32], mut work: impl FnMut(u32, &mut World)) {
        let partitions = claims.len() as u32;
        let start = mine.first().copied().unwrap_or(0);
        for p in mine.iter().copied().chain((0..partitions).map(|i| (start + i) % partitions)) {
            if claims[p as usize].compare_exchange(w, w + 1, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                work(p, &mut self.worlds[p as usize].lock().expect("a world"));
            }
        }
    }
}

/// Run scenario `s` on the partitioned engine with `threads` threads; `progress` is called
/// between windows on the calling thread and stops the run by returning false (`None`).
pub fn run(s: &Scenario, threads: usize, progress: &mut dyn FnMut(&super::Progress) -> bool) -> Result<Option<Ran>> {
    check(s)?;
    let common = World::common(s)?;
    let topo = &common.0;
    let mut cut = partition(topo, super::windows::layout(s));
    if let Some(groups) = s.run.partitions {
        if groups as usize > cut.count {
            let message = format!("this fabric has {} partitions ({}); give at most that many", cut.count, cut.rule);
            return Err(bad("run.partitions", message));
        }
        cut = cut.grouped(topo, groups as usize);
    }
    let partitions = cut.count;
    let threads = threads.clamp(1, partitions);
    let lookahead = cut.lookahead.unwrap_or(Time::MAX / 4);
    let of_node = Arc::new(cut.of_node.clone());
    let mine = assign(&cut, threads);

    // Each thread builds its own partitions' worlds.
    let built: Vec<Result<Vec<(u32, World)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = mine
            .iter()
            .map(|ps| {
                let (of_node, common) = (&of_node, &common);
                scope.spawn(move || ps.iter().map(|&p| World::build(s, Some(Part::new(of_node.clone(), p, partitions, common))).map(|w| (p, w))).collect())
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a builder thread panicked")).collect()
    });
    let mut worlds: Vec<(u32, World)> = Vec::with_capacity(partitions);
    for b in built {
        worlds.extend(b?);
    }
    worlds.sort_by_key(|(p, _)| *p);
    for (_, w) in &worlds {
        check_world(w)?;
    }
    let flows = worlds[0].1.flows.len() as u64;
    let max_time = worlds[0].1.max_time;
    let until_done = s.stop == Stop::AllFlowsDone;
    let first = worlds.iter_mut().filter_map(|(_, w)| w.queue.peek_time()).min().unwrap_or(Time::MAX);
    let shared = Shared {
        barrier: SpinBarrier::new(threads),
        worlds: worlds.into_iter().map(|(_, w)| Mutex::new(w)).collect(),
        outboxes: (0..partitions).map(|_| Mutex::new(vec![Vec::new(); partitions])).collect(),
        ran: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        took: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        next: (0..partitions).map(|_| AtomicU64::new(Time::MAX)).collect(),
        done: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        events: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        cancelled: AtomicBool::new(false),
    };

    // The windows. The first thread is this one, which alone reports progress.
    let run = Window { shared: &shared, lookahead, max_time, until_done, flows };
    let (windows, cpu_seconds) = std::thread::scope(|scope| {
        let handles: Vec<_> = mine[1..].iter().map(|m| scope.spawn(move || run.windows(first, m, &mut None))).collect();
        let (windows, mut cpu) = run.windows(first, &mine[0], &mut Some(progress));
        for h in handles {
            cpu += h.join().expect("a partition thread panicked").1;
        }
        (windows, cpu)
    });
    if shared.cancelled.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let worlds = shared.worlds.into_iter().map(|w| w.into_inner().expect("a world")).collect();
    let world = super::merge::merge(worlds, s.stop);
    Ok(Some(Ran { world, threads, partitions, windows, cpu_seconds }))
}

/// What every thread runs the windows with.
#[derive(Clone, Copy)]
struct Window<'a> {
    shared: &'a Shared,
    lookahead: Time,
    max_time: Time,
    until_done: bool,
    flows: u64,
}

impl Window<'_> {
    /// Run windows from `start` with the other threads until the run ends, taking this thread's
    /// partitions `mine` first; returns the windows run and this thread's CPU seconds.
    fn windows(&self, mut start: Time, mine: &[u32], progress: &mut Option<&mut dyn FnMut(&super::Progress) -> bool>) -> (u64, f64) {
        let sh = self.shared;
        let cpu0 = crate::stats::thread_cpu_seconds();
        let partitions = sh.worlds.len();
        let mut sense = false;
        let mut window: u64 = 0;
        let mut reported_at = 0u64;
        while start <= self.max_time {
            let end = start.saturating_add(self.lookahead).min(self.max_time.saturating_add(1));
            sh.each(&sh.ran, window, mine, |p, w| {
                w.run_until(end - 1);
                // The slot's messages were all taken last window: its empty vectors go back.
                let part = w.part.as_mut().expect("a partition's world");
                std::mem::swap(&mut *sh.outboxes[p as usize].lock().expect("an outbox"), &mut part.outbox);
            });
            sh.barrier.wait(&mut sense);
            // Take this window's messages, from the partitions in an order that turns with the
            // window, so that no partition's packets always come first at a tie.
            sh.each(&sh.took, window, mine, |p, w| {
                for i in 0..partitions {
                    let from = (i + window as usize) % partitions;
                    w.take_messages(&mut sh.outboxes[from].lock().expect("an outbox")[p as usize], end);
                }
                let p = p as usize;
                sh.next[p].store(w.queue.peek_time().unwrap_or(Time::MAX), Ordering::Relaxed);
                sh.done[p].store(w.flows_done as u64, Ordering::Relaxed);
                sh.events[p].store(w.events, Ordering::Relaxed);
            });
            if let Some(report) = progress.as_mut() {
                let events: u64 = sh.events.iter().map(|e| e.load(Ordering::Relaxed)).sum();
                if events >= reported_at + crate::PROGRESS_EVERY {
                    reported_at = events;
                    let done: u64 = sh.done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
                    let p = super::Progress { now: end, end: self.max_time, flows_done: done as usize, flows: self.flows as usize, events };
                    if !report(&p) {
                        sh.cancelled.store(true, Ordering::Relaxed);
                    }
                }
            }
            sh.barrier.wait(&mut sense);
            window += 1;
            if sh.cancelled.load(Ordering::Relaxed) {
                break;
            }
            let done: u64 = sh.done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
            if self.until_done && done == self.flows {
                break;
            }
            start = sh.next.iter().map(|n| n.load(Ordering::Relaxed)).min().unwrap_or(Time::MAX);
        }
        (window, crate::stats::thread_cpu_seconds() - cpu0)
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    fn scenario(extra: &str) -> Scenario {
        Scenario::from_json(&scenario_json(extra)).unwrap()
    }

    fn scenario_json(extra: &str) -> String {
        format!(
            r#"{{"seed": 5, "stop": "all_flows_done",
                "topology": {{"kind": "fat_tree", "k": 4}},
                "switch": {{"buffer": "30KB", "ecn_threshold": "15KB"}},
                "transport": {{"kind": "dctcp"}},
                "workload": {{"kind": "permutation", "bytes": "300KB"}},
                "output": {{"queue_interval": "20us", "bin": "100us", "link_timeseries": true}}
                {extra}}}"#
        )
    }

    /// Everything a run computed, and its partition count: what the run cost (CPU and wall
    /// time, memory) and how it was executed left out.
    fn computed(s: &Scenario) -> (String, serde_json::Value) {
        let mut r = crate::run(s).unwrap();
        let partitions = r.summary["stats"]["partitions"].clone();
        for key in ["cpu_seconds", "wall_seconds", "events_per_sec", "peak_memory_bytes", "engine", "threads", "partitions", "windows"] {
            r.summary["stats"][key] = serde_json::Value::Null;
        }
        r.summary["scenario"] = serde_json::Value::Null; // which says how many threads
        let tables = format!("{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}", r.flows, r.links, r.timeseries, r.queues, r.link_timeseries, r.trace);
        (format!("{}\n{tables}", r.summary), partitions)
    }

    #[test]
    fn results_are_identical_at_every_thread_count() {
        for (extra, partitions) in [
            (r#", "run": {"threads": 1}"#, 4),
            (r#", "routing": {"scheme": "drill"}, "run": {"threads": 1}"#, 4),
            (r#", "routing": {"scheme": "spray-random"}, "run": {"threads": 1, "partitions": 3}"#, 3),
            (r#", "switch": {"buffer": "30KB", "ecn_threshold": "15KB", "pool": "60KB"}, "run": {"threads": 1}"#, 4),
            (
                r#", "host": {"jitter": "2us"}, "topology": {"kind": "fat_tree", "k": 4, "link_jitter": "1us"},
                   "output": {"trace": [0, 5, 11], "bin": "100us"}, "run": {"threads": 1}"#,
                4,
            ),
            (
                r#", "switch": {"buffer": "30KB", "ecn_threshold": "15KB", "classes": [{"weight": 1}, {"weight": 3}]}, "run": {"threads": 1},
                   "workload": {"kind": "services", "services": [{"kind": "permutation", "bytes": "300KB", "class": 0},
                                                                 {"kind": "permutation", "bytes": "300KB", "class": 1}]}"#,
                4,
            ),
        ] {
            let (one, p) = computed(&scenario(extra));
            assert_eq!(p, partitions, "a k = 4 fat tree runs as its 4 pods, or as asked");
            for threads in [2, 3, 4] {
                let (many, _) = computed(&scenario(&extra.replace("\"threads\": 1", &format!("\"threads\": {threads}"))));
                assert!(one == many, "{threads} threads gave other results than 1 ({extra})");
            }
        }
    }

    /// Incast's requests start their responses where they arrive, in every partition.
    #[test]
    fn incast_requests_and_responses_run_across_partitions() {
        let json = r#"{"seed": 3, "stop": "all_flows_done", "topology": {"kind": "fat_tree", "k": 4},
            "workload": {"kind": "incast", "requesters": 2, "fan_in": 6, "bytes": "20KB", "request": "100B"}"#;
        let one = computed(&Scenario::from_json(&format!(r#"{json}, "run": {{"threads": 1}}}}"#)).unwrap());
        let two = computed(&Scenario::from_json(&format!(r#"{json}, "run": {{"threads": 2}}}}"#)).unwrap());
        assert!(one.0 == two.0);
        let r = crate::run(&Scenario::from_json(&format!(r#"{json}, "run": {{"threads": 2}}}}"#)).unwrap()).unwrap();
        assert_eq!(r.summary["flows"]["finished"], r.summary["flows"]["count"]);
        assert_eq!(r.summary["flows"]["count"], 24, "12 requests and 12 responses");
    }

    /// One partition is the whole fabric in one world: the sequential run, event for event.
    #[test]
    fn one_partition_is_the_sequential_run() {
        assert_eq!(computed(&scenario(r#", "run": {"threads": 1, "partitions": 1}"#)).0, computed(&scenario("")).0);
    }

    #[test]
    fn every_flow_finishes_and_every_packet_is_counted() {
        let r = crate::run(&scenario(r#", "run": {"threads": 2}"#)).unwrap();
        let p = &r.summary["packets"];
        assert_eq!(r.summary["flows"]["finished"], 16);
        assert!(p["dropped"].as_u64().unwrap() > 0, "30 KB buffers drop: {p}");
        assert_eq!(p["sent"].as_u64().unwrap(), p["delivered"].as_u64().unwrap() + p["dropped"].as_u64().unwrap() + p["in_flight"].as_u64().unwrap());
    }

    /// One flow on an idle fabric meets no other event at its picoseconds and draws nothing
    /// at random that changes its timing (every path is as long): the partitioned engine must
    /// give exactly the sequential engine's completion time, to the picosecond, across pods.
    #[test]
    fn a_lone_flow_across_pods_completes_exactly_as_in_a_sequential_run() {
        let csv = std::env::temp_dir().join(format!("clos-lone-flow-{}.csv", std::process::id()));
        std::fs::write(&csv, "src,dst,bytes,start\n0,15,1000000,0\n").unwrap();
        let json = |threads: &str| {
            format!(
                r#"{{"stop": "all_flows_done", "topology": {{"kind": "fat_tree", "k": 4}},
                    "workload": {{"kind": "flows", "file": "{}"}}, "output": {{"trace": [0]}} {threads}}}"#,
                csv.display()
            )
        };
        let seq = crate::run(&Scenario::from_json(&json("")).unwrap()).unwrap();
        let par = crate::run(&Scenario::from_json(&json(r#", "run": {"threads": 2}"#)).unwrap()).unwrap();
        assert_eq!(par.summary["stats"]["partitions"], 4);
        assert!(seq.flows.finished[0] && par.flows.finished[0]);
        assert_eq!(par.flows.fct_ps, seq.flows.fct_ps);
        assert_eq!(par.flows.delivered, seq.flows.delivered);
        assert!(seq.trace.time_ps.len() > 1000, "every packet of the flow is traced");
        let rows = |t: &crate::metrics::trace::TraceTable| {
            (0..t.time_ps.len()).map(|i| format!("{} {} {} {} {}", t.time_ps[i], t.flow[i], t.event[i], t.seg[i], t.link[i])).collect::<Vec<_>>().join("\n")
        };
        // The partitions also ran the rest of the last window: an ACK reaches the sender.
        let (par_rows, seq_rows) = (rows(&par.trace), rows(&seq.trace));
        assert!(par_rows.starts_with(&seq_rows), "the same packets at the same picoseconds");
        let end = seq.flows.end_ps[0];
        let extra = &par.trace.time_ps[seq.trace.time_ps.len()..];
        assert!(extra.iter().all(|&t| t > end && t < end + 1_100_000), "only the last window's rest: {extra:?}");
        assert_eq!(par.summary["packets"]["dropped"], 0);
    }

    #[test]
    fn what_crosses_partitions_otherwise_is_refused_by_name() {
        let field = |extra: &str| match Scenario::from_json(&scenario_json(extra)).and_then(|s| crate::run(&s)) {
            Err(crate::Error::Scenario { field, message }) => {
                assert!(field.starts_with("run.") || message.contains("remove run.threads"), "{message}");
                field
            }
            other => panic!("expected a refusal, got {:?}", other.map(|r| r.summary["stats"].clone())),
        };
        assert_eq!(field(r#", "run": {"threads": 2}, "failures": [{"at": "1ms", "action": "down", "link": ["core0", "agg2"]}]"#), "failures");
        assert_eq!(field(r#", "run": {"threads": 2}, "routing": {"scheme": "conga"}"#), "routing.scheme");
        assert_eq!(field(r#", "run": {"threads": 0}"#), "run.threads");
        assert_eq!(field(r#", "run": {"threads": 2, "partitions": 5}"#), "run.partitions");
        assert_eq!(field(r#", "run": {"partitions": 2}"#), "run.partitions");
    }
}
