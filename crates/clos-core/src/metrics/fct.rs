//! Flow completion times and slowdowns by flow size, as the load-balancing papers report them:
//! mean and tail percentiles per size bucket, and short and long flows separately (DCTCP and
//! CONGA call flows up to 100 KB short and from 10 MB long; both are `[output]` settings).

use super::percentile;
use crate::units::seconds;
use serde_json::{json, Value};

/// Bucket upper bounds (bytes, inclusive), decade by decade.
const BOUNDS: [(u64, &str); 4] = [(10_000, "<=10KB"), (100_000, "10KB-100KB"), (1_000_000, "100KB-1MB"), (10_000_000, "1MB-10MB")];

/// One row per flow: size, and FCT and slowdown if it finished.
pub struct Sample {
    pub bytes: u64,
    pub fct_ps: Option<u64>,
    pub slowdown: Option<f64>,
}

/// mean, p50, p99, p99.9, p99.99 (nearest rank), or nulls for no data.
fn stats(mut v: Vec<f64>) -> Value {
    v.sort_by(f64::total_cmp);
    let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let p = |q: f64| percentile(&v, q);
    json!({"mean": mean, "p50": p(50.0), "p99": p(99.0), "p999": p(99.9), "p9999": p(99.99)})
}

fn group(label: &str, min: u64, max: Option<u64>, rows: &[&Sample]) -> Value {
    let done: Vec<&&Sample> = rows.iter().filter(|r| r.fct_ps.is_some()).collect();
    json!({
        "label": label,
        "min_bytes": min,
        "max_bytes": max,
        "count": rows.len(),
        "finished": done.len(),
        "fct_s": stats(done.iter().map(|r| seconds(r.fct_ps.unwrap())).collect()),
        "slowdown": stats(done.iter().filter_map(|r| r.slowdown).collect()),
    })
}

/// The `fct` section of the summary. Unfinished flows are counted but have no FCT; a run that
/// stops at a fixed time therefore under-reports the tail of its largest flows (`finished` says
/// how many are missing).
pub fn summary(rows: &[Sample], short_max: u64, long_min: u64) -> Value {
    let select = |lo: u64, hi: Option<u64>| -> Vec<&Sample> { rows.iter().filter(|r| r.bytes > lo && hi.is_none_or(|h| r.bytes <= h)).collect() };
    let mut buckets = Vec::new();
    let mut lo = 0;
    for (hi, label) in BOUNDS {
        buckets.push(group(label, lo, Some(hi), &select(lo, Some(hi))));
        lo = hi;
    }
    buckets.push(group(">10MB", lo, None, &select(lo, None)));
    json!({
        "short_max_bytes": short_max,
        "long_min_bytes": long_min,
        "buckets": buckets,
        "short": group("short", 0, Some(short_max), &select(0, Some(short_max))),
        "long": group("long", long_min, None, &rows.iter().filter(|r| r.bytes >= long_min).collect::<Vec<_>>()),
        "all": group("all", 0, None, &rows.iter().collect::<Vec<_>>()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_by_size_and_percentiles_use_nearest_rank() {
        let rows: Vec<Sample> =
            (1..=100u64).map(|i| Sample { bytes: i * 1000, fct_ps: (i != 100).then_some(i * 1_000_000), slowdown: (i != 100).then_some(i as f64) }).collect();
        let s = summary(&rows, 10_000, 50_000);
        assert_eq!(s["buckets"][0]["count"], 10);
        assert_eq!(s["buckets"][1]["count"], 90);
        assert_eq!(s["buckets"][1]["finished"], 89);
        assert_eq!(s["buckets"][2]["count"], 0);
        assert!(s["buckets"][2]["slowdown"]["mean"].is_null());
        assert_eq!(s["short"]["slowdown"]["p50"], 5.0);
        assert_eq!(s["long"]["count"], 51);
        // 99 finished flows: rank ceil(0.99 * 99) = 99, the largest.
        assert_eq!(s["all"]["slowdown"]["p99"], 99.0);
        assert_eq!(s["all"]["slowdown"]["p50"], 50.0);
        let sorted: Vec<u64> = (1..=200).collect();
        assert_eq!(percentile(&sorted, 99.0), Some(198));
    }
}
