//! The controller: computes each routing version, plans the messages of its update by the
//! scenario's strategy (`strategy.rs`), and keeps the record: rules written, table space, the
//! update's times, packets forwarded by a mix of versions (`consistency.rs`).
//!
//! An update is planned whole when the controller learns of a change (the channel's times are
//! fixed, `channel.rs`); its steps run as events (`sim/failures.rs`). The controller hears of a
//! change one way after the switch at the changed link detects it, and starts sending then.
//! Under `unordered` and `ordered` a later change starts its own update at once (a switch
//! writes messages in the order sent, and a newer version's rule is never overwritten by an
//! older one); under `two_phase` and `per_flow` updates run one at a time (Frenetic's versions are
//! sequential, seed 004 L5188-L5207): a change that comes during one waits for its old rules
//! to be removed, and the changes that waited share one version.
//!
//! Table space is enforced: a switch whose table would need more than `table_size` rules for
//! an update refuses it (an OpenFlow switch answers "table full") and keeps its old rules. The
//! summary reports every refusal; a two-phase update with a refusal never flips.
//!
//! Under `per_flow`, the old rules go when the last flow on them has been idle for
//! `flow_timeout`, a time known only as packets pass: the controller checks then (`Expire`),
//! and plans the removal when it finds every old flow over.

use super::channel::Channel;
use super::consistency::{Agreed, VersionLog};
use super::flow_pins::FlowPins;
use super::ordered;
use super::rules::SwitchRules;
use super::UpdateStrategy;
use crate::error::{bad, Result};
use crate::packet::Packet;
use crate::routing::{Installed, LinkState, Routes, Tables};
use crate::topology::Topology;
use crate::units::{seconds, Time};

/// One step of an update, run at its time.
#[derive(Clone, Debug)]
enum Step {
    /// Switch `s` has written version `v`'s entries (`None`: its whole row), holding `during`
    /// rules at the most while it did and `after` now.
    Write { s: usize, v: u8, entries: Option<Vec<u32>>, during: u64, after: u64 },
    /// Two-phase: switch `s` holds the new version beside the old one (`during` rules).
    Stage { s: usize, during: u64 },
    /// Two-phase: ingress switch `s` stamps packets with version `v`. Per-flow: new flows;
    /// the new stamping rules go beside the old ones (`add` rules more).
    Flip { s: usize, v: u8, add: u64 },
    /// Per-flow: update `u`'s flows on the old version may all be over; if not, check again
    /// when they can be.
    Expire { u: usize },
    /// Two-phase: switch `s` starts removing the old rules; old-tagged packets find none.
    RemoveStart { s: usize },
    /// Two-phase: switch `s` holds the new version only.
    RemoveDone { s: usize, after: u64 },
    /// A point in update `u`'s life.
    Mark { u: usize, what: Milestone },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Milestone {
    /// Every switch has the new rules in (beside the old under two-phase).
    Installed,
    /// New packets are forwarded by the new version everywhere (the last write, or flip).
    Completed,
    /// No switch holds the old version's rules any more.
    Removed,
}

/// What one update did, for the summary.
#[derive(Clone, Debug, Default)]
pub struct UpdateRecord {
    pub version: u8,
    /// The `[[failures]]` changes (indices into the resolved changes) it carries.
    pub changes: Vec<usize>,
    /// When the change was detected (the controller starts one way later).
    pub detected: Time,
    /// Rules written over all switches (two-phase: staging, flips and removal).
    pub rules_written: u64,
    /// Rules written by the switch that wrote the most, and its name (the first such).
    pub most_rules_one_switch: u64,
    pub busiest_switch: String,
    /// Switches that wrote anything.
    pub switches: u32,
    /// Rounds (ordered), 1 otherwise.
    pub rounds: u32,
    /// Switches that refused the update for lack of table space.
    pub refused: u32,
    /// Rules of the version before and of this one, over all switches (stamping rules apart).
    pub rules_old: u64,
    pub rules_new: u64,
    pub installed: Option<Time>,
    pub completed: Option<Time>,
    pub removed: Option<Time>,
}

/// A refusal for lack of table space.
#[derive(Clone, Debug)]
pub struct Overflow {
    pub switch: String,
    pub version: u8,
    pub at: Time,
    pub needed: u64,
}

/// How a switch forwards a packet under a two-phase update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// By the rows installed now.
    Current,
    /// By the old version's rows, kept beside them.
    Old,
    /// The packet's version has no rules here any more: dropped.
    Stale,
}

pub struct Controller {
    pub strategy: UpdateStrategy,
    channel: Channel,
    table_size: u64,
    drain: Time,
    n_hosts: usize,
    per_row: usize,
    /// Servers at each switch (by index): host entries, and ingress stamping rules under
    /// two-phase.
    hosts: Vec<u64>,
    /// Every switch's rules under the latest version.
    latest_rules: Vec<SwitchRules>,
    log: VersionLog,
    /// Tables of the versions a planned step still needs, and how many steps do.
    tables: Vec<Option<(Tables, u32)>>,
    /// Unordered and ordered: the version each entry (switch index x `per_row` + entry) was
    /// written by.
    entry_version: Vec<u8>,
    /// Two-phase: the version of the rows installed in `Routes`, the old rows kept beside them
    /// and their version, which switches have started removing them, and what each ingress
    /// switch stamps.
    main_version: u8,
    pub old: Option<Installed>,
    old_version: u8,
    old_gone: Vec<bool>,
    ingress: Vec<u8>,
    /// Two-phase: an update is between its start and its old rules' removal; changes waiting.
    busy: bool,
    pending: Vec<(usize, Time)>,
    /// Two-phase: an update some switch refused never flips, and holds the rest up.
    stuck: bool,
    /// Per-flow: the soft timeout; each flow's (flow id, source host) version and last packet
    /// at its ingress switch, and whether it was counted as kept on the old version; when a
    /// packet was last stamped with the old version; each switch's rules to remove and to keep
    /// once the old flows are over.
    flow_timeout: Time,
    pins: FlowPins,
    removal: Vec<(u64, u64)>,
    /// Steps planned while running one (per-flow's checks and removal), to schedule.
    pub fresh: Vec<(Time, u32)>,
    steps: Vec<Step>,
    /// Steps planned whose time has not come.
    steps_left: usize,
    occupancy: Vec<u64>,
    peak: Vec<u64>,
    total: u64,
    peak_total: u64,
    initial_total: u64,
    initial_max: u64,
    pub updates: Vec<UpdateRecord>,
    pub overflows: Vec<Overflow>,
    /// Packets processed by a mix of old and new rules.
    pub mixed: u64,
    /// Two-phase: packets whose version's rules were removed before they left.
    pub stale: u64,
}

impl Controller {
    /// The controller of a fabric whose switches start with `routes` (built from `state`), for
    /// `routing_changes` routing changes after time 0. Errors: the starting rules do not fit
    /// `table_size`, or too many changes for the version byte.
    pub fn new(t: &Topology, routes: &mut Routes, state: &LinkState, spec: &super::Settings, routing_changes: usize) -> Result<Controller> {
        if routing_changes > super::MAX_VERSIONS {
            return Err(bad(
                "failures",
                format!(
                    "mode = \"controller\" follows at most {} routing changes (each failure, repair or rate change after time 0 is one); this scenario has {routing_changes}",
                    super::MAX_VERSIONS
                ),
            ));
        }
        let strategy = spec.update;
        let n_sw = t.n_switches();
        let hosts: Vec<u64> = (0..n_sw)
            .map(|s| {
                let node = (t.n_hosts + s) as u32;
                t.host_tor.iter().filter(|&&h| h == node).count() as u64
            })
            .collect();
        let latest = routes.tables(t, state);
        let latest_rules: Vec<SwitchRules> = (0..n_sw).map(|s| SwitchRules::of(&latest, routes, s, hosts[s])).collect();
        let stamps = |s: usize| if strategy.tagged() { hosts[s] } else { 0 };
        let occupancy: Vec<u64> = (0..n_sw).map(|s| latest_rules[s].total() + stamps(s)).collect();
        let table_size = spec.table_size;
        if let Some(s) = (0..n_sw).find(|&s| occupancy[s] > table_size) {
            let most = occupancy.iter().max().unwrap();
            return Err(bad(
                "convergence.table_size",
                format!(
                    "{} needs {} rules for its starting routes, more than the {table_size} its table holds; raise table_size to at least {most} (the most any switch needs){}",
                    t.nodes[t.n_hosts + s].name,
                    occupancy[s],
                    if strategy.tagged() { ", and to twice that for two-phase and per-flow updates" } else { "" }
                ),
            ));
        }
        let per_row = latest.entries_per_row();
        let total = occupancy.iter().sum();
        Ok(Controller {
            strategy,
            channel: Channel::new(spec.latency, spec.rule_rate, n_sw),
            table_size,
            drain: spec.drain,
            n_hosts: t.n_hosts,
            per_row,
            hosts,
            latest_rules,
            log: VersionLog::new(),
            tables: vec![None],
            entry_version: vec![0; n_sw * per_row],
            main_version: 0,
            old: None,
            old_version: 0,
            old_gone: vec![false; n_sw],
            ingress: vec![0; n_sw],
            busy: false,
            pending: Vec::new(),
            stuck: false,
            flow_timeout: spec.flow_timeout,
            pins: FlowPins::new((spec.update == UpdateStrategy::PerFlow).then_some(spec.flow_timeout)),
            removal: Vec::new(),
            fresh: Vec::new(),
            steps: Vec::new(),
            steps_left: 0,
            peak: occupancy.clone(),
            initial_max: occupancy.iter().copied().max().unwrap_or(0),
            occupancy,
            total,
            peak_total: total,
            initial_total: total,
            updates: Vec::new(),
            overflows: Vec::new(),
            mixed: 0,
            stale: 0,
        })
    }

    /// Whether every update is done (nothing planned is still to come, nothing waits).
    pub fn idle(&self) -> bool {
        self.steps_left == 0 && self.pending.is_empty() && !self.stuck
    }

    /// The controller learns (at `now`) of change `change`, routing's view being `state`: plan
    /// its update. Returns the steps to schedule: (time, step index).
    pub fn on_change(&mut self, t: &Topology, routes: &mut Routes, state: &LinkState, change: usize, now: Time) -> Vec<(Time, u32)> {
        if self.strategy.tagged() && self.busy {
            self.pending.push((change, now));
            return Vec::new();
        }
        self.plan(t, routes, state, vec![change], now, now + self.channel.one_way)
    }

    /// Plan one update for `changes`, detected at `detected`, its first messages sent at `sent`.
    fn plan(&mut self, t: &Topology, routes: &mut Routes, state: &LinkState, changes: Vec<usize>, detected: Time, sent: Time) -> Vec<(Time, u32)> {
        let new = routes.tables(t, state);
        let n_sw = t.n_switches();
        let new_rules: Vec<SwitchRules> = (0..n_sw).map(|s| SwitchRules::of(&new, routes, s, self.hosts[s])).collect();
        let changed: Vec<Vec<u32>> = (0..n_sw).map(|s| self.latest_rules[s].changed_entries(&new_rules[s])).collect();
        let per_row = self.per_row;
        self.log.push(changed.iter().enumerate().flat_map(|(s, es)| es.iter().map(move |&e| (s * per_row) as u32 + e)).collect());
        let v = self.log.latest();
        let u = self.updates.len();
        self.updates.push(UpdateRecord { version: v, changes, detected, rounds: 1, ..Default::default() });
        let mut out = Vec::new();
        let old_rules = std::mem::take(&mut self.latest_rules);
        self.updates[u].rules_old = old_rules.iter().map(|r| r.total()).sum();
        self.updates[u].rules_new = new_rules.iter().map(|r| r.total()).sum();
        let mut per_switch = vec![0u64; n_sw];
        let (installed, completed, removed, uses) = match self.strategy {
            UpdateStrategy::Unordered => {
                let mut last = sent;
                let mut uses = 0;
                for s in 0..n_sw {
                    let ops = old_rules[s].write_ops(&new_rules[s]);
                    if ops == 0 {
                        continue;
                    }
                    let during = old_rules[s].in_place_peak(&new_rules[s]);
                    let d = self.channel.send(s, sent, ops);
                    if self.refuses(t, s, v, during, d.start) {
                        continue;
                    }
                    per_switch[s] += ops;
                    out.push((d.done, self.step(Step::Write { s, v, entries: None, during, after: new_rules[s].total() })));
                    uses += 1;
                    last = last.max(d.done);
                }
                (last, last, Some(last), uses)
            }
            UpdateStrategy::Ordered => {
                let rounds = ordered::rounds(t, state, &changed);
                let last_round = rounds.iter().flatten().copied().max().unwrap_or(0);
                let mut at = sent;
                let mut last = sent;
                let mut uses = 0;
                // What each switch holds as its rounds go: entries and groups.
                let mut entries: Vec<u64> = old_rules.iter().map(|r| r.entries()).collect();
                let mut groups: Vec<Vec<u64>> = vec![Vec::new(); n_sw];
                let mut refused = vec![false; n_sw];
                let mut rounds_run = 0;
                for r in 1..=last_round {
                    let mut acked = at;
                    for s in 0..n_sw {
                        let mine: Vec<u32> = changed[s].iter().zip(&rounds[s]).filter(|p| *p.1 == r).map(|p| *p.0).collect();
                        if mine.is_empty() || refused[s] {
                            continue;
                        }
                        let (old, new) = (&old_rules[s], &new_rules[s]);
                        let mut added = 0;
                        for &e in &mine {
                            if let Some(g) = new.entry(e as usize) {
                                if !old.has_group(g) && !groups[s].contains(&g) {
                                    groups[s].push(g);
                                    added += 1;
                                }
                            }
                            entries[s] = entries[s] + new.entry(e as usize).is_some() as u64 - old.entry(e as usize).is_some() as u64;
                        }
                        let ops = mine.len() as u64 + added;
                        let held = entries[s] + old.groups() + groups[s].len() as u64 + old.hosts;
                        let d = self.channel.send(s, at, ops);
                        if self.refuses(t, s, v, held, d.start) {
                            refused[s] = true;
                            continue;
                        }
                        per_switch[s] += ops;
                        out.push((d.done, self.step(Step::Write { s, v, entries: Some(mine), during: held, after: held })));
                        uses += 1;
                        acked = acked.max(d.acked);
                        last = last.max(d.done);
                    }
                    if acked > at {
                        rounds_run += 1;
                    }
                    at = acked;
                }
                // Then the groups nothing points at any more go.
                let mut removed = last;
                for s in 0..n_sw {
                    let drop = new_rules[s].groups_added(&old_rules[s]);
                    if drop == 0 || refused[s] || changed[s].is_empty() {
                        continue;
                    }
                    let d = self.channel.send(s, at, drop);
                    per_switch[s] += drop;
                    let after = new_rules[s].total();
                    out.push((d.done, self.step(Step::Write { s, v, entries: Some(Vec::new()), during: after, after })));
                    removed = removed.max(d.done);
                }
                self.updates[u].rounds = rounds_run.max(1);
                (last, last, Some(removed), uses)
            }
            UpdateStrategy::TwoPhase | UpdateStrategy::PerFlow => {
                self.busy = true;
                let mut acked = sent;
                let mut installed = sent;
                let mut refused = false;
                for s in 0..n_sw {
                    let ops = new_rules[s].total();
                    let during = self.occupancy[s] + ops;
                    let d = self.channel.send(s, sent, ops);
                    if self.refuses(t, s, v, during, d.start) {
                        refused = true;
                        continue;
                    }
                    per_switch[s] += ops;
                    out.push((d.done, self.step(Step::Stage { s, during })));
                    acked = acked.max(d.acked);
                    installed = installed.max(d.done);
                }
                if refused {
                    // The controller never hears from every switch: no flip. The update stays
                    // open, and later changes wait behind it.
                    self.stuck = true;
                    self.latest_rules = new_rules;
                    self.record(t, u, &per_switch);
                    return out;
                }
                let per_flow = self.strategy == UpdateStrategy::PerFlow;
                let mut flipped_acked = acked;
                let mut completed = acked;
                for (s, written) in per_switch.iter_mut().enumerate() {
                    let stamps = self.hosts[s];
                    if stamps == 0 {
                        continue;
                    }
                    let d = self.channel.send(s, acked, stamps);
                    *written += stamps;
                    let add = if per_flow { stamps } else { 0 };
                    out.push((d.done, self.step(Step::Flip { s, v, add })));
                    flipped_acked = flipped_acked.max(d.acked);
                    completed = completed.max(d.done);
                }
                if per_flow {
                    // The old rules go once every flow on them is over: checked from the last
                    // flip on (the earliest the last old-stamped flow can time out).
                    self.removal = (0..n_sw).map(|s| (old_rules[s].total(), new_rules[s].total() + self.hosts[s])).collect();
                    out.push((completed + self.flow_timeout, self.step(Step::Expire { u })));
                    for (s, n) in self.removal.iter().enumerate() {
                        per_switch[s] += n.0;
                    }
                    self.keep_tables(v, new, 1);
                    self.latest_rules = new_rules;
                    self.record(t, u, &per_switch);
                    for (at, what) in [(installed, Milestone::Installed), (completed, Milestone::Completed)] {
                        out.push((at, self.step(Step::Mark { u, what })));
                    }
                    return out;
                }
                let mut removed = completed;
                let start_removing = flipped_acked + self.drain;
                for s in 0..n_sw {
                    let ops = old_rules[s].total();
                    let d = self.channel.send(s, start_removing, ops);
                    per_switch[s] += ops;
                    out.push((d.start, self.step(Step::RemoveStart { s })));
                    out.push((d.done, self.step(Step::RemoveDone { s, after: new_rules[s].total() + self.hosts[s] })));
                    removed = removed.max(d.done);
                }
                (installed, completed, Some(removed), 1)
            }
        };
        self.keep_tables(v, new, uses);
        self.latest_rules = new_rules;
        self.record(t, u, &per_switch);
        for (at, what) in [(installed, Milestone::Installed), (completed, Milestone::Completed)] {
            out.push((at, self.step(Step::Mark { u, what })));
        }
        if let Some(removed) = removed {
            out.push((removed, self.step(Step::Mark { u, what: Milestone::Removed })));
        }
        out
    }

    /// Per-flow: the old version's rules (`removal`) go, sent at `sent`: steps to schedule.
    fn plan_removal(&mut self, u: usize, sent: Time) {
        let mut removed = sent;
        for s in 0..self.removal.len() {
            let (ops, after) = self.removal[s];
            let d = self.channel.send(s, sent, ops);
            let i = self.step(Step::RemoveStart { s });
            self.fresh.push((d.start, i));
            let i = self.step(Step::RemoveDone { s, after });
            self.fresh.push((d.done, i));
            removed = removed.max(d.done);
        }
        let i = self.step(Step::Mark { u, what: Milestone::Removed });
        self.fresh.push((removed, i));
    }

    fn record(&mut self, t: &Topology, u: usize, per_switch: &[u64]) {
        let r = &mut self.updates[u];
        r.rules_written = per_switch.iter().sum();
        r.most_rules_one_switch = per_switch.iter().copied().max().unwrap_or(0);
        if let Some(s) = per_switch.iter().position(|&n| n == r.most_rules_one_switch && n > 0) {
            r.busiest_switch = t.nodes[self.n_hosts + s].name.clone();
        }
        r.switches = per_switch.iter().filter(|&&n| n > 0).count() as u32;
    }

    /// Keep version `v`'s tables for the `uses` steps that install from them.
    fn keep_tables(&mut self, v: u8, tables: Tables, uses: u32) {
        while self.tables.len() <= v as usize {
            self.tables.push(None);
        }
        if uses > 0 {
            self.tables[v as usize] = Some((tables, uses));
        }
    }

    /// Whether switch `s` refuses version `v` for lack of space (needing `needed` rules at
    /// `at`); recorded if so.
    fn refuses(&mut self, t: &Topology, s: usize, v: u8, needed: u64, at: Time) -> bool {
        if needed <= self.table_size {
            return false;
        }
        self.overflows.push(Overflow { switch: t.nodes[self.n_hosts + s].name.clone(), version: v, at, needed });
        let u = self.updates.len() - 1;
        self.updates[u].refused += 1;
        true
    }

    fn step(&mut self, step: Step) -> u32 {
        self.steps.push(step);
        self.steps_left += 1;
        (self.steps.len() - 1) as u32
    }

    fn used_tables(&mut self, v: u8) {
        let slot = &mut self.tables[v as usize];
        let (_, left) = slot.as_mut().expect("kept until its last step");
        *left -= 1;
        if *left == 0 {
            *slot = None;
        }
    }

    fn hold(&mut self, s: usize, during: u64, after: u64) {
        self.peak[s] = self.peak[s].max(during);
        self.peak_total = self.peak_total.max(self.total - self.occupancy[s] + during);
        self.total = self.total - self.occupancy[s] + after;
        self.occupancy[s] = after;
    }

    /// Run step `i` at `now`. Returns the changes whose update has completed (new packets
    /// forwarded by it everywhere), and whether waiting changes should now be planned.
    pub fn run_step(&mut self, i: u32, routes: &mut Routes, now: Time) -> (Vec<usize>, bool) {
        self.steps_left -= 1;
        let step = std::mem::replace(&mut self.steps[i as usize], Step::Mark { u: usize::MAX, what: Milestone::Installed });
        let node = |s: usize| (self.n_hosts + s) as u32;
        match step {
            Step::Write { s, v, entries, during, after } => {
                let per_row = self.per_row;
                let row = s * per_row..(s + 1) * per_row;
                if let Some((tables, _)) = &self.tables[v as usize] {
                    match &entries {
                        None => {
                            if self.entry_version[row.clone()].iter().any(|&w| v > w) {
                                routes.install(node(s), tables);
                                self.entry_version[row].iter_mut().for_each(|w| *w = (*w).max(v));
                            }
                        }
                        Some(list) => {
                            for &e in list {
                                let slot = s * per_row + e as usize;
                                if v > self.entry_version[slot] {
                                    routes.install_entry(node(s), e as usize, tables);
                                    self.entry_version[slot] = v;
                                }
                            }
                        }
                    }
                }
                if entries.as_ref().is_none_or(|l| !l.is_empty()) {
                    self.used_tables(v);
                }
                self.hold(s, during, after);
            }
            Step::Stage { s, during } => self.hold(s, during, during),
            Step::Flip { s, v, add } => {
                if self.main_version != v {
                    self.old = Some(routes.snapshot());
                    self.old_version = self.main_version;
                    self.old_gone.iter_mut().for_each(|g| *g = false);
                    let tables = &self.tables[v as usize].as_ref().expect("kept until the first flip").0;
                    for s in 0..self.occupancy.len() {
                        routes.install(node(s), tables);
                    }
                    self.used_tables(v);
                    self.main_version = v;
                }
                self.ingress[s] = v;
                if add > 0 {
                    let held = self.occupancy[s] + add;
                    self.hold(s, held, held);
                }
            }
            Step::Expire { u } => {
                // The last old-stamped packet's rule times out `flow_timeout` after it; the
                // controller hears one way later (a flow-removed message) and removes the rest.
                let expires = self.pins.old_last + self.flow_timeout;
                if expires > now {
                    let i = self.step(Step::Expire { u });
                    self.fresh.push((expires, i));
                } else {
                    // Checks run at the earliest all could have expired (the last flip plus the
                    // timeout, or the last old packet plus the timeout): they expired now.
                    self.plan_removal(u, now + self.channel.one_way);
                }
            }
            Step::RemoveStart { s } => self.old_gone[s] = true,
            Step::RemoveDone { s, after } => {
                let during = self.occupancy[s];
                self.hold(s, during, after);
            }
            Step::Mark { u, what } => {
                let r = &mut self.updates[u];
                match what {
                    Milestone::Installed => r.installed = Some(now),
                    Milestone::Completed => {
                        r.completed = Some(now);
                        return (r.changes.clone(), false);
                    }
                    Milestone::Removed => {
                        r.removed = Some(now);
                        if self.strategy.tagged() {
                            self.old = None;
                            self.busy = false;
                            return (Vec::new(), !self.pending.is_empty());
                        }
                    }
                }
            }
        }
        (Vec::new(), false)
    }

    /// Plan the changes that waited for a two-phase update to finish, as one version.
    pub fn plan_waiting(&mut self, t: &Topology, routes: &mut Routes, state: &LinkState, now: Time) -> Vec<(Time, u32)> {
        let waiting = std::mem::take(&mut self.pending);
        let Some(detected) = waiting.iter().map(|w| w.1).min() else { return Vec::new() };
        // The controller knew already: it sends now.
        self.plan(t, routes, state, waiting.into_iter().map(|w| w.0).collect(), detected, now)
    }

    /// Switch `node` forwards `pkt` by routing entry `entry` (`None`: delivery down to a host,
    /// a rule no version changes); `first`: it is the packet's first switch. Stamps the packet
    /// at ingress (two-phase), records which versions its hops agree with, and says by which
    /// rows it goes.
    pub fn hop(&mut self, node: u32, entry: Option<usize>, first: bool, pkt: &mut Packet, now: Time) -> Rows {
        let s = node as usize - self.n_hosts;
        let (w, rows) = if self.strategy.tagged() {
            if first {
                pkt.version = self.stamp(s, pkt, now);
            }
            let rows = if pkt.version == self.main_version {
                Rows::Current
            } else if self.old.is_some() && pkt.version == self.old_version && !self.old_gone[s] {
                Rows::Old
            } else {
                self.stale += 1;
                return Rows::Stale;
            };
            (pkt.version, rows)
        } else {
            (entry.map_or(0, |e| self.entry_version[s * self.per_row + e]), Rows::Current)
        };
        if let Some(e) = entry {
            let agreed = Agreed { lo: pkt.versions_lo, hi_inv: pkt.versions_hi_inv };
            let (next, mixed) = self.log.hop(agreed, (s * self.per_row + e) as u32, w);
            (pkt.versions_lo, pkt.versions_hi_inv) = (next.lo, next.hi_inv);
            self.mixed += mixed as u64;
        }
        rows
    }

    /// The version ingress switch `s` stamps on `pkt` at `now`: the switch's current one under
    /// two-phase; under per-flow, the version the packet's flow already has while the flow
    /// lasts (no idle spell of `flow_timeout`) and its rules are still there, else the current
    /// one. Counts flows stamped with more than one version while they last.
    fn stamp(&mut self, s: usize, pkt: &Packet, now: Time) -> u8 {
        let key = ((pkt.flow as u64) << 32) | pkt.src as u64;
        let (main, old, old_version, gone) = (self.main_version, self.old.is_some(), self.old_version, self.old_gone[s]);
        let held = |v: u32| v == main as u32 || (old && v == old_version as u32 && !gone);
        self.pins.stamp(key, now, self.ingress[s] as u32, main as u32, held) as u8
    }

    /// The summary's `update` section.
    pub fn summary(&self) -> serde_json::Value {
        let opt = |t: Option<Time>| t.map(seconds);
        let updates: Vec<serde_json::Value> = self
            .updates
            .iter()
            .map(|r| {
                serde_json::json!({
                    "version": r.version,
                    "changes": r.changes,
                    "detected_s": seconds(r.detected),
                    "rounds": r.rounds,
                    "switches_written": r.switches,
                    "rules_written": r.rules_written,
                    "rules_old_version": r.rules_old,
                    "rules_new_version": r.rules_new,
                    "most_rules_one_switch": r.most_rules_one_switch,
                    "busiest_switch": r.busiest_switch,
                    "refused_switches": r.refused,
                    "installed_s": opt(r.installed),
                    "completed_s": opt(r.completed),
                    "old_rules_removed_s": opt(r.removed),
                    "time_to_complete_s": r.completed.map(|c| seconds(c - r.detected)),
                    "time_to_remove_old_s": r.removed.map(|c| seconds(c - r.detected)),
                })
            })
            .collect();
        let overflows: Vec<serde_json::Value> = self
            .overflows
            .iter()
            .map(|o| serde_json::json!({"switch": o.switch, "version": o.version, "at_s": seconds(o.at), "needed": o.needed, "table_size": self.table_size}))
            .collect();
        serde_json::json!({
            "strategy": self.strategy.name(),
            "latency_s": seconds(2 * self.channel.one_way),
            "rule_rate_per_s": crate::units::PS_PER_S as f64 / self.channel.per_rule,
            "table_size": self.table_size,
            "drain_s": (self.strategy == UpdateStrategy::TwoPhase).then(|| seconds(self.drain)),
            "flow_timeout_s": (self.strategy == UpdateStrategy::PerFlow).then(|| seconds(self.flow_timeout)),
            "flows_switched_version": self.strategy.tagged().then_some(self.pins.switched),
            "flows_kept_on_old_version": (self.strategy == UpdateStrategy::PerFlow).then_some(self.pins.kept_old),
            "mixed_version_packets": self.mixed,
            "stale_version_dropped": self.stale,
            "rules_at_start_total": self.initial_total,
            "rules_at_start_max_switch": self.initial_max,
            "peak_rules_total": self.peak_total,
            "peak_rules_max_switch": self.peak.iter().copied().max().unwrap_or(0),
            "rules_at_end_total": self.total,
            "table_overflows": overflows,
            "updates": updates,
        })
    }
}
