//! Which of a load balancer's rounds a packet's hops agree with: mixed-version packets under
//! LocalFlow's rule rewrites (issue 38; docs/updates.md, "Update strategies for LocalFlow's
//! rewrites"). The routing versions' counterpart is `consistency.rs`; the idea is Frenetic's
//! per-packet consistency (seed 004 L5124-L5156).
//!
//! Every round of LocalFlow's loop (every interval) decides a new version of each switch's flow
//! rules. A hop forwards a packet by one rule, and that rule, as the switch holds it, agrees with
//! an interval of rounds: from the round whose decision it is (`since`; 0 for the ECMP default a
//! flow has before its first decision) to the round before the next decision that changed it
//! (`until`; open while no later round has). A packet keeps the intersection of its hops'
//! intervals; when it becomes empty no single round's rules forward the packet the way it went,
//! and it is counted once. Under two-phase updates every hop uses the rules of the version the
//! packet was stamped with, which agree with that version's round only (`[v, v]`).
//!
//! The intersection lives in two bytes of the packet that only CONGA uses (`conga_ce`,
//! `conga_fb.1`), so routing's own version bytes stay free: `lo` as the round's low byte (the
//! round is within 250 of the current one), and a code for `hi`: 0 no hop yet (every round),
//! 1 + (hi - lo) for a width up to 252, `OPEN` for an open end, `MIXED` once counted. A wider
//! interval has its `lo` raised to `hi - 252`, and a `since` more than 250 rounds back is taken
//! as 250 rounds back: that can hide a mix only for a rule left unwritten for 250 rounds.

use crate::packet::Packet;

/// `until` of a rule no later round has changed.
pub const OPEN_END: u32 = u32::MAX;
const OPEN: u8 = 255;
const MIXED: u8 = 254;
const WIDEST: u32 = 252;
/// How far back a packet's `lo` can reach.
const REACH: u32 = 250;

/// The packet took a hop by a rule that agrees with rounds `since..=until` (`until` may be
/// `OPEN_END`); `now` is the current round. Returns whether this hop made the packet mixed.
#[inline]
pub fn hop(pkt: &mut Packet, now: u32, since: u32, until: u32) -> bool {
    let code = pkt.conga_ce;
    if code == MIXED {
        return false;
    }
    let floor = now.saturating_sub(REACH);
    let (mut lo, mut hi) = (since.max(floor), until);
    if code != 0 {
        // The packet's lo: the latest round at or before `now` with this low byte.
        let back = (now as u8).wrapping_sub(pkt.conga_fb.1) as u32;
        let plo = now.saturating_sub(back).max(floor);
        let phi = if code == OPEN { OPEN_END } else { plo + (code - 1) as u32 };
        lo = lo.max(plo);
        hi = hi.min(phi);
    }
    if lo > hi {
        pkt.conga_ce = MIXED;
        return true;
    }
    if hi == OPEN_END {
        pkt.conga_ce = OPEN;
    } else {
        lo = lo.max(hi.saturating_sub(WIDEST));
        pkt.conga_ce = 1 + (hi - lo) as u8;
    }
    pkt.conga_fb.1 = lo as u8;
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Packet {
        Packet::default()
    }

    /// Round 7: a ToR's rule from round 5, still the newest ([5, open]), then an aggregation
    /// switch's rule from round 2 whose replacement (decided at round 4) is not yet written
    /// ([2, 3]): no round agrees with both, the packet is mixed, once. A packet that met the
    /// ECMP default ([0, open]) and a rule from round 6 is not.
    #[test]
    fn a_packet_is_mixed_when_its_hops_agree_with_no_round() {
        let mut p = fresh();
        assert!(!hop(&mut p, 7, 5, OPEN_END));
        assert!(hop(&mut p, 7, 2, 3));
        assert!(!hop(&mut p, 7, 0, OPEN_END), "counted once");
        let mut q = fresh();
        assert!(!hop(&mut q, 7, 0, OPEN_END));
        assert!(!hop(&mut q, 7, 6, OPEN_END));
        // Its interval is now [6, open]: a rule that agrees up to round 5 only mixes it.
        assert!(hop(&mut q.clone(), 8, 1, 5));
        assert!(!hop(&mut q, 8, 1, 6));
    }

    /// Rounds past 255 wrap in the byte but decode relative to the current round; two-phase's
    /// point intervals agree only when equal.
    #[test]
    fn rounds_wrap_and_point_intervals_compare() {
        let mut p = fresh();
        assert!(!hop(&mut p, 1000, 999, 999));
        assert!(!hop(&mut p, 1001, 999, 999));
        assert!(hop(&mut p, 1001, 1000, 1000));
        let mut q = fresh();
        assert!(!hop(&mut q, 300, 290, 299));
        assert!(!hop(&mut q, 301, 0, OPEN_END));
        assert!(hop(&mut q, 301, 300, OPEN_END));
    }
}
