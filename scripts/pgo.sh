#!/usr/bin/env bash
# The profile for a profile-guided build of the core (docs/performance.md, "A profile-guided
# build"). Builds the Python extension instrumented (-Cprofile-generate), runs the training
# scenarios through it (scripts/pgo_train.py: every benchmark and bundled scenario, cut short),
# and merges what they counted with the toolchain's own llvm-profdata. Prints the profile's path,
# or nothing where the toolchain has no llvm-profdata (then the build is a plain one, slower but
# with the same results: profile guidance changes code layout and inlining, never a result).
#
# Profiles are kept under target/pgo/ by a hash of the core's sources and the toolchain, so an
# unchanged core is trained once. Called by setup.sh; CLOS_PGO=0 there skips all of this.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null; then
  # The profile format follows the compiler's LLVM, so the tool must come with the toolchain.
  rustup component add llvm-tools >/dev/null 2>&1 || true
fi
if [ ! -x "$profdata" ]; then
  echo "note: this Rust toolchain has no llvm-profdata (rustup component add llvm-tools): building the core without profile guidance, which runs the benchmarks 5-12% slower" >&2
  exit 0
fi
# What the profile depends on: the code it counts, the training, and the compiler.
key=$({
  rustc -vV
  find crates/clos-core crates/clos-py Cargo.toml Cargo.lock scripts/pgo.sh scripts/pgo_train.py \
    python/clos/data/bench python/clos/data/scenarios -type f -not -path '*/target/*' |
    LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -c1-16)
out=target/pgo/$key.profdata
if [ ! -f "$out" ]; then
  raw="$PWD/target/pgo/raw"
  echo "training the core's profile-guided build (once per change to the core; CLOS_PGO=0 skips it)" >&2
  RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$raw" CARGO_TARGET_DIR=target/pgo/train \
    VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" \
    .venv/bin/maturin develop --release --quiet >&2
  rm -rf "$raw" # the build's own scripts and macros, instrumented too, wrote profiles as they ran
  LLVM_PROFILE_FILE="$raw/train-%p.profraw" .venv/bin/python scripts/pgo_train.py >&2
  rm -f target/pgo/*.profdata # profiles of earlier sources
  "$profdata" merge -o "$out" "$raw"/*.profraw
  rm -rf "$raw"
fi
echo "$out"
