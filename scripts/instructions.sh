#!/usr/bin/env bash
# The instruction-count gate (docs/performance.md, "Instruction counts"): run the callgrind
# benchmarks in crates/clos-core/benches/instructions and compare each count with the committed
# baseline; fails if any grew by more than 10%.
#
#   scripts/instructions.sh            check against the baseline (test.sh runs this)
#   scripts/instructions.sh --update   rewrite the baseline; commit it on its own, saying why
#
# Needs valgrind and gungraun-runner 0.20.0 (the version of the gungraun crate); the runner is
# installed into cargo's bin folder when missing, once per machine.
#
# Counts depend on the compiler (inlining, code generation) as much as on the code. The baseline
# records rustc's, valgrind's and the runner's versions, and the check refuses to compare counts
# made with others (exit 2) rather than blame the code. There is no rust-toolchain.toml pinning
# 1.95.0: a machine whose rustup lacks that exact toolchain would try to download it, and
# without network access every build, not only this check, would fail.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNNER_VERSION=0.20.0
command -v valgrind >/dev/null || { echo "error: valgrind is required: apt-get install valgrind" >&2; exit 1; }
BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$BIN:$PATH"
if [ "$(gungraun-runner --version 2>/dev/null)" != "gungraun-runner $RUNNER_VERSION" ]; then
  echo "installing gungraun-runner $RUNNER_VERSION into $BIN" >&2
  # A debug build: it only parses callgrind's output, as fast either way here, and it builds in
  # half the time of an optimised one (about 70 s instead of 140 s on two cores).
  cargo install gungraun-runner --version "$RUNNER_VERSION" --locked --debug --quiet
fi

PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
RESULTS="${CARGO_TARGET_DIR:-target}/instructions.jsonl"
mkdir -p "$(dirname "$RESULTS")"
echo "instruction counts: building and running the callgrind benchmarks (about 20 s of callgrind)" >&2
# One JSON summary per benchmark on stdout; cargo's and gungraun's messages stay on stderr.
cargo bench --quiet -p clos-core --bench instructions -- --output-format=json >"$RESULTS"
"$PY" scripts/instructions.py "$RESULTS" "$@"
