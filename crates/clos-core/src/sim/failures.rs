//! Failures in the running fabric, and the link-state control plane (see `crate::failures`).
//!
//! A change happens physically at its time: a failed link loses what it holds and whatever is
//! offered to it ([`Ports::fail`]), a degraded link serialises at its new rate, a lossy link
//! drops packets at random as they arrive. Routing learns later: after `detection` (plus
//! `hold_down` for a repair) a new routing version is computed from the advertised link state,
//! and every switch installs it `propagation` x (hops from the changed link) + `install` later.
//! Until then it forwards with its old row, into the failed link if that is where its tables
//! point: those packets are lost and counted, as in a real network.
//!
//! In `controller` mode the controller (`crate::control`) plans each update instead, and its
//! steps run here as `RouteInstall` events whose `version` is the step's number; `control_hop`
//! keeps each packet's versions as it is forwarded.

use super::World;
use crate::control::controller::Rows;
use crate::control::Controller;
use crate::error::Result;
use crate::event::Event;
use crate::fabric::Ports;
use crate::failures::{Change, ConvergenceMode, ConvergenceSpec, What};
use crate::lb::Fabric;
use crate::metrics::trace::NO_LINK;
use crate::rng::{unit, Stream, Streams};
use crate::routing::{switch_distances, LinkState, Routes, Tables};
use crate::topology::Role;
use crate::topology::Topology;
use crate::units::Time;
use std::sync::Arc;

/// What happened to one change, for the summary's timeline.
#[derive(Clone, Debug, Default)]
pub struct ChangeRecord {
    pub at: Time,
    pub source: usize,
    pub what: String,
    pub links: usize,
    /// When routing learned of it (None: not a routing event, or not yet).
    pub advertised: Option<Time>,
    /// When the last switch installed the tables that reflect it.
    pub converged: Option<Time>,
}

pub struct Faults {
    changes: Vec<Change>,
    spec: ConvergenceSpec,
    /// The rate each link was built with (what a repair restores).
    built_rate: Vec<u64>,
    /// What the control plane believes (routing's input).
    advertised: LinkState,
    /// Routing versions not yet installed everywhere, and how many switches still must.
    versions: Vec<Option<(Tables, u32, usize)>>,
    installed: Vec<u32>,
    /// Advertisements scheduled but not yet made.
    pending_adverts: u32,
    /// Per-port probability that a packet crossing it is lost.
    loss: Vec<f64>,
    rng: Stream,
    pub records: Vec<ChangeRecord>,
    pub lost_to_loss: u64,
    pub unroutable: u64,
    pub looped: u64,
    /// Packets a switch sent into a failed switch-to-switch link while routing had converged.
    pub into_failed_converged: u64,
    /// Packets a switch sent into a failed link (its tables still pointed there): black-holed.
    pub into_failed: u64,
    /// The controller, in `controller` mode.
    pub control: Option<Box<Controller>>,
}

impl Faults {
    /// Changes at time 0 are part of the starting fabric: applied to `ports` and `state` now,
    /// so routing starts converged around them. The rest are scheduled by the caller.
    pub fn new(t: &Topology, changes: Vec<Change>, spec: ConvergenceSpec, ports: &mut Ports, seed: u64) -> (Faults, LinkState) {
        let built_rate: Vec<u64> = t.links.iter().map(|l| t.ports[l[0] as usize].rate_bps).collect();
        let mut f = Faults {
            records: changes
                .iter()
                .map(|c| ChangeRecord { at: c.at, source: c.source, what: describe(c.what), links: c.links.len(), ..Default::default() })
                .collect(),
            changes,
            spec,
            advertised: LinkState { rate: built_rate.clone() },
            built_rate,
            versions: Vec::new(),
            installed: vec![0; t.nodes.len()],
            pending_adverts: 0,
            loss: vec![0.0; t.ports.len()],
            rng: Streams::new(seed ^ 0x4c4f_5353_4c4f_5353).stream(),
            lost_to_loss: 0,
            unroutable: 0,
            looped: 0,
            into_failed_converged: 0,
            into_failed: 0,
            control: None,
        };
        for i in 0..f.changes.len() {
            if f.changes[i].at == 0 {
                f.apply(t, i, ports, 0);
                f.advertise(i);
                f.records[i].advertised = Some(0);
                f.records[i].converged = Some(0);
            }
        }
        let state = f.advertised.clone();
        (f, state)
    }

    /// In `controller` mode, start the controller on the starting routes (built from `state`).
    pub fn start_control(&mut self, t: &Topology, routes: &mut Routes, state: &LinkState) -> Result<()> {
        if self.spec.mode != ConvergenceMode::Controller {
            return Ok(());
        }
        let routing_changes = self.changes.iter().filter(|c| c.at > 0 && !matches!(c.what, What::Loss(_))).count();
        self.control = Some(Box::new(Controller::new(t, routes, state, &self.spec.controller_settings(), routing_changes)?));
        Ok(())
    }

    /// Each change's index and time (the caller schedules those after time 0).
    pub fn change_times(&self) -> Vec<(u32, Time)> {
        self.changes.iter().enumerate().map(|(i, c)| (i as u32, c.at)).collect()
    }

    /// Whether the control plane has caught up with every change so far.
    pub fn converged(&self) -> bool {
        self.pending_adverts == 0 && self.versions.iter().all(|v| v.is_none()) && self.control.as_ref().is_none_or(|c| c.idle())
    }

    /// Physical effect of change `i` at `now`.
    fn apply(&mut self, t: &Topology, i: usize, ports: &mut Ports, now: Time) {
        let c = &self.changes[i];
        for &l in &c.links {
            for p in t.links[l as usize] {
                match c.what {
                    What::Down => ports.fail(p, now),
                    What::Up => ports.repair(p),
                    What::Rate(r) => ports.set_rate(p, r, now),
                    What::Restore => ports.set_rate(p, self.built_rate[l as usize], now),
                    What::Loss(x) => self.loss[p as usize] = x,
                }
            }
        }
    }

    /// Change `i` enters the advertised link state.
    fn advertise(&mut self, i: usize) {
        let c = &self.changes[i];
        for &l in &c.links {
            let l = l as usize;
            match c.what {
                What::Down => self.advertised.rate[l] = 0,
                What::Up | What::Restore => self.advertised.rate[l] = self.built_rate[l],
                What::Rate(r) => self.advertised.rate[l] = r,
                What::Loss(_) => {}
            }
        }
    }

    /// Whether a packet arriving over `via` is lost to the link's loss rate.
    #[inline]
    pub fn lossy_drop(&mut self, via: u32) -> bool {
        let p = self.loss[via as usize];
        p > 0.0 && unit(&mut self.rng) < p
    }
}

/// Exchange the installed rows with the old version's (two-phase), before and after a hop. On
/// the two fields alone, so that a hop keeps its packet borrowed across it.
#[cold]
#[inline(never)]
pub(super) fn swap_old_rows(routes: &mut Routes, faults: &mut Option<Box<Faults>>) {
    let c = faults.as_mut().and_then(|f| f.control.as_mut()).expect("controller mode");
    routes.swap_installed(c.old.as_mut().expect("old rows kept while old-tagged packets drain"));
}

fn describe(w: What) -> String {
    match w {
        What::Down => "down".into(),
        What::Up => "up".into(),
        What::Rate(r) => format!("degrade to {}", crate::units::Rate(r)),
        What::Restore => "rate restored".into(),
        What::Loss(x) => format!("loss {x}"),
    }
}

impl World {
    /// A scheduled change happens.
    #[cold]
    #[inline(never)]
    pub(super) fn on_link_change(&mut self, i: u32) {
        let now = self.now;
        let f = self.faults.as_mut().expect("changes only with failures");
        f.apply(&self.topo, i as usize, &mut self.ports, now);
        let c = &f.changes[i as usize];
        if matches!(c.what, What::Loss(_)) {
            return; // invisible to routing
        }
        if self.mcast.is_some() {
            let down = c.what == What::Down;
            self.mc_link_changed(down); // multicast detours from now on (`multicast.rs`)
        }
        let f = self.faults.as_mut().expect("changes only with failures");
        let c = &f.changes[i as usize];
        match f.spec.mode {
            ConvergenceMode::Ideal => self.on_advertise(i),
            ConvergenceMode::LinkState | ConvergenceMode::Controller => {
                let mut delay = f.spec.detection.unwrap().0;
                if c.what == What::Up {
                    delay += f.spec.hold_down.unwrap().0;
                }
                f.pending_adverts += 1;
                self.queue.schedule(now + delay, Event::Advertise { change: i });
            }
        }
    }

    /// The control plane learns of change `i`: a new routing version, installed switch by
    /// switch as the news floods out from the changed links.
    #[cold]
    #[inline(never)]
    pub(super) fn on_advertise(&mut self, i: u32) {
        let now = self.now;
        let f = self.faults.as_mut().expect("adverts only with failures");
        if f.spec.mode != ConvergenceMode::Ideal {
            f.pending_adverts -= 1;
        }
        f.advertise(i as usize);
        f.records[i as usize].advertised = Some(now);
        if self.mcast.is_some() {
            let install = if f.spec.mode == ConvergenceMode::Ideal { 0 } else { f.spec.install.map_or(0, |d| d.0) };
            self.mc_schedule_rebuild(install);
        }
        let f = self.faults.as_mut().expect("adverts only with failures");
        if let Some(c) = f.control.as_mut() {
            let steps = c.on_change(&self.topo, Arc::make_mut(&mut self.routes), &f.advertised, i as usize, now);
            let fabric = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now };
            self.fwd.on_routes_changed(&fabric);
            self.schedule_steps(steps);
            return;
        }
        let tables = Arc::make_mut(&mut self.routes).tables(&self.topo, &f.advertised);
        {
            let fabric = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now };
            self.fwd.on_routes_changed(&fabric);
        }
        let switches = self.topo.n_hosts as u32..self.topo.nodes.len() as u32;
        if f.spec.mode == ConvergenceMode::Ideal {
            for s in switches {
                Arc::make_mut(&mut self.routes).install(s, &tables);
            }
            f.records[i as usize].converged = Some(now);
            return;
        }
        // Hop distance of every switch from the changed links' switch ends, over the links up
        // now: how far the news floods.
        let mut ends: Vec<u32> = Vec::new();
        for &l in &f.changes[i as usize].links {
            for p in self.topo.links[l as usize] {
                let n = self.topo.ports[p as usize].from;
                let n = if self.topo.is_host(n) { self.topo.host_tor[n as usize] } else { n };
                if !ends.contains(&n) {
                    ends.push(n);
                }
            }
        }
        let adv = &f.advertised;
        let topo = &self.topo;
        let dist = switch_distances(topo, &ends, &|p| adv.port_up(topo, p));
        let (prop, install) = (f.spec.propagation.unwrap().0, f.spec.install.unwrap().0);
        let version = f.versions.len() as u32 + 1;
        let n = switches.len() as u32;
        f.versions.push(Some((tables, n, i as usize)));
        for s in switches {
            let hops = dist[s as usize];
            // A switch cut off from the news still recomputes from its own adjacencies.
            let hops = if hops == u32::MAX { 0 } else { hops as u64 };
            self.queue.schedule(now + prop * hops + install, Event::RouteInstall { switch: s, version });
        }
    }

    /// `switch` installs routing `version` (older versions arriving late are ignored).
    #[cold]
    #[inline(never)]
    pub(super) fn on_route_install(&mut self, switch: u32, version: u32) {
        let now = self.now;
        let f = self.faults.as_mut().expect("installs only with failures");
        if let Some(c) = f.control.as_mut() {
            let (converged, waiting) = c.run_step(version, Arc::make_mut(&mut self.routes), now);
            for change in converged {
                f.records[change].converged = Some(now);
            }
            // Per-flow: a check, and the removal once the old flows are over.
            let fresh = std::mem::take(&mut c.fresh);
            if waiting {
                let steps = c.plan_waiting(&self.topo, Arc::make_mut(&mut self.routes), &f.advertised, now);
                let fabric = Fabric { topo: &self.topo, routes: &self.routes, ports: &self.ports, now };
                self.fwd.on_routes_changed(&fabric);
                self.schedule_steps(steps);
            }
            self.schedule_steps(fresh);
            return;
        }
        let slot = &mut f.versions[version as usize - 1];
        let (tables, left, change) = slot.as_mut().expect("a version is kept until every switch installed it");
        if version > f.installed[switch as usize] {
            Arc::make_mut(&mut self.routes).install(switch, tables);
            f.installed[switch as usize] = version;
        }
        *left -= 1;
        if *left == 0 {
            let change = *change;
            *slot = None;
            f.records[change].converged = Some(now);
        }
    }
}

impl World {
    /// Schedule a controller's planned steps (`RouteInstall` carries the step's number).
    fn schedule_steps(&mut self, steps: Vec<(Time, u32)>) {
        for (at, step) in steps {
            self.queue.schedule(at, Event::RouteInstall { switch: u32::MAX, version: step });
        }
    }

    /// Controller mode: packet `h` is at switch `node`, about to be forwarded. Stamps it at its
    /// first switch (two-phase), follows which versions its hops agree with, and says whether it
    /// goes by the old version's rows (`Some(true)`), or was dropped because its version's rules
    /// are gone (`None`).
    #[cold]
    #[inline(never)]
    pub(super) fn control_hop(&mut self, node: u32, h: u32) -> Option<bool> {
        let pkt = self.pool.get_mut(h);
        let first = pkt.hops == 0;
        let dst_tor = self.topo.host_tor[pkt.dst as usize];
        let entry = if dst_tor == node {
            None // delivery down to the host: a rule no version changes
        } else if pkt.encap == 2 && self.topo.role(node) != Role::Core {
            Some(self.topo.tors.len()) // VL2, going up to an Intermediate
        } else {
            Some(self.topo.tor_index[dst_tor as usize] as usize)
        };
        let c = self.faults.as_mut().and_then(|f| f.control.as_mut()).expect("controller mode");
        match c.hop(node, entry, first, pkt, self.now) {
            Rows::Current => Some(false),
            Rows::Old => Some(true),
            Rows::Stale => {
                self.drop_packet(h, NO_LINK);
                None
            }
        }
    }

    /// The summary's `failures` section: what was lost and why, and when routing caught up
    /// with each change. `None` without failures.
    pub fn failure_summary(&self) -> Option<serde_json::Value> {
        use crate::units::seconds;
        let f = self.faults.as_ref()?;
        let timeline: Vec<serde_json::Value> = f
            .records
            .iter()
            .map(|r| {
                serde_json::json!({
                    "at_s": seconds(r.at),
                    "failure": r.source,
                    "what": r.what,
                    "links": r.links,
                    "advertised_s": r.advertised.map(seconds),
                    "converged_s": r.converged.map(seconds),
                })
            })
            .collect();
        let mut section = serde_json::json!({
            "lost_on_failed_links": self.ports.link_losses.iter().sum::<u64>(),
            "lost_to_link_loss": f.lost_to_loss,
            "unroutable": f.unroutable,
            "looped": f.looped,
            "sent_into_failed_links_after_convergence": f.into_failed_converged,
            "links_down_at_end": (0..self.topo.links.len()).filter(|&l| self.ports.is_down(self.topo.links[l][0])).count(),
            "timeline": timeline,
        });
        if let Some(c) = &f.control {
            let mut update = c.summary();
            update["black_holed"] = (f.into_failed + f.unroutable).into();
            update["looped"] = f.looped.into();
            section["update"] = update;
        }
        Some(section)
    }
}
