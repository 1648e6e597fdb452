//! The queueing histogram (`histogram::Histograms::record`), which every accepted
//! packet-hop records its queueing delay into, per link tier.

use clos_core::histogram::Histograms;
use clos_core::rng::mix64;
use clos_core::topology::TIERS;
use gungraun::{library_benchmark, library_benchmark_group};
use std::hint::black_box;

/// Values recorded.
const OPS: u64 = 1_000_000;

/// Empty histograms, one per tier, and (tier, delay in ps) pairs: a third of packets find an
/// empty queue (0), the others wait from a nanosecond to a few hundred microseconds, spread
/// evenly over the powers of two as queues of any depth occur.
fn delays() -> (Histograms, Vec<(usize, u64)>) {
    let values = (0..OPS)
        .map(|i| {
            let h = mix64(i);
            let tier = (h % TIERS.len() as u64) as usize;
            let delay = if (h >> 8).is_multiple_of(3) { 0 } else { (h >> 16) >> (20 + (h >> 58) % 19) };
            (tier, delay)
        })
        .collect();
    (Histograms::new(TIERS.len()), values)
}

#[library_benchmark]
#[bench::tiers(setup = delays)]
fn record((mut hist, values): (Histograms, Vec<(usize, u64)>)) -> (u64, Histograms, Vec<(usize, u64)>) {
    for &(tier, delay) in &values {
        hist.record(tier, delay);
    }
    (black_box(hist.max(0)), hist, values)
}

library_benchmark_group!(name = queueing_histogram; benchmarks = record);
