//! Runs a scenario file and prints the core's CPU seconds and events, without Python: for
//! comparing two builds of the core by alternating runs (docs/performance.md, "Bucket width by
//! fabric size"). Build one binary per build and keep a copy of each:
//!
//!     cargo build --release -p clos-core --example cpu_seconds
//!     cp target/release/examples/cpu_seconds /tmp/before
//!     (change the core, build again, copy to /tmp/after)
//!     for i in 1 2 3 4 5 6; do for b in before after; do
//!       /tmp/$b python/clos/data/bench/b1-fat-tree-k8.toml 20ms; done; done
//!
//! Arguments: the scenario (TOML), optionally a stop time replacing the file's and a number of
//! runs. Output: one line per run, "<binary name> <CPU seconds> <events>".

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: cpu_seconds SCENARIO.toml [STOP] [RUNS]");
        return ExitCode::FAILURE;
    };
    let scenario = match load(path, args.get(2)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runs: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(1);
    let name = args[0].rsplit('/').next().unwrap_or("cpu_seconds");
    for _ in 0..runs {
        match clos_core::run(&scenario) {
            Ok(report) => {
                let stats = &report.summary["stats"];
                println!("{name} {} {}", stats["cpu_seconds"], stats["events"]);
            }
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The TOML table as JSON, as the Python front end hands it to the core.
fn load(path: &str, stop: Option<&String>) -> Result<clos_core::scenario::Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let mut json = serde_json::to_value(table).map_err(|e| e.to_string())?;
    if let Some(stop) = stop {
        json["stop"] = stop.as_str().into();
    }
    clos_core::scenario::Scenario::from_json(&json.to_string()).map_err(|e| e.to_string())
}
