//! The `[routing]` table: which scheme, and its parameters.
//!
//! Every parameter is an optional field; a field that does not apply to the chosen scheme is
//! rejected by name, and [`RoutingSpec::normalize`] fills in the paper's default for the ones
//! that do, so `summary.json` records exactly what ran. [`PARAMS`] is the registry `clos schemes`
//! prints.

use super::Scheme;
use crate::error::{bad, Result};
use crate::fabric::Visibility;
use crate::units::{parse_duration, ByteSize, Duration, PS_PER_MS, PS_PER_NS, PS_PER_US};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// LocalFlow: how a split rule picks the subflow of a packet (LocalFlow §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SplitBy {
    /// Bits of the TCP sequence number: a retransmission takes its original's port (§5, and
    /// the paper's evaluation).
    #[default]
    Sequence,
    /// A per-rule packet counter at each switch: consecutive packets of a rule take the pattern's
    /// slots in turn, whatever their sequence numbers (§5's other technique).
    Counter,
}

/// DRILL: how long an enqueued packet stays out of the queue length the forwarding engines read
/// (§3.2.1), as the scenario writes it: a time (`"100ns"`; `"0ns"` makes every packet visible at
/// once) or `"serialisation"` (its own serialisation time at the port's rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnteringWindow(pub Visibility);

/// The default window: a switch pipeline's enqueue stage, short beside a packet's serialisation
/// (docs/load-balancers.md, "What DRILL reads").
pub const DEFAULT_ENTERING: EnteringWindow = EnteringWindow(Visibility::After(100 * PS_PER_NS));

impl TryFrom<String> for EnteringWindow {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.trim() {
            "serialisation" | "serialization" => Ok(EnteringWindow(Visibility::Serialisation)),
            t => parse_duration(t)
                .map(|ps| EnteringWindow(Visibility::After(ps)))
                .map_err(|e| format!("{e}; write a time such as \"100ns\" (\"0ns\": every packet visible at once) or \"serialisation\"")),
        }
    }
}

/// What `EnteringWindow::try_from` accepts: a string, never a bare number.
impl JsonSchema for EnteringWindow {
    fn schema_name() -> Cow<'static, str> {
        "EnteringWindow".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A time written as a string (\"100ns\"; \"0ns\": every packet visible at once), or \"serialisation\": the packet's own serialisation time at the port's rate.",
            // The enum for editors to offer; the pattern because the parser trims spaces.
            "anyOf": [
                {"enum": ["serialisation", "serialization"]},
                {"type": "string", "pattern": r"^\s*(?:serialisation|serialization)\s*$"},
                crate::units::duration_text_schema(),
            ],
        })
    }
}

impl From<EnteringWindow> for String {
    fn from(w: EnteringWindow) -> String {
        match w.0 {
            Visibility::Serialisation => "serialisation".into(),
            Visibility::After(ps) => Duration(ps).to_string(),
        }
    }
}

/// A WCMP weight for the links from one node to another (all parallel links alike).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkWeight {
    /// The switch the links leave, by name (`"tor0"`).
    pub from: String,
    /// The node they reach (`"spine1"`).
    pub to: String,
    /// Their weight, at least 1.
    pub weight: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// The load-balancing scheme (`clos schemes` lists each with its parameters).
    #[serde(default)]
    pub scheme: Scheme,
    /// DRILL: random samples per decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<u32>,
    /// DRILL: memory units (least-loaded ports remembered from earlier decisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub m: Option<u32>,
    /// DRILL: forwarding engines per switch, each with its own memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engines: Option<u32>,
    /// LetFlow, CONGA: idle gap that ends a flowlet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowlet_gap: Option<Duration>,
    /// LetFlow, CONGA: entries in each switch's hashed flowlet table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowlet_table: Option<u32>,
    /// Presto: flowcell size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowcell: Option<ByteSize>,
    /// LocalFlow: scheduling interval T.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// LocalFlow: slack delta, a fraction of link capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<f64>,
    /// LocalFlow: what a split rule's subflows are cut by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitBy>,
    /// CONGA: DRE decrement period T_dre.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dre_period: Option<Duration>,
    /// CONGA: DRE decrement factor alpha.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dre_alpha: Option<f64>,
    /// CONGA: bits of the quantised congestion metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dre_bits: Option<u32>,
    /// WCMP: weights overriding the default (each link's capacity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<LinkWeight>>,
    /// DRILL: how long an enqueued packet is invisible to the engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entering: Option<EnteringWindow>,
    /// DRILL: split next hops into symmetric components first (DRILL §3.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decompose: Option<bool>,
    /// Presto: weigh paths by capacity (Presto's weighted multipathing after failures).
    /// LocalFlow: size each link's bin by that capacity (LocalFlow §4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighted: Option<bool>,
}

/// One documented scheme parameter.
pub struct Param {
    pub name: &'static str,
    pub schemes: &'static [Scheme],
    pub default: &'static str,
    pub doc: &'static str,
}

use Scheme::*;

pub const PARAMS: &[Param] = &[
    Param { name: "d", schemes: &[Drill, DrillFlow], default: "2", doc: "random samples per decision (DRILL §3.2.2)" },
    Param { name: "m", schemes: &[Drill, DrillFlow], default: "1", doc: "memory units per engine (DRILL §3.2.2)" },
    Param { name: "engines", schemes: &[Drill, DrillFlow], default: "1", doc: "forwarding engines per switch; arrivals split by ingress port (DRILL §3.2.1)" },
    Param { name: "flowlet_gap", schemes: &[Letflow, Conga], default: "500us", doc: "idle time that starts a new flowlet (CONGA §3.4; LetFlow)" },
    Param { name: "flowlet_table", schemes: &[Letflow, Conga], default: "4096", doc: "entries of each switch's hashed flowlet table" },
    Param { name: "flowcell", schemes: &[Presto], default: "64KB", doc: "flowcell size (Presto §3)" },
    Param { name: "interval", schemes: &[Localflow, LocalflowNs], default: "50ms", doc: "scheduling interval T (LocalFlow §3.2, §7)" },
    Param { name: "slack", schemes: &[Localflow], default: "0.01", doc: "slack delta as a fraction of link capacity; 1 = no splitting (LocalFlow §4)" },
    Param { name: "split", schemes: &[Localflow], default: "sequence", doc: "how a split rule cuts subflows: \"sequence\" (TCP sequence bits, LocalFlow §5 and its evaluation) or \"counter\" (a per-rule packet counter at each switch, §5's other technique)" },
    Param { name: "dre_period", schemes: &[Conga], default: "16us", doc: "DRE decrement period T_dre (CONGA §3.2)" },
    Param { name: "dre_alpha", schemes: &[Conga], default: "0.1", doc: "DRE decrement factor; tau = T_dre / alpha (CONGA §3.2)" },
    Param { name: "dre_bits", schemes: &[Conga], default: "3", doc: "bits of the quantised congestion metric (CONGA §3.2)" },
    Param { name: "weights", schemes: &[Wcmp], default: "path capacity", doc: "list of {from, to, weight} fixing per-link weights (default: the capacity of the shortest paths through each next hop)" },
    Param { name: "entering", schemes: &[Drill, DrillFlow], default: "100ns", doc: "how long an enqueued packet is left out of the queue length the engines read (DRILL §3.2.1): a time (\"0ns\": exact visibility) or \"serialisation\" (its own write time at the port's rate)" },
    Param { name: "decompose", schemes: &[Drill, DrillFlow], default: "true", doc: "hash flows to symmetric components (Quiver), then DRILL inside one (DRILL §3.4)" },
    Param { name: "weighted", schemes: &[Presto, Localflow, LocalflowNs], default: "true", doc: "presto: flowcells over paths in proportion to path capacity, not plain round robin (Presto's weighted multipathing); localflow: bins sized in proportion to the capacity left behind each link (LocalFlow §4.3)" },
];

impl RoutingSpec {
    fn given(&self) -> [(&'static str, bool); 16] {
        [
            ("d", self.d.is_some()),
            ("m", self.m.is_some()),
            ("engines", self.engines.is_some()),
            ("flowlet_gap", self.flowlet_gap.is_some()),
            ("flowlet_table", self.flowlet_table.is_some()),
            ("flowcell", self.flowcell.is_some()),
            ("interval", self.interval.is_some()),
            ("slack", self.slack.is_some()),
            ("split", self.split.is_some()),
            ("dre_period", self.dre_period.is_some()),
            ("dre_alpha", self.dre_alpha.is_some()),
            ("dre_bits", self.dre_bits.is_some()),
            ("weights", self.weights.is_some()),
            ("entering", self.entering.is_some()),
            ("decompose", self.decompose.is_some()),
            ("weighted", self.weighted.is_some()),
        ]
    }

    /// Reject parameters of other schemes, check ranges, fill defaults.
    pub fn normalize(&mut self) -> Result<()> {
        let s = self.scheme;
        for (name, given) in self.given() {
            let p = PARAMS.iter().find(|p| p.name == name).expect("every field is registered");
            if given && !p.schemes.contains(&s) {
                let users: Vec<&str> = p.schemes.iter().map(|x| x.name()).collect();
                return Err(bad(format!("routing.{name}"), format!("does not apply to scheme \"{}\" (it is a parameter of {})", s.name(), users.join(", "))));
            }
        }
        let uses = |name: &str| PARAMS.iter().any(|p| p.name == name && p.schemes.contains(&s));
        if uses("d") {
            let d = *self.d.get_or_insert(2);
            let m = *self.m.get_or_insert(1);
            let e = *self.engines.get_or_insert(1);
            if d + m == 0 {
                return Err(bad("routing.d", "d + m must be at least 1: DRILL needs something to compare"));
            }
            if d > 64 || m > 64 {
                return Err(bad("routing.d", "d and m above 64 are not supported (DRILL uses small values, e.g. (2, 1))"));
            }
            self.decompose.get_or_insert(true);
            self.entering.get_or_insert(DEFAULT_ENTERING);
            if e == 0 || e > 1024 {
                return Err(bad("routing.engines", format!("must be between 1 and 1024, got {e}")));
            }
        }
        if uses("flowlet_gap") {
            if self.flowlet_gap.get_or_insert(Duration(500 * PS_PER_US)).0 == 0 {
                return Err(bad("routing.flowlet_gap", "must be positive"));
            }
            let t = *self.flowlet_table.get_or_insert(4096);
            if !(1..=1 << 24).contains(&t) {
                return Err(bad("routing.flowlet_table", format!("must be between 1 and 16777216 entries, got {t}")));
            }
        }
        if uses("weighted") {
            self.weighted.get_or_insert(true);
        }
        if uses("flowcell") && self.flowcell.get_or_insert(ByteSize(64 * 1024)).0 == 0 {
            return Err(bad("routing.flowcell", "must be positive"));
        }
        if uses("interval") && self.interval.get_or_insert(Duration(50 * PS_PER_MS)).0 == 0 {
            return Err(bad("routing.interval", "must be positive"));
        }
        if uses("slack") {
            let x = *self.slack.get_or_insert(0.01);
            if !(0.0..=1.0).contains(&x) {
                return Err(bad("routing.slack", format!("must be in [0, 1], got {x}")));
            }
        }
        if uses("split") {
            self.split.get_or_insert(SplitBy::Sequence);
        }
        if uses("dre_period") {
            if self.dre_period.get_or_insert(Duration(16 * PS_PER_US)).0 == 0 {
                return Err(bad("routing.dre_period", "must be positive"));
            }
            let a = *self.dre_alpha.get_or_insert(0.1);
            if !(a > 0.0 && a < 1.0) {
                return Err(bad("routing.dre_alpha", format!("must be in (0, 1), got {a}")));
            }
            let b = *self.dre_bits.get_or_insert(3);
            if !(1..=8).contains(&b) {
                return Err(bad("routing.dre_bits", format!("must be between 1 and 8, got {b}")));
            }
        }
        if let Some(w) = &self.weights {
            if let Some(i) = w.iter().position(|x| x.weight == 0) {
                return Err(bad(format!("routing.weights[{i}].weight"), "must be at least 1 (remove the link instead)"));
            }
        }
        Ok(())
    }
}
