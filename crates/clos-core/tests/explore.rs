mod common;
use serde_json::{json, Value};

/// Manual exploration: CLOS_EXPLORE='{"switch": {...}}' cargo test --test explore -- --ignored --nocapture
#[test]
#[ignore]
fn explore() {
    let base = json!({
        "topology": {"kind": "vl2", "preset": "testbed"},
        "workload": {"kind": "shuffle", "hosts": 75, "bytes": "1MB"},
    });
    let over: Value = serde_json::from_str(&std::env::var("CLOS_EXPLORE").unwrap_or("{}".into())).unwrap();
    let s = common::scenario(base, over);
    let r = common::run(&s);
    let g = &r.summary["goodput"];
    let f = &r.summary["flows"];
    println!("eff {:.3} jain {:.3} ct {:.3}s rtx {} to {} drops {} cpu {:.1}s ev/s {:.2e}",
        g["efficiency"].as_f64().unwrap(), g["jain"].as_f64().unwrap(), g["completion_time_s"].as_f64().unwrap_or(0.0),
        f["retransmits"], f["timeouts"], r.summary["packets"]["dropped"], r.summary["stats"]["cpu_seconds"].as_f64().unwrap(),
        r.summary["stats"]["events_per_sec"].as_f64().unwrap());
}
