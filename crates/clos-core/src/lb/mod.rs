//! Load balancing: how a switch picks one port among the equal-cost next hops.
//!
//! A scheme is one file with a state struct and a `next_port` method, plus one variant in
//! [`Scheme`] (its name and description), one in [`Forwarder`], and its parameters in
//! [`params::PARAMS`]. Dispatch is a `match` (no trait objects on the per-packet path), skipped
//! where the event loop is compiled for one scheme ([`Known`], `sim/shape.rs`). Each
//! scheme sees the routes, the packet, and the port queues (load-aware schemes read
//! `Ports::visible_backlog`). Delivery from a destination ToR to its host is done by the
//! simulator before the forwarder is asked, so schemes only handle fabric hops. Optional hooks:
//! `at_source` (host agent: VL2 encapsulation, Presto flowcells), `at_destination_tor` and
//! `on_egress` (CONGA's feedback and path metrics), and `tick` (LocalFlow's control loop).

pub mod conga;
pub mod drill;
pub mod ecmp;
pub mod flowlet;
pub mod localflow;
pub mod params;
pub mod presto;
pub mod spray;
pub mod vlb;
pub mod wcmp;

use crate::error::Result;
use crate::fabric::Ports;
use crate::packet::Packet;
use crate::rng::Streams;
pub use crate::routing::pick::{pick, pick_index};
use crate::routing::{Class, Routes, SplitMode};
use crate::topology::Topology;
use crate::units::Time;
use params::RoutingSpec;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::hash::{BuildHasherDefault, Hasher};

/// The schemes a scenario can name in `routing.scheme`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    #[default]
    Ecmp,
    Vlb,
    SprayRr,
    SprayRandom,
    SprayCounter,
    Drill,
    DrillFlow,
    Localflow,
    LocalflowNs,
    Presto,
    Letflow,
    Conga,
    Wcmp,
}

/// The names serde reads (`rename_all` above), each with its line of `clos schemes`.
impl JsonSchema for Scheme {
    fn schema_name() -> Cow<'static, str> {
        "Scheme".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<serde_json::Value> =
            Scheme::ALL.iter().map(|(s, d)| serde_json::json!({"const": serde_json::to_value(s).expect("a unit variant"), "description": d})).collect();
        json_schema!({"type": "string", "oneOf": names})
    }
}

impl Scheme {
    pub const ALL: [(Scheme, &'static str); 13] = [
        (Scheme::Ecmp, "per-flow 5-tuple hash with a per-switch salt (RFC 2992)"),
        (Scheme::Vlb, "VL2 Valiant load balancing: encapsulate to the Intermediate anycast address, ECMP on the outer header (VL2 §4.2.2)"),
        (Scheme::SprayRr, "PLTS per-packet round robin over the equal-cost next hops at every switch (PLTS-RR)"),
        (Scheme::SprayRandom, "per-packet uniform random next hop at every switch (RPS; DRILL's Per-packet Random)"),
        (Scheme::SprayCounter, "PLTS per-packet: the next hop with the fewest bytes sent so far (PLTS-CNT)"),
        (Scheme::Drill, "DRILL(d, m): per packet, the least-loaded of d random samples and m remembered ports (DRILL §3.2)"),
        (Scheme::DrillFlow, "per-flow DRILL strawman: DRILL's choice for a flow's first packet, then pinned (DRILL §4)"),
        (Scheme::Localflow, "LocalFlow: every T, bin-pack per-destination flow rates onto uplinks, splitting by byte ranges (LocalFlow §3-5)"),
        (Scheme::LocalflowNs, "LocalFlow without splitting (slack 1): load-aware whole-flow placement (LocalFlow §4)"),
        (Scheme::Presto, "Presto: 64 KB flowcells source-routed round robin over paths, receiver reorder shim on (Presto §3)"),
        (Scheme::Letflow, "LetFlow: a random next hop for every new flowlet (LetFlow)"),
        (Scheme::Conga, "CONGA: flowlets placed at leaves by leaf-to-leaf congestion feedback (DRE metrics); ECMP above the leaves (CONGA §3)"),
        (Scheme::Wcmp, "WCMP: per-flow hash weighted by link capacity or configured weights (Zhou et al., EuroSys'14)"),
    ];

    /// The name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Ecmp => "ecmp",
            Scheme::Vlb => "vlb",
            Scheme::SprayRr => "spray-rr",
            Scheme::SprayRandom => "spray-random",
            Scheme::SprayCounter => "spray-counter",
            Scheme::Drill => "drill",
            Scheme::DrillFlow => "drill-flow",
            Scheme::Localflow => "localflow",
            Scheme::LocalflowNs => "localflow-ns",
            Scheme::Presto => "presto",
            Scheme::Letflow => "letflow",
            Scheme::Conga => "conga",
            Scheme::Wcmp => "wcmp",
        }
    }
}

/// What every scheme may read when choosing.
pub struct Fabric<'a> {
    pub topo: &'a Topology,
    pub routes: &'a Routes,
    pub ports: &'a Ports,
    pub now: Time,
}

impl Fabric<'_> {
    /// Index of the destination host's ToR among all ToRs (the routing table's column).
    #[inline]
    pub fn dst_tor_index(&self, pkt: &Packet) -> u32 {
        self.tor_index_of(pkt.dst)
    }

    /// Index of `host`'s ToR among all ToRs.
    #[inline]
    pub fn tor_index_of(&self, host: u32) -> u32 {
        self.topo.tor_index[self.topo.host_tor[host as usize] as usize]
    }

    /// The packet's next-hop group at `switch`: its id (for per-group state) and its ports.
    #[inline]
    pub fn group_for(&self, switch: u32, pkt: &Packet) -> (u32, &[u32]) {
        let g = self.routes.group_toward_tor(switch, self.dst_tor_index(pkt));
        (g, self.routes.group(g))
    }
}

/// The scheme as the event loop was compiled for it (`sim/shape.rs`): where it is one of these,
/// the `*_known` calls below go straight to it instead of matching on the scheme, and skip the
/// hooks it does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    Any,
    Ecmp,
    /// `spray-random`, not the other spraying modes.
    SprayRandom,
}

pub enum Forwarder {
    Ecmp(ecmp::Ecmp),
    Vlb(vlb::Vlb),
    Spray(spray::Spray),
    Drill(drill::Drill),
    Localflow(localflow::LocalFlow),
    Presto(presto::Presto),
    Letflow(flowlet::LetFlow),
    Conga(conga::Conga),
    Wcmp(wcmp::Wcmp),
}

impl Forwarder {
    /// `mss` is the transport's segment size (Presto and LocalFlow cut flows by byte offset).
    pub fn new(spec: &RoutingSpec, topo: &Topology, routes: &Routes, mss: u32, streams: &mut Streams) -> Result<Forwarder> {
        Ok(match spec.scheme {
            Scheme::Ecmp => Forwarder::Ecmp(ecmp::Ecmp::new(topo, streams)),
            Scheme::Vlb => Forwarder::Vlb(vlb::Vlb::new(topo, streams)),
            Scheme::SprayRr => Forwarder::Spray(spray::Spray::new(spray::Mode::RoundRobin, topo, routes, streams)),
            Scheme::SprayRandom => Forwarder::Spray(spray::Spray::new(spray::Mode::Random, topo, routes, streams)),
            Scheme::SprayCounter => Forwarder::Spray(spray::Spray::new(spray::Mode::Counter, topo, routes, streams)),
            Scheme::Drill | Scheme::DrillFlow => Forwarder::Drill(drill::Drill::new(spec, topo, routes, streams)),
            Scheme::Localflow | Scheme::LocalflowNs => Forwarder::Localflow(localflow::LocalFlow::new(spec, topo, mss, streams)),
            Scheme::Presto => Forwarder::Presto(presto::Presto::new(spec, mss, streams)),
            Scheme::Letflow => Forwarder::Letflow(flowlet::LetFlow::new(spec, topo, streams)),
            Scheme::Conga => Forwarder::Conga(conga::Conga::new(spec, topo, routes, streams)),
            Scheme::Wcmp => Forwarder::Wcmp(wcmp::Wcmp::new(topo, streams)),
        })
    }

    /// Host-agent processing of a packet leaving its source.
    #[inline]
    pub fn at_source(&mut self, f: &Fabric, pkt: &mut Packet) {
        match self {
            Forwarder::Vlb(v) => v.encapsulate(f, pkt),
            Forwarder::Presto(p) => p.label(pkt),
            Forwarder::Spray(s) => s.at_source(pkt),
            _ => {}
        }
    }

    /// Which of the known schemes this is, if any (`sim/shape.rs`).
    pub fn known(&self) -> Known {
        match self {
            Forwarder::Ecmp(_) => Known::Ecmp,
            Forwarder::Spray(s) if s.is_random() => Known::SprayRandom,
            _ => Known::Any,
        }
    }

    /// `at_source`, for a loop compiled for `known`.
    #[inline(always)]
    pub fn at_source_known(&mut self, known: Known, f: &Fabric, pkt: &mut Packet) {
        match known {
            Known::Any => self.at_source(f, pkt),
            Known::Ecmp => {}
            Known::SprayRandom => match self {
                Forwarder::Spray(s) => s.draw_nonce(pkt),
                _ => not_the_known_scheme(known),
            },
        }
    }

    /// `next_port`, for a loop compiled for `known`.
    #[inline(always)]
    pub fn next_port_known(&mut self, known: Known, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        match (known, self) {
            (Known::Any, fwd) => fwd.next_port(f, switch, pkt),
            (Known::Ecmp, Forwarder::Ecmp(s)) => s.next_port(f, switch, pkt),
            (Known::SprayRandom, Forwarder::Spray(s)) => s.random_next_port(f, switch, pkt),
            (known, _) => not_the_known_scheme(known),
        }
    }

    /// Whether the hop reads its route entry through `Routes::pick_toward_tor` (ECMP and random
    /// spraying), for a loop compiled for `known`: what the look-ahead prefetches.
    #[inline(always)]
    pub fn picks_by_span_known(&self, known: Known) -> bool {
        match known {
            Known::Any => self.known() != Known::Any,
            _ => true,
        }
    }

    /// `predicted_port`, for a loop compiled for `known`.
    #[inline(always)]
    pub fn predicted_port_known(&self, known: Known, f: &Fabric, switch: u32, tor_index: u32, pkt: &Packet) -> Option<u32> {
        match (known, self) {
            (Known::Any | Known::Ecmp, fwd) => fwd.predicted_port(f, switch, tor_index, pkt),
            (Known::SprayRandom, Forwarder::Spray(s)) => s.random_predicted_port(f, switch, tor_index, pkt),
            (known, _) => not_the_known_scheme(known),
        }
    }

    /// `at_destination_tor`, for a loop compiled for `known` (the known schemes have no such hook).
    #[inline(always)]
    pub fn at_destination_tor_known(&mut self, known: Known, f: &Fabric, switch: u32, pkt: &mut Packet) {
        if known == Known::Any {
            self.at_destination_tor(f, switch, pkt);
        }
    }

    /// `on_egress`, for a loop compiled for `known` (the known schemes have no such hook).
    #[inline(always)]
    pub fn on_egress_known(&mut self, known: Known, f: &Fabric, port: u32, pkt: &mut Packet) {
        if known == Known::Any {
            self.on_egress(f, port, pkt);
        }
    }

    /// The output port at `switch` for a packet not yet at its destination ToR.
    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        match self {
            Forwarder::Ecmp(s) => s.next_port(f, switch, pkt),
            Forwarder::Vlb(s) => s.next_port(f, switch, pkt),
            Forwarder::Spray(s) => s.next_port(f, switch, pkt),
            Forwarder::Drill(s) => s.next_port(f, switch, pkt),
            Forwarder::Localflow(s) => s.next_port(f, switch, pkt),
            Forwarder::Presto(s) => s.next_port(f, switch, pkt),
            Forwarder::Letflow(s) => s.next_port(f, switch, pkt),
            Forwarder::Conga(s) => s.next_port(f, switch, pkt),
            Forwarder::Wcmp(s) => s.next_port(f, switch, pkt),
        }
    }

    /// The port `next_port` will most likely choose for `pkt` at `switch`, toward the ToR
    /// numbered `tor_index` (its destination's, which the loop has looked up already), so that
    /// the event loop can prefetch its queue line (`prefetch.rs`): exact for ECMP and random
    /// spraying (functions of the packet and the routes); None for schemes whose choice depends
    /// on queues, flowlets or time. A wrong guess only wastes a prefetch.
    #[inline]
    pub fn predicted_port(&self, f: &Fabric, switch: u32, tor_index: u32, pkt: &Packet) -> Option<u32> {
        match self {
            Forwarder::Ecmp(s) => f.routes.pick_toward_tor(switch, tor_index, s.hash(switch, pkt.entropy)),
            Forwarder::Spray(s) => s.predicted_port(f, switch, tor_index, pkt),
            _ => None,
        }
    }

    /// Whether `predicted_port` is the port `next_port` chooses, as long as the routes do not
    /// change in between: ECMP's and random spraying's are (hashes of the packet), and
    /// choosing has no side effect to miss.
    pub fn prediction_is_exact(&self) -> bool {
        match self {
            Forwarder::Ecmp(_) => true,
            Forwarder::Spray(s) => s.prediction_is_exact(),
            _ => false,
        }
    }

    /// Whether the scheme reads `Ports::visible_backlog`, so that the ports must keep the bytes
    /// entering their queues (`Ports::model_entering`).
    pub fn reads_visible_backlog(&self) -> bool {
        matches!(self, Forwarder::Drill(_))
    }

    /// A packet reached its destination's ToR (before it goes down to the host).
    #[inline]
    pub fn at_destination_tor(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) {
        if let Forwarder::Conga(c) = self {
            c.at_destination_leaf(f, switch, pkt);
        }
    }

    /// A packet leaves `switch` by fabric port `port` (after `next_port`).
    #[inline]
    pub fn on_egress(&mut self, f: &Fabric, port: u32, pkt: &mut Packet) {
        if let Forwarder::Conga(c) = self {
            c.on_egress(f, port, pkt);
        }
    }

    /// Routing installed new groups (a failure or repair): grow per-group state, drop state
    /// that may point at ports no longer in a group.
    pub fn on_routes_changed(&mut self, f: &Fabric) {
        match self {
            Forwarder::Spray(s) => s.on_routes_changed(f.routes),
            Forwarder::Drill(d) => d.on_routes_changed(f.routes),
            Forwarder::Localflow(l) => l.forget_rules(),
            _ => {}
        }
    }

    /// Period of the scheme's control loop, if it has one.
    pub fn tick_interval(&self) -> Option<Time> {
        match self {
            Forwarder::Localflow(l) => Some(l.interval),
            _ => None,
        }
    }

    /// Run the control loop once (every `tick_interval`). Returns the rule installs to schedule
    /// (`Event::RulesInstalled`: time, switch, message token) when its rules go through the control
    /// channel.
    pub fn tick(&mut self, f: &Fabric) -> Vec<(Time, u32, u32)> {
        if let Forwarder::Localflow(l) = self {
            l.schedule(f);
            return l.take_installs();
        }
        Vec::new()
    }

    /// With `[convergence] mode = "controller"`: the scheme's own rule rewrites go through the
    /// control channel (LocalFlow's; `control::rewrites`). Other schemes write no rules.
    /// `names`: the switches' names, in node order.
    pub fn use_control_channel(&mut self, c: &crate::control::Settings, names: Vec<String>) {
        if let Forwarder::Localflow(l) = self {
            l.use_control_channel(c, names);
        }
    }

    /// `switch` has written its message `token` of rules (`Event::RulesInstalled`).
    pub fn rules_installed(&mut self, switch: u32, token: u32) {
        if let Forwarder::Localflow(l) = self {
            l.rules_installed(switch, token);
        }
    }

    /// Draw from now on from `streams` instead: a partition of a parallel run
    /// (`sim/parallel.rs`) keeps the salts every world drew alike when built, but its own
    /// draws per packet, so that partitions do not repeat one another's choices.
    pub fn reseed(&mut self, streams: &mut Streams) {
        match self {
            Forwarder::Drill(d) => d.rng = streams.stream(),
            Forwarder::Letflow(l) => l.rng = streams.stream(),
            Forwarder::Spray(s) => s.nonces = streams.stream(),
            Forwarder::Conga(c) => c.rng = streams.stream(),
            _ => {}
        }
    }

    /// Add another partition's counters of the same scheme (`sim/merge.rs`).
    pub fn absorb_stats(&mut self, other: &Forwarder) {
        match (self, other) {
            (Forwarder::Drill(a), Forwarder::Drill(b)) => {
                a.audit.decisions += b.audit.decisions;
                a.audit.audited += b.audit.audited;
                a.audit.least_loaded += b.audit.least_loaded;
                a.audit.read_empty_while_busy += b.audit.read_empty_while_busy;
            }
            (Forwarder::Letflow(a), Forwarder::Letflow(b)) => a.add_flowlets(b.flowlets()),
            _ => {}
        }
    }

    /// Scheme-specific counters for the summary's `load_balancer` section.
    pub fn stats(&self) -> serde_json::Value {
        match self {
            Forwarder::Localflow(l) => {
                let mut v = serde_json::json!({
                    "rounds": l.rounds,
                    "rules_scheduled": l.rules_total,
                    "rules_split": l.splits_total,
                    "split_fraction": if l.rules_total > 0 { l.splits_total as f64 / l.rules_total as f64 } else { 0.0 },
                });
                if let Some(r) = &l.rewrites {
                    v["install"] = r.summary();
                    v["install"]["mixed_version_packets"] = l.mixed_version_packets.into();
                    v["install"]["stale_version_packets"] = l.stale_version_packets.into();
                    if let Some(p) = &l.pins {
                        v["install"]["flows_kept_on_old_round"] = p.kept_old.into();
                    }
                }
                v
            }
            Forwarder::Letflow(l) => serde_json::json!({ "flowlets": l.flowlets() }),
            Forwarder::Conga(c) => serde_json::json!({ "flowlets": c.flowlets() }),
            Forwarder::Drill(d) => {
                let a = d.audit;
                let share = |k: u64| if a.audited > 0 { k as f64 / a.audited as f64 } else { 0.0 };
                serde_json::json!({
                    "decisions": a.decisions,
                    "audited_decisions": a.audited,
                    "chose_least_loaded_fraction": share(a.least_loaded),
                    "chose_read_empty_while_busy_fraction": share(a.read_empty_while_busy),
                })
            }
            _ => serde_json::json!({}),
        }
    }
}

/// A loop compiled for `known`, which `sim/shape.rs` picks only for that scheme, met another:
/// a bug, not an input.
#[cold]
fn not_the_known_scheme(known: Known) -> ! {
    unreachable!("a loop compiled for {known:?} runs another scheme")
}

/// How the scheme wants routing's table entries split into weighted classes.
pub fn split_mode(spec: &RoutingSpec, topo: &Topology) -> Result<SplitMode> {
    Ok(match spec.scheme {
        Scheme::Drill | Scheme::DrillFlow if spec.decompose != Some(false) => SplitMode::Components,
        Scheme::Wcmp => SplitMode::PerPort { fixed: wcmp::fixed_weights(spec, topo)? },
        Scheme::Presto | Scheme::Localflow | Scheme::LocalflowNs if spec.weighted != Some(false) => SplitMode::PerPort { fixed: None },
        _ => SplitMode::None,
    })
}

/// Pick a class of a split by a hash, in proportion to the classes' weights.
#[inline]
pub fn pick_class(classes: &[Class], hash: u64) -> u32 {
    let total = classes[classes.len() - 1].cumulative;
    let r = ((hash as u128 * total as u128) >> 64) as u64;
    classes[classes.partition_point(|c| c.cumulative <= r)].group
}

/// Hasher for maps keyed by values that are already well-mixed hashes (flow entropy): the
/// identity, so per-packet lookups cost no hashing. Iteration order is never relied on.
#[derive(Default)]
pub struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

pub type PreHashedMap<V> = std::collections::HashMap<u64, V, BuildHasherDefault<PreHashed>>;
