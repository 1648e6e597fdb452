//! LocalFlow (seed 004, "Scalable, Optimal Flow Routing in Datacenters via Local Link
//! Balancing", CoNEXT'13; digest in SEED004_DIGEST.md §1).
//!
//! Every switch runs a control loop every T (§3.2): it measures each flow rule's rate over the
//! previous interval from byte counters, and for each destination bin-packs the flows toward it
//! onto the equal-cost uplinks (Algorithm 1): bins of equal capacity, flows taken in increasing
//! rate order, each into the bin with the most room; a flow that overflows that bin by more than
//! the slack delta (a fraction of link capacity) is split, the remainder re-inserted. Bins are
//! then matched to links, the largest bin to the least-loaded link (load from destinations
//! already placed). With delta = 1 nothing is split (LocalFlow-NS, §4).
//!
//! Splitting is spatial (§5, subflow rules on TCP sequence bits): a flow is cut into flowlets of
//! t contiguous bytes (t = 2 MSS at ToRs, 1 MSS above, §5), and each flowlet goes to the port
//! that owns its slot of a 16-slot pattern, so split ratios are multiples of 1/16 (the paper's
//! prefix patterns give powers of two; 16 slots is four bits of wildcard match). The slot is four
//! sequence-number bits, and each tier matches different bits (`slot_index`): with overlapping
//! bits an aggregation switch would see only the part of its pattern that the ToR's subflow
//! happens to hit. A random initial sequence number per flow keeps flows' flowlet boundaries
//! apart.
//!
//! With `split = "counter"` a rule instead counts its packets at each switch and sends its n-th
//! packet to slot `(n / t) mod 16` (t = 2 packets at ToRs, 1 above): §5's counter-based splitting.
//! Sequence bits send a retransmission back to its original's port, so a queue that grows and
//! reorders its segments is fed their spurious retransmissions; a counter spreads them
//! (docs/load-balancers.md, "LocalFlow on a permutation").
//!
//! After a partial failure (a link down or down-rated) the bins are resized in proportion to the
//! capacity left behind each link (§4.3: "X loses one of its uplinks, so it has half the
//! outgoing capacity of W, and LocalFlow sends twice as much to W"), as routing's per-port
//! path-capacity weights give it (`routing.weighted`, on by default). On a symmetric fabric the
//! bins are equal and nothing changes.
//!
//! Our choices where the paper is silent: a flow with no rule yet (first seen since the last
//! round) follows ECMP until the next round; a rule that carried no bytes in an interval is
//! removed (the flow ended or stalled).
//!
//! With `[convergence] mode = "controller"` the rules a round decides travel through the control
//! channel and take effect when written (`control::rewrites`, docs/updates.md); without it they
//! take effect at the round, as in the paper's simulations. The channel's tables hold at most
//! `table_size` rules per switch: rules placed keep their places, new flows take what is left in
//! the order they were first seen, and flows refused a rule stay on ECMP. The channel's `update`
//! strategy applies to the rounds (`control::rewrites`): in place (`unordered`, `ordered`), or
//! as versions stamped at the source ToR (`two_phase`), and every hop's rule is checked against
//! the rounds it agrees with (`control::rewrite_versions`) to count mixed-version packets.

use super::ecmp::Ecmp;
use super::params::{RoutingSpec, SplitBy};
use super::{Fabric, PreHashedMap, Scheme};
use crate::control::flow_pins::FlowPins;
use crate::control::rewrite_versions::{self, OPEN_END};
use crate::control::rewrites::{Installed, Kind, Rewrites};
use crate::control::UpdateStrategy;
use crate::packet::{Packet, FLAG_ACK};
use crate::rng::{mix64, next_u64, Streams};
use crate::topology::{Role, Topology};
use crate::units::Time;

const SLOTS: usize = 16;

#[derive(Clone, Copy, PartialEq)]
pub enum Action {
    /// No decision yet: ECMP.
    Default,
    Port(u32),
    Split([u32; SLOTS]),
}

struct Rule {
    dst: u32,
    group: u32,
    bytes: u64,
    /// Packets this rule has forwarded at this switch (`split = "counter"`).
    packets: u64,
    /// In force at the switch.
    action: Action,
}

/// Through the control channel only, beside each rule: the rounds its action in force agrees
/// with (`rewrite_versions`), the round of its last decided change, and (two-phase) its action
/// in the version being staged.
#[derive(Clone, Copy)]
struct Meta {
    since: u32,
    until: u32,
    decided_round: u32,
    staged: Action,
}

const FRESH: Meta = Meta { since: 0, until: OPEN_END, decided_round: 0, staged: Action::Default };
/// No version being staged.
const NO_VERSION: u32 = u32::MAX;

#[derive(Default)]
struct SwitchRules {
    index: PreHashedMap<u32>,
    rules: Vec<Rule>,
    keys: Vec<u64>,
    /// Through the control channel only: each rule's last decided action (maybe not written
    /// yet), beside `rules` and filled in at each round, so the per-packet path never sees it.
    decided: Vec<Action>,
    /// Through the control channel only, beside `rules`.
    meta: Vec<Meta>,
    /// Two-phase: the version in force (its round), the one staged beside it (`NO_VERSION`:
    /// none), and at a ToR the version its stamping rules tag packets with.
    old_round: u32,
    new_round: u32,
    stamp: u32,
}

pub struct LocalFlow {
    pub interval: Time,
    slack: f64,
    split: SplitBy,
    /// Bins sized by path capacity (§4.3) when routing's weights are unequal.
    weighted: bool,
    mss: u64,
    ecmp: Ecmp,
    isn_salt: u64,
    switches: Vec<SwitchRules>,
    n_hosts: usize,
    /// Over all rounds: rules scheduled, and rules that ended up split over several ports.
    pub rules_total: u64,
    pub splits_total: u64,
    pub rounds: u64,
    /// Rules written through the control channel (`[convergence] mode = "controller"`).
    pub rewrites: Option<Box<Rewrites<Action>>>,
    /// The channel is on: hops are checked against rounds; `tagged`: two-phase versions.
    track: bool,
    tagged: bool,
    /// Packets forwarded by a mix of rounds' rules, and (two-phase) packets whose version's
    /// rules were gone at a switch (forwarded by the newest version there).
    pub mixed_version_packets: u64,
    pub stale_version_packets: u64,
    /// Per-flow: the round each flow is stamped with at its source ToR (`control::flow_pins`).
    pub pins: Option<Box<FlowPins>>,
    /// Per switch: its tier (0 ToR, 1 aggregation, 2 top) and its server ports.
    tiers: Vec<u8>,
    server_ports: Vec<u64>,
}

impl LocalFlow {
    pub fn new(spec: &RoutingSpec, topo: &Topology, mss: u32, streams: &mut Streams) -> Self {
        let slack = if spec.scheme == Scheme::LocalflowNs { 1.0 } else { spec.slack.unwrap_or(0.01) };
        let mut s = streams.stream();
        LocalFlow {
            interval: spec.interval.map_or(50_000_000_000, |d| d.0),
            slack,
            split: spec.split.unwrap_or_default(),
            weighted: spec.weighted != Some(false),
            mss: mss as u64,
            ecmp: Ecmp::new(topo, streams),
            isn_salt: next_u64(&mut s),
            switches: (0..topo.n_switches()).map(|_| SwitchRules::default()).collect(),
            n_hosts: topo.n_hosts,
            rules_total: 0,
            splits_total: 0,
            rounds: 0,
            rewrites: None,
            track: false,
            tagged: false,
            mixed_version_packets: 0,
            stale_version_packets: 0,
            pins: None,
            tiers: (topo.n_hosts..topo.nodes.len()).map(|n| tier(topo.role(n as u32))).collect(),
            server_ports: (topo.n_hosts..topo.nodes.len()).map(|n| topo.host_tor.iter().filter(|&&t| t as usize == n).count() as u64).collect(),
        }
    }

    /// Write each round's rules through a control channel: `latency` round trip, `rule_rate`
    /// rules per second per switch, tables of `table_size` enforced, backlogged switches
    /// coalescing to the newest round if `coalesce`. `names`: the switches' names, in order.
    /// The `update` strategy applies to each round (`control::rewrites`; per-flow pins each flow
    /// to a round at its source ToR, `control::flow_pins`).
    pub fn use_control_channel(&mut self, c: &crate::control::Settings, names: Vec<String>) {
        debug_assert_eq!(names.len(), self.switches.len());
        let r = Rewrites::new(c.latency, c.rule_rate, c.table_size, c.coalesce, names)
            .with_update(c.update, c.drain, self.tiers.clone(), self.server_ports.clone())
            .with_flow_timeout(c.flow_timeout);
        self.rewrites = Some(Box::new(r));
        self.pins = (c.update == UpdateStrategy::PerFlow).then(|| Box::new(FlowPins::new(Some(c.flow_timeout))));
        self.track = true;
        self.tagged = c.update.tagged();
        for sw in &mut self.switches {
            sw.new_round = NO_VERSION;
        }
    }

    /// Switch `switch` has written message `token`: its rules are in force.
    pub fn rules_installed(&mut self, switch: u32, token: u32) {
        let s = switch as usize - self.n_hosts;
        if let Some(m) = self.rewrites.as_mut().and_then(|r| r.installed_message(s, token)) {
            apply(&mut self.switches[s], m);
        }
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        if self.tagged && f.topo.host_tor[pkt.src as usize] == switch {
            // Two-phase: the source ToR's stamping rules tag the packet with a version.
            let sw = &self.switches[switch as usize - self.n_hosts];
            pkt.conga_fb.0 = stamp_at(sw, self.pins.as_deref_mut(), ((pkt.flow as u64) << 32) | pkt.src as u64, f.now) as u8;
        }
        let (g, group) = f.group_for(switch, pkt);
        if group.len() == 1 {
            return group[0];
        }
        let sw = &mut self.switches[switch as usize - self.n_hosts];
        let i = match sw.index.get(&pkt.entropy) {
            Some(&i) => i as usize,
            None => {
                sw.index.insert(pkt.entropy, sw.rules.len() as u32);
                sw.keys.push(pkt.entropy);
                sw.rules.push(Rule { dst: pkt.dst, group: g, bytes: 0, packets: 0, action: Action::Default });
                if self.track {
                    sw.meta.push(FRESH);
                }
                sw.rules.len() - 1
            }
        };
        let rule = &mut sw.rules[i];
        rule.bytes += pkt.wire_bytes();
        rule.packets += 1;
        let packets = rule.packets;
        let mut action = rule.action;
        if self.track {
            action = versioned_hop(sw, i, pkt, self.rounds as u32, self.tagged, &mut self.mixed_version_packets, &mut self.stale_version_packets);
        }
        match action {
            Action::Default => super::pick(group, self.ecmp.hash(switch, pkt.entropy)),
            Action::Port(p) => p,
            Action::Split(slots) => match self.split {
                SplitBy::Sequence => {
                    let offset = if pkt.has(FLAG_ACK) { 0 } else { pkt.seg as u64 * self.mss };
                    let isn = mix64(pkt.entropy ^ self.isn_salt) >> 32;
                    slots[slot_index(f.topo.role(switch), (offset + isn) / self.mss)]
                }
                SplitBy::Counter => {
                    let t = if f.topo.role(switch) == Role::Tor { 2 } else { 1 };
                    slots[((packets - 1) / t) as usize % SLOTS]
                }
            },
        }
    }

    /// Routing changed: rules may name ports that are no longer next hops. Forget them; the
    /// next round rebuilds them from the new groups (meanwhile flows take the ECMP default).
    pub fn forget_rules(&mut self) {
        for sw in &mut self.switches {
            sw.index.clear();
            sw.rules.clear();
            sw.keys.clear();
            sw.decided.clear();
            sw.meta.clear();
            // A two-phase update under way is void: every switch is on one version again, and
            // packets stamped before find their version gone (`stale_version_packets`).
            (sw.old_round, sw.new_round, sw.stamp) = (self.rounds as u32, NO_VERSION, self.rounds as u32);
        }
        if let Some(r) = self.rewrites.as_mut() {
            r.forget();
        }
    }

    /// One round of the control loop at every switch.
    pub fn schedule(&mut self, f: &Fabric) {
        self.rounds += 1;
        let round = self.rounds as u32;
        if let Some(r) = self.rewrites.as_mut() {
            r.begin_interval();
        }
        let bytes_per_interval = |port: u32| f.ports.rate_bps[port as usize] as f64 / 8.0 * self.interval as f64 / 1e12;
        for (s, sw) in self.switches.iter_mut().enumerate() {
            // Rules added since the last round have decided nothing yet (the ECMP default).
            let channel = self.rewrites.is_some();
            if channel {
                sw.decided.resize(sw.rules.len(), Action::Default);
            }
            // Expire idle rules, keeping insertion order (determinism).
            if sw.rules.iter().any(|r| r.bytes == 0) {
                let mut kept = 0;
                sw.index.clear();
                for i in 0..sw.rules.len() {
                    if sw.rules[i].bytes > 0 {
                        sw.rules.swap(kept, i);
                        sw.keys.swap(kept, i);
                        if channel {
                            sw.decided.swap(kept, i);
                            sw.meta.swap(kept, i);
                        }
                        sw.index.insert(sw.keys[kept], kept as u32);
                        kept += 1;
                    }
                }
                sw.rules.truncate(kept);
                sw.keys.truncate(kept);
                sw.decided.truncate(kept);
                sw.meta.truncate(kept);
            }
            if sw.rules.is_empty() {
                continue;
            }
            // Table space (channel only): rules already placed keep their places; new ones take
            // what is left in the order their flows were first seen, and the rest are refused
            // (their flows stay on ECMP, the action without a rule).
            let admitted: Vec<bool> = match self.rewrites.as_ref() {
                Some(r) => {
                    let mut space = r.space_at(s, sw.decided.iter().filter(|&&a| a != Action::Default).count() as u64);
                    let mut fits = |a: Action| a != Action::Default || space.checked_sub(1).map(|left| space = left).is_some();
                    sw.decided.iter().map(|&a| fits(a)).collect()
                }
                None => Vec::new(),
            };
            let mut writes: Vec<(u64, Action)> = Vec::new();
            let node = (s + self.n_hosts) as u32;
            let first_port = f.topo.port_start[node as usize];
            let mut link_load = vec![0.0f64; (f.topo.port_start[node as usize + 1] - first_port) as usize];
            let mut order: Vec<usize> = (0..sw.rules.len()).collect();
            order.sort_by_key(|&i| sw.rules[i].dst); // stable: ties keep insertion order
            let mut start = 0;
            while start < order.len() {
                let dst = sw.rules[order[start]].dst;
                let end = start + order[start..].iter().take_while(|&&i| sw.rules[i].dst == dst).count();
                let links = f.routes.group(sw.rules[order[start]].group);
                let flows: Vec<(f64, usize)> = order[start..end].iter().map(|&i| (sw.rules[i].bytes as f64, i)).collect();
                let delta = self.slack * bytes_per_interval(links[0]);
                let weights = if self.weighted { link_weights(f, node, dst, links) } else { vec![1.0; links.len()] };
                let bins = bin_pack(flows, &weights, delta);
                // A bin is sized for its link, so it may only trade places with bins of the same
                // weight: within each weight, the smallest bin goes to the most loaded link (the
                // largest to the idlest). With equal weights that is every bin and link.
                let mut bin_order: Vec<usize> = (0..bins.len()).collect();
                bin_order.sort_by(|&a, &b| weights[a].total_cmp(&weights[b]).then(bins[a].0.total_cmp(&bins[b].0)));
                let mut link_order: Vec<usize> = (0..links.len()).collect();
                link_order.sort_by(|&a, &b| {
                    let la = link_load[(links[a] - first_port) as usize];
                    let lb = link_load[(links[b] - first_port) as usize];
                    weights[a].total_cmp(&weights[b]).then(lb.total_cmp(&la))
                });
                let mut pieces: Vec<(usize, u32, f64)> = Vec::new();
                for (&b, &l) in bin_order.iter().zip(&link_order) {
                    let port = links[l];
                    link_load[(port - first_port) as usize] += bins[b].0;
                    pieces.extend(bins[b].1.iter().map(|&(rule, amount)| (rule, port, amount)));
                }
                pieces.sort_by_key(|p| p.0);
                let mut k = 0;
                while k < pieces.len() {
                    let rule = pieces[k].0;
                    let n = pieces[k..].iter().take_while(|p| p.0 == rule).count();
                    let action = split_action(&pieces[k..k + n]);
                    self.rules_total += 1;
                    if matches!(action, Action::Split(_)) {
                        self.splits_total += 1;
                    }
                    if !channel {
                        sw.rules[rule].action = action;
                    } else if sw.decided[rule] != action && admitted[rule] {
                        sw.decided[rule] = action;
                        writes.push((sw.keys[rule], action));
                        // The rule in force agrees with the rounds before this one at most.
                        let m = &mut sw.meta[rule];
                        m.decided_round = round;
                        m.until = m.until.min(round - 1);
                    }
                    k += n;
                }
                start = end;
            }
            for r in &mut sw.rules {
                r.bytes = 0;
            }
            if let Some(r) = self.rewrites.as_mut() {
                let held = admitted.iter().filter(|&&a| a).count() as u64;
                let refused = admitted.len() as u64 - held;
                if r.update() == UpdateStrategy::TwoPhase {
                    // The whole new version: every rule with a decision.
                    writes = sw.keys.iter().zip(&sw.decided).filter(|(_, &a)| a != Action::Default).map(|(&k, &a)| (k, a)).collect();
                }
                if let Some(now) = r.send(s, f.now, held, refused, writes) {
                    apply(sw, Installed { kind: Kind::Write, round, rules: now });
                }
            }
        }
        if let Some(r) = self.rewrites.as_mut() {
            if let Some(p) = &self.pins {
                r.old_last = p.old_last;
            }
            let (began, at_once) = r.end_interval(f.now);
            if let Some(v) = began {
                // Two-phase: version `v` is staged beside the one in force, empty until written.
                for sw in &mut self.switches {
                    sw.new_round = v;
                    sw.meta.iter_mut().for_each(|m| m.staged = Action::Default);
                }
            }
            for (s, m) in at_once {
                apply(&mut self.switches[s], m);
            }
        }
    }

    /// Installs the simulator must schedule: (time, switch node, message token).
    pub fn take_installs(&mut self) -> Vec<(Time, u32, u32)> {
        let n_hosts = self.n_hosts as u32;
        self.rewrites.as_mut().map_or_else(Vec::new, |r| r.take_due().into_iter().map(|(t, s, g)| (t, s + n_hosts, g)).collect())
    }
}

/// A switch's tier for the ordered update: 0 ToR, 1 aggregation, 2 the top.
fn tier(role: Role) -> u8 {
    match role {
        Role::Tor | Role::Host => 0,
        Role::Agg => 1,
        Role::Core => 2,
    }
}

/// Put a written message in force (rules by flow key; a rule that expired meanwhile is gone).
fn apply(sw: &mut SwitchRules, m: Installed<Action>) {
    match m.kind {
        Kind::Write => {
            for (key, action) in m.rules {
                if let Some(&i) = sw.index.get(&key) {
                    let i = i as usize;
                    sw.rules[i].action = action;
                    if let Some(meta) = sw.meta.get_mut(i) {
                        meta.since = m.round;
                        meta.until = if meta.decided_round > m.round { meta.decided_round - 1 } else { OPEN_END };
                    }
                }
            }
        }
        Kind::Stage => {
            for (key, action) in m.rules {
                if let Some(&i) = sw.index.get(&key) {
                    sw.meta[i as usize].staged = action;
                }
            }
        }
        Kind::Flip => sw.stamp = m.round,
        Kind::Remove => {
            for (rule, meta) in sw.rules.iter_mut().zip(&sw.meta) {
                rule.action = meta.staged;
            }
            (sw.old_round, sw.new_round) = (m.round, NO_VERSION);
        }
    }
}

/// The round a source ToR stamps on a packet of flow `key` at `now`: its stamping rules'
/// round, or under per-flow the round the flow is pinned to, while the flow lasts and that
/// round's rules are still here.
// Out of line, as `versioned_hop`: inlined, the two grew `Forwarder::next_port` for every
// scheme by 18-21% (the instruction gate's `lb_decision`).
#[inline(never)]
fn stamp_at(sw: &SwitchRules, pins: Option<&mut FlowPins>, key: u64, now: Time) -> u32 {
    match pins {
        None => sw.stamp,
        Some(p) => {
            let (old, new) = (sw.old_round, sw.new_round);
            let newest = if new == NO_VERSION { old } else { new };
            p.stamp(key, now, sw.stamp, newest, |v| v == old || v == new)
        }
    }
}

/// The action a hop takes at a switch through the control channel, with the rounds its rule
/// agrees with checked into the packet: in place, the rule in force; two-phase, the rule of the
/// packet's version (or the newest, counted stale, when that version is gone).
#[inline(never)]
fn versioned_hop(sw: &SwitchRules, i: usize, pkt: &mut Packet, round: u32, tagged: bool, mixed: &mut u64, stale: &mut u64) -> Action {
    let (since, until, action) = if tagged {
        let tag = pkt.conga_fb.0;
        let (v, a) = if tag == sw.old_round as u8 {
            (sw.old_round, sw.rules[i].action)
        } else if sw.new_round != NO_VERSION && tag == sw.new_round as u8 {
            (sw.new_round, sw.meta[i].staged)
        } else {
            *stale += 1;
            if sw.new_round != NO_VERSION {
                (sw.new_round, sw.meta[i].staged)
            } else {
                (sw.old_round, sw.rules[i].action)
            }
        };
        (v, v, a)
    } else {
        (sw.meta[i].since, sw.meta[i].until, sw.rules[i].action)
    };
    if rewrite_versions::hop(pkt, round, since, until) {
        *mixed += 1;
    }
    action
}

/// Each link's share of the traffic toward `dst` at `node`: routing's path-capacity weight of
/// the port (`SplitMode::PerPort`), or equal shares where routing has none for this group (a
/// VL2 packet climbing toward the intermediates).
fn link_weights(f: &Fabric, node: u32, dst: u32, links: &[u32]) -> Vec<f64> {
    let classes = f.routes.split_toward_tor(node, f.tor_index_of(dst));
    let mut weights = vec![0.0; links.len()];
    let mut below = 0;
    for c in classes {
        let port = f.routes.group(c.group)[0];
        if let Some(j) = links.iter().position(|&l| l == port) {
            weights[j] = (c.cumulative - below) as f64;
        }
        below = c.cumulative;
    }
    // Equal weights are equal bins, exactly as on a symmetric fabric (`total / n`, not
    // `total * w / (n * w)`, which may differ in the last bit); a link routing gives no weight
    // (not in this split) leaves the bins equal too.
    if weights.iter().all(|&w| w > 0.0) && weights.iter().any(|&w| w != weights[0]) {
        return weights;
    }
    vec![1.0; links.len()]
}

/// BINPACK of Algorithm 1: `flows` are (rate, id), and bin j holds `weights[j] / sum(weights)`
/// of their total (equal bins on a symmetric fabric); returns per bin (total, [(id, amount)]).
fn bin_pack(mut flows: Vec<(f64, usize)>, weights: &[f64], delta: f64) -> Vec<(f64, Vec<(usize, f64)>)> {
    let n_links = weights.len();
    let total: f64 = flows.iter().map(|f| f.0).sum();
    let sum: f64 = weights.iter().sum();
    let mut residual: Vec<f64> = weights.iter().map(|w| total * w / sum).collect();
    let mut bins: Vec<(f64, Vec<(usize, f64)>)> = vec![(0.0, Vec::new()); n_links];
    flows.sort_by(|a, b| a.0.total_cmp(&b.0)); // policy: increasing rate (stable)
    let mut i = 0;
    while i < flows.len() {
        let (rate, id) = flows[i];
        i += 1;
        let b = (0..n_links).fold(0, |best, j| if residual[j] > residual[best] { j } else { best });
        // Guard against float dust: never split off a piece smaller than a byte.
        if rate > residual[b] + delta && residual[b] >= 1.0 {
            let (fit, rest) = (residual[b], rate - residual[b]);
            bins[b].0 += fit;
            bins[b].1.push((id, fit));
            residual[b] = 0.0;
            let at = i + flows[i..].partition_point(|f| f.0 <= rest);
            flows.insert(at, (rest, id));
        } else {
            bins[b].0 += rate;
            bins[b].1.push((id, rate));
            residual[b] -= rate;
        }
    }
    bins
}

/// The pattern slot at a switch of `role` for the `n`-th MSS-sized block of a flow's sequence
/// space (the initial sequence number included). Each splitting tier matches its own sequence
/// bits (in MSS units): ToRs bits 1-4 (flowlets of t = 2 MSS), aggregation switches bit 0 and
/// bits 5-7 (t = 1 MSS), cores (VL2 intermediates splitting down) bits 8-11. Were an
/// aggregation switch to match bits 0-3, as the plain "bits above lg t" rule gives, bits 1-3 would
/// be the ToR's: a subflow the ToR sent it would only ever hit a fixed subset of its slots (with
/// 4-way splits at both tiers, 2 of its 4 uplinks carry every flow). Disjoint bits make each
/// tier's split independent of the one before it, so every subflow is split in the tier's own
/// ratio (exactly, over 256 MSS of sequence space). §5.1 (seed 004, L6139-6159) matches, at
/// each switch, the lg L bits just above lg t, with t = 2 MSS at edges and 1 MSS at aggregation
/// switches: for two 4-way tiers that is ToR bits 1-2 and aggregation bits 0-1, which overlap;
/// the paper leaves open which bits a later tier reads beyond its lowest. Here an aggregation
/// switch's equal 4-way split reads bits 0 and 5, so a flow's segments take 2 of its 4 uplinks
/// for 32 segments at a time. Reading bits 0 and 3 instead (all 4 every 16 segments, the port
/// order a counter gives) did not reorder less and moved 0.8% less on the k = 8 permutation
/// (docs/load-balancers.md, "LocalFlow on a permutation").
fn slot_index(role: Role, n: u64) -> usize {
    let slot = match role {
        Role::Tor => n >> 1,
        Role::Agg => (n & 1) | ((n >> 5) & 7) << 1,
        Role::Core | Role::Host => n >> 8,
    };
    slot as usize % SLOTS
}

/// A rule's action from its pieces `(rule, port, amount)`: one port, or a 16-slot pattern with
/// slot counts by largest remainder, interleaved by bit reversal so each port's flowlets are
/// spread out in sequence space.
fn split_action(pieces: &[(usize, u32, f64)]) -> Action {
    if pieces.len() == 1 {
        return Action::Port(pieces[0].1);
    }
    let total: f64 = pieces.iter().map(|p| p.2).sum();
    let exact: Vec<f64> = pieces.iter().map(|p| p.2 / total * SLOTS as f64).collect();
    let mut count: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut left = SLOTS - count.iter().sum::<usize>();
    let mut by_remainder: Vec<usize> = (0..pieces.len()).collect();
    by_remainder.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for &j in &by_remainder {
        if left == 0 {
            break;
        }
        count[j] += 1;
        left -= 1;
    }
    let used: Vec<usize> = (0..pieces.len()).filter(|&j| count[j] > 0).collect();
    if used.len() == 1 {
        return Action::Port(pieces[used[0]].1);
    }
    let mut slots = [0u32; SLOTS];
    let mut pos = 0;
    for &j in &used {
        for _ in 0..count[j] {
            slots[(pos as u8).reverse_bits() as usize >> 4] = pieces[j].1;
            pos += 1;
        }
    }
    Action::Split(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lemma 6.2: with slack delta the bins end within delta of each other; flows at or below
    /// delta are never split; with delta = 0 the bins are exactly equal.
    #[test]
    fn bin_pack_balances_within_the_slack_and_splits_only_big_flows() {
        let flows: Vec<(f64, usize)> = [9.0, 1.0, 1.0, 1.0, 4.0, 2.0].iter().copied().zip(0..).collect();
        let bins = bin_pack(flows.clone(), &[1.0; 3], 0.0);
        for b in &bins {
            assert!((b.0 - 6.0).abs() < 1e-9, "delta 0: exact balance, got {}", b.0);
        }
        let bins = bin_pack(flows.clone(), &[1.0; 3], 2.5);
        let totals: Vec<f64> = bins.iter().map(|b| b.0).collect();
        let (lo, hi) = totals.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        assert!(hi - lo <= 2.5 + 1e-9, "{totals:?}");
        let split_ids: Vec<usize> = (0..6).filter(|id| bins.iter().filter(|b| b.1.iter().any(|p| p.0 == *id)).count() > 1).collect();
        assert!(split_ids.iter().all(|&id| flows[id].0 > 2.5), "a flow at or below delta was split: {split_ids:?}");
        // delta = 1 x capacity (LocalFlow-NS) never splits flows up to link capacity.
        let bins = bin_pack(flows, &[1.0; 3], 1e9);
        assert_eq!(bins.iter().map(|b| b.1.len()).sum::<usize>(), 6);
    }

    /// §4.3: bins in proportion to the capacity behind each link. With delta = 0 they are
    /// exactly proportional; with LocalFlow-NS's delta no flow is split.
    #[test]
    fn weighted_bins_follow_the_capacity_left() {
        // Bytes per interval (no piece below a byte is split off).
        let flows: Vec<(f64, usize)> = [3.0, 3.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 2.0, 4.0].iter().map(|x| x * 1e6).zip(0..).collect();
        let bins = bin_pack(flows.clone(), &[1.0, 4.0, 4.0, 4.0], 0.0);
        let totals: Vec<f64> = bins.iter().map(|b| b.0).collect();
        for (t, want) in totals.iter().zip([20.0 / 13.0, 80.0 / 13.0, 80.0 / 13.0, 80.0 / 13.0]) {
            assert!((t - want * 1e6).abs() < 1e-3, "{totals:?}");
        }
        let bins = bin_pack(flows, &[1.0, 4.0, 4.0, 4.0], 1e9);
        assert_eq!(bins.iter().map(|b| b.1.len()).sum::<usize>(), 10);
        assert!(bins[0].0 < bins[1].0.min(bins[2].0).min(bins[3].0), "the small link gets the least");
    }

    #[test]
    fn split_patterns_follow_the_ratio_and_interleave() {
        let a = split_action(&[(0, 10, 1.0), (0, 11, 1.0)]);
        let Action::Split(slots) = a else { panic!("expected a split") };
        assert_eq!(slots.iter().filter(|&&p| p == 10).count(), 8);
        for k in 0..SLOTS {
            assert_ne!(slots[k], slots[(k + 1) % SLOTS], "consecutive flowlets should alternate: {slots:?}");
        }
        let Action::Split(slots) = split_action(&[(0, 1, 1.0), (0, 2, 1.0), (0, 3, 2.0)]) else { panic!() };
        assert_eq!([1, 2, 3].map(|p| slots.iter().filter(|&&x| x == p).count()), [4, 4, 8]);
        assert!(matches!(split_action(&[(0, 5, 100.0), (0, 6, 0.001)]), Action::Port(5)));
    }

    /// A subflow a ToR sends to one aggregation switch must be split by that switch in the
    /// switch's own ratio, whatever the ToR's pattern: the tiers' sequence bits are disjoint.
    /// (With the aggregation tier on bits 0-3 of the MSS index, overlapping the ToR's bits 1-4,
    /// every ToR subflow of a 4-way split reached only 2 of the aggregation switch's 4 ports.)
    #[test]
    fn a_subflow_from_the_tor_is_split_by_the_next_tier_in_its_own_ratio() {
        let tor_patterns = [
            split_action(&[(0, 0, 1.0), (0, 1, 1.0), (0, 2, 1.0), (0, 3, 1.0)]),
            split_action(&[(0, 0, 1.0), (0, 1, 1.0)]),
            split_action(&[(0, 0, 8.0), (0, 1, 5.0), (0, 2, 3.0)]),
        ];
        let agg_pieces = [vec![(0, 10, 1.0), (0, 11, 1.0), (0, 12, 1.0), (0, 13, 1.0)], vec![(0, 10, 5.0), (0, 11, 4.0), (0, 12, 4.0), (0, 13, 3.0)]];
        for tor in tor_patterns {
            let Action::Split(tor) = tor else { panic!("expected a split") };
            for pieces in &agg_pieces {
                let Action::Split(agg) = split_action(pieces) else { panic!("expected a split") };
                for isn_blocks in [0u64, 1, 7, 12_345] {
                    // Per ToR port, the segments each aggregation port carries over 512 MSS.
                    let mut count = [[0u64; 4]; 4];
                    for n in isn_blocks..isn_blocks + 512 {
                        let up = tor[slot_index(Role::Tor, n)] as usize;
                        count[up][agg[slot_index(Role::Agg, n)] as usize - 10] += 1;
                    }
                    for (up, c) in count.iter().enumerate() {
                        let total: u64 = c.iter().sum();
                        if total == 0 {
                            continue;
                        }
                        for (j, &x) in c.iter().enumerate() {
                            let want = agg.iter().filter(|&&p| p as usize == j + 10).count() as u64 * total / SLOTS as u64;
                            assert_eq!(x, want, "ToR port {up}: aggregation ports get {c:?}, pattern {agg:?}");
                        }
                    }
                }
            }
        }
        // Cores (VL2 intermediates) use bits of their own too.
        for n in 0..4096u64 {
            let (t, a, c) = (slot_index(Role::Tor, n), slot_index(Role::Agg, n), slot_index(Role::Core, n));
            assert!(t < SLOTS && a < SLOTS && c < SLOTS);
        }
        let mut seen = std::collections::HashSet::new();
        for n in 0..(1u64 << 12) {
            seen.insert((slot_index(Role::Tor, n), slot_index(Role::Agg, n), slot_index(Role::Core, n)));
        }
        assert_eq!(seen.len(), SLOTS * SLOTS * SLOTS, "the three tiers' slots vary independently");
    }

    /// Equal 4-way splits at a ToR (ports A-D) and at an aggregation switch (A-D), initial
    /// sequence number 0: the port each of 64 consecutive segments takes at each tier, by hand.
    /// Bit reversal gives port A slots 0, 4, 8, 12 (slot bits 0-1 = 00), B 2, 6, 10, 14, C 1, 5,
    /// 9, 13, D 3, 7, 11, 15: slot bit 0 picks A/B against C/D, slot bit 1 A/C against B/D. The
    /// ToR reads segment bits 1-2 as slot bits 0-1: segments 0-7 go A A C C B B D D, repeating.
    /// The aggregation switch reads bits 0 and 5: segments 0-31 go A C A C ..., 32-63 B D B D
    /// .... So 16 consecutive segments take 8 of the 16 (ToR port, aggregation port) paths, two
    /// each, and 64 take all 16, four each.
    #[test]
    fn sixty_four_segments_take_these_ports_at_each_tier() {
        let Action::Split(four) = split_action(&[(0, 0, 1.0), (0, 1, 1.0), (0, 2, 1.0), (0, 3, 1.0)]) else { panic!("expected a split") };
        assert_eq!(four, [0, 2, 1, 3, 0, 2, 1, 3, 0, 2, 1, 3, 0, 2, 1, 3]);
        let name = |role: Role| (0..64u64).map(|n| (b'A' + four[slot_index(role, n)] as u8) as char).collect::<String>();
        assert_eq!(name(Role::Tor), "AACCBBDD".repeat(8));
        assert_eq!(name(Role::Agg), "AC".repeat(16) + &"BD".repeat(16));
        let paths = |from: u64, to: u64| {
            let mut count = std::collections::BTreeMap::new();
            for n in from..to {
                *count.entry((four[slot_index(Role::Tor, n)], four[slot_index(Role::Agg, n)])).or_insert(0) += 1;
            }
            count
        };
        for window in 0..4u64 {
            let p = paths(16 * window, 16 * window + 16);
            assert!(p.len() == 8 && p.values().all(|&c| c == 2), "segments {}-{}: {p:?}", 16 * window, 16 * window + 15);
        }
        let p = paths(0, 64);
        assert!(p.len() == 16 && p.values().all(|&c| c == 4), "{p:?}");
    }

    /// Per-flow at a ToR with one rule: round 0 sends it out port 1, round 1 (staged, then
    /// flipped at 4 ms) out port 2; soft timeout 10 ms. Flow A sends at 0 and 3 ms (round 0),
    /// then at 8 ms, after the flip: it has been idle 5 ms < 10, so it keeps round 0 and port 1.
    /// Flow B sent at 0 ms, then idles to 12 ms (12 >= 10): it takes round 1 and port 2. Flow C
    /// starts at 8 ms: round 1. No packet mixes rounds. Once round 0's rules are removed, A
    /// (still active) moves to round 1.
    #[test]
    fn per_flow_keeps_an_active_flow_on_its_round_and_moves_an_idle_one() {
        let ms = crate::units::PS_PER_MS;
        let mut sw = SwitchRules::default();
        sw.rules.push(Rule { dst: 0, group: 0, bytes: 0, packets: 0, action: Action::Port(1) });
        sw.meta.push(Meta { staged: Action::Port(2), ..FRESH });
        (sw.old_round, sw.new_round, sw.stamp) = (0, NO_VERSION, 0);
        let mut pins = FlowPins::new(Some(10 * ms));
        let (mut mixed, mut stale) = (0, 0);
        let mut hop = |sw: &SwitchRules, pins: &mut FlowPins, key: u64, now: Time| {
            let mut pkt = Packet::default();
            pkt.conga_fb.0 = stamp_at(sw, Some(pins), key, now) as u8;
            match versioned_hop(sw, 0, &mut pkt, 1, true, &mut mixed, &mut stale) {
                Action::Port(p) => p,
                _ => unreachable!(),
            }
        };
        let (a, b, c) = (1u64, 2u64, 3u64);
        assert_eq!(hop(&sw, &mut pins, a, 0), 1);
        assert_eq!(hop(&sw, &mut pins, b, 0), 1);
        sw.new_round = 1;
        assert_eq!(hop(&sw, &mut pins, a, 3 * ms), 1);
        sw.stamp = 1;
        assert_eq!(hop(&sw, &mut pins, a, 8 * ms), 1, "active across the round: keeps its port");
        assert_eq!(hop(&sw, &mut pins, c, 8 * ms), 2, "new after the flip: the new round");
        assert_eq!(hop(&sw, &mut pins, b, 12 * ms), 2, "idle past the timeout: moves");
        assert_eq!(pins.kept_old, 1);
        // The old rules go (Remove): round 1 is the only one, in force.
        apply(&mut sw, Installed { kind: Kind::Remove, round: 1, rules: Vec::new() });
        assert_eq!(hop(&sw, &mut pins, a, 13 * ms), 2);
        assert_eq!((mixed, stale), (0, 0));
    }
}
