//! Instruction-count benchmarks (callgrind, through gungraun): B1 end to end and one
//! microbenchmark per hot component of the event loop. Instruction counts do not depend on what
//! else the machine runs, so `scripts/instructions.sh` can compare them with a committed baseline
//! and fail on a regression (docs/performance.md, "Instruction counts").
//!
//! Every benchmark builds its inputs in a `setup` function, which callgrind does not count; only
//! the body of the benchmark function is measured.

mod b1;
mod calendar;
mod fixture;
mod histogram;
mod load_balancer;
mod packet_pool;
mod ports;
mod routes;
mod tcp;

use b1::end_to_end;
use calendar::event_calendar;
use gungraun::{main, Callgrind, LibraryBenchmarkConfig};
use histogram::queueing_histogram;
use load_balancer::lb_decision;
use packet_pool::packet_recycling;
use ports::output_ports;
use routes::route_lookup;
use tcp::tcp_ack_path;

main!(
    // The gate reads instructions only, and without the cache simulation callgrind runs four
    // times as fast (B1: 10.5 s instead of 42 s).
    config = LibraryBenchmarkConfig::default().tool(Callgrind::with_args(["--cache-sim=no"]));
    library_benchmark_groups = end_to_end, event_calendar, output_ports, route_lookup, lb_decision, tcp_ack_path, packet_recycling,
        queueing_histogram
);
