//! Linux's hybrid slow start (HyStart; Ha and Rhee, "Taming the elephants", 2011), which Linux's
//! CUBIC runs by default (`tcp_cubic.c`, `hystart = 1`, both detectors) and RFC 9438 leaves out
//! (`transport.hystart`, in the `linux` preset; it acts only with `transport.kind = "cubic"`).
//!
//! Slow start ends, with ssthresh set to the window, at the first of two signs that the path is
//! full, each checked only once the window is at least 16 segments (`hystart_low_window`):
//! - an ACK train: within a round (from the ACK that passes the end of the last round's data),
//!   ACKs keep arriving less than 2 ms apart (`hystart_ack_delta_us`) for longer than half of the
//!   least round trip plus a cushion for segmentation offload (`hystart_ack_delay`: 4 x 64 KiB at
//!   the pacing rate, at most 1 ms; halved too, as Linux does without a pacing qdisc);
//! - a delay increase: the least round trip of the round's first 8 samples exceeds the least
//!   round trip seen by an eighth of it, clamped to 4-16 ms (`HYSTART_DELAY_THRESH`).
//!
//! At datacenter round trips the ACK train ends slow start almost as soon as the window reaches 16
//! segments; a timeout restarts the search (`bictcp_state` on `TCP_CA_Loss`). Linux also ignores
//! round-trip samples for a second after a congestion event (`bictcp_acked`); here every sample
//! counts, which matters only for the least round trip seen outside slow start.

use crate::units::{Time, PS_PER_MS, PS_PER_S};

/// `hystart_low_window`: no detection below this window, in segments.
pub const LOW_WINDOW: u64 = 16;
/// `HYSTART_MIN_SAMPLES`: round-trip samples a round takes before the delay test.
const MIN_SAMPLES: u32 = 8;
/// `hystart_ack_delta_us`: ACKs closer than this belong to one train.
const ACK_DELTA: Time = 2 * PS_PER_MS;
/// `HYSTART_DELAY_MIN` and `HYSTART_DELAY_MAX`: the delay test's bounds.
const DELAY_MIN: Time = 4 * PS_PER_MS;
const DELAY_MAX: Time = 16 * PS_PER_MS;
/// `GSO_MAX_SIZE`, bytes: the cushion is four of these at the pacing rate.
const GSO_MAX_SIZE: f64 = 65_536.0;

#[derive(Clone, Debug, Default)]
pub struct HyStart {
    /// Slow start's end was found (until a timeout).
    found: bool,
    round_start: Time,
    last_ack: Time,
    /// The round ends once everything below this is acknowledged.
    end_seq: u32,
    /// The least round trip of this round's samples (`Time::MAX`: none yet).
    curr_rtt: Time,
    samples: u32,
    /// The least round trip seen (0: none yet).
    delay_min: Time,
}

impl HyStart {
    /// A new round starts at `now` and ends with `nxt` (`bictcp_hystart_reset`).
    fn new_round(&mut self, now: Time, nxt: u32) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = nxt;
        self.curr_rtt = Time::MAX;
        self.samples = 0;
    }

    /// An ACK at `now` with a round-trip sample `rtt` acknowledged everything below `una`, in
    /// slow start with `cwnd` segments and `nxt` the next new one, and a pacing rate in bytes
    /// per second; whether slow start ends here (`bictcp_acked`, `hystart_update`).
    pub fn on_ack(&mut self, now: Time, rtt: Time, una: u32, nxt: u32, cwnd: u64, pacing_rate: Option<f64>) -> bool {
        let rtt = rtt.max(1);
        if self.delay_min == 0 || rtt < self.delay_min {
            self.delay_min = rtt;
        }
        if self.found {
            return false;
        }
        if una > self.end_seq {
            self.new_round(now, nxt);
        }
        if cwnd < LOW_WINDOW {
            return false;
        }
        if now.saturating_sub(self.last_ack) <= ACK_DELTA {
            self.last_ack = now;
            let cushion = pacing_rate.map_or(0, |r| ((GSO_MAX_SIZE * 4.0 / r * PS_PER_S as f64) as Time).min(PS_PER_MS));
            if now - self.round_start > (self.delay_min + cushion) / 2 {
                self.found = true;
            }
        }
        self.curr_rtt = self.curr_rtt.min(rtt);
        if self.samples < MIN_SAMPLES {
            self.samples += 1;
        } else if self.curr_rtt > self.delay_min + (self.delay_min / 8).clamp(DELAY_MIN, DELAY_MAX) {
            self.found = true;
        }
        self.found
    }

    /// A timeout at `now` (Linux's `TCP_CA_Loss`): slow start is searched again from a new round.
    pub fn on_timeout(&mut self, now: Time, nxt: u32) {
        self.found = false;
        self.new_round(now, nxt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand, the delay test: ACKs 3 ms apart (no train), a window of 20 segments. The first
    /// round's samples are 1 ms (the least round trip); the second round, from the ACK past its
    /// end, samples `rtt` each. After its 8th sample the 9th compares the round's least with
    /// 1 ms + clamp(1 ms / 8, 4 ms, 16 ms) = 5 ms: 5.1 ms ends slow start, 4.9 ms does not; and
    /// a timeout starts the search again.
    #[test]
    fn a_round_trip_grown_by_the_threshold_ends_slow_start() {
        for (rtt, ends) in [(5_100, true), (4_900, false)] {
            let ms = |x: u64| x * PS_PER_MS / 1000; // thousandths of a millisecond
            let mut h = HyStart::default();
            let mut now = 0;
            for _ in 0..3 {
                now += ms(3_000);
                assert!(!h.on_ack(now, ms(1_000), 1, 100, 20, None));
            }
            let mut found = false;
            for k in 0..9 {
                now += ms(3_000);
                found = h.on_ack(now, ms(rtt), 101 + k, 200, 20, None);
                assert!(!found || k == 8, "only the 9th sample is compared");
            }
            assert_eq!(found, ends, "{rtt}");
            h.on_timeout(now, 200);
            assert!(!h.found);
        }
    }
}
