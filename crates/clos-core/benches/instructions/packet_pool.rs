//! The packet pool (`packet::PacketPool`): allocate a packet, touch it as a hop does, and free
//! the oldest, with as many packets alive as B1 keeps in flight.

use clos_core::packet::{Packet, PacketPool};
use gungraun::{library_benchmark, library_benchmark_group};
use std::collections::VecDeque;
use std::hint::black_box;

/// Packets alive at once.
const LIVE: usize = 4_096;
/// Allocations counted.
const OPS: u32 = 500_000;

/// A pool that has already held `LIVE` packets (so it does not grow while counting), with
/// `LIVE` of them alive, oldest first.
fn warm() -> (PacketPool, VecDeque<u32>) {
    let mut pool = PacketPool::default();
    let live = (0..LIVE as u32).map(|i| pool.alloc(Packet { seg: i, ..Default::default() })).collect();
    (pool, live)
}

#[library_benchmark]
#[bench::b1_live(setup = warm)]
fn alloc_touch_free((mut pool, mut live): (PacketPool, VecDeque<u32>)) -> (u64, PacketPool, VecDeque<u32>) {
    let mut acc = 0u64;
    for i in 0..OPS {
        let h = pool.alloc(Packet { flow: i % 128, seg: i, payload: 1460, ..Default::default() });
        pool.get_mut(h).hops += 1;
        let oldest = live.pop_front().expect("LIVE packets are alive");
        acc = acc.wrapping_add(pool.get(oldest).seg as u64);
        pool.free(oldest);
        live.push_back(h);
    }
    (black_box(acc), pool, live)
}

library_benchmark_group!(name = packet_recycling; benchmarks = alloc_touch_free);
