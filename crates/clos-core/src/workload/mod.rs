//! Traffic: who sends how much to whom, and when.
//!
//! A workload is one of the kinds in [`spec::WorkloadKind`], or several side by side
//! (`services`, `background`). Each part is generated up front from its own random stream, except
//! closed loops, which start their first flows up front and the rest as flows finish (the
//! simulator calls [`ClosedLoop::replace`]). Modules, one concept each:
//! - [`cdf`]: flow-size and concurrency distributions (bundled and user files);
//! - [`pattern`]: destination choice and the fixed patterns (permutation, stride, bijection);
//! - [`poisson`], [`periodic`], [`incast`], [`closed_loop`]: arrival processes;
//! - [`hosts`]: host sets and concurrency as written in scenarios; [`spec`]: validation;
//! - [`load`]: the offered load a generated workload puts on each tier;
//! - [`tenants`]: who owns each part, with what weight, and the ports' tenant queues.

pub mod cdf;
pub mod closed_loop;
pub mod hosts;
pub mod incast;
pub mod load;
pub mod pattern;
pub mod periodic;
pub mod poisson;
pub mod spec;
pub mod tenants;

use crate::error::{bad, Result};
use crate::rng::{below, shuffle, Stream};
use crate::topology::Topology;
use crate::units::{parse_bytes, parse_duration, Time};
pub use closed_loop::ClosedLoop;
use hosts::Concurrency as WrittenConcurrency;
use pattern::Destinations;
use serde_json::{json, Value};
use spec::{WorkloadKind, WorkloadSpec};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start: Time,
    /// Index of the workload part (service) that made this flow, into [`Generated::services`].
    pub service: u32,
}

/// A generated workload.
pub struct Generated {
    /// Every flow known before the run starts (closed loops add more as flows finish).
    pub flows: Vec<FlowSpec>,
    pub closed_loop: ClosedLoop,
    /// Names of the workload's parts, indexed by [`FlowSpec::service`].
    pub services: Vec<String>,
    /// Traffic class of each part's flows (`switch.classes`), indexed as `services`.
    pub classes: Vec<u8>,
    /// Tenant of each part's flows (`workload.tenant`, a name from `[[tenants]]`), indexed as
    /// `services`.
    pub tenants: Vec<Option<String>>,
    /// Each part's constant rate, bits/s, if its flows are unresponsive datagrams
    /// (`workload.transport = "udp"`, `transport/udp.rs`), indexed as `services`.
    pub udp_rates: Vec<Option<u64>>,
    /// The multicast group each part sends to (`workload.group`), indexed as `services`.
    pub groups: Vec<Option<String>>,
    /// Whether each part's flow sizes are rounded up to whole segments, indexed as `services`.
    pub whole_segments: Vec<bool>,
    /// `(request, response)` flow ids: the response starts when its request has arrived, not
    /// at its own `start` (incast's `request`).
    pub starts_on_arrival: Vec<(u32, u32)>,
    /// `(previous, next)` flow ids on one persistent connection (incast's `connections`).
    pub continues: Vec<(u32, u32)>,
    /// What the workload offers (flows, bytes, expected load per tier), for `summary.json`.
    pub summary: Value,
}

/// The parts of a workload in a fixed order: the workload itself (or each service), each
/// followed by its background, with the dotted path that names it in errors.
pub(crate) fn parts_of(w: &WorkloadSpec) -> Vec<(String, &WorkloadSpec)> {
    let mut list = Vec::new();
    parts(w, "workload".into(), &mut list);
    list
}

fn parts<'a>(w: &'a WorkloadSpec, path: String, out: &mut Vec<(String, &'a WorkloadSpec)>) {
    if let Some(list) = &w.services {
        for (i, s) in list.iter().enumerate() {
            parts(s, format!("{path}.services[{i}]"), out);
        }
    } else {
        out.push((path.clone(), w));
    }
    if let Some(b) = &w.background {
        parts(b, format!("{path}.background"), out);
    }
}

pub fn generate(w: &WorkloadSpec, topo: &Topology, rng: &mut Stream) -> Result<Generated> {
    let list = parts_of(w);
    // Part 0 draws from the workload stream itself (so single workloads keep their flows);
    // part i > 0 from that stream long-jumped i times (2^192 draws apart), so changing one
    // part never changes another's flows.
    let base = rng.clone();
    let mut flows = Vec::new();
    let mut closed_loop = ClosedLoop::default();
    let mut services = Vec::new();
    let mut classes = Vec::new();
    let mut tenants = Vec::new();
    let mut udp_rates = Vec::new();
    let mut groups = Vec::new();
    let mut whole_segments = Vec::new();
    let mut described = Vec::new();
    let mut starts_on_arrival = Vec::new();
    let mut continues = Vec::new();
    for (i, (path, spec)) in list.iter().enumerate() {
        let mut own = base.clone();
        for _ in 0..i {
            own.long_jump();
        }
        let stream = if i == 0 { &mut *rng } else { &mut own };
        let service = services.len() as u32;
        let mut requests = Vec::new();
        let mut chains = Vec::new();
        let mut made = part(spec, path, topo, stream, service, &mut closed_loop, &mut requests, &mut chains)?;
        for f in &mut made {
            f.service = service;
        }
        let name = spec.name.clone().unwrap_or_else(|| spec::kind_name(spec.kind));
        described.push(load::describe_part(&name, spec, &made, topo));
        services.push(name.clone());
        classes.push(spec.class.unwrap_or(0));
        tenants.push(spec.tenant.clone());
        udp_rates.push(udp_rate(spec, path, &made, topo)?);
        groups.push(spec.group.clone());
        whole_segments.push(spec.whole_segments == Some(true));
        let first = flows.len();
        flows.extend(made);
        // A sequential shuffle's next flow starts when the one before it has arrived.
        starts_on_arrival.extend(chains.iter().map(|&(a, b)| ((first + a) as u32, (first + b) as u32)));
        let persistent = spec.connections == Some(incast::Connections::Persistent);
        // Flows from `from` on, each after the last of its source and destination.
        let chained = |flows: &[FlowSpec], from: usize| incast::connections((from..flows.len()).map(|i| (i as u32, flows[i].src, flows[i].dst)));
        if persistent {
            continues.extend(chained(&flows, first));
        }
        if !requests.is_empty() {
            // The requests are a part of their own, so that their completion times stay out of
            // the responses' statistics; they travel in the responses' class.
            let (mut specs, answers): (Vec<FlowSpec>, Vec<usize>) = requests.into_iter().unzip();
            for f in &mut specs {
                f.service = services.len() as u32;
            }
            let name = format!("{name} requests");
            described.push(load::describe_part(&name, spec, &specs, topo));
            services.push(name);
            classes.push(spec.class.unwrap_or(0));
            tenants.push(spec.tenant.clone());
            udp_rates.push(None);
            groups.push(None);
            whole_segments.push(false);
            let at = flows.len();
            starts_on_arrival.extend(answers.iter().enumerate().map(|(k, &r)| ((at + k) as u32, (first + r) as u32)));
            flows.extend(specs);
            if persistent {
                continues.extend(chained(&flows, at));
            }
        }
    }
    let summary = json!({"services": described, "expected_load": load::expected_load(w, &flows, topo)});
    Ok(Generated { flows, closed_loop, services, classes, tenants, udp_rates, groups, whole_segments, starts_on_arrival, continues, summary })
}

/// The constant rate of `spec`'s flows, if they are datagrams (`transport = "udp"`): at most
/// the link rate of every host that sends one, or the host's NIC queue would grow without bound.
fn udp_rate(spec: &WorkloadSpec, path: &str, flows: &[FlowSpec], topo: &Topology) -> Result<Option<u64>> {
    if spec.transport != Some(spec::PartTransport::Udp) {
        return Ok(None);
    }
    let rate = spec.rate.expect("normalised: udp has a rate").0;
    let slowest = flows.iter().map(|f| topo.ports[topo.port_start[f.src as usize] as usize].rate_bps).min();
    if let Some(link) = slowest.filter(|&l| rate > l) {
        return Err(bad(
            format!("{path}.rate"),
            format!("{rate} b/s is above a sending host's link rate ({link} b/s): a host cannot send faster than its NIC; use at most that"),
        ));
    }
    Ok(Some(rate))
}

/// One part's flows, in absolute time, before the simulator starts.
/// Incast's simulated requests go to `requests`, each with the index in the returned flows of
/// the response it starts.
#[allow(clippy::too_many_arguments)]
fn part(
    w: &WorkloadSpec,
    path: &str,
    topo: &Topology,
    rng: &mut Stream,
    service: u32,
    closed: &mut ClosedLoop,
    requests: &mut Vec<(FlowSpec, usize)>,
    chains: &mut Vec<(usize, usize)>,
) -> Result<Vec<FlowSpec>> {
    use WorkloadKind::*;
    let n = topo.n_hosts as u32;
    if w.kind == Flows {
        return read_flow_file(w.file.as_deref().unwrap_or_default(), n);
    }
    let group = match &w.hosts {
        Some(h) if w.kind == Multicast => h.resolve_any(n, &format!("{path}.hosts"))?,
        Some(h) => h.resolve(n, &format!("{path}.hosts"))?,
        None => (0..n).collect(),
    };
    let m = group.len();
    if w.kind == Multicast {
        // One flow per sender; its destination is the group's (`sim/multicast.rs` sets `dst`
        // to a member, for the flow table).
        let start = w.start.map_or(0, |d| d.0);
        let bytes = w.bytes.map_or(0, |b| b.0);
        return Ok(group.iter().map(|&h| FlowSpec { src: h, dst: h, bytes, start, service }).collect());
    }
    if m < 2 && w.destinations.is_none() {
        return Err(bad(format!("{path}.hosts"), "needs at least 2 hosts to make any flow"));
    }
    let targets = match &w.destinations {
        Some(h) => Some(h.resolve(n, &format!("{path}.destinations"))?),
        None => None,
    };
    let start = w.start.map_or(0, |d| d.0);
    let stop = w.stop.map_or(Time::MAX, |d| d.0);
    let ramp = w.ramp.map_or(0, |d| d.0);
    let joins: Vec<Time> = (0..m as u64).map(|k| start + k * ramp).collect();
    let bytes = w.bytes.map_or(0, |b| b.0);
    let jitter = w.start_jitter.map_or(0, |d| d.0);
    let sequential = w.sequential == Some(true);
    // An error names what left a host without a destination: the destinations given, or the pattern.
    let dest_field = if w.destinations.is_some() { "destinations" } else { "pattern" };
    let dest = || Destinations::new(w.pattern.unwrap_or_default(), &group, targets.as_deref(), topo, &format!("{path}.{dest_field}"));
    let pairs = |targets: Vec<usize>| -> Vec<FlowSpec> {
        targets.iter().enumerate().map(|(s, &d)| FlowSpec { src: group[s], dst: group[d], bytes, start: 0, service }).collect()
    };
    let mut flows = match w.kind {
        // Fixed patterns: every flow starts when its source joins, plus jitter.
        Shuffle | Permutation | Stride | Bijection => {
            let mut v = match w.kind {
                Shuffle => {
                    let mut v = Vec::with_capacity(m * (m - 1));
                    for &s in &group {
                        let first = v.len();
                        for &d in &group {
                            if s != d {
                                v.push(FlowSpec { src: s, dst: d, bytes, start: 0, service });
                            }
                        }
                        if sequential {
                            shuffle(rng, &mut v[first..]);
                        }
                    }
                    v
                }
                Permutation => {
                    let pods: Vec<u32> = group.iter().map(|&h| topo.nodes[h as usize].pod).collect();
                    let zones = (w.cross_pod == Some(true)).then_some(&pods[..]);
                    pairs(pattern::permutation(m, zones, rng, &format!("{path}.cross_pod"))?)
                }
                Stride => pairs(pattern::stride(m, w.stride.unwrap_or(1), &format!("{path}.stride"))?),
                _ => {
                    // DRILL §4's "Random": each server talks to a random destination not under its own leaf.
                    let racks: Vec<u32> = group.iter().map(|&h| topo.host_tor[h as usize]).collect();
                    pairs(pattern::permutation(m, Some(&racks), rng, &format!("{path}.hosts"))?)
                }
            };
            if jitter > 0 {
                for f in &mut v {
                    f.start = below(rng, jitter + 1);
                }
            }
            let position = positions(&group, n);
            for f in &mut v {
                f.start += joins[position[f.src as usize] as usize];
            }
            if sequential {
                // A host's flows are together, in its order: the first starts when the host
                // joins (plus its jitter), each later one when the one before it has arrived.
                for i in 1..v.len() {
                    if v[i].src == v[i - 1].src {
                        v[i].start = v[i - 1].start;
                    }
                }
            }
            v.retain(|f| f.start < stop);
            if sequential {
                chains.extend((1..v.len()).filter(|&i| v[i].src == v[i - 1].src).map(|i| (i - 1, i)));
            }
            return Ok(v);
        }
        Poisson => {
            let cdf = cdf::size_cdf(w.cdf.as_deref().unwrap_or_default(), &format!("{path}.cdf"))?;
            poisson::arrivals(&group, &dest()?, &cdf, w.load.unwrap_or(0.0), topo, (start, stop), rng)
        }
        Periodic => periodic::flows(&group, &dest()?, bytes, w.interval.map_or(1, |d| d.0), (start, stop), rng),
        Incast => {
            let (fan_in, fan_field) = match (w.fan_in, w.responders) {
                (Some(k), _) => (hosts::Share::Hosts(k), "fan_in"),
                (None, r) => (r.unwrap_or(hosts::Share::Fraction(0.1)), "responders"),
            };
            let requesters = w.requesters.unwrap_or(hosts::Share::Fraction(0.1));
            let spec = incast::Incast { requesters, fan_in, fan_field, bytes, interval: w.interval.map(|d| d.0), request: w.request.map(|b| b.0) };
            let rounds = spec.flows(&group, (start, stop), path, rng)?;
            requests.extend(rounds.requests);
            rounds.responses
        }
        ClosedLoop => {
            let sizes = cdf::size_cdf(w.cdf.as_deref().unwrap_or_default(), &format!("{path}.cdf"))?;
            let concurrency = match w.concurrency.clone().unwrap_or(WrittenConcurrency::Fixed(1)) {
                WrittenConcurrency::Fixed(k) => closed_loop::Concurrency::Fixed(k),
                WrittenConcurrency::Distribution(name) => closed_loop::Concurrency::Drawn(cdf::concurrency_cdf(&name, &format!("{path}.concurrency"))?),
            };
            let (l, first) = closed_loop::Loop::start(service, group.clone(), dest()?, sizes, &concurrency, &joins, jitter, stop, n as usize, rng.clone());
            // The loop keeps drawing from its own copy of the stream as flows finish.
            closed.loops.push(l);
            return Ok(first);
        }
        Flows | Services | Multicast => unreachable!("handled above / flattened by `parts`"),
    };
    // Arrival processes: a host sends nothing before it joins.
    if ramp > 0 {
        let position = positions(&group, n);
        flows.retain(|f| f.start >= joins[position[f.src as usize] as usize]);
    }
    Ok(flows)
}

/// For each host id, its position in `group` (or `u32::MAX`).
fn positions(group: &[u32], n: u32) -> Vec<u32> {
    let mut p = vec![u32::MAX; n as usize];
    for (i, &h) in group.iter().enumerate() {
        p[h as usize] = i as u32;
    }
    p
}

/// CSV with header `src,dst,bytes,start`; sizes and times may carry units (`64KB`, `1ms`),
/// bare times are seconds.
fn read_flow_file(path: &str, n_hosts: u32) -> Result<Vec<FlowSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| bad("workload.file", format!("cannot read `{path}`: {e}")))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let header: Vec<String> = match lines.next() {
        Some((_, h)) => h.split(',').map(|c| c.trim().to_lowercase()).collect(),
        None => return Err(bad(path.to_string(), "is empty; expected a header line `src,dst,bytes,start`")),
    };
    if header != ["src", "dst", "bytes", "start"] {
        return Err(bad(format!("{path}:1"), format!("header must be `src,dst,bytes,start`, got `{}`", header.join(","))));
    }
    let mut flows = Vec::new();
    for (i, line) in lines {
        let at = format!("{path}:{}", i + 1);
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() != 4 {
            return Err(bad(at, format!("expected 4 columns (src,dst,bytes,start), got {}", cols.len())));
        }
        let host = |c: &str, what: &str| -> Result<u32> {
            let h: u32 = c.trim_start_matches('h').parse().map_err(|_| bad(&at, format!("{what} `{c}` is not a host number (0-based, or `h17`)")))?;
            if h >= n_hosts {
                return Err(bad(&at, format!("{what} host {h} does not exist; the fabric has hosts 0..{}", n_hosts - 1)));
            }
            Ok(h)
        };
        let (src, dst) = (host(cols[0], "src")?, host(cols[1], "dst")?);
        if src == dst {
            return Err(bad(&at, format!("src and dst are both host {src}")));
        }
        let bytes = parse_bytes(cols[2]).map_err(|e| bad(&at, format!("bytes: {e}")))?;
        if bytes == 0 {
            // As `workload.bytes`: a flow carries data, or there is nothing to complete.
            return Err(bad(&at, "bytes: must be at least 1 byte"));
        }
        let start = parse_duration(cols[3]).map_err(|e| bad(&at, format!("start: {e}")))?;
        flows.push(FlowSpec { src, dst, bytes, start, service: 0 });
    }
    if flows.is_empty() {
        return Err(bad(path, "holds no flows"));
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_file_errors_name_the_line() {
        let dir = std::env::temp_dir().join(format!("clos-flows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.csv");
        std::fs::write(&f, "src,dst,bytes,start\n0,1,10KB,0\n0,99,1,0\n").unwrap();
        let e = read_flow_file(f.to_str().unwrap(), 4).unwrap_err().to_string();
        assert!(e.contains("f.csv:3") && e.contains("host 99 does not exist"), "{e}");
        std::fs::write(&f, "src,dst,bytes,start\n0,1,0,0\n").unwrap();
        let e = read_flow_file(f.to_str().unwrap(), 4).unwrap_err().to_string();
        assert!(e.contains("f.csv:2") && e.contains("at least 1 byte"), "{e}");
        std::fs::write(&f, "src,dst,bytes,start\n0,1,10KB,1ms\n").unwrap();
        assert_eq!(read_flow_file(f.to_str().unwrap(), 4).unwrap()[0], FlowSpec { src: 0, dst: 1, bytes: 10_000, start: 1_000_000_000, service: 0 });
    }
}
