//! A VM migration's new mapping pushed to the agents as versioned rules through the control
//! channel (issue 38; docs/updates.md, "The VM migration through the channel").
//!
//! VL2 keeps the AA → LA mapping in the agent of each sending server: the agent "intercepts"
//! every packet and tunnels it to the LA of the destination's ToR (VL2 §4.2.1, §4.3), and the ToR
//! delivers by the inner header. So the mapping is a rule at each sending agent, not at the
//! switches, and that is where this model writes it. With `[directory] channel = true`, when a
//! migration's update commits, the directory acts as the controller of `[convergence] mode =
//! "controller"`: it sends every agent that holds a mapping for the AA the new rule, over a
//! channel of `latency` round trip, written at `rule_rate` ([`Channel`]; one rule per cache
//! entry), under the scenario's `update` strategy:
//!
//! - `unordered`: each agent maps the AA anew once its message is written.
//! - `ordered`: the same, in one round. A mapping has nothing downstream of it (the destination
//!   ToR delivers by the inner header, whatever the sender believed), so the dependency order
//!   has a single round.
//! - `two_phase` (Frenetic's per-packet consistency, seed 004 L5181-L5207): every agent writes
//!   the new version's rule beside the old; once the controller has every acknowledgement, it
//!   tells each agent to stamp new packets with the new version (one rule), and `drain` after the
//!   last flip is acknowledged it removes the old rules.
//! - `per_flow` (L5226-L5270): as two-phase, but at its flip an agent keeps each flow direction
//!   that sent within `flow_timeout` on the old mapping until it has been idle that long.
//!
//! **Table space** (`table_size`) is enforced at each agent, whose table holds one mapping rule
//! per cache entry with a mapping. A message that would overfill it (in place: an agent already
//! over its table; staged: the agent's rules plus the new version's) is refused when it
//! arrives, as an OpenFlow switch answers "table full". The agent then drops its mapping for the
//! AA, and its next packet toward it misses the cache and waits for a directory lookup (VL2
//! §4.2.1: the agent asks the directory on a cache miss), answered with the committed mapping.
//! Refusals are counted per agent.
//!
//! A packet is encapsulated by one rule, at its agent, so no packet mixes versions under any
//! strategy. What the strategies change is how long senders keep sending to the old location.
//! With the channel on, ToRs do not report misdelivered packets: the push is how agents learn.

use crate::control::channel::Channel;
use crate::control::UpdateStrategy;
use crate::units::Time;

/// How far one migration's push has got.
#[derive(Clone, Debug, Default)]
pub struct Push {
    /// The migration (index into the directory's moves) and where its AA went.
    pub mv: u32,
    pub to: u32,
    /// Per agent written to: the agent (a server) and its cache entries for the AA.
    pub targets: Vec<(u32, Vec<u32>)>,
    /// When the update committed and the controller sent its first messages.
    pub sent: Time,
    /// Two-phase and per-flow: targets whose staged rules are written.
    pub staged: usize,
    /// Targets whose mapping (or stamping rule) is the new one.
    pub flipped: usize,
    /// Every target on the new mapping (the last flip, or the last write in place).
    pub completed: Option<Time>,
    /// Two-phase: the old rules are removed.
    pub removed: Option<Time>,
    pub rules_written: u64,
    /// The most rules for this AA the agents held at once, summed over agents.
    pub peak_rules: u64,
    /// Rules refused for want of table space, and the agents that refused them.
    pub rules_refused: u64,
    pub agents_refused: u64,
    /// Per-flow: flow directions kept on the old mapping at a flip, and the last packet one sent.
    pub flows_kept: u64,
    pub last_old_send: Option<Time>,
}

/// A flow direction per-flow consistency keeps on the old mapping.
#[derive(Clone, Copy, Debug)]
pub struct Pin {
    pub server: u32,
    pub last: Time,
    pub push: u32,
}

/// What the simulator must schedule for a push: (time, push, target, phase): phase 0 a write
/// in place or a staged write, 1 a flip.
pub type Due = (Time, u32, u32, u8);

pub struct Pushes {
    pub strategy: UpdateStrategy,
    channel: Channel,
    drain: Time,
    pub flow_timeout: Time,
    /// Mapping rules an agent's table holds.
    pub table_size: u64,
    pub pushes: Vec<Push>,
    /// Per agent (server): rules refused for want of table space, and the messages refused.
    pub refused: Vec<(u64, u64)>,
}

impl Pushes {
    pub fn new(c: &crate::control::Settings, agents: usize) -> Pushes {
        Pushes {
            strategy: c.update,
            channel: Channel::new(c.latency, c.rule_rate, agents),
            drain: c.drain,
            flow_timeout: c.flow_timeout,
            table_size: c.table_size,
            pushes: Vec::new(),
            refused: vec![(0, 0); agents],
        }
    }

    /// Whether push `i`'s message to an agent holding `held` mapping rules fits its table: in
    /// place the `n` rules replace the agent's own, staged they go beside them.
    pub fn fits(&self, held: u64, n: u64) -> bool {
        let extra = if self.strategy.tagged() { n } else { 0 };
        held + extra <= self.table_size
    }

    /// Push `i`'s message of `n` rules to `agent` was refused.
    pub fn refuse(&mut self, i: u32, agent: u32, n: u64) {
        let p = &mut self.pushes[i as usize];
        p.rules_refused += n;
        p.agents_refused += 1;
        let r = &mut self.refused[agent as usize];
        r.0 += n;
        r.1 += 1;
    }

    /// Migration `mv`'s update committed at `now` (AA now maps to server `to`): send each target
    /// (agent, its entries for the AA) its rules. Returns the push's index and the writes to
    /// schedule.
    pub fn start(&mut self, now: Time, mv: u32, to: u32, targets: Vec<(u32, Vec<u32>)>) -> (u32, Vec<Due>) {
        let i = self.pushes.len() as u32;
        let mut due = Vec::with_capacity(targets.len());
        let mut p = Push { mv, to, sent: now, ..Push::default() };
        for (t, (agent, entries)) in targets.iter().enumerate() {
            let n = entries.len() as u64;
            p.rules_written += n;
            let d = self.channel.send(*agent as usize, now, n);
            due.push((d.done, i, t as u32, 0));
        }
        // In place, an agent holds one rule per entry throughout; staged, old and new.
        let held: u64 = targets.iter().map(|t| t.1.len() as u64).sum();
        p.peak_rules = if self.strategy.tagged() { 2 * held } else { held };
        if targets.is_empty() {
            p.completed = Some(now);
        }
        p.targets = targets;
        self.pushes.push(p);
        (i, due)
    }

    /// A staged write is in (two-phase, per-flow). When it is the last, the controller hears one
    /// way later and sends every target its flip (one stamping rule): the flips to schedule.
    pub fn staged(&mut self, i: u32, now: Time) -> Vec<Due> {
        let p = &mut self.pushes[i as usize];
        p.staged += 1;
        if p.staged < p.targets.len() {
            return Vec::new();
        }
        let sent = now + self.channel.one_way;
        let mut due = Vec::with_capacity(p.targets.len());
        for (t, (agent, _)) in p.targets.iter().enumerate() {
            p.rules_written += 1;
            let d = self.channel.send(*agent as usize, sent, 1);
            due.push((d.done, i, t as u32, 1));
        }
        due
    }

    /// A target is on the new mapping at `now`.
    pub fn flipped(&mut self, i: u32, now: Time) {
        let p = &mut self.pushes[i as usize];
        p.flipped += 1;
        if p.flipped == p.targets.len() {
            p.completed = Some(now);
            if self.strategy == UpdateStrategy::TwoPhase {
                // The last acknowledgement, the drain, then the removal written at each agent.
                let n = p.targets.iter().map(|t| t.1.len() as u64).max().unwrap_or(0);
                p.removed = Some(now + 2 * self.channel.one_way + self.drain + self.channel.write_time(n));
                p.rules_written += p.targets.iter().map(|t| t.1.len() as u64).sum::<u64>();
            }
        }
    }

    /// Per-flow: when the old rules go: the last flow kept on them has idled `flow_timeout`, the
    /// controller hears one way later and removes them.
    pub fn per_flow_removed(&self, p: &Push) -> Option<Time> {
        let done = p.completed?;
        let last = p.last_old_send.map_or(done, |t| (t + self.flow_timeout).max(done));
        let n = p.targets.iter().map(|t| t.1.len() as u64).max().unwrap_or(0);
        Some(last + 2 * self.channel.one_way + self.channel.write_time(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{PS_PER_MS, PS_PER_US};

    fn settings(update: UpdateStrategy) -> crate::control::Settings {
        crate::control::Settings {
            update,
            latency: 2_500 * PS_PER_US,
            rule_rate: 1000.0,
            table_size: 1000,
            drain: PS_PER_MS,
            flow_timeout: 2 * PS_PER_MS,
            coalesce: false,
        }
    }

    /// By hand, unordered: committed at 10 ms, an agent with one entry has it written at
    /// 10 + 1.25 + 1 = 12.25 ms; an agent with two entries at 13.25 ms.
    #[test]
    fn in_place_writes_take_one_way_plus_rules_over_rate() {
        let mut p = Pushes::new(&settings(UpdateStrategy::Unordered), 4);
        let (i, due) = p.start(10 * PS_PER_MS, 0, 3, vec![(1, vec![7]), (2, vec![8, 9])]);
        assert_eq!(due, vec![(12_250 * PS_PER_US, i, 0, 0), (13_250 * PS_PER_US, i, 1, 0)]);
        assert_eq!((p.pushes[0].rules_written, p.pushes[0].peak_rules), (3, 3));
    }

    /// Tables of 3 rules: in place, an agent holding 3 mappings takes the new one (it replaces
    /// the old), one holding 4 refuses; staged, 2 held plus 1 new fits, 3 plus 1 does not.
    /// Refusals are counted per push and per agent.
    #[test]
    fn a_message_that_overfills_the_agents_table_is_refused() {
        let mut s = settings(UpdateStrategy::Unordered);
        s.table_size = 3;
        let p = Pushes::new(&s, 4);
        assert!(p.fits(3, 1) && !p.fits(4, 1));
        s.update = UpdateStrategy::TwoPhase;
        let mut p = Pushes::new(&s, 4);
        assert!(p.fits(2, 1) && !p.fits(3, 1));
        p.start(0, 0, 3, vec![(1, vec![7]), (2, vec![8, 9])]);
        p.refuse(0, 2, 2);
        assert_eq!((p.pushes[0].rules_refused, p.pushes[0].agents_refused), (2, 1));
        assert_eq!(p.refused, vec![(0, 0), (0, 0), (2, 1), (0, 0)]);
    }

    /// By hand, two-phase: staged at 12.25 and 13.25 ms (as above); the controller hears of the
    /// last at 14.5 ms and each flip (one rule) is in at 14.5 + 1.25 + 1 = 16.75 ms. The old
    /// rules go after the last acknowledgement (18 ms), the 1 ms drain and one way (20.25 ms),
    /// written in 2 ms at the busiest agent: 22.25 ms. Rules: 3 staged, 2 flips, 3 removed; peak
    /// old + new, 6.
    #[test]
    fn two_phase_stages_then_flips_then_removes() {
        let mut p = Pushes::new(&settings(UpdateStrategy::TwoPhase), 4);
        p.start(10 * PS_PER_MS, 0, 3, vec![(1, vec![7]), (2, vec![8, 9])]);
        assert!(p.staged(0, 12_250 * PS_PER_US).is_empty());
        let flips = p.staged(0, 13_250 * PS_PER_US);
        assert_eq!(flips, vec![(16_750 * PS_PER_US, 0, 0, 1), (16_750 * PS_PER_US, 0, 1, 1)]);
        p.flipped(0, 16_750 * PS_PER_US);
        assert_eq!(p.pushes[0].completed, None);
        p.flipped(0, 16_750 * PS_PER_US);
        assert_eq!(p.pushes[0].completed, Some(16_750 * PS_PER_US));
        assert_eq!(p.pushes[0].removed, Some(22_250 * PS_PER_US));
        assert_eq!((p.pushes[0].rules_written, p.pushes[0].peak_rules), (8, 6));
    }
}
