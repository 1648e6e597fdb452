//! How long the directory takes to answer: the latency distributions measured on the real
//! directory service (`crates/clos-directory`, docs/directory.md), or a fixed time.
//!
//! The measured tables are copied from `crates/clos-directory/data/latency.json` (the `--out` of
//! `clos-directory bench`: 3 directory servers over a 3-member etcd cluster, k = 2 copies per
//! lookup, on loopback), at the lightest load of each kind, as docs/directory.md advises for a
//! lightly loaded directory: lookups at 25,000/s (lookup latency barely changes with load until
//! saturation) and updates at 3,000/s. `measured_tables_match_the_benchmark_file` checks the copy
//! against the file, so re-running the benchmark without updating this table fails a test.
//!
//! A sample is drawn by inverse transform over the measured percentiles, linear between them:
//! (p1 → p10 → p25 → p50 → p75 → p90 → p99 → p99.9 → max), flat at p1 below the 1st percentile
//! (the benchmark reports no minimum). The interpolated distribution's mean is within 3% of the
//! measured mean (`samples_reproduce_the_measured_percentiles_and_mean`).

use crate::rng::{unit, Stream};
use crate::units::{Time, PS_PER_US};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// Cumulative probabilities of the measured percentiles.
const QUANTILES: [f64; 10] = [0.0, 0.01, 0.10, 0.25, 0.50, 0.75, 0.90, 0.99, 0.999, 1.0];

/// A measured latency distribution: its percentiles in microseconds (p1, p10, p25, p50, p75,
/// p90, p99, p99.9, max) and the measured mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// Which benchmark row this is, for the summary.
    pub source: &'static str,
    pub percentiles_us: [f64; 9],
    pub mean_us: f64,
}

/// Lookups at 25,000/s: `lookups[0]` of latency.json (73,410 lookups, none failed).
pub const LOOKUP: Measured = Measured {
    source: "clos-directory bench, lookups at 25000/s (crates/clos-directory/data/latency.json)",
    percentiles_us: [78.0, 108.0, 138.0, 180.0, 239.0, 310.0, 497.0, 760.0, 2297.0],
    mean_us: 199.777_823_184_852_18,
};

/// Updates at 3,000/s: `updates[0]` of latency.json (9,027 updates, none failed). Mostly the wait
/// for the 50 ms batch window, then the etcd commit.
pub const UPDATE: Measured = Measured {
    source: "clos-directory bench, updates at 3000/s (crates/clos-directory/data/latency.json)",
    percentiles_us: [3871.0, 9089.0, 17231.0, 30858.0, 44112.0, 52072.0, 57803.0, 61112.0, 62424.0],
    mean_us: 30_722.486_318_821_314,
};

impl Measured {
    /// The latency at cumulative probability `u` in [0, 1], in picoseconds.
    pub fn quantile(&self, u: f64) -> Time {
        let p = &self.percentiles_us;
        let values = [p[0], p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]];
        let i = QUANTILES.iter().position(|&q| q >= u).unwrap_or(QUANTILES.len() - 1).max(1);
        let (q0, q1) = (QUANTILES[i - 1], QUANTILES[i]);
        let (v0, v1) = (values[i - 1], values[i]);
        let x = if q1 > q0 { v0 + (v1 - v0) * ((u - q0) / (q1 - q0)).clamp(0.0, 1.0) } else { v1 };
        (x * PS_PER_US as f64).round() as Time
    }
}

/// A latency as a scenario writes it: `"measured"` or a fixed duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum LatencySpec {
    /// Drawn from the measured distribution, plus the network round trip to a directory server.
    #[default]
    Measured,
    /// Exactly this long, network included.
    Fixed(Time),
}

impl TryFrom<Value> for LatencySpec {
    type Error = String;
    fn try_from(v: Value) -> Result<LatencySpec, String> {
        if v.as_str() == Some("measured") {
            return Ok(LatencySpec::Measured);
        }
        serde_json::from_value::<crate::units::Duration>(v)
            .map(|d| LatencySpec::Fixed(d.0))
            .map_err(|e| format!("{e}; or write \"measured\" for the directory service's measured distribution"))
    }
}

/// What `LatencySpec::try_from` accepts.
impl JsonSchema for LatencySpec {
    fn schema_name() -> Cow<'static, str> {
        "LatencySpec".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "\"measured\" (drawn from the directory service's measured latencies, plus the network round trip), or a fixed time.",
            "anyOf": [{"enum": ["measured"]}, generator.subschema_for::<crate::units::Duration>()],
        })
    }
}

impl From<LatencySpec> for Value {
    fn from(l: LatencySpec) -> Value {
        match l {
            LatencySpec::Measured => "measured".into(),
            LatencySpec::Fixed(t) => crate::units::Duration(t).to_string().into(),
        }
    }
}

/// A latency ready to draw from.
#[derive(Clone, Copy, Debug)]
pub enum Latency {
    /// `dist` plus a fixed network round trip.
    Measured {
        dist: Measured,
        network: Time,
    },
    Fixed(Time),
}

impl Latency {
    pub fn new(spec: LatencySpec, dist: Measured, network: Time) -> Latency {
        match spec {
            LatencySpec::Measured => Latency::Measured { dist, network },
            LatencySpec::Fixed(t) => Latency::Fixed(t),
        }
    }

    /// One draw (a fixed latency draws nothing, so it leaves the stream untouched).
    pub fn sample(&self, rng: &mut Stream) -> Time {
        match *self {
            Latency::Measured { dist, network } => dist.quantile(unit(rng)) + network,
            Latency::Fixed(t) => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Streams;

    #[test]
    fn measured_tables_match_the_benchmark_file() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../clos-directory/data/latency.json");
        let file: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("latency.json")).unwrap();
        for (table, row, offered) in [(LOOKUP, &file["lookups"][0], 25_000.0), (UPDATE, &file["updates"][0], 3_000.0)] {
            assert_eq!(row["offered_per_s"].as_f64(), Some(offered));
            let l = &row["latency_ms"];
            let keys = ["p1", "p10", "p25", "p50", "p75", "p90", "p99", "p999", "max"];
            for (k, &us) in keys.iter().zip(&table.percentiles_us) {
                assert!((l[k].as_f64().unwrap() * 1000.0 - us).abs() < 1e-6, "{k}: {} ms vs {us} us", l[k]);
            }
            assert!((l["mean"].as_f64().unwrap() * 1000.0 - table.mean_us).abs() < 1e-6);
        }
    }

    #[test]
    fn samples_reproduce_the_measured_percentiles_and_mean() {
        let mut rng = Streams::new(3).stream();
        for dist in [LOOKUP, UPDATE] {
            let lat = Latency::new(LatencySpec::Measured, dist, 0);
            let mut v: Vec<Time> = (0..200_000).map(|_| lat.sample(&mut rng)).collect();
            v.sort_unstable();
            let us = |t: Time| t as f64 / PS_PER_US as f64;
            // The share of draws at or below each measured percentile is that percentile's
            // rank: Binomial(200,000, p) has sd < 0.0012, so 0.005 is over 4 sd.
            for (i, q) in QUANTILES[1..].iter().enumerate() {
                let want = dist.percentiles_us[i];
                let share = v.partition_point(|&t| us(t) <= want + 1e-9) as f64 / v.len() as f64;
                assert!((share - q).abs() < 0.005, "{}: {share} of draws at or below {want} us, the p{}", dist.source, q * 100.0);
            }
            let mean = v.iter().map(|&t| us(t)).sum::<f64>() / v.len() as f64;
            assert!((mean / dist.mean_us - 1.0).abs() < 0.03, "{}: mean {mean} vs {}", dist.source, dist.mean_us);
            assert!(us(v[0]) >= dist.percentiles_us[0] - 1e-9 && us(*v.last().unwrap()) <= dist.percentiles_us[8] + 1e-9);
        }
    }

    #[test]
    fn a_fixed_latency_is_exact_and_draws_nothing() {
        let mut a = Streams::new(1).stream();
        let b = a.clone();
        assert_eq!(Latency::new(LatencySpec::Fixed(7), LOOKUP, 100).sample(&mut a), 7);
        assert_eq!(a, b);
        // The network round trip is added to every measured draw.
        assert!(Latency::new(LatencySpec::Measured, LOOKUP, 5 * PS_PER_US).sample(&mut a) >= 83 * PS_PER_US);
    }

    #[test]
    fn written_forms() {
        let l: LatencySpec = serde_json::from_value(serde_json::json!("measured")).unwrap();
        assert_eq!(l, LatencySpec::Measured);
        let l: LatencySpec = serde_json::from_value(serde_json::json!("250us")).unwrap();
        assert_eq!(l, LatencySpec::Fixed(250 * PS_PER_US));
        assert_eq!(Value::from(l), serde_json::json!("250us"));
        let e = serde_json::from_value::<LatencySpec>(serde_json::json!("fast")).unwrap_err().to_string();
        assert!(e.contains("or write \"measured\""), "{e}");
    }
}
