//! Helpers shared by the integration tests.
#![allow(dead_code)]

use clos_core::metrics::Report;
use clos_core::scenario::Scenario;
use serde_json::Value;

/// Build a scenario from JSON with `overrides` merged in (a JSON object, merged one level deep
/// per section).
pub fn scenario(base: Value, overrides: Value) -> Scenario {
    let mut s = base;
    merge(&mut s, overrides);
    Scenario::from_json(&s.to_string()).expect("test scenario is valid")
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

pub fn run(s: &Scenario) -> Report {
    clos_core::run(s).expect("run succeeds and conserves packets")
}

pub fn get(r: &Report, section: &str, key: &str) -> f64 {
    r.summary_f64(section, key).unwrap_or_else(|| panic!("{section}.{key} missing: {}", r.summary[section]))
}
