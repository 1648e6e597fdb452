//! How recently a directory server knew it was in step with the store.
//!
//! VL2 tolerates stale mappings (eventual consistency, §4.3.1) but a server partitioned from the
//! RSM must not serve old mappings forever. The sync task marks the server fresh each time a
//! probe reaches a quorum while the change stream is open; lookups are refused once the last
//! mark is older than `max_staleness`. So an answer is never staler than `max_staleness` plus the
//! change stream's delivery delay (sub-millisecond on one host).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Freshness {
    origin: Instant,
    /// Microseconds after `origin` of the last confirmed contact; 0 = never.
    last_contact_us: AtomicU64,
    max_staleness: Duration,
}

impl Freshness {
    pub fn new(max_staleness: Duration) -> Freshness {
        Freshness { origin: Instant::now(), last_contact_us: AtomicU64::new(0), max_staleness }
    }

    pub fn mark(&self) {
        let us = self.origin.elapsed().as_micros().max(1) as u64;
        self.last_contact_us.fetch_max(us, Ordering::Relaxed);
    }

    /// `None` when fresh enough to answer; otherwise why not.
    pub fn refusal(&self) -> Option<String> {
        let last = self.last_contact_us.load(Ordering::Relaxed);
        if last == 0 {
            return Some("not yet synchronised with the store".into());
        }
        let age = self.origin.elapsed().saturating_sub(Duration::from_micros(last));
        (age > self.max_staleness)
            .then(|| format!("no contact with the store for {:.1} s (max_staleness {:.1} s)", age.as_secs_f64(), self.max_staleness.as_secs_f64()))
    }
}
