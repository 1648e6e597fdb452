//! The scenario's `[multicast]` table: the control plane's parameters (Li & Freedman Table 1:
//! n, r_c, r_a, C) and the groups with their member hosts, for the packet simulator
//! (`multicast/fabric.rs`, `sim/multicast.rs`). A workload of kind `multicast` names a group and
//! sends datagrams to it at a constant rate (`workload.group`).
//!
//! ```toml
//! [multicast]
//! capacity = 1000          # C, entries per switch table
//! spread = "packet"        # upstream spreading over the r_c replica cores: "none", "group", "packet"
//! [[multicast.groups]]
//! name = "feed"
//! members = [3, 5, 9]      # hosts, or a count placed by the seed
//! ```

use crate::error::{bad, Result};
use crate::rng::mix64;
use crate::workload::hosts::HostSet;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a packet going up picks among the switches that hold its group's partition (r_a
/// aggregation switches in the sender's pod, then the r_c/r_a cores above the one it reached).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Spread {
    /// The first holder in index order (the paper's tree: one root per group).
    #[default]
    None,
    /// A hash of the group: each group keeps one root, groups spread over the holders.
    Group,
    /// A hash of the group, sender and datagram: every packet may take another root (the
    /// multicast analogue of VLB, left as future work by the paper).
    Packet,
}

/// Local aggregation into meta-groups in the packet simulator (Li & Freedman §3.2, Algorithm 2;
/// `multicast/aggregation.rs`): at which layer a switch whose table would exceed C maps its
/// groups onto at most C meta-groups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// No aggregation: groups over capacity are reported and still forwarded (the default).
    #[default]
    Off,
    /// At edge switches (VL2: ToRs): ports are hosts; hosts discard the other groups' copies
    /// (the paper's soft switches).
    Edge,
    /// At aggregation switches: ports are the pod's edge switches (VL2: the ToRs below it),
    /// which discard the other groups' copies.
    Aggr,
}

impl Aggregate {
    pub fn is_off(&self) -> bool {
        *self == Aggregate::Off
    }
}

/// A group's members: a list of hosts (and ranges), or how many hosts the seed places.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Members {
    /// This many distinct hosts, drawn uniformly with the scenario's seed.
    Count(u32),
    /// These hosts: numbers, ranges ("4-7") or names ("h9").
    Hosts(HostSet),
}

/// One group (`multicast.groups[i]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The name a workload's `group` gives.
    pub name: String,
    /// The receivers: a list of hosts, or a count placed by the seed.
    pub members: Members,
}

/// `[multicast]`: the address partitioning and the groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MulticastSpec {
    /// n, the number of address-space partitions (default k²/4 / r_c: one partition per core
    /// when r_c = 1). Algorithm 1 needs n·r_c = k²/4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    /// r_c, the cores holding each partition (default 1).
    #[serde(default = "one")]
    pub cores_per_partition: u32,
    /// r_a, the aggregation switches of each pod holding each partition (default 1; Algorithm 1
    /// needs r_a² = r_c and 2·r_a dividing k).
    #[serde(default = "one")]
    pub aggrs_per_partition: u32,
    /// C, the multicast entries one switch holds (default 1000, the paper's). Groups whose
    /// entries do not fit are counted and reported (`multicast.tables.overflow_groups`).
    #[serde(default = "default_capacity")]
    pub capacity: u32,
    /// Upstream spreading over the replica cores: `none` (default), `group` or `packet`.
    #[serde(default)]
    pub spread: Spread,
    /// Local aggregation into meta-groups where a table would exceed C: `off` (default),
    /// `edge` or `aggr` (Algorithm 2 at that layer's switches over capacity).
    #[serde(default, skip_serializing_if = "Aggregate::is_off")]
    pub aggregate: Aggregate,
    /// Δ of Algorithm 2: a group on at least |P| − Δ of a switch's ports joins the all-ports
    /// meta-group (default 0: only groups on every port).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delta_ports: u32,
    /// The groups.
    pub groups: Vec<GroupSpec>,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}
fn one() -> u32 {
    1
}
fn default_capacity() -> u32 {
    1000
}

impl MulticastSpec {
    /// Check what can be checked without the fabric: names, counts.
    pub fn normalize(&mut self) -> Result<()> {
        if self.groups.is_empty() {
            return Err(bad("multicast.groups", "is empty: add [[multicast.groups]] tables with a name and members"));
        }
        if self.capacity == 0 {
            return Err(bad("multicast.capacity", "must be at least 1 entry per switch (the paper uses 1000)"));
        }
        for (i, g) in self.groups.iter().enumerate() {
            if self.groups[..i].iter().any(|o| o.name == g.name) {
                return Err(bad(format!("multicast.groups[{i}].name"), format!("{:?} is used by an earlier group: give each group its own name", g.name)));
            }
            if g.members == Members::Count(0) {
                return Err(bad(format!("multicast.groups[{i}].members"), "must be at least 1 host"));
            }
        }
        Ok(())
    }

    /// The member hosts of group `i` (ascending, distinct) on a fabric of `hosts` hosts; a
    /// count is placed by `seed` (a stream of its own: other draws are unchanged).
    pub fn members(&self, i: usize, hosts: u32, seed: u64) -> Result<Vec<u32>> {
        let field = format!("multicast.groups[{i}].members");
        let mut m = match &self.groups[i].members {
            Members::Hosts(set) => set.resolve_any(hosts, &field)?,
            Members::Count(n) => {
                if *n > hosts {
                    return Err(bad(field, format!("{n} hosts but the fabric has {hosts}: give at most {hosts}")));
                }
                let mut rng = <crate::rng::Stream as rand_xoshiro::rand_core::SeedableRng>::seed_from_u64(mix64(seed ^ mix64(0x6d63_6173_7400 + i as u64)));
                let mut all: Vec<u32> = (0..hosts).collect();
                crate::rng::shuffle(&mut rng, &mut all);
                all.truncate(*n as usize);
                all
            }
        };
        m.sort_unstable();
        m.dedup();
        Ok(m)
    }

    /// The index of the group named `name`.
    pub fn group(&self, name: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> MulticastSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn members_are_a_list_or_a_count_placed_by_the_seed() {
        let s = spec(r#"{"groups": [{"name": "a", "members": [9, 3, "4-5"]}, {"name": "b", "members": 4}]}"#);
        assert_eq!(s.members(0, 16, 1).unwrap(), vec![3, 4, 5, 9]);
        let b = s.members(1, 16, 1).unwrap();
        assert_eq!(b.len(), 4);
        assert_eq!(b, s.members(1, 16, 1).unwrap(), "same seed, same placement");
        assert_ne!(b, s.members(1, 16, 2).unwrap(), "another seed places them elsewhere (for these two seeds)");
        assert_eq!((s.capacity, s.spread, s.cores_per_partition), (1000, Spread::None, 1));
    }

    #[test]
    fn bad_groups_are_errors_naming_the_field() {
        let mut s = spec(r#"{"groups": [{"name": "a", "members": 2}, {"name": "a", "members": 3}]}"#);
        assert!(s.normalize().unwrap_err().to_string().starts_with("multicast.groups[1].name"));
        let s = spec(r#"{"groups": [{"name": "a", "members": 20}]}"#);
        assert!(s.members(0, 16, 1).unwrap_err().to_string().starts_with("multicast.groups[0].members: 20 hosts"));
        let mut s = spec(r#"{"groups": []}"#);
        assert!(s.normalize().unwrap_err().to_string().starts_with("multicast.groups"));
    }
}
