//! The ideal flow completion time of a size on an empty fabric, and slowdown = FCT / ideal.
//!
//! "Ideal" is the physical lower bound the literature normalises by (pFabric's "best possible FCT
//! in an idle network", Homa's slowdown): the whole flow is handed to the NIC at its start and
//! crosses the shortest path back to back, store-and-forward at every hop, with every header byte
//! on the wire. So slowdown also counts what the transport costs on an empty network (slow start
//! beyond the initial window, delayed ACKs do not matter): a flow that fits in the initial window
//! has slowdown exactly 1 on an empty fabric, a long one approaches 1 as slow start's few RTTs
//! amortise. VL2's encapsulation and VLB's detour through an Intermediate are not in the ideal:
//! they are costs of that design (as `payload_fraction` treats them).

use crate::packet::wire;
use crate::routing::Routes;
use crate::topology::Topology;
use crate::units::{tx_time, Time};

/// One hop of a path: the link's rate and propagation delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub rate_bps: u64,
    pub delay: Time,
}

/// The shortest path from host `src` to host `dst`; where equal-cost next hops differ in rate
/// (asymmetric fabrics), the fastest. Empty when `src == dst`. It follows the routes as they are;
/// where they loop or stop short of `dst` (a run that ended, or a flow that started, while a
/// failure's new routes were installed at some switches and not yet at others), it is the path
/// of fewest hops over the fabric's links instead.
pub fn shortest_path(t: &Topology, routes: &Routes, src: u32, dst: u32) -> Vec<Hop> {
    routed_path(t, routes, src, dst).unwrap_or_else(|| fewest_hops(t, src, dst))
}

fn hop(t: &Topology, port: u32) -> Hop {
    Hop { rate_bps: t.ports[port as usize].rate_bps, delay: t.ports[port as usize].delay }
}

/// The routes' path, or None where they loop (a walk longer than the fabric has nodes) or reach
/// a switch with no route toward `dst`'s ToR.
fn routed_path(t: &Topology, routes: &Routes, src: u32, dst: u32) -> Option<Vec<Hop>> {
    let mut hops = Vec::with_capacity(8);
    if src == dst {
        return Some(hops);
    }
    let mut port = t.port_start[src as usize];
    let dst_tor = t.host_tor[dst as usize];
    while hops.len() <= t.nodes.len() {
        hops.push(hop(t, port));
        let node = t.ports[port as usize].to;
        if node == dst {
            return Some(hops);
        }
        port = if node == dst_tor {
            t.host_down_port[dst as usize]
        } else {
            let group = routes.toward_tor(node, t.tor_index[dst_tor as usize]);
            *group.iter().max_by_key(|&&p| (t.ports[p as usize].rate_bps, std::cmp::Reverse(p)))?
        };
    }
    None
}

/// Breadth first over every link (switches only between the two hosts), the lowest port first
/// at a tie; empty where `dst` cannot be reached at all.
#[cold]
fn fewest_hops(t: &Topology, src: u32, dst: u32) -> Vec<Hop> {
    let mut via = vec![u32::MAX; t.nodes.len()];
    let mut frontier = std::collections::VecDeque::from([src]);
    while let Some(node) = frontier.pop_front() {
        if node == dst {
            let mut ports = Vec::new();
            let mut at = dst;
            while at != src {
                let p = via[at as usize];
                ports.push(p);
                at = t.ports[p as usize].from;
            }
            return ports.iter().rev().map(|&p| hop(t, p)).collect();
        }
        if node != src && t.is_host(node) {
            continue;
        }
        for p in t.ports_of(node) {
            let next = t.ports[p as usize].to;
            if next != src && via[next as usize] == u32::MAX {
                via[next as usize] = p;
                frontier.push_back(next);
            }
        }
    }
    Vec::new()
}

/// Time from handing `bytes` of payload (in `mss`-byte segments) to the first NIC of `path` until
/// the last byte arrives, with nothing else on the path.
///
/// For n identical packets all ready at time 0, a chain of FIFO links with serialisation times
/// s_1..s_h and propagation p_1..p_h finishes packet j at hop h at
/// D(j, h) = sum_{i<=h} s_i + sum_{i<h} p_i + (j - 1) * max_{i<=h} s_i (each packet follows the
/// previous one through the slowest link so far); the last, possibly shorter, packet is then
/// walked hop by hop behind packet n - 1.
pub fn ideal_fct(path: &[Hop], bytes: u64, mss: u64) -> Time {
    if path.is_empty() || bytes == 0 {
        return 0;
    }
    let n = bytes.div_ceil(mss);
    let full = wire::frame(mss, 0);
    let last = wire::frame(bytes - (n - 1) * mss, 0);
    let (mut serial, mut prop, mut slowest) = (0, 0, 0);
    let mut arrival: Time = 0; // of the last packet at the current hop
    for h in path {
        let s = tx_time(full, h.rate_bps);
        serial += s;
        slowest = slowest.max(s);
        // Packet n - 1 leaves this hop at D(n - 1, h) (nothing ahead of the first packet).
        let ahead_done = if n >= 2 { serial + prop + (n - 2) * slowest } else { 0 };
        arrival = arrival.max(ahead_done) + tx_time(last, h.rate_bps) + h.delay;
        prop += h.delay;
    }
    arrival
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_US;

    const G10: u64 = 10_000_000_000;

    /// Reference: the tandem-queue recursion, packet by packet.
    fn walk(path: &[Hop], bytes: u64, mss: u64) -> Time {
        let n = bytes.div_ceil(mss);
        let mut free = vec![0; path.len()];
        let mut arrival = 0;
        for j in 0..n {
            let payload = if j + 1 == n { bytes - j * mss } else { mss };
            let w = wire::frame(payload, 0);
            let mut t = 0;
            for (i, h) in path.iter().enumerate() {
                free[i] = t.max(free[i]) + tx_time(w, h.rate_bps);
                t = free[i] + h.delay;
            }
            arrival = t;
        }
        arrival
    }

    #[test]
    fn closed_form_matches_the_packet_by_packet_walk() {
        let fast = Hop { rate_bps: 4 * G10, delay: PS_PER_US };
        let slow = Hop { rate_bps: G10, delay: PS_PER_US };
        for path in [vec![slow; 4], vec![slow, fast, fast, slow], vec![fast, slow, fast], vec![slow, slow, Hop { rate_bps: G10 / 10, delay: 0 }, fast]] {
            for bytes in [1, 100, 1460, 1461, 2920, 10_000, 14_600, 100_001, 1_000_000] {
                assert_eq!(ideal_fct(&path, bytes, 1460), walk(&path, bytes, 1460), "{bytes} B over {path:?}");
            }
        }
    }

    #[test]
    fn one_packet_pays_every_hop_and_a_long_flow_the_bottleneck_rate() {
        let path = [Hop { rate_bps: G10, delay: PS_PER_US }; 2];
        // 1538 wire bytes at 10 Gb/s = 1.2304 us per hop, plus 1 us of propagation per hop.
        assert_eq!(ideal_fct(&path, 1460, 1460), 2 * (1_230_400 + PS_PER_US));
        let long = ideal_fct(&path, 1460 * 10_000, 1460) as f64;
        assert!((long / (10_000.0 * 1_230_400.0) - 1.0).abs() < 1e-3);
    }
}
