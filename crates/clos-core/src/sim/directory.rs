//! The simulator's side of the VL2 directory model (`crate::directory`): the hooks that the
//! agent (`emit`), the destination ToR (`forward`) and the host (`host_receive`) call when a
//! scenario has a `[directory]` table, and the directory's events. Without the table
//! `World::directory` is `None` and each hook costs one test of it. The hooks are never inlined,
//! so that the hot functions they sit in keep their size: on B1 (k=8 fat tree, 20 ms, 10.7 M
//! events) with the directory off, callgrind counted 0.5% more instructions than before the
//! model existed, against 2.4% with the hooks inlined.

use super::World;
use crate::directory::{AtAgent, Directory, DirectoryEvent};
use crate::event::EventQueue;
use crate::lb::Fabric;
use crate::metrics::trace::NO_LINK;
use crate::packet::{Packet, FLAG_ACK};
use crate::rng::Streams;
use crate::scenario::Scenario;
use crate::topology::Topology;
use serde_json::Value;

/// The model for scenario `s`, if it asks for one (taking its random stream last, so that every
/// other stream is the same with or without it).
pub(super) fn build(s: &Scenario, topo: &Topology, streams: &mut Streams, queue: &mut EventQueue) -> Option<Box<Directory>> {
    let spec = s.directory.as_ref().filter(|d| d.enabled)?;
    let control = spec.channel.then(|| s.convergence.as_ref().expect("normalised: channel needs the controller").controller_settings());
    Some(Box::new(Directory::new(spec, topo, streams.stream(), queue, control.as_ref())))
}

impl World {
    /// The AA a packet is addressed to: the flow's destination, or its source for an ACK.
    #[inline]
    fn packet_aa(&self, pkt: &Packet) -> u32 {
        let f = &self.flows[pkt.flow as usize];
        if pkt.has(FLAG_ACK) {
            f.src
        } else {
            f.dst
        }
    }

    /// The agent maps a packet's AAs (`pkt.src`, `pkt.dst`) to servers: the server it leaves
    /// from, or `None` when it waits for a lookup (it is then in the pool and counted as sent).
    #[inline(never)]
    pub(super) fn agent_resolve(&mut self, pkt: &mut Packet) -> Option<u32> {
        let d = self.directory.as_mut().expect("called with a directory");
        match d.at_agent(&mut self.queue, self.now, pkt.flow, pkt.has(FLAG_ACK), pkt.src, pkt.dst) {
            AtAgent::Send { from, to } => {
                pkt.src = from;
                pkt.dst = to;
                Some(from)
            }
            AtAgent::Hold { entry, from } => {
                pkt.src = from;
                let h = self.pool.alloc(*pkt);
                self.counters.sent += 1;
                d.hold(entry, h);
                None
            }
        }
    }

    /// Packet `h` reached switch `node`. If that is the ToR of the LA its agent sent it to, the
    /// ToR delivers it to the server its AA runs on now, or, if the AA is not under this ToR,
    /// drops it as misdelivered and reports it: false.
    #[inline(never)]
    pub(super) fn directory_at_switch(&mut self, node: u32, h: u32) -> bool {
        let pkt = *self.pool.get(h);
        if self.topo.host_tor[pkt.dst as usize] != node {
            return true;
        }
        let aa = self.packet_aa(&pkt);
        let d = self.directory.as_mut().expect("called with a directory");
        match d.at_tor(&mut self.queue, self.now, node, aa, pkt.src) {
            Some(server) => {
                self.pool.get_mut(h).dst = server;
                true
            }
            None => {
                self.drop_packet(h, NO_LINK);
                false
            }
        }
    }

    /// Packet `h` reached its server: false if its AA moved away meanwhile (dropped).
    #[inline(never)]
    pub(super) fn directory_at_host(&mut self, h: u32) -> bool {
        let pkt = *self.pool.get(h);
        let aa = self.packet_aa(&pkt);
        let d = self.directory.as_mut().expect("called with a directory");
        if d.at_host(self.now, aa, pkt.dst) {
            return true;
        }
        self.drop_packet(h, NO_LINK);
        false
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_directory_event(&mut self, e: DirectoryEvent) {
        let d = self.directory.as_mut().expect("directory events need a directory");
        let DirectoryEvent::LookupDone { entry } = e else {
            d.handle(&mut self.queue, self.now, e);
            return;
        };
        // The answer releases the packets that waited, in the order they were sent.
        let (agent, server, mut held) = d.lookup_done(self.now, entry);
        let port = self.topo.port_start[agent as usize];
        for &h in &held {
            let pkt = self.pool.get_mut(h);
            pkt.dst = server;
            let f = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now: self.now };
            self.fwd.at_source(&f, pkt);
            self.transmit::<super::shape::General>(port, h);
        }
        held.clear();
        self.directory.as_mut().expect("still there").give_back(entry, held);
    }

    /// The summary's `directory` section, if the model ran.
    pub fn directory_summary(&self) -> Option<Value> {
        self.directory.as_ref().map(|d| d.summary(&self.topo))
    }

    /// The server AA `aa` runs on now (AA i starts on host i).
    pub fn server_of(&self, aa: u32) -> u32 {
        self.directory.as_ref().map_or(aa, |d| d.server_of(aa))
    }
}
