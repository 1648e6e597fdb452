//! Output ports (`fabric::Ports`): the queue-length read a load-aware decision makes, then the
//! enqueue (drop-tail check, ECN mark, departure time, queueing histogram) every packet-hop does.

use super::fixture::{self, Fabric};
use clos_core::fabric::{Enqueued, Ports};
use clos_core::packet::wire;
use clos_core::rng::mix64;
use clos_core::units::Time;
use gungraun::{library_benchmark, library_benchmark_group};
use std::hint::black_box;

/// Packets offered.
const OPS: usize = 200_000;

/// One offered packet: where, how big, when.
#[derive(Clone, Copy)]
struct Offer {
    port: u32,
    wire: u64,
    now: Time,
}

/// B1's empty ports, and packets offered at random to the uplinks of four edge switches at 2%
/// above their line rate, so that queues wander from empty to full: accepted, CE-marked and
/// dropped packets all occur. Five packets in sixteen are bare ACKs. The ports keep the bytes
/// entering their queues, as under the load-aware scheme whose read this is (DRILL).
fn offers() -> (Ports, Vec<Offer>) {
    let Fabric { topo, mut ports, .. } = fixture::fabric("ecmp");
    ports.model_entering(clos_core::lb::params::DEFAULT_ENTERING.0);
    let uplinks: Vec<u32> = topo.tors[..4].iter().flat_map(|&tor| topo.ports_of(tor)).filter(|&p| !topo.is_host(ports.peer(p))).collect();
    let (ack, data) = (wire::frame(0, 0), wire::frame(1460, 0));
    let mean_wire = (5 * ack + 11 * data) / 16;
    // 800 ps per byte at 10 Gb/s; offers spread over the uplinks at 1.02 times their rate.
    let gap = mean_wire * 800 * 100 / 102 / uplinks.len() as u64;
    let mut now = 0;
    let offers = (0..OPS as u64)
        .map(|i| {
            let h = mix64(i);
            now += gap / 2 + h % gap; // mean `gap`
            let wire = if h >> 60 < 5 { ack } else { data };
            Offer { port: uplinks[(h >> 16) as usize % uplinks.len()], wire, now }
        })
        .collect();
    (ports, offers)
}

#[library_benchmark]
#[bench::edge_uplinks(setup = offers)]
fn backlog_and_enqueue((mut ports, offers): (Ports, Vec<Offer>)) -> (u64, Ports, Vec<Offer>) {
    let mut acc = 0u64;
    for o in &offers {
        acc = acc.wrapping_add(ports.visible_backlog(o.port, o.now));
        match ports.enqueue(o.port, o.wire, true, o.now, true) {
            Enqueued::Accepted { arrival, mark, .. } => acc = acc.wrapping_add(arrival + mark as u64),
            Enqueued::Dropped => acc += 1,
        }
    }
    (black_box(acc), ports, offers)
}

library_benchmark_group!(name = output_ports; benchmarks = backlog_and_enqueue);
