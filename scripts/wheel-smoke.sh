#!/usr/bin/env bash
# The wheel works outside the checkout: builds it (scripts/wheel.sh), installs it into a new
# virtual environment in a temporary folder, and from there runs what a new user would: a
# bundled scenario, a bundled sweep, the VL2 reproduction at the small scale, and a report (first
# refused in one line without the `plots` extra, then drawn with it), and the directory service
# installed as the README says (`cargo install`) and started through `clos directory up`. Prints
# the size of the default install. Fails on the first step that fails. Called by test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
wheel=$PWD/$(bash scripts/wheel.sh | tail -1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset CLOS_EXPERIMENTS CLOS_DIRECTORY_BIN
"$PY" -m venv venv
empty=$(du -sm venv | cut -f1)
venv/bin/python -m pip install --quiet --disable-pip-version-check "$wheel"
echo "default install: $(( $(du -sm venv | cut -f1) - empty )) MB in the virtual environment beyond its own $empty MB"
clos() { "$tmp/venv/bin/clos" "$@"; }
where=$(venv/bin/python -c 'import clos; print(clos.__file__)')
case "$where" in "$tmp"/venv/*) ;; *) echo "error: clos imported from $where, not the new environment" >&2; exit 1 ;; esac
clos --version | tee version.txt
! grep -q unknown version.txt || { echo "error: the wheel does not know its commit" >&2; exit 1; }
clos run fat-tree-k4 --out run --quiet >/dev/null
clos init starter.toml >/dev/null && clos validate starter.toml >/dev/null
clos sweep ecmp-vs-drill --set workload.stop=1ms --workers 2 --out sweep --quiet >/dev/null
test -s sweep/sweep.parquet
clos reproduce vl2 --scale small --out reproduce --quiet >/dev/null
test -s reproduce/claims.csv
status=0
clos report run 2>report.err || status=$?
[ "$status" -eq 2 ] && grep -q "pip install 'clos\[plots\]'" report.err || {
  echo "error: clos report without matplotlib should name the plots extra (exit $status):" >&2
  cat report.err >&2
  exit 1
}
venv/bin/python -m pip install --quiet --disable-pip-version-check "$wheel[plots]"
clos report run >/dev/null
test -s run/report.html
# The README's install command for the directory service; the target folder is test.sh's, whose
# release build of the binary it reuses.
CARGO_TARGET_DIR="$repo/target" cargo install --locked --quiet --path "$repo/crates/clos-directory" --root cargo
PATH="$tmp/cargo/bin:$PATH" clos directory up --etcd 1 --servers 1 --for 2s --dir directory >/dev/null
echo "wheel smoke test passed: $(basename "$wheel") outside the checkout"
