//! Output-queued switch ports and host NICs.
//!
//! Each port is a FIFO drop-tail buffer (bytes) feeding a link of fixed rate and propagation
//! delay. Because the queue is FIFO at a constant rate, a packet's departure time is known the
//! moment it is enqueued: it starts when the link is free (`busy_until`) and takes its wire bytes
//! times 8 / rate. So a hop costs one event (the arrival at the far end) and the queue length at
//! any instant is the unserialised backlog, `(busy_until - now) * rate`. This is exact for FIFO
//! output queues; schemes that need to reorder or pause a queue must not use this shortcut.
//!
//! The backlog read by a decision excludes the packet being enqueued (as in DRILL's hardware,
//! DRILL §3.2.1), and the ECN mark (DCTCP) is set when that backlog exceeds the threshold K.
//!
//! Every accepted packet's queueing delay (its wait before serialisation starts) is added to its
//! port's total and to a histogram of its link tier, for DRILL's per-hop queueing (Fig. 6c, 14c).
//!
//! The files:
//! - `ports.rs`: the ports' FIFO queues with their static drop-tail buffers and ECN marking;
//! - `shared_buffer.rs`: a switch's pooled buffer with dynamic thresholds (`switch.pool`);
//! - `scheduler.rs`: class queues with strict priority and DWRR (`switch.classes`);
//! - `visibility.rs`: the bytes still entering a queue, hidden from DRILL's reads.

pub mod ports;
pub mod scheduler;
pub mod shared_buffer;
pub mod visibility;

pub use ports::{Accepted, Enqueued, Offered, Ports, MAX_BUFFER};
pub use visibility::Visibility;
