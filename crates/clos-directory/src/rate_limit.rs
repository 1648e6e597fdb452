//! A per-session request rate limit: a token bucket (issue 39).
//!
//! Each session may send `sessions.rate` requests per second on average and `sessions.burst` at
//! once. A session that has spent its tokens is not refused: the server stops reading from it
//! until a token is due, so the excess waits in the client's socket (TCP flow control) and its
//! requests are answered late but in order. That is backpressure: the flooding client slows
//! itself down, other sessions never see the flood, and an agent that bursts a little over the
//! rate loses no lookup (VL2 §4.3.1: lookups are bursty). With `max_per_principal` sessions per
//! principal, one principal costs the server at most `max_per_principal × rate` requests/s.
//!
//! Time is passed in, never read here, so the bucket is tested without sleeping.

use std::time::Duration;

use tokio::time::Instant;

/// Requests a session may still send now, refilled continuously at `rate` per second up to
/// `burst`: the generic cell rate algorithm (ITU-T I.371), which keeps one instant instead of
/// a count and a timestamp. O(1) per request, no allocation.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// The refill time of one token.
    per_token: Duration,
    /// `burst` tokens' refill time: how far ahead of now `due` may run.
    capacity: Duration,
    /// When the session will have paid for every request granted so far.
    due: Instant,
}

impl TokenBucket {
    /// A full bucket. `rate` is requests per second and `burst` the bucket's size; both are at
    /// least 1.
    pub fn new(rate: u32, burst: u32, now: Instant) -> TokenBucket {
        let per_token = Duration::from_nanos((1_000_000_000 / u64::from(rate.max(1))).max(1));
        TokenBucket { per_token, capacity: per_token * burst.max(1), due: now }
    }

    /// Takes one token if there is one; otherwise returns how long until there is.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let due = self.due.max(now) + self.per_token;
        let ahead = due - now;
        if ahead > self.capacity {
            return Err(ahead - self.capacity);
        }
        self.due = due;
        Ok(())
    }

    /// Gives back the token just taken (the session had no request to spend it on).
    pub fn refund(&mut self) {
        self.due -= self.per_token;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(1000, 10, start);
        for _ in 0..10 {
            assert_eq!(bucket.take(start), Ok(()));
        }
        let wait = bucket.take(start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(1), "the 11th request waits one token's refill");
        // Over one second from empty: 1000 more, not 1010.
        let mut granted = 0;
        for us in (0..1_000_000).step_by(100) {
            if bucket.take(start + Duration::from_micros(us)).is_ok() {
                granted += 1;
            }
        }
        assert!((999..=1001).contains(&granted), "{granted}");
        // An idle bucket refills to its burst, not beyond.
        let later = start + Duration::from_secs(60);
        let burst = (0..100).filter(|_| bucket.take(later).is_ok()).count();
        assert_eq!(burst, 10);
    }
}
