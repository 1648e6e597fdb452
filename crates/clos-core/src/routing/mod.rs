//! Shortest-path next-hop groups, computed into dense tables.
//!
//! For every switch and every destination ToR, the group is the set of ports whose far end is one
//! hop closer to that ToR (all equal-cost next hops; parallel links count separately). A second
//! table gives, for VLB, the ports one hop closer to the nearest top-tier switch (VL2's
//! Intermediate anycast address, §4.2.2). Identical groups are stored once, so the per-packet
//! lookup is two array reads and the tables stay small at 8,192 hosts; where a group is a range
//! of consecutive ports, its entry is also kept as that range (`Span`), and the schemes that
//! pick by a hash compute their port from that one read.
//!
//! Routing follows a [`LinkState`]: the links the control plane believes are up, and their
//! capacities. When it changes (a failure has been detected, a restored link advertised), a new
//! set of [`Tables`] is computed and each switch installs its own row when the link-state model
//! says it has converged (`sim/failures.rs`); until then it forwards with its old row. Groups
//! from every version share one store, so a group id stays valid (and names one switch's port
//! set) for the whole run.
//!
//! Schemes that weigh their choices ask for a [`SplitMode`]: every table entry then also names a
//! *split*, a list of (group, weight) classes a flow is hashed to before the scheme picks a port
//! in the class: WCMP's and Presto's per-port path capacities (`weights.rs`), or DRILL's
//! symmetric components (`quiver.rs`).

pub mod pick;
pub mod quiver;
pub mod weights;

use crate::topology::{Role, Topology};
use pick::{pick, pick_index};
use std::collections::{HashMap, VecDeque};

const UNREACHABLE: u32 = u32::MAX;

/// What the control plane believes about every physical link: its capacity, 0 when down.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkState {
    pub rate: Vec<u64>,
}

impl LinkState {
    /// Every link up at its built rate.
    pub fn all_up(t: &Topology) -> LinkState {
        LinkState { rate: t.links.iter().map(|l| t.ports[l[0] as usize].rate_bps).collect() }
    }
    #[inline]
    pub fn port_up(&self, t: &Topology, port: u32) -> bool {
        self.rate[t.link_of[port as usize] as usize] > 0
    }
    #[inline]
    pub fn port_rate(&self, t: &Topology, port: u32) -> u64 {
        self.rate[t.link_of[port as usize] as usize]
    }
}

/// How table entries are split into weighted classes (see the module comment).
#[derive(Clone, Debug, PartialEq)]
pub enum SplitMode {
    None,
    /// One class per port, weighted by the capacity of the shortest paths through it, or by
    /// fixed per-port weights when given (WCMP `routing.weights`).
    PerPort {
        fixed: Option<Vec<u64>>,
    },
    /// DRILL's symmetric components, weighted by their paths' aggregate capacity (DRILL §3.4).
    Components,
}

/// One routing version: every switch's row.
pub struct Tables {
    to_tor: Vec<u32>,
    to_core: Vec<u32>,
    split: Vec<u32>,
}

impl Tables {
    /// Switches with a row.
    pub fn n_switches(&self) -> usize {
        self.to_core.len()
    }

    /// Entries per row: one per destination ToR, then the one toward the top tier (VL2's
    /// Intermediate anycast address). Entry `e` of switch index `s` is
    /// `entry(s, e)`, read by the control plane (`control/rules.rs`).
    pub fn entries_per_row(&self) -> usize {
        self.to_tor.len() / self.to_core.len().max(1) + 1
    }

    /// Entry `e` of switch index `s` (0-based among switches): its group and its split (0
    /// without splits); `e` = ToRs is the entry toward the top tier.
    pub fn entry(&self, s: usize, e: usize) -> (u32, u32) {
        let n_tors = self.entries_per_row() - 1;
        if e == n_tors {
            return (self.to_core[s], 0);
        }
        let i = s * n_tors + e;
        (self.to_tor[i], self.split.get(i).copied().unwrap_or(0))
    }
}

/// The rows a switch forwards by, set aside whole (`Routes::swap_installed`): a two-phase
/// update keeps the old version's rows beside the new ones while old-tagged packets drain
/// (`control/`).
pub struct Installed {
    to_tor: Vec<u32>,
    spans: Vec<Span>,
    to_core: Vec<u32>,
    split: Vec<u32>,
    row_holes: Vec<bool>,
    rows_with_holes: usize,
    has_holes: bool,
}

/// One class of a split: a group and the cumulative weight up to and including it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Class {
    pub group: u32,
    pub cumulative: u64,
}

/// A group of consecutive ports `first..first + len` in one word, the first in the high 24 bits
/// and the length in the low 8; `NONE` (a length of 0) where the group is empty or is not such
/// a range. Fat trees and leaf-spines with single links, built whole, have only ranges: a
/// switch's ports toward one tier are numbered in a row (`topology`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span(u32);

impl Span {
    const NONE: Span = Span(0);

    fn of(group: &[u32]) -> Span {
        let Some(&first) = group.first() else { return Span::NONE };
        let consecutive = group.iter().enumerate().all(|(i, &p)| p as u64 == first as u64 + i as u64);
        if consecutive && group.len() < 1 << 8 && first < 1 << 24 {
            Span(first << 8 | group.len() as u32)
        } else {
            Span::NONE
        }
    }

    #[inline]
    fn first(self) -> u32 {
        self.0 >> 8
    }

    #[inline]
    fn len(self) -> usize {
        (self.0 & 0xff) as usize
    }
}

/// Distinct lists stored back to back, each interned once under a dense id: list `i` is
/// `items[start[i]..start[i + 1]]`. Equal-cost groups and weighted splits are both kept so, and
/// the forwarding path reads them as plain slices.
#[derive(Clone)]
struct Lists<T> {
    items: Vec<T>,
    start: Vec<u32>,
    ids: HashMap<Vec<T>, u32>,
}

impl<T: Copy + Eq + std::hash::Hash> Lists<T> {
    fn new() -> Self {
        Lists { items: Vec::new(), start: vec![0], ids: HashMap::new() }
    }

    /// The id of `list`, storing it if it is new.
    fn intern(&mut self, list: Vec<T>) -> u32 {
        if let Some(&id) = self.ids.get(&list) {
            return id;
        }
        let id = (self.start.len() - 1) as u32;
        self.items.extend_from_slice(&list);
        self.start.push(self.items.len() as u32);
        self.ids.insert(list, id);
        id
    }

    #[inline]
    fn get(&self, id: usize) -> &[T] {
        &self.items[self.start[id] as usize..self.start[id + 1] as usize]
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }
}

#[derive(Clone)]
pub struct Routes {
    /// Every distinct equal-cost group (a list of ports), by group id.
    groups: Lists<u32>,
    /// `to_tor[switch_index * n_tors + tor_index]` = group id (the installed rows).
    to_tor: Vec<u32>,
    /// The same entries as consecutive port ranges where they are ones (`Span`), for the
    /// hash-picking schemes' hop: one read instead of three dependent ones.
    spans: Vec<Span>,
    /// `to_core[switch_index]` = group id toward the nearest top-tier switch (empty at the top).
    to_core: Vec<u32>,
    /// `split[switch_index * n_tors + tor_index]` = split id (empty under `SplitMode::None`).
    split: Vec<u32>,
    /// Every distinct split (a list of weighted classes), by split id.
    splits: Lists<Class>,
    mode: SplitMode,
    n_tors: usize,
    n_hosts: usize,
    tors: Vec<u32>,
    /// Whether an installed row has an empty group toward some ToR (a partitioned fabric):
    /// then the simulator checks for a route before asking the load balancer.
    pub has_holes: bool,
    row_holes: Vec<bool>,
    rows_with_holes: usize,
}

impl Routes {
    /// Every link up, no splits.
    pub fn compute(t: &Topology) -> Routes {
        Routes::with_state(t, &LinkState::all_up(t), SplitMode::None)
    }

    pub fn with_state(t: &Topology, state: &LinkState, mode: SplitMode) -> Routes {
        let mut r = Routes {
            groups: Lists::new(),
            to_tor: Vec::new(),
            spans: Vec::new(),
            to_core: Vec::new(),
            split: Vec::new(),
            splits: Lists::new(),
            mode,
            n_tors: t.tors.len(),
            n_hosts: t.n_hosts,
            tors: t.tors.clone(),
            has_holes: false,
            row_holes: Vec::new(),
            rows_with_holes: 0,
        };
        let Tables { to_tor, to_core, split } = r.tables(t, state);
        r.spans = to_tor.iter().map(|&g| Span::of(r.group(g))).collect();
        (r.to_tor, r.to_core, r.split) = (to_tor, to_core, split);
        r.row_holes = vec![false; t.n_switches()];
        for s in 0..t.n_switches() {
            r.update_holes(s);
        }
        r
    }

    /// The rows every switch would install for `state` (interning any new groups).
    pub fn tables(&mut self, t: &Topology, state: &LinkState) -> Tables {
        let n_sw = t.n_switches();
        let n_tors = t.tors.len();
        let up = |p: u32| state.port_up(t, p);
        let mut to_tor = vec![0u32; n_sw * n_tors];
        // Each ToR's distances span every node (n_tors x nodes: 2.3 GB for a VL2 of 100,000
        // servers); only the weighted splits read them again.
        let keep = !matches!(self.mode, SplitMode::None);
        let mut dists = Vec::with_capacity(if keep { n_tors } else { 0 });
        for (ti, &tor) in t.tors.iter().enumerate() {
            let dist = switch_distances(t, &[tor], &up);
            for s in 0..n_sw {
                let node = (t.n_hosts + s) as u32;
                to_tor[s * n_tors + ti] = self.intern(closer_ports(t, node, &dist, &up));
            }
            if keep {
                dists.push(dist);
            }
        }
        let cores: Vec<u32> = (0..t.nodes.len() as u32).filter(|&n| t.role(n) == Role::Core).collect();
        let dist = switch_distances(t, &cores, &up);
        let to_core = (0..n_sw).map(|s| self.intern(closer_ports(t, (t.n_hosts + s) as u32, &dist, &up))).collect();
        let split = match self.mode.clone() {
            SplitMode::None => Vec::new(),
            SplitMode::PerPort { fixed } => {
                let mut split = vec![0; n_sw * n_tors];
                for (ti, dist) in dists.iter().enumerate() {
                    let w = weights::port_weights(t, state, dist, fixed.as_deref());
                    for s in 0..n_sw {
                        let group = self.group(to_tor[s * n_tors + ti]).to_vec();
                        let classes: Vec<(Vec<u32>, u64)> = group.iter().map(|&p| (vec![p], w[p as usize])).collect();
                        split[s * n_tors + ti] = self.intern_split(classes);
                    }
                }
                split
            }
            SplitMode::Components => {
                let q = quiver::Quiver::build(t, state, &dists);
                let mut split = vec![0; n_sw * n_tors];
                for ti in 0..n_tors {
                    for s in 0..n_sw {
                        let node = (t.n_hosts + s) as u32;
                        let classes = q.components(t, state, node, &dists[ti]);
                        split[s * n_tors + ti] = self.intern_split(classes);
                    }
                }
                split
            }
        };
        Tables { to_tor, to_core, split }
    }

    /// Switch `switch` installs its row of `tables`.
    pub fn install(&mut self, switch: u32, tables: &Tables) {
        let s = switch as usize - self.n_hosts;
        let row = s * self.n_tors..(s + 1) * self.n_tors;
        self.to_tor[row.clone()].copy_from_slice(&tables.to_tor[row.clone()]);
        for i in row.clone() {
            self.spans[i] = Span::of(self.groups.get(self.to_tor[i] as usize));
        }
        if !self.split.is_empty() {
            self.split[row.clone()].copy_from_slice(&tables.split[row]);
        }
        self.to_core[s] = tables.to_core[s];
        self.update_holes(s);
    }

    /// Switch `switch` installs entry `e` of its row of `tables` alone (`Tables::entry`'s
    /// numbering): an ordered update writes a switch's entries in rounds (`control/ordered.rs`).
    pub fn install_entry(&mut self, switch: u32, e: usize, tables: &Tables) {
        let s = switch as usize - self.n_hosts;
        if e == self.n_tors {
            self.to_core[s] = tables.to_core[s];
            return;
        }
        let i = s * self.n_tors + e;
        self.to_tor[i] = tables.to_tor[i];
        self.spans[i] = Span::of(self.groups.get(self.to_tor[i] as usize));
        if !self.split.is_empty() {
            self.split[i] = tables.split[i];
        }
        self.update_holes(s);
    }

    /// A copy of the rows installed now.
    pub fn snapshot(&self) -> Installed {
        Installed {
            to_tor: self.to_tor.clone(),
            spans: self.spans.clone(),
            to_core: self.to_core.clone(),
            split: self.split.clone(),
            row_holes: self.row_holes.clone(),
            rows_with_holes: self.rows_with_holes,
            has_holes: self.has_holes,
        }
    }

    /// Exchange the installed rows with `other` (a handful of pointer swaps): a switch forwards
    /// an old-tagged packet by the old version's rows, then swaps back.
    #[inline]
    pub fn swap_installed(&mut self, other: &mut Installed) {
        std::mem::swap(&mut self.to_tor, &mut other.to_tor);
        std::mem::swap(&mut self.spans, &mut other.spans);
        std::mem::swap(&mut self.to_core, &mut other.to_core);
        std::mem::swap(&mut self.split, &mut other.split);
        std::mem::swap(&mut self.row_holes, &mut other.row_holes);
        std::mem::swap(&mut self.rows_with_holes, &mut other.rows_with_holes);
        std::mem::swap(&mut self.has_holes, &mut other.has_holes);
    }

    /// Whether switch `s`'s row has an empty group toward some ToR other than itself.
    fn row_has_hole(&self, s: usize) -> bool {
        let node = (self.n_hosts + s) as u32;
        (0..self.n_tors).any(|ti| {
            let g = self.to_tor[s * self.n_tors + ti] as usize;
            self.groups.get(g).is_empty() && self.tors[ti] != node
        })
    }

    fn update_holes(&mut self, s: usize) {
        let hole = self.row_has_hole(s);
        if hole != self.row_holes[s] {
            self.row_holes[s] = hole;
            if hole {
                self.rows_with_holes += 1;
            } else {
                self.rows_with_holes -= 1;
            }
        }
        self.has_holes = self.rows_with_holes > 0;
    }

    fn intern(&mut self, group: Vec<u32>) -> u32 {
        self.groups.intern(group)
    }

    /// Intern a split from (ports, weight) classes; weights are reduced by their gcd, so that
    /// equal classes get weight 1 each (Presto consumes them as a mixed radix).
    fn intern_split(&mut self, classes: Vec<(Vec<u32>, u64)>) -> u32 {
        let g = classes.iter().fold(0, |g, c| gcd(g, c.1)).max(1);
        let mut sum = 0;
        let mut list = Vec::with_capacity(classes.len());
        for (ports, w) in classes {
            sum += w / g;
            let group = self.intern(ports);
            list.push(Class { group, cumulative: sum });
        }
        self.splits.intern(list)
    }

    /// Equal-cost ports at `switch` toward ToR number `tor_index`.
    #[inline]
    pub fn toward_tor(&self, switch: u32, tor_index: u32) -> &[u32] {
        self.group(self.group_toward_tor(switch, tor_index))
    }

    /// `pick(self.toward_tor(switch, tor_index), hash)`, None where the group is empty: the
    /// hop of the schemes that pick by a hash. Where the group is a `Span` (every entry of a
    /// fat tree built whole), the port is computed from the entry alone.
    #[inline]
    pub fn pick_toward_tor(&self, switch: u32, tor_index: u32, hash: u64) -> Option<u32> {
        let span = self.spans[(switch as usize - self.n_hosts) * self.n_tors + tor_index as usize];
        if span != Span::NONE {
            return Some(span.first() + pick_index(span.len(), hash) as u32);
        }
        self.pick_in_group(switch, tor_index, hash)
    }

    #[cold]
    #[inline(never)]
    fn pick_in_group(&self, switch: u32, tor_index: u32, hash: u64) -> Option<u32> {
        let group = self.toward_tor(switch, tor_index);
        (!group.is_empty()).then(|| pick(group, hash))
    }

    /// Bytes of the rows a packet's hop reads from (`to_tor`, or `spans`, of the same size),
    /// for sizing the look-ahead.
    pub fn row_bytes(&self) -> usize {
        std::mem::size_of_val(self.to_tor.as_slice())
    }

    /// Start loading the entry a hop will read (`prefetch.rs`): `pick_toward_tor`'s where
    /// `spans` says so, else `group_toward_tor`'s.
    #[inline]
    pub fn prefetch_toward_tor(&self, switch: u32, tor_index: u32, spans: bool) {
        let i = (switch as usize).wrapping_sub(self.n_hosts).wrapping_mul(self.n_tors).wrapping_add(tor_index as usize);
        if spans {
            if let Some(e) = self.spans.get(i) {
                crate::prefetch::line(e);
            }
        } else if let Some(e) = self.to_tor.get(i) {
            crate::prefetch::line(e);
        }
    }

    /// The id of that group. Groups are sets of one switch's ports, so an id also names the
    /// switch: per-group scheme state (round-robin pointers, DRILL memory) is indexed by it.
    #[inline]
    pub fn group_toward_tor(&self, switch: u32, tor_index: u32) -> u32 {
        self.to_tor[(switch as usize - self.n_hosts) * self.n_tors + tor_index as usize]
    }

    /// The weighted classes at `switch` toward ToR `tor_index` (requires a split mode).
    #[inline]
    pub fn split_toward_tor(&self, switch: u32, tor_index: u32) -> &[Class] {
        if self.split.is_empty() {
            return &[];
        }
        let id = self.split[(switch as usize - self.n_hosts) * self.n_tors + tor_index as usize] as usize;
        self.splits.get(id)
    }

    #[inline]
    pub fn group_toward_core(&self, switch: u32) -> u32 {
        self.to_core[switch as usize - self.n_hosts]
    }

    /// Where group `g`'s ports start in the flat port storage (for per-port-of-group tables).
    #[inline]
    pub fn group_offset(&self, g: u32) -> usize {
        self.groups.start[g as usize] as usize
    }

    /// Total length of the flat port storage.
    pub fn group_storage_len(&self) -> usize {
        self.groups.items.len()
    }

    /// Equal-cost ports at `switch` toward the nearest top-tier switch.
    #[inline]
    pub fn toward_core(&self, switch: u32) -> &[u32] {
        self.group(self.to_core[switch as usize - self.n_hosts])
    }

    #[inline]
    pub fn group(&self, g: u32) -> &[u32] {
        self.groups.get(g as usize)
    }

    pub fn distinct_groups(&self) -> usize {
        self.groups.len()
    }
}

pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Hop distance from every node to the nearest of `sources`, walking switch-to-switch links
/// that are `up` only (hosts never forward).
pub fn switch_distances(t: &Topology, sources: &[u32], up: &dyn Fn(u32) -> bool) -> Vec<u32> {
    let mut dist = vec![UNREACHABLE; t.nodes.len()];
    let mut q = VecDeque::new();
    for &s in sources {
        dist[s as usize] = 0;
        q.push_back(s);
    }
    while let Some(n) = q.pop_front() {
        for p in t.ports_of(n) {
            let m = t.ports[p as usize].to;
            if !t.is_host(m) && dist[m as usize] == UNREACHABLE && up(p) {
                dist[m as usize] = dist[n as usize] + 1;
                q.push_back(m);
            }
        }
    }
    dist
}

/// The ports of `node` that are up and lead one hop closer (by `dist`).
pub fn closer_ports(t: &Topology, node: u32, dist: &[u32], up: &dyn Fn(u32) -> bool) -> Vec<u32> {
    let d = dist[node as usize];
    if d == 0 || d == UNREACHABLE {
        return Vec::new();
    }
    t.ports_of(node).filter(|&p| up(p) && dist[t.ports[p as usize].to as usize] == d - 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{fat_tree, leaf_spine, vl2};
    use crate::units::Rate;

    #[test]
    fn fat_tree_edges_have_k_over_2_upward_choices() {
        let t = fat_tree::build(&fat_tree::FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let r = Routes::compute(&t);
        let edge0 = t.tors[0];
        // Same pod, other edge: via any of the 4 aggs. Other pod: also 4 aggs.
        assert_eq!(r.toward_tor(edge0, 1).len(), 4);
        assert_eq!(r.toward_tor(edge0, 31).len(), 4);
        // An aggregation switch going cross-pod has 4 cores to choose from; inside the pod, 1 port.
        let agg0 = t.ports[r.toward_tor(edge0, 31)[0] as usize].to;
        assert_eq!(r.toward_tor(agg0, 31).len(), 4);
        assert_eq!(r.toward_tor(agg0, 1).len(), 1);
        assert_eq!(r.toward_tor(edge0, 0).len(), 0);
    }

    #[test]
    fn parallel_links_are_separate_equal_cost_choices() {
        let c = leaf_spine::LeafSpine { leaves: 3, spines: 2, hosts_per_leaf: 1, links_per_pair: 2 };
        let t = leaf_spine::build(&c, Rate(1), Rate(1), 0).unwrap();
        let r = Routes::compute(&t);
        assert_eq!(r.toward_tor(t.tors[0], 2).len(), 4);
    }

    /// Fat trees and leaf-spines built whole number each switch's equal-cost ports in a row, so
    /// the hash-picking hop reads one entry (`Span`); not so a spine's parallel links to one
    /// leaf, wired in turn with the other leaves', VL2's fabric, or groups after a failure. The
    /// hop then picks from the group: the same port either way.
    #[test]
    fn picking_by_span_is_picking_from_the_group() {
        let leaf_spine = |links_per_pair| leaf_spine::LeafSpine { leaves: 3, spines: 2, hosts_per_leaf: 1, links_per_pair };
        let fabrics = [
            (fat_tree::build(&fat_tree::FatTree { k: 8, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap(), true),
            (leaf_spine::build(&leaf_spine(1), Rate(1), Rate(1), 0).unwrap(), true),
            (leaf_spine::build(&leaf_spine(2), Rate(1), Rate(1), 0).unwrap(), false),
            (vl2::build(&vl2::Vl2::TESTBED, Rate(1), Rate(1), 0).unwrap(), false),
        ];
        let mut ranges_lost = false;
        for (t, whole_spans) in &fabrics {
            let whole = Routes::compute(t);
            // The first ToR loses its middle uplink: its own groups keep the ports on each side.
            let uplinks: Vec<u32> = t.ports_of(t.tors[0]).filter(|&p| !t.is_host(t.ports[p as usize].to)).collect();
            let mut state = LinkState::all_up(t);
            state.rate[t.link_of[uplinks[uplinks.len() / 2] as usize] as usize] = 0;
            let failed = Routes::with_state(t, &state, SplitMode::None);
            for (r, all_spans) in [(&whole, *whole_spans), (&failed, false)] {
                for s in t.n_hosts..t.nodes.len() {
                    for ti in 0..t.tors.len() as u32 {
                        let group = r.toward_tor(s as u32, ti);
                        let span = r.spans[(s - t.n_hosts) * t.tors.len() + ti as usize];
                        assert!(!all_spans || group.is_empty() || span != Span::NONE, "switch {s}, ToR {ti}: {group:?}");
                        ranges_lost |= !group.is_empty() && span == Span::NONE;
                        for hash in [0, 1 << 62, u64::MAX / 3, u64::MAX] {
                            let expected = (!group.is_empty()).then(|| pick(group, hash));
                            assert_eq!(r.pick_toward_tor(s as u32, ti, hash), expected);
                        }
                    }
                }
            }
        }
        assert!(ranges_lost, "some group that is not a range was picked from");
    }

    /// A controller's update writes one entry at a time (`install_entry`), and a two-phase
    /// update forwards old-tagged packets by the old rows swapped in (`swap_installed`).
    #[test]
    fn one_entry_installs_alone_and_old_rows_swap_in_and_out() {
        let t = fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let mut r = Routes::compute(&t);
        let edge0 = t.tors[0];
        let up = t.ports_of(edge0).find(|&p| !t.is_host(t.ports[p as usize].to)).unwrap();
        let mut state = LinkState::all_up(&t);
        state.rate[t.link_of[up as usize] as usize] = 0;
        let new = r.tables(&t, &state);
        let before: Vec<Vec<u32>> = (0..t.tors.len() as u32).map(|ti| r.toward_tor(edge0, ti).to_vec()).collect();
        let mut old = r.snapshot();
        r.install_entry(edge0, 3, &new);
        assert_eq!(r.toward_tor(edge0, 3), &[up + 1]);
        for ti in (0..t.tors.len() as u32).filter(|&ti| ti != 3) {
            assert_eq!(r.toward_tor(edge0, ti), &before[ti as usize][..], "entry {ti} untouched");
        }
        assert_eq!(r.toward_core(edge0).len(), 2, "the core entry is entry {} and is untouched", t.tors.len());
        r.swap_installed(&mut old);
        assert_eq!(r.toward_tor(edge0, 3), &before[3][..]);
        r.swap_installed(&mut old);
        assert_eq!(r.toward_tor(edge0, 3), &[up + 1]);
        assert_eq!(r.pick_toward_tor(edge0, 3, 12345), Some(up + 1));
    }

    #[test]
    fn vl2_tor_reaches_intermediates_through_both_aggs() {
        let t = vl2::build(&vl2::Vl2::TESTBED, Rate(1), Rate(1), 0).unwrap();
        let r = Routes::compute(&t);
        assert_eq!(r.toward_core(t.tors[0]).len(), 2);
        let agg = t.ports[r.toward_core(t.tors[0])[0] as usize].to;
        assert_eq!(r.toward_core(agg).len(), 3);
    }
}
