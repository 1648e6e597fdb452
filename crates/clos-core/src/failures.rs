//! Failure scenarios: links and switches going down and up, degraded rates, lossy links, and the
//! link-state routing model that reacts to them.
//!
//! `[[failures]]` entries name what fails (`link = ["agg0", "int1"]`, `switch = "int0"`, or
//! `random = { count, tier }`), when (`at`, and optionally `until` for the repair), and how
//! (`action`: `down`, `up`, `degrade` to `rate`, or `loss` with probability `loss` per packet).
//! A link is full duplex: both directions fail together. Entries are resolved here into
//! [`Change`]s on physical link ids; `sim/failures.rs` applies them.
//!
//! `[convergence]` is the control plane (VL2 §5.4 runs OSPF; DRILL §4 compares with an ideal
//! DRILL that reacts instantly): in `link_state` mode the switches at the ends of a changed link
//! notice after `detection`, the news floods one hop per `propagation`, and each switch installs
//! new tables `install` after it hears; a restored link is advertised only after a further
//! `hold_down` (VL2 saw restored links carry full load only ~50 s later, "conservative OSPF
//! timers"). In `ideal` mode every switch installs the new tables the instant a link changes.
//! In `controller` mode a controller pushes rules over a control channel at a finite rate, by
//! an update strategy (`crate::control`, docs/updates.md).
//! Packet loss on a link (`loss`) is invisible to routing, as gray failures are.

use crate::error::{bad, Result};
use crate::rng::{below, Streams};
use crate::topology::{Topology, TIERS};
use crate::units::{Duration, Rate, Time, PS_PER_MS, PS_PER_US};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// What a `[[failures]]` entry does to its links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The links fail (both directions).
    #[default]
    Down,
    /// The links come back.
    Up,
    /// The links run at `rate`.
    Degrade,
    /// Each packet crossing the links is lost with probability `loss`.
    Loss,
}

/// `random = { count = 10, tier = "tor_up" }`: distinct links of one tier, drawn with `seed`
/// (default: derived from the scenario seed).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RandomLinks {
    /// How many distinct links.
    pub count: u32,
    /// Which tier, named by a link's upward direction: `host_up`, `tor_up` or `agg_up`.
    #[schemars(schema_with = "random_tiers_schema")]
    pub tier: String,
    /// The draw's own seed (default: derived from the scenario's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// One `[[failures]]` entry.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    /// When the change happens.
    #[serde(default)]
    pub at: Duration,
    /// `down`, `up`, `degrade` (to `rate`) or `loss` (with probability `loss`).
    #[serde(default)]
    pub action: Action,
    /// The links between two nodes, by name (`["agg0", "int1"]`); give one of `link`, `switch`
    /// and `random`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<[String; 2]>,
    /// Which of several parallel links (0-based); all of them if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Every link of a switch, by name (`"int0"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// Links of one tier drawn at random: `{ count = 10, tier = "tor_up" }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random: Option<RandomLinks>,
    /// `degrade`: the new rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// `loss`: probability that a packet crossing the link is lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// Undo the change at this time (repair, original rate, no loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Duration>,
}

/// How routing learns of a change (`convergence.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConvergenceMode {
    /// The ends of a changed link notice after `detection`, the news floods a hop per
    /// `propagation`, and each switch installs new tables `install` after it hears.
    #[default]
    LinkState,
    /// Every switch installs the new tables the instant a link changes.
    Ideal,
    /// A controller computes each routing version and pushes rules to the switches over a
    /// control channel (`latency`), where they are written at `rule_rate` into tables of
    /// `table_size` rules, by the `update` strategy (`crate::control`, docs/updates.md).
    Controller,
}

/// `[convergence]`: the control plane's reaction to failures (link-state timers).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConvergenceSpec {
    /// `link_state` (default) or `ideal`.
    #[serde(default)]
    pub mode: ConvergenceMode,
    /// Link state: how long the ends of a changed link take to notice (default 10ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detection: Option<Duration>,
    /// Link state: flooding time per hop (default 100us).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<Duration>,
    /// Link state: from hearing of a change to new tables (default 10ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Duration>,
    /// Link state and controller: a restored link is advertised only this much later (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_down: Option<Duration>,
    /// Controller: how a routing change reaches the switches: `unordered` (default), `ordered`,
    /// `two_phase` or `per_flow` (docs/updates.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<crate::control::UpdateStrategy>,
    /// Controller: round trip between the controller and a switch (default 2.5ms, Frenetic's
    /// figure for an HP ProCurve 5406zl).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Duration>,
    /// Controller: rules a switch writes per second (default 1000; OpenFlow switches set up
    /// 600-1000 flows per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_rate: Option<f64>,
    /// Controller: rules a switch's forwarding table holds (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_size: Option<u64>,
    /// Controller, `two_phase`: from the last ingress switch stamping the new version to the
    /// controller removing the old version's rules (default 1ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<Duration>,
    /// Controller, `per_flow`: a flow idle this long at its ingress switch is over, and its next
    /// packet takes the new version; the old version's rules go once every flow on it is over
    /// (default 1s, OpenFlow's shortest idle timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_timeout: Option<Duration>,
    /// Controller, LocalFlow's rewrites: a switch still writing an earlier round's rules when a
    /// newer round's arrive drops the older rounds it has not begun, unwritten, and writes the
    /// newest decisions instead (default false: every round is written in turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<bool>,
}

impl ConvergenceSpec {
    /// The controller's settings (`mode = "controller"`, after `normalize`).
    pub fn controller_settings(&self) -> crate::control::Settings {
        crate::control::Settings {
            update: self.update.expect("normalised"),
            latency: self.latency.expect("normalised").0,
            rule_rate: self.rule_rate.expect("normalised"),
            table_size: self.table_size.expect("normalised"),
            drain: self.drain.map_or(0, |d| d.0),
            flow_timeout: self.flow_timeout.map_or(0, |d| d.0),
            coalesce: self.coalesce == Some(true),
        }
    }

    /// Fill the link-state timers' defaults; `ideal` takes none; `controller` fills the control
    /// channel's (`normalize_controller`).
    pub fn normalize(&mut self) -> Result<()> {
        let timers = [("detection", self.detection), ("propagation", self.propagation), ("install", self.install), ("hold_down", self.hold_down)];
        if self.mode != ConvergenceMode::Controller {
            reject_controller_fields(self)?;
        }
        match self.mode {
            ConvergenceMode::Controller => normalize_controller(self)?,
            ConvergenceMode::Ideal => {
                if let Some((name, _)) = timers.iter().find(|t| t.1.is_some()) {
                    return Err(bad(
                        format!("convergence.{name}"),
                        "does not apply to mode \"ideal\" (instant convergence); remove it or use mode \"link_state\"",
                    ));
                }
            }
            ConvergenceMode::LinkState => {
                // Defaults: BFD-style detection (3 x 3.3 ms hellos), a flooding hop per 100 us,
                // 10 ms for SPF and the FIB write; restored links advertised at once.
                self.detection.get_or_insert(Duration(10 * PS_PER_MS));
                self.propagation.get_or_insert(Duration(100 * PS_PER_US));
                self.install.get_or_insert(Duration(10 * PS_PER_MS));
                self.hold_down.get_or_insert(Duration(0));
            }
        }
        Ok(())
    }
}

/// What a change does to its links.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum What {
    Down,
    Up,
    /// Set the rate (bits per second); `restore` puts back the built rate.
    Rate(u64),
    Restore,
    Loss(f64),
}

/// A resolved change: physical link ids, applied at `at`. `source` is the `[[failures]]` index.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub at: Time,
    pub links: Vec<u32>,
    pub what: What,
    pub source: usize,
}

/// Physical links between two named nodes (all parallel ones, or the `index`-th).
fn named_links(t: &Topology, f: &FailureSpec, field: &str, ends: &[String; 2]) -> Result<Vec<u32>> {
    let mut ids = [0; 2];
    for (j, name) in ends.iter().enumerate() {
        ids[j] = t
            .node_named(name)
            .ok_or_else(|| bad(format!("{field}.link"), format!("no node named \"{name}\" (switches are named like {})", t.example_switch_names())))?;
    }
    let links = t.links_between(ids[0], ids[1]);
    if links.is_empty() {
        return Err(bad(format!("{field}.link"), format!("there is no link between {} and {}", ends[0], ends[1])));
    }
    match f.index {
        None => Ok(links),
        Some(i) if (i as usize) < links.len() => Ok(vec![links[i as usize]]),
        Some(i) => Err(bad(format!("{field}.index"), format!("{} and {} have {} parallel link(s); index {i} is out of range", ends[0], ends[1], links.len()))),
    }
}

/// The tiers a random failure can pick from: the upward direction of a link names it.
const RANDOM_TIERS: [&str; 3] = ["host_up", "tor_up", "agg_up"];

fn random_tiers_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": RANDOM_TIERS})
}

fn random_links(t: &Topology, r: &RandomLinks, field: &str, seed: u64) -> Result<Vec<u32>> {
    let Some(tier) = RANDOM_TIERS.iter().position(|&x| x == r.tier) else {
        return Err(bad(format!("{field}.random.tier"), format!("unknown tier \"{}\"; one of {}", r.tier, RANDOM_TIERS.join(", "))));
    };
    let mut eligible: Vec<u32> = (0..t.links.len() as u32)
        .filter(|&l| {
            let [a, b] = t.links[l as usize];
            t.tier_of(a).min(t.tier_of(b)) == tier
        })
        .collect();
    if r.count == 0 || r.count as usize > eligible.len() {
        return Err(bad(format!("{field}.random.count"), format!("must be between 1 and the {} {} links", eligible.len(), TIERS[tier])));
    }
    // A stream of its own: adding a random failure changes no other random choice in the run.
    let mut rng = Streams::new(r.seed.unwrap_or(seed ^ 0x4641_494c_5552_4553)).stream();
    for i in 0..r.count as usize {
        let j = i + below(&mut rng, (eligible.len() - i) as u64) as usize;
        eligible.swap(i, j);
    }
    let mut chosen = eligible[..r.count as usize].to_vec();
    chosen.sort_unstable();
    Ok(chosen)
}

/// Resolve `[[failures]]` against the fabric into changes sorted by time (ties in file order).
pub fn resolve(specs: &[FailureSpec], t: &Topology, seed: u64) -> Result<Vec<Change>> {
    let mut out = Vec::new();
    for (i, f) in specs.iter().enumerate() {
        let field = format!("failures[{i}]");
        let given = [f.link.is_some(), f.switch.is_some(), f.random.is_some()].iter().filter(|&&x| x).count();
        if given != 1 {
            return Err(bad(field, "name exactly one of `link = [a, b]`, `switch = name` or `random = { count, tier }`"));
        }
        if f.index.is_some() && f.link.is_none() {
            return Err(bad(format!("{field}.index"), "applies to `link` failures only"));
        }
        let links = if let Some(ends) = &f.link {
            named_links(t, f, &field, ends)?
        } else if let Some(name) = &f.switch {
            let n = t
                .node_named(name)
                .filter(|&n| !t.is_host(n))
                .ok_or_else(|| bad(format!("{field}.switch"), format!("no switch named \"{name}\" (switches are named like {})", t.example_switch_names())))?;
            t.ports_of(n).map(|p| t.link_of[p as usize]).collect()
        } else {
            random_links(t, f.random.as_ref().unwrap(), &field, seed)?
        };
        if f.rate.is_some() != (f.action == Action::Degrade) {
            return Err(bad(format!("{field}.rate"), "give `rate` with action \"degrade\", and only then"));
        }
        if f.loss.is_some() != (f.action == Action::Loss) {
            return Err(bad(format!("{field}.loss"), "give `loss` with action \"loss\", and only then"));
        }
        let what = match f.action {
            Action::Down => What::Down,
            Action::Up => What::Up,
            Action::Degrade => {
                let r = f.rate.unwrap().0;
                if r < 1_000 {
                    return Err(bad(format!("{field}.rate"), "must be at least 1Kbps (use action \"down\" for a dead link)"));
                }
                What::Rate(r)
            }
            Action::Loss => {
                let p = f.loss.unwrap();
                if !(0.0..=1.0).contains(&p) {
                    return Err(bad(format!("{field}.loss"), format!("must be a probability in [0, 1], got {p}")));
                }
                What::Loss(p)
            }
        };
        out.push(Change { at: f.at.0, links: links.clone(), what, source: i });
        if let Some(until) = f.until {
            if until.0 <= f.at.0 {
                return Err(bad(format!("{field}.until"), "must be later than `at`"));
            }
            let undo = match what {
                What::Down => What::Up,
                What::Rate(_) => What::Restore,
                What::Loss(_) => What::Loss(0.0),
                _ => return Err(bad(format!("{field}.until"), "does not apply to action \"up\"")),
            };
            out.push(Change { at: until.0, links, what: undo, source: i });
        }
    }
    out.sort_by_key(|c| c.at);
    Ok(out)
}

/// Fill `[convergence]`'s controller defaults; the link-state flooding timers do not apply.
fn normalize_controller(c: &mut ConvergenceSpec) -> Result<()> {
    for (name, given) in [("propagation", c.propagation.is_some()), ("install", c.install.is_some())] {
        if given {
            return Err(bad(
                format!("convergence.{name}"),
                "does not apply to mode \"controller\", where `latency` and `rule_rate` time each switch's update; remove it",
            ));
        }
    }
    if c.drain.is_some() && c.update != Some(crate::control::UpdateStrategy::TwoPhase) {
        return Err(bad("convergence.drain", "applies to update = \"two_phase\" only; remove it or set update = \"two_phase\""));
    }
    if c.flow_timeout.is_some() && c.update != Some(crate::control::UpdateStrategy::PerFlow) {
        return Err(bad("convergence.flow_timeout", "applies to update = \"per_flow\" only; remove it or set update = \"per_flow\""));
    }
    if let Some(r) = c.rule_rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(bad("convergence.rule_rate", format!("must be a positive number of rules per second, got {r}")));
        }
    }
    if c.table_size == Some(0) {
        return Err(bad("convergence.table_size", "must be at least 1 rule"));
    }
    c.detection.get_or_insert(Duration(10 * PS_PER_MS));
    c.hold_down.get_or_insert(Duration(0));
    c.update.get_or_insert(crate::control::UpdateStrategy::Unordered);
    c.latency.get_or_insert(crate::control::DEFAULT_LATENCY);
    c.rule_rate.get_or_insert(crate::control::DEFAULT_RULE_RATE);
    c.table_size.get_or_insert(crate::control::DEFAULT_TABLE_SIZE);
    if c.update == Some(crate::control::UpdateStrategy::TwoPhase) {
        c.drain.get_or_insert(crate::control::DEFAULT_DRAIN);
        if c.drain.unwrap().0 < PS_PER_US {
            return Err(bad("convergence.drain", "must be at least 1us: old-tagged packets need time to leave"));
        }
    }
    if c.update == Some(crate::control::UpdateStrategy::PerFlow) {
        c.flow_timeout.get_or_insert(crate::control::DEFAULT_FLOW_TIMEOUT);
        if c.flow_timeout.unwrap().0 < PS_PER_US {
            return Err(bad("convergence.flow_timeout", "must be at least 1us; OpenFlow idle timeouts are whole seconds (the default, 1s)"));
        }
    }
    Ok(())
}

/// The controller's fields given with another mode: an error naming the first.
fn reject_controller_fields(c: &ConvergenceSpec) -> Result<()> {
    let given = [
        ("update", c.update.is_some()),
        ("latency", c.latency.is_some()),
        ("rule_rate", c.rule_rate.is_some()),
        ("table_size", c.table_size.is_some()),
        ("drain", c.drain.is_some()),
        ("flow_timeout", c.flow_timeout.is_some()),
        ("coalesce", c.coalesce.is_some()),
    ];
    if let Some((name, _)) = given.iter().find(|g| g.1) {
        return Err(bad(format!("convergence.{name}"), "applies to mode = \"controller\" only; add mode = \"controller\" or remove it"));
    }
    Ok(())
}
