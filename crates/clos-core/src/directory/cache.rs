//! The VL2 agents' caches of AA → location mappings (VL2 §4.2.1: "The VL2 agent caches this
//! mapping from AA to LA addresses, similar to a host's ARP cache").
//!
//! An entry belongs to one server's agent and one target AA (or, with the cache off, to one flow
//! direction). Each flow direction remembers the entry it uses, so that a packet finds its
//! mapping by index; the hash map from (server, AA) to entry is read only when a flow first sends
//! from a server. Caches belong to servers (the agent runs in the host's stack), so a VM that
//! migrates meets its new server's cache.

use crate::lb::PreHashedMap;
use crate::rng::mix64;
use crate::units::Time;

/// No entry, or no location yet.
pub const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct Entry {
    /// The server whose agent holds the entry.
    pub agent: u32,
    /// The AA it maps.
    pub aa: u32,
    /// The server the agent believes the AA is on (its LA is that server's ToR), or `NONE` until
    /// the first lookup is answered.
    pub server: u32,
    /// When the mapping should be refreshed (`cache_ttl`), or `Time::MAX`.
    pub expires: Time,
    /// A lookup is in flight, sent at this time.
    pub lookup_since: Option<Time>,
    /// Packets waiting for the first lookup.
    pub held: Vec<u32>,
    /// Has sent a packet with a stale mapping since its AA last moved.
    pub used_stale: bool,
}

/// How a flow direction found its entry when it first sent from a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A mapping was there.
    Cached,
    /// Another flow's lookup for the same AA is in flight.
    Pending,
    /// Nothing: a new entry, to be looked up.
    New,
}

pub struct AgentCaches {
    /// One entry per (server, AA), shared by the server's flows; else one per flow direction.
    shared: bool,
    pub entries: Vec<Entry>,
    index: PreHashedMap<u32>,
    /// The entry each flow direction (0: data, 1: ACKs) uses.
    flow_entry: Vec<[u32; 2]>,
}

fn key(agent: u32, aa: u32) -> u64 {
    mix64((agent as u64) << 32 | aa as u64)
}

impl AgentCaches {
    pub fn new(shared: bool) -> Self {
        AgentCaches { shared, entries: Vec::new(), index: PreHashedMap::default(), flow_entry: Vec::new() }
    }

    /// The entry `flow`'s packets in direction `dir` use at `agent` toward `aa`, and, on the
    /// direction's first packet from this server, how it was found.
    #[inline]
    pub fn entry_for(&mut self, flow: u32, dir: usize, agent: u32, aa: u32) -> (u32, Option<Found>) {
        let f = flow as usize;
        if f >= self.flow_entry.len() {
            self.flow_entry.resize(f + 1, [NONE; 2]);
        }
        let e = self.flow_entry[f][dir];
        // A different agent means the sending AA migrated: its new server has its own cache.
        if e != NONE && self.entries[e as usize].agent == agent {
            return (e, None);
        }
        let existing = if self.shared { self.index.get(&key(agent, aa)).copied() } else { None };
        let (e, found) = match existing {
            Some(e) if self.entries[e as usize].server == NONE => (e, Found::Pending),
            Some(e) => (e, Found::Cached),
            None => {
                let e = self.entries.len() as u32;
                self.entries.push(Entry { agent, aa, server: NONE, expires: Time::MAX, lookup_since: None, held: Vec::new(), used_stale: false });
                if self.shared {
                    self.index.insert(key(agent, aa), e);
                }
                (e, Found::New)
            }
        };
        self.flow_entry[f][dir] = e;
        (e, Some(found))
    }

    /// The flow directions (flow, 0: data or 1: ACKs) that use entry `e`.
    pub fn flows_using(&self, e: u32) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        for (f, dirs) in self.flow_entry.iter().enumerate() {
            for (d, &x) in dirs.iter().enumerate() {
                if x == e {
                    out.push((f as u32, d));
                }
            }
        }
        out
    }

    /// Entries of `agent` for `aa` (one with a shared cache, one per flow direction without).
    pub fn of(&self, agent: u32, aa: u32) -> Vec<u32> {
        if self.shared {
            return self.index.get(&key(agent, aa)).copied().into_iter().collect();
        }
        (0..self.entries.len() as u32).filter(|&e| self.entries[e as usize].agent == agent && self.entries[e as usize].aa == aa).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_cache_serves_every_flow_of_a_server_and_a_moved_sender_starts_afresh() {
        let mut c = AgentCaches::new(true);
        assert_eq!(c.entry_for(0, 0, 5, 9), (0, Some(Found::New)));
        assert_eq!(c.entry_for(0, 0, 5, 9), (0, None));
        assert_eq!(c.entry_for(1, 0, 5, 9), (0, Some(Found::Pending)));
        c.entries[0].server = 9;
        assert_eq!(c.entry_for(2, 0, 5, 9), (0, Some(Found::Cached)));
        // Flow 0's sender now runs on server 6.
        assert_eq!(c.entry_for(0, 0, 6, 9), (1, Some(Found::New)));
        assert_eq!(c.of(5, 9), vec![0]);
    }

    #[test]
    fn without_a_cache_each_flow_direction_resolves_alone() {
        let mut c = AgentCaches::new(false);
        assert_eq!(c.entry_for(0, 0, 5, 9), (0, Some(Found::New)));
        c.entries[0].server = 9;
        assert_eq!(c.entry_for(1, 0, 5, 9), (1, Some(Found::New)));
        assert_eq!(c.of(5, 9), vec![0, 1]);
    }
}
