"""Running one scenario in the core: `clos.run`, `clos.validate` and `clos.load_results`.

The package's top level re-exports these; modules inside the package import them from here, so
that nothing below the top level depends on `clos/__init__.py`.
"""

from __future__ import annotations

import json
from os import PathLike
from typing import Any

from clos import _core
from clos.results.results import Results
from clos.scenario import Scenario

ScenarioLike = Scenario | dict[str, Any] | str | PathLike[str]

VERSION = _core.version()


def run(scenario: ScenarioLike, progress: _core.Progress | None = None) -> Results:
    """Simulate a scenario: a table, a TOML path, a bundled scenario name, or a Scenario.

    `progress`, if given, is called as `progress(simulated_s, end_s, flows_done, flows, events)`
    about every million events (`clos.cli.progress.RunProgress` draws a bar from it).
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
