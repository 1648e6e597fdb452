//! Per-port scheduling across traffic classes (`[switch] classes`): strict priority between
//! levels, deficit weighted round robin (DWRR) within a level, and ECN marking at enqueue or at
//! dequeue (issue 32, item 3; the multi-tenant model builds on it).
//!
//! A switch with classes holds each class's packets in a queue of its own at every port, as a
//! switch's egress holds one queue per traffic class. The port's link (`Ports`' FIFO, whose
//! departures are known at enqueue) then takes one packet at a time: when it falls idle, the
//! scheduler picks the next packet and the link starts it at once, so a packet's wait depends
//! on what arrives after it, which the FIFO shortcut cannot express. Each pick is one event
//! (`PortDrain`), only where packets wait; a packet that finds its port idle and nothing
//! waiting starts at once, as on a FIFO port.
//!
//! - **Strict priority**: a class of a lower `priority` number is always served first while it
//!   has a packet waiting (802.1Q's strict-priority transmission selection).
//! - **DWRR** within one priority level (Shreedhar and Varghese, "Efficient fair queuing using
//!   deficit round robin", SIGCOMM 1995): the level's backlogged classes take turns; a class
//!   beginning its turn adds `quantum x weight` bytes to its deficit and sends head packets while
//!   its deficit covers them; a class whose queue empties leaves the round with a deficit of 0.
//!   Over any backlogged interval class i gets weight_i / sum(weights) of the link, within one
//!   quantum x weight plus one packet per round. It is work-conserving: an idle class's share goes to
//!   the others.
//! - **Marking**: the queue a mark reads is the packet's class queue, counted with the packet
//!   on the wire (so that one class reproduces the FIFO port exactly). At enqueue (the default,
//!   and DCTCP's switches) a packet is marked if that queue exceeds K when it arrives; at
//!   dequeue, if the bytes of its class still waiting behind it exceed K when it starts, so the
//!   mark reports the queue as it is when the packet leaves, one queueing delay fresher.
//!
//! The port's buffer (static, or the switch's pool) counts every class together. A class may
//! also have a limit of its own (`limit_classes`; a tenant's `buffer`): a packet that would take
//! its class's waiting bytes past it is dropped even where the port has room, so that a class
//! that never slows down (an unresponsive sender) cannot fill the buffer the others need to
//! stay backlogged, which DWRR's shares assume.

use crate::units::Time;
use std::collections::VecDeque;

/// Queues (traffic classes) a switch port may have (802.1Q's eight).
pub const MAX_CLASSES: usize = 8;

/// One traffic class as the scenario gives it (`switch.classes[i]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Class {
    /// Strict-priority level: 0 is served first.
    pub priority: u8,
    /// DWRR weight within its level.
    pub weight: u32,
}

/// A packet waiting at a port: its handle, its wire bytes, when it arrived, whether it may be
/// marked and whether it was marked on arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub pkt: u32,
    pub wire: u64,
    pub since: Time,
    pub ect: bool,
    pub mark: bool,
}

/// One port's class queues.
#[derive(Clone, Debug, Default)]
struct PortQueues {
    queues: Vec<VecDeque<Waiting>>,
    bytes: Vec<u64>,
    deficit: Vec<u64>,
    /// Per class: its turn has begun (its quantum is added once per turn).
    turn: Vec<bool>,
    /// Per priority level (in `Scheduler::levels` order), its backlogged classes in turn order.
    rounds: Vec<VecDeque<u8>>,
    held: u64,
    /// A `PortDrain` is in the calendar.
    drain_due: bool,
}

pub struct Scheduler {
    classes: Vec<Class>,
    /// Each class's index into the sorted distinct priority levels.
    level_of: Vec<usize>,
    levels: usize,
    quantum: u64,
    /// Per class, the most bytes it may have waiting at a port (`u64::MAX`: only the buffer).
    limits: Vec<u64>,
    pub dequeue_marking: bool,
    /// Per port; empty for ports that are not scheduled (host NICs).
    ports: Vec<PortQueues>,
}

impl Scheduler {
    /// Swap port `port`'s class queues with `other`'s (`Ports::absorb`).
    pub fn swap_port(&mut self, other: &mut Scheduler, port: usize) {
        std::mem::swap(&mut self.ports[port], &mut other.ports[port]);
    }

    /// `scheduled(p)` says which of `n_ports` ports have class queues.
    pub fn new(classes: &[Class], quantum: u64, dequeue_marking: bool, n_ports: usize, scheduled: impl Fn(usize) -> bool) -> Scheduler {
        let mut priorities: Vec<u8> = classes.iter().map(|c| c.priority).collect();
        priorities.sort_unstable();
        priorities.dedup();
        let level_of = classes.iter().map(|c| priorities.binary_search(&c.priority).expect("listed")).collect();
        let n = classes.len();
        let fresh = PortQueues {
            queues: vec![VecDeque::new(); n],
            bytes: vec![0; n],
            deficit: vec![0; n],
            turn: vec![false; n],
            rounds: vec![VecDeque::new(); priorities.len()],
            held: 0,
            drain_due: false,
        };
        let ports = (0..n_ports).map(|p| if scheduled(p) { fresh.clone() } else { PortQueues::default() }).collect();
        Scheduler { classes: classes.to_vec(), level_of, levels: priorities.len(), quantum, limits: vec![u64::MAX; n], dequeue_marking, ports }
    }

    /// Give each class a limit on the bytes it may have waiting at a port (`u64::MAX`: none).
    pub fn limit_classes(&mut self, limits: &[u64]) {
        self.limits = limits.to_vec();
    }

    /// Whether `class`'s limit leaves room at `port` for a packet of `wire` bytes.
    #[inline]
    pub fn admits(&self, port: u32, class: u8, wire: u64) -> bool {
        self.ports[port as usize].bytes[class as usize] + wire <= self.limits[class as usize]
    }

    /// Whether `port` has class queues.
    #[inline]
    pub fn schedules(&self, port: u32) -> bool {
        !self.ports[port as usize].queues.is_empty()
    }

    /// Bytes waiting at `port`, every class together (not counting the packet on the wire).
    #[inline]
    pub fn held(&self, port: u32) -> u64 {
        self.ports.get(port as usize).map_or(0, |q| q.held)
    }

    /// Bytes of `class` waiting at `port`.
    pub fn class_bytes(&self, port: u32, class: u8) -> u64 {
        self.ports[port as usize].bytes[class as usize]
    }

    /// A packet joins its class queue.
    pub fn push(&mut self, port: u32, class: u8, w: Waiting) {
        let q = &mut self.ports[port as usize];
        let c = class as usize;
        if q.queues[c].is_empty() {
            q.rounds[self.level_of[c]].push_back(class);
        }
        q.queues[c].push_back(w);
        q.bytes[c] += w.wire;
        q.held += w.wire;
    }

    /// The next packet to start at `port`, by strict priority and then DWRR, with its class.
    pub fn pop(&mut self, port: u32) -> Option<(u8, Waiting)> {
        let q = &mut self.ports[port as usize];
        let level = (0..self.levels).find(|&l| !q.rounds[l].is_empty())?;
        loop {
            let class = *q.rounds[level].front().expect("a backlogged level");
            let c = class as usize;
            if !q.turn[c] {
                q.turn[c] = true;
                q.deficit[c] += self.quantum * self.classes[c].weight as u64;
            }
            let head = *q.queues[c].front().expect("classes in a round are backlogged");
            if q.deficit[c] < head.wire {
                // Its turn is over; the next class's begins.
                q.turn[c] = false;
                q.rounds[level].rotate_left(1);
                continue;
            }
            q.deficit[c] -= head.wire;
            q.queues[c].pop_front();
            q.bytes[c] -= head.wire;
            q.held -= head.wire;
            if q.queues[c].is_empty() {
                q.rounds[level].pop_front();
                q.deficit[c] = 0;
                q.turn[c] = false;
            }
            return Some((class, head));
        }
    }

    /// Marks `port`'s drain as due; false if it already was.
    pub fn arm_drain(&mut self, port: u32) -> bool {
        !std::mem::replace(&mut self.ports[port as usize].drain_due, true)
    }

    /// `port`'s drain ran with nothing left to send.
    pub fn disarm_drain(&mut self, port: u32) {
        self.ports[port as usize].drain_due = false;
    }

    /// Whether `port` has packets waiting.
    pub fn has_waiting(&self, port: u32) -> bool {
        self.held(port) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(pkt: u32, wire: u64) -> Waiting {
        Waiting { pkt, wire, since: 0, ect: false, mark: false }
    }

    fn drain(s: &mut Scheduler) -> Vec<u8> {
        std::iter::from_fn(|| s.pop(0).map(|(c, _)| c)).collect()
    }

    /// Strict priority: whatever waited first, class 0 (priority 0) goes before class 1.
    #[test]
    fn strict_priority_serves_the_lower_level_first() {
        let classes = [Class { priority: 1, weight: 1 }, Class { priority: 0, weight: 1 }];
        let mut s = Scheduler::new(&classes, 1500, false, 1, |_| true);
        s.push(0, 0, waiting(1, 1500));
        s.push(0, 0, waiting(2, 1500));
        s.push(0, 1, waiting(3, 1500));
        assert_eq!(drain(&mut s), vec![1, 0, 0]);
        assert_eq!(s.held(0), 0);
    }

    /// DWRR by hand: weights 1 and 3, quantum 1,500 B, 1,500 B packets, both backlogged. Each
    /// round class 0 sends one packet and class 1 three: of the first 8 packets, 2 and 6.
    #[test]
    fn dwrr_shares_by_weight_in_whole_packets() {
        let classes = [Class { priority: 0, weight: 1 }, Class { priority: 0, weight: 3 }];
        let mut s = Scheduler::new(&classes, 1500, false, 1, |_| true);
        for i in 0..10 {
            s.push(0, 0, waiting(i, 1500));
            s.push(0, 1, waiting(100 + i, 1500));
        }
        let order: Vec<u8> = (0..8).map(|_| s.pop(0).unwrap().0).collect();
        assert_eq!(order, vec![0, 1, 1, 1, 0, 1, 1, 1]);
    }

    /// A class's limit counts its own waiting bytes only: with 3,000 B for class 0, a third
    /// 1,500 B packet does not fit while two wait, and fits again once one has left; class 1,
    /// unlimited, is not affected.
    #[test]
    fn a_class_limit_bounds_its_waiting_bytes() {
        let classes = [Class { priority: 0, weight: 1 }, Class { priority: 0, weight: 1 }];
        let mut s = Scheduler::new(&classes, 1500, false, 1, |_| true);
        s.limit_classes(&[3000, u64::MAX]);
        s.push(0, 0, waiting(1, 1500));
        s.push(0, 0, waiting(2, 1500));
        assert!(!s.admits(0, 0, 1500));
        assert!(s.admits(0, 1, 1_000_000));
        assert_eq!(s.pop(0).map(|(c, _)| c), Some(0));
        assert!(s.admits(0, 0, 1500));
    }

    /// Deficits carry over: with a quantum of 1,000 B and 1,500 B packets at weight 1 each,
    /// class 0's first turn (1,000 B) cannot send; its second (2,000 B) sends one, keeping 500.
    /// Class 1's 500 B packets send two per turn. A class whose queue empties leaves the round
    /// with nothing saved.
    #[test]
    fn dwrr_deficits_carry_over_between_turns() {
        let classes = [Class { priority: 0, weight: 1 }, Class { priority: 0, weight: 1 }];
        let mut s = Scheduler::new(&classes, 1000, false, 1, |_| true);
        for i in 0..2 {
            s.push(0, 0, waiting(i, 1500));
        }
        for i in 0..6 {
            s.push(0, 1, waiting(10 + i, 500));
        }
        // Turn 0: class 0 can't (1,000 < 1,500); class 1 sends 2. Turn 1: class 0 sends one
        // (2,000 - 1,500 = 500 left, < 1,500: turn over); class 1 sends 2; turn 2: class 0
        // sends (500 + 1,000 = 1,500) and leaves; class 1 sends its last 2.
        assert_eq!(drain(&mut s), vec![1, 1, 0, 1, 1, 0, 1, 1]);
        assert_eq!(s.ports[0].deficit, vec![0, 0]);
    }
}
