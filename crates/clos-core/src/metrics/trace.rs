//! Packet traces of chosen flows (`output.trace`): what a capture at both ends of a flow would
//! show, plus what no capture shows, where the fabric dropped its packets. One row per event, in
//! the order the simulator handled them:
//!
//! | event | when | `seg` | `link` |
//! |---|---|---|---|
//! | `send`, `resend` | the sender hands a data segment (a first transmission, a retransmission) to its host | the segment | - |
//! | `drop` | one of the flow's packets is lost | the data segment, or an ACK's cumulative ACK | the port, where a queue refused it |
//! | `arrive` | a data segment reaches the receiver | the segment | - |
//! | `ack_send` | the receiver hands an ACK to its host | its cumulative ACK | - |
//! | `ack` | an ACK reaches the sender | its cumulative ACK; `sacked` its highest SACKed segment + 1 (0: none) | - |
//! | `timeout` | the retransmission timer fires | the oldest unacknowledged segment | - |
//! | `mc_copy` | a switch sends a copy of a multicast datagram (one row per copy, the one it received included) | the datagram | the port it leaves by |
//! | `mc_arrive` | a member host receives a copy | the datagram | the port it came in by (names the member) |
//! | `mc_discard` | a node that did not join the group discards a meta-group's copy | the datagram | the port it came in by |
//!
//! A multicast datagram's `send` is its publisher's; its copies are the `mc_` rows.
//!
//! Each row also holds what the packet's headers would say (`Marks`): the IP ECN field as the
//! packet was at that point (a CE mark shows on `arrive`, not on `send`), ECE, CWR and the SACK
//! blocks, so that `clos.results.pcap` can write real TCP headers. clos puts no CWR on its
//! packets; the trace sets it as Linux would (`Trace::cwr`).
//!
//! Off (no flow listed) the simulator pays one branch per event on a `None`.

use crate::packet::{Packet, SackBlocks, FLAG_ACK, FLAG_CE, FLAG_ECE, FLAG_ECT};

/// No link (`link` column): the event did not happen at a switch port.
pub const NO_LINK: u32 = u32::MAX;

/// The most flows one run may trace (`output.trace`).
pub const MAX_TRACED: usize = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Send,
    Resend,
    Drop,
    DropAck,
    Arrive,
    Ack,
    AckSend,
    Timeout,
    Probe,
    /// A switch sent a multicast copy out of `link` (`sim/multicast.rs`).
    McCopy,
    /// A member host received a multicast copy; `link` is the port it came in by.
    McArrive,
    /// A host or edge switch that did not join the group discarded a meta-group's copy
    /// (`multicast/aggregation.rs`); `link` is the port it came in by.
    McDiscard,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Send => "send",
            Event::Resend => "resend",
            Event::Drop => "drop",
            Event::DropAck => "drop_ack",
            Event::Arrive => "arrive",
            Event::Ack => "ack",
            Event::AckSend => "ack_send",
            Event::Timeout => "timeout",
            Event::Probe => "probe",
            Event::McCopy => "mc_copy",
            Event::McArrive => "mc_arrive",
            Event::McDiscard => "mc_discard",
        }
    }
}

/// IP ECN field values (RFC 3168): not ECN-capable, ECT(0), congestion experienced.
pub const NOT_ECT: u8 = 0;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// What a traced packet's headers say besides its segment: the IP ECN field, TCP's ECE and CWR
/// flags, and an ACK's SACK blocks (in segments; `(0, 0)` unused).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    pub ecn: u8,
    pub ece: bool,
    pub cwr: bool,
    pub sack: SackBlocks,
}

impl Marks {
    /// The marks a packet carries now (no CWR: clos does not set it, `Trace::cwr`).
    pub fn of(pkt: &Packet) -> Marks {
        let ecn = if pkt.has(FLAG_CE) {
            CE
        } else if pkt.has(FLAG_ECT) {
            ECT0
        } else {
            NOT_ECT
        };
        let sack = if pkt.has(FLAG_ACK) { pkt.sack } else { SackBlocks::default() };
        Marks { ecn, ece: pkt.has(FLAG_ECE), cwr: false, sack }
    }
}

/// The trace table's columns. `sack` holds 6 values a row (3 blocks of start, end).
#[derive(Clone, Debug, Default)]
pub struct TraceTable {
    pub time_ps: Vec<u64>,
    pub flow: Vec<u32>,
    pub event: Vec<String>,
    pub seg: Vec<u32>,
    pub sacked: Vec<u32>,
    pub link: Vec<u32>,
    pub ecn: Vec<u8>,
    pub ece: Vec<bool>,
    pub cwr: Vec<bool>,
    pub sack: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Row {
    time: u64,
    flow: u32,
    event: Event,
    seg: u32,
    link: u32,
    marks: Marks,
}

/// Per traced flow, what CWR needs: the sender's `cwr_end` at its last first transmission, and
/// whether a timeout came since.
#[derive(Clone, Copy, Debug, Default)]
struct CwrState {
    seen_end: u32,
    timed_out: bool,
}

#[derive(Clone, Debug)]
pub struct Trace {
    /// The traced flows' ids, sorted.
    flows: Vec<u32>,
    /// CWR's state of `flows[i]`.
    cwr: Vec<CwrState>,
    rows: Vec<Row>,
}

impl Trace {
    /// A trace of `flows`, or `None` when the list is empty (the simulator then pays nothing).
    pub fn new(flows: &[u32]) -> Option<Box<Trace>> {
        if flows.is_empty() {
            return None;
        }
        let mut flows = flows.to_vec();
        flows.sort_unstable();
        flows.dedup();
        let cwr = vec![CwrState::default(); flows.len()];
        Some(Box::new(Trace { flows, cwr, rows: Vec::new() }))
    }

    #[inline]
    pub fn wants(&self, flow: u32) -> bool {
        self.flows.binary_search(&flow).is_ok()
    }

    /// Record `event` of `flow` at `time_ps` if the flow is traced.
    pub fn record(&mut self, time_ps: u64, flow: u32, event: Event, seg: u32, link: u32, marks: Marks) {
        if let Ok(i) = self.flows.binary_search(&flow) {
            if event == Event::Timeout {
                self.cwr[i].timed_out = true;
            }
            self.rows.push(Row { time: time_ps, flow, event, seg, link, marks });
        }
    }

    /// Whether an ECN-capable flow's first transmission now carries CWR, given its sender's
    /// `cwr_end`: as Linux (`tcp_ecn_queue_cwr`, `tcp_ecn_send`), the first new data segment
    /// after the window was cut (ECE, fast recovery, a repaired loss probe, local congestion,
    /// each of which moves `cwr_end`) or a timeout.
    pub fn cwr(&mut self, flow: u32, cwr_end: u32) -> bool {
        let Ok(i) = self.flows.binary_search(&flow) else { return false };
        let s = &mut self.cwr[i];
        let set = s.seen_end != cwr_end || s.timed_out;
        *s = CwrState { seen_end: cwr_end, timed_out: false };
        set
    }

    /// Take in another partition's rows of a parallel run (`sim/merge.rs`), then keep all in
    /// time order; rows at one time stay in partition order.
    pub fn absorb(&mut self, other: &Trace) {
        self.rows.extend_from_slice(&other.rows);
        self.rows.sort_by_key(|r| r.time);
    }

    pub fn table(&self) -> TraceTable {
        let mut t = TraceTable::default();
        for r in &self.rows {
            t.time_ps.push(r.time);
            t.flow.push(r.flow);
            t.event.push(r.event.name().to_string());
            t.seg.push(r.seg);
            t.sacked.push(r.marks.sack.iter().map(|b| b.1).max().unwrap_or(0));
            t.link.push(r.link);
            t.ecn.push(r.marks.ecn);
            t.ece.push(r.marks.ece);
            t.cwr.push(r.marks.cwr);
            t.sack.extend(r.marks.sack.iter().flat_map(|&(a, b)| [a, b]));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_flows_are_recorded_in_order() {
        assert!(Trace::new(&[]).is_none(), "no list, no trace");
        let mut t = Trace::new(&[7, 3, 7]).unwrap();
        let none = Marks::default();
        t.record(10, 3, Event::Send, 0, NO_LINK, none);
        t.record(11, 4, Event::Send, 0, NO_LINK, none);
        t.record(12, 7, Event::Drop, 5, 42, none);
        let sack = [(4, 6), (8, 9), (0, 0)];
        t.record(13, 3, Event::AckSend, 2, NO_LINK, Marks { ece: true, sack, ..none });
        let table = t.table();
        assert_eq!(table.flow, vec![3, 7, 3]);
        assert_eq!(table.event, vec!["send", "drop", "ack_send"]);
        assert_eq!((table.seg[1], table.link[1]), (5, 42));
        assert_eq!((table.sacked[2], table.ece[2]), (9, true));
        assert_eq!(table.sack.len(), 6 * 3);
        assert_eq!(&table.sack[12..], &[4, 6, 8, 9, 0, 0]);
    }

    #[test]
    fn marks_read_the_packet() {
        let data = Packet { flags: FLAG_ECT | FLAG_CE, sack: [(1, 2), (0, 0), (0, 0)], ..Packet::default() };
        assert_eq!(Marks::of(&data), Marks { ecn: CE, ..Marks::default() }, "data has no SACK");
        let ack = Packet { flags: FLAG_ACK | FLAG_ECE, sack: [(1, 2), (0, 0), (0, 0)], ..Packet::default() };
        assert_eq!(Marks::of(&ack), Marks { ecn: NOT_ECT, ece: true, cwr: false, sack: ack.sack });
    }

    #[test]
    fn cwr_once_after_each_cut_or_timeout() {
        let mut t = Trace::new(&[1]).unwrap();
        assert!(!t.cwr(1, 0), "no cut yet");
        assert!(t.cwr(1, 5), "the window was cut when nxt was 5");
        assert!(!t.cwr(1, 5), "once");
        t.record(0, 1, Event::Timeout, 4, NO_LINK, Marks::default());
        assert!(t.cwr(1, 5) && !t.cwr(1, 5), "a timeout cuts the window too");
        assert!(!t.cwr(2, 9), "untraced");
    }
}
