//! What each receiver of a multicast group got (issue 36, item 1: "per-receiver delivery, loss
//! and latency are measured"): datagrams sent per sender and received per member, one-way
//! latency, and how many came by a failover detour, split into the run's three periods: before
//! any failure, while the trees detour around one (`detour`), and after the controller rebuilt
//! them (`rebuilt`).

use crate::units::{seconds, Time};
use serde_json::{json, Value};

/// The periods of a run with failures.
pub const PERIODS: [&str; 3] = ["before", "detour", "rebuilt"];

/// One member's deliveries.
#[derive(Clone, Debug, Default)]
pub struct Receiver {
    pub host: u32,
    /// Datagrams received in each period.
    pub received: [u64; 3],
    /// Of them, those that crossed a detour.
    pub detoured: u64,
    latency_sum: u64,
    latency_min: Option<Time>,
    latency_max: Time,
}

impl Receiver {
    pub fn total(&self) -> u64 {
        self.received.iter().sum()
    }
    pub fn latency_mean(&self) -> Option<Time> {
        (self.total() > 0).then(|| self.latency_sum / self.total())
    }
    pub fn latency_min(&self) -> Option<Time> {
        self.latency_min
    }
    pub fn latency_max(&self) -> Time {
        self.latency_max
    }
}

/// One group's senders and receivers.
#[derive(Clone, Debug, Default)]
pub struct GroupDelivery {
    /// (sender host, datagrams sent in each period).
    pub sent: Vec<(u32, [u64; 3])>,
    pub receivers: Vec<Receiver>,
}

impl GroupDelivery {
    /// Datagrams sent in `period` by senders other than `host` (what `host` should receive);
    /// all periods when `period` is `None`.
    pub fn expected(&self, host: u32, period: Option<usize>) -> u64 {
        let of = |s: &[u64; 3]| period.map_or(s.iter().sum(), |p| s[p]);
        self.sent.iter().filter(|(h, _)| *h != host).map(|(_, s)| of(s)).sum()
    }
}

/// Every group's deliveries and the period the run is in.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    pub groups: Vec<GroupDelivery>,
    pub period: usize,
    /// When each period began.
    pub began: [Option<Time>; 3],
    /// Every change of period, in order: (when, the period entered).
    changes: Vec<(Time, usize)>,
}

impl Delivery {
    /// Groups with these (senders, members).
    pub fn new(groups: &[(Vec<u32>, Vec<u32>)]) -> Delivery {
        Delivery {
            groups: groups
                .iter()
                .map(|(senders, members)| GroupDelivery {
                    sent: senders.iter().map(|&h| (h, [0; 3])).collect(),
                    receivers: members.iter().map(|&host| Receiver { host, ..Receiver::default() }).collect(),
                })
                .collect(),
            period: 0,
            began: [Some(0), None, None],
            changes: Vec::new(),
        }
    }

    /// Host `src` sent a datagram to group `g`.
    pub fn sent(&mut self, g: usize, src: u32) {
        let p = self.period;
        if let Some((_, s)) = self.groups[g].sent.iter_mut().find(|(h, _)| *h == src) {
            s[p] += 1;
        }
    }

    /// Host `host` received a datagram of group `g` at `now`, `latency` after it was sent; false
    /// if the host is not a member (never, on a correct tree).
    pub fn received(&mut self, g: usize, host: u32, now: Time, latency: Time, detoured: bool) -> bool {
        // The period the datagram was sent in, as `sent` counted it: one sent just before a
        // failure and received after it is expected before it, and received there too.
        let sent = now - latency;
        let p = self.changes.iter().take_while(|(at, _)| *at <= sent).last().map_or(0, |c| c.1);
        let Some(r) = self.groups[g].receivers.iter_mut().find(|r| r.host == host) else { return false };
        r.received[p] += 1;
        r.detoured += u64::from(detoured);
        r.latency_sum += latency;
        r.latency_min = Some(r.latency_min.map_or(latency, |m| m.min(latency)));
        r.latency_max = r.latency_max.max(latency);
        true
    }

    /// A link failed (the trees detour from now on) or the trees were rebuilt.
    pub fn enter(&mut self, period: usize, now: Time) {
        if period != self.period {
            self.period = period;
            self.began[period] = Some(now);
            self.changes.push((now, period));
        }
    }

    /// Group `g`'s part of `summary.json`.
    pub fn summary(&self, g: usize) -> Value {
        let d = &self.groups[g];
        let receivers: Vec<Value> = d
            .receivers
            .iter()
            .map(|r| {
                let expected = d.expected(r.host, None);
                let by_period: serde_json::Map<String, Value> = PERIODS
                    .iter()
                    .enumerate()
                    .map(|(p, name)| (name.to_string(), json!({"expected": d.expected(r.host, Some(p)), "received": r.received[p]})))
                    .collect();
                json!({
                    "host": r.host,
                    "expected": expected,
                    "received": r.total(),
                    "lost": expected.saturating_sub(r.total()),
                    "delivery_ratio": if expected > 0 { r.total() as f64 / expected as f64 } else { 0.0 },
                    "detoured": r.detoured,
                    "latency_mean_s": r.latency_mean().map(seconds),
                    "latency_min_s": r.latency_min().map(seconds),
                    "latency_max_s": (r.total() > 0).then(|| seconds(r.latency_max())),
                    "periods": by_period,
                })
            })
            .collect();
        json!({
            "sent": d.sent.iter().map(|(_, s)| s.iter().sum::<u64>()).sum::<u64>(),
            "receivers": receivers,
        })
    }

    /// When each period began, in seconds (`null`: never reached).
    pub fn periods(&self) -> Value {
        PERIODS.iter().enumerate().map(|(p, name)| (name.to_string(), json!(self.began[p].map(seconds)))).collect::<serde_json::Map<_, _>>().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_expects_what_the_other_senders_sent() {
        let mut d = Delivery::new(&[(vec![0, 5], vec![1, 5])]);
        for _ in 0..3 {
            d.sent(0, 0);
        }
        d.sent(0, 5);
        d.enter(1, 100);
        d.sent(0, 0);
        assert_eq!(d.groups[0].expected(1, None), 5);
        assert_eq!(d.groups[0].expected(5, None), 4, "host 5 does not receive its own");
        assert_eq!(d.groups[0].expected(5, Some(1)), 1);
        // Received at 110 and 140: the first was sent at 100 (the detour), the second at 110
        // (also); one received at 105 was sent at 95, before the failure.
        assert!(d.received(0, 1, 110, 10, false));
        assert!(d.received(0, 1, 140, 30, true));
        assert!(d.received(0, 5, 105, 10, false));
        assert!(!d.received(0, 2, 110, 10, false));
        let r = &d.groups[0].receivers[0];
        assert_eq!((r.received, r.detoured, r.latency_mean(), r.latency_min(), r.latency_max()), ([0, 2, 0], 1, Some(20), Some(10), 30));
        assert_eq!(d.groups[0].receivers[1].received, [1, 0, 0], "sent before the failure");
        assert_eq!(d.summary(0)["receivers"][0]["lost"], 3);
        assert_eq!(d.began, [Some(0), Some(100), None]);
    }
}
