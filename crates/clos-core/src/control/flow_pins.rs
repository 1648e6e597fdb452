//! Per-flow consistency at the ingress switch: which version a flow's packets are stamped with
//! (Frenetic's per-flow consistency, seed 004 L5226-L5270; docs/updates.md). Shared by routing
//! versions (`controller.rs`) and LocalFlow's rounds (`lb/localflow.rs`).
//!
//! The ingress switch refines the old version's stamping rule into one exact-match rule per
//! flow, with a soft (idle) timeout of `timeout`, and installs the new version's stamping rule
//! beside it at lower priority. A flow that has sent within `timeout` keeps the version it was
//! pinned to, while that version's rules are still at the switch; a new flow, or one back from
//! an idle spell of `timeout` or longer, takes the newest version the switch stamps. Under
//! two-phase every packet takes the newest (there are no per-flow rules); the pins only count
//! flows that changed version while they lasted.

use crate::units::Time;
use std::collections::HashMap;

/// A flow at its ingress switch.
#[derive(Clone, Copy, Debug)]
struct Pin {
    version: u32,
    last: Time,
    /// Counted in `switched` or `kept_old` already.
    switched: bool,
    kept: bool,
}

/// The flows seen at the ingress switches, keyed by (flow id, source host).
pub struct FlowPins {
    /// Per-flow: the soft timeout; `None` under two-phase (every packet takes the newest).
    timeout: Option<Time>,
    flows: HashMap<u64, Pin>,
    /// When a packet was last stamped with a version older than the newest (`stamp`'s
    /// `newest`): the old version's rules cannot go before this plus the timeout.
    pub old_last: Time,
    /// Flows whose packets were stamped with more than one version while the flow lasted.
    pub switched: u64,
    /// Per-flow: flows that kept an old version after their switch stamped new flows with a
    /// newer one.
    pub kept_old: u64,
}

impl FlowPins {
    pub fn new(timeout: Option<Time>) -> FlowPins {
        FlowPins { timeout, flows: HashMap::new(), old_last: 0, switched: 0, kept_old: 0 }
    }

    /// The version to stamp on a packet of flow `key` at `now`: `current` is what the switch
    /// stamps new flows with, `newest` the newest version anywhere, `held(v)` whether version
    /// `v`'s rules are still at the switch.
    pub fn stamp(&mut self, key: u64, now: Time, current: u32, newest: u32, held: impl Fn(u32) -> bool) -> u32 {
        let pin = self.flows.entry(key).or_insert(Pin { version: current, last: now, switched: false, kept: false });
        let v = match self.timeout {
            None => current,
            Some(timeout) => {
                if now - pin.last < timeout && held(pin.version) {
                    pin.version
                } else {
                    // A new flow, or one back from an idle spell: its old rule has expired.
                    *pin = Pin { version: current, last: now, switched: false, kept: false };
                    current
                }
            }
        };
        if v != pin.version && !pin.switched {
            pin.switched = true;
            self.switched += 1;
        }
        if v != current && !pin.kept {
            pin.kept = true;
            self.kept_old += 1;
        }
        pin.version = v;
        pin.last = now;
        if v != newest {
            self.old_last = self.old_last.max(now);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_MS;

    /// Timeout 10 ms. Flow 1 sends at 0 and 5 ms (version 0); the switch moves to version 1 at
    /// 6 ms. Flow 1 sends at 8 ms (idle 3 ms < 10): it keeps version 0, counted kept once. Flow
    /// 2 starts at 8 ms: version 1. Flow 1 idles to 19 ms (11 ms >= 10): version 1, and it was
    /// never stamped with two versions while it lasted. The last old stamp was at 8 ms.
    #[test]
    fn an_active_flow_keeps_its_version_and_an_idle_one_moves() {
        let ms = PS_PER_MS;
        let mut p = FlowPins::new(Some(10 * ms));
        let all = |_: u32| true;
        assert_eq!(p.stamp(1, 0, 0, 0, all), 0);
        assert_eq!(p.stamp(1, 5 * ms, 0, 0, all), 0);
        assert_eq!(p.stamp(1, 8 * ms, 1, 1, all), 0);
        assert_eq!(p.stamp(1, 9 * ms, 1, 1, all), 0);
        assert_eq!(p.stamp(2, 8 * ms, 1, 1, all), 1);
        assert_eq!((p.kept_old, p.old_last), (1, 9 * ms));
        assert_eq!(p.stamp(1, 20 * ms, 1, 1, all), 1);
        assert_eq!(p.switched, 0);
        // A pinned version whose rules are gone moves the flow at once, though it lasts: its
        // rule is gone, so it is re-pinned as a new flow (per-flow switches no flow).
        assert_eq!(p.stamp(2, 12 * ms, 2, 2, |v| v == 2), 2);
        assert_eq!((p.switched, p.kept_old), (0, 1));
        // Two-phase: every packet takes the current version; flow 3 switched once.
        let mut q = FlowPins::new(None);
        assert_eq!(q.stamp(3, 0, 0, 0, all), 0);
        assert_eq!(q.stamp(3, ms, 1, 1, all), 1);
        assert_eq!(q.stamp(3, 2 * ms, 1, 1, all), 1);
        assert_eq!((q.switched, q.kept_old), (1, 0));
    }
}
