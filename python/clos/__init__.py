"""clos: a packet-level simulator of Clos datacenter fabrics (VL2, fat tree, leaf-spine).

The simulation runs in the Rust extension `clos._core`; this package reads scenarios, shapes the
results into polars tables, runs sweeps over many scenarios (`clos.sweep`), and provides the
`clos` command.
"""

from __future__ import annotations

import json
from os import PathLike
from typing import Any

from clos import _core
from clos._core import ScenarioError
from clos.results import Results
from clos.scenario import Scenario, load_scenario

# Binds `clos.sweep` to the function, not the submodule of that name (which stays reachable as
# `from clos.sweep import SweepSpec`).
from clos.sweep import sweep

__all__ = [
    "Results",
    "Scenario",
    "ScenarioError",
    "__version__",
    "load_results",
    "load_scenario",
    "run",
    "sweep",
    "validate",
]

__version__ = _core.version()

ScenarioLike = Scenario | dict[str, Any] | str | PathLike[str]


def run(scenario: ScenarioLike, progress: _core.Progress | None = None) -> Results:
    """Simulate a scenario: a table, a TOML path, a bundled scenario name, or a Scenario.

    `progress`, if given, is called as `progress(simulated_s, end_s, flows_done, flows, events)`
    about every million events (`clos.progress.RunProgress` draws a bar from it).
    """
    return Results.from_core(_core.run(Scenario.of(scenario).to_json(), progress))


def validate(scenario: ScenarioLike, build: bool = False) -> dict[str, Any]:
    """The scenario as the core will run it, every default filled in; raises ScenarioError.
    With `build`, the run is also set up (fabric, routes, workload) without simulating, so every
    check a run makes before it starts is made: a missing flows file, hosts beyond the fabric."""
    return json.loads(_core.validate(Scenario.of(scenario).to_json(), build))


def load_results(directory: str | PathLike[str]) -> Results:
    """Results saved earlier by `clos run` or Results.save."""
    return Results.load(directory)
