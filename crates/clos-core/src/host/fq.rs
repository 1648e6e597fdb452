//! Linux's `fq` in front of a short NIC queue (`[host] qdisc = "fq"`, the default): per host,
//! the flows with data waiting, served round robin one packet each per turn, while the NIC queue
//! holds less than `nic_buffer` bytes. ACKs and other control packets never wait here.

use crate::fabric::Ports;
use crate::units::Time;
use std::collections::VecDeque;

pub struct Fq {
    nic_buffer: u64,
    ring: Vec<VecDeque<u32>>,
    /// Per flow: in its host's ring.
    waiting: Vec<bool>,
    /// Per host: a drain (the next turn of its round robin) is in the calendar.
    drain_due: Vec<bool>,
}

impl Fq {
    pub fn new(nic_buffer: u64, hosts: usize, flows: usize) -> Fq {
        Fq { nic_buffer, ring: (0..hosts).map(|_| VecDeque::with_capacity(4)).collect(), waiting: vec![false; flows], drain_due: vec![false; hosts] }
    }

    pub fn add_flow(&mut self) {
        self.waiting.push(false);
    }

    /// Whether `port`'s NIC queue has room for a frame of `frame` bytes at `now`, and if not,
    /// when it will.
    pub fn room(&self, ports: &Ports, port: u32, frame: u64, now: Time) -> Result<(), Time> {
        if ports.backlog(port, now) + frame <= self.nic_buffer {
            return Ok(());
        }
        Err(ports.time_backlog_falls_to(port, self.nic_buffer.saturating_sub(frame), now))
    }

    /// Whether `flow` of `host` may put its next frame (`room`, from [`Fq::room`]) into the NIC
    /// queue now: only if no flow of its host waits and the queue has room. Otherwise it joins
    /// the host's ring, and the returned time is when the host's next turn is due, if it was not
    /// due already (the caller schedules it).
    #[inline]
    pub fn admits(&mut self, flow: u32, host: u32, room: Result<(), Time>, now: Time) -> Result<(), Option<Time>> {
        let ring = &mut self.ring[host as usize];
        if ring.is_empty() && room.is_ok() {
            return Ok(());
        }
        if !self.waiting[flow as usize] {
            self.waiting[flow as usize] = true;
            ring.push_back(flow);
        }
        if self.drain_due[host as usize] {
            return Err(None);
        }
        self.drain_due[host as usize] = true;
        Err(Some(room.err().unwrap_or(now)))
    }

    /// The flow whose turn it is at `host`, if any; with none, the host's turns stop.
    pub fn next(&mut self, host: u32) -> Option<u32> {
        let next = self.ring[host as usize].front().copied();
        if next.is_none() {
            self.drain_due[host as usize] = false;
        }
        next
    }

    /// The flow at the front of `host`'s ring takes its turn: it leaves the ring.
    pub fn take_turn(&mut self, host: u32) {
        let flow = self.ring[host as usize].pop_front().expect("a turn follows `next`");
        self.waiting[flow as usize] = false;
    }

    /// `flow`, which sent a packet on its turn and has more, goes to the back of the ring.
    pub fn requeue(&mut self, host: u32, flow: u32) {
        self.waiting[flow as usize] = true;
        self.ring[host as usize].push_back(flow);
    }
}
