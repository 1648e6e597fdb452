//! Transports: our own TCP models (not a foreign stack), written as state machines that the
//! simulator drives. Sequence numbers count segments of `mss` bytes (the last may be shorter).

pub mod cubic;
pub mod hystart;
pub mod presets;
pub mod receiver;
pub mod reorder_shim;
pub mod sack;
pub mod tcp;
pub mod udp;

use crate::error::{bad, Result};
use crate::units::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most segments one flow may have: a sender numbers them in 32 bits (`tcp::Sender`), which
/// at a 1,460-byte MSS is a flow of 6.3 TB.
pub const MAX_SEGMENTS: u64 = u32::MAX as u64;

/// The congestion control (`transport.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// TCP NewReno with SACK-based loss recovery (RFC 5681, RFC 6675).
    #[default]
    Tcp,
    /// DCTCP (RFC 8257) on top of the same loss recovery.
    Dctcp,
    /// CUBIC (RFC 9438, `cubic.rs`), Linux's default, on the same loss recovery.
    Cubic,
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
    /// The receiver's advertised window, bytes: a sender never has more new data outstanding.
    pub rwnd: u64,
    /// SACK (RFC 2018) on both ends; without it the sender recovers as NewReno does (RFC 6582):
    /// a partial ACK makes the next unacknowledged segment lost.
    pub sack: bool,
    /// Slow-start threshold a flow starts with, bytes (`u64::MAX`: none).
    pub initial_ssthresh: u64,
    /// DCTCP's alpha at the start of a flow (RFC 8257 §4.2: 1).
    pub dctcp_alpha: f64,
    /// How DCTCP's window answers a loss (fast recovery or a timeout's ssthresh).
    pub dctcp_loss: DctcpLoss,
    /// What a loss halves for ssthresh under Reno and DCTCP's halving.
    pub ssthresh_from: SsthreshFrom,
    /// How slow start grows the window on an ACK.
    pub slow_start: SlowStart,
    /// The window grows only while it limits the sender (Linux's `tcp_is_cwnd_limited`).
    pub grow_when_limited: bool,
    /// Proportional rate reduction in fast recovery (RFC 6937), as Linux; off: the window drops
    /// to ssthresh at once (RFC 6675).
    pub prr: bool,
    /// Which bound PRR grows the window by below ssthresh.
    pub prr_bound: PrrBound,
    /// CUBIC congestion avoidance and decrease (`transport.kind = "cubic"`) instead of Reno's.
    pub cubic: bool,
    /// Linux's hybrid slow start with CUBIC (`hystart.rs`).
    pub hystart: bool,
    /// How CUBIC grows the window in congestion avoidance (`cubic.rs`).
    pub cubic_growth: CubicGrowth,
    /// ACK each of a connection's first `quickack` segments at once, and after a duplicate the
    /// next `receiver::MAX_QUICKACKS` (Linux's quickack mode; 0: off).
    pub quickack: u32,
    /// ACK a segment shorter than the MSS at once (Linux's `ICSK_ACK_PUSHED`).
    pub push_ack: bool,
    /// RACK's loss detection (RFC 8985, see `tcp`): in recovery, of retransmissions lost
    /// again, and the reordering timer outside recovery.
    pub rack: bool,
    /// Tail loss probes (RFC 8985 §7, see `tcp`).
    pub tlp: bool,
    /// How the RTO follows the round trip.
    pub rto_estimator: RtoEstimator,
    /// A connection starts with the round-trip sample of its handshake (see `tcp`).
    pub handshake_rtt: bool,
    /// Resending the oldest unacknowledged segment restarts the RTO (Linux).
    pub resend_restarts_rto: bool,
    /// The kernel's clock tick for the sender's timers (0: exact), see [`TcpParams::timer_at`].
    pub timer_tick: Time,
}

/// How the retransmission timeout follows the round trip (`transport.rto_estimator`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RtoEstimator {
    /// RFC 6298: max(SRTT + 4 RTTVAR, `rto_min`).
    #[default]
    Rfc6298,
    /// Linux's `tcp_rtt_estimator` and `__tcp_set_rto`: SRTT + RTTVAR, where RTTVAR is the
    /// largest mean deviation (x4) of the last round trip and never below `rto_min`.
    Linux,
}

/// What a loss halves for the slow-start threshold (`transport.ssthresh_from`; `tcp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshFrom {
    /// RFC 5681 eq. (4): half the data outstanding (FlightSize).
    #[default]
    Flight,
    /// Linux's `tcp_reno_ssthresh` (and `dctcp_react_to_loss`): half the window. As Linux's
    /// `tcp_enter_loss`, a timeout keeps the ssthresh that a recovery or an earlier timeout
    /// set in the same window of data, and leaves the window at what is in flight plus one.
    Window,
}

/// How proportional rate reduction grows the flight back toward ssthresh once it is below it
/// (`transport.prr_bound`; `tcp::Sender::prr_ack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrrBound {
    /// RFC 6937's slow start reduction bound: one segment more than was delivered, per ACK.
    #[default]
    Ssrb,
    /// Linux's `tcp_cwnd_reduction` (since 5.19, as RFC 6937bis): as much as was delivered,
    /// one more only on an ACK that advanced SND.UNA and found nothing newly lost; RecoverFS is
    /// the window when recovery began.
    Linux,
}

/// How CUBIC grows the window in congestion avoidance (`transport.cubic_growth`; `cubic.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CubicGrowth {
    /// RFC 9438: toward W_cubic, or Reno's estimate where that is larger.
    #[default]
    Rfc,
    /// Linux's `tcp_cubic.c` (`bictcp_update`, `bictcp_state`): as the RFC, and at least 5% a
    /// round trip while no W_max is known, which is before the first loss and again after a
    /// timeout (entering the Loss state resets CUBIC's state).
    Linux,
    /// Linux 2.6.26's `tcp_cubic.c` (version 2.2): as the RFC, and a timeout resets CUBIC's
    /// state (`bictcp_state`), W_max included; no floor on the growth.
    #[serde(rename = "linux-2.6")]
    Linux26,
}

/// How slow start grows the window on an ACK (`transport.slow_start`; `tcp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlowStart {
    /// Appropriate byte counting with L = 2 (RFC 3465): by what the ACK acknowledged, at most
    /// two segments.
    #[default]
    Abc,
    /// One segment per ACK that acknowledges new data, however many segments it acknowledges:
    /// Linux 2.6's `tcp_slow_start` with `tcp_abc` at its default, 0. Behind delayed ACKs the window grows
    /// by half a segment per segment delivered.
    PerAck,
}

/// DCTCP's answer to a loss (`transport.dctcp_loss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DctcpLoss {
    /// As conventional TCP: ssthresh = half the flight (RFC 8257 §3.5; Linux's
    /// `dctcp_react_to_loss`).
    #[default]
    Halve,
    /// ssthresh = cwnd x (1 - alpha/2), as for a mark: ns-3's `TcpDctcp::GetSsThresh`, which its
    /// `TcpSocketBase` also calls on entering recovery and on a timeout.
    Alpha,
}

impl TcpParams {
    /// When a timer set at `now` for `d` fires. Linux counts its TCP timers (RTO, loss probe,
    /// RACK) in jiffies: `d` is rounded up to whole ticks (`usecs_to_jiffies`) and counted from
    /// the current tick (`jiffies + when`), and the timer wheel, which never runs a timer early,
    /// runs it on the tick after that expiry when it is under 63 ticks ahead, and further out
    /// on the next multiple of its level's granularity (8 ticks up to 504 ahead, 64 beyond;
    /// `calc_index` in kernel/time/timer.c). A timer of `d` under 63 ticks so fires on a tick
    /// between `d` and `d + 2 ticks` after `now` (docs/validation.md, "The kernel's timer
    /// tick"). With no tick, exactly at `now + d`.
    #[inline]
    pub fn timer_at(&self, now: Time, d: Time) -> Time {
        match self.timer_tick {
            0 => now + d,
            tick => {
                let when = d.div_ceil(tick);
                let expires = now / tick + when;
                let mut shift = 0;
                while shift < 21 && when >= 63 << shift {
                    shift += 3;
                }
                (((expires >> shift) + 1) << shift) * tick
            }
        }
    }

    /// An error, instead of a flow whose segment count would wrap, if a flow of `bytes` bytes
    /// sent with segments of `mss` bytes has more than [`MAX_SEGMENTS`]; `what` says which flow
    /// (called only then: runs check every flow they make).
    pub fn check_flow_size(bytes: f64, mss: u32, what: impl FnOnce() -> String) -> Result<()> {
        if (bytes / mss as f64).ceil() <= MAX_SEGMENTS as f64 {
            return Ok(());
        }
        let largest = MAX_SEGMENTS * mss as u64;
        Err(bad(
            "workload",
            format!(
                "{} of {bytes:e} bytes has more than 2^32 - 1 segments of {mss} bytes, which a sender numbers in 32 bits; \
                 the largest flow at this MSS is {largest} bytes: make the flows smaller or transport.mss larger",
                what()
            ),
        ))
    }

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

/// Plain parameters for hand-computed tests: 1,000-byte segments, IW4, an ACK per segment, SACK,
/// `rto_min` 1,000 ps and `rto_max` 1,000,000 ps, nothing else on.
#[cfg(test)]
impl TcpParams {
    pub(crate) fn for_tests() -> TcpParams {
        TcpParams {
            mss: 1000,
            initial_window: 4,
            dupack_threshold: 3,
            delayed_ack: 1,
            delayed_ack_timeout: 0,
            rto_min: 1_000,
            rto_max: 1_000_000,
            dctcp_g: None,
            adaptive_dupthresh: None,
            mss_min: None,
            mss_salt: 0,
            rwnd: u64::MAX,
            sack: true,
            initial_ssthresh: u64::MAX,
            dctcp_alpha: 1.0,
            dctcp_loss: DctcpLoss::Halve,
            ssthresh_from: SsthreshFrom::Flight,
            slow_start: SlowStart::Abc,
            grow_when_limited: false,
            prr: false,
            prr_bound: PrrBound::Ssrb,
            cubic: false,
            hystart: false,
            cubic_growth: CubicGrowth::Rfc,
            quickack: 0,
            push_ack: false,
            rack: false,
            tlp: false,
            rto_estimator: RtoEstimator::Rfc6298,
            handshake_rtt: false,
            resend_restarts_rto: false,
            timer_tick: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand, on a 4 ms tick (HZ=250): an RTO of 12.073 ms (what `rto_min 10ms` becomes,
    /// SRTT 73 us) set at 5 ms expires 4 ticks after tick 1, and runs on the tick after, tick
    /// 6, at 24 ms; one set on tick 5 exactly (after a probe) runs at 40 ms, 20 ms later, as
    /// the kernel's did after its probes (docs/validation.md); a loss probe of 2.03 ms set at
    /// 7.9 ms expires one tick after tick 1 and runs at 12 ms. An RTO of 204 ms (51 ticks)
    /// set on tick 5 runs on tick 57 (208 ms later, as measured); one of 408 ms (102 ticks, on
    /// the wheel's second level) on the next multiple of 8 ticks after tick 107, 112. With no
    /// tick, at now + d.
    #[test]
    fn timers_fire_on_the_kernels_tick() {
        let ms = crate::units::PS_PER_MS;
        let us = ms / 1000;
        let mut p = TcpParams { timer_tick: 4 * ms, ..TcpParams::for_tests() };
        assert_eq!(p.timer_at(5 * ms, 12_073 * us), 24 * ms);
        assert_eq!(p.timer_at(20 * ms, 12_073 * us), 40 * ms);
        assert_eq!(p.timer_at(7_900 * us, 2_030 * us), 12 * ms);
        assert_eq!(p.timer_at(20 * ms, 204 * ms), 228 * ms);
        assert_eq!(p.timer_at(20 * ms, 408 * ms), 448 * ms);
        p.timer_tick = 0;
        assert_eq!(p.timer_at(5 * ms, 10_015 * us), 15_015 * us);
    }

    #[test]
    fn a_flow_too_long_to_number_is_refused() {
        // 2^32 - 1 segments is the most a sender numbers: exactly that many fit, one byte more does not.
        let most = MAX_SEGMENTS as f64 * 1460.0;
        assert!(TcpParams::check_flow_size(most, 1460, || unreachable!()).is_ok());
        let e = TcpParams::check_flow_size(most + 1.0, 1460, || "flow 0".into()).unwrap_err().to_string();
        assert!(e.contains("workload") && e.contains("flow 0") && e.contains("transport.mss"), "{e}");
    }
}
