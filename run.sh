#!/usr/bin/env bash
# Build everything, then run the main job: with no arguments, the default VL2 experiment
# (ECMP vs VLB on the VL2 testbed). Any arguments are passed to `clos run`.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/clos run "$@"
