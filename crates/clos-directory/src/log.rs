//! Structured logs: one JSON object per line on stderr (or plain text), filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

pub fn init(format: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if format == "json" { builder.json().flatten_event(true).with_current_span(false).try_init() } else { builder.try_init() };
}
