#!/usr/bin/env bash
# Build everything, check formatting and lints, then run every test: the Rust core's unit and whole-simulation tests, and
# the directory service's tests (crates/clos-directory, against real etcd members), the
# instruction-count gate (B1 and the hot components under callgrind against a committed
# baseline), the Python package's tests (CLI, scenarios, results) against the freshly built
# extension, the wheel outside the checkout, and the papers' claims at the small scale.
set -euo pipefail
cd "$(dirname "$0")"
# etcd, protoc and valgrind, installed when missing (apt-get as root, or sudo).
bash scripts/system-deps.sh
bash scripts/setup.sh
# Formatting and lints (rustfmt.toml, pyproject.toml's [tool.ruff]): a diff or a warning fails.
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
.venv/bin/ruff format --check --quiet python tests scripts
.venv/bin/ruff check --quiet python tests scripts
# The documentation site (mkdocs.yml) in strict mode: a broken link or anchor in docs/ fails.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
cargo test --release -p clos-core
# The timing tool docs/performance.md uses to compare builds: it must build and run.
cargo build --release -p clos-core --example cpu_seconds
target/release/examples/cpu_seconds python/clos/data/bench/b1-fat-tree-k8.toml 1ms >/dev/null
# The directory service's tests start and stop their own etcd members on loopback (VL2 §4.3).
# One test at a time: each starts its own etcd members, and several clusters electing leaders at
# once on a 2-core machine can stall the leader-failover test past its storm window.
cargo test --release -p clos-directory -- --test-threads=1
# Fails if a benchmark runs more than 10% more instructions than its baseline (docs/performance.md).
bash scripts/instructions.sh
.venv/bin/python -m pytest -q
# The wheel, installed in a new environment outside the checkout, runs the user's commands.
bash scripts/wheel-smoke.sh
# The seed papers' claims at the small scale (docs/reproduction.md): fails if one flipped.
rm -rf results/reproduce-ci  # a fresh run every time, not only after the core changed
.venv/bin/clos reproduce all --scale small --out results/reproduce-ci --quiet
