//! How a scenario names hosts and per-server concurrency: small value types with their own
//! parsing, so a wrong value gets a message that shows the accepted forms.

use crate::error::{bad, Result};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// The hosts a workload uses: the first n, or a list of hosts and inclusive ranges
/// (`[0, "4-7", "h9"]`), in the order given (a `ramp` adds them in that order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum HostSet {
    First(u32),
    Listed(Vec<(u32, u32)>),
}

const HOSTS_FORMS: &str = "expected a number of hosts (the first n) or a list of hosts and ranges, e.g. [0, \"4-7\", \"h9\"]";

impl TryFrom<Value> for HostSet {
    type Error = String;
    fn try_from(v: Value) -> std::result::Result<HostSet, String> {
        match v {
            Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).map(HostSet::First).ok_or_else(|| HOSTS_FORMS.to_string()),
            Value::Array(items) => items.iter().map(host_item).collect::<std::result::Result<_, _>>().map(HostSet::Listed),
            _ => Err(HOSTS_FORMS.to_string()),
        }
    }
}

fn host_item(v: &Value) -> std::result::Result<(u32, u32), String> {
    let one = |s: &str| s.trim().trim_start_matches('h').parse::<u32>().map_err(|_| format!("`{s}` is not a host (0-based number or `h17`); {HOSTS_FORMS}"));
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).map(|h| (h, h)).ok_or_else(|| HOSTS_FORMS.to_string()),
        Value::String(s) => {
            let (a, b) = match s.split_once('-') {
                Some((a, b)) => (one(a)?, one(b)?),
                None => (one(s)?, one(s)?),
            };
            if a > b {
                return Err(format!("range `{s}` runs backwards; write `{b}-{a}`"));
            }
            Ok((a, b))
        }
        _ => Err(HOSTS_FORMS.to_string()),
    }
}

/// What `HostSet::try_from` and `host_item` accept.
impl JsonSchema for HostSet {
    fn schema_name() -> Cow<'static, str> {
        "HostSet".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let host = json_schema!({"type": "integer", "minimum": 0, "maximum": u32::MAX});
        json_schema!({
            "description": "A number of hosts (the first n), or a list of hosts and inclusive ranges, e.g. [0, \"4-7\", \"h9\"].",
            "anyOf": [
                host,
                {
                    "type": "array",
                    "items": {"anyOf": [host, {"type": "string", "pattern": r"^\s*h*\+?[0-9]+\s*(?:-\s*h*\+?[0-9]+\s*)?$"}]},
                },
            ],
        })
    }
}

impl From<HostSet> for Value {
    fn from(h: HostSet) -> Value {
        match h {
            HostSet::First(n) => n.into(),
            HostSet::Listed(r) => r.into_iter().map(|(a, b)| if a == b { Value::from(a) } else { Value::from(format!("{a}-{b}")) }).collect(),
        }
    }
}

impl HostSet {
    /// The host ids, in order, at least two; `field` names the scenario field for errors.
    pub fn resolve(&self, n_hosts: u32, field: &str) -> Result<Vec<u32>> {
        let hosts = self.resolve_any(n_hosts, field)?;
        if hosts.len() < 2 {
            return Err(bad(field, "needs at least 2 hosts to make any flow"));
        }
        Ok(hosts)
    }

    /// The host ids, in order, however few (a multicast group's senders or members).
    pub fn resolve_any(&self, n_hosts: u32, field: &str) -> Result<Vec<u32>> {
        if let HostSet::Listed(ranges) = self {
            // Checked before the ranges are expanded: "2-99999999" must not take 400 MB first.
            if let Some(&(a, _)) = ranges.iter().find(|&&(_, b)| b >= n_hosts) {
                let h = a.max(n_hosts);
                return Err(bad(field, format!("host {h} does not exist; the fabric has hosts 0-{}", n_hosts - 1)));
            }
            // So are ranges that overlap, whose expansion could be any multiple of the fabric.
            let mut sorted = ranges.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[1].0 <= w[0].1) {
                return Err(bad(field, format!("host {} is listed twice", w[1].0)));
            }
        }
        let hosts: Vec<u32> = match self {
            HostSet::First(n) if *n > n_hosts => return Err(bad(field, format!("the fabric has only {n_hosts} hosts, asked for {n}"))),
            HostSet::First(n) => (0..*n).collect(),
            HostSet::Listed(ranges) => ranges.iter().flat_map(|&(a, b)| a..=b).collect(),
        };
        if let Some(h) = hosts.iter().find(|&&h| h >= n_hosts) {
            return Err(bad(field, format!("host {h} does not exist; the fabric has hosts 0-{}", n_hosts - 1)));
        }
        let mut seen = vec![false; n_hosts as usize];
        for &h in &hosts {
            if std::mem::replace(&mut seen[h as usize], true) {
                return Err(bad(field, format!("host {h} is listed twice")));
            }
        }
        Ok(hosts)
    }
}

/// Flows a closed-loop server keeps open: a fixed number, or a distribution (bundled name or file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum Concurrency {
    Fixed(u32),
    Distribution(String),
}

impl TryFrom<Value> for Concurrency {
    type Error = String;
    fn try_from(v: Value) -> std::result::Result<Concurrency, String> {
        match v {
            Value::Number(n) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n >= 1 => Ok(Concurrency::Fixed(n)),
                _ => Err(format!("{n} is not a positive whole number of flows")),
            },
            Value::String(s) => Ok(Concurrency::Distribution(s)),
            _ => Err("expected a number of flows, a bundled distribution (\"vl2\") or a CDF file".into()),
        }
    }
}

/// What `Concurrency::try_from` accepts.
impl JsonSchema for Concurrency {
    fn schema_name() -> Cow<'static, str> {
        "Concurrency".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Flows each server keeps open: a number, a bundled distribution (\"vl2\") or a CDF file.",
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": u32::MAX}, {"type": "string"}],
        })
    }
}

impl From<Concurrency> for Value {
    fn from(c: Concurrency) -> Value {
        match c {
            Concurrency::Fixed(n) => n.into(),
            Concurrency::Distribution(s) => s.into(),
        }
    }
}

/// How many hosts take part (incast's `requesters` and `responders`): a whole number is a count
/// of hosts, a number with a decimal point a fraction of them. `1` is one host; every host is
/// `1.0`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum Share {
    Hosts(u32),
    Fraction(f64),
}

impl Share {
    /// Of `m` hosts: a count as given, a fraction rounded and at least 1.
    pub fn of(self, m: usize) -> usize {
        match self {
            Share::Hosts(n) => n as usize,
            Share::Fraction(f) => ((f * m as f64).round() as usize).max(1),
        }
    }
}

impl TryFrom<Value> for Share {
    type Error = String;
    fn try_from(v: Value) -> std::result::Result<Share, String> {
        let Value::Number(n) = v else { return Err("expected a number of hosts (4) or a fraction of them (0.1)".into()) };
        if n.is_u64() || n.is_i64() {
            return match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n >= 1 => Ok(Share::Hosts(n)),
                _ => Err(format!("{n} is not a positive number of hosts (a whole number counts hosts; 0.1 is a fraction of them)")),
            };
        }
        match n.as_f64() {
            Some(f) if f > 0.0 && f <= 1.0 => Ok(Share::Fraction(f)),
            _ => Err(format!("{n} is not a fraction in (0, 1] (a number with a decimal point is a fraction of the hosts; a whole number counts them)")),
        }
    }
}

/// What `Share::try_from` accepts. JSON Schema cannot tell `1.0` from `1`, which the core reads
/// as every host and one host; both are valid.
impl JsonSchema for Share {
    fn schema_name() -> Cow<'static, str> {
        "Share".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A whole number counts hosts (4); a number with a decimal point is a fraction of them (0.1; 1.0 is all).",
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            ],
        })
    }
}

impl From<Share> for Value {
    fn from(s: Share) -> Value {
        match s {
            Share::Hosts(n) => n.into(),
            Share::Fraction(f) => f.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `workload.requesters = 1` is one host, not every host: whole numbers count, decimals are
    /// fractions (of 320 hosts: 0.1 is 32; 1.0 is all 320).
    #[test]
    fn shares_are_counts_or_fractions_by_how_they_are_written() {
        let share = |v: Value| Share::try_from(v);
        assert_eq!(share(serde_json::json!(1)), Ok(Share::Hosts(1)));
        assert_eq!(share(serde_json::json!(1.0)).map(|s| s.of(320)), Ok(320));
        assert_eq!(share(serde_json::json!(0.1)).map(|s| s.of(320)), Ok(32));
        assert_eq!(share(serde_json::json!(4)).map(|s| s.of(320)), Ok(4));
        assert!(share(serde_json::json!(0)).unwrap_err().contains("not a positive number of hosts"));
        assert!(share(serde_json::json!(1.5)).unwrap_err().contains("not a fraction in (0, 1]"));
        assert!(share(serde_json::json!(-2)).unwrap_err().contains("not a positive number of hosts"));
    }

    #[test]
    fn host_lists_take_numbers_names_and_ranges() {
        let h = HostSet::try_from(serde_json::json!([0, "h2", "4-6"])).unwrap();
        assert_eq!(h.resolve(8, "w").unwrap(), vec![0, 2, 4, 5, 6]);
        assert_eq!(Value::from(h), serde_json::json!([0, 2, "4-6"]));
        assert!(HostSet::try_from(serde_json::json!(["6-4"])).unwrap_err().contains("runs backwards"));
        assert!(HostSet::try_from(serde_json::json!(true)).unwrap_err().starts_with("expected a number of hosts"));
        let e = HostSet::Listed(vec![(0, 9)]).resolve(8, "workload.hosts").unwrap_err().to_string();
        assert_eq!(e, "workload.hosts: host 8 does not exist; the fabric has hosts 0-7");
        let e = HostSet::Listed(vec![(0, 3), (2, 2)]).resolve(8, "w").unwrap_err().to_string();
        assert_eq!(e, "w: host 2 is listed twice");
    }
}
