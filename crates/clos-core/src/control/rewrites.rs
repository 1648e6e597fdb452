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
//! **Update strategies** (`[convergence] update`, docs/updates.md "Update strategies for
//! LocalFlow's rewrites"; Frenetic, seed 004 L5106-L5270). `unordered` (the default) is the
//! above: each switch writes its changed rules as they arrive. `ordered` sends a round's
//! messages tier by tier, downstream first (the top tier, then aggregation switches, then ToRs;
//! upward traffic meets a ToR's rule before an aggregation switch's), each tier once the one
//! above has acknowledged. LocalFlow's rules only choose among equal-cost next hops, so any mix
//! of old and new rules is a loop-free shortest path: the dependency order has nothing to
//! protect, and what it changes is which mixes a packet can meet and how late the ToRs' rules
//! come. `two_phase` installs a round's rules as a whole new version beside the old (every rule
//! the switch holds, not only the changed ones), then, once every switch has acknowledged,
//! flips each ToR's stamping rules (one per server port) to the new version, and `drain` after
//! the last flip is acknowledged removes the old version (one delete per old rule). One version
//! at a time: a round decided while one is under way is not installed (`rounds_waited`); the
//! next version, at the first round after the old rules are gone, carries the newest decisions.
//! `per_flow` stages and flips as two-phase, but each source ToR keeps stamping a flow that has
//! sent within `flow_timeout` with the round it was pinned to (`flow_pins.rs`; the ToR also
//! holds the new version's stamping rules beside the old); new flows, and flows back from an
//! idle spell, take the newest installed round. The old version's rules go once the last flow
//! pinned to them has idled `flow_timeout` (checked at each round, one way later at the
//! switches), and only then may the next version begin: a flow that never idles keeps its
//! round's rules, and holds every later round back.
//!
//! Generic over the rule's action (`A`) and keyed by the rule's flow key (`u64`) so that the
//! control plane knows nothing of a load balancer's rule format.

use super::channel::Channel;
use super::UpdateStrategy;
use crate::units::Time;
use std::collections::{HashSet, VecDeque};

/// What a message does at its switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// In-place writes (unordered, ordered): the rules are in force once written.
    Write,
    /// Two-phase: the rules of version `round`, installed beside the old version's.
    Stage,
    /// Two-phase, at a ToR: its stamping rules now tag packets with version `round`.
    Flip,
    /// Two-phase: the old version's rules are gone; version `round` is the only one.
    Remove,
}

/// A message the switch has written.
#[derive(Clone, Debug, PartialEq)]
pub struct Installed<A> {
    pub kind: Kind,
    /// The round whose decisions it carries (the newest, for a coalesced message).
    pub round: u32,
    pub rules: Vec<(u64, A)>,
}

/// A message of rules to one switch, sent and not yet written.
struct Message<A> {
    /// Names this message in its install event (messages are numbered over the run).
    token: u32,
    kind: Kind,
    round: u32,
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
    update: UpdateStrategy,
    /// Two-phase: from the last flip acknowledged to the old rules' removal.
    drain: Time,
    /// Per switch: its tier (0 ToR, 1 aggregation, 2 the top), for the ordered update.
    tiers: Vec<u8>,
    /// Per switch: stamping rules at a ToR (one per server port), 0 elsewhere (two-phase).
    stamping: Vec<u64>,
    /// The current round (rounds count from 1; 0 is the start).
    round: u32,
    /// Ordered and two-phase: this round's messages, sent at `end_interval`.
    batch: Vec<(usize, Vec<(u64, A)>)>,
    /// Rules held over all switches at this round (in place), for the peak.
    round_held: u64,
    /// Two-phase: rules of the version in force, per switch.
    live_held: Vec<u64>,
    /// Two-phase: when the controller hears the last removal (it may start the next version).
    free_at: Time,
    /// Two-phase and per-flow: rules of the version being replaced, per switch, until removed.
    old_held: Vec<u64>,
    /// Per-flow: the soft timeout; while the old version waits for its flows, when its last ToR
    /// flipped, the version's round and when it was decided; the last packet stamped with an
    /// older round than the newest (the LocalFlow side keeps it here before each round ends).
    flow_timeout: Time,
    expiring: Option<(Time, u32, Time)>,
    pub old_last: Time,
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
    /// The most rules all switches held together (two-phase: old and new versions).
    pub peak_rules_total: u64,
    /// Ordered: tiers sent one after another, summed over rounds.
    pub tier_rounds: u64,
    /// Two-phase: versions installed, rounds not installed because one was under way, rules
    /// written to flip the ToRs' stamping and to remove old versions, and per version the time
    /// from its round to the last ToR flipped and to the old rules removed.
    pub versions: u64,
    pub rounds_waited: u64,
    pub stamping_rules_written: u64,
    pub removal_rules_written: u64,
    pub flip_times: Vec<Time>,
    pub removal_times: Vec<Time>,
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
            update: UpdateStrategy::Unordered,
            drain: 0,
            tiers: vec![0; switches],
            stamping: vec![0; switches],
            round: 0,
            batch: Vec::new(),
            round_held: 0,
            live_held: vec![0; switches],
            free_at: 0,
            old_held: vec![0; switches],
            flow_timeout: 0,
            expiring: None,
            old_last: 0,
            stats: RewriteStats { refused: vec![Refused::default(); switches], ..RewriteStats::default() },
        }
    }

    /// Under `update`: each switch's `tiers` (0 ToR, 1 aggregation, 2 top) and `stamping`
    /// rules (server ports at a ToR), and two-phase's `drain` (per-flow: `with_flow_timeout`).
    pub fn with_update(mut self, update: UpdateStrategy, drain: Time, tiers: Vec<u8>, stamping: Vec<u64>) -> Self {
        debug_assert!(tiers.len() == self.tiers.len() && stamping.len() == self.tiers.len());
        debug_assert!(!(self.coalesce && update != UpdateStrategy::Unordered));
        self.update = update;
        self.drain = drain;
        self.tiers = tiers;
        self.stamping = stamping;
        self
    }

    /// Per-flow: the old rules' soft timeout.
    pub fn with_flow_timeout(mut self, flow_timeout: Time) -> Self {
        self.flow_timeout = flow_timeout;
        self
    }

    pub fn update(&self) -> UpdateStrategy {
        self.update
    }

    /// New rules a switch already holding `held` may still take.
    pub fn space(&self, held: u64) -> u64 {
        self.table_size.saturating_sub(held)
    }

    /// New rules switch `s`, with `held` placed in its next version, may still take: under
    /// two-phase the version in force keeps its room beside the new one.
    pub fn space_at(&self, s: usize, held: u64) -> u64 {
        let reserved = if self.update.tagged() { self.live_held[s] + self.old_held[s] } else { 0 };
        self.table_size.saturating_sub(held + reserved)
    }

    /// An interval's decisions begin.
    pub fn begin_interval(&mut self) {
        self.stats.intervals += 1;
        self.round = self.stats.intervals as u32;
        self.round_held = 0;
        self.backlog_counted = false;
    }

    /// Switch `s` (by index) decided `rules` at `now` (the interval's end), and holds `held`
    /// rules with them (those sent included); `refused` more did not fit its table.
    /// Returns them back when they are in force at once (nothing to write, or no time to write
    /// it); otherwise they are queued and `take_due` names when they are.
    /// Under `ordered` and `two_phase` nothing is sent here: `end_interval` sends the round
    /// (two-phase: `rules` is the switch's whole new version).
    pub fn send(&mut self, s: usize, now: Time, held: u64, refused: u64, rules: Vec<(u64, A)>) -> Option<Vec<(u64, A)>> {
        self.stats.peak_rules_one_switch = self.stats.peak_rules_one_switch.max(held);
        self.round_held += held;
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
        if self.update != UpdateStrategy::Unordered {
            self.batch.push((s, rules));
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
        self.pending[s].push_back(Message { token, kind: Kind::Write, round: self.round, start: d.start, done: d.done, rules, rounds });
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
        self.installed_message(s, token).map(|m| m.rules)
    }

    /// Switch `s` has written the message `token`: what it does, if that message is still its
    /// oldest.
    pub fn installed_message(&mut self, s: usize, token: u32) -> Option<Installed<A>> {
        if self.pending[s].front().is_some_and(|m| m.token == token) {
            return self.pending[s].pop_front().map(|m| Installed { kind: m.kind, round: m.round, rules: m.rules });
        }
        None
    }

    /// Every rule was forgotten (routing changed): messages on their way are void, and so is a
    /// two-phase update under way. The switches still spend the time writing them.
    pub fn forget(&mut self) {
        for p in &mut self.pending {
            p.clear();
        }
        self.batch.clear();
        self.live_held.iter_mut().for_each(|h| *h = 0);
        self.old_held.iter_mut().for_each(|h| *h = 0);
        self.free_at = 0;
        self.expiring = None;
    }

    /// The round's decisions are all in (`send` was called for every switch with rules): send
    /// what `ordered` and `two_phase` held back. Returns the version a two-phase update began
    /// (its round), and the messages in force at once (no time to write them), in order.
    pub fn end_interval(&mut self, now: Time) -> (Option<u32>, Vec<(usize, Installed<A>)>) {
        self.stats.peak_rules_total = self.stats.peak_rules_total.max(self.round_held);
        let mut at_once = Vec::new();
        match self.update {
            UpdateStrategy::Ordered => {
                // Downstream first: the top tier, then each tier below once the one above has
                // acknowledged.
                let batch = std::mem::take(&mut self.batch);
                let mut sent = now + self.channel.one_way;
                for tier in (0..=self.tiers.iter().copied().max().unwrap_or(0)).rev() {
                    let mut acked = None;
                    let tiers = &self.tiers;
                    let now_tier: Vec<&(usize, Vec<(u64, A)>)> = batch.iter().filter(|(s, _)| tiers[*s] == tier).collect();
                    for (s, rules) in now_tier {
                        let a = self.post(*s, now, sent, Kind::Write, self.round, rules.len() as u64, rules.clone(), &mut at_once);
                        acked = Some(acked.unwrap_or(a).max(a));
                    }
                    if let Some(a) = acked {
                        self.stats.tier_rounds += 1;
                        sent = a;
                    }
                }
                (None, at_once)
            }
            UpdateStrategy::TwoPhase | UpdateStrategy::PerFlow => {
                let batch = std::mem::take(&mut self.batch);
                let sent = now + self.channel.one_way;
                if let Some((flipped, round, decided)) = self.expiring {
                    // Per-flow: the old rules expire `flow_timeout` after the last packet
                    // stamped with them (no earlier than the last flip plus the timeout); the
                    // controller hears at this round and removes the rest.
                    if flipped.max(self.old_last) + self.flow_timeout <= now {
                        self.expiring = None;
                        let (removed, last_removal) = self.remove_old(now, sent, round, &mut at_once);
                        self.free_at = removed;
                        self.stats.removal_times.push(last_removal - decided);
                    }
                }
                if self.free_at > sent || self.expiring.is_some() {
                    self.stats.rounds_waited += 1;
                    return (None, at_once);
                }
                self.stats.versions += 1;
                let n = self.live_held.len();
                let mut new_held = vec![0u64; n];
                for (s, rules) in &batch {
                    new_held[*s] = rules.len() as u64;
                }
                // Per-flow: a ToR holds the new stamping rules beside the old (refined per flow).
                let per_flow = self.update == UpdateStrategy::PerFlow;
                let extra = |s: usize| if per_flow { self.stamping[s] } else { 0 };
                let old_total: u64 = self.live_held.iter().sum();
                let extra_total: u64 = (0..n).map(extra).sum();
                self.stats.peak_rules_total = self.stats.peak_rules_total.max(old_total + new_held.iter().sum::<u64>() + extra_total);
                for (s, (old, new)) in self.live_held.iter().zip(&new_held).enumerate() {
                    self.stats.peak_rules_one_switch = self.stats.peak_rules_one_switch.max(old + new + extra(s));
                }
                // (1) The new version beside the old.
                let mut staged = sent;
                for (s, rules) in batch {
                    staged = staged.max(self.post(s, now, sent, Kind::Stage, self.round, rules.len() as u64, rules, &mut at_once));
                }
                // (2) Every switch has it: the ToRs stamp packets with the new version.
                let mut flipped = staged;
                let mut last_flip = staged;
                for s in 0..n {
                    if self.stamping[s] > 0 {
                        let k = self.stamping[s];
                        self.stats.stamping_rules_written += k;
                        let acked = self.post(s, now, staged, Kind::Flip, self.round, k, Vec::new(), &mut at_once);
                        flipped = flipped.max(acked);
                        last_flip = last_flip.max(acked - self.channel.one_way);
                    }
                }
                self.old_held = std::mem::replace(&mut self.live_held, new_held);
                self.stats.flip_times.push(last_flip - now);
                if per_flow {
                    // (3) once the flows pinned to the old version are over (checked each round).
                    self.expiring = Some((last_flip, self.round, now));
                } else {
                    // (3) `drain` after the last flip is acknowledged, the old rules go.
                    let (removed, last_removal) = self.remove_old(now, flipped + self.drain, self.round, &mut at_once);
                    self.free_at = removed;
                    self.stats.removal_times.push(last_removal - now);
                }
                (Some(self.round), at_once)
            }
            _ => (None, at_once),
        }
    }

    /// Two-phase and per-flow: every switch deletes the replaced version's rules (`old_held`),
    /// sent at `sent`; version `round` is then the only one. Returns when the last
    /// acknowledgement is back and when the last switch is done.
    fn remove_old(&mut self, now: Time, sent: Time, round: u32, at_once: &mut Vec<(usize, Installed<A>)>) -> (Time, Time) {
        let mut removed = sent;
        let mut last_removal = sent;
        for s in 0..self.old_held.len() {
            let k = std::mem::take(&mut self.old_held[s]);
            self.stats.removal_rules_written += k;
            let acked = self.post(s, now, sent, Kind::Remove, round, k, Vec::new(), at_once);
            removed = removed.max(acked);
            last_removal = last_removal.max(acked - self.channel.one_way);
        }
        (removed, last_removal)
    }

    /// Send switch `s` a message of `n` rule writes at `sent` (decided at `now`) for `round`:
    /// `rules` for a write or a stage, none for a flip (`n` stamping rules) or a removal (`n`
    /// deletes). Returns when its acknowledgement is back. In force at once (`at_once`) when it
    /// takes no time. Writes and stages count in the install delays.
    #[allow(clippy::too_many_arguments)]
    fn post(
        &mut self,
        s: usize,
        now: Time,
        sent: Time,
        kind: Kind,
        round: u32,
        n: u64,
        rules: Vec<(u64, A)>,
        at_once: &mut Vec<(usize, Installed<A>)>,
    ) -> Time {
        let timed = matches!(kind, Kind::Write | Kind::Stage);
        if n > 0 {
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
        }
        let d = self.channel.send(s, sent, n);
        let mut rounds = Vec::new();
        if timed {
            rounds.push((self.stats.delays.len(), now));
            self.stats.delays.push(d.done - now);
        }
        if d.done <= now && self.pending[s].is_empty() {
            at_once.push((s, Installed { kind, round, rules }));
            return d.acked;
        }
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1);
        self.pending[s].push_back(Message { token, kind, round, start: d.start, done: d.done, rules, rounds });
        self.due.push((d.done, s as u32, token));
        d.acked
    }

    /// The summary's `load_balancer.install` object.
    pub fn summary(&self) -> serde_json::Value {
        let s = &self.stats;
        let mut d = s.delays.clone();
        d.sort_unstable();
        let ms = |t: Time| t as f64 / 1e9;
        let p = |q: f64| if d.is_empty() { 0.0 } else { ms(d[((d.len() - 1) as f64 * q).round() as usize]) };
        let mean_ms = |v: &[Time]| if v.is_empty() { 0.0 } else { v.iter().map(|&t| ms(t)).sum::<f64>() / v.len() as f64 };
        let mean = mean_ms(&d);
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
        let mut v = serde_json::json!({
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
            "update": self.update.name(),
            "peak_rules_total": s.peak_rules_total,
            "tier_rounds": s.tier_rounds,
            "versions": s.versions,
            "rounds_waited": s.rounds_waited,
            "stamping_rules_written": s.stamping_rules_written,
            "removal_rules_written": s.removal_rules_written,
            "time_to_flip_mean_ms": mean_ms(&s.flip_times),
            "time_to_flip_max_ms": s.flip_times.iter().max().map_or(0.0, |&t| ms(t)),
            "time_to_remove_old_mean_ms": mean_ms(&s.removal_times),
            "time_to_remove_old_max_ms": s.removal_times.iter().max().map_or(0.0, |&t| ms(t)),
        });
        if self.update == UpdateStrategy::PerFlow {
            v["flow_timeout_ms"] = ms(self.flow_timeout).into();
            // The run ended with an old version still held for flows pinned to it.
            v["old_version_held_at_end"] = self.expiring.is_some().into();
        }
        v
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

    /// Ordered, by hand: a ToR (s0, 3 rules), an aggregation switch (s1, 2) and a top switch
    /// (s2, 1), 2.5 ms round trip, 1000 rules/s, decided at 10 ms. The top tier is sent at
    /// 11.25 ms and in at 11.25 + 1.25 + 1 = 13.5 ms, acknowledged at 14.75; the aggregation
    /// switch's then, in at 14.75 + 1.25 + 2 = 18 ms, acknowledged at 19.25; the ToR's last, in
    /// at 19.25 + 1.25 + 3 = 23.5 ms. Unordered, the ToR's would be in at 12.5 + 3 = 15.5 ms.
    #[test]
    fn ordered_sends_each_tier_once_the_one_above_has_acknowledged() {
        let run = |update| {
            let mut r: Rewrites<u8> = Rewrites::new(2_500 * PS_PER_US, 1000.0, 1000, false, names(3)).with_update(update, 0, vec![0, 1, 2], vec![4, 0, 0]);
            r.begin_interval();
            for (s, n) in [(0, 3u64), (1, 2), (2, 1)] {
                assert!(r.send(s, 10 * PS_PER_MS, n, 0, (0..n).map(|k| (k, 1)).collect()).is_none());
            }
            let (began, at_once) = r.end_interval(10 * PS_PER_MS);
            assert!(began.is_none() && at_once.is_empty());
            let mut due = r.take_due();
            due.sort_unstable_by_key(|d| d.1);
            (due.iter().map(|d| d.0 / (PS_PER_US / 4)).collect::<Vec<_>>(), r)
        };
        let (ordered, r) = run(UpdateStrategy::Ordered);
        assert_eq!(ordered, vec![23_500 * 4, 18_000 * 4, 13_500 * 4]);
        assert_eq!((r.stats.tier_rounds, r.stats.rules_written, r.stats.messages), (3, 6, 3));
        let (unordered, _) = run(UpdateStrategy::Unordered);
        assert_eq!(unordered, vec![15_500 * 4, 14_500 * 4, 13_500 * 4]);
    }

    /// Two-phase, by hand: a ToR s0 (4 server ports) and an aggregation switch s1, 2 ms round
    /// trip, 1000 rules/s, drain 1 ms. Version 1 at 10 ms (s0 3 rules, s1 2, nothing held
    /// before): sent at 11 ms; s0's stage is in at 12 + 3 = 15 ms (acknowledged 16), s1's at 14
    /// (15). The flip goes to s0 at 16 ms: 4 stamping rules, in at 17 + 4 = 21 ms (11 ms after
    /// the round), acknowledged at 22. The removals leave at 22 + 1 = 23 ms and are in at 24 ms
    /// (nothing old to delete): 14 ms after the round; the controller is free at 25 ms. The
    /// round at 20 ms (sent 21 < 25) waits; the one at 30 ms stages version 3 beside version
    /// 1's 5 rules (peak 10, 6 on s0) and deletes them (5 deletes).
    #[test]
    fn two_phase_stages_flips_and_removes_by_hand() {
        let mut r: Rewrites<u8> =
            Rewrites::new(2 * PS_PER_MS, 1000.0, 1000, false, names(2)).with_update(UpdateStrategy::TwoPhase, PS_PER_MS, vec![0, 1], vec![4, 0]);
        let round = |r: &mut Rewrites<u8>, at: Time| {
            r.begin_interval();
            r.send(0, at, 3, 0, (0..3).map(|k| (k, 1)).collect());
            r.send(1, at, 2, 0, (0..2).map(|k| (k, 1)).collect());
            r.end_interval(at)
        };
        assert_eq!(round(&mut r, 10 * PS_PER_MS), (Some(1), vec![]));
        let due: Vec<(Time, u32)> = r.take_due().iter().map(|d| (d.0 / PS_PER_MS, d.1)).collect();
        assert_eq!(due, vec![(15, 0), (14, 1), (21, 0), (24, 0), (24, 1)]);
        assert_eq!((r.stats.flip_times.clone(), r.stats.removal_times.clone()), (vec![11 * PS_PER_MS], vec![14 * PS_PER_MS]));
        let kinds: Vec<Kind> = r.pending[0].iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec![Kind::Stage, Kind::Flip, Kind::Remove]);
        assert_eq!((r.stats.rules_written, r.stats.stamping_rules_written, r.stats.peak_rules_total), (9, 4, 5));
        assert_eq!(round(&mut r, 20 * PS_PER_MS), (None, vec![]));
        assert_eq!(r.stats.rounds_waited, 1);
        assert_eq!(round(&mut r, 30 * PS_PER_MS).0, Some(3));
        assert_eq!((r.stats.peak_rules_total, r.stats.peak_rules_one_switch, r.stats.removal_rules_written), (10, 6, 5));
        assert_eq!((r.stats.versions, r.stats.rules_written), (2, 9 + 14));
        // Table space: beside version 3's 3 rules, s0 may take 1000 - 3 - 3 more.
        assert_eq!(r.space_at(0, 3), 994);
    }

    /// Per-flow, 1 ms one way, 1000 rules/s, soft timeout 5 ms. Round 1 (10 ms) stages 3 + 2
    /// rules (sent 11 ms, s0 writing from 12 to 15, acknowledged 16), then flips s0's 4
    /// stamping rules (in at 21 ms, 11 ms after the round), holding them beside the old (peak
    /// 5 + 4 = 9; s0 3 + 4 = 7). No removal yet: at round 2 (20 ms) 21 + 5 > 20, and the round
    /// waits. A packet was last stamped with the old round at 22 ms: at round 3 (30 ms)
    /// 22 + 5 <= 30, so the old rules go, sent at 31 ms, in at 32 ms (22 ms after round 1); the
    /// round still waits for the acknowledgement (33 ms). Round 4 starts the next version.
    #[test]
    fn per_flow_removes_the_old_rules_once_their_flows_have_idled() {
        let mut r: Rewrites<u8> = Rewrites::new(2 * PS_PER_MS, 1000.0, 1000, false, names(2))
            .with_update(UpdateStrategy::PerFlow, 0, vec![0, 1], vec![4, 0])
            .with_flow_timeout(5 * PS_PER_MS);
        let round = |r: &mut Rewrites<u8>, at: Time| {
            r.begin_interval();
            r.send(0, at, 3, 0, (0..3).map(|k| (k, 1)).collect());
            r.send(1, at, 2, 0, (0..2).map(|k| (k, 1)).collect());
            r.end_interval(at)
        };
        assert_eq!(round(&mut r, 10 * PS_PER_MS).0, Some(1));
        assert_eq!((r.stats.peak_rules_total, r.stats.peak_rules_one_switch), (9, 7));
        assert_eq!(r.stats.flip_times, vec![11 * PS_PER_MS]);
        assert_eq!(round(&mut r, 20 * PS_PER_MS).0, None);
        assert!(r.stats.removal_times.is_empty());
        r.old_last = 22 * PS_PER_MS;
        assert_eq!(round(&mut r, 30 * PS_PER_MS).0, None);
        assert_eq!(r.stats.removal_times, vec![22 * PS_PER_MS]);
        let kinds: Vec<(Kind, u32)> = r.pending[0].iter().map(|m| (m.kind, m.round)).collect();
        assert_eq!(kinds, vec![(Kind::Stage, 1), (Kind::Flip, 1), (Kind::Remove, 1)]);
        assert_eq!(r.stats.rounds_waited, 2);
        assert_eq!(round(&mut r, 40 * PS_PER_MS).0, Some(4));
    }

    /// Two-phase through an instant channel: stage, flip and removal are all in force at the
    /// round, in that order.
    #[test]
    fn two_phase_through_an_instant_channel_is_in_force_at_once() {
        let mut r: Rewrites<u8> = Rewrites::new(0, 1e15, 1000, false, names(1)).with_update(UpdateStrategy::TwoPhase, 0, vec![0], vec![2]);
        r.begin_interval();
        r.send(0, 5, 1, 0, vec![(7, 1)]);
        let (began, at_once) = r.end_interval(5);
        assert_eq!(began, Some(1));
        assert_eq!(at_once.iter().map(|m| m.1.kind).collect::<Vec<_>>(), vec![Kind::Stage, Kind::Flip, Kind::Remove]);
        assert!(r.take_due().is_empty());
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
