//! Transports: our own TCP models (not a foreign stack), written as state machines that the
//! simulator drives. Sequence numbers count segments of `mss` bytes (the last may be shorter).

pub mod receiver;
pub mod reorder_shim;
pub mod sack;
pub mod tcp;

use crate::units::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// TCP NewReno with SACK-based loss recovery (RFC 5681, RFC 6675).
    #[default]
    Tcp,
    /// DCTCP (RFC 8257) on top of the same loss recovery.
    Dctcp,
}

/// Transport parameters, shared by all flows of a run.
#[derive(Clone, Debug)]
pub struct TcpParams {
    pub mss: u32,
    pub initial_window: u32,
    pub dupack_threshold: u32,
    /// ACK every `delayed_ack` in-order segments (1 = every segment).
    pub delayed_ack: u32,
    pub delayed_ack_timeout: Time,
    pub rto_min: Time,
    pub rto_max: Time,
    /// DCTCP's EWMA gain g; `None` for plain TCP.
    pub dctcp_g: Option<f64>,
    /// The PLTS host agent: raise a flow's duplicate-ACK threshold, up to this cap, when
    /// reordering made a fast retransmission spurious (see `tcp`).
    pub adaptive_dupthresh: Option<u32>,
    /// PLTS Fig. 5(c): when set, each flow's MSS is drawn uniformly from `[mss_min, mss]`
    /// (see [`TcpParams::flow_mss`]); otherwise every flow uses `mss`.
    pub mss_min: Option<u32>,
    /// Salt of the per-flow MSS draw (from the scenario's seed).
    pub mss_salt: u64,
}

impl TcpParams {
    /// The MSS of flow `flow`: `mss`, or with `mss_min` a uniform draw from `[mss_min, mss]`
    /// that depends only on the seed and the flow's index, so a flow keeps its MSS whatever
    /// else the run does (closed-loop flows created mid-run included).
    pub fn flow_mss(&self, flow: usize) -> u32 {
        match self.mss_min {
            None => self.mss,
            Some(lo) => {
                let span = (self.mss - lo + 1) as u64;
                lo + (crate::rng::mix64(self.mss_salt ^ flow as u64) % span) as u32
            }
        }
    }
}
