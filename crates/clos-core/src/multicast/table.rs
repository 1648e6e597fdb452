//! Per-switch multicast forwarding tables of capacity `C` (Li & Freedman Table 1, §4.2): entry
//! counts per switch and layer, with every entry beyond `C` counted as overflow, never dropped.
//!
//! Besides all entries, edge switches also count the entries with more than one forwarding port
//! (Figure 5c's "(m)E"): an entry with one port could be a unicast rule instead (§4.2).

use super::fat_tree::FatTree;
use super::tree::{Entry, Layer};
use serde_json::{json, Value};

/// Entry counts per switch.
#[derive(Clone, Debug)]
pub struct Tables {
    pub capacity: u32,
    pub core: Vec<u32>,
    pub aggr: Vec<u32>,
    pub edge: Vec<u32>,
    /// Edge entries with two or more ports.
    pub edge_multi: Vec<u32>,
}

impl Tables {
    pub fn new(tree: &FatTree, capacity: u32) -> Tables {
        Tables::sized(tree.edges(), tree.aggrs(), tree.cores(), capacity)
    }

    /// Tables for `edges` edge switches (ToRs), `aggrs` aggregation and `cores` core
    /// (intermediate) switches.
    pub fn sized(edges: u32, aggrs: u32, cores: u32, capacity: u32) -> Tables {
        Tables { capacity, core: vec![0; cores as usize], aggr: vec![0; aggrs as usize], edge: vec![0; edges as usize], edge_multi: vec![0; edges as usize] }
    }

    /// Count an entry; returns its switch's count afterwards.
    pub fn add(&mut self, e: &Entry) -> u32 {
        let counts = self.layer_mut(e.layer);
        counts[e.switch as usize] += 1;
        let n = counts[e.switch as usize];
        if e.layer == Layer::Edge && e.ports.count_ones() >= 2 {
            self.edge_multi[e.switch as usize] += 1;
        }
        n
    }

    pub fn layer(&self, layer: Layer) -> &[u32] {
        match layer {
            Layer::Core => &self.core,
            Layer::Aggr => &self.aggr,
            Layer::Edge => &self.edge,
        }
    }

    fn layer_mut(&mut self, layer: Layer) -> &mut Vec<u32> {
        match layer {
            Layer::Core => &mut self.core,
            Layer::Aggr => &mut self.aggr,
            Layer::Edge => &mut self.edge,
        }
    }
}

/// Distribution of per-switch counts, with what exceeds the capacity.
pub fn layer_stats(counts: &[u32], capacity: u32) -> Value {
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    let n = sorted.len().max(1);
    let q = |f: f64| sorted.get(((sorted.len() as f64 - 1.0) * f).round() as usize).copied().unwrap_or(0);
    let over = sorted.iter().filter(|&&c| c > capacity).count();
    let overflow: u64 = sorted.iter().map(|&c| c.saturating_sub(capacity) as u64).sum();
    json!({
        "switches": sorted.len(),
        "min": q(0.0),
        "p25": q(0.25),
        "median": q(0.5),
        "p75": q(0.75),
        "max": q(1.0),
        "mean": sorted.iter().map(|&c| c as f64).sum::<f64>() / n as f64,
        "max_over_capacity": q(1.0) as f64 / capacity as f64,
        "over_capacity": over,
        "fraction_over_capacity": over as f64 / n as f64,
        "overflow_entries": overflow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multicast::fat_tree::Wiring;

    #[test]
    fn overflow_is_counted_not_dropped() {
        let t = FatTree::new(4, Wiring::Ab, "k").unwrap();
        let mut tab = Tables::new(&t, 2);
        for _ in 0..5 {
            tab.add(&Entry { layer: Layer::Edge, switch: 3, ports: 0b1 });
        }
        tab.add(&Entry { layer: Layer::Edge, switch: 1, ports: 0b11 });
        assert_eq!(tab.edge[3], 5);
        assert_eq!(tab.edge_multi, vec![0, 1, 0, 0, 0, 0, 0, 0]);
        let s = layer_stats(&tab.edge, 2);
        assert_eq!(s["over_capacity"], 1);
        assert_eq!(s["overflow_entries"], 3);
        assert_eq!(s["max"], 5);
        assert_eq!(s["mean"], 6.0 / 8.0);
    }
}
