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

from clos._core import ScenarioError
from clos.results.results import Results
from clos.scenario import Scenario, load_scenario
from clos.simulation import VERSION as __version__
from clos.simulation import load_results, partition, run, validate

# Binds `clos.sweep` to the function, not the subpackage of that name (which stays reachable as
# `from clos.sweep import SweepSpec`).
from clos.sweep import sweep

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
