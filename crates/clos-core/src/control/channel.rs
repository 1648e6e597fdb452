//! The control channel and a switch's rule writer: when a message the controller sends has
//! been written into the switch's table.
//!
//! A message takes half the round trip (`latency`, Frenetic's 2.5 ms, seed 004 L5013-L5015) to
//! reach the switch; the switch writes its rules one after another at `rule_rate` (seed 004
//! L1310: 600-1000 per second for OpenFlow switches), finishing one message before starting
//! the next (messages to one switch are written in the order sent); the acknowledgement takes
//! the other half back. A message of `n` rules sent at `t` to an idle switch is in at
//! `t + latency/2 + n/rate` and acknowledged at `t + latency + n/rate`.

use crate::units::{Time, PS_PER_S};

pub struct Channel {
    /// One way: half the round trip.
    pub one_way: Time,
    /// Picoseconds to write one rule.
    pub per_rule: f64,
    /// When each switch (by index) finishes writing what it was sent so far.
    busy_until: Vec<Time>,
}

/// When a message is written, and when its acknowledgement is back at the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The switch starts writing it (it has arrived, and earlier messages are written).
    pub start: Time,
    /// Its last rule is in.
    pub done: Time,
    /// The controller hears so.
    pub acked: Time,
}

impl Channel {
    pub fn new(round_trip: Time, rules_per_second: f64, switches: usize) -> Channel {
        Channel { one_way: round_trip / 2, per_rule: PS_PER_S as f64 / rules_per_second, busy_until: vec![0; switches] }
    }

    /// Time to write `rules` rules, rounded to the picosecond.
    pub fn write_time(&self, rules: u64) -> Time {
        (rules as f64 * self.per_rule).round() as Time
    }

    /// Switch `s` is free again from `at`: the messages it was to write after then were dropped
    /// unwritten (a backlogged switch coalescing to the newest round, `control::rewrites`).
    pub fn free_from(&mut self, s: usize, at: Time) {
        self.busy_until[s] = at;
    }

    /// Send switch `s` a message of `rules` rules at `sent`.
    pub fn send(&mut self, s: usize, sent: Time, rules: u64) -> Delivery {
        let start = (sent + self.one_way).max(self.busy_until[s]);
        let done = start + self.write_time(rules);
        self.busy_until[s] = done;
        Delivery { start, done, acked: done + self.one_way }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_US;

    /// 2.5 ms round trip, 1000 rules/s: 10 rules sent at 0 are in at 1.25 ms + 10 ms and
    /// acknowledged at 2.5 ms + 10 ms; a second message of 5 sent at 1 ms waits for the first
    /// and is in 5 ms after it.
    #[test]
    fn install_time_is_latency_plus_rules_over_rate() {
        let mut c = Channel::new(2_500 * PS_PER_US, 1000.0, 2);
        let d = c.send(0, 0, 10);
        assert_eq!(d, Delivery { start: 1_250 * PS_PER_US, done: 11_250 * PS_PER_US, acked: 12_500 * PS_PER_US });
        let d2 = c.send(0, 1_000 * PS_PER_US, 5);
        assert_eq!((d2.start, d2.done), (11_250 * PS_PER_US, 16_250 * PS_PER_US));
        // Another switch is not held up.
        assert_eq!(c.send(1, 1_000 * PS_PER_US, 0).done, 2_250 * PS_PER_US);
    }
}
