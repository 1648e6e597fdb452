//! The `[directory]` table of a scenario and its validation. Errors name the dotted field
//! (`directory.migrations[1].to`) and the fix.

use super::latency::LatencySpec;
use crate::error::{bad, Result};
use crate::packet::wire;
use crate::topology::Topology;
use crate::units::{tx_time, Duration, Time};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::VecDeque;

/// VL2's directory system inside the simulator (docs/directory.md, "The model in the simulator").
/// Absent: no directory is modelled and every host reaches every other directly, as before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DirectorySpec {
    /// Turn the model off without deleting the table (migrations are then ignored too).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// How long an agent waits for a lookup: `"measured"` or a fixed time.
    #[serde(default)]
    pub lookup_latency: LatencySpec,
    /// How long an update takes to commit after a VM moves: `"measured"` or a fixed time.
    #[serde(default)]
    pub update_latency: LatencySpec,
    /// Round trip between a server and a directory server, added to measured latencies (they were
    /// measured on loopback). Default: a minimum-size frame's unloaded round trip between the
    /// first and the last host of the fabric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_rtt: Option<Duration>,
    /// Agents keep mappings for every flow of the server; off, each flow resolves on its own.
    #[serde(default = "yes")]
    pub cache: bool,
    /// A cached mapping older than this is refreshed in the background when next used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<Duration>,
    /// A migration's new mapping reaches the agents as rules through the control channel of
    /// `[convergence] mode = "controller"` (its `latency`, `rule_rate` and `update` strategy)
    /// instead of by the ToRs' reports and the directory's corrections (docs/updates.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub channel: bool,
    /// VM migrations: an AA moves to a server under another ToR.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrations: Vec<MigrationSpec>,
}

fn yes() -> bool {
    true
}

/// One VM migration (`[[directory.migrations]]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MigrationSpec {
    /// When the VM resumes at its new server.
    pub at: Duration,
    /// The AA that moves. AA i starts on host i, so this is the host number flows use for it.
    pub aa: Place,
    /// Its new server (a host under another ToR), or a ToR: then the host at the same position
    /// under that ToR as the AA's current server. Normalised to the host.
    pub to: Place,
}

/// A host (`17`, `"h17"`) or a ToR (`"tor2"`), as migrations name places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum Place {
    Host(u32),
    Tor(u32),
}

const PLACE_FORMS: &str = "expected a host (a number or \"h17\") or a ToR (\"tor2\")";

impl TryFrom<Value> for Place {
    type Error = String;
    fn try_from(v: Value) -> std::result::Result<Place, String> {
        let number = |s: &str| s.parse::<u32>().ok();
        match &v {
            Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).map(Place::Host),
            Value::String(s) => {
                let s = s.trim();
                match (s.strip_prefix("tor"), s.strip_prefix('h')) {
                    (Some(t), _) => number(t).map(Place::Tor),
                    (_, Some(h)) => number(h).map(Place::Host),
                    _ => number(s).map(Place::Host),
                }
            }
            _ => None,
        }
        .ok_or_else(|| format!("`{v}`: {PLACE_FORMS}"))
    }
}

/// What `Place::try_from` accepts.
impl JsonSchema for Place {
    fn schema_name() -> Cow<'static, str> {
        "Place".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A host (a number, or \"h17\") or a ToR (\"tor2\").",
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                {"type": "string", "pattern": r"^\s*(?:tor|h)?\+?[0-9]+\s*$"},
            ],
        })
    }
}

impl From<Place> for Value {
    fn from(p: Place) -> Value {
        match p {
            Place::Host(h) => h.into(),
            Place::Tor(t) => format!("tor{t}").into(),
        }
    }
}

impl DirectorySpec {
    /// Check the table against the fabric `topo` and fill defaults in; `stop` is the scenario's
    /// stop time if it has one.
    pub fn normalize(&mut self, topo: &Topology, stop: Option<Duration>, max_time: Duration) -> Result<()> {
        if self.cache_ttl.is_some_and(|d| d.0 == 0) {
            return Err(bad("directory.cache_ttl", "must be positive, or left out for mappings that never expire"));
        }
        self.network_rtt.get_or_insert(Duration(default_network_rtt(topo)));
        let n = topo.n_hosts as u32;
        // Where each AA is, and when it last moved, as the migrations so far leave it.
        let mut now_at: Vec<(u32, Option<Duration>)> = (0..n).map(|h| (h, None)).collect();
        for (i, m) in self.migrations.iter_mut().enumerate() {
            let field = |f: &str| format!("directory.migrations[{i}].{f}");
            let host = |h: u32, f: &str| {
                if h < n {
                    Ok(h)
                } else {
                    Err(bad(field(f), format!("host {h} does not exist; the fabric has hosts 0-{}", n - 1)))
                }
            };
            let aa = match m.aa {
                Place::Host(h) => host(h, "aa")?,
                Place::Tor(_) => {
                    return Err(bad(field("aa"), "names a ToR; write the AA that moves (AA i starts on host i), e.g. 3 or \"h3\""));
                }
            };
            for (limit, what) in [(stop, "the scenario's stop"), (Some(max_time), "max_time")] {
                if let Some(limit) = limit.filter(|&l| m.at >= l) {
                    return Err(bad(field("at"), format!("{} is not before {what} ({limit}), so the move would never happen", m.at)));
                }
            }
            let (from, last) = now_at[aa as usize];
            if let Some(last) = last.filter(|&l| m.at <= l) {
                return Err(bad(field("at"), format!("{} is not after AA {aa}'s previous move ({last}); list an AA's moves in time order", m.at)));
            }
            let from_tor = topo.host_tor[from as usize];
            let to = match m.to {
                Place::Host(h) => host(h, "to")?,
                Place::Tor(t) => {
                    let tors = topo.tors.len() as u32;
                    if t >= tors {
                        return Err(bad(field("to"), format!("tor{t} does not exist; the fabric has tor0-tor{}", tors - 1)));
                    }
                    let slot = hosts_under(topo, from_tor).iter().position(|&h| h == from).expect("a host is under its ToR");
                    let under = hosts_under(topo, topo.tors[t as usize]);
                    *under.get(slot).ok_or_else(|| {
                        bad(
                            field("to"),
                            format!("tor{t} has only {} hosts, none at position {slot} like AA {aa}'s host {from}; name a host instead", under.len()),
                        )
                    })?
                }
            };
            if topo.host_tor[to as usize] == from_tor {
                let tor = &topo.nodes[from_tor as usize].name;
                return Err(bad(
                    field("to"),
                    format!("host {to} is under {tor}, where AA {aa} already is (on host {from}); a migration moves an AA to a server under another ToR, since its LA is its ToR"),
                ));
            }
            m.aa = Place::Host(aa);
            m.to = Place::Host(to);
            now_at[aa as usize] = (to, Some(m.at));
        }
        Ok(())
    }
}

fn hosts_under(t: &Topology, tor: u32) -> Vec<u32> {
    (0..t.n_hosts as u32).filter(|&h| t.host_tor[h as usize] == tor).collect()
}

/// The unloaded round trip of a minimum-size frame (a directory request or reply is far below
/// it) from host 0 to the host farthest from it (fewest links, then lowest number), along a
/// shortest path: a directory server is a server somewhere in the fabric, and this is the
/// longest way to one. No VLB detour: the fabric's own routing is not consulted.
pub fn default_network_rtt(t: &Topology) -> Time {
    let a = 0u32;
    // Breadth-first search from `a`, remembering the port each node was reached by; hosts are
    // reached in order of distance, so the last host reached is the farthest (ties: the first
    // reached, by the port order that `ports_of` gives).
    let mut via = vec![u32::MAX; t.nodes.len()];
    let mut seen = vec![false; t.nodes.len()];
    seen[a as usize] = true;
    let mut queue = VecDeque::from([a]);
    let mut b = a;
    let mut farthest = 0;
    let mut depth = vec![0u32; t.nodes.len()];
    while let Some(n) = queue.pop_front() {
        if t.is_host(n) && depth[n as usize] > farthest {
            (b, farthest) = (n, depth[n as usize]);
        }
        for p in t.ports_of(n) {
            let to = t.ports[p as usize].to;
            if !seen[to as usize] {
                seen[to as usize] = true;
                via[to as usize] = p;
                depth[to as usize] = depth[n as usize] + 1;
                queue.push_back(to);
            }
        }
    }
    let frame = wire::frame(0, 0);
    let mut one_way = 0;
    let mut n = b;
    while n != a && via[n as usize] != u32::MAX {
        let port = &t.ports[via[n as usize] as usize];
        one_way += tx_time(frame, port.rate_bps) + port.delay;
        n = port.from;
    }
    2 * one_way
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::units::PS_PER_US;

    fn with(directory: Value) -> std::result::Result<Scenario, String> {
        let json = serde_json::json!({
            "stop": "20ms",
            "topology": {"kind": "vl2", "preset": "testbed"},
            "workload": {"kind": "permutation", "bytes": "1MB"},
            "directory": directory,
        });
        Scenario::from_json(&json.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_normal_form() {
        let s = with(serde_json::json!({"migrations": [{"at": "1ms", "aa": "h3", "to": "tor2"}]})).unwrap();
        let d = s.directory.as_ref().unwrap();
        assert!(d.enabled && d.cache && d.cache_ttl.is_none());
        assert_eq!((d.lookup_latency, d.update_latency), (LatencySpec::Measured, LatencySpec::Measured));
        // Host 3 is the 4th server of tor0, so "tor2" means host 43.
        assert_eq!(d.migrations[0].to, Place::Host(43));
        // Testbed: every two ToRs share an aggregation switch, so the farthest host is 4 links
        // away (two at 1 Gb/s, two at 10 Gb/s), each of 1 us; an 84-byte frame takes 672 ns at
        // 1 Gb/s and 67.2 ns at 10 Gb/s.
        assert_eq!(d.network_rtt, Some(Duration(2 * (4 * PS_PER_US + 2 * 672_000 + 2 * 67_200))));
        let round = Scenario::from_json(&s.to_json()).unwrap();
        assert_eq!(round.directory, s.directory);
    }

    #[test]
    fn bad_migrations_are_named() {
        let e = |m: Value| with(serde_json::json!({"migrations": [m]})).unwrap_err();
        assert_eq!(e(serde_json::json!({"at": "1ms", "aa": 80, "to": 50})), "directory.migrations[0].aa: host 80 does not exist; the fabric has hosts 0-79");
        assert!(
            e(serde_json::json!({"at": "1ms", "aa": 3, "to": "tor4"})).starts_with("directory.migrations[0].to: tor4 does not exist; the fabric has tor0-tor3")
        );
        assert!(e(serde_json::json!({"at": "1ms", "aa": 3, "to": 7})).starts_with("directory.migrations[0].to: host 7 is under tor0, where AA 3 already is"));
        assert!(
            e(serde_json::json!({"at": "20ms", "aa": 3, "to": 70})).starts_with("directory.migrations[0].at: 20ms is not before the scenario's stop (20ms)")
        );
        assert!(e(serde_json::json!({"at": "1ms", "aa": "tor1", "to": 70})).starts_with("directory.migrations[0].aa: names a ToR"));
        assert!(e(serde_json::json!({"at": "1ms", "aa": 3, "to": "rack2"})).starts_with("directory.migrations[0].to: `\"rack2\"`: expected a host"));
        assert!(e(serde_json::json!({"at": "1ms", "aa": 3, "to": 70, "when": 1})).starts_with("directory.migrations[0].when: unknown field"));
        let two = with(serde_json::json!({"migrations": [{"at": "2ms", "aa": 3, "to": 70}, {"at": "1ms", "aa": 3, "to": 5}]})).unwrap_err();
        assert!(two.starts_with("directory.migrations[1].at: 1ms is not after AA 3's previous move (2ms)"), "{two}");
        // Moving back to the first rack, once the AA has left it, is a move to another ToR.
        with(serde_json::json!({"migrations": [{"at": "1ms", "aa": 3, "to": 70}, {"at": "2ms", "aa": 3, "to": 5}]})).unwrap();
    }

    #[test]
    fn bad_settings_are_named() {
        let e = |d: Value| with(d).unwrap_err();
        assert!(e(serde_json::json!({"cache_ttl": "0s"})).starts_with("directory.cache_ttl: must be positive"));
        assert!(e(serde_json::json!({"lookup_latency": "fast"})).starts_with("directory.lookup_latency: `fast` does not start with a number"));
        assert!(e(serde_json::json!({"caches": true})).starts_with("directory.caches: unknown field `caches`"));
    }
}
