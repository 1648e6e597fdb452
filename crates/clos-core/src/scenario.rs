//! The scenario schema: one source of truth for fields, defaults and validation.
//!
//! Python parses TOML and passes JSON; Rust tests build scenarios directly. Unknown fields are
//! rejected by name, type errors carry the dotted path of the field (`serde_path_to_error`),
//! and [`Scenario::normalize`] checks cross-field rules and fills every default in, so the
//! normalised scenario written to `summary.json` says exactly what ran.

use crate::error::{bad, Result};
use crate::failures::{ConvergenceSpec, FailureSpec};
pub use crate::host::spec::{HostSpec, Qdisc, Tsq};
use crate::lb::Scheme;
use crate::topology::ab_wiring::Wiring;
use crate::topology::{fat_tree, leaf_spine, vl2, Topology};
use crate::transport::{CubicGrowth, DctcpLoss, Kind, PrrBound, RtoEstimator, SlowStart, SsthreshFrom, TcpParams};
use crate::units::{ByteSize, Duration, Rate, PS_PER_MS, PS_PER_S, PS_PER_US};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

pub mod memory;
pub mod schema;

/// A scenario file: the fabric, its switches, hosts, routing and transport, the traffic, and
/// what to record (README, "Scenario reference").
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Names the output folder, `results/<name>` (as a safe folder name).
    #[serde(default = "default_name")]
    pub name: String,
    /// The one seed every random stream comes from.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// When the run ends: `"all_flows_done"`, or a time.
    #[serde(default)]
    pub stop: Stop,
    /// A run never simulates past this, whatever `stop` says. Left out, it is the `stop` time
    /// of a fixed-time run (so a long run is never cut short by a default) and 10 s for
    /// `all_flows_done` (a guard against flows that never finish); see [`Scenario::time_limit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<Duration>,
    /// The fabric: its kind, size, link rates and delays.
    pub topology: TopologySpec,
    /// The switches' output ports: buffers, ECN marking, traffic classes.
    #[serde(default)]
    pub switch: SwitchSpec,
    /// The hosts' egress between TCP and the NIC.
    #[serde(default)]
    pub host: HostSpec,
    /// The load-balancing scheme and its parameters (`clos schemes` lists them).
    #[serde(default)]
    pub routing: RoutingSpec,
    /// TCP and its variants, shared by every flow.
    #[serde(default)]
    pub transport: TransportSpec,
    /// The traffic (docs/workloads.md). May be left out when a `[service]` makes the traffic.
    #[serde(default = "no_workload")]
    pub workload: WorkloadSpec,
    /// What the run records beyond its summary (docs/measurements.md).
    #[serde(default)]
    pub output: OutputSpec,
    /// Links and switches failing, degrading and recovering (see `failures`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureSpec>,
    /// How routing reacts to them (filled in when there are failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence: Option<ConvergenceSpec>,
    /// VL2's directory system: lookups, agent caches, VM migration (`crate::directory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectorySpec>,
    /// Tenants with weights, which workloads name (`tenant`); docs/tenants.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<crate::workload::tenants::TenantSpec>,
    /// Multicast groups and the control plane's parameters (fat trees and VL2; docs/multicast.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<crate::multicast::spec::MulticastSpec>,
    /// A request/response storage service with Pisces's mechanisms (`crate::service`;
    /// docs/tenants.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<crate::service::spec::ServiceSpec>,
    /// How the run is executed: on how many threads (docs/parallel.md).
    #[serde(default, skip_serializing_if = "RunSpec::is_default")]
    pub run: RunSpec,
}

/// `[run]`: the engine, not the model. Left out, the run is sequential: one thread, one
/// calendar, events at the same time in scheduling order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Run the partitioned engine (`sim/parallel.rs`) on this many threads (1 to 1024). Its
    /// results are the same, bit for bit, at every thread count, 1 included; they differ from
    /// a sequential run's only in the order of events at the same picosecond in different
    /// partitions (docs/parallel.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Join the fabric's partitions (one per pod, aggregation pair or leaf; `clos partition`
    /// lists them) into this many groups of consecutive ones. Fewer partitions cost less per
    /// event where cores are few; results depend on it, never on `threads`. Default: all of
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
}

impl RunSpec {
    fn is_default(&self) -> bool {
        *self == RunSpec::default()
    }
}

/// A workload left out: a services workload with no services, which only a scenario with a
/// `[service]` may have (`Scenario::normalize`).
fn no_workload() -> WorkloadSpec {
    serde_json::from_value(serde_json::json!({"kind": "services", "services": []})).expect("a valid empty workload")
}

fn is_no_workload(w: &WorkloadSpec) -> bool {
    w.services.as_ref().is_some_and(|l| l.is_empty()) && w.background.is_none()
}

/// The names `topology.preset` takes (VL2 only; `TopologySpec::normalize` builds each).
const VL2_PRESETS: [&str; 1] = ["testbed"];

fn vl2_presets_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": VL2_PRESETS})
}

fn default_name() -> String {
    "unnamed".into()
}
fn default_seed() -> u64 {
    1
}
/// The guard on `all_flows_done` runs when `max_time` is left out.
const DEFAULT_MAX_TIME: Duration = Duration(10 * PS_PER_S);
/// The longest link delay; timers may wait a thousand times longer (`transport.rto_max`).
const MAX_DELAY: Duration = Duration(PS_PER_S);
/// The most time bins, or queue samples, a run may make (`output.bin`, `output.queue_interval`),
/// counted over its time limit. Generous, since an `all_flows_done` run usually ends well before
/// its `max_time` (VL2's conventional tree: 10^7 bins of 1 ms under its 10,000 s guard); what it
/// catches is a period of picoseconds or nanoseconds written for microseconds.
const MAX_PERIODS: u64 = 100_000_000;

pub use crate::fabric::scheduler::MAX_CLASSES;

/// When a run ends: when every flow has delivered its last byte, or at a fixed time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "StopWritten", into = "String")]
pub enum Stop {
    #[default]
    AllFlowsDone,
    At(Duration),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StopWritten {
    Text(String),
    Seconds(f64),
}

impl TryFrom<StopWritten> for Stop {
    type Error = String;
    fn try_from(w: StopWritten) -> std::result::Result<Stop, String> {
        match w {
            StopWritten::Text(s) if s == "all_flows_done" => Ok(Stop::AllFlowsDone),
            StopWritten::Text(s) => crate::units::parse_duration(&s).map(|d| Stop::At(Duration(d))).map_err(|e| format!("{e}; or write \"all_flows_done\"")),
            StopWritten::Seconds(x) if x > 0.0 && x.is_finite() => crate::units::parse_duration(&format!("{x}s")).map(|d| Stop::At(Duration(d))),
            StopWritten::Seconds(x) => Err(format!("stop time must be positive, got {x}")),
        }
    }
}

impl From<Stop> for String {
    fn from(s: Stop) -> String {
        match s {
            Stop::AllFlowsDone => "all_flows_done".into(),
            Stop::At(d) => d.to_string(),
        }
    }
}

/// What `StopWritten` and `Stop::try_from` accept.
impl JsonSchema for Stop {
    fn schema_name() -> Cow<'static, str> {
        "Stop".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "\"all_flows_done\" (when every flow has delivered its last byte), or a fixed time: \"20ms\", or a number of seconds.",
            "anyOf": [
                {"enum": ["all_flows_done"]},
                crate::units::duration_text_schema(),
                {"type": "number", "exclusiveMinimum": 0},
            ],
        })
    }
}

/// The shape of the fabric (`topology.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    Vl2,
    FatTree,
    LeafSpine,
}

/// Every fabric's parameters in one table; fields that do not apply to `kind` are rejected.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// `vl2`, `fat_tree` or `leaf_spine`.
    pub kind: TopologyKind,
    /// VL2: `"testbed"`, VL2 §5's 4 ToRs x 20 servers at 1 Gb/s under 3 aggregation and 3
    /// intermediate switches at 10 Gb/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "vl2_presets_schema")]
    pub preset: Option<String>,
    /// VL2: top-of-rack switches, each with 2 uplinks to aggregation switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tors: Option<u32>,
    /// VL2: servers under each ToR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_per_tor: Option<u32>,
    /// VL2: aggregation switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggs: Option<u32>,
    /// VL2: intermediate switches, a complete bipartite graph with the aggregation switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intermediates: Option<u32>,
    /// VL2: the aggregation switches' port count D_A, which sizes the fabric as VL2 §4.1 does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_a: Option<u32>,
    /// VL2: the intermediate switches' port count D_I (with `d_a`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_i: Option<u32>,
    /// Fat tree: the even port count k (k pods, (k/2)^2 cores, k^3/4 hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
    /// Fat tree: cores removed evenly across core groups, to oversubscribe (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_cores: Option<u32>,
    /// Fat tree: `standard` (default; aggregation switch j of every pod reaches core group j) or
    /// `ab`, F10's AB wiring (odd pods strided; `topology/ab_wiring.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wiring: Option<Wiring>,
    /// Leaf-spine: leaf (top-of-rack) switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves: Option<u32>,
    /// Leaf-spine: spine switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spines: Option<u32>,
    /// Leaf-spine: hosts under each leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_per_leaf: Option<u32>,
    /// Leaf-spine: parallel links between each leaf and spine (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links_per_pair: Option<u32>,
    /// Leaf-spine: `even` (every leaf-spine pair has `links_per_pair` links) or `imbalanced`
    /// (DRILL Fig. 13: one more link from leaf i to spines i and i + 1 mod n).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub striping: Option<Striping>,
    /// Leaf-spine and VL2: a ToR's host capacity over its uplink capacity; sets `fabric_rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oversubscription: Option<f64>,
    /// Per-pair overrides: the number of parallel links between two named nodes and their rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<LinkOverride>>,
    /// The servers' links (default: 1 Gbps for VL2, 10 Gbps otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_rate: Option<Rate>,
    /// Switch-to-switch links (default: 10 x `host_rate` for VL2, `host_rate` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_rate: Option<Rate>,
    /// Every link's propagation delay (default 1us, at most 1s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_delay: Option<Duration>,
    /// The mean of a random delay each packet takes beyond `link_delay`, drawn afresh per
    /// packet (exponential; a link keeps its packets in order): the timing noise of software
    /// switches and NICs (`sim/jitter.rs`). None: exact time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_jitter: Option<Duration>,
    /// `fabric_rate` as written, before defaults (to check it against `oversubscription`).
    #[serde(skip)]
    fabric_given: Option<Rate>,
}

/// How a leaf-spine fabric's links are laid (`topology.striping`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Striping {
    Even,
    Imbalanced,
}

/// `[[topology.links]]`: make the links between two nodes `count` parallel links (0 removes them)
/// and/or give them `rate` (heterogeneous fabrics, DRILL §3.4.3).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    /// The two nodes, by name: `["tor0", "agg1"]`, `["leaf0", "spine1"]`, `["h3", "tor0"]`.
    pub between: [String; 2],
    /// Parallel links between them (0 removes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Their rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Per output port, drop-tail.
    #[serde(default = "default_buffer")]
    pub buffer: ByteSize,
    /// Mark CE when the backlog at enqueue exceeds this (needed by DCTCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_threshold: Option<ByteSize>,
    /// A shared buffer per switch, with dynamic thresholds (`fabric/shared_buffer.rs`); each
    /// queue stays capped by `buffer` too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<ByteSize>,
    /// The dynamic threshold's alpha (default 2 with a pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Traffic classes at every switch port (`fabric/scheduler.rs`): strict priority between
    /// levels, DWRR within one. None: one FIFO per port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassSpec>,
    /// DWRR's quantum per unit of weight (default: one full frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<ByteSize>,
    /// When a packet's ECN mark is decided: as it joins its queue, or as it leaves it.
    #[serde(default)]
    pub ecn_marking: EcnMarking,
    /// One queue per tenant at every switch port, DWRR by the tenants' weights and strict
    /// priority by their `priority` (`[[tenants]]`; instead of `classes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tenant_queues: bool,
}

/// One traffic class at the switches' ports (`switch.classes[i]`; a workload's `class` names it).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// Strict-priority level: 0 first (default 0).
    #[serde(default)]
    pub priority: u8,
    /// DWRR weight among the classes of its level (default 1).
    #[serde(default = "one")]
    pub weight: u32,
}

fn one() -> u32 {
    1
}

/// When a switch decides a packet's ECN mark (`switch.ecn_marking`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EcnMarking {
    /// By the queue it joins (DCTCP's switches; the FIFO fast path).
    #[default]
    Enqueue,
    /// By the queue behind it when it starts to leave (through the class queues).
    Dequeue,
}

fn default_buffer() -> ByteSize {
    ByteSize(1_000_000)
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            buffer: default_buffer(),
            ecn_threshold: None,
            pool: None,
            alpha: None,
            classes: Vec::new(),
            quantum: None,
            ecn_marking: EcnMarking::Enqueue,
            tenant_queues: false,
        }
    }
}

pub use crate::directory::spec::DirectorySpec;
pub use crate::lb::params::RoutingSpec;

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TransportSpec {
    /// The congestion control: `tcp` (NewReno with SACK recovery), `dctcp` or `cubic`.
    pub kind: Kind,
    /// Maximum segment size, bytes of payload (64 to 9000).
    pub mss: u32,
    /// PLTS Fig. 5(c), variable packet sizes: each flow's MSS uniform in `[mss_min, mss]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss_min: Option<u32>,
    /// The congestion window a flow starts with, in segments.
    pub initial_window: u32,
    /// Duplicate ACKs that start a fast retransmission.
    pub dupack_threshold: u32,
    /// ACK every this many in-order segments (1: every segment).
    pub delayed_ack: u32,
    /// The longest a delayed ACK waits.
    pub delayed_ack_timeout: Duration,
    /// The least retransmission timeout.
    pub rto_min: Duration,
    /// The greatest retransmission timeout (at most 1000s).
    pub rto_max: Duration,
    /// DCTCP's EWMA gain g, in (0, 1].
    pub dctcp_g: f64,
    /// The receiver's advertised window (Linux: up to `tcp_rmem`'s 6 MB by autotuning).
    pub rwnd: ByteSize,
    /// SACK on both ends (off: NewReno recovery, RFC 6582).
    pub sack: bool,
    /// The slow-start threshold a flow starts with (none: slow start until a loss or a mark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_ssthresh: Option<ByteSize>,
    /// DCTCP's alpha at a flow's start (RFC 8257 §4.2; Linux's `dctcp_alpha_on_init`).
    pub dctcp_alpha: f64,
    /// DCTCP's answer to a loss: `"halve"` (RFC 8257 §3.5, Linux) or `"alpha"` (ns-3).
    pub dctcp_loss: DctcpLoss,
    /// What a loss halves for ssthresh (Reno, and DCTCP's halving): `"flight"` (RFC 5681, the
    /// data outstanding) or `"window"` (Linux's `tcp_reno_ssthresh`; a timeout keeps the
    /// ssthresh set in the same window of data, `tcp_enter_loss`; `transport/tcp.rs`).
    pub ssthresh_from: SsthreshFrom,
    /// How slow start grows the window on an ACK: `"abc"` (RFC 3465's byte counting, at most
    /// two segments per ACK) or `"per_ack"` (one segment per ACK of new data, Linux 2.6 with
    /// `tcp_abc` 0; `transport/tcp.rs`).
    pub slow_start: SlowStart,
    /// The window grows only while it limits the sender, as Linux's `tcp_is_cwnd_limited`: in
    /// slow start up to twice the most segments outstanding in the last window of data, and in
    /// congestion avoidance only when the window, not the host's queue (`host.tsq`) or the
    /// application, stopped the last send (`transport/tcp.rs`).
    pub grow_when_limited: bool,
    /// Proportional rate reduction in fast recovery (RFC 6937).
    pub prr: bool,
    /// PRR's growth below ssthresh: `"ssrb"` (RFC 6937's slow start reduction bound, one
    /// segment more than was delivered per ACK) or `"linux"` (`tcp_cwnd_reduction` since 5.19:
    /// what was delivered, one more only on an ACK that advanced SND.UNA without a new loss;
    /// `transport/tcp.rs`).
    pub prr_bound: PrrBound,
    /// Linux's hybrid slow start (HyStart, `transport/hystart.rs`): with `kind = "cubic"`, slow
    /// start ends at the first ACK train longer than half the least round trip, or a round trip
    /// grown by 4-16 ms, once the window is 16 segments.
    pub hystart: bool,
    /// How CUBIC grows the window in congestion avoidance (`kind = "cubic"`): `"rfc"` (RFC
    /// 9438), `"linux"` (`tcp_cubic.c`: also at least 5% a round trip while no W_max is
    /// known, before the first loss and after a timeout) or `"linux-2.6"` (2.6.26's: the RFC's,
    /// and a timeout forgets W_max; `transport/cubic.rs`).
    pub cubic_growth: CubicGrowth,
    /// ACK each of a connection's first `quickack` data segments at once, whatever
    /// `delayed_ack` says, and the next 16 after a duplicate segment (Linux's quickack mode).
    pub quickack: u32,
    /// ACK a segment shorter than the MSS at once (Linux, when the application reads it).
    pub push_ack: bool,
    /// RACK's loss detection (RFC 8985, Linux's reordering window): a segment or retransmission
    /// sent before one now delivered is lost (`transport/tcp.rs`).
    pub rack: bool,
    /// Tail loss probes (RFC 8985 §7, Linux): a flow whose ACKs stop probes with one segment
    /// two round trips later instead of waiting for the RTO (`transport/tcp.rs`).
    pub tlp: bool,
    /// How the RTO follows the round trip: `"rfc6298"` (max(SRTT + 4 RTTVAR, `rto_min`)) or
    /// `"linux"` (SRTT + a deviation never below `rto_min`, `tcp_rtt_estimator`).
    pub rto_estimator: RtoEstimator,
    /// A connection starts with the round-trip sample of its handshake (SYN and SYN-ACK over
    /// the empty shortest path), as one opened before its data does: its RTO and tail loss
    /// probe then follow that round trip from the first segment (`sim/host.rs`).
    pub handshake_rtt: bool,
    /// Resending the oldest unacknowledged segment restarts the RTO, as Linux's
    /// `tcp_xmit_retransmit_queue` does: a hole resent in fast recovery has a whole RTO to be
    /// acknowledged (off: RFC 6298, which restarts the timer only when new data is acknowledged).
    pub resend_restarts_rto: bool,
    /// The kernel's clock tick, on which the sender's timers (RTO, loss probe, RACK) fire, as
    /// Linux's jiffies do: 4 ms at HZ=250, 1 ms at HZ=1000 (0: exact).
    pub timer_tick: Duration,
    /// The named preset the other fields were filled from (`transport/presets.rs`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::transport::presets::schema")]
    pub preset: Option<String>,
    /// Receiver reorder shim below TCP (default: on for Presto, off otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_shim: Option<bool>,
    /// The reorder shim releases what it holds when no hole has filled for this long.
    pub reorder_timeout: Duration,
    /// The PLTS host agent: raise the duplicate-ACK threshold when reordering is detected.
    pub adaptive_dupack_threshold: bool,
    /// The highest `adaptive_dupack_threshold` raises it to.
    pub max_dupack_threshold: u32,
}

impl Default for TransportSpec {
    fn default() -> Self {
        TransportSpec {
            kind: Kind::Tcp,
            mss: 1460,
            mss_min: None,
            initial_window: 10,
            dupack_threshold: 3,
            delayed_ack: 1,
            delayed_ack_timeout: Duration(40 * PS_PER_US),
            rto_min: Duration(10 * PS_PER_MS),
            rto_max: Duration(PS_PER_S),
            dctcp_g: 1.0 / 16.0,
            rwnd: ByteSize(6 << 20),
            sack: true,
            initial_ssthresh: None,
            dctcp_alpha: 1.0,
            dctcp_loss: DctcpLoss::Halve,
            ssthresh_from: SsthreshFrom::Flight,
            slow_start: SlowStart::Abc,
            grow_when_limited: false,
            prr: false,
            prr_bound: PrrBound::Ssrb,
            hystart: false,
            cubic_growth: CubicGrowth::Rfc,
            quickack: 0,
            push_ack: false,
            rack: false,
            tlp: false,
            rto_estimator: RtoEstimator::Rfc6298,
            handshake_rtt: false,
            resend_restarts_rto: false,
            timer_tick: Duration(0),
            preset: None,
            reorder_shim: None,
            reorder_timeout: Duration(100 * PS_PER_US),
            adaptive_dupack_threshold: false,
            max_dupack_threshold: 100,
        }
    }
}

pub use crate::workload::hosts::{Concurrency, HostSet, Share};
/// Where open-loop flows go: any other host, or only hosts in another rack or pod.
pub use crate::workload::pattern::Pattern;
pub use crate::workload::spec::{WorkloadKind, WorkloadSpec};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Width of the time-series bins (goodput per service, link bytes).
    #[serde(default = "default_bin")]
    pub bin: Duration,
    /// Sample every switch port's queue length this often (DRILL samples every 10 us); off by
    /// default because the samples table grows with ports x samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_interval: Option<Duration>,
    /// Keep every link's bytes per bin as a table (`link_timeseries`); the per-tier summaries
    /// (utilisation distribution, uplink split fairness) are computed either way.
    #[serde(default)]
    pub link_timeseries: bool,
    /// Flows of at most this many bytes are "short" in the FCT report (DCTCP, CONGA: 100 KB).
    #[serde(default = "default_short_flow")]
    pub short_flow: ByteSize,
    /// Flows of at least this many bytes are "long" (CONGA: 10 MB).
    #[serde(default = "default_long_flow")]
    pub long_flow: ByteSize,
    /// Flows (by id) whose every packet event goes into the `trace` table (`metrics/trace.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<u32>,
    /// Write the traced flows' packets as `trace.pcap` in the run folder, as a capture at this
    /// end of each flow would see them (`python/clos/results/pcap.py`); the core only checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap: Option<Vantage>,
}

/// Where a packet capture of a traced flow is taken (`output.pcap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Vantage {
    /// On the sending host: data as TCP sends it, ACKs as they arrive.
    Sender,
    /// On the receiving host: data as it arrives (CE marks and all), ACKs as they leave.
    Receiver,
}

fn default_short_flow() -> ByteSize {
    ByteSize(100_000)
}

fn default_long_flow() -> ByteSize {
    ByteSize(10_000_000)
}

fn default_bin() -> Duration {
    Duration(PS_PER_MS)
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            bin: default_bin(),
            queue_interval: None,
            link_timeseries: false,
            short_flow: default_short_flow(),
            long_flow: default_long_flow(),
            trace: Vec::new(),
            pcap: None,
        }
    }
}

/// serde's "unknown field `schem`, expected one of `scheme`, ..." (or "unknown variant"), with the
/// nearest expected name put first when one is close: "did you mean `scheme`?".
fn did_you_mean(msg: &str) -> String {
    let (what, rest) = match (msg.strip_prefix("unknown field `"), msg.strip_prefix("unknown variant `")) {
        (Some(rest), _) => ("field", rest),
        (_, Some(rest)) => ("value", rest),
        _ => return msg.to_string(),
    };
    let Some((given, expected)) = rest.split_once("`, expected one of ") else { return msg.to_string() };
    let nearest = expected
        .split(", ")
        .map(|e| e.trim_matches('`'))
        .map(|e| (strsim::damerau_levenshtein(given, e), e))
        .min_by_key(|&(distance, _)| distance)
        .filter(|&(distance, _)| distance <= (given.len() / 3).max(2));
    match nearest {
        Some((_, name)) => format!("unknown {what} `{given}`: did you mean `{name}`? (expected one of {expected})"),
        None => msg.to_string(),
    }
}

impl Scenario {
    /// Parse JSON, naming the field at fault on error.
    pub fn from_json(json: &str) -> Result<Scenario> {
        let mut value: serde_json::Value = serde_json::from_str(json).map_err(|e| bad("scenario", e.to_string()))?;
        crate::transport::presets::apply(&mut value)?;
        let mut s: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." || path.is_empty() { "scenario".to_string() } else { path };
            // serde_json appends a JSON position; users wrote TOML, so it would only mislead.
            let msg = e.into_inner().to_string();
            let mut msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            // Failures name nodes, not numbers: say how (docs/failures.md).
            if field.starts_with("failures") && (field.contains(".link") || field.ends_with(".switch")) && msg.contains("expected a string") {
                msg.push_str(": a node's name, e.g. \"tor0\", \"agg1\", \"spine0\" or \"h3\" (docs/failures.md)");
            }
            bad(field, did_you_mean(&msg))
        })?;
        s.normalize()?;
        Ok(s)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a scenario always serialises")
    }

    /// Check cross-field rules and fill defaults in.
    pub fn normalize(&mut self) -> Result<()> {
        if let Some(n) = self.run.threads {
            if !(1..=1024).contains(&n) {
                return Err(bad("run.threads", format!("must be between 1 and 1024, got {n}")));
            }
        }
        if let Some(n) = self.run.partitions {
            if self.run.threads.is_none() {
                return Err(bad("run.partitions", "applies to the partitioned engine; set run.threads too (or remove it)"));
            }
            if n == 0 {
                return Err(bad("run.partitions", "must be at least 1"));
            }
        }
        self.topology.normalize()?;
        self.routing.normalize()?;
        if !self.failures.is_empty() {
            self.convergence.get_or_insert_with(ConvergenceSpec::default);
        }
        if let Some(c) = &mut self.convergence {
            c.normalize()?;
            let localflow = matches!(self.routing.scheme, Scheme::Localflow | Scheme::LocalflowNs);
            if c.coalesce.is_some() && !localflow {
                return Err(bad(
                    "convergence.coalesce",
                    "applies to LocalFlow's rule rewrites only; set routing.scheme = \"localflow\" (or \"localflow-ns\") or remove it",
                ));
            }
            // The strategy applies to LocalFlow's rounds too (control/rewrites.rs). Coalescing
            // drops a backlogged switch's older in-place writes; the other strategies send each
            // round whole (a version, or a tier's turn), and a dropped part would break it.
            let update = c.update.map_or("unordered", |u| u.name());
            if localflow && c.mode == crate::failures::ConvergenceMode::Controller && c.coalesce == Some(true) && update != "unordered" {
                return Err(bad(
                    "convergence.coalesce",
                    format!("applies to update = \"unordered\" only (under \"{update}\" the controller sends each round whole); remove it or set update = \"unordered\""),
                ));
            }
        }
        if !self.failures.is_empty() {
            crate::failures::resolve(&self.failures, &self.topology.build()?, self.seed)?;
        }
        self.transport.reorder_shim.get_or_insert(self.routing.scheme == Scheme::Presto);
        let t = &self.transport;
        if t.reorder_timeout.0 == 0 {
            return Err(bad("transport.reorder_timeout", "must be positive"));
        }
        if t.max_dupack_threshold < t.dupack_threshold {
            return Err(bad("transport.max_dupack_threshold", format!("must be at least transport.dupack_threshold ({})", t.dupack_threshold)));
        }
        if !(64..=9000).contains(&t.mss) {
            return Err(bad("transport.mss", format!("must be between 64 and 9000 bytes, got {}", t.mss)));
        }
        if let Some(lo) = t.mss_min {
            if !(64..=t.mss).contains(&lo) {
                return Err(bad("transport.mss_min", format!("must be between 64 bytes and transport.mss ({}), got {lo}", t.mss)));
            }
            if matches!(self.routing.scheme, Scheme::Presto | Scheme::Localflow | Scheme::LocalflowNs) {
                return Err(bad(
                    "transport.mss_min",
                    format!("{} splits flows by byte offsets computed from one fixed MSS; per-flow MSS works with the per-packet and per-flow schemes. Remove transport.mss_min or pick another scheme", self.routing.scheme.name()),
                ));
            }
        }
        for (v, f) in [(t.initial_window, "initial_window"), (t.dupack_threshold, "dupack_threshold"), (t.delayed_ack, "delayed_ack")] {
            if v == 0 {
                return Err(bad(format!("transport.{f}"), "must be at least 1"));
            }
        }
        if t.rto_min.0 == 0 || t.rto_max < t.rto_min {
            return Err(bad("transport.rto_min", "must be positive and no larger than transport.rto_max"));
        }
        if t.timer_tick.0 > MAX_DELAY.0 {
            return Err(bad("transport.timer_tick", format!("{} is beyond the {MAX_DELAY} a clock tick may take (Linux's is 1-10 ms)", t.timer_tick)));
        }
        if t.rto_max.0 > MAX_DELAY.0 * 1000 {
            // Timers are set in 64-bit picoseconds past now; RFC 6298 (2.5) asks for at least 60 s.
            return Err(bad("transport.rto_max", format!("{} is beyond the {}s a timer may wait", t.rto_max, MAX_DELAY.0 * 1000 / PS_PER_S)));
        }
        if !(0.0..=1.0).contains(&t.dctcp_alpha) {
            return Err(bad("transport.dctcp_alpha", format!("must be in [0, 1], got {}", t.dctcp_alpha)));
        }
        if t.initial_ssthresh.is_some_and(|b| b.0 < 2 * t.mss as u64) {
            return Err(bad("transport.initial_ssthresh", format!("must be at least two segments ({} B), or left out for none", 2 * t.mss)));
        }
        if t.rwnd.0 < t.mss as u64 {
            return Err(bad("transport.rwnd", format!("{} B is less than one segment (transport.mss = {} B)", t.rwnd.0, t.mss)));
        }
        if !(t.dctcp_g > 0.0 && t.dctcp_g <= 1.0) {
            return Err(bad("transport.dctcp_g", format!("must be in (0, 1], got {}", t.dctcp_g)));
        }
        if t.kind == Kind::Dctcp && self.switch.ecn_threshold.is_none() {
            return Err(bad(
                "switch.ecn_threshold",
                "DCTCP needs switches that mark ECN; set a threshold, e.g. \"97.5KB\" (K = 65 packets, DCTCP's value for 10 Gb/s)",
            ));
        }
        if let Some(k) = self.switch.ecn_threshold {
            if k >= self.switch.buffer {
                return Err(bad(
                    "switch.ecn_threshold",
                    format!("{} B is not below the buffer ({} B): nothing would ever be marked", k.0, self.switch.buffer.0),
                ));
            }
        }
        let min_frame = crate::packet::wire::frame(t.mss as u64, 2);
        if self.switch.buffer.0 < min_frame {
            return Err(bad("switch.buffer", format!("{} B cannot hold one full-size packet ({min_frame} B)", self.switch.buffer.0)));
        }
        if self.switch.alpha.is_some() && self.switch.pool.is_none() {
            return Err(bad("switch.alpha", "applies to a shared buffer: set switch.pool (bytes per switch) too"));
        }
        if let Some(pool) = self.switch.pool {
            let a = *self.switch.alpha.get_or_insert(2.0);
            if !(a.is_finite() && a > 0.0 && a <= 64.0) {
                return Err(bad("switch.alpha", format!("must be in (0, 64], got {a}")));
            }
            if pool.0 < min_frame {
                return Err(bad("switch.pool", format!("{} B cannot hold one full-size packet ({min_frame} B)", pool.0)));
            }
        }
        self.validate_classes()?;
        let queues = crate::workload::tenants::SwitchQueues {
            tenant_queues: self.switch.tenant_queues,
            classes: !self.switch.classes.is_empty(),
            buffer: self.switch.buffer,
        };
        crate::workload::tenants::validate(&self.tenants, &queues, &self.workload, min_frame)?;
        self.validate_multicast()?;
        if self.switch.buffer.0 > crate::fabric::MAX_BUFFER {
            return Err(bad(
                "switch.buffer",
                format!("{} B is more than a port can model ({} B, 4 GiB); real switches have tens of MB", self.switch.buffer.0, crate::fabric::MAX_BUFFER),
            ));
        }
        if let Some(b) = self.host.nic_buffer {
            if self.host.qdisc != Qdisc::Fq {
                return Err(bad("host.nic_buffer", "applies to qdisc = \"fq\" only (a \"fifo\" host's NIC queue is bounded per flow by host.tsq)"));
            }
            if b.0 < min_frame {
                return Err(bad(
                    "host.nic_buffer",
                    format!("{} B cannot hold one full-size packet ({min_frame} B); two are the least that keeps the link busy", b.0),
                ));
            }
        }
        if let Some(q) = self.host.queue {
            if self.host.qdisc != Qdisc::Fifo {
                return Err(bad("host.queue", "applies to qdisc = \"fifo\" only (under \"fq\" the NIC queue holds host.nic_buffer)"));
            }
            if q.0 < min_frame {
                return Err(bad("host.queue", format!("{} B cannot hold one full-size packet ({min_frame} B)", q.0)));
            }
        }
        if let Some(j) = self.host.jitter.filter(|j| j.0 > MAX_DELAY.0) {
            return Err(bad("host.jitter", format!("{j} is beyond the {MAX_DELAY} a host may take to send (software takes microseconds)")));
        }
        if self.host.qdisc == Qdisc::Fq && self.host.tsq != Tsq::Auto {
            return Err(bad("host.tsq", "applies to qdisc = \"fifo\" only: under \"fq\" a flow never has more than host.nic_buffer in the NIC queue"));
        }
        if self.output.bin.0 == 0 {
            return Err(bad("output.bin", "must be positive"));
        }
        if self.output.trace.len() > crate::metrics::trace::MAX_TRACED {
            return Err(bad(
                "output.trace",
                format!("lists {} flows; a run traces at most {}: pick the flows to read", self.output.trace.len(), crate::metrics::trace::MAX_TRACED),
            ));
        }
        if self.output.pcap.is_some() && self.output.trace.is_empty() {
            return Err(bad("output.pcap", "captures the flows output.trace lists, and it lists none: add output.trace = [flow ids]"));
        }
        if self.output.queue_interval.is_some_and(|d| d.0 == 0) {
            return Err(bad("output.queue_interval", "must be positive (e.g. \"10us\"), or left out to sample nothing"));
        }
        if self.output.short_flow >= self.output.long_flow {
            return Err(bad("output.short_flow", format!("{} B must be below output.long_flow ({} B)", self.output.short_flow.0, self.output.long_flow.0)));
        }
        if self.max_time.is_some_and(|m| m.0 == 0) {
            return Err(bad("max_time", "must be positive"));
        }
        let stop = match self.stop {
            Stop::At(d) if d.0 == 0 => return Err(bad("stop", "must be after the start (e.g. \"20ms\"), or \"all_flows_done\"")),
            Stop::At(d) => Some(d),
            Stop::AllFlowsDone => None,
        };
        // Each time bin and each queue sample is an event that visits every link: a period of a
        // few picoseconds (a typo for microseconds) would run for days and fill memory.
        let limit = self.time_limit();
        for (field, every) in [("output.bin", Some(self.output.bin)), ("output.queue_interval", self.output.queue_interval)] {
            if let Some(every) = every.filter(|e| limit.0 / e.0 > MAX_PERIODS) {
                let least = Duration(limit.0.div_ceil(MAX_PERIODS));
                return Err(bad(field, format!("{every} over the run's {limit} is more than {MAX_PERIODS} periods, each visiting every link; use at least {least}, or a shorter stop or max_time")));
            }
        }
        match (&self.service, is_no_workload(&self.workload)) {
            (None, true) => return Err(bad("workload", "is required: add a [workload] table (docs/workloads.md), or a [service] (docs/tenants.md)")),
            (Some(_), true) => {}
            _ => self.workload.normalize("workload", stop)?,
        }
        if let Some(svc) = &self.service {
            svc.validate(self.topology.build()?.n_hosts as u32, &self.tenants, stop)?;
        }
        if let Some(d) = self.directory.as_mut() {
            d.normalize(&self.topology.build()?, stop, limit)?;
            if d.channel && !self.convergence.as_ref().is_some_and(|c| c.mode == crate::failures::ConvergenceMode::Controller) {
                return Err(bad(
                    "directory.channel",
                    "needs [convergence] mode = \"controller\", whose latency, rule_rate and update strategy time the push; add it or remove directory.channel",
                ));
            }
        }
        memory::guard(self)
    }

    /// Simulated time a run may not pass: `max_time`, or when it is left out the fixed `stop`
    /// time, or 10 s for `all_flows_done`.
    pub fn time_limit(&self) -> Duration {
        match (self.max_time, self.stop) {
            (Some(m), _) => m,
            (None, Stop::At(d)) => d,
            (None, Stop::AllFlowsDone) => DEFAULT_MAX_TIME,
        }
    }

    /// `switch.classes`, `quantum` and the workloads' `class`.
    /// `[multicast]` on a fat tree or VL2, and every multicast workload naming one of its groups.
    fn validate_multicast(&mut self) -> Result<()> {
        let parts = crate::workload::parts_of(&self.workload);
        let named: Vec<(String, Option<String>)> =
            parts.iter().filter(|(_, w)| w.kind == crate::workload::spec::WorkloadKind::Multicast).map(|(p, w)| (p.clone(), w.group.clone())).collect();
        let Some(m) = self.multicast.as_mut() else {
            if let Some((path, _)) = named.first() {
                return Err(bad(
                    format!("{path}.group"),
                    "names a multicast group but the scenario has no [multicast] table: add one with [[multicast.groups]]",
                ));
            }
            return Ok(());
        };
        m.normalize()?;
        match self.topology.kind {
            TopologyKind::FatTree | TopologyKind::Vl2 => {}
            TopologyKind::LeafSpine => {
                return Err(bad(
                    "multicast",
                    "needs topology.kind = \"fat_tree\" or \"vl2\": packet-level multicast follows their partitioned trees (leaf-spine multicast is not built)",
                ))
            }
        }
        if self.directory.is_some() {
            return Err(bad("multicast", "cannot run with [directory] (the VL2 agent does not resolve group addresses): remove one of them"));
        }
        for (path, group) in &named {
            match group {
                Some(g) if m.group(g).is_some() => {}
                Some(g) => {
                    let names: Vec<&str> = m.groups.iter().map(|g| g.name.as_str()).collect();
                    return Err(bad(format!("{path}.group"), format!("{g:?} is not a group of [[multicast.groups]] ({})", names.join(", "))));
                }
                None => return Err(bad(format!("{path}.group"), "is required for a multicast workload: the name of a [[multicast.groups]] table")),
            }
        }
        Ok(())
    }

    fn validate_classes(&self) -> Result<()> {
        let sw = &self.switch;
        if sw.classes.len() > MAX_CLASSES {
            return Err(bad("switch.classes", format!("{} classes; a port has at most {MAX_CLASSES} queues (802.1Q's eight)", sw.classes.len())));
        }
        for (i, c) in sw.classes.iter().enumerate() {
            if c.weight == 0 || c.weight > 1000 {
                return Err(bad(format!("switch.classes[{i}].weight"), format!("must be in 1..=1000, got {}", c.weight)));
            }
            if c.priority as usize >= MAX_CLASSES {
                return Err(bad(format!("switch.classes[{i}].priority"), format!("must be below {MAX_CLASSES}, got {}", c.priority)));
            }
        }
        if let Some(q) = sw.quantum {
            if sw.classes.is_empty() && !sw.tenant_queues {
                return Err(bad("switch.quantum", "applies to DWRR between classes: give switch.classes too (or switch.tenant_queues)"));
            }
            if q.0 == 0 || q.0 > crate::fabric::MAX_BUFFER {
                return Err(bad("switch.quantum", format!("must be positive and at most {} B, got {} B", crate::fabric::MAX_BUFFER, q.0)));
            }
        }
        let classes = sw.classes.len().max(1);
        for (path, part) in crate::workload::parts_of(&self.workload) {
            if let Some(c) = part.class {
                if c as usize >= classes {
                    let fix = if sw.classes.is_empty() {
                        "switch.classes is not set (one FIFO per port): add [[switch.classes]] tables".to_string()
                    } else {
                        format!("switch.classes has {} (0 to {})", classes, classes - 1)
                    };
                    return Err(bad(format!("{path}.class"), format!("class {c} does not exist: {fix}")));
                }
            }
        }
        Ok(())
    }

    pub fn tcp_params(&self) -> TcpParams {
        let t = &self.transport;
        TcpParams {
            mss: t.mss,
            initial_window: t.initial_window,
            dupack_threshold: t.dupack_threshold,
            delayed_ack: t.delayed_ack,
            delayed_ack_timeout: t.delayed_ack_timeout.0,
            // The kernel holds a route's rto_min in jiffies (`msecs_to_jiffies` rounds up):
            // on a 4 ms tick, 10 ms is 12.
            rto_min: match t.timer_tick.0 {
                0 => t.rto_min.0,
                tick => t.rto_min.0.div_ceil(tick) * tick,
            },
            rto_max: t.rto_max.0,
            dctcp_g: (t.kind == Kind::Dctcp).then_some(t.dctcp_g),
            adaptive_dupthresh: t.adaptive_dupack_threshold.then_some(t.max_dupack_threshold),
            mss_min: t.mss_min,
            mss_salt: crate::rng::mix64(self.seed ^ 0x6d73_735f_7361_6c74), // "mss_salt"
            rwnd: t.rwnd.0,
            sack: t.sack,
            initial_ssthresh: t.initial_ssthresh.map_or(u64::MAX, |b| b.0),
            dctcp_alpha: t.dctcp_alpha,
            dctcp_loss: t.dctcp_loss,
            ssthresh_from: t.ssthresh_from,
            slow_start: t.slow_start,
            grow_when_limited: t.grow_when_limited,
            prr: t.prr,
            prr_bound: t.prr_bound,
            hystart: t.hystart,
            cubic_growth: t.cubic_growth,
            cubic: t.kind == Kind::Cubic,
            quickack: t.quickack,
            push_ack: t.push_ack,
            rack: t.rack,
            tlp: t.tlp,
            rto_estimator: t.rto_estimator,
            handshake_rtt: t.handshake_rtt,
            resend_restarts_rto: t.resend_restarts_rto,
            timer_tick: t.timer_tick.0,
        }
    }
}

impl TopologySpec {
    fn given(&self) -> [(&'static str, bool, &'static [TopologyKind]); 16] {
        use TopologyKind::*;
        [
            ("preset", self.preset.is_some(), &[Vl2]),
            ("tors", self.tors.is_some(), &[Vl2]),
            ("servers_per_tor", self.servers_per_tor.is_some(), &[Vl2]),
            ("aggs", self.aggs.is_some(), &[Vl2]),
            ("intermediates", self.intermediates.is_some(), &[Vl2]),
            ("d_a", self.d_a.is_some(), &[Vl2]),
            ("d_i", self.d_i.is_some(), &[Vl2]),
            ("k", self.k.is_some(), &[FatTree]),
            ("remove_cores", self.remove_cores.is_some(), &[FatTree]),
            ("wiring", self.wiring.is_some(), &[FatTree]),
            ("leaves", self.leaves.is_some(), &[LeafSpine]),
            ("spines", self.spines.is_some(), &[LeafSpine]),
            ("hosts_per_leaf", self.hosts_per_leaf.is_some(), &[LeafSpine]),
            ("links_per_pair", self.links_per_pair.is_some(), &[LeafSpine]),
            ("striping", self.striping.is_some(), &[LeafSpine]),
            ("oversubscription", self.oversubscription.is_some(), &[LeafSpine, Vl2]),
        ]
    }

    /// Oversubscription by ratio (leaf-spine and VL2): the fabric rate at which a ToR's hosts
    /// offer `ratio` times its uplink capacity. Also accepts a `fabric_rate` that agrees (a
    /// normalised scenario carries both).
    fn apply_oversubscription(&mut self, ratio: f64) -> Result<()> {
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(bad("topology.oversubscription", format!("must be a positive ratio such as 2.0 (for 2:1), got {ratio}")));
        }
        let host = self.host_rate.unwrap().0 as f64;
        let (down, uplinks) = match self.kind {
            TopologyKind::LeafSpine => (self.hosts_per_leaf.unwrap() as f64 * host, (self.spines.unwrap() * self.links_per_pair.unwrap()) as f64),
            // VL2 §4.1: every ToR has two uplinks.
            TopologyKind::Vl2 => (self.servers_per_tor.unwrap() as f64 * host, 2.0),
            TopologyKind::FatTree => unreachable!("rejected by `given`"),
        };
        let rate = Rate((down / (ratio * uplinks)).round() as u64);
        match self.fabric_given {
            Some(given) if given != rate => Err(bad(
                "topology.oversubscription",
                format!("{ratio} asks for a fabric rate of {rate}, but topology.fabric_rate is {given}; give one of the two"),
            )),
            _ => {
                self.fabric_rate = Some(rate);
                Ok(())
            }
        }
    }

    fn normalize(&mut self) -> Result<()> {
        self.fabric_given = self.fabric_rate;
        let kind_name = serde_json::to_value(self.kind).unwrap().as_str().unwrap().to_string();
        for (field, present, kinds) in self.given() {
            if present && !kinds.contains(&self.kind) {
                let owner = serde_json::to_value(kinds[0]).unwrap();
                return Err(bad(format!("topology.{field}"), format!("applies to {} fabrics, not {kind_name}; remove it", owner.as_str().unwrap())));
            }
        }
        let need = |v: Option<u32>, f: &str| v.ok_or_else(|| bad(format!("topology.{f}"), format!("is required for a {kind_name} fabric")));
        match self.kind {
            TopologyKind::Vl2 => {
                let base = match self.preset.as_deref() {
                    Some("testbed") => {
                        self.host_rate.get_or_insert(Rate(1_000_000_000));
                        self.fabric_rate.get_or_insert(Rate(10_000_000_000));
                        vl2::Vl2::TESTBED
                    }
                    Some(other) => return Err(bad("topology.preset", format!("unknown preset `{other}`; the VL2 presets are: {}", VL2_PRESETS.join(", ")))),
                    None if self.d_a.is_some() || self.d_i.is_some() => {
                        vl2::Vl2::from_degrees(need(self.d_a, "d_a")?, need(self.d_i, "d_i")?, need(self.servers_per_tor, "servers_per_tor")?)?
                    }
                    None => vl2::Vl2 {
                        tors: need(self.tors, "tors")?,
                        servers_per_tor: need(self.servers_per_tor, "servers_per_tor")?,
                        aggs: need(self.aggs, "aggs")?,
                        intermediates: need(self.intermediates, "intermediates")?,
                    },
                };
                self.tors = Some(self.tors.unwrap_or(base.tors));
                self.servers_per_tor = Some(self.servers_per_tor.unwrap_or(base.servers_per_tor));
                self.aggs = Some(self.aggs.unwrap_or(base.aggs));
                self.intermediates = Some(self.intermediates.unwrap_or(base.intermediates));
                let host = *self.host_rate.get_or_insert(Rate(1_000_000_000));
                // VL2 §4.1: server links an order of magnitude slower than switch links.
                self.fabric_rate.get_or_insert(Rate(host.0 * 10));
            }
            TopologyKind::FatTree => {
                need(self.k, "k")?;
                self.remove_cores.get_or_insert(0);
                let host = *self.host_rate.get_or_insert(Rate(10_000_000_000));
                self.fabric_rate.get_or_insert(host);
            }
            TopologyKind::LeafSpine => {
                need(self.leaves, "leaves")?;
                need(self.spines, "spines")?;
                need(self.hosts_per_leaf, "hosts_per_leaf")?;
                self.links_per_pair.get_or_insert(1);
                let host = *self.host_rate.get_or_insert(Rate(10_000_000_000));
                self.fabric_rate.get_or_insert(host);
            }
        }
        if let Some(ratio) = self.oversubscription {
            self.apply_oversubscription(ratio)?;
        }
        for (r, f) in [(self.host_rate, "host_rate"), (self.fabric_rate, "fabric_rate")] {
            if r.unwrap().0 < 1_000 {
                return Err(bad(format!("topology.{f}"), "must be at least 1Kbps"));
            }
        }
        let delay = *self.link_delay.get_or_insert(Duration(PS_PER_US));
        if delay.0 > MAX_DELAY.0 {
            // Event times are picoseconds in 64 bits: delays of days would overflow them.
            return Err(bad("topology.link_delay", format!("{delay} is beyond the {MAX_DELAY} a link may take (datacenter links take microseconds)")));
        }
        if let Some(j) = self.link_jitter.filter(|j| j.0 > MAX_DELAY.0 / 1000) {
            return Err(bad(
                "topology.link_jitter",
                format!("a mean of {j} is beyond the {} a link's timing noise may take (software switches show microseconds)", Duration(MAX_DELAY.0 / 1000)),
            ));
        }
        memory::guard_fabric(self)?;
        self.build().map(|_| ())
    }

    /// Build the fabric (after `normalize`).
    pub fn build(&self) -> Result<Topology> {
        let (h, f, d) = (self.host_rate.unwrap(), self.fabric_rate.unwrap(), self.link_delay.unwrap().0);
        let mut b = match self.kind {
            TopologyKind::Vl2 => vl2::describe(
                &vl2::Vl2 {
                    tors: self.tors.unwrap(),
                    servers_per_tor: self.servers_per_tor.unwrap(),
                    aggs: self.aggs.unwrap(),
                    intermediates: self.intermediates.unwrap(),
                },
                h,
                f,
                d,
            )?,
            TopologyKind::FatTree => fat_tree::describe_wired(
                &fat_tree::FatTree { k: self.k.unwrap(), remove_cores: self.remove_cores.unwrap() },
                self.wiring.unwrap_or_default(),
                h,
                f,
                d,
            )?,
            TopologyKind::LeafSpine => {
                let c = leaf_spine::LeafSpine {
                    leaves: self.leaves.unwrap(),
                    spines: self.spines.unwrap(),
                    hosts_per_leaf: self.hosts_per_leaf.unwrap(),
                    links_per_pair: self.links_per_pair.unwrap(),
                };
                let mut b = leaf_spine::describe(&c, h, f, d)?;
                if self.striping == Some(Striping::Imbalanced) {
                    leaf_spine::stripe_imbalanced(&mut b, &c)?;
                }
                b
            }
        };
        for (i, o) in self.links.iter().flatten().enumerate() {
            let field = format!("topology.links[{i}]");
            let mut ends = [0; 2];
            for (j, name) in o.between.iter().enumerate() {
                ends[j] = b.find(name).ok_or_else(|| {
                    bad(format!("{field}.between"), format!("no node named \"{name}\" (nodes are named like h0, tor0, agg0, spine0, core0, int0)"))
                })?;
            }
            if ends[0] == ends[1] {
                return Err(bad(format!("{field}.between"), "names the same node twice"));
            }
            if o.count.is_none() && o.rate.is_none() {
                return Err(bad(field, "give `count`, `rate` or both"));
            }
            if o.rate.is_some_and(|r| r.0 < 1_000) {
                return Err(bad(format!("{field}.rate"), "must be at least 1Kbps"));
            }
            let existed = b.set_links(ends[0], ends[1], o.count, o.rate);
            if existed == 0 && o.count.is_none() {
                return Err(bad(field, format!("there is no link between {} and {}; give `count` to add one", o.between[0], o.between[1])));
            }
        }
        let topo = b.build();
        if let Some(bad_host) = (0..topo.n_hosts).find(|&h| topo.ports_of(h as u32).len() != 1) {
            return Err(bad("topology.links", format!("host {} must keep exactly one link to its ToR", topo.nodes[bad_host].name)));
        }
        if let Some((a, z)) = topo.disconnected_tors() {
            return Err(bad(
                "topology.links",
                format!(
                    "{} cannot reach {}: the fabric is disconnected; keep at least one path between every pair of ToRs",
                    topo.nodes[a as usize].name, topo.nodes[z as usize].name
                ),
            ));
        }
        memory::check_hosts(topo.n_hosts as u64)?;
        Ok(topo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A misspelt field or value gets the nearest expected name, when one is near (at most a
    /// third of its letters, and at least 2, edited); a word near none gets the list alone.
    #[test]
    fn unknown_names_suggest_the_nearest() {
        let fields = "unknown field `schem`, expected one of `scheme`, `d`, `m`";
        assert_eq!(did_you_mean(fields), "unknown field `schem`: did you mean `scheme`? (expected one of `scheme`, `d`, `m`)");
        let values = "unknown variant `dctpc`, expected one of `tcp`, `dctcp`, `cubic`";
        assert!(did_you_mean(values).contains("did you mean `dctcp`?"), "a transposition is one edit");
        let far = "unknown field `zzzzzzzz`, expected one of `kind`, `mss`";
        assert_eq!(did_you_mean(far), far);
        assert_eq!(did_you_mean("invalid type: string"), "invalid type: string");
    }

    fn err(json: &str) -> String {
        Scenario::from_json(json).unwrap_err().to_string()
    }

    const OK: &str = r#"{"topology": {"kind": "vl2", "preset": "testbed"}, "workload": {"kind": "shuffle", "bytes": "1MB"}}"#;

    #[test]
    fn a_fixed_stop_past_ten_seconds_is_not_cut_short_by_a_default() {
        // VL2 §5.3 runs 120 s; the 10 s guard is for all_flows_done runs only, and an explicit
        // max_time still caps any run (tests and CI use it to shorten scenarios).
        let with = |extra: &str| Scenario::from_json(&OK.replacen('{', &format!("{{{extra}, "), 1)).unwrap();
        assert_eq!(with(r#""stop": "120s""#).time_limit(), Duration(120 * PS_PER_S));
        assert_eq!(Scenario::from_json(OK).unwrap().time_limit(), DEFAULT_MAX_TIME);
        assert_eq!(with(r#""stop": "120s", "max_time": "2ms""#).time_limit(), Duration(2 * PS_PER_MS));
        assert!(err(&OK.replacen('{', r#"{"max_time": "0s", "#, 1)).contains("max_time"));
    }

    #[test]
    fn values_out_of_range_or_mistyped_are_refused_with_the_fix() {
        let with = |extra: &str| Scenario::from_json(&OK.replacen('{', &format!("{{{extra}, "), 1)).unwrap();
        // Failures name nodes: a number there is answered with how to name one.
        let e = err(&OK.replacen('{', r#"{"failures": [{"at": "1ms", "link": [0, 4]}], "#, 1));
        assert!(e.starts_with("failures[0].link[0]: invalid type") && e.contains("\"tor0\""), "{e}");
        // A stop of zero is the scenario's own field's fault, not the workload's it would pass to.
        assert!(err(&OK.replacen('{', r#"{"stop": "0ms", "#, 1)).starts_with("stop: must be after the start"));
        // A bare number is seconds, rounded to the picosecond like any other time.
        assert_eq!(with(r#""stop": 0.02"#).time_limit(), Duration(20 * PS_PER_MS));
        assert!(err(&OK.replacen('{', r#"{"stop": 1e9, "#, 1)).contains("too large"));
        // One-nanosecond bins over the default 10 s guard would be 10^10 events, each over every link.
        let e = err(&OK.replacen('{', r#"{"output": {"bin": "1ns"}, "#, 1));
        assert!(e.starts_with("output.bin: 1ns over the run's 10s is more than 100000000 periods") && e.contains("at least 100ns"), "{e}");
        // Times are 64-bit picoseconds: delays and timers of days would overflow them.
        let fat = r#"{"topology": {"kind": "fat_tree", "k": 4, "link_delay": "2s"}, "workload": {"kind": "shuffle", "bytes": 1}}"#;
        assert!(err(fat).starts_with("topology.link_delay: 2s is beyond the 1s"));
        let noisy = r#"{"topology": {"kind": "fat_tree", "k": 4, "link_jitter": "5ms"}, "workload": {"kind": "shuffle", "bytes": 1}}"#;
        assert!(err(noisy).starts_with("topology.link_jitter: a mean of 5ms is beyond the 1ms"), "{}", err(noisy));
        assert!(err(&OK.replacen('{', r#"{"transport": {"rto_max": "2000s"}, "#, 1)).starts_with("transport.rto_max: 2000s is beyond the 1000s"));
    }

    #[test]
    fn defaults_are_filled_in() {
        let s = Scenario::from_json(OK).unwrap();
        assert_eq!(s.topology.tors, Some(4));
        assert_eq!(s.topology.host_rate, Some(Rate(1_000_000_000)));
        let round = Scenario::from_json(&s.to_json()).unwrap();
        assert_eq!(round.to_json(), s.to_json());
    }

    #[test]
    fn errors_name_the_field() {
        assert!(err(r#"{"topology": {"kind": "vl2", "preset": "testbed", "tor": 3}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .starts_with("topology.tor: unknown field `tor`: did you mean `tors`? (expected one of"));
        assert!(err(r#"{"topology": {"kind": "fat_tree", "k": -4}, "workload": {"kind": "shuffle", "bytes": 1}}"#).starts_with("topology.k:"));
        assert!(err(r#"{"topology": {"kind": "fat_tree", "k": 4, "spines": 2}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .starts_with("topology.spines: applies to leaf_spine"));
        assert!(err(r#"{"topology": {"kind": "vl2", "preset": "testbed"}, "workload": {"kind": "shuffle"}}"#).starts_with("workload.bytes: is required"));
        assert!(err(r#"{"topology": {"kind": "vl2", "preset": "testbed"}, "transport": {"kind": "dctcp"}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .starts_with("switch.ecn_threshold"));
        assert!(err(r#"{"topology": {"kind": "vl2", "preset": "testbed", "host_rate": "1 Gbit"}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .starts_with("topology.host_rate: unknown rate unit"));
        assert!(err(r#"{"topology": {"kind": "vl2", "preset": "testbed"}, "routing": {"scheme": "magic"}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .starts_with("routing.scheme: unknown variant `magic`"));
        // A port holds its buffer in four bytes (`fabric::MAX_BUFFER`): a larger one is refused,
        // not cut short.
        assert!(err(r#"{"topology": {"kind": "vl2", "preset": "testbed"}, "switch": {"buffer": "5GB"}, "workload": {"kind": "shuffle", "bytes": 1}}"#)
            .starts_with("switch.buffer: 5000000000 B is more than a port can model"));
        assert!(Scenario::from_json(
            r#"{"topology": {"kind": "vl2", "preset": "testbed"}, "switch": {"buffer": "4GB"}, "workload": {"kind": "shuffle", "bytes": 1}}"#
        )
        .is_ok());
    }
}
