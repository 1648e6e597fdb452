//! Scale-out datacenter multicast's control plane: Li & Freedman, "Scaling IP Multicast on
//! Datacenter Topologies", CoNEXT'13 (seed 004, lines 903-2569; digest §2).
//!
//! The pieces, one per file, in the paper's order:
//! - [`fat_tree`]: the standard and AB (F10) fat trees as index arithmetic (§2.2, Figure 1);
//! - [`partition`]: address-space partitioning over core and aggregation switches, Algorithm 1
//!   (§3.1, Eq. 1-2);
//! - [`assign`]: a new group to the partition with the fewest addresses, then heavy groups (§3.1.2);
//! - [`tree`]: a group's multicast tree and the per-switch entries it needs;
//! - [`table`]: per-switch tables of capacity C, overflow counted;
//! - [`meta_group`]: local aggregation into meta-groups, Algorithm 2 and Eq. 6 (§3.2);
//! - [`churn`]: join/leave updates per event and layer, with and without batching (§4.3);
//! - [`tenants`], [`placement`], [`group_sizes`]: the evaluation's population (§4.1);
//! - [`failover`]: route stretch and reachability under aggregation-switch failures with local
//!   rerouting, counted (§3.3.1, §4.4, Figure 8);
//! - [`evaluation`]: the statistical evaluation of §4.2-4.4 (`clos reproduce multicast`);
//! - [`spec`]: the scenario's `[multicast]` table (groups and the control plane's parameters);
//! - [`fabric`]: the trees on the packet simulator's fat tree, replication, location-tagged
//!   detours and reconstruction after failures (§2.3, §3.3), which `sim/multicast.rs` runs;
//! - [`aggregation`]: meta-groups (Algorithm 2) at the packet simulator's switches over
//!   capacity, with the address rewriting and the traffic overhead measured (§3.2);
//! - [`set_cover`]: reconstruction over several cores where no single root repairs a tree
//!   (§3.3.2);
//! - [`vl2`]: the trees on VL2: partitions over the intermediates, each group's aggregation
//!   switches by set cover;
//! - [`vl2_failover`]: failover on VL2: tagged detours that pass through no ToR, then the cover
//!   rebuilt without the failed links;
//! - [`trees`]: a run's trees on either fabric, which `sim/multicast.rs` runs;
//! - [`delivery`]: what each receiver got, when, and how late.

pub mod aggregation;
pub mod assign;
pub mod churn;
pub mod delivery;
pub mod evaluation;
pub mod fabric;
pub mod failover;
pub mod fat_tree;
pub mod group_sizes;
pub mod meta_group;
pub mod partition;
pub mod placement;
pub mod set_cover;
pub mod spec;
pub mod table;
pub mod tenants;
pub mod tree;
pub mod trees;
pub mod vl2;
pub mod vl2_failover;

pub use evaluation::{evaluate, evaluate_json, Params};
