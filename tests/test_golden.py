"""Results do not change by accident (issue 6): golden summaries of small runs, compared exactly.

Each case is a bundled scenario cut to a few milliseconds, or the small leaf-spine under each
load-balancing scheme. The whole summary is compared except what measures the machine (CPU and
wall time, events/s, memory). Same scenario and seed must give bit-identical results, so any
difference is a change in behaviour. A change that is meant to alter event order or results
regenerates the files in its own commit, saying why, after checking that the statistics (FCT
percentiles, goodput) moved only within noise:

    CLOS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import clos
from clos.cli.schemes import schemes
from clos.scenario import Scenario, bundled_names

GOLDEN = Path(__file__).parent / "golden"
MACHINE = ("events_per_sec", "cpu_seconds", "wall_seconds", "peak_memory_bytes")

CASES = {
    **{name: (name, ["max_time=3ms"]) for name in bundled_names()},
    **{
        f"leaf-spine-{scheme.name}": ("leaf-spine-permutation", [f"routing.scheme={scheme.name}"])
        for scheme in schemes()
    },
}


def deterministic_part(summary: dict) -> dict:
    part = dict(summary)
    part["stats"] = {k: v for k, v in summary["stats"].items() if k not in MACHINE}
    # Through JSON, so that the comparison sees exactly what a file holds.
    return json.loads(json.dumps(part, sort_keys=True))


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_matches_its_golden_file(case: str):
    name, overrides = CASES[case]
    got = deterministic_part(clos.run(Scenario.load(name, overrides)).summary)
    path = GOLDEN / f"{case}.json"
    if os.environ.get("CLOS_UPDATE_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert path.exists(), f"no golden file for {case}: run with CLOS_UPDATE_GOLDEN=1 to create it"
    want = json.loads(path.read_text(encoding="utf-8"))
    changed = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    assert not changed, f"{case}: sections {changed} differ from {path.name}"


def test_every_golden_file_has_a_case():
    assert {path.stem for path in GOLDEN.glob("*.json")} <= set(CASES)
