//! Route lookup (`routing::Routes`): a packet's equal-cost next hops at a switch, found from its
//! destination host as every forwarding decision finds them (host -> ToR -> ToR index -> group).

use super::fixture::{self, Fabric};
use clos_core::rng::mix64;
use gungraun::{library_benchmark, library_benchmark_group};
use std::hint::black_box;

/// Lookups counted.
const OPS: usize = 500_000;

/// B1's fabric and random (switch, destination host) pairs, leaving out a packet's own
/// destination ToR (delivery to the host is not a routing decision).
fn lookups() -> (Fabric, Vec<(u32, u32)>) {
    let f = fixture::fabric("ecmp");
    let switches = (f.topo.n_hosts as u32)..(f.topo.nodes.len() as u32);
    let mut pairs = Vec::with_capacity(OPS);
    let mut i = 0u64;
    while pairs.len() < OPS {
        let h = mix64(i);
        i += 1;
        let switch = switches.start + (h % switches.len() as u64) as u32;
        let dst = ((h >> 32) % f.topo.n_hosts as u64) as u32;
        if f.topo.host_tor[dst as usize] != switch {
            pairs.push((switch, dst));
        }
    }
    (f, pairs)
}

#[library_benchmark]
#[bench::b1_fabric(setup = lookups)]
fn toward_destination((f, pairs): (Fabric, Vec<(u32, u32)>)) -> (u64, Fabric, Vec<(u32, u32)>) {
    let mut acc = 0u64;
    for &(switch, dst) in &pairs {
        let tor = f.topo.tor_index[f.topo.host_tor[dst as usize] as usize];
        let group = f.routes.toward_tor(switch, tor);
        acc = acc.wrapping_add(group.len() as u64 + group[0] as u64);
    }
    (black_box(acc), f, pairs)
}

library_benchmark_group!(name = route_lookup; benchmarks = toward_destination);
