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

/// Write a flow file (`src,dst,bytes,start` rows) into this test process's temporary folder and
/// return its path.
pub fn flow_file<B: std::fmt::Display, T: std::fmt::Display>(name: &str, rows: impl IntoIterator<Item = (u32, u32, B, T)>) -> String {
    let dir = std::env::temp_dir().join(format!("clos-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let mut text = String::from("src,dst,bytes,start\n");
    for (s, d, b, t) in rows {
        text += &format!("{s},{d},{b},{t}\n");
    }
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}
