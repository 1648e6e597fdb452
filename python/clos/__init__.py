"""clos: a packet-level simulator of Clos datacenter fabrics (VL2, fat tree, leaf-spine).

The simulation runs in the Rust extension `clos._core`. The public API is here: `run`,
`validate`, `partition`, `load_results`, `load_scenario`, `sweep`, `Results`, `Scenario`. What is where:

- `clos.units`, `clos.build_info`, `clos.extras`: formatting, version, optional installs;
- `clos.scenario`: a scenario read, overridden and checked;
- `clos.results`: a run's results: tables, key numbers, plots, the report and `clos compare`;
- `clos.simulation`: one run in the core (`run`, `validate`, `load_results`, `partition`);
- `clos.sweep`: many runs: sweep specs, batches, local or Dask executors, the run cache;
- `clos.reproduce`: the seed papers' experiments, their claims and the verdict page;
- `clos.cli`: the `clos` command, its terminal tables, benchmarks and the directory front end.

Each imports only those above it, or its own part without a cycle (tests/test_house.py checks
both).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from clos._core import ScenarioError

if TYPE_CHECKING:
    from clos.results.results import Results
    from clos.scenario import Scenario, load_scenario
    from clos.simulation import load_results, partition, run, validate
    from clos.sweep import sweep

# The rest is imported when first used (PEP 562): `results` and `sweep` import polars, a quarter
# of a second, which `clos run`, `clos validate` and the library's own run need only once the
# core has finished (`clos.simulation` imports them while the core runs).
_LAZY = {
    "Results": "clos.results.results",
    "Scenario": "clos.scenario",
    "load_scenario": "clos.scenario",
    "load_results": "clos.simulation",
    "partition": "clos.simulation",
    "run": "clos.simulation",
    "validate": "clos.simulation",
    "sweep": "clos.sweep.sweep",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return importlib.import_module("clos.simulation").VERSION
    if name not in _LAZY:
        raise AttributeError(f"module 'clos' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "Results",
    "Scenario",
    "ScenarioError",
    "__version__",
    "load_results",
    "load_scenario",
    "partition",
    "run",
    "sweep",
    "validate",
]
