//! A host's send path: what stands between TCP and the NIC in a Linux host (`[host]`).
//!
//! The NIC itself is the host's port (`fabric::Ports`), a FIFO whose departures are known at
//! enqueue. In front of it, `[host] qdisc` chooses one of two disciplines:
//!
//! - **`fq`** (the default): Linux's `fq` qdisc in front of a NIC queue kept short by byte
//!   queue limits. The NIC queue takes data only while it holds less than `nic_buffer` bytes
//!   (default two full frames, the least that never lets the link idle while data waits); the
//!   rest waits in its flow's own queue, and flows with data waiting are served round robin,
//!   one packet each per turn (fq's per-flow queues with a quantum of one packet). A flow's data
//!   waits inside TCP rather than in a copy in the qdisc: a flow's packets go out in the order
//!   TCP makes them either way, and the time TCP stamps on a packet (its RTT samples) is when
//!   it enters the NIC queue, not the qdisc. ACKs and other control packets never wait: like the
//!   sparse flows fq serves first, they go straight to the NIC queue, behind at most
//!   `nic_buffer` bytes of data. Each turn of the round robin is one event (`HostDrain`), due
//!   when the NIC queue has room for a frame again.
//! - **`fifo`**: one FIFO of unbounded size for data and ACKs alike (htsim's and ns-3's simplest
//!   host, and clos's before this model), with TCP small queues (`tsq`): a flow stops when its
//!   own packets in the NIC queue reach the limit, and resumes when the oldest of them leaves
//!   (`TsqWake`), as Linux's TSQ wakes a socket on transmit completion. The default limit is
//!   Linux's (`tcp_small_queue_check`): 1/1024 s of the flow's pacing rate (`sk_pacing_rate >>
//!   10`, the window per smoothed round trip times 2 in slow start or 1.2 after), at least two
//!   packets and at most `tcp_limit_output_bytes` (1 MB). In slow start that rate is far above
//!   the line rate, so a flow limited by its own NIC keeps tens of packets there, as the
//!   kernel's do (docs/validation.md, "Short flows beside a long one"). `tsq = "off"` gives the
//!   unbounded FIFO, which lets a flow limited only by its NIC queue milliseconds of data there,
//!   with the host's ACKs behind it.

//!
//! The files: `spec.rs` (`[host]` as written), `fq.rs` (the round robin of `fq`) and `tsq.rs`
//! (the FIFO's TCP small queues and its bound). Each decides whether a flow's next packet may enter the NIC queue and, if not,
//! when to ask again; the simulator (`sim/egress.rs`) schedules that and sends.

pub mod fq;
pub mod spec;
pub mod tsq;

use crate::packet::wire;
use spec::{HostSpec, Qdisc, Tsq as TsqSpec};

/// Every host's egress discipline, with the state it keeps per host and per flow.
pub enum Egress {
    Fq(fq::Fq),
    Tsq(tsq::Tsq),
}

impl Egress {
    /// `None` where the host is an unbounded FIFO (`fifo` with `tsq = "off"` and no `queue`),
    /// which then costs a sending host nothing but one test.
    pub fn new(spec: &HostSpec, mss: u32, hosts: usize, flows: usize) -> Option<Egress> {
        match (spec.qdisc, spec.tsq) {
            (Qdisc::Fifo, TsqSpec::Off) if spec.queue.is_none() => None,
            (Qdisc::Fq, _) => Some(Egress::Fq(fq::Fq::new(spec.nic_buffer.map_or(2 * wire::frame(mss as u64, 0), |b| b.0), hosts, flows))),
            (Qdisc::Fifo, tsq) => {
                let limit = match tsq {
                    TsqSpec::Auto => None,
                    TsqSpec::Off => Some(u64::MAX),
                    TsqSpec::Bytes(b) => Some(b.0),
                };
                Some(Egress::Tsq(tsq::Tsq::new(limit, spec.queue.map_or(u64::MAX, |b| b.0), flows)))
            }
        }
    }

    /// A flow joined the run (closed-loop workloads).
    pub fn add_flow(&mut self) {
        match self {
            Egress::Fq(fq) => fq.add_flow(),
            Egress::Tsq(t) => t.add_flow(),
        }
    }
}
