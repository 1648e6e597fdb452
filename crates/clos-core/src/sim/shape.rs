//! The event loop compiled once per shape of run.
//!
//! Most runs have no failures, no VL2 directory and no reorder shim, and forward by a scheme
//! whose hop is a function of the packet and the fixed routes (ECMP, random spraying). For those
//! the loop need not ask, at every event, whether a link failed, whether the routes have holes,
//! whether the directory must see the packet, or which scheme to call: `World::run_until` picks
//! the run's shape once per call and runs the hot path compiled for it, with those questions
//! answered at compile time, and with how far it looks ahead (a branch per event that, fixed,
//! also lets the compiler lay the loop out for the one case). Every other run takes
//! [`General`], which asks them all as before.
//! A shape changes no result (`tests::every_shape_gives_the_general_result`); on B2 under
//! random spraying it took 470 instructions per event to about 450, and 0.95-0.97x of the time
//! (docs/performance.md, "The loop compiled per shape").

use crate::lb::Known;

/// How far the loop looks ahead (`World::prefetch_ahead`), which the fabric's size decides
/// when the world is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Look {
    /// As `World::look_ahead` and `look_ahead_flows` say, asked at every event.
    Asked,
    Off,
    /// The switch hops ahead.
    Hops,
    /// The switch hops, and the flow state of host events.
    HopsAndFlows,
}

impl Look {
    pub(super) const fn code(self) -> u8 {
        self as u8
    }

    const fn of_code(code: u8) -> Look {
        match code {
            1 => Look::Off,
            2 => Look::Hops,
            3 => Look::HopsAndFlows,
            _ => Look::Asked,
        }
    }
}

/// What the hot path may take as fixed for a whole run.
pub(super) trait Shape {
    /// The scheme, where the loop is compiled for one (`lb::Known`).
    const KNOWN: Known;
    /// No failures, no directory and no reorder shim. Only the known schemes run plain, so
    /// that their hop, exact in the look-ahead's prediction, is taken from it.
    const PLAIN: bool = !matches!(Self::KNOWN, Known::Any);
    const LOOK: Look;
    /// Whether the world may be a partition of a parallel run (`parallel.rs`), whose packets
    /// to other partitions' nodes are handed over: asked per hop only where this is true.
    const PARTED: bool;
}

/// Anything: failures, the directory, the shim, any scheme; the look-ahead as asked.
pub(super) struct General;

/// ECMP (`SPRAY` false) or random spraying (true) on a fabric that never changes, without the
/// directory or the shim, looking ahead as `Look::code` `LOOK` says, in a partition of a parallel
/// run if `PARTED`.
pub(super) struct Plain<const SPRAY: bool, const LOOK: u8, const PARTED: bool>;

impl Shape for General {
    const KNOWN: Known = Known::Any;
    const LOOK: Look = Look::Asked;
    const PARTED: bool = true;
}

impl<const SPRAY: bool, const LOOK: u8, const PARTED: bool> Shape for Plain<SPRAY, LOOK, PARTED> {
    const KNOWN: Known = if SPRAY { Known::SprayRandom } else { Known::Ecmp };
    const LOOK: Look = Look::of_code(LOOK);
    const PARTED: bool = PARTED;
}

#[cfg(test)]
mod tests {
    use super::super::tests::dctcp_permutation;
    use super::super::World;
    use super::Look;
    use crate::lb::Known;

    /// The shapes only leave out questions whose answers are fixed: a run of each known scheme,
    /// on a fabric small enough to forgo the look-ahead (k = 8) and one large enough to use it
    /// (k = 16, with and without the flow state), runs the same events to the same counts,
    /// marks, bytes and queueing delays through its shape as through the general loop.
    #[test]
    fn every_shape_gives_the_general_result() {
        for (scheme, known) in [("ecmp", Known::Ecmp), ("spray-random", Known::SprayRandom)] {
            for (k, look) in [(8, Look::Off), (16, Look::Hops), (16, Look::HopsAndFlows)] {
                let s = dctcp_permutation(3, k, "100KB", "30KB", scheme);
                let run = |general_only: bool| {
                    let mut w = World::new(&s).unwrap();
                    w.general_only = general_only;
                    // As the case asks: k = 16's 1,024 flows would have it on (FLOW_LOOK_AHEAD_BYTES).
                    w.look_ahead_flows = look == Look::HopsAndFlows;
                    assert_eq!(w.shape(), if general_only { Known::Any } else { known }, "{scheme}");
                    assert_eq!(w.look(), look, "{scheme} k={k}");
                    w.run();
                    let delays: Vec<_> = (0..3).map(|tier| w.ports.queueing.percentile(tier, 99.0)).collect();
                    let marks: u64 = w.ports.ecn_marks.iter().sum();
                    (w.events, w.counters.clone(), marks, w.delivered_bytes.clone(), w.in_flight(), delays)
                };
                let (shaped, general) = (run(false), run(true));
                assert!(shaped.1.delivered > 10_000, "{scheme} k={k}: {:?}", shaped.1);
                // ECMP's colliding flows queue in the fabric; spraying's queue at the hosts.
                assert!(known != Known::Ecmp || shaped.2 > 0, "{scheme} k={k}: queues fill to marking");
                assert_eq!(shaped, general, "{scheme} k={k}");
            }
        }
    }
}
