#!/usr/bin/env bash
# Shared set-up for run.sh and test.sh: a virtual environment with the Rust core built in
# release mode (LTO) and the Python package installed in editable mode. Idempotent and
# incremental: a second call only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
command -v cargo >/dev/null || { echo "error: cargo (Rust) is required; install it from https://rustup.rs" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2"
# Profile-guided: trained on short runs of the benchmarks (scripts/pgo.sh), the core runs them
# 5-12% faster, with the same results (docs/performance.md). CLOS_PGO=0 builds it plainly.
profile=""
if [ "${CLOS_PGO:-1}" != 0 ]; then
  profile=$(bash scripts/pgo.sh)
fi
if [ -n "$profile" ]; then
  export RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$PWD/$profile" CARGO_TARGET_DIR=target/pgo/use
fi
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" \
  .venv/bin/maturin develop --release --quiet --extras test
