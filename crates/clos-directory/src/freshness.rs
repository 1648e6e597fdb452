//! How recently a directory server knew it was in step with the store, and what it may answer.
//!
//! The sync task marks the server fresh each time a probe reaches a quorum while the change
//! stream is open. Within `max_staleness` of the last mark an answer misses no update committed
//! more than `max_staleness` before it (plus the change stream's delivery delay, sub-millisecond
//! on one host): such answers are plain `Found`, `NotFound`, `Denied`.
//!
//! Past that bound the server has lost contact with the store. VL2 keeps lookups available
//! then: "directory servers ... ensure low latency, high throughput, and high availability for a
//! high lookup rate" while the RSM ensures "strong consistency and durability ... for a modest
//! rate of updates" (§4.3.2), every directory server "caches all the AA-to-LA mappings" and
//! "independently replies to lookups ... using the cached state", and mappings need only be
//! eventually consistent, as ARP's are (§4.3.1); a stale mapping is corrected reactively when
//! it is used (§4.3.2). So by default (`stale_lookups = "serve"`) the server keeps answering
//! from memory, marking each answer `Stale` with the time since its last contact, so no answer
//! older than the bound is passed off as fresh. Sessions of protocol 1 cannot be told, and get
//! `Unavailable` as before. `stale_lookups = "refuse"` answers `Unavailable` to everyone past
//! the bound; `max_stale_age` stops stale answers after a longer bound.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::wire::protocol::FIRST_PROTOCOL;

/// What a server that has lost contact with the store does with lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StaleLookups {
    /// Answer from memory, marking answers `Stale` with their age (VL2's design).
    Serve,
    /// Answer `Unavailable`, so agents use other servers or wait.
    Refuse,
}

/// How a lookup may be answered now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Serving {
    /// From the table, as current within `max_staleness`.
    Fresh,
    /// From the table, marked stale: no contact with the store for `age`.
    Stale { age: Duration },
    /// Not at all; the reason goes back in `Unavailable`.
    Refuse(String),
}

/// The server's contact with the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contact {
    /// Never synchronised: nothing to answer from.
    Never,
    /// In contact within `max_staleness`.
    Fresh,
    /// Lost: the last confirmed contact was `age` ago, more than `max_staleness`.
    Lost { age: Duration },
}

pub struct Freshness {
    origin: Instant,
    /// Microseconds after `origin` of the last confirmed contact; 0 = never.
    last_contact_us: AtomicU64,
    max_staleness: Duration,
    stale_lookups: StaleLookups,
    max_stale_age: Option<Duration>,
}

impl Freshness {
    pub fn new(max_staleness: Duration, stale_lookups: StaleLookups, max_stale_age: Option<Duration>) -> Freshness {
        Freshness { origin: Instant::now(), last_contact_us: AtomicU64::new(0), max_staleness, stale_lookups, max_stale_age }
    }

    /// Now, as a time `mark_at` takes.
    pub fn now(&self) -> u64 {
        self.origin.elapsed().as_micros().max(1) as u64
    }

    /// The table holds everything the store had committed at `at` (a time from `now`): answers
    /// are current as of then. Taken at the moment a read of the store was sent, once the table
    /// has caught up with what that read reported, never at the moment its reply came.
    pub fn mark_at(&self, at: u64) {
        self.last_contact_us.fetch_max(at, Ordering::Relaxed);
    }

    pub fn contact(&self) -> Contact {
        let last = self.last_contact_us.load(Ordering::Relaxed);
        if last == 0 {
            return Contact::Never;
        }
        let age = self.origin.elapsed().saturating_sub(Duration::from_micros(last));
        if age > self.max_staleness {
            Contact::Lost { age }
        } else {
            Contact::Fresh
        }
    }

    /// How a lookup from a session of `protocol` may be answered now.
    pub fn serving(&self, protocol: u8) -> Serving {
        let age = match self.contact() {
            Contact::Fresh => return Serving::Fresh,
            Contact::Never => return Serving::Refuse("not yet synchronised with the store".into()),
            Contact::Lost { age } => age,
        };
        let lost = format!("no contact with the store for {:.1} s (max_staleness {:.1} s)", age.as_secs_f64(), self.max_staleness.as_secs_f64());
        match (self.stale_lookups, self.max_stale_age) {
            (StaleLookups::Refuse, _) => Serving::Refuse(format!("{lost}; stale_lookups = \"refuse\"")),
            (StaleLookups::Serve, Some(limit)) if age > limit => Serving::Refuse(format!("{lost}, beyond max_stale_age ({:.1} s)", limit.as_secs_f64())),
            (StaleLookups::Serve, _) if protocol <= FIRST_PROTOCOL => {
                Serving::Refuse(format!("{lost}; this session's protocol (1) cannot mark answers stale: upgrade the client to serve them"))
            }
            (StaleLookups::Serve, _) => Serving::Stale { age },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_answers_are_marked_stale_or_refused_never_fresh() {
        let f = Freshness::new(Duration::from_millis(20), StaleLookups::Serve, Some(Duration::from_millis(300)));
        assert!(matches!(f.serving(2), Serving::Refuse(r) if r.contains("not yet synchronised")));
        f.mark_at(f.now());
        assert_eq!(f.serving(2), Serving::Fresh);
        std::thread::sleep(Duration::from_millis(60));
        assert!(matches!(f.serving(2), Serving::Stale { age } if age >= Duration::from_millis(60)));
        assert!(matches!(f.serving(1), Serving::Refuse(r) if r.contains("protocol (1)")), "a protocol-1 session cannot be told");
        let refusing = Freshness::new(Duration::from_millis(20), StaleLookups::Refuse, None);
        refusing.mark_at(refusing.now());
        std::thread::sleep(Duration::from_millis(60));
        assert!(matches!(refusing.serving(2), Serving::Refuse(r) if r.contains("stale_lookups = \"refuse\"")));
        std::thread::sleep(Duration::from_millis(300));
        assert!(matches!(f.serving(2), Serving::Refuse(r) if r.contains("max_stale_age")));
        f.mark_at(f.now());
        assert_eq!(f.serving(2), Serving::Fresh, "fresh again after contact");
    }
}
