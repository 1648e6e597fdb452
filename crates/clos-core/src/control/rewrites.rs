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
//! the last rule written.
//!
//! **Table space** is enforced: a switch's table holds at most `table_size` of these rules. The
//! load balancer asks [`Rewrites::space`] how many new rules fit, and the rules it decided beyond
//! that are not installed (an OpenFlow switch answers "table full"): their flows stay on what
//! the switch does without a rule (LocalFlow: ECMP), and each refusal is counted, per switch.
//!
//! **Coalescing** (`[convergence] coalesce = true`): a switch whose queue still holds a message
//! it has not begun writing when a newer round's message arrives drops the older one unwritten,
//! and writes one message: the newer round's rules, plus the older's rules for flows the newer
//! round left unchanged (still the newest decision for them). That is what a controller that
//! recomputes each interval does with a switch that has fallen behind. Without it (the default)
//! the switch writes every round in turn. The install delay of a dropped message is counted to
//! the time the message that replaced it is in.
//!
//! Generic over the rule's action (`A`) and keyed by the rule's flow key (`u64`) so that the
//! control plane knows nothing of a load balancer's rule format.

use super::channel::Channel;
use crate::units::Time;
use std::collections::{HashSet, VecDeque};

/// A message of rules to one switch, sent and not yet written.
struct Message<A> {
    /// Names this message in its install event (messages are numbered over the run).
    token: u32,
    /// When the switch begins writing it, and when its last rule is in.
    start: Time,
    done: Time,
    rules: Vec<(u64, A)>,
    /// The rounds it carries: (index into `stats.delays`, round time).
    rounds: Vec<(usize, Time)>,
}

pub struct Rewrites<A> {
    channel: Channel,
    table_size: u64,
    coalesce: bool,
    /// Switch names, by index, for the summary.
    names: Vec<String>,
    /// Per switch: messages sent and not yet written, oldest first.
    pending: Vec<VecDeque<Message<A>>>,
    /// The next message's token.
    next_token: u32,
    /// Installs the simulator must schedule: (time, switch, token).
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
    /// Rules written, over all switches and intervals (rules dropped unwritten by coalescing
    /// are not counted here but in `rules_superseded`).
    pub rules_written: u64,
    /// (switch, interval) pairs with at least one rule to write, and the most rules one message
    /// held (a coalesced message included).
    pub messages: u64,
    pub most_rules_one_message: u64,
    /// (switch, interval) pairs where the switch had not finished an earlier interval's rules
    /// when this interval's were decided.
    pub backlogged_messages: u64,
    /// Intervals in which at least one switch was backlogged.
    pub backlogged_intervals: u64,
    /// Picoseconds from each message's decision to its last rule written (a message dropped by
    /// coalescing: to the message that replaced it being written).
    pub delays: Vec<Time>,
    /// The most rules one switch held at a decision (at most `table_size`).
    pub peak_rules_one_switch: u64,
    /// (switch, interval) pairs where some rules did not fit the table.
    pub over_table: u64,
    /// Per switch: rules refused for want of table space (summed over intervals), intervals with
    /// a refusal, and the most refused in one interval.
    pub refused: Vec<Refused>,
    /// Coalescing: messages dropped unwritten, and their rules that a newer round replaced
    /// (never written).
    pub coalesced_messages: u64,
    pub rules_superseded: u64,
}

/// One switch's table refusals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refused {
    pub rules: u64,
    pub intervals: u64,
    pub most_one_interval: u64,
}

impl<A: Copy> Rewrites<A> {
    /// The channel to the switches named `names` (by index).
    pub fn new(latency: Time, rule_rate: f64, table_size: u64, coalesce: bool, names: Vec<String>) -> Self {
        let switches = names.len();
        Rewrites {
            channel: Channel::new(latency, rule_rate, switches),
            table_size,
            coalesce,
            names,
            pending: (0..switches).map(|_| VecDeque::new()).collect(),
            next_token: 0,
            due: Vec::new(),
            backlog_counted: false,
            stats: RewriteStats { refused: vec![Refused::default(); switches], ..RewriteStats::default() },
        }
    }

    /// New rules a switch already holding `held` may still take.
    pub fn space(&self, held: u64) -> u64 {
        self.table_size.saturating_sub(held)
    }

    /// An interval's decisions begin.
    pub fn begin_interval(&mut self) {
        self.stats.intervals += 1;
        self.backlog_counted = false;
    }

    /// Switch `s` (by index) decided `rules` at `now` (the interval's end), and holds `held`
    /// rules with them (those sent included); `refused` more did not fit its table.
    /// Returns them back when they are in force at once (nothing to write, or no time to write
    /// it); otherwise they are queued and `take_due` names when they are.
    pub fn send(&mut self, s: usize, now: Time, held: u64, refused: u64, rules: Vec<(u64, A)>) -> Option<Vec<(u64, A)>> {
        self.stats.peak_rules_one_switch = self.stats.peak_rules_one_switch.max(held);
        if refused > 0 {
            self.stats.over_table += 1;
            let r = &mut self.stats.refused[s];
            r.rules += refused;
            r.intervals += 1;
            r.most_one_interval = r.most_one_interval.max(refused);
        }
        if rules.is_empty() {
            return None;
        }
        self.stats.messages += 1;
        self.stats.rules_written += rules.len() as u64;
        if !self.pending[s].is_empty() {
            self.stats.backlogged_messages += 1;
            if !self.backlog_counted {
                self.stats.backlogged_intervals += 1;
                self.backlog_counted = true;
            }
        }
        let mut rounds = vec![(self.stats.delays.len(), now)];
        self.stats.delays.push(0);
        // The counters reach the controller one way after `now`; its message leaves then and
        // reaches the switch one way later.
        let sent = now + self.channel.one_way;
        let rules = if self.coalesce { self.coalesce_into(s, sent + self.channel.one_way, rules, &mut rounds) } else { rules };
        let n = rules.len() as u64;
        self.stats.most_rules_one_message = self.stats.most_rules_one_message.max(n);
        let d = self.channel.send(s, sent, n);
        for &(i, decided) in &rounds {
            self.stats.delays[i] = d.done - decided;
        }
        if d.done <= now {
            return Some(rules);
        }
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1);
        self.pending[s].push_back(Message { token, start: d.start, done: d.done, rules, rounds });
        self.due.push((d.done, s as u32, token));
        None
    }

    /// Coalescing: the messages queued at switch `s` that it has not begun writing by `arrives`
    /// (when the newer message reaches it) are dropped; their rules for flows `rules` does not
    /// name are carried into it. Returns the message to write.
    fn coalesce_into(&mut self, s: usize, arrives: Time, mut rules: Vec<(u64, A)>, rounds: &mut Vec<(usize, Time)>) -> Vec<(u64, A)> {
        let q = &mut self.pending[s];
        let Some(first) = q.iter().position(|m| m.start >= arrives) else { return rules };
        let dropped: Vec<Message<A>> = q.drain(first..).collect();
        // The switch is free once the message it is writing at `arrives` is in.
        let free = q.back().map_or(0, |m| m.done);
        self.channel.free_from(s, free);
        let mut named: HashSet<u64> = rules.iter().map(|r| r.0).collect();
        let mut carried = Vec::new();
        // Newest first: a flow's newest decision wins.
        for m in dropped.iter().rev() {
            self.stats.coalesced_messages += 1;
            for &(key, action) in &m.rules {
                if named.insert(key) {
                    carried.push((key, action));
                } else {
                    self.stats.rules_superseded += 1;
                    self.stats.rules_written -= 1;
                }
            }
            rounds.extend_from_slice(&m.rounds);
        }
        carried.reverse();
        carried.append(&mut rules);
        carried
    }

    /// Installs to schedule since the last call: (time, switch index, message token).
    pub fn take_due(&mut self) -> Vec<(Time, u32, u32)> {
        std::mem::take(&mut self.due)
    }

    /// Switch `s` has written the message `token`: its rules, if that message is still its
    /// oldest (not voided by `forget`, nor dropped by coalescing).
    pub fn installed(&mut self, s: usize, token: u32) -> Option<Vec<(u64, A)>> {
        if self.pending[s].front().is_some_and(|m| m.token == token) {
            return self.pending[s].pop_front().map(|m| m.rules);
        }
        None
    }

    /// Every rule was forgotten (routing changed): messages on their way are void. The switches
    /// still spend the time writing them.
    pub fn forget(&mut self) {
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
        let refusals: Vec<serde_json::Value> = s
            .refused
            .iter()
            .zip(&self.names)
            .filter(|(r, _)| r.rules > 0)
            .map(|(r, name)| {
                serde_json::json!({
                    "switch": name,
                    "rules_refused": r.rules,
                    "intervals_full": r.intervals,
                    "most_refused_one_interval": r.most_one_interval,
                })
            })
            .collect();
        serde_json::json!({
            "latency_ms": ms(self.channel.one_way * 2),
            "rule_rate_per_s": if self.channel.per_rule > 0.0 { 1e12 / self.channel.per_rule } else { f64::MAX },
            "table_size": self.table_size,
            "coalesce": self.coalesce,
            "intervals": s.intervals,
            "rules_written": s.rules_written,
            "messages": s.messages,
            "rules_per_interval": if s.intervals > 0 { s.rules_written as f64 / s.intervals as f64 } else { 0.0 },
            "rules_per_message_mean": if s.messages > 0 { s.rules_written as f64 / s.messages as f64 } else { 0.0 },
            "rules_per_message_max": s.most_rules_one_message,
            "backlogged_messages": s.backlogged_messages,
            "backlogged_intervals": s.backlogged_intervals,
            "coalesced_messages": s.coalesced_messages,
            "rules_superseded": s.rules_superseded,
            "install_delay_mean_ms": mean,
            "install_delay_p99_ms": p(0.99),
            "install_delay_max_ms": p(1.0),
            "peak_rules_one_switch": s.peak_rules_one_switch,
            "switch_intervals_over_table": s.over_table,
            "rules_refused": s.refused.iter().map(|r| r.rules).sum::<u64>(),
            "table_overflows": refusals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{PS_PER_MS, PS_PER_US};

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    /// By hand: one switch, N = 20 rules at R = 1000 rules/s with a 2.5 ms round trip, decided at
    /// 10 ms: in force at 10 + 2.5 + 20 = 32.5 ms. The next interval's 5 rules, decided at 20 ms,
    /// reach the switch at 22.5 ms but wait for the first message (backlog) and are in at
    /// 32.5 + 5 = 37.5 ms, 17.5 ms after their decision.
    #[test]
    fn rules_are_in_after_latency_plus_n_over_rate() {
        let mut r: Rewrites<u8> = Rewrites::new(2_500 * PS_PER_US, 1000.0, 1000, false, names(1));
        r.begin_interval();
        assert!(r.send(0, 10 * PS_PER_MS, 20, 0, (0..20).map(|k| (k, 1)).collect()).is_none());
        assert_eq!(r.take_due(), vec![(32_500 * PS_PER_US, 0, 0)]);
        r.begin_interval();
        assert!(r.send(0, 20 * PS_PER_MS, 20, 0, vec![(3, 2); 5]).is_none());
        assert_eq!(r.take_due(), vec![(37_500 * PS_PER_US, 0, 1)]);
        assert_eq!((r.stats.backlogged_messages, r.stats.backlogged_intervals), (1, 1));
        assert_eq!(r.installed(0, 0).map(|m| m.len()), Some(20));
        assert_eq!(r.installed(0, 1), Some(vec![(3, 2); 5]));
        assert_eq!(r.stats.delays, vec![22_500 * PS_PER_US, 17_500 * PS_PER_US]);
        assert_eq!((r.stats.rules_written, r.stats.most_rules_one_message), (25, 20));
    }

    /// No latency and writes under half a picosecond: the rules are handed back to take effect
    /// at once, as without the channel; nothing is queued.
    #[test]
    fn instant_channel_installs_at_once() {
        let mut r: Rewrites<u8> = Rewrites::new(0, 1e15, 1000, false, names(2));
        assert_eq!(r.send(1, 5, 1, 0, vec![(7, 1); 100]).map(|m| m.len()), Some(100));
        assert!(r.take_due().is_empty());
        assert_eq!(r.stats.backlogged_messages, 0);
    }

    /// A routing change voids the messages on their way.
    #[test]
    fn forgetting_voids_pending_messages() {
        let mut r: Rewrites<u8> = Rewrites::new(2_500 * PS_PER_US, 1000.0, 2, false, names(1));
        r.send(0, 0, 2, 0, vec![(1, 1)]);
        let (_, s, token) = r.take_due()[0];
        r.forget();
        assert_eq!(r.installed(s as usize, token), None);
    }

    /// Table of N = 10, rounds of M = 4 new rules: the first two rounds fill 8 places, the third
    /// finds room for 2 and refuses 2, the fourth (nothing expired) refuses all 4. Refusals are
    /// counted per switch, and only at the switch whose table is full.
    #[test]
    fn refusals_are_counted_per_switch() {
        let mut r: Rewrites<u8> = Rewrites::new(0, 1000.0, 10, false, names(2));
        let mut held = 0;
        let mut refused_per_round = Vec::new();
        for round in 0..4u64 {
            r.begin_interval();
            let fit = r.space(held).min(4);
            refused_per_round.push(4 - fit);
            held += fit;
            r.send(0, round * 10 * PS_PER_MS, held, 4 - fit, (0..fit).map(|k| (round * 4 + k, 1)).collect());
            r.send(1, round * 10 * PS_PER_MS, 1, 0, vec![(round, 1)]);
        }
        assert_eq!(refused_per_round, vec![0, 0, 2, 4]);
        assert_eq!(r.stats.refused[0], Refused { rules: 6, intervals: 2, most_one_interval: 4 });
        assert_eq!(r.stats.refused[1], Refused::default());
        assert_eq!((r.stats.over_table, r.stats.peak_rules_one_switch, r.stats.rules_written), (2, 10, 10 + 4));
        let v = r.summary();
        assert_eq!(v["rules_refused"], 6);
        assert_eq!(v["table_overflows"], serde_json::json!([{"switch": "s0", "rules_refused": 6, "intervals_full": 2, "most_refused_one_interval": 4}]));
    }

    /// One switch at R = 100 rules/s, no latency, a round every 10 ms of M = 3 rules (one
    /// write takes 10 ms: 30 ms a round). Without coalescing the queue grows by 20 ms a round:
    /// round k (at 10k ms) is in at 30(k + 1) ms. With coalescing, round 1 (decided at 10 ms)
    /// and round 2 (20 ms) wait behind round 0, which the switch is writing until 30 ms; round 2
    /// drops round 1 unwritten. Round 1's rules for flows round 2 left unchanged (here key 9)
    /// are carried: round 2's message holds its 3 rules plus that 1 and is in at 30 + 40 = 70 ms,
    /// where the queue would have had round 2 in at 90 ms.
    #[test]
    fn a_backlogged_switch_coalesces_to_the_newest_round() {
        let rounds: [Vec<(u64, u8)>; 3] = [vec![(1, 0), (2, 0), (3, 0)], vec![(1, 1), (2, 1), (9, 1)], vec![(1, 2), (2, 2), (3, 2)]];
        let run = |coalesce: bool| {
            let mut r: Rewrites<u8> = Rewrites::new(0, 100.0, 1000, coalesce, names(1));
            let mut due = Vec::new();
            for (k, rules) in rounds.iter().enumerate() {
                r.begin_interval();
                r.send(0, k as Time * 10 * PS_PER_MS, 3, 0, rules.clone());
                due.extend(r.take_due());
            }
            (r, due)
        };
        let (plain, due) = run(false);
        assert_eq!(due.iter().map(|d| d.0 / PS_PER_MS).collect::<Vec<_>>(), vec![30, 60, 90]);
        assert_eq!(plain.stats.delays, vec![30 * PS_PER_MS, 50 * PS_PER_MS, 70 * PS_PER_MS]);
        assert_eq!((plain.stats.rules_written, plain.stats.coalesced_messages), (9, 0));

        let (mut c, due) = run(true);
        assert_eq!(due.iter().map(|d| (d.0 / PS_PER_MS, d.2)).collect::<Vec<_>>(), vec![(30, 0), (60, 1), (70, 2)]);
        assert_eq!((c.stats.coalesced_messages, c.stats.rules_superseded, c.stats.rules_written), (1, 2, 7));
        // Round 1's delay runs to the message that replaced it: 70 - 10 ms.
        assert_eq!(c.stats.delays, vec![30 * PS_PER_MS, 60 * PS_PER_MS, 50 * PS_PER_MS]);
        assert_eq!(c.installed(0, 0), Some(rounds[0].clone()));
        assert_eq!(c.installed(0, 1), None, "round 1 was dropped unwritten");
        let mut last = c.installed(0, 2).expect("round 2 with round 1's carried rule");
        last.sort_unstable();
        assert_eq!(last, vec![(1, 2), (2, 2), (3, 2), (9, 1)]);
        assert_eq!(c.stats.most_rules_one_message, 4);
    }

    /// A message the switch has begun writing is not dropped: coalescing waits for it.
    #[test]
    fn coalescing_keeps_the_message_being_written() {
        let mut r: Rewrites<u8> = Rewrites::new(0, 100.0, 1000, true, names(1));
        r.send(0, 0, 1, 0, vec![(1, 0); 3]);
        r.send(0, 10 * PS_PER_MS, 1, 0, vec![(2, 0)]);
        let due = r.take_due();
        assert_eq!(due.iter().map(|d| d.0 / PS_PER_MS).collect::<Vec<_>>(), vec![30, 40]);
        assert_eq!(r.stats.coalesced_messages, 0);
    }
}
