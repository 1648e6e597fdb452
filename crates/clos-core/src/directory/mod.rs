//! VL2's directory system as the simulator sees it (VL2 §4.2.1, §4.3; docs/directory.md, "The
//! model in the simulator").
//!
//! - **Addresses.** Flows address AAs (application addresses). AA i starts on host i, so without
//!   migrations every AA is where the workload says. An AA's LA is the ToR of the server it runs
//!   on; the model keeps the server itself and lets the ToR deliver by the inner header.
//! - **Agents.** Every packet leaves through its server's agent, which maps the destination AA
//!   with its cache ([`cache`]). The first packet toward an AA the cache lacks waits, with the
//!   packets behind it, for a lookup; later flows find the mapping cached. Both directions
//!   resolve: a receiver's ACKs wait for its own lookup of the sender's AA, as a reply would.
//! - **The directory** answers a lookup with the mapping it holds when the answer goes out, after
//!   a latency drawn from the real service's measurements ([`latency`]) plus the network round
//!   trip, or a fixed time.
//! - **Migration.** At `at` the VM resumes on its new server. The directory's mapping changes
//!   only when the update commits, an update latency later; until then lookups return the old
//!   location. Packets tunnelled to the old ToR are misdelivered: the ToR drops them and reports
//!   to a directory server (one report per sender and AA in flight, VL2's "sample"), which, if
//!   it already holds a newer mapping, sends the corrected mapping to the sender's agent (the
//!   reactive cache update of VL2 §4.3.2; as in `clos-directory`, a report that finds the stale
//!   mapping corrects nothing). A report and its correction are one exchange with a directory
//!   server, timed like a lookup, half each way. Flows keep their TCP state across the move.
//!
//! - **Through the control channel** (`channel = true`, [`push`]): at the update's commit the
//!   directory pushes the new mapping to the agents that hold the old one, as rules, under the
//!   `[convergence]` update strategy; ToRs then report nothing.
//!
//! Nothing here runs unless a scenario has a `[directory]` table: the simulator's hooks are one
//! `Option` test each (`sim/directory.rs`).

pub mod cache;
pub mod latency;
pub mod push;
pub mod spec;

use crate::event::{Event, EventQueue};
use crate::metrics::percentile;
use crate::rng::Stream;
use crate::topology::Topology;
use crate::units::{seconds, Time};
use cache::{AgentCaches, Found, NONE};
use latency::{Latency, LatencySpec, LOOKUP, UPDATE};
use serde_json::{json, Value};
use spec::{DirectorySpec, Place};

/// What the directory model schedules for itself (defined with the calendar's events, which
/// carry it, so that the calendar does not depend on this model).
pub use crate::event::DirectoryEvent;

/// What an agent does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtAgent {
    /// Send it from server `from` toward server `to` (the believed location).
    Send { from: u32, to: u32 },
    /// It waits in cache entry `entry` for a lookup; it will leave from `from`.
    Hold { entry: u32, from: u32 },
}

/// A report and the correction it may bring.
#[derive(Clone, Copy, Debug)]
struct Message {
    /// The server whose agent sent the misdelivered packet.
    agent: u32,
    aa: u32,
    /// The ToR that reported.
    tor: u32,
    /// The correction's way back: the rest of the exchange's latency.
    back: Time,
    /// The location the directory sends.
    server: u32,
    live: bool,
}

/// One migration and what followed it.
#[derive(Clone, Debug)]
struct Move {
    at: Time,
    aa: u32,
    from: u32,
    to: u32,
    update_latency: Option<Time>,
    committed: Option<Time>,
    stale_caches_at_move: u64,
    stale_answers: u64,
    /// Packets agents sent with a stale mapping, and the last time one did.
    stale_sends: u64,
    last_stale_send: Option<Time>,
    misdelivered: u64,
    lost_on_downlink: u64,
    first_misdelivered: Option<Time>,
    last_misdelivered: Option<Time>,
    reports: u64,
    reports_unanswered: u64,
    corrections: u64,
    stale_senders: u64,
    stale_senders_left: u64,
    converged: Option<Time>,
    first_delivery: Option<Time>,
    /// Entries still stale when a later move of the same AA superseded this one.
    stale_caches_at_end: Option<u64>,
    /// Its push through the control channel (`channel = true`), by index.
    push: Option<u32>,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    lookups: u64,
    refreshes: u64,
    cache_hits: u64,
    joined_lookups: u64,
    held_packets: u64,
    misdelivered: u64,
    reports: u64,
    reports_unanswered: u64,
    corrections: u64,
    corrections_applied: u64,
}

pub struct Directory {
    spec: DirectorySpec,
    lookup: Latency,
    update: Latency,
    network_rtt: Time,
    ttl: Option<Time>,
    rng: Stream,
    host_tor: Vec<u32>,
    /// AA → the server it runs on now.
    loc: Vec<u32>,
    /// AA → the server the directory maps it to (committed updates only).
    mapping: Vec<u32>,
    /// AA → the latest migration whose update committed, or `NONE`.
    mapping_move: Vec<u32>,
    /// AA → its latest migration, or `NONE`.
    current_move: Vec<u32>,
    caches: AgentCaches,
    messages: Vec<Message>,
    free_messages: Vec<u32>,
    moves: Vec<Move>,
    stats: Stats,
    /// Each lookup's wait, from its request to its answer.
    waits: Vec<Time>,
    /// `channel = true`: the pushes of new mappings through the control channel.
    push: Option<Box<push::Pushes>>,
    /// Per-flow pushes: each flow direction's last packet, and the directions kept on an old
    /// mapping (and how many are).
    last_sent: Vec<[Time; 2]>,
    pins: Vec<[Option<push::Pin>; 2]>,
    pinned: usize,
}

impl Directory {
    /// The model for a normalised `spec`; schedules the migrations.
    /// `control`: the control channel's settings, when the mappings go through it.
    pub fn new(spec: &DirectorySpec, topo: &Topology, rng: Stream, queue: &mut EventQueue, control: Option<&crate::control::Settings>) -> Directory {
        let network_rtt = spec.network_rtt.expect("normalised").0;
        let n = topo.n_hosts as u32;
        let host = |p: Place| match p {
            Place::Host(h) => h,
            Place::Tor(_) => unreachable!("normalised to hosts"),
        };
        let moves: Vec<Move> = spec
            .migrations
            .iter()
            .map(|m| Move {
                at: m.at.0,
                aa: host(m.aa),
                from: NONE,
                to: host(m.to),
                update_latency: None,
                committed: None,
                stale_caches_at_move: 0,
                stale_answers: 0,
                stale_sends: 0,
                last_stale_send: None,
                misdelivered: 0,
                lost_on_downlink: 0,
                first_misdelivered: None,
                last_misdelivered: None,
                reports: 0,
                reports_unanswered: 0,
                corrections: 0,
                stale_senders: 0,
                stale_senders_left: 0,
                converged: None,
                first_delivery: None,
                stale_caches_at_end: None,
                push: None,
            })
            .collect();
        for (i, m) in moves.iter().enumerate() {
            queue.schedule(m.at, Event::Directory(DirectoryEvent::Migrate { index: i as u32 }));
        }
        Directory {
            spec: spec.clone(),
            lookup: Latency::new(spec.lookup_latency, LOOKUP, network_rtt),
            update: Latency::new(spec.update_latency, UPDATE, network_rtt),
            network_rtt,
            ttl: spec.cache_ttl.map(|d| d.0),
            rng,
            host_tor: topo.host_tor.clone(),
            loc: (0..n).collect(),
            mapping: (0..n).collect(),
            mapping_move: vec![NONE; n as usize],
            current_move: vec![NONE; n as usize],
            caches: AgentCaches::new(spec.cache),
            messages: Vec::new(),
            free_messages: Vec::new(),
            moves,
            stats: Stats::default(),
            waits: Vec::new(),
            push: control.map(|c| Box::new(push::Pushes::new(c, n as usize))),
            last_sent: Vec::new(),
            pins: Vec::new(),
            pinned: 0,
        }
    }

    /// The server AA `aa` runs on now.
    #[inline]
    pub fn server_of(&self, aa: u32) -> u32 {
        self.loc[aa as usize]
    }

    /// The agent of AA `src`'s server handles a packet of `flow` (`ack`: the ACK direction) for
    /// AA `dst`.
    #[inline]
    pub fn at_agent(&mut self, queue: &mut EventQueue, now: Time, flow: u32, ack: bool, src: u32, dst: u32) -> AtAgent {
        let from = self.loc[src as usize];
        let (e, found) = self.caches.entry_for(flow, ack as usize, from, dst);
        let entry = &mut self.caches.entries[e as usize];
        match found {
            Some(Found::Pending) => self.stats.joined_lookups += 1,
            Some(Found::Cached) => self.stats.cache_hits += 1,
            Some(Found::New) | None => {}
        }
        let first = entry.server == NONE;
        if (first || now >= entry.expires) && entry.lookup_since.is_none() {
            // A new mapping, or a refresh of an expired one (packets go on with the old mapping
            // meanwhile, as ARP's stale entries do).
            entry.lookup_since = Some(now);
            self.stats.lookups += 1;
            self.stats.refreshes += u64::from(!first);
            let t = self.lookup.sample(&mut self.rng);
            queue.schedule(now + t, Event::Directory(DirectoryEvent::LookupDone { entry: e }));
        }
        if first {
            self.stats.held_packets += 1;
            return AtAgent::Hold { entry: e, from };
        }
        let server = entry.server;
        if self.push.is_some() {
            if let Some(to) = self.per_flow_send(now, flow, ack as usize) {
                let m = self.current_move[dst as usize];
                if to != self.loc[dst as usize] && m != NONE {
                    let mv = &mut self.moves[m as usize];
                    mv.stale_sends += 1;
                    mv.last_stale_send = Some(now);
                }
                return AtAgent::Send { from, to };
            }
        }
        let entry = &mut self.caches.entries[e as usize];
        if server != self.loc[dst as usize] {
            let m = self.current_move[dst as usize];
            if m != NONE {
                let mv = &mut self.moves[m as usize];
                mv.stale_sends += 1;
                mv.last_stale_send = Some(now);
                if !entry.used_stale {
                    entry.used_stale = true;
                    mv.stale_senders += 1;
                    mv.stale_senders_left += 1;
                }
            }
        }
        AtAgent::Send { from, to: server }
    }

    /// Per-flow pushes: note the flow direction's packet; if it is kept on an old mapping and
    /// has not idled `flow_timeout`, the server it still goes to.
    fn per_flow_send(&mut self, now: Time, flow: u32, dir: usize) -> Option<u32> {
        let p = self.push.as_deref_mut().expect("called with pushes");
        if p.strategy != crate::control::UpdateStrategy::PerFlow {
            return None;
        }
        let f = flow as usize;
        if f >= self.last_sent.len() {
            self.last_sent.resize(f + 1, [Time::MAX; 2]);
            self.pins.resize(f + 1, [None; 2]);
        }
        self.last_sent[f][dir] = now;
        if self.pinned == 0 {
            return None;
        }
        let pin = self.pins[f][dir].as_mut()?;
        if now - pin.last >= p.flow_timeout {
            self.pins[f][dir] = None;
            self.pinned -= 1;
            return None;
        }
        pin.last = now;
        let push = &mut p.pushes[pin.push as usize];
        push.last_old_send = Some(now);
        Some(pin.server)
    }

    /// Packet `h` waits in `entry` for its lookup.
    pub fn hold(&mut self, entry: u32, h: u32) {
        self.caches.entries[entry as usize].held.push(h);
    }

    /// A lookup is answered: the entry's agent, the location, and the packets that waited (give
    /// the emptied vector back with [`Directory::give_back`]).
    pub fn lookup_done(&mut self, now: Time, e: u32) -> (u32, u32, Vec<u32>) {
        let entry = &mut self.caches.entries[e as usize];
        let since = entry.lookup_since.take().expect("a lookup was in flight");
        self.waits.push(now - since);
        let aa = entry.aa;
        let server = self.mapping[aa as usize];
        self.expire_from(e, now);
        self.set_mapping(e, server, now, true);
        let entry = &mut self.caches.entries[e as usize];
        (entry.agent, server, std::mem::take(&mut entry.held))
    }

    /// Return the (emptied) vector of held packets to its entry, keeping its allocation.
    pub fn give_back(&mut self, e: u32, held: Vec<u32>) {
        debug_assert!(held.is_empty());
        self.caches.entries[e as usize].held = held;
    }

    fn expire_from(&mut self, e: u32, now: Time) {
        self.caches.entries[e as usize].expires = self.ttl.map_or(Time::MAX, |t| now + t);
    }

    /// Entry `e` now maps its AA to `server` (by a lookup, or else a correction).
    fn set_mapping(&mut self, e: u32, server: u32, now: Time, lookup: bool) {
        let entry = &mut self.caches.entries[e as usize];
        entry.server = server;
        let aa = entry.aa as usize;
        let m = self.current_move[aa];
        if m == NONE {
            return;
        }
        let mv = &mut self.moves[m as usize];
        if server != self.loc[aa] {
            mv.stale_answers += u64::from(lookup);
        } else if entry.used_stale {
            entry.used_stale = false;
            mv.stale_senders_left -= 1;
            if mv.stale_senders_left == 0 {
                mv.converged = Some(now);
            }
        }
    }

    /// A packet for AA `aa`, sent by the agent of server `sender`, reaches its believed ToR
    /// `tor`: the server to deliver it to, or `None` if the AA is no longer there (the packet is
    /// misdelivered; the caller drops it).
    #[inline]
    pub fn at_tor(&mut self, queue: &mut EventQueue, now: Time, tor: u32, aa: u32, sender: u32) -> Option<u32> {
        let server = self.loc[aa as usize];
        if self.host_tor[server as usize] == tor {
            return Some(server);
        }
        self.stats.misdelivered += 1;
        let m = self.current_move[aa as usize];
        debug_assert!(m != NONE, "a stale mapping needs a move");
        let mv = &mut self.moves[m as usize];
        mv.misdelivered += 1;
        mv.first_misdelivered.get_or_insert(now);
        mv.last_misdelivered = Some(now);
        // VL2 §4.3.2: the ToR "may forward a sample of such non-deliverable packets to a
        // directory server": here one report per (sender, AA) at a time from each ToR.
        if self.messages.iter().any(|r| r.live && r.tor == tor && r.agent == sender && r.aa == aa) {
            return None;
        }
        if self.push.is_some() {
            return None; // the push through the control channel corrects the senders
        }
        mv.reports += 1;
        self.stats.reports += 1;
        let exchange = self.lookup.sample(&mut self.rng);
        let there = exchange / 2;
        let msg = Message { agent: sender, aa, tor, back: exchange - there, server: NONE, live: true };
        let i = match self.free_messages.pop() {
            Some(i) => {
                self.messages[i as usize] = msg;
                i
            }
            None => {
                self.messages.push(msg);
                self.messages.len() as u32 - 1
            }
        };
        queue.schedule(now + there, Event::Directory(DirectoryEvent::Report { msg: i }));
        None
    }

    /// A packet for AA `aa` reaches server `server` at the end of the downlink: false if the AA
    /// left while it was on the way (it is lost with the move).
    #[inline]
    pub fn at_host(&mut self, now: Time, aa: u32, server: u32) -> bool {
        let m = self.current_move[aa as usize];
        if self.loc[aa as usize] != server {
            self.stats.misdelivered += 1;
            let mv = &mut self.moves[m as usize];
            mv.misdelivered += 1;
            mv.lost_on_downlink += 1;
            mv.first_misdelivered.get_or_insert(now);
            mv.last_misdelivered = Some(now);
            return false;
        }
        if m != NONE {
            self.moves[m as usize].first_delivery.get_or_insert(now);
        }
        true
    }

    /// Every event but `LookupDone` (which moves packets, so the simulator handles it).
    pub fn handle(&mut self, queue: &mut EventQueue, now: Time, e: DirectoryEvent) {
        match e {
            DirectoryEvent::LookupDone { .. } => unreachable!("handled by the simulator"),
            DirectoryEvent::Migrate { index } => self.migrate(queue, now, index),
            DirectoryEvent::UpdateCommitted { index } => self.commit(queue, now, index),
            DirectoryEvent::Report { msg } => {
                let r = &mut self.messages[msg as usize];
                let (aa, m) = (r.aa as usize, self.current_move[r.aa as usize] as usize);
                let server = self.mapping[aa];
                if self.host_tor[server as usize] == r.tor {
                    // The directory still maps the AA to the reporting ToR: nothing to correct.
                    r.live = false;
                    self.free_messages.push(msg);
                    self.stats.reports_unanswered += 1;
                    self.moves[m].reports_unanswered += 1;
                } else {
                    r.server = server;
                    self.stats.corrections += 1;
                    self.moves[m].corrections += 1;
                    queue.schedule(now + r.back, Event::Directory(DirectoryEvent::Correction { msg }));
                }
            }
            DirectoryEvent::PushWritten { push, target } => self.push_written(queue, now, push, target),
            DirectoryEvent::Correction { msg } => {
                let r = self.messages[msg as usize];
                self.messages[msg as usize].live = false;
                self.free_messages.push(msg);
                for e in self.caches.of(r.agent, r.aa) {
                    if self.caches.entries[e as usize].server != NONE {
                        self.stats.corrections_applied += 1;
                        self.expire_from(e, now);
                        self.set_mapping(e, r.server, now, false);
                    }
                }
            }
        }
    }

    fn migrate(&mut self, queue: &mut EventQueue, now: Time, index: u32) {
        let i = index as usize;
        let aa = self.moves[i].aa;
        let previous = self.current_move[aa as usize];
        if previous != NONE {
            self.moves[previous as usize].stale_caches_at_end = Some(self.stale_entries(aa));
        }
        self.moves[i].from = self.loc[aa as usize];
        self.loc[aa as usize] = self.moves[i].to;
        self.current_move[aa as usize] = index;
        for entry in self.caches.entries.iter_mut().filter(|e| e.aa == aa) {
            entry.used_stale = false;
        }
        self.moves[i].stale_caches_at_move = self.stale_entries(aa);
        let u = self.update.sample(&mut self.rng);
        self.moves[i].update_latency = Some(u);
        if u == 0 {
            self.commit(queue, now, index);
        } else {
            queue.schedule(now + u, Event::Directory(DirectoryEvent::UpdateCommitted { index }));
        }
    }

    fn commit(&mut self, queue: &mut EventQueue, now: Time, index: u32) {
        let mv = &mut self.moves[index as usize];
        mv.committed = Some(now);
        let aa = mv.aa as usize;
        // Updates of one AA commit in the order they were made (store revisions).
        if self.mapping_move[aa] == NONE || self.mapping_move[aa] < index {
            self.mapping_move[aa] = index;
            self.mapping[aa] = mv.to;
            if self.push.is_some() {
                self.start_push(queue, now, index);
            }
        }
    }

    /// Migration `index`'s update committed: push the new mapping to every agent that maps the
    /// AA elsewhere (in the order their entries were made).
    fn start_push(&mut self, queue: &mut EventQueue, now: Time, index: u32) {
        let (aa, to) = (self.moves[index as usize].aa, self.moves[index as usize].to);
        let mut targets: Vec<(u32, Vec<u32>)> = Vec::new();
        for (e, entry) in self.caches.entries.iter().enumerate() {
            if entry.aa != aa || entry.server == NONE || entry.server == to {
                continue;
            }
            match targets.iter_mut().find(|t| t.0 == entry.agent) {
                Some(t) => t.1.push(e as u32),
                None => targets.push((entry.agent, vec![e as u32])),
            }
        }
        let p = self.push.as_deref_mut().expect("pushing");
        let (i, due) = p.start(now, index, to, targets);
        self.moves[index as usize].push = Some(i);
        for (at, push, target, phase) in due {
            queue.schedule(at, Event::Directory(DirectoryEvent::PushWritten { push, target: target | (phase as u32) << 31 }));
        }
    }

    /// A push's message to one agent is written: in place (unordered, ordered), the agent maps
    /// the AA anew; staged (two-phase, per-flow), the controller may flip; a flip, the agent
    /// stamps new packets with the new mapping (per-flow: flows that sent within
    /// `flow_timeout` keep the old one until they idle that long).
    fn push_written(&mut self, queue: &mut EventQueue, now: Time, i: u32, target: u32) {
        let (t, flip) = ((target & 0x7fff_ffff) as usize, target >> 31 == 1);
        if !flip {
            self.refuse_if_full(i, t);
        }
        let p = self.push.as_deref_mut().expect("pushing");
        let strategy = p.strategy;
        if strategy.tagged() && !flip {
            for (at, push, target, _) in p.staged(i, now) {
                queue.schedule(at, Event::Directory(DirectoryEvent::PushWritten { push, target: target | 1 << 31 }));
            }
            return;
        }
        let push = &p.pushes[i as usize];
        let (mv, to, entries) = (push.mv, push.to, push.targets[t].1.clone());
        let current = self.mapping_move[self.moves[mv as usize].aa as usize] == mv;
        let timeout = p.flow_timeout;
        let mut kept = 0;
        for &e in &entries {
            if !current || self.caches.entries[e as usize].server == NONE {
                continue;
            }
            if strategy == crate::control::UpdateStrategy::PerFlow {
                let old = self.caches.entries[e as usize].server;
                for (f, d) in self.caches.flows_using(e) {
                    let last = self.last_sent.get(f as usize).map_or(Time::MAX, |l| l[d]);
                    if last != Time::MAX && now - last < timeout {
                        if self.pins[f as usize][d].is_none() {
                            self.pinned += 1;
                        }
                        self.pins[f as usize][d] = Some(push::Pin { server: old, last, push: i });
                        kept += 1;
                    }
                }
            }
            self.expire_from(e, now);
            self.set_mapping(e, to, now, false);
        }
        let p = self.push.as_deref_mut().expect("pushing");
        p.pushes[i as usize].flows_kept += kept;
        p.flipped(i, now);
    }

    /// Push `i`'s message to its target `t` arrives: if the agent's table has no room for it, the
    /// agent refuses it and drops its mapping for the AA (its next packet looks it up).
    fn refuse_if_full(&mut self, i: u32, t: usize) {
        let p = self.push.as_deref().expect("pushing");
        let (agent, entries) = &p.pushes[i as usize].targets[t];
        let agent = *agent;
        let held = self.caches.entries.iter().filter(|e| e.agent == agent && e.server != NONE).count() as u64;
        let n = entries.len() as u64;
        if p.fits(held, n) {
            return;
        }
        let entries = entries.clone();
        for e in entries {
            self.caches.entries[e as usize].server = NONE;
        }
        self.push.as_deref_mut().expect("pushing").refuse(i, agent, n);
    }

    /// Cache entries that map `aa` somewhere it is not.
    fn stale_entries(&self, aa: u32) -> u64 {
        let here = self.loc[aa as usize];
        self.caches.entries.iter().filter(|e| e.aa == aa && e.server != NONE && e.server != here).count() as u64
    }

    /// The summary's `directory` section (times of a migration are from its `at`).
    pub fn summary(&self, topo: &Topology) -> Value {
        let mut waits = self.waits.clone();
        waits.sort_unstable();
        let w = |p: f64| percentile(&waits, p).map(seconds);
        let name = |n: u32| (n != NONE).then(|| topo.nodes[n as usize].name.clone());
        let since = |m: &Move, t: Option<Time>| t.map(|t| seconds(t - m.at));
        let moves: Vec<Value> = self
            .moves
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let current = self.current_move[m.aa as usize] == i as u32;
                let started = m.from != NONE;
                let stale_at_end = match (started, current) {
                    (false, _) => None,
                    (true, true) => Some(self.stale_entries(m.aa)),
                    (true, false) => m.stale_caches_at_end,
                };
                let mut v = json!({
                    "aa": m.aa,
                    "at_s": seconds(m.at),
                    "happened": started,
                    "from": name(m.from),
                    "to": name(m.to),
                    "from_tor": name(if started { self.host_tor[m.from as usize] } else { NONE }),
                    "to_tor": name(self.host_tor[m.to as usize]),
                    "update_latency_s": m.update_latency.map(seconds),
                    "directory_updated_s": since(m, m.committed),
                    "stale_caches_at_move": m.stale_caches_at_move,
                    "stale_answers": m.stale_answers,
                    "stale_sends": m.stale_sends,
                    "last_stale_send_s": since(m, m.last_stale_send),
                    "misdelivered": m.misdelivered,
                    "lost_on_downlink": m.lost_on_downlink,
                    "first_misdelivered_s": since(m, m.first_misdelivered),
                    "last_misdelivered_s": since(m, m.last_misdelivered),
                    "reports": m.reports,
                    "reports_unanswered": m.reports_unanswered,
                    "corrections": m.corrections,
                    "stale_senders": m.stale_senders,
                    "stale_senders_left": m.stale_senders_left,
                    "senders_converged_s": if m.stale_senders_left == 0 { since(m, m.converged.or(started.then_some(m.at))) } else { None },
                    "first_delivery_s": since(m, m.first_delivery),
                    "stale_caches_at_end": stale_at_end,
                });
                if let (Some(p), Some(i)) = (self.push.as_deref(), m.push) {
                    v["push"] = push_summary(p, &p.pushes[i as usize], m.at);
                }
                v
            })
            .collect();
        let s = &self.stats;
        let latency_source = |l: LatencySpec, d: latency::Measured| match l {
            LatencySpec::Measured => Value::from(d.source),
            LatencySpec::Fixed(_) => Value::Null,
        };
        let mut out = json!({
            "lookup_latency": Value::from(self.spec.lookup_latency),
            "lookup_latency_source": latency_source(self.spec.lookup_latency, LOOKUP),
            "update_latency": Value::from(self.spec.update_latency),
            "update_latency_source": latency_source(self.spec.update_latency, UPDATE),
            "network_rtt_s": seconds(self.network_rtt),
            "cache": self.spec.cache,
            "cache_ttl_s": self.ttl.map(seconds),
            "lookups": s.lookups,
            "refreshes": s.refreshes,
            "cache_hits": s.cache_hits,
            "joined_lookups": s.joined_lookups,
            "held_packets": s.held_packets,
            "lookup_wait_mean_s": (!waits.is_empty()).then(|| waits.iter().map(|&t| seconds(t)).sum::<f64>() / waits.len() as f64),
            "lookup_wait_p50_s": w(50.0),
            "lookup_wait_p99_s": w(99.0),
            "lookup_wait_max_s": w(100.0),
            "misdelivered": s.misdelivered,
            "reports": s.reports,
            "reports_unanswered": s.reports_unanswered,
            "corrections": s.corrections,
            "corrections_applied": s.corrections_applied,
            "migrations": moves,
        });
        if let Some(p) = self.push.as_deref() {
            out["channel"] = Value::from(p.strategy.name());
            // Only when an agent refused a mapping, so that runs without refusals keep their
            // summaries (and goldens) as they were.
            let refusals: Vec<Value> = (p.refused.iter().enumerate())
                .filter(|(_, r)| r.0 > 0)
                .map(|(a, r)| json!({"agent": topo.nodes[a].name, "rules_refused": r.0, "messages_refused": r.1}))
                .collect();
            if !refusals.is_empty() {
                out["agent_table_size"] = Value::from(p.table_size);
                out["agent_table_refusals"] = Value::from(refusals);
            }
        }
        out
    }
}

/// A migration's push through the control channel (`channel = true`), for the summary; times
/// from the move (`at`).
fn push_summary(p: &push::Pushes, u: &push::Push, at: Time) -> Value {
    let since = |t: Option<Time>| t.map(|t| seconds(t - at));
    let removed = match p.strategy {
        crate::control::UpdateStrategy::PerFlow => p.per_flow_removed(u),
        crate::control::UpdateStrategy::TwoPhase => u.removed,
        _ => u.completed,
    };
    let mut v = json!({
        "update": p.strategy.name(),
        "agents": u.targets.len(),
        "sent_s": since(Some(u.sent)),
        "completed_s": since(u.completed),
        "time_to_complete_s": u.completed.map(|t| seconds(t - u.sent)),
        "old_rules_removed_s": since(removed),
        "rules_written": u.rules_written,
        "peak_rules": u.peak_rules,
        "flows_kept_on_old_mapping": u.flows_kept,
        "last_old_mapping_send_s": since(u.last_old_send),
    });
    // Table space: only when an agent refused, as the section's `agent_table_refusals`.
    if u.rules_refused > 0 {
        v["rules_refused"] = u.rules_refused.into();
        v["agents_refused"] = u.agents_refused.into();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_events_do_not_grow_the_calendars_entries() {
        // Every other event is at most two u32s. The calendar packs arrivals into eight bytes
        // and keeps the rest whole in a slab (`event.rs`), where timers can number thousands.
        assert_eq!(std::mem::size_of::<Event>(), 12);
    }
}
