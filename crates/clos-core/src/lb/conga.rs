//! CONGA (Alizadeh et al., SIGCOMM'14), as DRILL compares against it (DRILL §4).
//!
//! - Every fabric port has a Discounting Rate Estimator (DRE): a register X that grows by the
//!   bytes sent and shrinks by a factor (1 - alpha) every T_dre; X / (C * tau), tau = T_dre /
//!   alpha, estimates utilisation, quantised to `dre_bits` bits (CONGA §3.2).
//! - A packet carries the maximum metric of the ports it leaves by (CE) and the index of the
//!   uplink its source leaf chose (LBTag). The destination leaf stores CE in its
//!   Congestion-From-Leaf table and piggybacks the entries, round robin, on packets going back
//!   to that leaf, which store them in their Congestion-To-Leaf table (§3.3).
//! - The source leaf places each new flowlet on the uplink minimising max(local DRE, remote
//!   metric); ties are broken at random (§3.4). Switches above the leaves use ECMP, as in
//!   DRILL's 3-tier runs (DRILL §4, VL2 topology: "the core uses ECMP").
//!
//! Not modelled: aging of stale Congestion-To-Leaf entries, and CONGA's preference for
//! feeding back changed metrics first (we cycle through all known ones).

use super::ecmp::Ecmp;
use super::flowlet::FlowletTable;
use super::{params::RoutingSpec, Fabric};
use crate::packet::Packet;
use crate::rng::{below, Stream, Streams};
use crate::routing::Routes;
use crate::topology::{Role, Topology};
use crate::units::Time;

pub struct Conga {
    table: FlowletTable,
    ecmp: Ecmp,
    dre: Vec<f64>,
    dre_last: Vec<Time>,
    period: Time,
    keep: f64,
    tau: Time,
    levels: u32,
    n_tors: usize,
    max_up: usize,
    /// `to_leaf[(leaf * n_tors + remote) * max_up + tag]`: congestion toward `remote` via uplink `tag`.
    to_leaf: Vec<u8>,
    /// `from_leaf[(leaf * n_tors + remote) * max_up + tag]`: CE seen on packets from `remote`
    /// that left it by uplink `tag`, plus one (0 = nothing seen yet).
    from_leaf: Vec<u8>,
    /// Round-robin feedback pointer per (leaf, remote).
    fb_next: Vec<u8>,
    pub(crate) rng: Stream,
    scratch: Vec<u32>,
}

impl Conga {
    pub fn new(spec: &RoutingSpec, topo: &Topology, routes: &Routes, streams: &mut Streams) -> Self {
        let n_tors = topo.tors.len();
        let max_up = topo
            .tors
            .iter()
            .flat_map(|&t| (0..n_tors as u32).map(move |d| (t, d)))
            .map(|(t, d)| routes.toward_tor(t, d).len())
            .max()
            .unwrap_or(1)
            .clamp(1, 255);
        let period = spec.dre_period.map_or(16_000_000, |d| d.0);
        let alpha = spec.dre_alpha.unwrap_or(0.1);
        let pairs = n_tors * n_tors;
        Conga {
            table: FlowletTable::new(spec, topo),
            ecmp: Ecmp::new(topo, streams),
            dre: vec![0.0; topo.ports.len()],
            dre_last: vec![0; topo.ports.len()],
            period,
            keep: 1.0 - alpha,
            tau: (period as f64 / alpha) as Time,
            levels: 1 << spec.dre_bits.unwrap_or(3),
            n_tors,
            max_up,
            to_leaf: vec![0; pairs * max_up],
            from_leaf: vec![0; pairs * max_up],
            fb_next: vec![0; pairs],
            rng: streams.stream(),
            scratch: Vec::with_capacity(max_up),
        }
    }

    /// The quantised DRE metric of `port` at `now` (after applying the decrements due).
    #[inline]
    fn metric(&mut self, f: &Fabric, port: u32) -> u8 {
        let p = port as usize;
        let steps = (f.now.saturating_sub(self.dre_last[p])) / self.period;
        if steps > 0 {
            self.dre[p] *= self.keep.powi(steps.min(10_000) as i32);
            self.dre_last[p] += steps * self.period;
        }
        // C * tau in bytes: rate (bit/s) / 8 * tau (ps) / 1e12.
        let c_tau = f.ports.rate_bps[p] as f64 / 8.0 * self.tau as f64 / 1e12;
        let q = (self.dre[p] / c_tau * self.levels as f64) as u32;
        q.min(self.levels - 1) as u8
    }

    #[inline]
    fn row(&self, leaf: usize, remote: usize) -> usize {
        (leaf * self.n_tors + remote) * self.max_up
    }

    #[inline]
    pub fn next_port(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) -> u32 {
        let dst_tor = f.dst_tor_index(pkt);
        let group = f.routes.toward_tor(switch, dst_tor);
        if f.topo.role(switch) != Role::Tor || f.topo.host_tor[pkt.src as usize] != switch {
            return super::pick(group, self.ecmp.hash(switch, pkt.entropy));
        }
        let leaf = f.topo.tor_index[switch as usize] as usize;
        let row = self.row(leaf, dst_tor as usize);
        let tag = match self.table.current(switch, pkt.entropy, group, f.now) {
            (_, Some(port)) => group.iter().position(|&p| p == port).expect("current() checks membership"),
            (slot, None) => {
                // argmin over uplinks of max(local, remote); random among the best.
                let mut best = u8::MAX;
                self.scratch.clear();
                for (i, &p) in group.iter().enumerate() {
                    let m = self.metric(f, p).max(self.to_leaf[row + i.min(self.max_up - 1)]);
                    if m < best {
                        best = m;
                        self.scratch.clear();
                    }
                    if m == best {
                        self.scratch.push(i as u32);
                    }
                }
                let i = self.scratch[below(&mut self.rng, self.scratch.len() as u64) as usize] as usize;
                self.table.set(slot, group[i]);
                i
            }
        };
        pkt.lb_tag = tag as u32;
        pkt.conga_ce = 0;
        // Piggyback one Congestion-From-Leaf entry about the destination leaf's traffic to us.
        pkt.conga_fb = (0, 0);
        let n = group.len().min(self.max_up);
        let ptr = &mut self.fb_next[leaf * self.n_tors + dst_tor as usize];
        for _ in 0..n {
            let j = *ptr as usize % n;
            *ptr = ((j + 1) % n) as u8;
            let v = self.from_leaf[row + j];
            if v != 0 {
                pkt.conga_fb = (j as u8 + 1, v - 1);
                break;
            }
        }
        group[tag]
    }

    /// Every fabric hop: fold this port's congestion into the packet's CE, then count its bytes.
    #[inline]
    pub fn on_egress(&mut self, f: &Fabric, port: u32, pkt: &mut Packet) {
        let m = self.metric(f, port);
        pkt.conga_ce = pkt.conga_ce.max(m);
        self.dre[port as usize] += pkt.wire_bytes() as f64;
    }

    /// The destination leaf records the path's congestion and applies the piggybacked feedback.
    #[inline]
    pub fn at_destination_leaf(&mut self, f: &Fabric, switch: u32, pkt: &mut Packet) {
        let src_tor = f.topo.host_tor[pkt.src as usize];
        if src_tor == switch {
            return; // never crossed the fabric
        }
        let (leaf, remote) = (f.topo.tor_index[switch as usize] as usize, f.topo.tor_index[src_tor as usize] as usize);
        let row = self.row(leaf, remote);
        let tag = (pkt.lb_tag as usize).min(self.max_up - 1);
        self.from_leaf[row + tag] = pkt.conga_ce + 1;
        if pkt.conga_fb.0 != 0 {
            self.to_leaf[row + pkt.conga_fb.0 as usize - 1] = pkt.conga_fb.1;
        }
    }

    pub fn flowlets(&self) -> u64 {
        self.table.flowlets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Ports;
    use crate::lb::Scheme;
    use crate::topology::leaf_spine::{build, LeafSpine};
    use crate::units::{Rate, PS_PER_MS};

    /// CONGA moves traffic away from a congested path: once leaf 1 learns (through feedback
    /// carried by leaf 0's packets) that its uplink 0 path to leaf 0 is congested, every new
    /// flowlet from leaf 1 to leaf 0 avoids it; before, new flowlets used both uplinks.
    #[test]
    fn conga_moves_new_flowlets_away_from_a_congested_path() {
        let t = build(&LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(10_000_000_000), Rate(10_000_000_000), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        let spec = RoutingSpec { scheme: Scheme::Conga, ..Default::default() };
        let mut c = Conga::new(&spec, &t, &routes, &mut Streams::new(6));
        let (leaf0, leaf1) = (t.host_tor[0], t.host_tor[1]);
        let mut now = 0;
        let new_flowlet_tags = |c: &mut Conga, now: Time| -> std::collections::BTreeSet<u32> {
            let f = Fabric { topo: &t, routes: &routes, ports: &ports, now };
            (0..50u64)
                .map(|i| {
                    let mut p = Packet { src: 1, dst: 0, entropy: crate::rng::mix64(i + now), ..Default::default() };
                    c.next_port(&f, leaf1, &mut p);
                    p.lb_tag
                })
                .collect()
        };
        assert_eq!(new_flowlet_tags(&mut c, now).len(), 2, "no congestion known: both uplinks used");
        // A packet from leaf 1 that left by uplink 0 arrives at leaf 0 with CE = 7 (congested).
        now += PS_PER_MS;
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now };
        let mut hot = Packet { src: 1, dst: 0, lb_tag: 0, conga_ce: 7, ..Default::default() };
        c.at_destination_leaf(&f, leaf0, &mut hot);
        // Leaf 0 sends to leaf 1; its packet carries the feedback, which leaf 1 applies.
        let mut back = Packet { src: 0, dst: 1, entropy: 77, ..Default::default() };
        c.next_port(&f, leaf0, &mut back);
        assert_eq!(back.conga_fb, (1, 7));
        back.conga_ce = 0;
        c.at_destination_leaf(&f, leaf1, &mut back);
        now += PS_PER_MS; // past the flowlet gap of earlier flowlets
        let tags = new_flowlet_tags(&mut c, now);
        assert_eq!(tags.into_iter().collect::<Vec<_>>(), vec![1], "new flowlets must avoid the congested uplink");
    }

    #[test]
    fn dre_metric_tracks_utilisation_and_decays() {
        let t = build(&LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 1, links_per_pair: 1 }, Rate(10_000_000_000), Rate(10_000_000_000), 0).unwrap();
        let routes = Routes::compute(&t);
        let ports = Ports::new(&t, u64::MAX, None);
        let spec = RoutingSpec { scheme: Scheme::Conga, ..Default::default() };
        let mut c = Conga::new(&spec, &t, &routes, &mut Streams::new(6));
        let up = routes.toward_tor(t.host_tor[0], 1)[0];
        // Line rate for 1 ms: X converges to C * tau (rate * T_dre / alpha), i.e. utilisation
        // 1, the top level 7. 1500 B every 1.2 us.
        let mut now = 0;
        let mut pkt = Packet { payload: 1442, ..Default::default() };
        for _ in 0..830 {
            let f = Fabric { topo: &t, routes: &routes, ports: &ports, now };
            c.on_egress(&f, up, &mut pkt);
            now += 1_200_000;
        }
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now };
        assert!(c.metric(&f, up) >= 6, "saturated link reads {}", c.metric(&f, up));
        // Idle for 10 tau: (0.9)^100 of the register is left, level 0.
        let f = Fabric { topo: &t, routes: &routes, ports: &ports, now: now + 10 * 160_000_000 };
        assert_eq!(c.metric(&f, up), 0);
    }
}
