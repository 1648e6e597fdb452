//! The load-balancing decision (`lb::Forwarder::next_port`) at every switch of a packet's path,
//! for ECMP (a hash), per-packet random spraying (a random draw) and DRILL(2,1) (two sampled
//! queue lengths and one remembered port).

use super::fixture::{self, Fabric};
use clos_core::lb::{self, Forwarder};
use clos_core::packet::{wire, Packet};
use clos_core::rng::{mix64, Streams};
use clos_core::units::Time;
use gungraun::{library_benchmark, library_benchmark_group};
use std::hint::black_box;

/// Packets routed, each through four decisions (edge, aggregation, core, aggregation).
const PACKETS: usize = 50_000;
/// When the decisions are made: after the queues below have started to drain.
const NOW: Time = 10_000_000;

struct Input {
    fabric: Fabric,
    fwd: Forwarder,
    packets: Vec<Packet>,
}

/// B1's fabric under `scheme`, its switch queues filled to random depths (up to 60 full frames,
/// so that DRILL's samples differ), and packets of random flows between hosts in different pods.
fn decisions(scheme: &str) -> Input {
    let mut fabric = fixture::fabric(scheme);
    let s = &fabric.scenario;
    let fwd = Forwarder::new(&s.routing, &fabric.topo, &fabric.routes, s.transport.mss, &mut Streams::new(s.seed)).expect("B1's routing is valid");
    for port in 0..fabric.ports.len() as u32 {
        if !fabric.topo.is_host(fabric.topo.ports[port as usize].from) {
            for _ in 0..mix64(port as u64) % 60 {
                fabric.ports.enqueue(port, wire::frame(1460, 0), false, 0, true);
            }
        }
    }
    let packets = (0..PACKETS as u64)
        .map(|i| {
            let src = (mix64(i) % fabric.topo.n_hosts as u64) as u32;
            let dst = fabric.cross_pod_peer(src, i);
            Packet { flow: i as u32, src, dst, payload: 1460, entropy: mix64(i ^ 0x5eed), ..Default::default() }
        })
        .collect();
    Input { fabric, fwd, packets }
}

#[library_benchmark]
#[bench::ecmp(args = ("ecmp"), setup = decisions)]
#[bench::spray_random(args = ("spray-random"), setup = decisions)]
#[bench::drill(args = ("drill"), setup = decisions)]
fn next_port(mut input: Input) -> (u64, Input) {
    let Input { fabric, fwd, packets } = &mut input;
    let view = lb::Fabric { topo: &fabric.topo, routes: &fabric.routes, ports: &fabric.ports, now: NOW };
    let mut acc = 0u64;
    for pkt in packets.iter_mut() {
        let dst_tor = fabric.topo.host_tor[pkt.dst as usize];
        let mut node = fabric.topo.host_tor[pkt.src as usize];
        while node != dst_tor {
            let port = fwd.next_port(&view, node, pkt);
            pkt.via = port;
            node = fabric.ports.peer(port);
            acc = acc.wrapping_add(port as u64);
        }
    }
    (black_box(acc), input)
}

library_benchmark_group!(name = lb_decision; benchmarks = next_port);
