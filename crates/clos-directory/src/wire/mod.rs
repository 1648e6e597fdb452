//! The directory protocol: length-prefixed binary frames over TCP.
//!
//! VL2 §4.2.1 resolves AAs "through a unicast-based custom protocol" rather than ARP. Ours is a
//! 4-byte big-endian length followed by a body whose first byte names the message. Fixed-width
//! fields make a lookup 17 bytes on the wire and decode without allocation, which matters because
//! lookups are frequent and bursty (VL2 §4.3.1). We chose this over gRPC (tonic) so that agents
//! and directory servers need no code generator and a lookup costs no HTTP/2 framing; the store
//! side still speaks etcd's gRPC through the `etcd-client` crate.

pub mod error;
pub mod frame;
pub mod message;
pub mod protocol;

pub use error::WireError;
pub use frame::{FrameBuffer, DEFAULT_MAX_FRAME_BYTES};
pub use message::{Reply, Request, Role};
pub use protocol::PROTOCOL;
