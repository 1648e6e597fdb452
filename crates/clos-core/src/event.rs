//! The event calendar.
//!
//! Events are plain data; the loop in `sim` dispatches them with a `match`. Each event is keyed
//! by `(time, seq)` where `seq` counts scheduling calls, so events due at the same picosecond run
//! in the order they were scheduled (FIFO ties). That promise is what makes runs reproducible
//! bit for bit, and `same_time_events_run_in_scheduling_order` protects it.
//!
//! The calendar is a binary heap behind this one type (O(log n) per operation); the performance
//! issue may swap in a bucketed calendar without touching any caller.

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Everything that can happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Packet `pkt` finishes arriving at `node` (serialisation and propagation both done).
    Arrive { node: u32, pkt: u32 },
    /// Flow `flow` opens and sends its first window.
    FlowStart { flow: u32 },
    /// The retransmission timer of `flow` may have expired (stale if `gen` is old).
    Rto { flow: u32, gen: u32 },
    /// The delayed-ACK timer of `flow`'s receiver may have expired (stale if `gen` is old).
    DelayedAck { flow: u32, gen: u32 },
    /// The receiver reorder shim of `flow` may have to release what it holds.
    ShimFlush { flow: u32, gen: u32 },
    /// The load balancer's periodic control loop (LocalFlow).
    Tick,
    /// Sample every switch port's queue length (`output.queue_interval`).
    QueueSample,
    /// Close a time-series bin: per-link bytes (`output.bin`).
    CloseBin,
}

#[derive(Clone, Copy)]
struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A priority queue of events ordered by time, then by scheduling order.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(n), seq: 0 }
    }

    #[inline]
    pub fn schedule(&mut self, time: Time, event: Event) {
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, event });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Drain the remaining events (used at the end of a run to account for packets in flight).
    pub fn drain(&mut self) -> impl Iterator<Item = Event> + '_ {
        self.heap.drain().map(|e| e.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_run_in_scheduling_order() {
        let mut q = EventQueue::default();
        q.schedule(5, Event::FlowStart { flow: 0 });
        for f in 1..100 {
            q.schedule(3, Event::FlowStart { flow: f });
        }
        q.schedule(1, Event::FlowStart { flow: 100 });
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, e)| match e {
                Event::FlowStart { flow } => flow,
                _ => unreachable!(),
            })
            .collect();
        let mut expected = vec![100];
        expected.extend(1..100);
        expected.push(0);
        assert_eq!(order, expected);
    }
}
