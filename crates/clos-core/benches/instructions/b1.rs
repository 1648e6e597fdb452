//! B1 end to end through the public API: `clos_core::run` builds the world (topology, routes,
//! workload), runs the event loop and writes the report. Reading the scenario is setup.
//!
//! Cut to 5 ms of simulated time instead of B1's 20 ms: callgrind runs the simulator about 45x
//! slower than native (B1 at 20 ms: 6.8 G instructions, 43 s), and 5 ms, a quarter of the
//! events and well past slow start, takes about 10 s, which keeps the whole instruction-count
//! step within a few minutes of CI. The cost per simulated millisecond is the same at 5 and at
//! 20 ms (1.70 G and 6.84 G instructions).
//!
//! Unlike the component benchmarks, B1's count is not exact from run to run: it varies by about
//! 0.01%, because the report formats the run's own CPU time and memory and the route tables are
//! built with a randomly seeded hash map. That is a thousand times below the gate's 10%.

use super::fixture;
use clos_core::metrics::Report;
use clos_core::scenario::Scenario;
use gungraun::{library_benchmark, library_benchmark_group};
use std::hint::black_box;

fn scenario(stop: &str) -> Scenario {
    fixture::b1(stop, "ecmp")
}

#[library_benchmark]
#[bench::ecmp_5ms(args = ("5ms"), setup = scenario)]
fn b1(s: Scenario) -> Report {
    black_box(clos_core::run(&s).expect("B1 runs and conserves packets"))
}

library_benchmark_group!(name = end_to_end; benchmarks = b1);
