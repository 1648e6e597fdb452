//! Update strategies: in what order, and how, the controller moves the switches from one routing
//! version to the next (Frenetic's consistent updates, seed 004 L5106-L5270; digest §4).
//!
//! - `unordered`: every switch gets its changes at once and writes them as they arrive. For a
//!   while some switches forward by the old version and some by the new: packets can loop,
//!   black-hole, or take a path neither version has.
//! - `ordered`: the changes go out in rounds, downstream before upstream (`ordered.rs`): a rule
//!   that now points at a switch is written only once that switch forwards by the new version.
//!   Each round waits for every switch's acknowledgement of the one before. No loops; black holes
//!   remain while upstream switches still point into a failed link.
//! - `two_phase`: Frenetic's per-packet consistency (L5181-L5207). (1) Every switch installs the
//!   whole new version beside the old, each rule matching the new version's tag; (2) once all
//!   have acknowledged, the ingress (ToR) switches stamp arriving packets with the new tag;
//!   (3) after `drain`, the old rules are removed. Every packet is forwarded by one version
//!   only, at the cost of a table holding both and of a longer wait before the new version
//!   carries traffic.
//!
//! - `per_flow`: Frenetic's per-flow consistency (L5226-L5270). As two-phase, every switch
//!   installs the new version beside the old; then each ingress (ToR) switch installs the new
//!   version's stamping rules at lower priority, and keeps stamping a flow it already carries
//!   with the old version's tag until the flow has been idle for `flow_timeout` (a soft
//!   timeout on an exact-match rule: the old rules refined down to one per flow). New flows,
//!   and flows back from an idle spell, take the new version. Once no flow has used the old
//!   version for `flow_timeout`, the old rules have all expired and the controller removes the
//!   old version's internal rules. Every packet of a flow is forwarded by one version.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[convergence] update`: how a routing change reaches the switches (docs/updates.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpdateStrategy {
    /// Every switch writes its changes as soon as they arrive.
    #[default]
    Unordered,
    /// Downstream before upstream, round by round: no transient loops.
    Ordered,
    /// The new version beside the old, then ingress stamping flipped: per-packet consistency.
    TwoPhase,
    /// As two-phase, but a flow keeps the old version until it has been idle for
    /// `flow_timeout`: per-flow consistency.
    PerFlow,
}

impl UpdateStrategy {
    pub fn name(self) -> &'static str {
        match self {
            UpdateStrategy::Unordered => "unordered",
            UpdateStrategy::Ordered => "ordered",
            UpdateStrategy::TwoPhase => "two_phase",
            UpdateStrategy::PerFlow => "per_flow",
        }
    }

    /// Whether packets carry the version their ingress switch stamped (two-phase, per-flow),
    /// and switches keep the old version's rules beside the new while they drain.
    pub fn tagged(self) -> bool {
        matches!(self, UpdateStrategy::TwoPhase | UpdateStrategy::PerFlow)
    }
}
