#!/usr/bin/env bash
# Builds the distributable wheel into target/wheels/ and prints its path: one abi3 wheel for
# CPython 3.11 and later, tagged manylinux by maturin's own audit, holding the core, the package,
# and its data (bundled scenarios, sweep specs, the papers' experiments). Profile-guided like
# setup.sh's build when the toolchain can (CLOS_PGO=0 builds it plainly), stripped of debug
# information, and stamped with the commit it was built from (`clos --version`).
# Needs setup.sh's .venv (for maturin); test.sh runs it through scripts/wheel-smoke.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  commit="$commit-dirty"
fi
profile=""
if [ "${CLOS_PGO:-1}" != 0 ]; then
  profile=$(bash scripts/pgo.sh)
fi
if [ -n "$profile" ]; then
  # The same flags and folder as setup.sh's build, so the core compiled there is reused.
  export RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$PWD/$profile" CARGO_TARGET_DIR=target/pgo/use
fi
rm -rf target/wheels
CLOS_COMMIT=$commit .venv/bin/maturin build --release --strip --quiet --out target/wheels >&2
ls target/wheels/clos-*.whl
