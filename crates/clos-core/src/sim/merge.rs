//! Merging the worlds of a parallel run's partitions (`parallel.rs`) into one world, which
//! reports as a whole run does.
//!
//! Every piece of state belongs to one partition: a flow's sender side to its source host's, its
//! receiver side to its destination's, a port to the partition of the node it leaves. The merged
//! world takes each piece from its owner and adds the counts that any partition may have made
//! (packets sent, delivered and dropped, a flow's drops, goodput per bin, queueing histograms,
//! the scheme's counters). Rows of the recorder's tables and of a packet trace are put in a
//! whole run's order.

use super::World;
use crate::scenario::Stop;
use crate::units::Time;

/// One world from the partitions' `worlds` (in partition order), ended at the run's end: the
/// stop time, or, under `all_flows_done`, the last completion if every flow completed.
pub fn merge(mut worlds: Vec<World>, stop: Stop) -> World {
    let ran_to = worlds.iter().map(|w| w.now).max().unwrap_or(0);
    let n = worlds[0].flows.len();
    let of_node = worlds[0].part.as_ref().expect("a partition's world").of_node.clone();
    let flows_done: usize = worlds.iter().map(|w| w.flows_done).sum();
    let end: Time = match stop {
        Stop::AllFlowsDone if flows_done == n => worlds.iter().flat_map(|w| w.finished.iter().flatten().copied()).max().unwrap_or(ran_to),
        _ => ran_to,
    };
    for w in &mut worlds {
        w.now = end;
        w.finish();
    }
    let mut rest = worlds.split_off(1);
    let mut base = worlds.pop().expect("one partition at least");
    let mut elsewhere = 0;
    for (q, w) in rest.iter_mut().enumerate() {
        let q = q as u32 + 1;
        let owns = |node: u32| of_node[node as usize] == q;
        for f in 0..n {
            let (src, dst) = (base.flows[f].src, base.flows[f].dst);
            if owns(src) {
                std::mem::swap(&mut base.senders[f], &mut w.senders[f]);
                base.rto[f] = w.rto[f];
            }
            if owns(dst) {
                std::mem::swap(&mut base.receivers[f], &mut w.receivers[f]);
                base.finished[f] = w.finished[f];
                base.delivered_bytes[f] = w.delivered_bytes[f];
                if let (Some(a), Some(b)) = (base.shims.as_mut(), w.shims.as_mut()) {
                    std::mem::swap(&mut a[f], &mut b[f]);
                }
            }
            base.flow_drops[f] += w.flow_drops[f];
        }
        base.counters.sent += w.counters.sent;
        base.counters.delivered += w.counters.delivered;
        base.counters.dropped += w.counters.dropped;
        base.events += w.events;
        base.flows_done += w.flows_done;
        for (a, b) in base.goodput_bins.iter_mut().zip(&w.goodput_bins) {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        let topo = &base.topo;
        base.ports.absorb(&mut w.ports, |port| owns(topo.ports[port as usize].from));
        base.recorder.absorb(&w.recorder);
        base.fwd.absorb_stats(&w.fwd);
        if let (Some(a), Some(b)) = (base.trace.as_deref_mut(), w.trace.as_deref()) {
            a.absorb(b);
        }
        elsewhere += w.in_flight();
    }
    base.recorder.sort_rows();
    base.part.as_mut().expect("a partition's world").elsewhere += elsewhere;
    base
}
