//! The rules a switch holds for one routing version, counted the way a switch's forwarding
//! table holds clos's routing tables, and the rules it must write to move between two versions.
//!
//! A switch's row (`routing::Tables`) becomes:
//! - one **entry** per destination ToR it has a route to: match the ToR's prefix (VL2's ToR
//!   locator address), action: a next-hop group;
//! - one entry toward the top tier where it has a route there (VL2's Intermediate anycast
//!   address, VL2 §4.2.2);
//! - one **group** per distinct next-hop set its entries use, weights included (an OpenFlow
//!   select group, or an ECMP group in a merchant-silicon FIB): entries that share ports share it;
//! - at a ToR, one **host** entry per attached server (delivery down its port), alike in every
//!   version.
//!
//! Moving a switch from one version to the next in place writes every entry whose group differs
//! (added, modified or removed), every group the new version adds and every group it drops. Its
//! table holds, while it does, the larger of the two entry sets plus both versions' groups
//! (a group is added before an entry points at it, and dropped after the last stops).
//! A two-phase update installs the whole new version beside the old (Frenetic, seed 004
//! L5188-L5196): every entry, group and host entry again, tagged with the new version.

use crate::routing::{Routes, Tables};

/// An entry's value where the switch has no route (no rule held).
const NONE: u64 = u64::MAX;

/// One switch's rules under one version.
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchRules {
    /// Per entry (`Tables::entry` numbering): its group and split, `NONE` where absent.
    entries: Vec<u64>,
    /// The distinct groups the entries use, sorted.
    groups: Vec<u64>,
    /// Host entries (a ToR's servers).
    pub hosts: u64,
}

impl SwitchRules {
    /// Switch index `s`'s rules under `tables` (`hosts` servers attached).
    pub fn of(tables: &Tables, routes: &Routes, s: usize, hosts: u64) -> SwitchRules {
        let entries: Vec<u64> = (0..tables.entries_per_row())
            .map(|e| {
                let (group, split) = tables.entry(s, e);
                if routes.group(group).is_empty() {
                    NONE
                } else {
                    (group as u64) << 32 | split as u64
                }
            })
            .collect();
        let mut groups: Vec<u64> = entries.iter().copied().filter(|&v| v != NONE).collect();
        groups.sort_unstable();
        groups.dedup();
        SwitchRules { entries, groups, hosts }
    }

    /// Entries held.
    pub fn entries(&self) -> u64 {
        self.entries.iter().filter(|&&v| v != NONE).count() as u64
    }

    /// Groups held.
    pub fn groups(&self) -> u64 {
        self.groups.len() as u64
    }

    /// Every rule held: entries, groups and host entries.
    pub fn total(&self) -> u64 {
        self.entries() + self.groups() + self.hosts
    }

    /// The entries whose rule differs in `new` (added, changed or removed).
    pub fn changed_entries(&self, new: &SwitchRules) -> Vec<u32> {
        (0..self.entries.len()).filter(|&e| self.entries[e] != new.entries[e]).map(|e| e as u32).collect()
    }

    /// The rule a given entry holds (`None`: no route).
    pub fn entry(&self, e: usize) -> Option<u64> {
        (self.entries[e] != NONE).then_some(self.entries[e])
    }

    /// Whether this version holds group `g`.
    pub fn has_group(&self, g: u64) -> bool {
        self.groups.binary_search(&g).is_ok()
    }

    /// Groups in `new` that are not here (to add).
    pub fn groups_added(&self, new: &SwitchRules) -> u64 {
        new.groups.iter().filter(|&&g| !self.has_group(g)).count() as u64
    }

    /// Rules written to move from here to `new` in place.
    pub fn write_ops(&self, new: &SwitchRules) -> u64 {
        self.changed_entries(new).len() as u64 + self.groups_added(new) + new.groups_added(self)
    }

    /// Rules held at the most while moving from here to `new` in place.
    pub fn in_place_peak(&self, new: &SwitchRules) -> u64 {
        self.entries().max(new.entries()) + self.groups() + self.groups_added(new) + self.hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::{LinkState, SplitMode};
    use crate::topology::{fat_tree, Topology};
    use crate::units::Rate;

    fn k4() -> Topology {
        fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap()
    }

    fn rules(t: &Topology, r: &mut Routes, state: &LinkState) -> Vec<SwitchRules> {
        let tables = r.tables(t, state);
        (0..t.n_switches())
            .map(|s| {
                let node = (t.n_hosts + s) as u32;
                let hosts = t.host_tor.iter().filter(|&&h| h == node).count() as u64;
                SwitchRules::of(&tables, r, s, hosts)
            })
            .collect()
    }

    /// A k=4 fat tree (8 edges, 8 aggregation, 4 core switches; 2 hosts per edge), counted by
    /// hand. An edge holds 7 ToR entries (not itself) + 1 toward the core = 8, all using one
    /// group (its 2 uplinks), + 2 host entries = 11. An aggregation switch: 8 ToR entries and
    /// the core entry = 9; groups: the uplink pair (6 remote ToRs and the core entry), and one
    /// per edge of its pod (1 port each) = 3; total 12. A core: 8 entries, one down port per
    /// pod (4 groups), and no core entry (it is the top) = 12.
    #[test]
    fn a_k4_fat_tree_holds_the_rules_counted_by_hand() {
        let t = k4();
        let mut r = Routes::with_state(&t, &LinkState::all_up(&t), SplitMode::None);
        let all = rules(&t, &mut r, &LinkState::all_up(&t));
        let edge = all[t.tors[0] as usize - t.n_hosts].clone();
        assert_eq!((edge.entries(), edge.groups(), edge.hosts, edge.total()), (8, 1, 2, 11));
        let by_role = |role| (0..t.n_switches()).find(|&s| t.role((t.n_hosts + s) as u32) == role).unwrap();
        let agg = &all[by_role(crate::topology::Role::Agg)];
        assert_eq!((agg.entries(), agg.groups(), agg.total()), (9, 3, 12));
        let core = &all[by_role(crate::topology::Role::Core)];
        assert_eq!((core.entries(), core.groups(), core.total()), (8, 4, 12));
    }

    /// One edge uplink of the k=4 fat tree fails (edge0-agg0). Edge0 rewrites its 8 entries
    /// (2 uplinks become 1: a new group, the old one dropped): 8 + 1 + 1 = 10 writes, and holds
    /// 11 + 1 rules while it does. Agg0 now reaches edge0 through edge1 (3 hops; through a core
    /// it is 5): its one entry toward edge0 moves to the group it already uses toward edge1,
    /// and the group of edge0's port goes: 2 writes, no more space.
    #[test]
    fn one_failed_edge_uplink_changes_the_rules_counted_by_hand() {
        let t = k4();
        let mut r = Routes::with_state(&t, &LinkState::all_up(&t), SplitMode::None);
        let before = rules(&t, &mut r, &LinkState::all_up(&t));
        let edge0 = t.tors[0];
        let up = t.ports_of(edge0).find(|&p| !t.is_host(t.ports[p as usize].to)).unwrap();
        let agg0 = t.ports[up as usize].to;
        let mut state = LinkState::all_up(&t);
        state.rate[t.link_of[up as usize] as usize] = 0;
        let after = rules(&t, &mut r, &state);
        let e = edge0 as usize - t.n_hosts;
        assert_eq!(before[e].write_ops(&after[e]), 10);
        assert_eq!(before[e].in_place_peak(&after[e]), 12);
        let a = agg0 as usize - t.n_hosts;
        assert_eq!(before[a].changed_entries(&after[a]), vec![0]);
        assert_eq!(before[a].write_ops(&after[a]), 2);
        assert_eq!((before[a].in_place_peak(&after[a]), after[a].total()), (12, 11));
    }
}
