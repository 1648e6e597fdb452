#!/usr/bin/env bash
# Build everything, then run every test: the Rust core's unit and whole-simulation tests, and
# the Python package's tests (CLI, scenarios, results) against the freshly built extension.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
cargo test --release -p clos-core
.venv/bin/python -m pytest -q
