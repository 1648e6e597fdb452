//! `[host]` as a scenario writes it: the discipline in front of each host's NIC and its limits.

use crate::units::{ByteSize, Duration};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// `[host]`: the hosts' egress between TCP and the NIC.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// What stands between TCP and the NIC: `fq` or `fifo`.
    #[serde(default)]
    pub qdisc: Qdisc,
    /// `fq`: bytes the NIC queue takes before data waits in the qdisc (default: two full frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_buffer: Option<ByteSize>,
    /// `fifo`: TCP small queues, a flow's bytes in the NIC queue.
    #[serde(default)]
    pub tsq: Tsq,
    /// `fifo`: the NIC queue's bound for data, bytes (none: unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<ByteSize>,
    /// The mean of the random time a host's software takes before its NIC can start a packet
    /// (exponential; none: the NIC starts at once, `sim/jitter.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Duration>,
}

/// The discipline in front of a host's NIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Qdisc {
    /// Linux `fq`: per-flow round robin, control packets first, a short NIC queue.
    #[default]
    Fq,
    /// One FIFO for everything, bounded per flow by `tsq`.
    Fifo,
}

/// TCP small queues: how many bytes of a flow's may sit in its host's NIC queue, as written:
/// `"auto"` (Linux's: 1/1024 s of the flow's pacing rate, at least two packets, at most 1 MB),
/// `"off"`, or a size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Tsq {
    #[default]
    Auto,
    Off,
    Bytes(ByteSize),
}

impl TryFrom<String> for Tsq {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Tsq::Auto),
            "off" => Ok(Tsq::Off),
            t => match crate::units::parse_bytes(t) {
                Ok(0) => Err("a limit of 0 bytes would never send: write \"off\" for no limit".into()),
                Ok(b) => Ok(Tsq::Bytes(ByteSize(b))),
                Err(e) => Err(format!("{e}; write \"auto\" (Linux's limit), \"off\", or a size such as \"256KB\"")),
            },
        }
    }
}

/// What `Tsq::try_from` accepts.
impl JsonSchema for Tsq {
    fn schema_name() -> Cow<'static, str> {
        "Tsq".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "\"auto\" (Linux's limit), \"off\" (none), or a size written as a string, such as \"256KB\".",
            // The enum for editors to offer; the pattern because the parser trims spaces.
            "anyOf": [
                {"enum": ["auto", "off"]},
                {"type": "string", "pattern": r"^\s*(?:auto|off)\s*$"},
                crate::units::size_text_schema(),
            ],
        })
    }
}

impl From<Tsq> for String {
    fn from(t: Tsq) -> String {
        match t {
            Tsq::Auto => "auto".into(),
            Tsq::Off => "off".into(),
            Tsq::Bytes(b) => format!("{}B", b.0),
        }
    }
}
