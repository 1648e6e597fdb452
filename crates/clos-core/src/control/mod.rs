//! The control plane as a controller and a control channel: forwarding-state changes that take
//! time, and consistent updates (issue 38; docs/updates.md).
//!
//! With `[convergence] mode = "controller"`, a routing change (a failure or a repair, once
//! detected) makes the controller compute a new routing version and push it to the switches.
//! Every message crosses a control channel with a fixed round trip (`latency`; default 2.5 ms,
//! the controller round trip Frenetic quotes from DevoFlow on an HP ProCurve 5406zl, seed 004
//! L5013-L5015), and a switch writes rules at a finite rate (`rule_rate`; default 1000 rules/s,
//! the top of the 600-1000 flow setups per second the multicast paper quotes for OpenFlow
//! switches, seed 004 L1310) into a table of bounded size (`table_size`; default 1000 rules, the
//! multicast paper's switch capacity, seed 004 L2256-L2257, "100s to 1000s of entries", L968).
//!
//! - [`rules`]: how many rules a switch holds for a version, and how many it writes to change.
//! - [`channel`]: when a message sent to a switch has been written (latency, then the rate,
//!   one message after another).
//! - [`strategy`]: the update strategies (`unordered`, `ordered`, `two_phase`, `per_flow`); Frenetic's
//!   consistent updates, seed 004 L5106-L5270.
//! - [`ordered`]: the dependency order of an ordered update (downstream before upstream).
//! - [`consistency`]: which routing versions a hop's rule agrees with; a packet whose hops agree
//!   with no single version was processed by a mix of old and new rules.
//! - [`flow_pins`]: per-flow consistency at the ingress switch: which version a flow's packets
//!   are stamped with (a flow keeps its version until idle for the soft timeout).
//! - [`controller`]: the controller: versions, the planned messages, table space, the record.
//! - [`rewrites`]: a load balancer's periodic rule rewrites (LocalFlow's, every interval) through
//!   the same channel, under the update strategies.
//! - [`rewrite_versions`]: which of those rounds a packet's hops agree with (mixed-version
//!   packets under rule rewrites).

pub mod channel;
pub mod consistency;
pub mod controller;
pub mod flow_pins;
pub mod ordered;
pub mod rewrite_versions;
pub mod rewrites;
pub mod rules;
pub mod strategy;

pub use controller::Controller;
pub use strategy::UpdateStrategy;

use crate::units::{Duration, Time, PS_PER_MS};

/// Default control-channel round trip: 2.5 ms (Frenetic, seed 004 L5013-L5015).
pub const DEFAULT_LATENCY: Duration = Duration(5 * PS_PER_MS / 2);
/// Default rule-writing rate per switch: 1000 rules/s (seed 004 L1310: 600-1000 per second).
pub const DEFAULT_RULE_RATE: f64 = 1000.0;
/// Default table size per switch: 1000 rules (seed 004 L2256-L2257).
pub const DEFAULT_TABLE_SIZE: u64 = 1000;
/// Default drain before a two-phase update removes the old rules: 1 ms, a full 1 MB buffer at
/// 10 Gb/s (0.8 ms) and then some. A packet held longer in full buffers on several hops finds
/// its version's rules gone and is dropped, counted in `stale_version_dropped`.
pub const DEFAULT_DRAIN: Duration = Duration(PS_PER_MS);
/// Default soft timeout of a per-flow update's old ingress rules: 1 s, the shortest nonzero
/// `idle_timeout` an OpenFlow 1.0 switch takes (the field counts whole seconds). A flow idle
/// that long is over: its next packet takes the new version.
pub const DEFAULT_FLOW_TIMEOUT: Duration = Duration(1000 * PS_PER_MS);
/// Routing versions one run may make in controller mode: a packet keeps versions in a byte.
pub const MAX_VERSIONS: usize = 250;

/// What the controller runs by: `[convergence]`'s controller fields, defaults filled
/// (`failures::ConvergenceSpec::normalize`).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub update: UpdateStrategy,
    /// Round trip between the controller and a switch.
    pub latency: Time,
    /// Rules a switch writes per second.
    pub rule_rate: f64,
    /// Rules a switch's table holds.
    pub table_size: u64,
    /// Two-phase: from the last ingress flip to the old rules' removal.
    pub drain: Time,
    /// Per-flow: a flow idle this long at its ingress switch is over (the old rules' soft
    /// timeout).
    pub flow_timeout: Time,
    /// LocalFlow's rewrites: a backlogged switch drops queued older rounds for the newest
    /// (`rewrites`).
    pub coalesce: bool,
}
