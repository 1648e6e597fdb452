//! Two-tier leaf-spine fabric (DRILL §4: 4 spines x 16 leaves x 20 hosts, 40/10 Gb/s).

use super::{FabricBuilder, Role, Topology};
use crate::error::{bad, Result};
use crate::units::{Rate, Time};

#[derive(Clone, Debug)]
pub struct LeafSpine {
    pub leaves: u32,
    pub spines: u32,
    pub hosts_per_leaf: u32,
    /// Parallel links between every leaf-spine pair.
    pub links_per_pair: u32,
}

pub fn build(c: &LeafSpine, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<Topology> {
    Ok(describe(c, host_rate, fabric_rate, delay)?.build())
}

/// The fabric's nodes and links, before lowering (scenario link overrides apply here).
pub fn describe(c: &LeafSpine, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<FabricBuilder> {
    for (v, f) in [(c.leaves, "leaves"), (c.spines, "spines"), (c.hosts_per_leaf, "hosts_per_leaf")] {
        if v == 0 {
            return Err(bad(format!("topology.{f}"), "must be at least 1"));
        }
    }
    if c.links_per_pair == 0 {
        return Err(bad("topology.links_per_pair", "must be at least 1"));
    }
    let mut b = FabricBuilder::new(delay, "spine");
    let hosts: Vec<Vec<u32>> = (0..c.leaves).map(|l| (0..c.hosts_per_leaf).map(|_| b.node(Role::Host, l)).collect()).collect();
    let leaves: Vec<u32> = (0..c.leaves).map(|l| b.node(Role::Tor, l)).collect();
    let spines: Vec<u32> = (0..c.spines).map(|_| b.node(Role::Core, u32::MAX)).collect();
    for (l, &leaf) in leaves.iter().enumerate() {
        for &h in &hosts[l] {
            b.link(h, leaf, host_rate);
        }
        for &s in &spines {
            for _ in 0..c.links_per_pair {
                b.link(leaf, s, fabric_rate);
            }
        }
    }
    Ok(b)
}

/// DRILL's imbalanced striping (§4, Fig. 13): leaf i gets one more link to spines i mod n and
/// (i + 1) mod n, so it has two links to those and one to every other spine.
pub fn stripe_imbalanced(b: &mut FabricBuilder, c: &LeafSpine) -> Result<()> {
    if c.spines < 2 {
        return Err(bad("topology.striping", "imbalanced striping needs at least 2 spines"));
    }
    for l in 0..c.leaves {
        for s in [l % c.spines, (l + 1) % c.spines] {
            let (leaf, spine) = (b.find(&format!("tor{l}")).expect("leaf"), b.find(&format!("spine{s}")).expect("spine"));
            let n = b.set_links(leaf, spine, None, None) as u32;
            b.set_links(leaf, spine, Some(n + 1), None);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drill_fabric_has_the_papers_port_counts() {
        let c = LeafSpine { leaves: 16, spines: 4, hosts_per_leaf: 20, links_per_pair: 1 };
        let t = build(&c, Rate(10_000_000_000), Rate(40_000_000_000), 0).unwrap();
        assert_eq!(t.n_hosts, 320);
        assert_eq!(t.tors.len(), 16);
        assert_eq!(t.ports_of(t.tors[0]).len(), 24);
        assert_eq!(t.ports.len(), 2 * (320 + 64));
    }

    #[test]
    fn zero_spines_is_rejected_by_name() {
        let c = LeafSpine { leaves: 2, spines: 0, hosts_per_leaf: 2, links_per_pair: 1 };
        let e = build(&c, Rate(1), Rate(1), 0).unwrap_err();
        assert!(e.to_string().starts_with("topology.spines"));
    }
}
