//! The event calendar (`event::EventQueue`): pop the next event and schedule the one it causes,
//! with as many events pending as B1 keeps (every packet on a wire or in a queue is one).

use clos_core::event::{Event, EventQueue};
use clos_core::rng::mix64;
use clos_core::units::Time;
use gungraun::{library_benchmark, library_benchmark_group};
use std::hint::black_box;

const NS: Time = 1_000;
const US: Time = 1_000_000;
/// Packets in flight at once (each is one pending event): B1's 128 flows with windows of a few
/// tens of packets each.
const PACKETS: u64 = 4_096;
/// B1's flows, each with one retransmission timer pending.
const FLOWS: u32 = 128;
/// B1's minimum retransmission timeout: timers wait in the overflow heap.
const RTO: Time = 10_000 * US;
/// Pop-schedule pairs counted.
const OPS: usize = 200_000;

/// How far ahead a packet's next hop lands: a 1538 B frame's 1.23 us at 10 Gb/s plus 1 us of
/// propagation, and one hop in three also waits in a queue of up to twice DCTCP's marking
/// threshold (130 frames, 160 us); with the wheel's span of 1.07 ms all of them land in the
/// wheel (at 134 us, its span until a later stop, some went through the overflow heap, where
/// the timers still go). An invented mix, shaped like B1's.
fn hop_delay(i: u64) -> Time {
    let h = mix64(i);
    let wire = 2_230 * NS;
    if h.is_multiple_of(3) {
        wire + (h >> 8) % (130 * 1_230 * NS)
    } else {
        wire + (h >> 8) % (100 * NS)
    }
}

/// A calendar holding `PACKETS` packet events and `FLOWS` timers that has already run `OPS`
/// pop-schedule pairs (so its buckets have their working size and nothing is allocated while
/// counting), and the hop delays for the counted pairs.
fn warm() -> (EventQueue, Vec<Time>) {
    let mut q = EventQueue::with_capacity(1024);
    for flow in 0..FLOWS {
        q.schedule(RTO + flow as Time * US, Event::Rto { flow, gen: 0 });
    }
    for i in 0..PACKETS {
        q.schedule(hop_delay(i), Event::Arrive { node: 0, pkt: i as u32 });
    }
    let mut delays = (PACKETS..PACKETS + OPS as u64).map(hop_delay).collect::<Vec<_>>();
    drive(&mut q, &delays);
    delays.clear();
    delays.extend((0..OPS as u64).map(|i| hop_delay(i + PACKETS + OPS as u64)));
    (q, delays)
}

/// Pop each event and schedule what follows it: a packet's next hop, or a timer's re-arming.
#[inline(always)]
fn drive(q: &mut EventQueue, delays: &[Time]) -> Time {
    let mut now = 0;
    for &d in delays {
        let (t, event) = q.pop().expect("the calendar never runs dry: every pop schedules one");
        now = t;
        match event {
            Event::Rto { flow, gen } => q.schedule(now + RTO, Event::Rto { flow, gen: gen + 1 }),
            _ => q.schedule(now + d, event),
        }
    }
    now
}

#[library_benchmark]
#[bench::b1_pattern(setup = warm)]
fn pop_and_schedule((mut q, delays): (EventQueue, Vec<Time>)) -> (Time, EventQueue, Vec<Time>) {
    // The calendar goes back to the caller so that freeing it is not counted.
    (black_box(drive(&mut q, &delays)), q, delays)
}

library_benchmark_group!(name = event_calendar; benchmarks = pop_and_schedule);
