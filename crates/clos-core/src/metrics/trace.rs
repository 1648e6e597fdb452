//! Packet traces of chosen flows (`output.trace`): what a capture at both ends of a flow would
//! show, plus what no capture shows, where the fabric dropped its packets. One row per event, in
//! the order the simulator handled them:
//!
//! | event | when | `seg` | `link` |
//! |---|---|---|---|
//! | `send`, `resend` | the sender hands a data segment (a first transmission, a retransmission) to its host | the segment | - |
//! | `drop` | one of the flow's packets is lost | the data segment, or an ACK's cumulative ACK | the port, where a queue refused it |
//! | `arrive` | a data segment reaches the receiver | the segment | - |
//! | `ack` | an ACK reaches the sender | its cumulative ACK; `sacked` its highest SACKed segment + 1 (0: none) | - |
//! | `timeout` | the retransmission timer fires | the oldest unacknowledged segment | - |
//!
//! Off (no flow listed) the simulator pays one branch per event on a `None`.

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
    Timeout,
    Probe,
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
            Event::Timeout => "timeout",
            Event::Probe => "probe",
        }
    }
}

/// The trace table's columns.
#[derive(Clone, Debug, Default)]
pub struct TraceTable {
    pub time_ps: Vec<u64>,
    pub flow: Vec<u32>,
    pub event: Vec<String>,
    pub seg: Vec<u32>,
    pub sacked: Vec<u32>,
    pub link: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct Trace {
    /// The traced flows' ids, sorted.
    flows: Vec<u32>,
    rows: Vec<(u64, u32, Event, u32, u32, u32)>,
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
        Some(Box::new(Trace { flows, rows: Vec::new() }))
    }

    #[inline]
    pub fn wants(&self, flow: u32) -> bool {
        self.flows.binary_search(&flow).is_ok()
    }

    /// Record `event` of `flow` at `time_ps` if the flow is traced.
    pub fn record(&mut self, time_ps: u64, flow: u32, event: Event, seg: u32, sacked: u32, link: u32) {
        if self.wants(flow) {
            self.rows.push((time_ps, flow, event, seg, sacked, link));
        }
    }

    pub fn table(&self) -> TraceTable {
        let mut t = TraceTable::default();
        for &(time, flow, event, seg, sacked, link) in &self.rows {
            t.time_ps.push(time);
            t.flow.push(flow);
            t.event.push(event.name().to_string());
            t.seg.push(seg);
            t.sacked.push(sacked);
            t.link.push(link);
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
        t.record(10, 3, Event::Send, 0, 0, NO_LINK);
        t.record(11, 4, Event::Send, 0, 0, NO_LINK);
        t.record(12, 7, Event::Drop, 5, 0, 42);
        let table = t.table();
        assert_eq!(table.flow, vec![3, 7]);
        assert_eq!(table.event, vec!["send", "drop"]);
        assert_eq!((table.seg[1], table.link[1]), (5, 42));
    }
}
