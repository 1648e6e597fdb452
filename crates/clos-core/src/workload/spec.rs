//! Validation of the `[workload]` table: which fields each kind takes, which it needs, and
//! their defaults. Errors name the dotted field (`workload.services[1].load`) and the fix.

use super::cdf::{concurrency_cdf, size_cdf};
use super::hosts::{Concurrency, HostSet, Share};
use super::pattern::Pattern;
use crate::error::{bad, Result};
use crate::units::{ByteSize, Duration, Rate, PS_PER_S};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use WorkloadKind::*;

/// The kind of traffic (`workload.kind`); it says which of the other fields apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// All-to-all: every chosen host sends `bytes` to every other (VL2 §5.1).
    Shuffle,
    /// Each host sends `bytes` to exactly one other and receives from exactly one.
    Permutation,
    /// An explicit list of flows from a CSV file.
    Flows,
    /// Host i sends `bytes` to host (i + stride) mod n (DRILL §4, Table 1).
    Stride,
    /// A random bijection in which no host sends into its own rack (DRILL's "Random").
    Bijection,
    /// Open loop: Poisson flow arrivals with sizes from a CDF, at a target load.
    Poisson,
    /// Each server keeps a number of flows open, starting a new one when one ends (VL2 §5.2).
    ClosedLoop,
    /// Rounds in which some hosts each fetch `bytes` from several others at once (DRILL §4).
    Incast,
    /// Every host sends `bytes` every `interval` (DRILL Table 1's mice).
    Periodic,
    /// Several named workloads side by side, each on its own hosts and times (VL2 §5.3).
    Services,
    /// Each of `hosts` sends `bytes` to multicast group `group` as datagrams at `rate`
    /// (`[multicast]`, docs/multicast.md).
    Multicast,
}

/// How a workload's flows send (`workload.transport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PartTransport {
    /// The scenario's `[transport]`: TCP, DCTCP or CUBIC.
    #[default]
    Tcp,
    /// Unresponsive datagrams at a constant `rate` (`transport/udp.rs`): no ACKs, no
    /// retransmission, no congestion control.
    Udp,
}

/// A workload: `kind` says which fields apply; the others are rejected by name. Composite
/// workloads nest: `services` lists sub-workloads, and any workload may carry a `background`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Which traffic: `shuffle`, `permutation`, `flows`, `stride`, `bijection`, `poisson`,
    /// `closed_loop`, `incast`, `periodic` or `services`.
    pub kind: WorkloadKind,
    /// A label for this workload's flows (services; defaults to the kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The hosts this workload uses: a number (the first n) or a list of hosts and ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<HostSet>,
    /// Bytes per flow (shuffle, permutation, stride, bijection, incast, periodic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<ByteSize>,
    /// Permutation: every host sends outside its own pod (rack, for two-tier fabrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_pod: Option<bool>,
    /// Flows: CSV with a header `src,dst,bytes,start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Each generated flow starts at a uniform random time in `[0, start_jitter]` after its
    /// host joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jitter: Option<Duration>,
    /// When the workload begins (its first host joins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    /// When it stops starting flows; flows already running finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    /// Hosts join one at a time, this far apart, in the order `hosts` lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Duration>,
    /// Shuffle: each host sends its flows one at a time, to the other hosts in a random order
    /// of its own, each flow starting when the one before it has arrived (DRILL §4: "each
    /// server sends flows to all other servers in a random order"). Off: all at once (VL2 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<bool>,
    /// Stride: the distance x of Stride(x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stride: Option<u32>,
    /// Poisson: offered load as a fraction of each sending host's link capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// Poisson and closed loop: flow-size CDF, a bundled name or a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdf: Option<String>,
    /// Poisson, closed loop and periodic: which destinations a flow may pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<Pattern>,
    /// Poisson, closed loop and periodic: the hosts a flow may go to, a number (the first n) or
    /// a list of hosts and ranges (default: the workload's own `hosts`). With senders on some
    /// racks and destinations everywhere, the traffic matrix is skewed by source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destinations: Option<HostSet>,
    /// Closed loop: flows each server keeps open: a number, a bundled distribution or a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Concurrency>,
    /// Incast: the hosts that make a request in each round, a count (4) or a fraction (0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requesters: Option<Share>,
    /// Incast: the other hosts each requester fetches from, a count or a fraction of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responders: Option<Share>,
    /// Incast: the number of hosts each requester fetches from (instead of `responders`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_in: Option<u32>,
    /// Incast: send each request as a flow of this many bytes from the requester to the
    /// responder; the response starts when its request has arrived. Absent, requests are not
    /// simulated and every response starts at the round's instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ByteSize>,
    /// Incast and flows: a new connection for every flow (`fresh`, the default), or one per
    /// source and destination kept from flow to flow (`persistent`; incast's responses in round
    /// order, a file's flows in its order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<super::incast::Connections>,
    /// Incast and periodic: time between rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// The traffic class of this workload's flows, data and ACKs (`switch.classes`; default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<u8>,
    /// The tenant this workload's flows belong to (a name from `[[tenants]]`; required when
    /// the scenario lists tenants; `workload/tenants.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// `"udp"`: this workload's flows send at a constant `rate` whatever happens to them
    /// (`transport/udp.rs`); `"tcp"` (default): as `[transport]` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<PartTransport>,
    /// With `transport = "udp"`: the rate each flow sends at, on the wire (at most its host's
    /// link rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Round every flow's size up to whole segments of its MSS, so that no flow ends in a short
    /// segment (which, serialised faster, overtakes the full one before it on a parallel path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_segments: Option<bool>,
    /// Multicast: the group (a name from `[[multicast.groups]]`) the senders send to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Services: the sub-workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<WorkloadSpec>>,
    /// Any kind but services: a second workload running beside this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Box<WorkloadSpec>>,
}

/// Kinds that start flows for as long as they run, so they need to know when to stop.
const OPEN_ENDED: &[WorkloadKind] = &[Poisson, ClosedLoop, Periodic];
const FIXED_SIZE: &[WorkloadKind] = &[Shuffle, Permutation, Stride, Bijection, Incast, Periodic, Multicast];
const ALL_BUT_FLOWS: &[WorkloadKind] = &[Shuffle, Permutation, Stride, Bijection, Poisson, ClosedLoop, Incast, Periodic, Services, Multicast];
/// Kinds whose flows may be constant-rate: not those that start flows on another's completion.
const UDP_KINDS: &[WorkloadKind] = &[Shuffle, Permutation, Flows, Stride, Bijection, Poisson, Periodic, Multicast];
const LEAVES: &[WorkloadKind] = &[Shuffle, Permutation, Stride, Bijection, Poisson, ClosedLoop, Incast, Periodic, Multicast];

pub fn kind_name(k: WorkloadKind) -> String {
    serde_json::to_value(k).unwrap().as_str().unwrap().to_string()
}

fn names(kinds: &[WorkloadKind]) -> String {
    kinds.iter().map(|&k| kind_name(k)).collect::<Vec<_>>().join(", ")
}

impl WorkloadSpec {
    /// Fields given, with the kinds they apply to.
    fn given(&self) -> Vec<(&'static str, bool, &'static [WorkloadKind])> {
        vec![
            ("hosts", self.hosts.is_some(), LEAVES),
            ("bytes", self.bytes.is_some(), FIXED_SIZE),
            ("cross_pod", self.cross_pod.is_some(), &[Permutation]),
            ("file", self.file.is_some(), &[Flows]),
            ("start_jitter", self.start_jitter.is_some(), &[Shuffle, Permutation, Stride, Bijection, ClosedLoop]),
            ("start", self.start.is_some(), LEAVES),
            ("stop", self.stop.is_some(), ALL_BUT_FLOWS),
            ("ramp", self.ramp.is_some(), LEAVES),
            ("stride", self.stride.is_some(), &[Stride]),
            ("sequential", self.sequential.is_some(), &[Shuffle]),
            ("load", self.load.is_some(), &[Poisson]),
            ("cdf", self.cdf.is_some(), &[Poisson, ClosedLoop]),
            ("pattern", self.pattern.is_some(), &[Poisson, ClosedLoop, Periodic]),
            ("destinations", self.destinations.is_some(), &[Poisson, ClosedLoop, Periodic]),
            ("concurrency", self.concurrency.is_some(), &[ClosedLoop]),
            ("requesters", self.requesters.is_some(), &[Incast]),
            ("responders", self.responders.is_some(), &[Incast]),
            ("fan_in", self.fan_in.is_some(), &[Incast]),
            ("request", self.request.is_some(), &[Incast]),
            ("connections", self.connections.is_some(), &[Incast, Flows]),
            ("interval", self.interval.is_some(), &[Incast, Periodic]),
            ("services", self.services.is_some(), &[Services]),
            ("group", self.group.is_some(), &[Multicast]),
            ("transport", self.transport.is_some(), UDP_KINDS),
            ("rate", self.rate.is_some(), UDP_KINDS),
            ("tenant", self.tenant.is_some(), &[Shuffle, Permutation, Flows, Stride, Bijection, Poisson, ClosedLoop, Incast, Periodic, Multicast]),
            ("background", self.background.is_some(), &[Shuffle, Permutation, Flows, Stride, Bijection, Poisson, ClosedLoop, Incast, Periodic]),
        ]
    }

    /// Check the fields of the workload at dotted `path` and fill its defaults in; `stop` is the
    /// enclosing stop time (the scenario's, or the parent workload's), inherited when unset.
    pub fn normalize(&mut self, path: &str, stop: Option<Duration>) -> Result<()> {
        let kind = kind_name(self.kind);
        let field = |f: &str| format!("{path}.{f}");
        for (f, present, kinds) in self.given() {
            if present && !kinds.contains(&self.kind) {
                return Err(bad(field(f), format!("applies to {} workloads, not {kind}; remove it", names(kinds))));
            }
        }
        let need = |present: bool, f: &str, example: &str| {
            if present {
                Ok(())
            } else {
                Err(bad(field(f), format!("is required for a {kind} workload ({example})")))
            }
        };
        // Arrival processes run from `start` to `stop`; fixed patterns (whose normalised form
        // predates services) only take them when written.
        let arrivals = OPEN_ENDED.contains(&self.kind) || self.kind == Incast;
        if arrivals {
            self.start.get_or_insert(Duration(0));
            if self.stop.is_none() {
                self.stop = stop;
            }
        }
        let open_ended = OPEN_ENDED.contains(&self.kind) || (self.kind == Incast && self.interval.is_some());
        if open_ended && self.stop.is_none() {
            return Err(bad(
                field("stop"),
                format!("a {kind} workload starts flows until it stops; set {path}.stop (e.g. \"100ms\") or give the scenario a `stop` time"),
            ));
        }
        if let (Some(a), Some(b)) = (self.start, self.stop) {
            if b <= a {
                return Err(bad(field("stop"), format!("{b} is not after the start ({a})")));
            }
        }
        if FIXED_SIZE.contains(&self.kind) {
            need(self.bytes.is_some(), "bytes", "bytes per flow, e.g. \"1MB\"")?;
            if self.bytes.map(|b| b.0) == Some(0) {
                return Err(bad(field("bytes"), "must be at least 1 byte"));
            }
        }
        if matches!(self.kind, Shuffle | Permutation | Stride | Bijection) {
            self.start_jitter.get_or_insert(Duration(0));
        }
        for (d, f) in [(self.interval, "interval"), (self.ramp, "ramp")] {
            if d.is_some_and(|d| d.0 == 0) {
                return Err(bad(field(f), "must be positive"));
            }
        }
        if self.hosts == Some(super::hosts::HostSet::First(0)) || (self.kind != Multicast && self.hosts == Some(super::hosts::HostSet::First(1))) {
            return Err(bad(field("hosts"), "needs at least 2 hosts to make any flow"));
        }
        match self.kind {
            Permutation => {
                self.cross_pod.get_or_insert(false);
            }
            Flows => need(self.file.is_some(), "file", "a CSV with header src,dst,bytes,start")?,
            Stride => {
                need(self.stride.is_some(), "stride", "the x of Stride(x), e.g. 8")?;
                if self.stride == Some(0) {
                    return Err(bad(field("stride"), "must be at least 1 (0 would send every host to itself)"));
                }
            }
            Poisson => {
                need(self.load.is_some(), "load", "a fraction of host link capacity, e.g. 0.6")?;
                let load = self.load.unwrap();
                // Above 1 the sending NICs cannot carry the offered traffic at all: queues in the
                // hosts would only grow, which measures nothing about the fabric.
                if !(load > 0.0 && load <= 1.0) {
                    return Err(bad(field("load"), format!("must be in (0, 1] (a fraction of host link capacity), got {load}")));
                }
            }
            ClosedLoop => {
                let c = self.concurrency.get_or_insert(Concurrency::Distribution("vl2".into()));
                if let Concurrency::Distribution(name) = c {
                    concurrency_cdf(name, &field("concurrency"))?;
                }
            }
            Incast => {
                need(self.requesters.is_some(), "requesters", "the hosts requesting in each round, a number (4) or a fraction of the hosts (0.1)")?;
                if self.responders.is_some() == self.fan_in.is_some() {
                    return Err(bad(
                        field("responders"),
                        "give exactly one of responders (a number of the other hosts, or a fraction of them, e.g. 0.1) and fan_in (a number of hosts)",
                    ));
                }
                if self.fan_in == Some(0) {
                    return Err(bad(field("fan_in"), "must be at least 1"));
                }
                if self.request.is_some_and(|b| b.0 == 0) {
                    return Err(bad(field("request"), "must be at least 1 byte (a request is a message); remove it to start responses without one"));
                }
            }
            Periodic => need(self.interval.is_some(), "interval", "time between a host's flows, e.g. \"100ms\"")?,
            Services => {
                let list = self.services.as_mut().filter(|l| !l.is_empty());
                let Some(list) = list else {
                    return Err(bad(field("services"), "is required for a services workload: add [[workload.services]] tables"));
                };
                for (i, s) in list.iter_mut().enumerate() {
                    let p = format!("{path}.services[{i}]");
                    if s.kind == Services {
                        return Err(bad(format!("{p}.kind"), "a service cannot itself be a services workload; list its parts here instead"));
                    }
                    s.normalize(&p, self.stop.or(stop))?;
                }
            }
            Multicast => {
                need(self.group.is_some(), "group", "the name of a [[multicast.groups]] table")?;
                need(self.hosts.is_some(), "hosts", "the sending hosts, e.g. [0]")?;
                match self.transport {
                    None => self.transport = Some(PartTransport::Udp),
                    Some(PartTransport::Tcp) => {
                        return Err(bad(field("transport"), "a multicast workload sends datagrams (\"udp\"); TCP stays unicast: remove it"));
                    }
                    Some(PartTransport::Udp) => {}
                }
            }
            Shuffle | Bijection => {}
        }
        if matches!(self.kind, Poisson | ClosedLoop) {
            need(self.cdf.is_some(), "cdf", "a bundled flow-size CDF such as \"websearch_dctcp\", or a file")?;
            size_cdf(self.cdf.as_deref().unwrap(), &field("cdf"))?;
        }
        if matches!(self.kind, Poisson | ClosedLoop | Periodic) {
            self.pattern.get_or_insert(Pattern::AllToAll);
        }
        match (self.transport, self.rate) {
            (Some(PartTransport::Udp), None) => {
                return Err(bad(field("rate"), "is required with transport = \"udp\": the rate each flow sends at, e.g. \"2Gbps\""));
            }
            (Some(PartTransport::Udp), Some(r)) if r.0 == 0 => return Err(bad(field("rate"), "must be positive, e.g. \"2Gbps\"")),
            (Some(PartTransport::Udp), _) if self.connections.is_some() => {
                return Err(bad(field("connections"), "applies to TCP flows; constant-rate datagrams (transport = \"udp\") have no connection: remove it"));
            }
            (Some(PartTransport::Tcp) | None, Some(_)) => {
                return Err(bad(field("rate"), "applies to constant-rate flows: set transport = \"udp\" too, or remove it (TCP's rate is its own)"));
            }
            _ => {}
        }
        if let Some(b) = self.background.as_mut() {
            b.normalize(&field("background"), self.stop.or(stop))?;
        }
        if let Some(s) = self.stop {
            // Arrival generation is up front; a stop far beyond any run is almost surely a unit slip.
            if s.0 > 3600 * PS_PER_S {
                return Err(bad(field("stop"), format!("{s} is more than an hour of simulated time; did you mean ms?")));
            }
        }
        Ok(())
    }
}
