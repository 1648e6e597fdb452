//! The order of an ordered update: downstream before upstream.
//!
//! Each changed entry (switch `s`, destination `d`) goes out in round `r` = `s`'s hop distance
//! to `d` under the new version (for the entry toward the top tier, the distance to the nearest
//! top-tier switch); an entry the new version removes (no route left) goes out in round 1. A
//! round is sent once every switch has acknowledged the round before.
//!
//! Why no packet loops: the old and the new version are each loop-free (shortest paths). Take
//! any moment and one destination. A switch that has written its new entry points at switches
//! one hop closer under the new version, whose own changed entries were in an earlier round
//! (written) or did not change: either way they forward by the new version too. So once a
//! packet meets a switch forwarding by the new version it follows the new version's paths,
//! whose distance falls at each hop; before that it follows the old version's. Neither loops.
//! The same order is the one link-state protocols use against micro-loops (RFC 6976's ordered
//! FIB updates). It does not avoid black holes: a switch still pointing into a failed link
//! loses what it sends there until its round comes.

use crate::routing::{switch_distances, LinkState};
use crate::topology::{Role, Topology};
use std::collections::HashMap;

/// The round of every changed entry: `changed[s]` lists switch index `s`'s changed entries
/// (`Tables::entry` numbering, the last being the one toward the top tier); the answer has
/// the rounds in the same places.
pub fn rounds(t: &Topology, state: &LinkState, changed: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let n_tors = t.tors.len();
    let up = |p: u32| state.port_up(t, p);
    let mut dist: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut round = |s: usize, e: u32| -> u32 {
        let d = dist.entry(e).or_insert_with(|| {
            let sources: Vec<u32> =
                if e as usize == n_tors { (0..t.nodes.len() as u32).filter(|&n| t.role(n) == Role::Core).collect() } else { vec![t.tors[e as usize]] };
            switch_distances(t, &sources, &up)
        });
        match d[t.n_hosts + s] {
            u32::MAX | 0 => 1,
            hops => hops,
        }
    };
    changed.iter().enumerate().map(|(s, entries)| entries.iter().map(|&e| round(s, e)).collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fat_tree;
    use crate::units::Rate;

    /// k=4 fat tree, edge0-agg0 fails. Toward edge0 under the new version: agg1 is 1 hop away,
    /// edge1 2, agg0 3 (through edge1), the cores above agg1 2. Agg0's entry toward edge0 goes
    /// out in round 3, after edge1 (round 2) and agg1 (round 1) forward by the new version.
    #[test]
    fn downstream_switches_come_first() {
        let t = fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let edge0 = t.tors[0];
        let up = t.ports_of(edge0).find(|&p| !t.is_host(t.ports[p as usize].to)).unwrap();
        let agg0 = t.ports[up as usize].to as usize - t.n_hosts;
        let agg1 = t.ports[up as usize + 1].to as usize - t.n_hosts;
        let mut state = LinkState::all_up(&t);
        state.rate[t.link_of[up as usize] as usize] = 0;
        let mut changed = vec![Vec::new(); t.n_switches()];
        changed[agg0] = vec![0];
        changed[agg1] = vec![0];
        changed[t.tors[1] as usize - t.n_hosts] = vec![0];
        let r = rounds(&t, &state, &changed);
        assert_eq!((r[agg1][0], r[t.tors[1] as usize - t.n_hosts][0], r[agg0][0]), (1, 2, 3));
    }
}
