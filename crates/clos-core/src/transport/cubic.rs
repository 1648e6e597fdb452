//! CUBIC congestion avoidance (RFC 9438), Linux's default (`transport.kind = "cubic"`).
//!
//! After a congestion event the window follows a cubic function of the time since the event,
//! W_cubic(t) = C (t - K)^3 + W_max, which is concave up to the window of the last event (W_max,
//! reached at t = K) and convex beyond it, with C = 0.4 and the multiplicative decrease
//! beta = 0.7. Each ACK moves the window toward W_cubic one round trip ahead, at most by half of
//! it per round trip (§4.2). Where W_cubic is below what Reno would have by now (W_est, growing
//! by alpha = 3 (1 - beta) / (1 + beta) segments per round trip, §4.3), the window follows Reno:
//! at datacenter round trips of microseconds the cubic term barely moves, so CUBIC there grows
//! like a Reno with a gentler decrease. Fast convergence (§4.7) lowers W_max when an event comes
//! before the last W_max was reached. Slow start is the sender's (HyStart is `hystart.rs`).
//!
//! Linux's `tcp_cubic.c` adds two rules (`transport.cubic_growth = "linux"`). While no W_max is
//! known, `bictcp_update` grows the window by at least 5% a round trip (one segment for every
//! 20 acknowledged) where the RFC's curve would start flat at the window; and entering the Loss
//! state after a timeout resets CUBIC's state (`bictcp_state`), so W_max is forgotten and that
//! floor holds again. With HyStart ending slow start at 16 segments, the floor is what grows a
//! Linux flow's window before its first loss. Linux 2.6.26's `tcp_cubic.c` (version 2.2, in the
//! Network Simulation Cradle that DRILL ran) has the reset but not the floor
//! (`transport.cubic_growth = "linux-2.6"`).
//!
//! Windows here are in segments (floating point, as the RFC writes them); times in seconds.

use super::CubicGrowth;
use crate::units::{Time, PS_PER_S};

/// RFC 9438 §5.1: C = 0.4, beta_cubic = 0.7.
pub const C: f64 = 0.4;
pub const BETA: f64 = 0.7;
/// §4.3: the Reno-friendly additive increase per round trip.
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);
/// Linux's `bictcp_update`: while no W_max is known, at most this many segments acknowledged
/// per segment of growth (5% a round trip).
const LINUX_FLOOR_CNT: f64 = 20.0;

#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// The window at the last congestion event, after fast convergence; 0 before any.
    w_max: f64,
    /// When the current congestion-avoidance epoch began, and its K and starting window.
    epoch: Option<(Time, f64, f64)>,
    /// Reno's window estimate in this epoch (W_est).
    w_est: f64,
    /// Linux's floor on the growth while no W_max is known (`CubicGrowth::Linux`).
    floor: bool,
    /// A timeout forgets W_max (`CubicGrowth::Linux` and `Linux26`).
    reset_on_timeout: bool,
}

impl Cubic {
    pub fn new(growth: CubicGrowth) -> Cubic {
        Cubic { floor: growth == CubicGrowth::Linux, reset_on_timeout: growth != CubicGrowth::Rfc, ..Cubic::default() }
    }

    /// A congestion event (a loss, an ECN echo, a timeout) at a window of `cwnd` segments;
    /// returns the new ssthresh in segments (§4.6: cwnd x beta).
    pub fn on_congestion(&mut self, cwnd: f64) -> f64 {
        // §4.7 fast convergence: an event below the last W_max releases bandwidth sooner.
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + BETA) / 2.0 } else { cwnd };
        self.epoch = None;
        cwnd * BETA
    }

    /// The connection restarts after idle: the next window increase begins a new epoch.
    pub fn restart(&mut self) {
        self.epoch = None;
    }

    /// The retransmission timer expired (after `on_congestion` took the window's ssthresh):
    /// Linux (2.6.26 too) resets CUBIC's state on entering the Loss state, W_max included; the
    /// RFC keeps it.
    pub fn on_timeout(&mut self) {
        if self.reset_on_timeout {
            self.w_max = 0.0;
            self.epoch = None;
        }
    }

    /// W_cubic at `t` seconds into an epoch with `k` and maximum `w_max` (§4.2, eq. 1).
    pub fn window(t: f64, k: f64, w_max: f64) -> f64 {
        C * (t - k).powi(3) + w_max
    }

    /// K (§4.2, eq. 2): the seconds W_cubic takes to grow from `cwnd_epoch` back to `w_max`.
    pub fn k(w_max: f64, cwnd_epoch: f64) -> f64 {
        ((w_max - cwnd_epoch).max(0.0) / C).cbrt()
    }

    /// `acked` segments acknowledged at `now` in congestion avoidance, with the window at `cwnd`
    /// segments and a smoothed round trip `rtt`; returns the new window in segments.
    pub fn on_ack(&mut self, now: Time, rtt: Time, cwnd: f64, acked: f64) -> f64 {
        let (start, k, w_max) = *self.epoch.get_or_insert_with(|| {
            // No event yet (slow start ended at ssthresh): the epoch starts at the window.
            let w_max = if self.w_max > 0.0 { self.w_max } else { cwnd };
            self.w_est = cwnd;
            (now, Self::k(w_max, cwnd), w_max)
        });
        let t = (now - start) as f64 / PS_PER_S as f64;
        self.w_est += ALPHA * acked / cwnd;
        let cubic = Self::window(t, k, w_max);
        let grown = if cubic < self.w_est {
            // §4.3: the Reno-friendly region.
            self.w_est.max(cwnd)
        } else {
            let target = Self::window(t + rtt as f64 / PS_PER_S as f64, k, w_max).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * acked
        };
        if self.floor && self.w_max == 0.0 {
            // `bictcp_update`: `if (ca->last_max_cwnd == 0 && ca->cnt > 20) ca->cnt = 20`.
            return grown.max(cwnd + acked / LINUX_FLOOR_CNT);
        }
        grown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: a loss at 100 segments leaves 70 (beta 0.7); K = cbrt(30 / 0.4) = cbrt(75) =
    /// 4.2172 s; W_cubic is 70 at t = 0, back at 100 at t = K, 130 at 2K.
    #[test]
    fn the_cubic_returns_to_w_max_at_k() {
        let mut c = Cubic::default();
        assert_eq!(c.on_congestion(100.0), 70.0);
        let k = Cubic::k(c.w_max, 70.0);
        assert!((k - 75f64.cbrt()).abs() < 1e-12 && (k - 4.2172).abs() < 1e-4, "{k}");
        for (t, w) in [(0.0, 70.0), (k, 100.0), (2.0 * k, 130.0)] {
            assert!((Cubic::window(t, k, 100.0) - w).abs() < 1e-9, "W({t}) = {}", Cubic::window(t, k, 100.0));
        }
        // Fast convergence: the next event at 80 < 100 sets W_max to 80 x 1.7 / 2 = 68.
        assert!((c.on_congestion(80.0) - 56.0).abs() < 1e-12);
        assert!((c.w_max - 68.0).abs() < 1e-12);
    }

    /// By hand, Linux's floor: with no W_max known (no loss yet) one window of 20 segments,
    /// ACKed one at a time within a 20 us round trip, grows the window by one segment (5%: one
    /// for every 20 acknowledged), where the RFC's grows it by Reno's 0.53 (the cubic term is
    /// flat from the window). After a loss W_max is known and the floor is gone; after a
    /// timeout Linux forgets W_max and the floor is back, while the RFC's keeps W_max.
    #[test]
    fn linux_grows_five_percent_a_round_trip_while_no_w_max_is_known() {
        let rtt = 20_000_000;
        let window_of_acks = |c: &mut Cubic, mut cwnd: f64, at: Time| {
            let start = cwnd;
            for i in 0..start as u64 {
                cwnd = c.on_ack(at + i * rtt / start as u64, rtt, cwnd, 1.0);
            }
            cwnd
        };
        let (mut linux, mut rfc) = (Cubic::new(CubicGrowth::Linux), Cubic::new(CubicGrowth::Rfc));
        let grown = window_of_acks(&mut linux, 20.0, 0);
        // Each ACK adds the larger of 1/20 and Reno's 0.53/cwnd: 1/20.
        assert!((grown - 21.0).abs() < 1e-9, "{grown}");
        let grown = window_of_acks(&mut rfc, 20.0, 0);
        assert!((grown - 20.0 - ALPHA).abs() < 0.02, "{grown}");
        // A loss at 21: W_max 21, ssthresh 14.7; from 14.7 the window follows Reno's estimate.
        for c in [&mut linux, &mut rfc] {
            c.on_congestion(21.0);
            let grown = window_of_acks(c, 15.0, 10 * rtt);
            assert!((grown - 15.0 - ALPHA).abs() < 0.02, "{grown}");
        }
        // A timeout: Linux forgets W_max and grows 5% again; the RFC's does not.
        for c in [&mut linux, &mut rfc] {
            c.on_congestion(16.0);
            c.on_timeout();
        }
        assert!((window_of_acks(&mut linux, 20.0, 100 * rtt) - 21.0).abs() < 1e-9);
        assert!((window_of_acks(&mut rfc, 20.0, 100 * rtt) - 20.0 - ALPHA).abs() < 0.02);
    }

    /// By hand, Linux 2.6.26's CUBIC: no floor (one window of 20 segments ACKed within a 20 us
    /// round trip grows it by Reno's 0.53, as the RFC's), but a timeout forgets W_max. After a
    /// loss at 100 segments and a timeout, an epoch starting at 20 segments with W_max kept
    /// (the RFC) has K = cbrt(80 / 0.4) = 5.85 s, so one second in W_cubic is 0.4 (1 - K)^3 +
    /// 100 = 54.4, beyond the cap of 1.5 windows: the ACK adds (30 - 20) / 20 = 0.5 segment.
    /// With W_max forgotten the epoch's curve starts at the window: 0.4 x 1^3 = 0.4 segment
    /// above it, so the ACK adds 0.4 / 20 = 0.02.
    #[test]
    fn linux_2_6_has_no_floor_and_forgets_w_max_at_a_timeout() {
        let rtt = 20_000_000;
        let mut old = Cubic::new(CubicGrowth::Linux26);
        let mut cwnd = 20.0;
        for i in 0..20 {
            cwnd = old.on_ack(i * rtt / 20, rtt, cwnd, 1.0);
        }
        assert!((cwnd - 20.0 - ALPHA).abs() < 0.02, "{cwnd}");
        let mut rfc = Cubic::new(CubicGrowth::Rfc);
        for c in [&mut old, &mut rfc] {
            c.on_congestion(100.0);
            c.on_timeout();
        }
        let second = |c: &mut Cubic| {
            // The epoch's first ACK: W_cubic is the window at t = 0, Reno's estimate adds 0.53/20.
            let w = c.on_ack(PS_PER_S, rtt, 20.0, 1.0);
            assert!((w - 20.0 - ALPHA / 20.0).abs() < 1e-9, "{w}");
            c.on_ack(2 * PS_PER_S, rtt, 20.0, 1.0)
        };
        let (kept, forgotten) = (second(&mut rfc), second(&mut old));
        assert!((kept - 20.5).abs() < 1e-9, "{kept}");
        assert!((forgotten - 20.02).abs() < 1e-3, "{forgotten}");
    }

    /// At a datacenter round trip (20 us) the cubic term is flat, so the window follows Reno's
    /// estimate: one window of ACKs (70 segments, one at a time) adds alpha = 0.9 / 1.7 = 0.529
    /// segments, within the per-ACK rounding (the divisor grows by at most 0.53 / 70).
    #[test]
    fn at_datacenter_round_trips_cubic_grows_like_reno_friendly() {
        let mut c = Cubic { w_max: 100.0, ..Cubic::default() };
        let (mut cwnd, rtt) = (70.0, 20_000_000);
        for i in 0..70u64 {
            cwnd = c.on_ack(i * rtt / 70, rtt, cwnd, 1.0);
        }
        assert!((cwnd - 70.0 - ALPHA).abs() < 0.01, "{cwnd}");
        assert!((ALPHA - 0.9 / 1.7).abs() < 1e-12);
    }

    /// Far from the last event (seconds later) W_cubic leads and the window grows toward it,
    /// at most by half per round trip: with W_max = 10 reached long ago, one ACK at a window
    /// of 10 moves it by (target - 10) / 10 with the target capped at 15.
    #[test]
    fn far_from_the_event_the_cubic_leads_capped_at_half_a_window() {
        let mut c = Cubic { w_max: 10.0, ..Cubic::default() };
        let rtt = 1_000_000_000; // 1 ms
        assert_eq!(c.on_ack(0, rtt, 10.0, 1.0), 10.0 + ALPHA / 10.0, "at the epoch's start, Reno's estimate leads");
        let later = 10 * PS_PER_S;
        // W_cubic(10 s + 1 ms) = 0.4 x 10.001^3 + 10 ~ 410: capped at 15, so +0.5 per ACK.
        let w = c.on_ack(later, rtt, 10.0, 1.0);
        assert!((w - 10.5).abs() < 1e-9, "{w}");
    }
}
