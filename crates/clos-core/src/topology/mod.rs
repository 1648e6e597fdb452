//! Fabrics: which nodes exist and how they are wired.
//!
//! Builders (`leaf_spine`, `fat_tree`, `vl2`) validate their parameters and describe the fabric
//! through a [`FabricBuilder`]; [`Topology`] is the lowered, index-based form the simulator uses.
//! Hosts are nodes `0..n_hosts`, switches follow. Every directed link is a *port* owned by the
//! node it leaves; ports of a node are contiguous.

pub mod ab_wiring;
pub mod fat_tree;
pub mod leaf_spine;
pub mod partition;
pub mod vl2;

use crate::units::{Rate, Time};

/// The role of a node in a Clos fabric. Leaf-spine leaves and fat-tree edges are `Tor`s; spines,
/// fat-tree cores and VL2 Intermediates are `Core`s (the top tier, VLB's bounce points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Host,
    Tor,
    Agg,
    Core,
}

impl Role {
    fn prefix(self, three_tier_core_name: &'static str) -> &'static str {
        match self {
            Role::Host => "h",
            Role::Tor => "tor",
            Role::Agg => "agg",
            Role::Core => three_tier_core_name,
        }
    }
    fn rank(self) -> u8 {
        match self {
            Role::Host => 0,
            Role::Tor => 1,
            Role::Agg => 2,
            Role::Core => 3,
        }
    }
}

/// Link tiers in the order a packet crosses them (it climbs, then descends), named as the
/// literature reports per-hop statistics.
pub const TIERS: [&str; 6] = ["host_up", "tor_up", "agg_up", "core_down", "agg_down", "tor_down"];

/// The hop each tier is in DRILL's per-hop queueing figures (Fig. 6c, 14c): hop 1 is the first
/// uplink, hop 2 the downlink from the spine/core side, the last hop the one to the host. Three-
/// tier fabrics have a hop between each (their second uplink and their second downlink).
pub const TIER_HOPS: [&str; 6] = ["host NIC", "hop 1", "agg up", "hop 2", "agg down", "last hop"];

/// Index into [`TIERS`] of a directed link between nodes of these roles.
pub fn tier_index(from: Role, to: Role) -> usize {
    match (from, to) {
        (Role::Host, _) => 0,
        (_, Role::Host) => 5,
        (Role::Tor, _) => 1,
        (Role::Agg, Role::Core) => 2,
        (Role::Agg, _) => 4,
        (Role::Core, _) => 3,
    }
}

/// The tier of a directed link by name.
pub fn tier_name(from: Role, to: Role) -> &'static str {
    TIERS[tier_index(from, to)]
}

#[derive(Clone, Debug)]
pub struct Node {
    pub role: Role,
    pub name: String,
    /// Pod (fat tree), or rack for fabrics without pods: "cross-pod" traffic leaves it.
    pub pod: u32,
}

/// A directed link (an output port of `from`).
#[derive(Clone, Debug)]
pub struct Port {
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay: Time,
}

/// A lowered fabric.
#[derive(Clone, Debug)]
pub struct Topology {
    pub nodes: Vec<Node>,
    pub n_hosts: usize,
    pub ports: Vec<Port>,
    /// For node `n`, its ports are `port_start[n]..port_start[n + 1]`.
    pub port_start: Vec<u32>,
    /// Each host's ToR (node id).
    pub host_tor: Vec<u32>,
    /// The ToR's port down to each host.
    pub host_down_port: Vec<u32>,
    /// ToR nodes in order; a ToR's position here is its routing destination index.
    pub tors: Vec<u32>,
    /// For each node, its index in `tors`, or `u32::MAX`.
    pub tor_index: Vec<u32>,
    /// The physical (full-duplex) link each port belongs to; failures act on links.
    pub link_of: Vec<u32>,
    /// Each physical link's two ports: `[a -> b, b -> a]`.
    pub links: Vec<[u32; 2]>,
}

impl Topology {
    pub fn ports_of(&self, node: u32) -> std::ops::Range<u32> {
        self.port_start[node as usize]..self.port_start[node as usize + 1]
    }
    pub fn role(&self, node: u32) -> Role {
        self.nodes[node as usize].role
    }
    pub fn is_host(&self, node: u32) -> bool {
        (node as usize) < self.n_hosts
    }
    pub fn n_switches(&self) -> usize {
        self.nodes.len() - self.n_hosts
    }
    pub fn tier(&self, port: u32) -> &'static str {
        TIERS[self.tier_of(port)]
    }
    /// Index into [`TIERS`] of a port's tier.
    pub fn tier_of(&self, port: u32) -> usize {
        let p = &self.ports[port as usize];
        tier_index(self.role(p.from), self.role(p.to))
    }
    /// Whether a port climbs toward the top tier (the equal-cost uplinks load balancers split over).
    pub fn is_uplink(&self, port: u32) -> bool {
        matches!(TIERS[self.tier_of(port)], "tor_up" | "agg_up")
    }
    /// A node by name (`tor3`, `spine0`, `h12` ...).
    pub fn node_named(&self, name: &str) -> Option<u32> {
        self.nodes.iter().position(|n| n.name == name).map(|i| i as u32)
    }

    /// A few switch names, for error messages that show what names look like.
    pub fn example_switch_names(&self) -> String {
        let names: Vec<&str> = self.nodes.iter().skip(self.n_hosts).take(3).map(|n| n.name.as_str()).collect();
        names.join(", ")
    }

    /// The physical links between two nodes (parallel links in declaration order).
    pub fn links_between(&self, a: u32, b: u32) -> Vec<u32> {
        self.ports_of(a).filter(|&p| self.ports[p as usize].to == b).map(|p| self.link_of[p as usize]).collect()
    }

    /// Two ToRs that cannot reach each other over switch links, if any (an impossible fabric).
    pub fn disconnected_tors(&self) -> Option<(u32, u32)> {
        let &first = self.tors.first()?;
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![first];
        seen[first as usize] = true;
        while let Some(n) = stack.pop() {
            for p in self.ports_of(n) {
                let m = self.ports[p as usize].to;
                if !self.is_host(m) && !seen[m as usize] {
                    seen[m as usize] = true;
                    stack.push(m);
                }
            }
        }
        self.tors.iter().find(|&&t| !seen[t as usize]).map(|&t| (first, t))
    }

    /// Total host-link capacity in one direction.
    pub fn host_capacity_bps(&self) -> u64 {
        (0..self.n_hosts as u32).map(|h| self.ports[self.port_start[h as usize] as usize].rate_bps).sum()
    }
}

/// Collects nodes and links, then lowers them to a [`Topology`].
pub struct FabricBuilder {
    nodes: Vec<Node>,
    links: Vec<(u32, u32, u64)>,
    delay: Time,
    core_name: &'static str,
    counts: [u32; 4],
}

impl FabricBuilder {
    /// `core_name` names the top tier in node names: `spine`, `core` or `int`.
    pub fn new(delay: Time, core_name: &'static str) -> Self {
        FabricBuilder { nodes: Vec::new(), links: Vec::new(), delay, core_name, counts: [0; 4] }
    }

    /// Add a node; hosts must all be added before any switch.
    pub fn node(&mut self, role: Role, pod: u32) -> u32 {
        let i = &mut self.counts[role.rank() as usize];
        let name = format!("{}{}", role.prefix(self.core_name), *i);
        *i += 1;
        self.nodes.push(Node { role, name, pod });
        (self.nodes.len() - 1) as u32
    }

    /// A full-duplex link: one port in each direction.
    pub fn link(&mut self, a: u32, b: u32, rate: Rate) {
        self.links.push((a, b, rate.0));
    }

    /// A node added so far, by name.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.nodes.iter().position(|n| n.name == name).map(|i| i as u32)
    }

    /// Make the links between `a` and `b` (either way round) `count` parallel links (keeping
    /// their rate unless `rate` is given); `count` 0 removes them. Returns how many there were.
    pub fn set_links(&mut self, a: u32, b: u32, count: Option<u32>, rate: Option<Rate>) -> usize {
        let between = |&(x, y, _): &(u32, u32, u64)| (x == a && y == b) || (x == b && y == a);
        let existing: Vec<usize> = (0..self.links.len()).filter(|&i| between(&self.links[i])).collect();
        let n = existing.len();
        let old_rate = existing.first().map(|&i| self.links[i].2);
        if let Some(r) = rate {
            for &i in &existing {
                self.links[i].2 = r.0;
            }
        }
        if let Some(c) = count {
            let rate = rate.map(|r| r.0).or(old_rate).unwrap_or(self.default_rate(a, b));
            if (c as usize) < n {
                // Keep the first `c` of them, in declaration order.
                let mut seen = 0;
                self.links.retain(|l| {
                    if !between(l) {
                        return true;
                    }
                    seen += 1;
                    seen <= c
                });
            } else {
                for _ in n..c as usize {
                    self.links.push((a, b, rate));
                }
            }
        }
        n
    }

    /// Rate for a link between two nodes that had none: what the fabric uses between their roles.
    fn default_rate(&self, a: u32, b: u32) -> u64 {
        let roles = |x: u32, y: u32| (self.nodes[x as usize].role, self.nodes[y as usize].role);
        let want = roles(a, b);
        self.links
            .iter()
            .find(|&&(x, y, _)| roles(x, y) == want || roles(y, x) == want)
            .or(self.links.iter().find(|&&(x, y, _)| self.nodes[x as usize].role != Role::Host && self.nodes[y as usize].role != Role::Host))
            .map_or(1_000_000_000, |l| l.2)
    }

    pub fn build(self) -> Topology {
        let n_hosts = self.nodes.iter().take_while(|n| n.role == Role::Host).count();
        assert!(self.nodes[n_hosts..].iter().all(|n| n.role != Role::Host), "hosts must come first");
        let mut ports: Vec<(Port, u32)> = Vec::with_capacity(self.links.len() * 2);
        for (l, &(a, b, rate)) in self.links.iter().enumerate() {
            ports.push((Port { from: a, to: b, rate_bps: rate, delay: self.delay }, l as u32));
            ports.push((Port { from: b, to: a, rate_bps: rate, delay: self.delay }, l as u32));
        }
        // Stable sort: a node's ports keep the order its links were declared in.
        ports.sort_by_key(|p| p.0.from);
        let link_of: Vec<u32> = ports.iter().map(|p| p.1).collect();
        let ports: Vec<Port> = ports.into_iter().map(|p| p.0).collect();
        let mut links = vec![[u32::MAX; 2]; self.links.len()];
        for (p, &l) in link_of.iter().enumerate() {
            let side = usize::from(links[l as usize][0] != u32::MAX);
            links[l as usize][side] = p as u32;
        }
        // `[a -> b, b -> a]` in declaration order of the link's ends.
        for (l, &(a, _, _)) in self.links.iter().enumerate() {
            if ports[links[l][0] as usize].from != a {
                links[l].swap(0, 1);
            }
        }
        let mut port_start = vec![0u32; self.nodes.len() + 1];
        for p in &ports {
            port_start[p.from as usize + 1] += 1;
        }
        for i in 0..self.nodes.len() {
            port_start[i + 1] += port_start[i];
        }
        let mut host_tor = vec![u32::MAX; n_hosts];
        let mut host_down_port = vec![u32::MAX; n_hosts];
        for (i, p) in ports.iter().enumerate() {
            if (p.from as usize) < n_hosts {
                host_tor[p.from as usize] = p.to;
            }
            if (p.to as usize) < n_hosts {
                host_down_port[p.to as usize] = i as u32;
            }
        }
        let tors: Vec<u32> = (0..self.nodes.len() as u32).filter(|&n| self.nodes[n as usize].role == Role::Tor).collect();
        let mut tor_index = vec![u32::MAX; self.nodes.len()];
        for (i, &t) in tors.iter().enumerate() {
            tor_index[t as usize] = i as u32;
        }
        Topology { nodes: self.nodes, n_hosts, ports, port_start, host_tor, host_down_port, tors, tor_index, link_of, links }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_has_exactly_one_uplink_to_a_tor() {
        let t = fat_tree::build(&fat_tree::FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        for h in 0..t.n_hosts as u32 {
            assert_eq!(t.ports_of(h).len(), 1);
            assert_eq!(t.role(t.host_tor[h as usize]), Role::Tor);
        }
    }
}
