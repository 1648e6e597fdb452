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
    /// RACK's reordering timer of `flow` (`transport.rack`; stale unless the sender's
    /// `rack_at` is now).
    Rack { flow: u32 },
    /// The delayed-ACK timer of `flow`'s receiver may have expired (stale if `gen` is old).
    DelayedAck { flow: u32, gen: u32 },
    /// `host`'s NIC queue has room for data again: its waiting flows send in turn (`fq`).
    HostDrain { host: u32 },
    /// The oldest packet `flow` had in its host's NIC queue has left (TCP small queues).
    TsqWake { flow: u32 },
    /// `port`'s link is free and packets wait in its class queues (`fabric/scheduler.rs`).
    PortDrain { port: u32 },
    /// Constant-rate flow `flow`'s next datagram is due (`transport/udp.rs`).
    UdpSend { flow: u32 },
    /// The receiver reorder shim of `flow` may have to release what it holds.
    ShimFlush { flow: u32, gen: u32 },
    /// The load balancer's periodic control loop (LocalFlow).
    Tick,
    /// `switch` has written message `generation` of load-balancer rules (`control::rewrites`;
    /// void unless it is still the switch's oldest: not voided by a routing change, nor dropped
    /// by coalescing).
    RulesInstalled { switch: u32, generation: u32 },
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
    Directory(DirectoryEvent),
    /// The multicast controller rebuilds the groups' trees around the failed links
    /// (`sim/multicast.rs`).
    McRebuild,
    /// The storage service's own events (`service`, `sim/service.rs`).
    Service(ServiceEvent),
}

/// What the storage service (`service`) schedules for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceEvent {
    /// The clients start: closed-loop tenants issue their first requests, open-loop ones
    /// schedule theirs.
    Start,
    /// Server `server` has finished its request.
    Served { server: u32 },
    /// Open-loop tenant `tenant`'s next request is due.
    Arrival { tenant: u32 },
    /// Weight allocation's period ends (the first one, `first`, only starts the count).
    Allocate { first: bool },
    /// The request routers update their replica-selection windows.
    Windows,
    /// The key popularity shifts (`service.shift`).
    Shift,
    /// Closed-loop tenants with a varying demand (`service.demand[i].profile`) top up their
    /// outstanding requests to its level; scheduled only when some tenant's demand varies.
    Demand,
}

/// What the VL2 directory model (`directory`) schedules for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectoryEvent {
    /// The lookup of cache entry `entry` is answered.
    LookupDone { entry: u32 },
    /// Migration `index` happens: the VM resumes on its new server.
    Migrate { index: u32 },
    /// Migration `index`'s update commits: the directory maps the AA to its new place.
    UpdateCommitted { index: u32 },
    /// A ToR's report of a misdelivered packet (message `msg`) reaches a directory server.
    Report { msg: u32 },
    /// The directory's correction (message `msg`) reaches the sender's agent.
    Correction { msg: u32 },
    /// `[directory] channel`: push `push`'s message to its target `target & 0x7fff_ffff` is
    /// written (the top bit: a two-phase or per-flow flip; `directory::push`).
    PushWritten { push: u32, target: u32 },
}

/// An event as the calendar stores it, in eight bytes (`EventQueue::pack`). A packet's arrival,
/// nearly every event, is packed whole: the node in the high half, the packet in the low half.
/// Any other event waits in `EventQueue::others`, and this is [`OTHER`] in the high half and its
/// index there in the low half (no fabric has 2^32 - 1 nodes: `Topology` numbers them in u32s,
/// and `pack` sends such a node to `others` all the same).
///
/// [`EventQueue::pop_due`] hands events out in this form too: the run loop takes an arrival's
/// node and packet straight out of it (`as_arrival`) and turns only the rest back into an
/// [`Event`] (`EventQueue::unpack`). Handed out as an `Event`, an arrival went through memory as
/// twelve bytes written in parts and read back whole, a load that cannot be forwarded from the
/// stores: 9% of B2's samples gathered after it, and B2 ran 0.98x without it
/// (docs/performance.md, "Design decisions").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed(u64);

/// `Packed`'s high half for an event kept in `others`.
const OTHER: u32 = u32::MAX;

impl Packed {
    #[inline]
    fn arrival(node: u32, pkt: u32) -> Packed {
        Packed((node as u64) << 32 | pkt as u64)
    }

    /// Node and packet, if an arrival.
    #[inline]
    pub fn as_arrival(self) -> Option<(u32, u32)> {
        let node = (self.0 >> 32) as u32;
        (node != OTHER).then_some((node, self.0 as u32))
    }
}

/// An event in the wheel or the bucket being run: 16 bytes. Its time is the bucket's start plus
/// the time's low bits, which the key keeps (`tie_key`), so only the key is stored. At 32 bytes,
/// with the time and the event unpacked, writing events into the wheel and reading them back
/// was a quarter of B2's time, most of it waiting for memory (docs/performance.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// `tie_key(time, seq)`.
    key: u64,
    event: Packed,
}

/// What fills storage not yet written (never popped).
const PLACEHOLDER: Entry = Entry { key: 0, event: Packed(0) };

/// An event outside the wheel (the far future, or late into the bucket being run), with its
/// whole time.
#[derive(Clone, Copy, Debug)]
struct Timed {
    time: Time,
    key: u64,
    event: Packed,
}

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

/// The wheel covers 2^30 ps = 1.07 ms of near future at any width, where almost all packet
/// events (serialisation, propagation, queueing) and most timers land; later events go to the
/// overflow heap and move into the wheel as it turns. At 2^27 ps (134 us), 1% of B2's events,
/// arrivals behind deep host queues, went through the heap, which held some 60,000 events, and
/// its pops were 6.5% of B2's samples; in alternating runs (docs/performance.md) 2^30 ps ran B2
/// 0.96x, B1 0.97x, B4 (10 ms) 0.79x and B5 (3 ms) 0.74-0.77x, B3 unchanged. Wider still gained
/// little more (B4 0.94x, B5 0.98x at 2^32) for B3's and B5's narrow buckets' memory: a
/// bucket holds a 1 KB chunk even when empty (`buckets.rs`), 16 MB at 2^16 ps buckets here.
const SPAN_BITS: u32 = 30;
/// Widths allowed: 65.5 ns to 1.05 us (16,384 to 1,024 buckets). Narrower ran B5 (8,192 hosts)
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
        Geometry { bits, wheel: 1 << (SPAN_BITS - bits), radix_min: DIGITS / 4, key_shift: 64 - bits, time_mask: (1 << bits) - 1, seq_limit: 1 << (64 - bits) }
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

impl PartialEq for Timed {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.key) == (o.time, o.key)
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timed {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.key).cmp(&(self.time, self.key))
    }
}

/// Events other than arrivals, while they are in the calendar: a slab whose slots are reused,
/// so that once it has grown to the most such events ever pending nothing is allocated.
#[derive(Default)]
struct Others {
    slots: Vec<Event>,
    free: Vec<u32>,
}

impl Others {
    #[cold]
    fn put(&mut self, event: Event) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = event;
                i
            }
            None => {
                self.slots.push(event);
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[cold]
    fn take(&mut self, i: u32) -> Event {
        self.free.push(i);
        self.slots[i as usize]
    }
}

/// What [`EventQueue::pop_due`] found.
pub enum Next {
    /// The next event, due by the limit, taken off the calendar; one that is not an arrival
    /// must be unpacked (`EventQueue::unpack`).
    Due(Time, Packed),
    /// The next event is after the limit (left in place).
    Later,
    /// The next event is due but was not to be taken (left in place).
    Held,
    /// No events at all.
    Empty,
}

/// A priority queue of events ordered by time, then by scheduling order.
///
/// A calendar (timing wheel) over integer time: events within the next 1.07 ms are kept unsorted
/// in their bucket; only the bucket being run is sorted, once, when it becomes current, and its
/// events are then popped off its end. A bucket is sorted by counting (a few
/// instructions per event) and small ones by comparison, instead of O(log n) heap steps with
/// cache misses over all n pending events (about half of the time with one big heap, see
/// docs/performance.md). The order is exactly a heap's: by time, then by scheduling order.
/// Buckets are chains of chunks from one arena (`buckets.rs`), recycled through a free list, so
/// once the wheel has warmed up nothing is allocated.
pub struct EventQueue {
    /// The bucket being run, sorted by key, latest first: the next event is last.
    current: Vec<Entry>,
    /// Events scheduled into the bucket being run after it was sorted (a hop shorter than a
    /// bucket is wide, a timer of zero). A heap, because inserting into the sorted bucket would
    /// move up to thousands of entries; `pop` takes the earlier of its top and the bucket's
    /// next.
    late: BinaryHeap<Timed>,
    /// Index (`geometry.bucket(time)`) of the bucket in `current`.
    cur: u64,
    /// Its first picosecond: an entry's time is this plus the time's bits in its key.
    cur_start: Time,
    /// Bucket `b` (cur < b < cur + wheel length) lives in slot `b % wheel length`.
    wheel: Buckets,
    geometry: Geometry,
    /// Events in `wheel`.
    in_wheel: usize,
    /// Events at or beyond bucket cur + wheel length.
    overflow: BinaryHeap<Timed>,
    /// Events other than arrivals, which the entries above name by their index here.
    others: Others,
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
            cur_start: 0,
            wheel: Buckets::new(geometry.wheel as usize),
            geometry,
            in_wheel: 0,
            overflow: BinaryHeap::new(),
            others: Others::default(),
            scratch: Vec::new(),
            seq: 0,
        }
    }

    /// Room for `n` events beyond the wheel's span (timers: retransmission timeouts are
    /// milliseconds away), so that the far heap reaches its working size without growing.
    pub fn reserve_far(&mut self, n: usize) {
        self.overflow.reserve(n);
    }

    /// Schedule `event` at `time`, which must not be earlier than the last event popped.
    #[inline]
    pub fn schedule(&mut self, time: Time, event: Event) {
        let event = self.pack(event);
        self.schedule_packed(time, event);
    }

    /// `schedule(time, Event::Arrive { node, pkt })`, packed without going through `pack`'s
    /// match: written out here it costs B2 three instructions per event fewer (534 against 537).
    #[inline]
    pub fn schedule_arrival(&mut self, time: Time, node: u32, pkt: u32) {
        let event = if node != OTHER { Packed::arrival(node, pkt) } else { self.pack(Event::Arrive { node, pkt }) };
        self.schedule_packed(time, event);
    }

    #[inline]
    fn schedule_packed(&mut self, time: Time, event: Packed) {
        self.seq += 1;
        let g = &self.geometry;
        assert!(self.seq < g.seq_limit, "more events scheduled in one run than the calendar's keys hold");
        let b = g.bucket(time);
        if b > self.cur && b < self.cur + g.wheel {
            let e = Entry { key: g.tie_key(time, self.seq), event };
            self.put_in_wheel(b, e);
        } else {
            self.off_wheel(time, event);
        }
    }

    /// `event` in eight bytes (`Packed`): an arrival as itself, anything else as its place in
    /// `others`.
    #[inline]
    fn pack(&mut self, event: Event) -> Packed {
        match event {
            Event::Arrive { node, pkt } if node != OTHER => Packed::arrival(node, pkt),
            other => Packed((OTHER as u64) << 32 | self.others.put(other) as u64),
        }
    }

    /// The event `p` stands for, taken out of the calendar: once for each event `pop_due`
    /// hands out that is not an arrival, as it frees the event's slot.
    #[inline]
    pub fn unpack(&mut self, p: Packed) -> Event {
        match p.as_arrival() {
            Some((node, pkt)) => Event::Arrive { node, pkt },
            None => self.others.take(p.0 as u32),
        }
    }

    /// The event `p` stands for, left in the calendar.
    #[cfg(test)]
    fn peek_event(&self, p: Packed) -> Event {
        match p.as_arrival() {
            Some((node, pkt)) => Event::Arrive { node, pkt },
            None => self.others.slots[p.0 as u32 as usize],
        }
    }

    /// The time of an entry of the bucket being run.
    #[inline]
    fn time_of(&self, e: &Entry) -> Time {
        self.cur_start | e.key >> self.geometry.key_shift
    }

    /// `schedule` for an event outside the wheel's span. Out of line, so that the path almost
    /// every event takes needs few registers and saves none (B2: 14 instructions per event).
    #[cold]
    #[inline(never)]
    fn off_wheel(&mut self, time: Time, event: Packed) {
        let e = Timed { time, key: self.geometry.tie_key(time, self.seq), event };
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
                let time = self.time_of(e);
                return if time > limit {
                    Next::Later
                } else if !may_pop {
                    Next::Held
                } else {
                    let e = self.current.pop().expect("looked at");
                    Next::Due(time, e.event)
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
            Some(_) => self.pop_packed().map_or(Next::Empty, |(t, e)| Next::Due(t, e)),
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let (time, event) = self.pop_packed()?;
        Some((time, self.unpack(event)))
    }

    #[inline]
    fn pop_packed(&mut self) -> Option<(Time, Packed)> {
        if !self.ready() {
            return None;
        }
        if self.late.is_empty() {
            let e = self.current.pop()?;
            Some((self.time_of(&e), e.event))
        } else {
            self.pop_late_or_current()
        }
    }

    /// Whether the bucket being run (with its late arrivals) has an event, turning the wheel
    /// to the next non-empty bucket if not; false if there are no events at all.
    #[inline]
    fn ready(&mut self) -> bool {
        !(self.current.is_empty() && self.late.is_empty()) || self.advance()
    }

    /// The earlier of the late heap's top and the sorted bucket's next, with its time.
    #[cold]
    fn pop_late_or_current(&mut self) -> Option<(Time, Packed)> {
        let current = self.current.last().map(|c| (self.time_of(c), c.key));
        match (current, self.late.peek()) {
            (Some(c), Some(l)) if c < (l.time, l.key) => self.current.pop().map(|e| (c.0, e.event)),
            (_, Some(_)) => self.late.pop().map(|l| (l.time, l.event)),
            _ => self.current.pop().map(|e| (self.time_of(&e), e.event)),
        }
    }

    /// The node and packet of the event `i` places after the next one `pop` returns (0: the
    /// next), if it is already in the bucket being run and an arrival packed whole (`Packed`);
    /// it does not turn the wheel. For looking ahead (`prefetch.rs`): an event scheduled later
    /// may still run before it.
    #[inline]
    pub fn arrival_ahead(&self, i: usize) -> Option<(u32, u32)> {
        let k = self.current.len().checked_sub(i + 1)?;
        self.current[k].event.as_arrival()
    }

    /// Time of the next event (turning the wheel to it if needed).
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        if !self.ready() {
            return None;
        }
        let current = self.current.last().map(|c| self.time_of(c));
        match (current, self.late.peek()) {
            (Some(c), Some(l)) => Some(c.min(l.time)),
            (c, l) => c.or(l.map(|l| l.time)),
        }
    }

    #[inline]
    fn put_in_wheel(&mut self, b: u64, e: Entry) {
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
            self.cur_start = self.cur << self.geometry.bits;
            // Far events that are now within the wheel's span join it.
            while let Some(e) = self.overflow.peek() {
                let b = self.geometry.bucket(e.time);
                if b >= self.cur + self.geometry.wheel {
                    break;
                }
                let e = self.overflow.pop().expect("peeked");
                let e = Entry { key: e.key, event: e.event };
                if b == self.cur {
                    self.current.push(e);
                } else {
                    self.put_in_wheel(b, e);
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
            self.current.sort_unstable_by_key(|e| std::cmp::Reverse(e.key));
        }
    }

    /// Sort the current bucket in two steps: a stable counting sort on the top ten bits of the
    /// time within the bucket (one pass, into `scratch`, which then becomes the bucket), then an
    /// insertion sort on the whole key, which has only events sharing one of the 1,024
    /// sub-intervals to put in order. A benchmark's bucket holds about 1,000 events, so most
    /// sub-intervals hold none or one, and those sharing one are mostly in order already (read
    /// backwards, the bucket is in reverse scheduling order); the insertion sort then costs one
    /// comparison per event. This replaced two counting passes on the time's low bits, for one
    /// pass over the bucket's entries fewer (docs/performance.md).
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
                    Entry { key: g.tie_key(time, seq), event: Packed(seq) }
                })
                .collect()
        };
        let keys = |v: &[Entry]| v.to_vec();
        let sorted = |v: &[Entry]| {
            let mut v = v.to_vec();
            v.sort_unstable_by_key(|e| std::cmp::Reverse(e.key));
            keys(&v)
        };
        let mut q = EventQueue::with_bucket_bits(bits, 0);
        let (tied, spread) = (bucket(40), bucket(width));
        // Scheduling order, and one tie swapped: the insertion step puts it back.
        let time = |e: &Entry| e.key >> g.key_shift;
        let (a, b) = (0..tied.len()).flat_map(|a| (a + 1..tied.len()).map(move |b| (a, b))).find(|&(a, b)| time(&tied[a]) == time(&tied[b])).unwrap();
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
        // Max-heap of reversed (time, seq): the earliest on top.
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
                // Arrivals packed whole, other events through the slab (`Packed`).
                let event = match below(&mut rng, 3) {
                    0 => Event::Rto { flow: step, gen: seq as u32 },
                    _ => Event::Arrive { node: step % 5000, pkt: step },
                };
                q.schedule(now + dt, event);
                reference.push(std::cmp::Reverse((now + dt, g.tie_key(now + dt, seq), EventOrd(event))));
            } else if r < 80 {
                let got = q.pop();
                let want = reference.pop().map(|std::cmp::Reverse((t, _, e))| (t, e.0));
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
                match reference.peek().map(|std::cmp::Reverse((t, _, e))| (*t, e.0)) {
                    None => assert!(matches!(got, Next::Empty), "step {step}"),
                    Some((t, _)) if t > limit => assert!(matches!(got, Next::Later), "step {step}"),
                    Some(_) if !may_pop => assert!(matches!(got, Next::Held), "step {step}"),
                    Some(want) => {
                        reference.pop();
                        let Next::Due(t, e) = got else { panic!("step {step}: nothing due") };
                        assert_eq!((t, q.unpack(e)), want, "step {step}");
                        now = want.0;
                    }
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(std::cmp::Reverse((t, _, e))) = reference.pop() {
            assert_eq!(q.pop(), Some((t, e.0)));
        }
        assert_eq!(q.pop(), None);
        assert_eq!(q.others.slots.len() - q.others.free.len(), 0, "every slab slot given back");
    }

    /// An event in the reference heap, which orders by (time, key) first; keys are unique, so
    /// the event itself never decides.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct EventOrd(Event);
    impl PartialOrd for EventOrd {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for EventOrd {
        fn cmp(&self, _: &Self) -> Ordering {
            Ordering::Equal
        }
    }

    /// `pack` and `unpack` are inverse for every kind of event, arrivals at the largest node
    /// that packs whole and the one beyond it included.
    #[test]
    fn packed_events_unpack_to_themselves() {
        let mut q = EventQueue::default();
        let events = [
            Event::Arrive { node: 0, pkt: 0 },
            Event::Arrive { node: u32::MAX - 1, pkt: u32::MAX },
            Event::Arrive { node: u32::MAX, pkt: 7 },
            Event::FlowStart { flow: 3 },
            Event::Rto { flow: u32::MAX, gen: u32::MAX },
            Event::CloseBin,
        ];
        let packed: Vec<Packed> = events.iter().map(|&e| q.pack(e)).collect();
        assert_eq!(packed.iter().filter(|p| p.as_arrival().is_some()).count(), 2, "every arrival but at node u32::MAX packs whole");
        for (&e, &p) in events.iter().zip(&packed) {
            assert_eq!(q.peek_event(p), e);
            assert_eq!(q.unpack(p), e);
        }
    }
}
