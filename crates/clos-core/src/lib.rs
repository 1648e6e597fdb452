//! # clos-core: a packet-level simulator of Clos datacenter fabrics
//!
//! A run is: a [`scenario::Scenario`] (validated, defaults filled) → a [`sim::World`] (fabric,
//! routes, load balancer, transports, workload) → the event loop → a [`metrics::Report`].
//!
//! ```
//! let json = r#"{
//!     "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
//!     "workload": {"kind": "permutation", "bytes": "100KB"}
//! }"#;
//! let report = clos_core::run_json(json).unwrap();
//! assert_eq!(report.summary["flows"]["finished"], 4);
//! ```
//!
//! The model, in one paragraph: hosts and switches are joined by full-duplex links of fixed rate
//! and propagation delay. Every directed link is an output port with a drop-tail FIFO buffer in
//! bytes and an optional ECN marking threshold ([`fabric`]). Switches pick an output among the
//! shortest-path next hops to the destination's ToR ([`routing`]) with a load-balancing scheme
//! ([`lb`]). Hosts run TCP NewReno with SACK recovery or DCTCP ([`transport`]). Time is integer
//! picoseconds ([`units`]); events at the same time run in scheduling order ([`event`]); all
//! randomness comes from per-entity streams derived from the scenario seed ([`rng`]).

pub mod control;
pub mod directory;
pub mod error;
pub mod event;
pub mod fabric;
pub mod failures;
pub mod histogram;
pub mod host;
mod huge_pages;
pub mod lb;
pub mod metrics;
pub mod multicast;
pub mod packet;
pub mod pisces;
mod prefetch;
pub mod rng;
pub mod routing;
pub mod scenario;
pub mod service;
pub mod sim;
pub mod stats;
pub mod topology;
pub mod transport;
pub mod units;
pub mod workload;

pub use error::{Error, Result};

use scenario::Scenario;
use std::time::Instant;

/// Run a validated scenario to completion and report; fails if packets were not conserved.
pub fn run(s: &Scenario) -> Result<metrics::Report> {
    run_with_progress(s, &mut |_| true)
}

/// Events between two progress reports (a fraction of a second of simulation).
pub const PROGRESS_EVERY: u64 = 1 << 20;

/// `run`, calling `progress` every [`PROGRESS_EVERY`] events; if it returns false the run stops
/// there with [`Error::Interrupted`].
pub fn run_with_progress(s: &Scenario, progress: &mut dyn FnMut(&sim::Progress) -> bool) -> Result<metrics::Report> {
    stats::reset_peak_memory();
    let wall = Instant::now();
    if let Some(threads) = s.run.threads {
        let ran = sim::parallel::run(s, threads as usize, progress)?.ok_or(Error::Interrupted)?;
        let wall = wall.elapsed().as_secs_f64();
        ran.world.check_conservation()?;
        let scenario = serde_json::to_value(s).expect("a scenario always serialises");
        let mut report = ran.world.output(ran.cpu_seconds, wall, stats::peak_memory_bytes()).report(scenario);
        let stats = &mut report.summary["stats"];
        stats["engine"] = "partitioned".into();
        stats["threads"] = ran.threads.into();
        stats["partitions"] = ran.partitions.into();
        stats["windows"] = ran.windows.into();
        return Ok(report);
    }
    let cpu0 = stats::thread_cpu_seconds();
    let mut world = sim::World::new(s)?;
    world.run_with_progress(PROGRESS_EVERY, progress).ok_or(Error::Interrupted)?;
    let cpu = stats::thread_cpu_seconds() - cpu0;
    let wall = wall.elapsed().as_secs_f64();
    world.check_conservation()?;
    let scenario = serde_json::to_value(s).expect("a scenario always serialises");
    Ok(world.output(cpu, wall, stats::peak_memory_bytes()).report(scenario))
}

/// How scenario `s`'s fabric is cut for a parallel engine and what windows of its lookahead would
/// gain on its run, at each of `threads` (`sim::windows`, docs/parallel.md).
pub fn analyse_partitions(s: &Scenario, threads: &[usize]) -> Result<serde_json::Value> {
    sim::windows::analyse(s, threads, stats::thread_cpu_seconds)
}

/// Parse, validate and run a scenario given as JSON.
pub fn run_json(json: &str) -> Result<metrics::Report> {
    run(&Scenario::from_json(json)?)
}
