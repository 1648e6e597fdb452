"""Running one scenario in the core: `clos.run`, `clos.validate` and `clos.load_results`.

The package's top level re-exports these; modules inside the package import them from here, so
that nothing below the top level depends on `clos/__init__.py`.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable, Iterable
from os import PathLike
from typing import TYPE_CHECKING, Any

from clos import _core
from clos.scenario import Scenario

if TYPE_CHECKING:
    from clos.results.run import Run

ScenarioLike = Scenario | dict[str, Any] | str | PathLike[str]

VERSION = _core.version()


def run(
    scenario: ScenarioLike,
    progress: _core.Progress | None = None,
    overrides: Iterable[str] = (),
) -> Run:
    """Simulate a scenario: a table, a TOML path, a bundled scenario name, or a Scenario, with
    `overrides` as `clos run --set` takes them (`["routing.scheme=drill"]`).

    `progress`, if given, is called as `progress(simulated_s, end_s, flows_done, flows, events)`
    about every million events (`clos.cli.progress.RunProgress` draws a bar from it). The
    result (`clos.results.run.Run`) holds the tables as polars DataFrames, and shows its key
    numbers in a notebook; `run.plot(name)` draws the report's figures.
    """
    loaded = Scenario.of(scenario).with_overrides(overrides)
    return results_of(lambda: _core.run(loaded.to_json(), progress))


def results_of(core_run: Callable[[], _core.RunOutput]) -> Run:
    """`core_run()`'s output as results. Their tables are polars frames, and importing polars
    takes a quarter of a second: it is imported on another thread while the core simulates
    (the core releases the GIL), not before."""
    results = threading.Thread(target=importlib.import_module, args=("clos.results.run",))
    results.start()
    try:
        output = core_run()
    finally:
        results.join()
    from clos.results.run import Run

    return Run.from_core(output)


def validate(scenario: ScenarioLike, build: bool = False) -> dict[str, Any]:
    """The scenario as the core will run it, every default filled in; raises ScenarioError.
    With `build`, the run is also set up (fabric, routes, workload) without simulating, so every
    check a run makes before it starts is made: a missing flows file, hosts beyond the fabric."""
    return json.loads(_core.validate(Scenario.of(scenario).to_json(), build))


def load_results(directory: str | PathLike[str]) -> Run:
    """Results saved earlier by `clos run` or Results.save."""
    from clos.results.run import Run

    return Run.load(directory)
