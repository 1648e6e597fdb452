//! A request/response key-value storage service on the fabric, with Pisces's four mechanisms
//! switchable (issue 37, item 3; Shue, Freedman and Shaikh, seed 004 lines 7396-8317; the
//! mechanisms' algorithms are `crate::pisces`). The simulator's side (flows, events) is
//! `sim/service.rs`; this module is the service's state: what a request asks, where it goes,
//! how a server queues and serves it, and what is measured.
//!
//! The model:
//! - **Servers** (`service.servers`) process one request at a time, each taking
//!   `1 / capacity` seconds: a finite request-processing capacity (Pisces's nodes are CPU
//!   bound on a fully cached data set, §4). Waiting requests sit in one FIFO queue, or with
//!   `fair_queuing` in per-tenant queues served by DWRR with tokens from the tenants' local
//!   weights ([`crate::pisces::fair_queue`], one token a request: request-rate fairness).
//! - **Keys**: every tenant has `objects` objects asked for by Zipf(`zipf`) popularity and
//!   hashed into `partitions` partitions ([`keys`]), each with `replication` copies on
//!   distinct servers of the tenant's group (`servers_per_tenant`), put there by round robin
//!   (`uniform`, blind to demand) or by Pisces's placement ([`crate::pisces::placement`]) of
//!   the fair-share demand.
//! - **Clients** (`service.clients`) are the request routers. A tenant keeps `concurrency`
//!   requests outstanding (closed loop; each one's slot issues the next the moment its
//!   response has arrived), or issues Poisson requests at `rate` (open loop), spread round
//!   robin over the clients. A request picks a key, its partition's replica by uniform choice
//!   or by Pisces's replica selection ([`crate::pisces::replica`], per tenant per client, from
//!   the latencies that client measured), and travels to that server as a flow of
//!   `request_size` bytes; once served, the object travels back as a flow of `object_size`.
//!   With `multiget` a read asks for several keys ([`multiget`]): one request to each server
//!   holding some of them, costing that server (and its FQ tokens) one service time a key,
//!   answered with the sum of their values; the read is done when its last answer is in.
//! - **Writes** (`write_fraction`, 0 by default: read-only): a write sets one key at its
//!   partition's primary (the first copy), carrying `request_size` + the value's bytes, costs
//!   the server `write_cost` reads of time and FQ tokens, and is acknowledged with
//!   `request_size` bytes; the primary then sends a copy to each other replica (asynchronous
//!   replication, as Membase's), which costs that server the same and is answered to no one.
//! - **Varying demand** ([`profile`]): a tenant's concurrency or rate may be bursty or
//!   diurnal in time (Pisces's Figure 5a).
//! - **Weight allocation** ([`crate::pisces::weights`]) every `wa_period` from `wa_start`:
//!   the controller reads each tenant's request arrivals at each server over the period (the
//!   demand `x_t,n`, requests/s) and makes reciprocal swaps of local shares (in requests/s;
//!   each tenant's global share `z_t` is its weight's fraction of its group's capacity) until
//!   none is above `wa_epsilon` of the receiving tenant's local share (no tenant-node can be
//!   helped), at most [`WA_SWAPS`] a period; the servers' fair
//!   queues take the new local weights at once.
//! - **Measured**: per tenant the requests completed in each `bin` (a time series), request
//!   latency (issue to the response's last byte), and over `[measure_from, end]` the
//!   throughput and the Min-Max Ratio of weight-normalised throughput, overall and per weight
//!   class (`metrics::tenants`).
//!
//! Ours where Pisces is silent: a deterministic service time; a request's cost of 1 token;
//! the FQ round of one token per tenant at the server; a tenant absent from a server (or whose
//! WA share there reached 0) weighted 10^-6 of the server's mean share there (FQ needs a
//! positive weight); the RS and WA parameters' defaults (`service/spec.rs`).

pub mod keys;
pub mod multiget;
pub mod profile;
pub mod spec;

use crate::error::Result;
use crate::metrics::percentile;
use crate::metrics::tenants::{mmr_by_weight, weighted_mmr};
use crate::pisces::fair_queue::FairQueue;
use crate::pisces::placement::{place, TenantDemand};
use crate::pisces::replica::{ReplicaSelector, WindowParams};
use crate::pisces::weights::WeightAllocation;
use crate::rng::{unit, Stream};
use crate::units::{seconds, Time, PS_PER_S};
use crate::workload::tenants::TenantSpec;
use keys::Keys;
use profile::{Profile, ProfileKind};
use serde_json::{json, Value};
use spec::{PlacementKind, SelectionKind, ServiceSpec};
use std::collections::VecDeque;

/// The most reciprocal swaps weight allocation makes in one period.
pub const WA_SWAPS: usize = 1000;

/// How often a closed-loop tenant's varying demand is read to top up its outstanding requests
/// (also read whenever one of its requests completes).
pub const DEMAND_TICK: Time = PS_PER_S / 100;

/// A read (or a write): issued by a client of a tenant, done when all its requests are
/// answered (one request without `multiget`, and always one for a write).
#[derive(Clone, Copy, Debug)]
struct Read {
    tenant: u32,
    client: u32,
    issued: Time,
    /// Requests not yet answered.
    pending: u32,
    write: bool,
}

/// What a request asks of its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Read `keys` keys; answered with their values.
    Read,
    /// Write one key at its partition's primary; answered with an acknowledgement, and copied
    /// to the partition's other replicas.
    Write,
    /// The primary's copy of a write to another replica: processed there, answered to no one.
    Replica,
}

/// One server's part of a read (its keys and the bytes of their values), or a write (its
/// value's bytes) or its copy to a replica.
#[derive(Clone, Copy, Debug)]
struct Request {
    read: u32,
    server: u32,
    keys: u32,
    bytes: u64,
    op: Op,
    /// The tenant's partition (used by a write, to find its replicas).
    partition: u32,
}

/// Writes (`service.write_fraction`): what they cost and what is measured of them. Built only
/// when some tenant writes, so a read-only service draws and counts nothing more.
struct Writes {
    /// Each tenant's fraction of requests that are writes.
    fraction: Vec<f64>,
    /// Picoseconds a server takes per write (or replica copy), and its FQ tokens.
    time: Time,
    cost: f64,
    /// Completed per tenant, and of those in the measured window.
    done: Vec<u64>,
    in_window: Vec<u64>,
    read_latencies: Vec<Vec<Time>>,
    write_latencies: Vec<Vec<Time>>,
    /// Copies sent to replicas, and refused by a full queue.
    copies: u64,
    copies_refused: u64,
}

/// What a finished flow of the service was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrived {
    /// Request `id` reached its server.
    Request(u32),
    /// The response to request `id` reached its client.
    Response(u32),
}

/// What became of a request that reached its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    /// The server was idle: it starts on the request now.
    Serve,
    /// It waits its turn.
    Waits,
    /// The server's queue was full (`service.queue_limit`).
    Refused,
}

/// A tenant's demand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Demand {
    Closed(u32),
    Open(f64),
}

enum Queue {
    Fifo(VecDeque<u32>),
    Fair(FairQueue<u32>),
}

struct Server {
    host: u32,
    queue: Queue,
    waiting: u32,
    busy: bool,
}

/// The service's state (module doc).
pub struct Service {
    pub names: Vec<String>,
    pub weights: Vec<f64>,
    pub demand: Vec<Demand>,
    /// Each tenant's varying demand (`service::profile`), `None` for a constant one.
    profiles: Vec<Option<Profile>>,
    /// Reads (and writes) each tenant has in flight.
    outstanding: Vec<u32>,
    /// The most an open-loop tenant may have in flight (`demand[i]` with both `rate` and
    /// `concurrency`; `u32::MAX`: no cap), and its arrivals not issued for that.
    open_cap: Vec<u32>,
    capped: Vec<u64>,
    /// Host of each client.
    pub clients: Vec<u32>,
    servers: Vec<Server>,
    /// Picoseconds a server takes per request.
    service_time: Time,
    capacity: f64,
    keys: Keys,
    /// `nodes_of[t][p]`: servers holding tenant t's partition p.
    nodes_of: Vec<Vec<Vec<usize>>>,
    /// `present[t][n]`.
    present: Vec<Vec<bool>>,
    /// Fair-share demand each server would carry under this placement, over its capacity.
    fair_utilisation: Vec<f64>,
    /// Local shares (requests/s) when weight allocation runs.
    wa: Option<WeightAllocation>,
    wa_swaps: u64,
    wa_periods: u64,
    /// Work (in reads) arriving per tenant per server since the last WA period.
    arrivals: Vec<Vec<f64>>,
    /// `routers[t * clients + c]` with replica selection.
    routers: Vec<ReplicaSelector>,
    rng: Stream,
    phase: u32,
    reads: Vec<Read>,
    requests: Vec<Request>,
    /// Keys per read and value sizes with `multiget`.
    fanout: Option<(multiget::Quantiles, multiget::Quantiles)>,
    /// `of_flow[flow]`: request id << 1 | 1 for a response; `u32::MAX` for other flows.
    of_flow: Vec<u32>,
    /// `FlowSpec::service` of each tenant's flows.
    pub part_of_tenant: Vec<u32>,
    next_client: Vec<u32>,
    request_bytes: u64,
    object_bytes: u64,
    pub request_size: u64,
    bin: Time,
    measure_from: Time,
    issued: Vec<u64>,
    refused: Vec<u64>,
    completed: Vec<u64>,
    keys_done: Vec<u64>,
    bins: Vec<Vec<u32>>,
    latencies: Vec<Vec<Time>>,
    writes: Option<Box<Writes>>,
    spec: ServiceSpec,
}

impl Service {
    /// Build the service for `spec` on a fabric of `n_hosts` hosts (validated by the scenario).
    pub fn new(spec: &ServiceSpec, tenants: &[TenantSpec], n_hosts: u32, end: Time, rng: Stream, seed: u64) -> Result<Service> {
        let server_hosts = spec::hosts(&spec.servers, n_hosts, "service.servers")?;
        let clients = spec::hosts(&spec.clients, n_hosts, "service.clients")?;
        let n = server_hosts.len();
        let t_count = tenants.len();
        let weights: Vec<f64> = tenants.iter().map(|t| t.weight as f64).collect();
        let keys = Keys::new(spec.objects, spec.zipf, spec.partitions, seed);
        let group = spec.servers_per_tenant.unwrap_or(n as u32) as usize;
        let groups = n / group;
        let group_of = |t: usize| t % groups;
        let r = spec.replication as usize;
        let shares: Vec<Vec<f64>> = (0..t_count).map(|t| keys.partition_shares(t)).collect();
        let mut nodes_of: Vec<Vec<Vec<usize>>> = vec![Vec::new(); t_count];
        let mut fair_load = vec![0.0; n];
        for g in 0..groups {
            let members: Vec<usize> = (0..t_count).filter(|&t| group_of(t) == g).collect();
            if members.is_empty() {
                continue;
            }
            let first = g * group;
            let total_w: f64 = members.iter().map(|&t| weights[t]).sum();
            match spec.placement {
                PlacementKind::Uniform => {
                    for &t in &members {
                        nodes_of[t] = (0..spec.partitions as usize).map(|p| (0..r).map(|i| first + (p + t + i) % group).collect()).collect();
                    }
                }
                PlacementKind::Pisces => {
                    let demands: Vec<TenantDemand> =
                        members.iter().map(|&t| TenantDemand { weight: weights[t], partition_shares: shares[t].clone() }).collect();
                    let placed = place(&demands, &vec![spec.capacity; group], r)?;
                    for (k, &t) in members.iter().enumerate() {
                        nodes_of[t] = placed.nodes_of[k].iter().map(|ns| ns.iter().map(|&i| first + i).collect()).collect();
                    }
                }
            }
            // The fair-share demand each replica carries (as placement counts it), either way.
            for &t in &members {
                let z = weights[t] / total_w * spec.capacity * group as f64;
                for (p, ns) in nodes_of[t].iter().enumerate() {
                    for &s in ns {
                        fair_load[s] += z * shares[t][p] / r as f64;
                    }
                }
            }
        }
        let present: Vec<Vec<bool>> = (0..t_count)
            .map(|t| {
                let mut on = vec![false; n];
                for &s in nodes_of[t].iter().flatten() {
                    on[s] = true;
                }
                on
            })
            .collect();
        let global: Vec<f64> = (0..t_count)
            .map(|t| {
                let members_w: f64 = (0..t_count).filter(|&u| group_of(u) == group_of(t)).map(|u| weights[u]).sum();
                weights[t] / members_w * spec.capacity * group as f64
            })
            .collect();
        let wa = WeightAllocation::even(present.clone(), &global, spec.wa_epsilon)?;
        let mut demand: Vec<Demand> = vec![Demand::Closed(spec.concurrency); t_count];
        let mut profiles: Vec<Option<Profile>> = vec![None; t_count];
        let mut open_cap: Vec<u32> = vec![u32::MAX; t_count];
        for d in &spec.demand {
            let t = tenants.iter().position(|x| x.name == d.tenant).expect("validated");
            demand[t] = match (d.concurrency, d.rate) {
                (_, Some(r)) => Demand::Open(r),
                (Some(c), None) => Demand::Closed(c),
                _ => unreachable!("validated"),
            };
            if let (Some(c), Some(_)) = (d.concurrency, d.rate) {
                open_cap[t] = c;
            }
            if d.profile != ProfileKind::Constant {
                let peak = match demand[t] {
                    Demand::Closed(c) => c as f64,
                    Demand::Open(r) => r,
                };
                let peaks = d.peaks.iter().map(|(a, b)| (a.0, b.0)).collect();
                profiles[t] = Some(Profile { kind: d.profile, peak, low: d.low.unwrap_or(0.0), peaks });
            }
        }
        let routers = if spec.replica_selection == SelectionKind::Pisces {
            let params = WindowParams { step: spec.rs_step, queued: spec.rs_queued, ewma: spec.rs_ewma, initial_window: 1.0 };
            (0..t_count * clients.len()).map(|_| ReplicaSelector::new(n, params)).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let bins = (end / spec.bin.0 + 1) as usize;
        let mut s = Service {
            names: tenants.iter().map(|t| t.name.clone()).collect(),
            weights,
            demand,
            profiles,
            open_cap,
            capped: vec![0; t_count],
            outstanding: vec![0; t_count],
            clients,
            servers: server_hosts.iter().map(|&host| Server { host, queue: Queue::Fifo(VecDeque::new()), waiting: 0, busy: false }).collect(),
            service_time: ((PS_PER_S as f64 / spec.capacity).round() as Time).max(1),
            capacity: spec.capacity,
            keys,
            nodes_of,
            present,
            fair_utilisation: fair_load.iter().map(|l| l / spec.capacity).collect(),
            wa: Some(wa),
            wa_swaps: 0,
            wa_periods: 0,
            arrivals: vec![vec![0.0; n]; t_count],
            routers,
            rng,
            phase: 0,
            reads: Vec::new(),
            requests: Vec::new(),
            fanout: spec.multiget.then(|| (multiget::Quantiles::keys_per_read(), multiget::Quantiles::value_bytes())),
            of_flow: Vec::new(),
            part_of_tenant: Vec::new(),
            next_client: vec![0; t_count],
            request_bytes: spec.request_size.0,
            object_bytes: spec.object_size.0,
            request_size: spec.request_size.0,
            bin: spec.bin.0,
            measure_from: spec.measure_from.map_or(0, |d| d.0),
            issued: vec![0; t_count],
            refused: vec![0; t_count],
            completed: vec![0; t_count],
            keys_done: vec![0; t_count],
            bins: vec![vec![0; bins]; t_count],
            latencies: vec![Vec::new(); t_count],
            writes: spec.writes().then(|| {
                let mut fraction = vec![spec.write_fraction; t_count];
                for d in &spec.demand {
                    if let Some(w) = d.write_fraction {
                        fraction[tenants.iter().position(|x| x.name == d.tenant).expect("validated")] = w;
                    }
                }
                Box::new(Writes {
                    fraction,
                    time: ((PS_PER_S as f64 * spec.write_cost / spec.capacity).round() as Time).max(1),
                    cost: spec.write_cost,
                    done: vec![0; t_count],
                    in_window: vec![0; t_count],
                    read_latencies: vec![Vec::new(); t_count],
                    write_latencies: vec![Vec::new(); t_count],
                    copies: 0,
                    copies_refused: 0,
                })
            }),
            spec: spec.clone(),
        };
        if spec.fair_queuing {
            for k in 0..n {
                let w = s.local_weights(k);
                s.servers[k].queue = Queue::Fair(FairQueue::new(&w, t_count as f64)?);
            }
        }
        Ok(s)
    }

    /// Every tenant's local weight at server `n` (FQ's): its share over the server's total, a
    /// tenant without a share there floored (module doc).
    fn local_weights(&self, n: usize) -> Vec<f64> {
        let wa = self.wa.as_ref().expect("shares are always kept");
        let t_count = self.names.len();
        let raw: Vec<f64> = (0..t_count).map(|t| wa.local_weight(t, n)).collect();
        let floor = 1e-6 / t_count as f64;
        raw.iter().map(|&w| w.max(floor)).collect()
    }

    /// The `[service]` table this was built from.
    pub fn spec(&self) -> &ServiceSpec {
        &self.spec
    }

    /// The server request `id` went to.
    pub fn server_of(&self, id: u32) -> u32 {
        self.requests[id as usize].server
    }

    pub fn tenants(&self) -> usize {
        self.names.len()
    }

    /// Tenant `t`'s next client for an open-loop request (round robin).
    pub fn next_client(&mut self, t: usize) -> u32 {
        let c = self.next_client[t];
        self.next_client[t] = (c + 1) % self.clients.len() as u32;
        c
    }

    /// Whether any tenant's demand varies in time.
    pub fn varying(&self) -> bool {
        self.profiles.iter().any(Option::is_some)
    }

    /// Whether tenant `t`'s demand varies in time.
    pub fn varies(&self, t: usize) -> bool {
        self.profiles[t].is_some()
    }

    /// How many more reads closed-loop tenant `t` should issue now to reach its level: its
    /// varying demand rounded, less what it has in flight (0 for a constant demand).
    pub fn shortfall(&self, t: usize, now: Time) -> u32 {
        match &self.profiles[t] {
            Some(p) => (p.level(now).round() as u32).saturating_sub(self.outstanding[t]),
            None => 0,
        }
    }

    /// Whether open-loop tenant `t`'s request due now is issued: with a varying demand, drawn
    /// at its peak rate and kept with probability level / peak (thinning, which makes the kept
    /// ones a Poisson process of the level's rate); always without.
    pub fn keep_arrival(&mut self, t: usize, now: Time) -> bool {
        let Some(p) = &self.profiles[t] else { return true };
        let keep = p.level(now) / p.peak;
        unit(&mut self.rng) < keep
    }

    /// Whether open-loop tenant `t` is at its cap of outstanding requests (its arrival now is
    /// not issued, and counted).
    pub fn at_cap(&mut self, t: usize) -> bool {
        let full = self.outstanding[t] >= self.open_cap[t];
        self.capped[t] += full as u64;
        full
    }

    /// Picoseconds to tenant `t`'s next open-loop request (exponential at its rate).
    pub fn next_gap(&mut self, t: usize) -> Option<Time> {
        let Demand::Open(rate) = self.demand[t] else { return None };
        let u = unit(&mut self.rng);
        Some(((-(1.0 - u).ln() / rate) * PS_PER_S as f64).round().max(1.0) as Time)
    }

    /// A new read (or write) of tenant `t` from client `c` at `now`: its requests, one per
    /// server it asks, each with the hosts and bytes of its request flow.
    pub fn issue(&mut self, t: usize, c: u32, now: Time) -> Vec<(u32, u32, u32, u64)> {
        if let Some(w) = &self.writes {
            if w.fraction[t] > 0.0 && unit(&mut self.rng) < w.fraction[t] {
                return vec![self.issue_write(t, c, now)];
            }
        }
        let keys = self.fanout.as_ref().map_or(1, |(k, _)| k.draw(&mut self.rng));
        let read = self.reads.len() as u32;
        let mut parts: Vec<Request> = Vec::new();
        for _ in 0..keys {
            let rank = self.keys.draw(&mut self.rng);
            let p = self.keys.partition(t, self.phase, rank);
            let replicas = &self.nodes_of[t][p];
            let i = if replicas.len() == 1 {
                0
            } else if self.routers.is_empty() {
                crate::rng::below(&mut self.rng, replicas.len() as u64) as usize
            } else {
                let u = unit(&mut self.rng);
                let router = &self.routers[t * self.clients.len() + c as usize];
                router.choose_by_rate(replicas, u).expect("replicas are servers of the router")
            };
            let server = replicas[i] as u32;
            let bytes = match &self.fanout {
                Some((_, values)) => values.draw(&mut self.rng),
                None => self.object_bytes,
            };
            match parts.iter_mut().find(|r| r.server == server) {
                Some(r) => {
                    r.keys += 1;
                    r.bytes += bytes;
                }
                None => parts.push(Request { read, server, keys: 1, bytes, op: Op::Read, partition: p as u32 }),
            }
        }
        self.reads.push(Read { tenant: t as u32, client: c, issued: now, pending: parts.len() as u32, write: false });
        self.issued[t] += 1;
        self.outstanding[t] += 1;
        let client = self.clients[c as usize];
        parts
            .into_iter()
            .map(|r| {
                let id = self.requests.len() as u32;
                self.requests.push(r);
                (id, client, self.servers[r.server as usize].host, self.request_bytes)
            })
            .collect()
    }

    /// A write of one key by tenant `t` from client `c`: to its partition's primary (its first
    /// copy; replica selection balances reads only), carrying the value; the answer is an
    /// acknowledgement of `request_size` bytes.
    fn issue_write(&mut self, t: usize, c: u32, now: Time) -> (u32, u32, u32, u64) {
        let rank = self.keys.draw(&mut self.rng);
        let p = self.keys.partition(t, self.phase, rank);
        let server = self.nodes_of[t][p][0] as u32;
        let value = match &self.fanout {
            Some((_, values)) => values.draw(&mut self.rng),
            None => self.object_bytes,
        };
        let read = self.reads.len() as u32;
        self.reads.push(Read { tenant: t as u32, client: c, issued: now, pending: 1, write: true });
        self.issued[t] += 1;
        self.outstanding[t] += 1;
        let id = self.requests.len() as u32;
        self.requests.push(Request { read, server, keys: 1, bytes: value, op: Op::Write, partition: p as u32 });
        (id, self.clients[c as usize], self.servers[server as usize].host, self.request_bytes + value)
    }

    /// The copies of write `id` that its primary sends, once it has processed it, to the
    /// partition's other replicas: each a request with the hosts and bytes of its flow.
    pub fn replicate(&mut self, id: u32) -> Vec<(u32, u32, u32, u64)> {
        let w = self.requests[id as usize];
        if w.op != Op::Write {
            return Vec::new();
        }
        let t = self.reads[w.read as usize].tenant as usize;
        let from = self.servers[w.server as usize].host;
        let replicas: Vec<usize> = self.nodes_of[t][w.partition as usize][1..].to_vec();
        self.writes.as_mut().expect("a write exists only with writes").copies += replicas.len() as u64;
        replicas
            .into_iter()
            .map(|s| {
                let copy = self.requests.len() as u32;
                self.requests.push(Request { server: s as u32, op: Op::Replica, ..w });
                (copy, from, self.servers[s].host, self.request_bytes + w.bytes)
            })
            .collect()
    }

    /// Whether request `id` is a replica's copy of a write (which has no response).
    pub fn is_copy(&self, id: u32) -> bool {
        self.requests[id as usize].op == Op::Replica
    }

    /// Flow `flow` carries request `id` (`response`: its answer).
    pub fn bind(&mut self, flow: u32, id: u32, response: bool) {
        let f = flow as usize;
        if self.of_flow.len() <= f {
            self.of_flow.resize(f + 1, u32::MAX);
        }
        self.of_flow[f] = id << 1 | response as u32;
    }

    /// What flow `flow` was, if one of the service's.
    pub fn arrived(&self, flow: u32) -> Option<Arrived> {
        let &v = self.of_flow.get(flow as usize)?;
        (v != u32::MAX).then_some(if v & 1 == 1 { Arrived::Response(v >> 1) } else { Arrived::Request(v >> 1) })
    }

    /// Request `id` reached its server: queued (and whether the idle server starts on it), or
    /// refused when the queue is full.
    pub fn enqueue(&mut self, id: u32) -> Queued {
        let r = self.requests[id as usize];
        let t = self.reads[r.read as usize].tenant as usize;
        let limit = self.spec.queue_limit;
        let s = &mut self.servers[r.server as usize];
        if s.waiting >= limit {
            match &mut self.writes {
                Some(w) if r.op == Op::Replica => w.copies_refused += 1,
                _ => self.refused[t] += 1,
            }
            return Queued::Refused;
        }
        let cost = match (&self.writes, r.op) {
            (Some(w), Op::Write | Op::Replica) => w.cost,
            _ => r.keys as f64,
        };
        self.arrivals[t][r.server as usize] += cost;
        match &mut s.queue {
            Queue::Fifo(q) => q.push_back(id),
            Queue::Fair(fq) => fq.push(t, cost, id).expect("a known tenant, a positive cost"),
        }
        s.waiting += 1;
        if s.busy {
            Queued::Waits
        } else {
            Queued::Serve
        }
    }

    /// Server `k` takes its next request, if any: the request, and when it is done.
    pub fn start_next(&mut self, k: u32, now: Time) -> Option<(u32, Time)> {
        let s = &mut self.servers[k as usize];
        let id = match &mut s.queue {
            Queue::Fifo(q) => q.pop_front(),
            Queue::Fair(fq) => fq.next().map(|x| x.request),
        };
        s.busy = id.is_some();
        let id = id?;
        s.waiting -= 1;
        let r = &self.requests[id as usize];
        let work = match (&self.writes, r.op) {
            (Some(w), Op::Write | Op::Replica) => w.time,
            _ => self.service_time * r.keys as Time,
        };
        Some((id, now + work))
    }

    /// The hosts and bytes of request `id`'s response flow: a read's values, or a write's
    /// acknowledgement (`request_size`).
    pub fn response(&self, id: u32) -> (u32, u32, u64) {
        let r = self.requests[id as usize];
        let read = self.reads[r.read as usize];
        let bytes = if r.op == Op::Write { self.request_bytes } else { r.bytes };
        (self.servers[r.server as usize].host, self.clients[read.client as usize], bytes)
    }

    /// Request `id`'s tenant and client.
    pub fn owner(&self, id: u32) -> (usize, u32) {
        let read = self.reads[self.requests[id as usize].read as usize];
        (read.tenant as usize, read.client)
    }

    /// Request `id` was refused: its read is over (true) once none of its requests is pending
    /// (a replica's copy is no one's request: false).
    pub fn refuse(&mut self, id: u32) -> bool {
        if self.is_copy(id) {
            return false;
        }
        let read = &mut self.reads[self.requests[id as usize].read as usize];
        read.pending -= 1;
        let over = read.pending == 0;
        if over {
            self.outstanding[read.tenant as usize] -= 1;
        }
        over
    }

    /// The response to request `id` arrived at `now`: count its keys, and its read once the
    /// read's last response is in (true).
    pub fn complete(&mut self, id: u32, now: Time) -> bool {
        let r = self.requests[id as usize];
        let read = &mut self.reads[r.read as usize];
        let t = read.tenant as usize;
        let latency = now - read.issued;
        read.pending -= 1;
        let done = read.pending == 0;
        let client = read.client as usize;
        let write = read.write;
        self.keys_done[t] += r.keys as u64;
        if let Some(b) = self.bins[t].get_mut((now / self.bin) as usize) {
            *b += r.keys;
        }
        if done {
            self.completed[t] += 1;
            self.outstanding[t] -= 1;
            if now >= self.measure_from {
                self.latencies[t].push(latency);
            }
            if let Some(w) = &mut self.writes {
                let measured = now >= self.measure_from;
                if write {
                    w.done[t] += 1;
                    w.in_window[t] += measured as u64;
                }
                if measured {
                    let kind = if write { &mut w.write_latencies[t] } else { &mut w.read_latencies[t] };
                    kind.push(latency);
                }
            }
        }
        if write {
            return done; // replica selection learns from reads, which it balances
        }
        if !self.routers.is_empty() {
            let k = t * self.clients.len() + client;
            self.routers[k].observe(r.server as usize, seconds(latency).max(1e-12)).expect("a positive latency at a known server");
        }
        done
    }

    /// Replica selection's periodic window update at every router.
    pub fn update_windows(&mut self) {
        for r in &mut self.routers {
            r.update();
        }
    }

    /// One weight-allocation period of `period` ps: swaps on the measured demand, then the
    /// servers' fair queues take the new local weights.
    pub fn allocate(&mut self, period: Time) {
        let per_s = 1.0 / seconds(period);
        let demand: Vec<Vec<f64>> = self.arrivals.iter().map(|row| row.iter().map(|&a| a * per_s).collect()).collect();
        for row in &mut self.arrivals {
            row.fill(0.0);
        }
        self.wa_periods += 1;
        let wa = self.wa.as_mut().expect("shares are always kept");
        for _ in 0..WA_SWAPS {
            match wa.step(&demand).expect("one demand per tenant per server") {
                Some(_) => self.wa_swaps += 1,
                None => break,
            }
        }
        for k in 0..self.servers.len() {
            let w = self.local_weights(k);
            if let Queue::Fair(fq) = &mut self.servers[k].queue {
                for (t, &x) in w.iter().enumerate() {
                    fq.set_weight(t, x).expect("a positive weight for a known tenant");
                }
            }
        }
    }

    /// Forget the arrivals counted so far (WA's first period starts clean).
    pub fn reset_arrivals(&mut self) {
        for row in &mut self.arrivals {
            row.fill(0.0);
        }
    }

    /// A demand shift: every tenant's ranks move to the other hash.
    pub fn shift(&mut self) {
        self.phase += 1;
    }

    /// Tenant `t`'s demand as the summary shows it: its concurrency or rate, and with a varying
    /// demand its profile, level outside the peaks, and peak intervals.
    fn demand_summary(&self, t: usize) -> Value {
        let mut d = match self.demand[t] {
            Demand::Closed(c) => json!({"concurrency": c}),
            Demand::Open(r) if self.open_cap[t] < u32::MAX => json!({"rate": r, "concurrency": self.open_cap[t], "capped": self.capped[t]}),
            Demand::Open(r) => json!({"rate": r}),
        };
        if let Some(p) = &self.profiles[t] {
            let d = d.as_object_mut().expect("an object");
            d.insert("profile".into(), json!(p.kind));
            d.insert("low".into(), json!(p.low));
            d.insert("peaks_s".into(), json!(p.peaks.iter().map(|&(a, b)| [seconds(a), seconds(b)]).collect::<Vec<_>>()));
        }
        d
    }

    /// The summary's `service` section, at the run's end `now`.
    pub fn summary(&self, now: Time) -> Value {
        let span = seconds(now.saturating_sub(self.measure_from));
        let t_count = self.names.len();
        let from_bin = (self.measure_from / self.bin) as usize;
        let last_bin = (now.div_ceil(self.bin) as usize).min(self.bins.first().map_or(0, Vec::len));
        // Completions in the window: whole bins from `measure_from` (which should be on a bin
        // boundary for an exact count; the docs say so).
        let counted: Vec<u64> = (0..t_count).map(|t| self.bins[t][from_bin.min(last_bin)..last_bin].iter().map(|&c| c as u64).sum()).collect();
        let throughput: Vec<f64> = counted.iter().map(|&c| if span > 0.0 { c as f64 / span } else { 0.0 }).collect();
        let mut all: Vec<Time> = Vec::new();
        let rows: Vec<Value> = (0..t_count)
            .map(|t| {
                let mut l = self.latencies[t].clone();
                l.sort_unstable();
                all.extend_from_slice(&l);
                let p = |q: f64| percentile(&l, q).map(seconds);
                let mut row = json!({
                    "name": self.names[t],
                    "weight": self.weights[t],
                    "demand": self.demand_summary(t),
                    "servers": self.present[t].iter().filter(|&&b| b).count(),
                    "issued": self.issued[t],
                    "completed": self.completed[t],
                    "keys": self.keys_done[t],
                    "refused": self.refused[t],
                    "throughput_rps": throughput[t],
                    "normalised_rps": throughput[t] / self.weights[t],
                    "latency_mean_s": (!l.is_empty()).then(|| l.iter().map(|&x| seconds(x)).sum::<f64>() / l.len() as f64),
                    "latency_p50_s": p(50.0),
                    "latency_p99_s": p(99.0),
                    "latency_p999_s": p(99.9),
                });
                if let Some(w) = &self.writes {
                    let writes = if span > 0.0 { w.in_window[t] as f64 / span } else { 0.0 };
                    let row = row.as_object_mut().expect("an object");
                    row.insert("write_fraction".into(), json!(w.fraction[t]));
                    row.insert("writes".into(), json!(w.done[t]));
                    row.insert("reads".into(), json!(self.completed[t] - w.done[t]));
                    row.insert("write_throughput_rps".into(), json!(writes));
                    row.insert("read_throughput_rps".into(), json!(throughput[t] - writes));
                    for (kind, lat) in [("read", &w.read_latencies[t]), ("write", &w.write_latencies[t])] {
                        let mut l = lat.clone();
                        l.sort_unstable();
                        let p = |q: f64| percentile(&l, q).map(seconds);
                        let mean = (!l.is_empty()).then(|| l.iter().map(|&x| seconds(x)).sum::<f64>() / l.len() as f64);
                        row.insert(format!("{kind}_latency_mean_s"), json!(mean));
                        row.insert(format!("{kind}_latency_p50_s"), json!(p(50.0)));
                        row.insert(format!("{kind}_latency_p99_s"), json!(p(99.0)));
                    }
                }
                row
            })
            .collect();
        all.sort_unstable();
        let classes = mmr_by_weight(&throughput, &self.weights);
        // Between classes: each class's mean throughput per unit of weight.
        let class_means: Vec<f64> = classes
            .iter()
            .map(|&(w, count, _)| throughput.iter().zip(&self.weights).filter(|&(_, &v)| v == w).map(|(x, _)| x).sum::<f64>() / count as f64 / w)
            .collect();
        let series_mmr: Vec<Option<f64>> = (0..last_bin)
            .map(|b| {
                let x: Vec<f64> = (0..t_count).map(|t| self.bins[t][b] as f64).collect();
                weighted_mmr(&x, &self.weights)
            })
            .collect();
        // Bins wholly inside the measured window.
        let whole_bins = (now / self.bin) as usize;
        let bins_min = series_mmr.get(from_bin.min(whole_bins)..whole_bins).and_then(|w| w.iter().flatten().copied().reduce(f64::min));
        let within_min = classes.iter().filter(|c| c.1 >= 2).filter_map(|c| c.2).reduce(f64::min);
        let total: f64 = throughput.iter().sum();
        let util_max = self.fair_utilisation.iter().copied().fold(0.0, f64::max);
        let mut out = json!({
            "servers": self.servers.len(),
            "clients": self.clients.len(),
            "capacity_rps": self.capacity,
            "fair_queuing": self.spec.fair_queuing,
            "placement": self.spec.placement,
            "weight_allocation": self.spec.weight_allocation,
            "replica_selection": self.spec.replica_selection,
            "fair_share_utilisation_max": util_max,
            "placement_feasible": util_max <= 1.0 + 1e-9,
            "measure_from_s": seconds(self.measure_from),
            "measured_s": span,
            "issued": self.issued.iter().sum::<u64>(),
            "completed": self.completed.iter().sum::<u64>(),
            "refused": self.refused.iter().sum::<u64>(),
            "throughput_rps": total,
            "utilisation": total / (self.capacity * self.servers.len() as f64),
            "mmr": weighted_mmr(&throughput, &self.weights),
            "mmr_by_weight": classes.iter().map(|&(w, c, m)| json!({"weight": w, "tenants": c, "mmr": m})).collect::<Vec<_>>(),
            "mmr_between_classes": crate::metrics::tenants::mmr(&class_means),
            "mmr_within_classes_min": within_min,
            "mmr_bins_min": bins_min,
            "latency_p50_s": percentile(&all, 50.0).map(seconds),
            "latency_p99_s": percentile(&all, 99.0).map(seconds),
            "latency_p999_s": percentile(&all, 99.9).map(seconds),
            "wa_periods": self.wa_periods,
            "wa_swaps": self.wa_swaps,
            "tenants": rows,
            "timeseries": {
                "bin_s": seconds(self.bin),
                "rps": (0..t_count).map(|t| self.bins[t][..last_bin].iter().map(|&c| c as f64 / seconds(self.bin)).collect::<Vec<f64>>()).collect::<Vec<_>>(),
                "mmr": series_mmr,
            },
        });
        if let Some(w) = &self.writes {
            let o = out.as_object_mut().expect("an object");
            o.insert("write_cost".into(), json!(w.cost));
            o.insert("writes".into(), json!(w.done.iter().sum::<u64>()));
            o.insert("write_throughput_rps".into(), json!(if span > 0.0 { w.in_window.iter().sum::<u64>() as f64 / span } else { 0.0 }));
            o.insert("replica_copies".into(), json!(w.copies));
            o.insert("replica_copies_refused".into(), json!(w.copies_refused));
        }
        out
    }
}
