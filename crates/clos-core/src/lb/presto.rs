//! Presto (He et al., SIGCOMM'15), as DRILL compares against it (DRILL §4): the sending host's
//! virtual switch cuts each flow into flowcells of at most 64 KB of payload and source-routes
//! successive flowcells round robin over the paths to the destination; the receiver's reorder
//! shim (on by default for this scheme, `transport.reorder_shim`) hides reordering at flowcell
//! boundaries from TCP.
//!
//! Source routing is modelled with a path label: the agent writes `offset + flowcell index`
//! into the packet, and each switch with n equal-cost next hops takes `label mod n` as its
//! choice and passes `label / n` on. The label is a mixed-radix path number, so consecutive
//! flowcells take consecutive paths and n1 * n2 * ... flowcells visit every path once. The
//! per-flow offset (from the flow hash) keeps flows from starting on the same path. Pure ACKs
//! carry a fixed label per flow (one path), as they are not cut into flowcells.

use super::{params::RoutingSpec, Fabric};
use crate::packet::{Packet, FLAG_ACK};
use crate::rng::{mix64, next_u64, Streams};

pub struct Presto {
    flowcell: u64,
    mss: u64,
    salt: u64,
    /// Weighted multipathing: routing's per-port split gives integer path-capacity weights.
    weighted: bool,
}

impl Presto {
    pub fn new(spec: &RoutingSpec, mss: u32, streams: &mut Streams) -> Self {
        let mut s = streams.stream();
        Presto { flowcell: spec.flowcell.map_or(65536, |b| b.0), mss: mss as u64, salt: next_u64(&mut s), weighted: spec.weighted != Some(false) }
    }

    /// The host agent labels a packet with its flowcell's path.
    #[inline]
    pub fn label(&self, pkt: &mut Packet) {
        let offset = mix64(pkt.entropy ^ self.salt) as u32;
        let cell = if pkt.has(FLAG_ACK) { 0 } else { (pkt.seg as u64 * self.mss / self.flowcell) as u32 };
        pkt.lb_tag = offset.wrapping_add(cell);
    }

    /// Weighted: the label is a mixed-radix number whose digit at this switch is in units of
    /// weight (0..total), so flowcells visit next hops in proportion to their weights; with
    /// equal weights (reduced to 1 each) this is exactly the unweighted rotation.
    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let classes = f.routes.split_toward_tor(switch, f.dst_tor_index(pkt));
        if self.weighted && !classes.is_empty() {
            let total = classes[classes.len() - 1].cumulative;
            let digit = pkt.lb_tag as u64 % total;
            pkt.lb_tag = (pkt.lb_tag as u64 / total) as u32;
            let g = classes[classes.partition_point(|c| c.cumulative <= digit)].group;
            return f.routes.group(g)[0];
        }
        let group = f.routes.toward_tor(switch, f.dst_tor_index(pkt));
        let n = group.len() as u32;
        let port = group[(pkt.lb_tag % n) as usize];
        pkt.lb_tag /= n;
        port
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::lb::Scheme;
    use crate::routing::Routes;
    use crate::topology::fat_tree::{self, FatTree};
    use crate::topology::Role;
    use crate::units::Rate;

    /// Successive flowcells of one flow take successive paths: on a k=4 fat tree there are
    /// 2 x 2 = 4 cross-pod paths, and 4 consecutive flowcells use 4 distinct cores; packets
    /// within one flowcell share a path.
    #[test]
    fn flowcells_rotate_over_all_paths() {
        let t = fat_tree::build(&FatTree { k: 4, remove_cores: 0 }, Rate(1), Rate(1), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: 0 };
        let spec = RoutingSpec { scheme: Scheme::Presto, ..Default::default() };
        let mut p = Presto::new(&spec, 1460, &mut Streams::new(3));
        let core_of = |p: &mut Presto, seg: u32| {
            let mut pkt = Packet { src: 0, dst: 15, seg, entropy: 99, ..Default::default() };
            p.label(&mut pkt);
            let mut node = t.host_tor[0];
            while t.role(node) != Role::Core {
                node = t.ports[p.next_port(&f, node, &mut pkt) as usize].to;
            }
            node
        };
        let per_cell = (65536 / 1460) as u32; // segments 0..=44 are in flowcell 0
        let cores: std::collections::BTreeSet<u32> = (0..4).map(|c| core_of(&mut p, c * (per_cell + 1))).collect();
        assert_eq!(cores.len(), 4);
        assert_eq!(core_of(&mut p, 0), core_of(&mut p, per_cell - 1), "one flowcell, one path");
    }
}
