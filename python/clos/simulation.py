"""Running one scenario in the core: `clos.run`, `clos.validate`, `clos.load_results` and
`clos.partition`.

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

# Thread counts `partition` estimates a window engine's speedup at, unless told others.
DEFAULT_THREADS = (2, 4, 8, 16)


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


def partition(
    scenario: ScenarioLike,
    analyse: str | None = None,
    threads: Iterable[int] = DEFAULT_THREADS,
    overrides: Iterable[str] = (),
) -> dict[str, Any]:
    """How the scenario's fabric is cut for a parallel engine (docs/parallel.md): the rule, the
    partition count, hosts, switches and ports per partition (min, mean, max), the cut links,
    the lookahead (`lookahead_ps`) and each node's partition (`of_node`).

    With `analyse`, a simulated duration ("1ms"), the scenario also runs for that long, once
    plainly and once counting its events per partition per window of the lookahead; the dict
    then has an `analysis` part with the windows' numbers and the speedup a window engine would
    reach at each of `threads` (an upper bound: `estimates`). Raises ScenarioError on bad input.
    """
    loaded = Scenario.of(scenario).with_overrides(overrides)
    if analyse is None:
        return json.loads(_core.partition(loaded.to_json()))
    counts = _thread_counts(threads)
    if not isinstance(analyse, str) or not analyse.strip():
        raise _core.ScenarioError(
            f'analyse: give a simulated duration such as "1ms", got {analyse!r}'
        )
    timed = loaded.with_overrides([f"stop={analyse}"])
    try:
        return json.loads(_core.partition(timed.to_json(), counts))
    except _core.ScenarioError as error:
        if str(error).startswith("stop"):
            raise _core.ScenarioError(
                f'analyse: {analyse!r} is not a simulated duration (write it as "1ms" or '
                f'"500us"): {error}'
            ) from None
        raise


def _thread_counts(threads: Iterable[int]) -> list[int]:
    """Thread counts as given, checked: whole numbers from 1 to 1024."""
    counts = list(threads)
    if not counts or not all(
        isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= 1024 for t in counts
    ):
        raise _core.ScenarioError(
            f"threads: give whole numbers of threads from 1 to 1024, such as 2,4,8,16; got {counts}"
        )
    return counts
