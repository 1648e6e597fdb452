//! What a conservative window engine could gain on a run (issue 34), measured before one is
//! built: the run's events counted per partition (`topology::partition`) per window of the
//! lookahead's width, and the speedup that windows would give at a number of threads.
//!
//! A window engine runs every partition's events in `[s, s + L)` in parallel, L the lookahead,
//! then waits at a barrier: no event in the window can affect another partition before `s + L`,
//! as a packet takes at least L over a cut link. The next window starts at the earliest event
//! left (empty stretches cost nothing). An event that is no partition's (a sampler, a control
//! loop, a failure: [`GLOBAL`]) closes the window and runs alone, then a barrier.
//!
//! The analysis is its own loop ([`World::run_windows`]): it pops the events itself and runs
//! them through the general handlers, which give the same results as the loops compiled for
//! plain runs (`shape.rs`). Normal runs never come here and pay nothing for it.
//!
//! The model of a window's cost: the busiest thread's events, with the partitions assigned to
//! threads once for the run by a deterministic greedy (partitions by their events, most first,
//! ties by number, each to the least loaded thread, ties by number), times the measured cost of
//! an event on one thread, plus a round of a spinning barrier measured on this machine with 2
//! threads ([`barrier_ns`]; a sleeping `std::sync::Barrier` is measured too, for comparison). It leaves
//! out what a real engine adds (cross-partition messages, the calendar per partition), so the
//! speedups are upper bounds.

use super::barrier::SpinBarrier;
use super::World;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::scenario::{Scenario, TopologyKind};
use crate::topology::partition::{partition, Layout, Partitioning};
use crate::units::Time;
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};

/// A barrier round's cost for the pessimistic estimate, in nanoseconds: many threads over
/// several cache domains, where the 2-thread round measured here is the best case.
pub const SLOW_BARRIER_NS: f64 = 1_000.0;

/// The partition of an event no partition owns.
pub const GLOBAL: u32 = u32::MAX;

/// What one analysed run counted.
#[derive(Clone, Debug, Default)]
pub struct WindowCounts {
    pub lookahead: Time,
    pub events: u64,
    /// Events no partition owns ([`GLOBAL`]).
    pub global_events: u64,
    /// Arrivals over a cut link: the events that would be messages between partitions.
    pub crossing: u64,
    /// Flows started by another flow's end (closed loops, incast answers, persistent
    /// connections) whose sender is in another partition than the ended flow's receiver: an
    /// effect that crosses at once, with no link between (the engine's to-do).
    pub instant_crossings: u64,
    pub per_partition: Vec<u64>,
    /// Windows in order: partition windows as `(partition, events)` for the partitions with
    /// any, and the serial steps of global events as one `(GLOBAL, events)`.
    window_start: Vec<u32>,
    cells: Vec<(u32, u32)>,
}

/// The model's estimate at one thread count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub threads: usize,
    /// Serial time over window time, with barriers.
    pub speedup: f64,
    /// The same without barriers: what load balance alone allows.
    pub balance_bound: f64,
}

/// How many threads this machine has (for the docs' tables).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How the threads of a window engine wait for each other at the end of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierKind {
    /// `std::sync::Barrier`: a mutex and a condition variable; a waiting thread sleeps.
    Std,
    /// A sense-reversing barrier on one atomic counter; a waiting thread spins, as a window
    /// engine with a core per thread would.
    Spin,
}

/// Nanoseconds one barrier round costs with `threads` threads (at least 2): the least of 21
/// runs of `rounds` rounds each, the cost when every thread has a core (on a machine that
/// others share, most runs also measure the scheduler handing a core back and forth).
pub fn barrier_ns(kind: BarrierKind, threads: usize, rounds: u32) -> f64 {
    let threads = threads.max(2);
    let runs = (0..21).map(|_| {
        let std_barrier = Arc::new(Barrier::new(threads));
        let spin = Arc::new(SpinBarrier::new(threads));
        let rounds_of = move |std_barrier: &Barrier, spin: &SpinBarrier| {
            let mut local = false;
            for _ in 0..rounds {
                match kind {
                    BarrierKind::Std => {
                        std_barrier.wait();
                    }
                    BarrierKind::Spin => spin.wait(&mut local),
                }
            }
        };
        let others: Vec<_> = (1..threads)
            .map(|_| {
                let (b, s) = (Arc::clone(&std_barrier), Arc::clone(&spin));
                std::thread::spawn(move || rounds_of(&b, &s))
            })
            .collect();
        let start = std::time::Instant::now();
        rounds_of(&std_barrier, &spin);
        let ns = start.elapsed().as_nanos() as f64 / rounds as f64;
        for o in others {
            o.join().expect("a barrier thread does not panic");
        }
        ns
    });
    runs.fold(f64::INFINITY, f64::min)
}

/// The partition that runs `event`: a packet's arrival its node's, a port's drain the port's
/// node's, sender-side flow events the sender's, receiver-side ones the receiver's, and every
/// other event [`GLOBAL`].
pub fn owner(w: &World, p: &Partitioning, event: &Event) -> u32 {
    let node = match *event {
        Event::Arrive { node, .. } => node,
        Event::PortDrain { port } => w.topo.ports[port as usize].from,
        Event::HostDrain { host } => host,
        Event::FlowStart { flow } | Event::Rto { flow, .. } | Event::Rack { flow } | Event::TsqWake { flow } | Event::UdpSend { flow } => {
            w.flows[flow as usize].src
        }
        Event::DelayedAck { flow, .. } | Event::ShimFlush { flow, .. } => w.flows[flow as usize].dst,
        _ => return GLOBAL,
    };
    p.of_node[node as usize]
}

impl World {
    /// Run to the stop condition as `run` does, counting events per partition per window of
    /// `p`'s lookahead (one window per event where there is no lookahead: one partition).
    pub fn run_windows(&mut self, p: &Partitioning) -> WindowCounts {
        let lookahead = p.lookahead.unwrap_or(1);
        let mut c = WindowCounts { lookahead, per_partition: vec![0; p.count], ..Default::default() };
        let mut current = vec![0u32; p.count];
        let mut touched: Vec<u32> = Vec::new();
        let mut window_end: Option<Time> = None;
        let mut globals = 0u32;
        // Flows added during the run (closed loops): the partition of the event that added
        // each, and when; incast answers: the request each answers.
        let initial_flows = self.flows.len();
        let mut added_by: Vec<(u32, Time)> = Vec::new();
        let answer_to: std::collections::HashMap<u32, u32> = self.answers.iter().map(|(&req, &ans)| (ans, req)).collect();
        let limit = self.max_time;
        loop {
            if self.ended() {
                break;
            }
            let Some((t, packed)) = self.next_due(limit) else { break };
            let event = self.queue.unpack(packed);
            let owner = owner(self, p, &event);
            if owner == GLOBAL {
                c.close(&mut current, &mut touched);
                window_end = None;
                globals += 1;
            } else {
                if globals > 0 {
                    c.window_start.push(c.cells.len() as u32);
                    c.cells.push((GLOBAL, std::mem::take(&mut globals)));
                }
                if window_end.is_none_or(|end| t >= end) {
                    c.close(&mut current, &mut touched);
                    window_end = Some(t + lookahead);
                }
                if current[owner as usize] == 0 {
                    touched.push(owner);
                }
                current[owner as usize] += 1;
                c.per_partition[owner as usize] += 1;
            }
            match event {
                Event::Arrive { node, pkt } => {
                    let via = self.pool.get(pkt).via;
                    if (via as usize) < self.topo.ports.len() && self.topo.ports[via as usize].to == node && p.crosses(&self.topo, via) {
                        c.crossing += 1;
                    }
                }
                Event::FlowStart { flow } => {
                    // Started at once by another partition's event: the end of a request, of a
                    // connection's previous message, or of a closed loop's flow.
                    let at_end_of = |f: u32| (self.finished[f as usize] == Some(t)).then(|| p.of_node[self.flows[f as usize].dst as usize]);
                    let cause = match (answer_to.get(&flow), self.continues.get(&flow)) {
                        (Some(&req), _) => at_end_of(req),
                        (None, Some(&prev)) => at_end_of(prev),
                        _ => (flow as usize).checked_sub(initial_flows).map(|i| added_by[i]).filter(|&(_, at)| t - at < lookahead).map(|x| x.0),
                    };
                    if cause.is_some_and(|q| q != owner) {
                        c.instant_crossings += 1;
                    }
                }
                _ => {}
            }
            self.now = t;
            self.events += 1;
            let flows = self.flows.len();
            self.on_event(event);
            added_by.extend((flows..self.flows.len()).map(|_| (owner, t)));
        }
        c.close(&mut current, &mut touched);
        if globals > 0 {
            c.window_start.push(c.cells.len() as u32);
            c.cells.push((GLOBAL, globals));
        }
        c.events = self.events;
        c.global_events = c.cells.iter().filter(|x| x.0 == GLOBAL).map(|x| x.1 as u64).sum();
        c
    }
}

impl WindowCounts {
    /// End the open window (if any events are in it).
    fn close(&mut self, current: &mut [u32], touched: &mut Vec<u32>) {
        if touched.is_empty() {
            return;
        }
        self.window_start.push(self.cells.len() as u32);
        for &p in touched.iter() {
            self.cells.push((p, std::mem::take(&mut current[p as usize])));
        }
        touched.clear();
    }

    /// Partition windows (not counting the serial steps of global events).
    pub fn windows(&self) -> usize {
        self.windows_iter().filter(|w| w.first().is_some_and(|c| c.0 != GLOBAL)).count()
    }

    /// Serial steps of global events.
    pub fn global_steps(&self) -> usize {
        self.windows_iter().filter(|w| w.first().is_some_and(|c| c.0 == GLOBAL)).count()
    }

    fn windows_iter(&self) -> impl Iterator<Item = &[(u32, u32)]> {
        (0..self.window_start.len()).map(|i| {
            let end = self.window_start.get(i + 1).map_or(self.cells.len(), |&e| e as usize);
            &self.cells[self.window_start[i] as usize..end]
        })
    }

    /// Each partition's thread at `threads` threads: partitions by their events, most first
    /// (ties by number), each to the thread with the fewest events so far (ties by number).
    pub fn assign(&self, threads: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.per_partition.len()).collect();
        order.sort_by_key(|&p| (std::cmp::Reverse(self.per_partition[p]), p));
        let mut load = vec![0u64; threads.max(1)];
        let mut thread_of = vec![0; self.per_partition.len()];
        for p in order {
            let t = (0..load.len()).min_by_key(|&t| (load[t], t)).expect("at least one thread");
            thread_of[p] = t;
            load[t] += self.per_partition[p];
        }
        thread_of
    }

    /// The model's speedup at `threads` threads, an event costing `ns_per_event` and a barrier
    /// `barrier_ns` (module documentation).
    pub fn estimate(&self, threads: usize, ns_per_event: f64, barrier_ns: f64) -> Estimate {
        let thread_of = self.assign(threads);
        let mut load = vec![0u64; threads.max(1)];
        let (mut busiest, mut steps) = (0u64, 0u64);
        for w in self.windows_iter() {
            steps += 1;
            if w[0].0 == GLOBAL {
                busiest += w[0].1 as u64;
                continue;
            }
            load.iter_mut().for_each(|l| *l = 0);
            for &(p, n) in w {
                load[thread_of[p as usize]] += n as u64;
            }
            busiest += load.iter().max().copied().unwrap_or(0);
        }
        let serial = self.events as f64 * ns_per_event;
        let parallel = busiest as f64 * ns_per_event + steps as f64 * barrier_ns;
        let ratio = |x: f64| if x > 0.0 { serial / x } else { 1.0 };
        Estimate { threads, speedup: ratio(parallel), balance_bound: ratio(busiest as f64 * ns_per_event) }
    }
}

/// What the partitioner knows of a scenario's fabric.
pub fn layout(s: &Scenario) -> Layout {
    match s.topology.kind {
        TopologyKind::FatTree => Layout::FatTree { k: s.topology.k.unwrap_or(2) },
        TopologyKind::Vl2 => Layout::Vl2,
        TopologyKind::LeafSpine => Layout::LeafSpine,
    }
}

/// How scenario `s`'s fabric is cut (`clos partition`): the partitions' sizes, the cut and the
/// lookahead, as JSON.
pub fn describe(s: &Scenario) -> Result<Value> {
    let topo = s.topology.build()?;
    let p = partition(&topo, layout(s));
    let shares = p.shares(&topo);
    let spread = |f: fn(&crate::topology::partition::Share) -> u32| {
        let v: Vec<u32> = shares.iter().map(f).collect();
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len().max(1) as f64;
        json!({"min": v.iter().min(), "mean": mean, "max": v.iter().max()})
    };
    // Directed partition pairs joined by a cut port: the channels null messages would travel.
    let mut channels: Vec<(u32, u32)> = p
        .cut
        .iter()
        .flat_map(|&l| topo.links[l as usize])
        .map(|port| (p.of_node[topo.ports[port as usize].from as usize], p.of_node[topo.ports[port as usize].to as usize]))
        .collect();
    channels.sort_unstable();
    channels.dedup();
    Ok(json!({
        "rule": p.rule,
        "partitions": p.count,
        "nodes": topo.nodes.len(),
        "links": topo.links.len(),
        "hosts": spread(|s| s.hosts),
        "switches": spread(|s| s.switches),
        "ports": spread(|s| s.ports),
        "cut_links": p.cut.len(),
        "channels": channels.len(),
        "lookahead_ps": p.lookahead,
        "of_node": p.of_node,
    }))
}

/// Run scenario `s` twice: plainly, for the cost of an event on one thread (by `cpu_clock`, in
/// seconds), and through [`World::run_windows`]; with the barrier measured here, estimate the
/// speedup at each of `threads`. Fails if the two runs disagree on the events they ran.
pub fn analyse(s: &Scenario, threads: &[usize], cpu_clock: fn() -> f64) -> Result<Value> {
    let mut described = describe(s)?;
    let topo = s.topology.build()?;
    let p = partition(&topo, layout(s));
    let mut plain = World::new(s)?;
    let cpu = cpu_clock();
    plain.run();
    let cpu = cpu_clock() - cpu;
    let ns_per_event = cpu * 1e9 / plain.events.max(1) as f64;
    let mut world = World::new(s)?;
    let c = world.run_windows(&p);
    world.finish();
    world.check_conservation()?;
    if c.events != plain.events || world.counters.delivered != plain.counters.delivered {
        return Err(Error::Invariant(format!(
            "the window analysis ran {} events ({} packets delivered), the plain run {} ({})",
            c.events, world.counters.delivered, plain.events, plain.counters.delivered
        )));
    }
    let barrier = barrier_ns(BarrierKind::Spin, 2, 2_000);
    let std_barrier = barrier_ns(BarrierKind::Std, 2, 500);
    let windows = c.windows();
    let partition_events = c.events - c.global_events;
    let estimates: Vec<Value> = threads
        .iter()
        .map(|&t| {
            let e = c.estimate(t, ns_per_event, barrier);
            let slow = c.estimate(t, ns_per_event, SLOW_BARRIER_NS).speedup;
            json!({"threads": t, "speedup": e.speedup, "efficiency": e.speedup / t as f64, "balance_bound": e.balance_bound, "speedup_slow_barrier": slow})
        })
        .collect();
    described["analysis"] = json!({
        "simulated_ps": world.now,
        "events": c.events,
        "windows": windows,
        "global_steps": c.global_steps(),
        "events_per_window": partition_events as f64 / windows.max(1) as f64,
        "global_events": c.global_events,
        "crossing_events": c.crossing,
        "crossing_fraction": c.crossing as f64 / c.events.max(1) as f64,
        "instant_crossings": c.instant_crossings,
        "per_partition": {"min": c.per_partition.iter().min(), "max": c.per_partition.iter().max(),
                          "mean": partition_events as f64 / c.per_partition.len().max(1) as f64},
        "ns_per_event": ns_per_event,
        "barrier_ns": barrier,
        "std_barrier_ns": std_barrier,
        "slow_barrier_ns": SLOW_BARRIER_NS,
        "cores": cores(),
        "estimates": estimates,
    });
    Ok(described)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(per_partition: Vec<u64>, windows: &[&[(u32, u32)]]) -> WindowCounts {
        let mut c = WindowCounts { per_partition, lookahead: 1, ..Default::default() };
        for w in windows {
            c.window_start.push(c.cells.len() as u32);
            c.cells.extend_from_slice(w);
            c.events += w.iter().map(|x| x.1 as u64).sum::<u64>();
        }
        c.global_events = c.cells.iter().filter(|x| x.0 == GLOBAL).map(|x| x.1 as u64).sum();
        c
    }

    /// By hand: partitions of 6, 5, 4, 3 events go to 2 threads as {6, 3} and {5, 4} (longest
    /// first, each to the least loaded): 9 each.
    #[test]
    fn greedy_assigns_longest_first() {
        let c = counts(vec![3, 6, 4, 5], &[]);
        assert_eq!(c.assign(2), vec![0, 0, 1, 1]);
        assert_eq!(c.assign(8), vec![3, 0, 2, 1], "one partition per thread, heaviest on thread 0");
    }

    /// By hand: two windows, {p0: 4, p1: 4} and {p0: 2}, and a global step of 2 events. Serial:
    /// 12 events. At 2 threads the windows cost 4 and 2 and the global step 2: 8 events, plus
    /// 3 barriers. With 10 ns an event and a 20 ns barrier: 120 / (80 + 60) = 0.857; without
    /// barriers 12 / 8 = 1.5.
    #[test]
    fn windows_cost_their_busiest_thread_and_a_barrier() {
        let c = counts(vec![6, 4], &[&[(0, 4), (1, 4)], &[(0, 2)], &[(GLOBAL, 2)]]);
        assert_eq!((c.windows(), c.global_steps(), c.events), (2, 1, 12));
        let e = c.estimate(2, 10.0, 20.0);
        assert!((e.speedup - 120.0 / 140.0).abs() < 1e-12, "{e:?}");
        assert!((e.balance_bound - 1.5).abs() < 1e-12, "{e:?}");
        assert_eq!(c.estimate(2, 10.0, 0.0).speedup, 1.5);
    }

    /// The analysed run (300 us) runs the same events as a plain one, to the same counts. On a k = 4
    /// cross-pod permutation a packet's path (host, edge, aggregation, core, aggregation, edge,
    /// host) has 6 arrivals, of which only the arrivals at and from the core can cross: both
    /// when the core is in neither pod, one when it is in the source's or the destination's.
    /// So between 1/6 and 2/6 of arrivals cross (1/4 expected, 2 of the 4 cores being in one of
    /// the two pods), and arrivals are nearly every event (the lower bound gets a fifth off
    /// for the rest).
    #[test]
    fn analysis_runs_the_same_events_and_counts_crossings() {
        let s = crate::sim::tests::dctcp_permutation(1, 4, "300KB", "97.5KB", "ecmp");
        let mut plain = World::new(&s).unwrap();
        plain.run();
        let topo = s.topology.build().unwrap();
        let p = partition(&topo, layout(&s));
        let mut w = World::new(&s).unwrap();
        let c = w.run_windows(&p);
        w.finish();
        w.check_conservation().unwrap();
        assert_eq!(c.events, plain.events);
        assert_eq!(w.counters, plain.counters);
        assert_eq!(w.delivered_bytes, plain.delivered_bytes);
        assert_eq!(c.per_partition.iter().sum::<u64>() + c.global_events, c.events);
        let f = c.crossing as f64 / c.events as f64;
        assert!(f > 1.0 / 6.0 * 0.8 && f < 2.0 / 6.0, "crossing fraction {f}");
        // Windows are at least a lookahead wide: fewer than the run's length over it, plus the
        // global steps (bins) that split them.
        assert!(c.windows() as u64 <= 300 * PS_PER_US_TEST / c.lookahead + c.global_steps() as u64 + 1, "{} windows", c.windows());
    }

    const PS_PER_US_TEST: u64 = crate::units::PS_PER_US;

    /// A barrier round of either kind takes some time, and less than a millisecond (the
    /// rounds end at all: no thread is left waiting).
    #[test]
    fn a_barrier_round_is_measured() {
        for kind in [BarrierKind::Std, BarrierKind::Spin] {
            let ns = barrier_ns(kind, 2, 100);
            assert!(ns > 0.0 && ns < 1e6, "{kind:?}: {ns} ns");
        }
    }
}
