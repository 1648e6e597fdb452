//! The event calendar.
//!
//! Events are plain data; the loop in `sim` dispatches them with a `match`. Each event is keyed
//! by `(time, seq)` where `seq` counts scheduling calls, so events due at the same picosecond run
//! in the order they were scheduled (FIFO ties). That promise is what makes runs reproducible
//! bit for bit, and `same_time_events_run_in_scheduling_order` protects it.
//!
//! The calendar is a timing wheel of unsorted buckets, the one being run sorted, with a heap for
//! the far future (see [`EventQueue`]); `same_time_events_run_in_scheduling_order` and
//! `the_calendar_pops_exactly_what_a_heap_pops` protect its order.

mod buckets;

use crate::units::Time;
use buckets::Buckets;
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
    /// A scheduled failure, repair or link change (index into the resolved changes).
    LinkChange { change: u32 },
    /// The control plane learns of a change (after detection, or hold-down for a repair).
    Advertise { change: u32 },
    /// `switch` installs routing version `version`.
    RouteInstall { switch: u32, version: u32 },
    /// The VL2 directory model's own events (lookups, migrations, reports, corrections).
    Directory(crate::directory::DirectoryEvent),
}

#[derive(Clone, Copy)]
struct Entry {
    time: Time,
    /// `tie_key(time, seq)`.
    key: u64,
    event: Event,
}

/// What fills storage not yet written (never popped).
const PLACEHOLDER: Entry = Entry { time: 0, key: 0, event: Event::Tick };

/// The shape of the wheel: how wide a bucket is, and so how the bucket being run is sorted.
///
/// A bucket should hold about a thousand events: narrower ones turn the wheel and touch more
/// bucket headers and tails per event, wider ones fill the second-level cache while they are
/// sorted. How many events a fabric makes per microsecond grows with its hosts, so the width is
/// chosen per run from the hosts' total rate ([`bucket_bits_for`]). Width never changes which
/// event comes next: the order is `(time, seq)` at any width.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    /// log2 of a bucket's width in picoseconds.
    bits: u32,
    /// Buckets in the wheel (a power of two): `SPAN_BITS` of near future in all.
    wheel: u64,
    /// Buckets with fewer events than this are sorted by comparison: below it the counting
    /// sort's table costs more than it saves.
    radix_min: usize,
    // Derived from the above once, as shifts and masks the hot paths use as they are.
    key_shift: u32,
    time_mask: u64,
    seq_limit: u64,
}

/// The wheel covers 2^27 ps = 134 us of near future at any width, where almost all packet
/// events (serialisation, propagation, queueing in shallow buffers) land; timers and deep-queue
/// arrivals go to the overflow heap and move into the wheel as it turns. A longer wheel was no
/// faster and held more memory in sparsely used buckets (B2: 114 MB at 134 us, 281 MB at 1 ms,
/// measured when each bucket was a vector of its own; see `buckets.rs`).
const SPAN_BITS: u32 = 27;
/// Widths allowed: 65.5 ns to 1.05 us (2,048 to 128 buckets). Narrower ran B5 (8,192 hosts)
/// slower, by 10% at 2^15 ps; wider than the default link delay of 1 us would send most hops
/// into the bucket being run (the `late` heap).
const MIN_BITS: u32 = 16;
const MAX_BITS: u32 = 20;
/// The counting sort's one digit: 1,024 sub-intervals of a bucket (64 ps to 1 ns), so that
/// few events share one and the insertion sort that finishes the job has little to do.
const DIGIT_BITS: u32 = 10;
const DIGITS: usize = 1 << DIGIT_BITS;

impl Geometry {
    fn new(bits: u32) -> Geometry {
        let bits = bits.clamp(MIN_BITS, MAX_BITS);
        Geometry {
            bits,
            wheel: 1 << (SPAN_BITS - bits),
            radix_min: DIGITS / 4,
            key_shift: 64 - bits,
            time_mask: (1 << bits) - 1,
            seq_limit: 1 << (64 - bits),
        }
    }

    /// The time's low `bits` bits above the scheduling count `seq`. `(time, key)` orders as
    /// `(time, seq)`; and within one bucket, whose events share the time's high bits, `key`
    /// alone does, so the bucket being run is sorted on one u64 instead of two (the sort was a
    /// quarter of B1's samples in the Rust core, docs/performance.md). `seq` must stay below
    /// `seq_limit`: at the widest buckets 2^44 (1.8 * 10^13) scheduling calls, weeks at ten
    /// million events per second; paper-scale runs take 2 * 10^10.
    #[inline]
    fn tie_key(&self, time: Time, seq: u64) -> u64 {
        (time & self.time_mask) << self.key_shift | seq
    }

    #[inline]
    fn bucket(&self, time: Time) -> u64 {
        time >> self.bits
    }
}

/// The counting sort's digit of a key: the top `DIGIT_BITS` of the time's bits within its
/// bucket (`tie_key` puts them at the top of the key), a sub-interval of 2^(bits - 10) ps.
#[inline]
fn digit(key: u64) -> usize {
    (key >> (64 - DIGIT_BITS)) as usize
}

/// Bucket width (log2 of picoseconds) for a fabric whose hosts can send `host_bps` bits per
/// second in all: about `TARGET` events per bucket at the benchmarks' load. Measured
/// (docs/performance.md): B1 (128 hosts) ran fastest at 2^20 ps, 566 events a bucket; B3
/// (3,456 hosts) at 2^16 ps, ~900 a bucket, and 20% slower at 2^20 ps, ~15,000 a bucket, whose
/// sort fills the second-level cache; B2 (1,024 hosts) about as fast at any width from 2^16 to
/// 2^20 ps. The benchmarks make about five events per full-size frame their hosts could send
/// (DCTCP permutations: 566 and 4,300 events per 2^20 ps at 128 and 1,024 hosts of 10 Gb/s),
/// which gives 2^20 ps for 128 hosts, 2^18 for 1,024 and 2^16 (the narrowest allowed) for
/// 3,456 and 8,192.
pub fn bucket_bits_for(host_bps: f64) -> u32 {
    const TARGET: f64 = 1024.0;
    const EVENTS_PER_FRAME: f64 = 5.0;
    const FRAME_BITS: f64 = 1538.0 * 8.0;
    let events_per_ps = EVENTS_PER_FRAME * host_bps / FRAME_BITS / 1e12;
    if events_per_ps <= 0.0 || !events_per_ps.is_finite() {
        return MAX_BITS;
    }
    ((TARGET / events_per_ps).log2().round().clamp(MIN_BITS as f64, MAX_BITS as f64)) as u32
}

/// Counts per digit to where each digit's run starts when the largest digit comes first.
fn descending_offsets(counts: &mut [u32]) {
    let mut at = 0;
    for c in counts.iter_mut().rev() {
        let n = *c;
        *c = at;
        at += n;
    }
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.key) == (o.time, o.key)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first; the sorted
    // current bucket likewise keeps its earliest entry last, where `Vec::pop` takes it.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.key).cmp(&(self.time, self.key))
    }
}

/// What [`EventQueue::pop_due`] found.
pub enum Next {
    /// The next event, due by the limit, taken off the calendar.
    Due(Time, Event),
    /// The next event is after the limit (left in place).
    Later,
    /// The next event is due but was not to be taken (left in place).
    Held,
    /// No events at all.
    Empty,
}

/// A priority queue of events ordered by time, then by scheduling order.
///
/// A calendar (timing wheel) over integer time: events within the next 134 us are kept unsorted
/// in their bucket; only the bucket being run is sorted, once, when it becomes current, and its
/// events are then popped off its end. A bucket is sorted by counting (a few
/// instructions per event) and small ones by comparison, instead of O(log n) heap steps with
/// cache misses over all n pending events (about half of the time with one big heap, see
/// docs/performance.md). The order is exactly a heap's: by time, then by scheduling order.
/// Buckets are chains of chunks from one arena (`buckets.rs`), recycled through a free list, so
/// once the wheel has warmed up nothing is allocated.
pub struct EventQueue {
    /// The bucket being run, sorted by `Entry`'s (reversed) order: the next event is last.
    current: Vec<Entry>,
    /// Events scheduled into the bucket being run after it was sorted (a hop shorter than a
    /// bucket is wide, a timer of zero). A heap, because inserting into the sorted bucket would
    /// move up to thousands of entries; `pop` takes the earlier of its top and the bucket's
    /// next.
    late: BinaryHeap<Entry>,
    /// Index (`geometry.bucket(time)`) of the bucket in `current`.
    cur: u64,
    /// Bucket `b` (cur < b < cur + wheel length) lives in slot `b % wheel length`.
    wheel: Buckets,
    geometry: Geometry,
    /// Events in `wheel`.
    in_wheel: usize,
    /// Events at or beyond bucket cur + wheel length.
    overflow: BinaryHeap<Entry>,
    /// The counting sort's output, which then becomes the bucket being run; the vector it was
    /// sorted from takes its place here.
    scratch: Vec<Entry>,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl EventQueue {
    /// A calendar with buckets of 65.5 ns (2^16 ps), for tests and benchmarks; a run sizes its
    /// buckets to its fabric with [`EventQueue::with_bucket_bits`] and [`bucket_bits_for`].
    pub fn with_capacity(n: usize) -> Self {
        Self::with_bucket_bits(16, n)
    }

    /// A calendar with buckets of 2^`bits` ps (clamped to 2^16 to 2^20).
    pub fn with_bucket_bits(bits: u32, n: usize) -> Self {
        let geometry = Geometry::new(bits);
        EventQueue {
            current: Vec::with_capacity(n.min(1024)),
            late: BinaryHeap::new(),
            cur: 0,
            wheel: Buckets::new(geometry.wheel as usize),
            geometry,
            in_wheel: 0,
            overflow: BinaryHeap::new(),
            scratch: Vec::new(),
            seq: 0,
        }
    }

    /// Schedule `event` at `time`, which must not be earlier than the last event popped.
    #[inline]
    pub fn schedule(&mut self, time: Time, event: Event) {
        self.seq += 1;
        let g = &self.geometry;
        assert!(self.seq < g.seq_limit, "more events scheduled in one run than the calendar's keys hold");
        let b = g.bucket(time);
        if b > self.cur && b < self.cur + g.wheel {
            let e = Entry { time, key: g.tie_key(time, self.seq), event };
            self.to_wheel(b, e);
        } else {
            self.off_wheel(time, event);
        }
    }

    /// `schedule` for an event outside the wheel's span. Out of line, so that the path almost
    /// every event takes needs few registers and saves none (B2: 14 instructions per event).
    #[cold]
    #[inline(never)]
    fn off_wheel(&mut self, time: Time, event: Event) {
        let e = Entry { time, key: self.geometry.tie_key(time, self.seq), event };
        let b = self.geometry.bucket(time);
        // A bucket before `cur` can only be asked for after a peek turned the wheel past an
        // idle stretch; such an event is still the earliest, so the bucket being run is its place.
        if b <= self.cur {
            self.late.push(e);
        } else {
            self.overflow.push(e);
        }
    }

    /// The next event if it is due by `limit` and `may_pop`: `peek_time` and `pop` with one
    /// look at the bucket being run.
    #[inline]
    pub fn pop_due(&mut self, limit: Time, may_pop: bool) -> Next {
        if !self.ready() {
            return Next::Empty;
        }
        if self.late.is_empty() {
            if let Some(e) = self.current.last() {
                return if e.time > limit {
                    Next::Later
                } else if !may_pop {
                    Next::Held
                } else {
                    let e = self.current.pop().expect("looked at");
                    Next::Due(e.time, e.event)
                };
            }
        }
        self.pop_due_with_late(limit, may_pop)
    }

    #[cold]
    fn pop_due_with_late(&mut self, limit: Time, may_pop: bool) -> Next {
        match self.peek_time() {
            None => Next::Empty,
            Some(t) if t > limit => Next::Later,
            Some(_) if !may_pop => Next::Held,
            Some(_) => self.pop().map_or(Next::Empty, |(t, e)| Next::Due(t, e)),
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        if !self.ready() {
            return None;
        }
        let e = if self.late.is_empty() { self.current.pop() } else { self.pop_late_or_current() };
        e.map(|e| (e.time, e.event))
    }

    /// Whether the bucket being run (with its late arrivals) has an event, turning the wheel
    /// to the next non-empty bucket if not; false if there are no events at all.
    #[inline]
    fn ready(&mut self) -> bool {
        !(self.current.is_empty() && self.late.is_empty()) || self.advance()
    }

    /// The earlier of the late heap's top and the sorted bucket's next (`Entry`'s order is
    /// reversed: the greater is the earlier).
    #[cold]
    fn pop_late_or_current(&mut self) -> Option<Entry> {
        match (self.current.last(), self.late.peek()) {
            (Some(c), Some(l)) if c > l => self.current.pop(),
            (_, Some(_)) => self.late.pop(),
            _ => self.current.pop(),
        }
    }

    /// The event `i` places after the next one `pop` returns (0: the next), if it is already in
    /// the bucket being run; it does not turn the wheel. For looking ahead (`prefetch.rs`): an
    /// event scheduled later may still run before it.
    #[inline]
    pub fn ahead(&self, i: usize) -> Option<&Event> {
        self.current.len().checked_sub(i + 1).map(|k| &self.current[k].event)
    }

    /// Time of the next event (turning the wheel to it if needed).
    #[inline]
    fn peek_time(&mut self) -> Option<Time> {
        if !self.ready() {
            return None;
        }
        match (self.current.last(), self.late.peek()) {
            (Some(c), Some(l)) => Some(c.time.min(l.time)),
            (c, l) => c.or(l).map(|e| e.time),
        }
    }

    #[inline]
    fn to_wheel(&mut self, b: u64, e: Entry) {
        // Counted first: the push ends in a call where a chunk fills (`buckets.rs`).
        self.in_wheel += 1;
        self.wheel.push((b & (self.geometry.wheel - 1)) as usize, e);
    }

    /// Make the next non-empty bucket current; false if there are no events at all.
    fn advance(&mut self) -> bool {
        loop {
            if self.in_wheel == 0 {
                // Nothing in the near future: jump straight to the earliest far event.
                match self.overflow.peek() {
                    None => return false,
                    Some(e) => self.cur = self.geometry.bucket(e.time) - 1,
                }
            }
            self.cur += 1;
            // Far events that are now within the wheel's span join it.
            while let Some(e) = self.overflow.peek() {
                let b = self.geometry.bucket(e.time);
                if b >= self.cur + self.geometry.wheel {
                    break;
                }
                let e = self.overflow.pop().expect("peeked");
                if b == self.cur {
                    self.current.push(e);
                } else {
                    self.to_wheel(b, e);
                }
            }
            let slot = (self.cur & (self.geometry.wheel - 1)) as usize;
            let n = self.wheel.len(slot);
            if n > 0 {
                // The bucket joins the far events just moved in (if any), and is sorted.
                self.in_wheel -= n;
                self.wheel.drain_into(slot, &mut self.current);
                self.sort_current();
            } else if self.current.len() > 1 {
                self.sort_current();
            }
            if !self.current.is_empty() {
                return true;
            }
        }
    }

    /// Sort the bucket just made current, latest first (its events share the time's high bits,
    /// so `key` alone orders them; see `tie_key`).
    fn sort_current(&mut self) {
        if self.current.len() < self.geometry.radix_min || !self.counting_sort_current() {
            self.current.sort_unstable_by(|a, b| b.key.cmp(&a.key));
        }
    }

    /// Sort the current bucket in two steps: a stable counting sort on the top ten bits of the
    /// time within the bucket (one pass, into `scratch`, which then becomes the bucket), then an
    /// insertion sort on the whole key, which has only events sharing one of the 1,024
    /// sub-intervals to put in order. A benchmark's bucket holds about 1,000 events, so most
    /// sub-intervals hold none or one, and those sharing one are mostly in order already (read
    /// backwards, the bucket is in reverse scheduling order); the insertion sort then costs one
    /// comparison per event. This replaced two counting passes on the time's low bits, for one
    /// pass over the bucket's 32-byte entries fewer (docs/performance.md).
    ///
    /// False, leaving the bucket unsorted, if the insertion sort would have to move more than
    /// a few entries per event (events bunched in few sub-intervals, out of order).
    fn counting_sort_current(&mut self) -> bool {
        let n = self.current.len();
        let mut counts = [0u32; DIGITS];
        for e in &self.current {
            counts[digit(e.key)] += 1;
        }
        descending_offsets(&mut counts);
        // `resize` writes only entries beyond the old length; the scatter overwrites every one.
        self.scratch.resize(n, PLACEHOLDER);
        // Backwards, so that equal digits come latest scheduled first.
        for e in self.current.iter().rev() {
            let d = digit(e.key);
            self.scratch[counts[d] as usize] = *e;
            counts[d] += 1;
        }
        std::mem::swap(&mut self.current, &mut self.scratch);
        let v = &mut self.current;
        let mut budget = 4 * n + 64;
        for i in 1..n {
            // Most entries are already in place: look at the keys before copying an entry.
            if v[i - 1].key >= v[i].key {
                continue;
            }
            let e = v[i];
            let mut j = i;
            while j > 0 && v[j - 1].key < e.key {
                v[j] = v[j - 1];
                j -= 1;
            }
            v[j] = e;
            budget = match budget.checked_sub(i - j) {
                Some(b) => b,
                None => return false,
            };
        }
        true
    }

    pub fn len(&self) -> usize {
        self.current.len() + self.late.len() + self.in_wheel + self.overflow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// The counting sort orders a bucket exactly as the comparison sort does, ties included, in
    /// the order `schedule` leaves a bucket and in others; where its insertion step would have
    /// too much to do it gives up, and `sort_current` compares whole keys instead.
    #[test]
    fn the_counting_sort_orders_a_bucket_as_the_comparison_sort_does() {
        for bits in [MIN_BITS, 17, 18, 19, MAX_BITS] {
            counting_sort_matches_comparison_sort(bits);
        }
    }

    fn counting_sort_matches_comparison_sort(bits: u32) {
        use crate::rng::below;
        let mut rng = crate::rng::Streams::new(3).stream();
        let g = Geometry::new(bits);
        let width = 1u64 << bits;
        // A bucket of 500 events: in scheduling order, `distinct` times spread over the bucket
        // (40: many ties within a sub-interval; `width`: about one event per sub-interval).
        let mut bucket = |distinct: u64| -> Vec<Entry> {
            (1..=500u64)
                .map(|seq| {
                    let time = (7 << bits) + below(&mut rng, distinct) * (width / distinct);
                    Entry { time, key: g.tie_key(time, seq), event: Event::FlowStart { flow: seq as u32 } }
                })
                .collect()
        };
        let keys = |v: &[Entry]| v.iter().map(|e| (e.time, e.key, e.event)).collect::<Vec<_>>();
        let sorted = |v: &[Entry]| {
            let mut v = v.to_vec();
            v.sort_unstable_by(|a, b| b.key.cmp(&a.key));
            keys(&v)
        };
        let mut q = EventQueue::with_bucket_bits(bits, 0);
        let (tied, spread) = (bucket(40), bucket(width));
        // Scheduling order, and one tie swapped: the insertion step puts it back.
        let (a, b) = (0..tied.len()).flat_map(|a| (a + 1..tied.len()).map(move |b| (a, b))).find(|&(a, b)| tied[a].time == tied[b].time).unwrap();
        let mut swapped = tied.clone();
        swapped.swap(a, b);
        // Spread times in reverse scheduling order: each sub-interval's few events all out of order.
        let reversed: Vec<Entry> = spread.iter().rev().copied().collect();
        for v in [&tied, &swapped, &spread, &reversed] {
            q.current = v.clone();
            assert!(q.counting_sort_current());
            assert_eq!(keys(&q.current), sorted(v));
        }
        // Many ties in reverse scheduling order: too much for insertion; the comparison sort.
        let reversed: Vec<Entry> = tied.iter().rev().copied().collect();
        q.current = reversed.clone();
        assert!(!q.counting_sort_current());
        q.current = reversed.clone();
        q.sort_current();
        assert_eq!(keys(&q.current), sorted(&reversed));
    }

    /// The width follows the hosts' total rate, about 1,024 events per bucket at the
    /// benchmarks' load (`bucket_bits_for`): B1's 128 and B2's 1,024 hosts of 10 Gb/s measured
    /// 566 and 4,300 events per 2^20 ps bucket; B3's 3,456 hosts ~900 per 2^16 ps.
    #[test]
    fn bucket_width_follows_the_hosts_rate() {
        let hosts = |n: f64| bucket_bits_for(n * 10e9);
        assert_eq!([hosts(128.0), hosts(1024.0), hosts(3456.0), hosts(8192.0)], [20, 18, 16, 16]);
        // Few or slow hosts: the widest buckets, never wider; no hosts at all likewise.
        assert_eq!([hosts(2.0), bucket_bits_for(0.0)], [MAX_BITS, MAX_BITS]);
        assert_eq!(hosts(1e6), MIN_BITS);
    }

    /// Reference: a plain heap over (time, seq), at the narrowest, an odd and the widest
    /// buckets (where many events land in the bucket being run and go through `late`).
    #[test]
    fn the_calendar_pops_exactly_what_a_heap_pops() {
        for bits in [MIN_BITS, 17, MAX_BITS] {
            pops_what_a_heap_pops(bits);
        }
    }

    fn pops_what_a_heap_pops(bits: u32) {
        use crate::rng::below;
        let mut rng = crate::rng::Streams::new(7).stream();
        let mut q = EventQueue::with_bucket_bits(bits, 0);
        let g = q.geometry;
        let mut reference = BinaryHeap::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for step in 0..200_000u32 {
            // Mostly near-future events (a few buckets ahead), some same-time, some far (timers
            // beyond the wheel), and bursts of pops, as a simulation does.
            let r = below(&mut rng, 100);
            if r < 55 {
                let dt = match below(&mut rng, 10) {
                    0 => 0,
                    1..=7 => below(&mut rng, 5_000_000),
                    8 => below(&mut rng, 1 << 31),
                    _ => below(&mut rng, 1 << 36),
                };
                seq += 1;
                q.schedule(now + dt, Event::FlowStart { flow: step });
                reference.push(Entry { time: now + dt, key: g.tie_key(now + dt, seq), event: Event::FlowStart { flow: step } });
            } else if r < 80 {
                let got = q.pop();
                let want = reference.pop().map(|e| (e.time, e.event));
                assert_eq!(got, want, "step {step}");
                if let Some((t, _)) = got {
                    now = t;
                }
            } else {
                // The run loop's way: take the next event only if it is due by a limit, and
                // not at all when held; a refusal takes nothing.
                let limit = now + below(&mut rng, 1 << 22);
                let may_pop = below(&mut rng, 8) != 0;
                let got = q.pop_due(limit, may_pop);
                match reference.peek().map(|e| (e.time, e.event)) {
                    None => assert!(matches!(got, Next::Empty), "step {step}"),
                    Some((t, _)) if t > limit => assert!(matches!(got, Next::Later), "step {step}"),
                    Some(_) if !may_pop => assert!(matches!(got, Next::Held), "step {step}"),
                    Some(want) => {
                        reference.pop();
                        assert!(matches!(got, Next::Due(t, e) if (t, e) == want), "step {step}");
                        now = want.0;
                    }
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(want) = reference.pop() {
            assert_eq!(q.pop(), Some((want.time, want.event)));
        }
        assert_eq!(q.pop(), None);
    }
}
