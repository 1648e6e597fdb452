//! A load balancer's periodic rule rewrites through the control channel (issue 38;
//! docs/updates.md, "LocalFlow's rule rewrites").
//!
//! LocalFlow (seed 004, CoNEXT'13 §3.2) recomputes every switch's flow rules every interval T
//! from the byte counters it read at the interval's end. With `[convergence] mode =
//! "controller"` those rules are not in force at once: the counters reach the controller one
//! way (half of `latency`), the new rules come back one way, and the switch writes them at
//! `rule_rate` ([`Channel`]: one message after another, so a switch still writing the last
//! interval's rules starts this interval's when it is done). Until a rule is written the
//! switch forwards by the rule it had. A switch that must write `n` rules is therefore done
//! `latency + n / rule_rate` after the interval ended, when nothing was queued before it.
//!
//! Only the rules whose action changed are written (an OpenFlow `modify`); a rule that carried
//! nothing in an interval expires at the switch itself (an idle timeout, no message). Counted
//! per interval and switch: rules written, whether the switch was still writing an earlier
//! interval's rules when this one's were decided (backlog), and the time from the decision to
//! the last rule written. Table space is counted (the most rules a switch held at a decision)
//! against `table_size`, not enforced: LocalFlow has a rule per flow and nothing to fall back to.
//!
//! Generic over the rule's action (`A`) and keyed by the rule's flow key (`u64`) so that the
//! control plane knows nothing of a load balancer's rule format.

use super::channel::Channel;
use crate::units::Time;
use std::collections::VecDeque;

pub struct Rewrites<A> {
    channel: Channel,
    table_size: u64,
    /// Per switch: messages (rules by key) sent and not yet written, oldest first.
    pending: Vec<VecDeque<Vec<(u64, A)>>>,
    /// Bumped when routing changes and every rule is forgotten: older messages are void.
    generation: u32,
    /// Installs the simulator must schedule: (time, switch, generation).
    due: Vec<(Time, u32, u32)>,
    /// Whether the current interval has counted a backlogged switch yet.
    backlog_counted: bool,
    pub stats: RewriteStats,
}

/// What the rewrites cost, over the run.
#[derive(Clone, Debug, Default)]
pub struct RewriteStats {
    /// Decisions (intervals) taken with the channel on.
    pub intervals: u64,
    /// Rules written, over all switches and intervals.
    pub rules_written: u64,
    /// (switch, interval) pairs with at least one rule to write, and the most one switch wrote in
    /// one interval.
    pub messages: u64,
    pub most_rules_one_message: u64,
    /// (switch, interval) pairs where the switch had not finished an earlier interval's rules
    /// when this interval's were decided.
    pub backlogged_messages: u64,
    /// Intervals in which at least one switch was backlogged.
    pub backlogged_intervals: u64,
    /// Picoseconds from each message's decision to its last rule written.
    pub delays: Vec<Time>,
    /// The most rules one switch held at a decision, and (switch, interval) pairs over
    /// `table_size`.
    pub peak_rules_one_switch: u64,
    pub over_table: u64,
}

impl<A: Copy> Rewrites<A> {
    pub fn new(latency: Time, rule_rate: f64, table_size: u64, switches: usize) -> Self {
        Rewrites {
            channel: Channel::new(latency, rule_rate, switches),
            table_size,
            pending: (0..switches).map(|_| VecDeque::new()).collect(),
            generation: 0,
            due: Vec::new(),
            backlog_counted: false,
            stats: RewriteStats::default(),
        }
    }

    /// An interval's decisions begin.
    pub fn begin_interval(&mut self) {
        self.stats.intervals += 1;
        self.backlog_counted = false;
    }

    /// Switch `s` (by index), holding `held` rules, decided `rules` at `now` (the interval's end).
    /// Returns them back when they are in force at once (nothing to write, or no time to write
    /// it); otherwise they are queued and `take_due` names when they are.
    pub fn send(&mut self, s: usize, now: Time, held: u64, rules: Vec<(u64, A)>) -> Option<Vec<(u64, A)>> {
        self.stats.peak_rules_one_switch = self.stats.peak_rules_one_switch.max(held);
        self.stats.over_table += (held > self.table_size) as u64;
        if rules.is_empty() {
            return None;
        }
        let n = rules.len() as u64;
        self.stats.messages += 1;
        self.stats.rules_written += n;
        self.stats.most_rules_one_message = self.stats.most_rules_one_message.max(n);
        if !self.pending[s].is_empty() {
            self.stats.backlogged_messages += 1;
            if !self.backlog_counted {
                self.stats.backlogged_intervals += 1;
                self.backlog_counted = true;
            }
        }
        // The counters reach the controller one way after `now`; its message leaves then.
        let d = self.channel.send(s, now + self.channel.one_way, n);
        self.stats.delays.push(d.done - now);
        if d.done <= now {
            return Some(rules);
        }
        self.pending[s].push_back(rules);
        self.due.push((d.done, s as u32, self.generation));
        None
    }

    /// Installs to schedule since the last call: (time, switch index, generation).
    pub fn take_due(&mut self) -> Vec<(Time, u32, u32)> {
        std::mem::take(&mut self.due)
    }

    /// Switch `s`'s oldest message is written (if `generation` is current): its rules.
    pub fn installed(&mut self, s: usize, generation: u32) -> Option<Vec<(u64, A)>> {
        if generation != self.generation {
            return None;
        }
        self.pending[s].pop_front()
    }

    /// Every rule was forgotten (routing changed): messages on their way are void. The switches
    /// still spend the time writing them.
    pub fn forget(&mut self) {
        self.generation += 1;
        for p in &mut self.pending {
            p.clear();
        }
    }

    /// The summary's `load_balancer.install` object.
    pub fn summary(&self) -> serde_json::Value {
        let s = &self.stats;
        let mut d = s.delays.clone();
        d.sort_unstable();
        let ms = |t: Time| t as f64 / 1e9;
        let p = |q: f64| if d.is_empty() { 0.0 } else { ms(d[((d.len() - 1) as f64 * q).round() as usize]) };
        let mean = if d.is_empty() { 0.0 } else { d.iter().map(|&t| ms(t)).sum::<f64>() / d.len() as f64 };
        serde_json::json!({
            "latency_ms": ms(self.channel.one_way * 2),
            "rule_rate_per_s": if self.channel.per_rule > 0.0 { 1e12 / self.channel.per_rule } else { f64::MAX },
            "table_size": self.table_size,
            "intervals": s.intervals,
            "rules_written": s.rules_written,
            "messages": s.messages,
            "rules_per_interval": if s.intervals > 0 { s.rules_written as f64 / s.intervals as f64 } else { 0.0 },
            "rules_per_message_mean": if s.messages > 0 { s.rules_written as f64 / s.messages as f64 } else { 0.0 },
            "rules_per_message_max": s.most_rules_one_message,
            "backlogged_messages": s.backlogged_messages,
            "backlogged_intervals": s.backlogged_intervals,
            "install_delay_mean_ms": mean,
            "install_delay_p99_ms": p(0.99),
            "install_delay_max_ms": p(1.0),
            "peak_rules_one_switch": s.peak_rules_one_switch,
            "switch_intervals_over_table": s.over_table,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{PS_PER_MS, PS_PER_US};

    /// By hand: one switch, N = 20 rules at R = 1000 rules/s with a 2.5 ms round trip, decided at
    /// 10 ms: in force at 10 + 2.5 + 20 = 32.5 ms. The next interval's 5 rules, decided at 20 ms,
    /// reach the switch at 21.25 ms but wait for the first message (backlog) and are in at
    /// 32.5 + 5 = 37.5 ms, 17.5 ms after their decision.
    #[test]
    fn rules_are_in_after_latency_plus_n_over_rate() {
        let mut r: Rewrites<u8> = Rewrites::new(2_500 * PS_PER_US, 1000.0, 1000, 1);
        r.begin_interval();
        assert!(r.send(0, 10 * PS_PER_MS, 20, (0..20).map(|k| (k, 1)).collect()).is_none());
        assert_eq!(r.take_due(), vec![(32_500 * PS_PER_US, 0, 0)]);
        r.begin_interval();
        assert!(r.send(0, 20 * PS_PER_MS, 20, vec![(3, 2); 5]).is_none());
        assert_eq!(r.take_due(), vec![(37_500 * PS_PER_US, 0, 0)]);
        assert_eq!((r.stats.backlogged_messages, r.stats.backlogged_intervals), (1, 1));
        assert_eq!(r.installed(0, 0).map(|m| m.len()), Some(20));
        assert_eq!(r.installed(0, 0), Some(vec![(3, 2); 5]));
        assert_eq!(r.stats.delays, vec![22_500 * PS_PER_US, 17_500 * PS_PER_US]);
        assert_eq!((r.stats.rules_written, r.stats.most_rules_one_message), (25, 20));
    }

    /// No latency and writes under half a picosecond: the rules are handed back to take effect
    /// at once, as without the channel; nothing is queued.
    #[test]
    fn instant_channel_installs_at_once() {
        let mut r: Rewrites<u8> = Rewrites::new(0, 1e15, 1000, 2);
        assert_eq!(r.send(1, 5, 1, vec![(7, 1); 100]).map(|m| m.len()), Some(100));
        assert!(r.take_due().is_empty());
        assert_eq!(r.stats.backlogged_messages, 0);
    }

    /// A routing change voids the messages on their way.
    #[test]
    fn forgetting_voids_pending_messages() {
        let mut r: Rewrites<u8> = Rewrites::new(2_500 * PS_PER_US, 1000.0, 2, 1);
        r.send(0, 0, 3, vec![(1, 1)]);
        assert_eq!(r.stats.over_table, 1, "3 rules held, table of 2");
        let (_, s, g) = r.take_due()[0];
        r.forget();
        assert_eq!(r.installed(s as usize, g), None);
    }
}
