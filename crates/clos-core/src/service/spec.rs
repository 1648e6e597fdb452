//! The `[service]` table: a request/response storage service's servers, clients, keys and
//! Pisces's four switchable mechanisms (docs/tenants.md, "Storage service"). Errors name the
//! dotted field (`service.capacity`) and the fix.

use super::profile::{self, ProfileKind};
use crate::error::{bad, Result};
use crate::units::{ByteSize, Duration, PS_PER_S};
use crate::workload::hosts::HostSet;
use crate::workload::tenants::TenantSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How partition replicas are put on servers (`service.placement`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlacementKind {
    /// Round robin by partition number, blind to demand (unmodified Membase's vbucket map).
    #[default]
    Uniform,
    /// Pisces's partition placement (`pisces::placement`): largest fair-share demand first,
    /// each replica to the least utilised server.
    Pisces,
}

/// How a request router picks among a partition's replicas (`service.replica_selection`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SelectionKind {
    /// Uniformly at random.
    #[default]
    Random,
    /// Pisces's replica selection (`pisces::replica`): in proportion to per-server windows
    /// moved FAST-TCP style from the latencies the router measures.
    Pisces,
}

/// One tenant's demand on the service (`service.demand[i]`), replacing the defaults for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DemandSpec {
    /// The tenant (a name from `[[tenants]]`).
    pub tenant: String,
    /// Closed loop: requests the tenant keeps outstanding, spread over the clients. With
    /// `rate`: the most it has outstanding (an arrival beyond them is not issued).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Open loop: Poisson requests per second, spread over the clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The fraction of this tenant's requests that are writes, replacing
    /// `service.write_fraction` for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_fraction: Option<f64>,
    /// How the demand varies in time (`service::profile`): `"constant"` (default), `"bursty"`
    /// (the demand inside `peaks`, `low` outside) or `"diurnal"` (a raised-cosine hump over each
    /// of `peaks`). The demand's `concurrency` or `rate` is then its peak.
    #[serde(default, skip_serializing_if = "is_constant")]
    pub profile: ProfileKind,
    /// A varying demand's peak intervals, `[from, to]` each, in time order and disjoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peaks: Vec<(Duration, Duration)>,
    /// A varying demand's level outside its peaks (default 0), in its demand's unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
}

fn is_constant(k: &ProfileKind) -> bool {
    *k == ProfileKind::Constant
}

/// A key-value storage service whose requests and responses are flows through the fabric
/// (`crate::service`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// The storage servers: a number (the first n) or a list of hosts and ranges.
    pub servers: HostSet,
    /// The client hosts (request routers): a number or a list; none may be a server.
    pub clients: HostSet,
    /// Requests per second each server processes (one at a time, each taking 1 / capacity).
    pub capacity: f64,
    /// Partitions of each tenant's key space (default 32).
    #[serde(default = "d_partitions")]
    pub partitions: u32,
    /// Copies of each partition, on distinct servers (default 2).
    #[serde(default = "d_replication")]
    pub replication: u32,
    /// Each tenant's servers: its partitions live on this many of them (default: all). Must
    /// divide the server count; tenant t uses group t mod (servers / servers_per_tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_per_tenant: Option<u32>,
    /// Objects per tenant (default 100,000, YCSB's and Pisces's).
    #[serde(default = "d_objects")]
    pub objects: u32,
    /// Bytes of a response: one object (default 1 KB).
    #[serde(default = "d_object_size")]
    pub object_size: ByteSize,
    /// Bytes of a request (default 100 B).
    #[serde(default = "d_request_size")]
    pub request_size: ByteSize,
    /// Zipf exponent of key popularity (default 0.99, YCSB's).
    #[serde(default = "d_zipf")]
    pub zipf: f64,
    /// The fraction of every tenant's requests that are writes (default 0: read-only, as YCSB's
    /// workload C and Pisces's evaluation); `demand[i].write_fraction` overrides it per tenant.
    /// A write goes to its partition's first copy (the primary), which answers the client and
    /// copies the object to the other replicas (`crate::service`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub write_fraction: f64,
    /// What a write (and each replica's copy of it) costs a server, in reads: its processing
    /// time is `write_cost / capacity` and its fair-queuing tokens `write_cost` (default 1).
    #[serde(default = "d_write_cost", skip_serializing_if = "is_one")]
    pub write_cost: f64,
    /// Closed loop: requests each tenant keeps outstanding (default 16), unless `demand` says.
    #[serde(default = "d_concurrency")]
    pub concurrency: u32,
    /// Per-tenant demand replacing `concurrency` (a concurrency, or an open-loop `rate`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub demand: Vec<DemandSpec>,
    /// When clients start issuing (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    /// Times at which every tenant's key popularity moves to a different, equally skewed
    /// ranking (and back at the next): Pisces's demand-distribution shift (§4.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shift: Vec<Duration>,
    /// Multiget reads: a read asks for several keys (TAO's mix: 1/16/128 at p50/p90/p99) with
    /// values of 16 B/32 B/4 KB (p50/p90/p99), one request to each server holding some; `false`:
    /// one key of `object_size` a read.
    #[serde(default)]
    pub multiget: bool,
    /// Most requests a server holds waiting; one more is refused and counted (default 100,000).
    #[serde(default = "d_queue_limit")]
    pub queue_limit: u32,
    /// FQ: per-tenant queues at each server served by DWRR with tokens from local weights
    /// (`pisces::fair_queue`); false: one FIFO queue.
    #[serde(default)]
    pub fair_queuing: bool,
    /// PP: `"uniform"` (default) or `"pisces"`.
    #[serde(default)]
    pub placement: PlacementKind,
    /// WA: periodic reciprocal swaps of local shares (`pisces::weights`).
    #[serde(default)]
    pub weight_allocation: bool,
    /// WA's period (default 2 s, Pisces's: 5 iterations in 10 s).
    #[serde(default = "d_wa_period")]
    pub wa_period: Duration,
    /// When WA's first period starts (default 0; Pisces switched it on at 45 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wa_start: Option<Duration>,
    /// WA's swap threshold epsilon as a fraction of the receiving tenant's local share at the
    /// server (default 0.005).
    #[serde(default = "d_wa_epsilon")]
    pub wa_epsilon: f64,
    /// RS: `"random"` (default) or `"pisces"`.
    #[serde(default)]
    pub replica_selection: SelectionKind,
    /// How often each router updates its windows (default 20 ms; FAST: once a round trip).
    #[serde(default = "d_rs_interval")]
    pub rs_interval: Duration,
    /// RS's step (the seed's alpha, FAST's gamma; default 0.5).
    #[serde(default = "d_rs_step")]
    pub rs_step: f64,
    /// RS's target of requests queued per server (FAST's alpha; default 2).
    #[serde(default = "d_rs_queued")]
    pub rs_queued: f64,
    /// Gain of the routers' latency EWMA (default 0.1).
    #[serde(default = "d_rs_ewma")]
    pub rs_ewma: f64,
    /// Width of the throughput time series' bins (default 1 s).
    #[serde(default = "d_bin")]
    pub bin: Duration,
    /// Throughput, latency and MMR are measured from this time to the end (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure_from: Option<Duration>,
}

fn d_partitions() -> u32 {
    32
}
fn d_replication() -> u32 {
    2
}
fn d_objects() -> u32 {
    100_000
}
fn d_object_size() -> ByteSize {
    ByteSize(1000)
}
fn d_request_size() -> ByteSize {
    ByteSize(100)
}
fn d_zipf() -> f64 {
    0.99
}
fn d_write_cost() -> f64 {
    1.0
}
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}
fn is_one(x: &f64) -> bool {
    *x == 1.0
}
fn d_concurrency() -> u32 {
    16
}
fn d_queue_limit() -> u32 {
    100_000
}
fn d_wa_period() -> Duration {
    Duration(2 * PS_PER_S)
}
fn d_wa_epsilon() -> f64 {
    0.005
}
fn d_rs_interval() -> Duration {
    Duration(PS_PER_S / 50)
}
fn d_rs_step() -> f64 {
    0.5
}
fn d_rs_queued() -> f64 {
    2.0
}
fn d_rs_ewma() -> f64 {
    0.1
}
fn d_bin() -> Duration {
    Duration(PS_PER_S)
}

/// The most objects a tenant's key space may have (its popularity table is 8 bytes an object).
pub const MAX_OBJECTS: u32 = 10_000_000;
/// The most tenants a service serves (its parts and shares are per tenant).
pub const MAX_TENANTS: usize = 4096;

/// Hosts of a `HostSet` for the service, which (unlike a workload) may have a single server.
pub fn hosts(set: &HostSet, n_hosts: u32, field: &str) -> Result<Vec<u32>> {
    match set {
        HostSet::First(0) => Err(bad(field, "needs at least 1 host")),
        HostSet::First(1) => Ok(vec![0]),
        HostSet::Listed(r) if r.len() == 1 && r[0].0 == r[0].1 => {
            let h = r[0].0;
            if h >= n_hosts {
                return Err(bad(field, format!("host {h} does not exist; the fabric has hosts 0-{}", n_hosts - 1)));
            }
            Ok(vec![h])
        }
        HostSet::Listed(r) if r.is_empty() => Err(bad(field, "needs at least 1 host")),
        _ => set.resolve(n_hosts, field),
    }
}

/// A write fraction must be in [0, 1].
fn check_fraction(x: f64, field: &str) -> Result<()> {
    if !(x.is_finite() && (0.0..=1.0).contains(&x)) {
        return Err(bad(field, format!("{x} is not a fraction in [0, 1] (0: read-only, 1: every request a write)")));
    }
    Ok(())
}

impl ServiceSpec {
    /// Whether any tenant writes (`write_fraction` above 0 service-wide or for one tenant).
    pub fn writes(&self) -> bool {
        self.write_fraction > 0.0 || self.demand.iter().any(|d| d.write_fraction.is_some_and(|w| w > 0.0))
    }

    /// Check every field against the fabric's host count, the tenants and the run's stop time.
    pub fn validate(&self, n_hosts: u32, tenants: &[TenantSpec], stop: Option<Duration>) -> Result<()> {
        let f = |name: &str| format!("service.{name}");
        if stop.is_none() {
            return Err(bad("stop", "a run with a [service] needs a stop time (e.g. stop = \"10s\"): its clients never finish"));
        }
        let servers = hosts(&self.servers, n_hosts, &f("servers"))?;
        let clients = hosts(&self.clients, n_hosts, &f("clients"))?;
        if let Some(h) = clients.iter().find(|h| servers.contains(h)) {
            return Err(bad(f("clients"), format!("host {h} is also a server; clients and servers must be different hosts")));
        }
        if !(self.capacity.is_finite() && self.capacity > 0.0 && self.capacity <= 1e9) {
            return Err(bad(f("capacity"), format!("{} is not a rate in (0, 1e9] requests/s", self.capacity)));
        }
        if tenants.is_empty() {
            return Err(bad("tenants", "a [service] serves tenants: list them in [[tenants]] (name and weight)"));
        }
        if tenants.len() > MAX_TENANTS {
            return Err(bad("tenants", format!("{} tenants; a service serves at most {MAX_TENANTS}", tenants.len())));
        }
        if self.partitions == 0 || self.partitions > 1 << 16 {
            return Err(bad(f("partitions"), format!("{} is not in 1..=65536", self.partitions)));
        }
        let group = self.servers_per_tenant.unwrap_or(servers.len() as u32);
        if group == 0 || group as usize > servers.len() || servers.len() % group as usize != 0 {
            return Err(bad(f("servers_per_tenant"), format!("{group} must be between 1 and the {} servers and divide their number", servers.len())));
        }
        if self.replication == 0 || self.replication > group {
            return Err(bad(f("replication"), format!("{} copies need between 1 and {group} (a tenant's servers) distinct servers", self.replication)));
        }
        if self.objects == 0 || self.objects > MAX_OBJECTS {
            return Err(bad(f("objects"), format!("{} is not in 1..={MAX_OBJECTS}", self.objects)));
        }
        if self.object_size.0 == 0 {
            return Err(bad(f("object_size"), "must be at least 1 byte"));
        }
        if self.request_size.0 == 0 {
            return Err(bad(f("request_size"), "must be at least 1 byte"));
        }
        if !(self.zipf.is_finite() && (0.0..=10.0).contains(&self.zipf)) {
            return Err(bad(f("zipf"), format!("{} is not an exponent in [0, 10] (0 is uniform, YCSB's is 0.99)", self.zipf)));
        }
        for (i, d) in self.demand.iter().enumerate() {
            let p = format!("service.demand[{i}]");
            if !tenants.iter().any(|t| t.name == d.tenant) {
                return Err(bad(format!("{p}.tenant"), format!("\"{}\" is not a tenant; [[tenants]] lists them", d.tenant)));
            }
            if let Some(j) = self.demand[..i].iter().position(|e| e.tenant == d.tenant) {
                return Err(bad(format!("{p}.tenant"), format!("\"{}\" already has service.demand[{j}]", d.tenant)));
            }
            match (d.concurrency, d.rate) {
                (None, None) => {
                    return Err(bad(p, "give concurrency (closed loop) or rate (open loop, requests/s; with concurrency, at most that many outstanding)"))
                }
                (Some(0), Some(_)) => {
                    return Err(bad(format!("{p}.concurrency"), "a cap of 0 outstanding requests issues nothing; give at least 1, or leave it out"))
                }
                (_, Some(r)) if !(r.is_finite() && r > 0.0 && r <= 1e9) => {
                    return Err(bad(format!("{p}.rate"), format!("{r} is not a rate in (0, 1e9] requests/s")))
                }
                _ => {}
            }
            let (peak, closed) = match (d.concurrency, d.rate) {
                (_, Some(r)) => (r, false),
                (c, None) => (c.unwrap_or(0) as f64, true),
            };
            profile::validate(&p, d.profile, &d.peaks, d.low, peak, closed)?;
            if let Some(w) = d.write_fraction {
                check_fraction(w, &format!("{p}.write_fraction"))?;
            }
        }
        check_fraction(self.write_fraction, &f("write_fraction"))?;
        if !(self.write_cost.is_finite() && self.write_cost > 0.0 && self.write_cost <= 1e6) {
            return Err(bad(f("write_cost"), format!("{} is not a cost in (0, 1e6] reads (1: a write costs a server what a read does)", self.write_cost)));
        }
        if self.queue_limit == 0 {
            return Err(bad(f("queue_limit"), "must be at least 1 request"));
        }
        let positive = |d: Duration, name: &str| if d.0 == 0 { Err(bad(f(name), "must be positive")) } else { Ok(()) };
        positive(self.wa_period, "wa_period")?;
        positive(self.rs_interval, "rs_interval")?;
        positive(self.bin, "bin")?;
        let end = stop.expect("checked above").0;
        if end / self.bin.0 > 1_000_000 {
            return Err(bad(f("bin"), format!("{} over the run is more than a million bins; use a wider bin", self.bin)));
        }
        if end / self.rs_interval.0 > 100_000_000 || end / self.wa_period.0 > 100_000_000 {
            return Err(bad(f("rs_interval"), "the run would have more than 10^8 periods; use a longer interval"));
        }
        if !(self.wa_epsilon.is_finite() && (0.0..=1.0).contains(&self.wa_epsilon)) {
            return Err(bad(f("wa_epsilon"), format!("{} is not a fraction of a tenant's local share in [0, 1]", self.wa_epsilon)));
        }
        let unit = |x: f64| x.is_finite() && x > 0.0 && x <= 1.0;
        if !unit(self.rs_step) {
            return Err(bad(f("rs_step"), format!("{} is not in (0, 1]", self.rs_step)));
        }
        if !unit(self.rs_ewma) {
            return Err(bad(f("rs_ewma"), format!("{} is not in (0, 1]", self.rs_ewma)));
        }
        if !(self.rs_queued.is_finite() && self.rs_queued > 0.0) {
            return Err(bad(f("rs_queued"), format!("{} is not a positive number of requests", self.rs_queued)));
        }
        if self.shift.windows(2).any(|w| w[1] <= w[0]) {
            return Err(bad(f("shift"), "times must increase"));
        }
        Ok(())
    }
}
