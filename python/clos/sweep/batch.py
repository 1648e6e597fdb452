"""Many runs at once: each validated, looked up in a cache, run where needed, and gathered into
one tidy table.

This is the machinery under `clos sweep`, and it takes an explicit list so that other commands
(reproducing a paper's set of experiments, say) can run their own lists through it:

    records = run_many([({"routing.scheme": s}, base.with_overrides([f"routing.scheme={s}"]))
                        for s in ("ecmp", "vlb")], cache="results/mine/runs")
    table = summary_table(records)

The order of the returned records, and so of the table's rows, is the order of the list given,
whichever backend ran the runs and in whatever order they finished.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from clos import simulation, units
from clos._core import ScenarioError
from clos.results.key_numbers import KEY_NUMBERS, KeyNumber
from clos.results.run_folder import SWEEP_RUN_COLUMN
from clos.scenario import Scenario
from clos.sweep import executors
from clos.sweep.executors import Job, JobFailed, Outcome
from clos.sweep.run_cache import RunCache, build_digest, scenario_key

if TYPE_CHECKING:
    from distributed import Client

Parameters = Mapping[str, Any]

# Beyond the key numbers of reports: how much work a run was, and its wall time.
EXTRA_NUMBERS = [
    KeyNumber("simulator", "events", "events", ("stats", "events"), units.count),
    KeyNumber(
        "simulator",
        "simulated time",
        "simulated_seconds",
        ("stats", "simulated_seconds"),
        units.duration,
    ),
    KeyNumber(
        "simulator", "wall time", "wall_seconds", ("stats", "wall_seconds"), units.duration, True
    ),
]
COLUMNS = [*KEY_NUMBERS, *EXTRA_NUMBERS]
TIMING_COLUMNS = tuple(column.column for column in COLUMNS if column.timing)
RUN_COLUMN = SWEEP_RUN_COLUMN


@dataclass(frozen=True)
class RunRecord:
    """One run of a batch: what it varied, what it measured, and where it is saved."""

    parameters: dict[str, Any]
    name: str
    key: str
    summary: dict[str, Any]
    # `<cache>/<key>`, loadable with `clos.load_results` when tables were kept; None without a cache.
    folder: Path | None
    # Found in the cache rather than simulated by this call.
    cached: bool


def describe(parameters: Parameters) -> str:
    """`routing.scheme="ecmp", seed=2`: a run as errors and progress name it."""
    return ", ".join(f"{key}={json.dumps(value, default=str)}" for key, value in parameters.items())


def run_many(
    runs: Sequence[tuple[Parameters, Scenario]],
    cache: str | PathLike[str] | None,
    *,
    scheduler: str | Client | None = None,
    workers: int | None = None,
    progress: bool = True,
    tables: bool = True,
    title: str = "runs",
) -> list[RunRecord]:
    """Run every (parameters, scenario) pair, each distinct scenario once, and return their
    records in the order given.

    - `cache`: folder of finished runs (`<cache>/<key>/`); runs found there are not simulated
      again and new ones are saved there as they finish, so an interrupted batch resumes. None
      runs everything and saves nothing.
    - `scheduler`: a Dask scheduler address (`tcp://host:8786`) or `distributed.Client`; without
      one, a local process pool of `workers` processes (default: every CPU this process may
      use). With one worker, or one run to do, runs happen in this process.
    - `tables`: save each run's Parquet tables beside its summary; False keeps only
      `summary.json` (much less to send back from a cluster and to store).
    - `parameters` are only carried into the records; they may be empty.

    Raises ScenarioError, naming the run, if any scenario is invalid (before anything runs), and
    RuntimeError if a run fails; runs finished before the failure stay cached.
    """
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers is not None and scheduler is not None:
        raise ValueError(
            "workers applies to the local process pool; with a Dask scheduler, the cluster's "
            "workers run the simulations (size it there)"
        )
    store = RunCache(cache) if cache is not None else None
    planned = [_plan(parameters, scenario) for parameters, scenario in runs]
    summaries: dict[str, dict[str, Any]] = {}
    cached: set[str] = set()
    jobs: dict[str, Job] = {}
    labels: dict[str, str] = {}
    for parameters, scenario, normalised, key in planned:
        if key in summaries or key in jobs:
            continue
        found = store.lookup(key, normalised, tables) if store else None
        if found is not None:
            summaries[key] = found
            cached.add(key)
        else:
            jobs[key] = (key, scenario.to_json())
            labels[key] = describe(parameters) or scenario.name
    # Connect first, so that a wrong address is reported before a progress bar appears.
    connected = executors.connect(scheduler) if isinstance(scheduler, str) and jobs else None
    try:
        with _progress_bar(progress, title, len(summaries) + len(jobs), len(cached)) as advance:
            for key, outcome in _execute(
                list(jobs.values()),
                tables,
                connected if connected is not None else scheduler,
                workers,
                labels,
            ):
                if store is not None:
                    store.store(key, outcome.summary, outcome.results)
                summaries[key] = outcome.summary
                advance()
    finally:
        if connected is not None:
            connected.close()
    return [
        RunRecord(
            parameters=dict(parameters),
            name=scenario.name,
            key=key,
            summary=summaries[key],
            folder=store.entry(key) if store else None,
            cached=key in cached,
        )
        for parameters, scenario, _, key in planned
    ]


def _plan(
    parameters: Parameters, scenario: Scenario
) -> tuple[Parameters, Scenario, dict[str, Any], str]:
    try:
        normalised = simulation.validate(scenario)
    except ScenarioError as error:
        raise ScenarioError(f"run {describe(parameters) or scenario.name}: {error}") from None
    return parameters, scenario, normalised, scenario_key(normalised)


def _execute(
    jobs: list[Job],
    tables: bool,
    scheduler: str | Client | None,
    workers: int | None,
    labels: Mapping[str, str],
) -> Iterator[tuple[str, Outcome]]:
    """Outcomes as they finish, from the backend the arguments choose, checked for version."""
    if not jobs:
        return
    if scheduler is not None:
        outcomes = executors.dask(jobs, tables, scheduler)
    else:
        count = min(workers or executors.default_workers(), len(jobs))
        if count == 1:
            outcomes = executors.in_process(jobs, tables)
        else:
            outcomes = executors.process_pool(jobs, tables, count)
    try:
        for key, outcome in outcomes:
            if outcome.version != simulation.VERSION:
                # The cache key names this clos's version; another's results would lie under it.
                raise RuntimeError(
                    f"a worker runs clos {outcome.version}, this process clos "
                    f"{simulation.VERSION}: install the same version on every worker"
                )
            if outcome.build != build_digest():
                raise RuntimeError(
                    f"a worker runs another build of clos {outcome.version} (core digest "
                    f"{outcome.build}, here {build_digest()}): install the same build on every worker"
                )
            yield key, outcome
    except JobFailed as failure:
        label = labels[failure.job]
        if isinstance(failure.error, ScenarioError):
            # Input only the run itself could check (a workload file gone missing, say).
            raise ScenarioError(f"run {label}: {failure.error}") from None
        raise RuntimeError(f"run {label} failed: {failure}") from failure.error


@contextmanager
def _progress_bar(shown: bool, title: str, total: int, done: int) -> Iterator[Any]:
    """A bar over runs (not simulated time: runs finish out of order on many workers)."""
    if not shown:
        yield lambda: None
        return
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs ({task.fields[cached]} from cache)"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True, highlight=False),
    )
    task = bar.add_task(title, total=total, completed=done, cached=done)
    with bar:
        yield lambda: bar.advance(task)


def summary_table(
    records: Sequence[RunRecord], parameters: Sequence[str] | None = None
) -> pl.DataFrame:
    """One row per run: a column per parameter (named by its dotted key), the run's cache key,
    and the key numbers from its summary as numbers (null where a run could not measure one).

    `parameters` orders the parameter columns; by default, as the records first name them.
    """
    names = list(parameters) if parameters is not None else _parameter_names(records)
    columns = [
        _parameter_column(name, [record.parameters.get(name) for record in records])
        for name in names
    ]
    columns.append(pl.Series(RUN_COLUMN, [record.key for record in records], dtype=pl.String))
    for key_number in COLUMNS:
        values = [key_number.of(record.summary) for record in records]
        if key_number.integer:
            values = [None if value is None else int(value) for value in values]
            columns.append(pl.Series(key_number.column, values, dtype=pl.Int64))
        else:
            columns.append(pl.Series(key_number.column, values, dtype=pl.Float64))
    return pl.DataFrame(columns)


def _parameter_names(records: Sequence[RunRecord]) -> list[str]:
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record.parameters))
    return list(names)


def _parameter_column(name: str, values: list[Any]) -> pl.Series:
    """Values of one type keep it; anything else (mixed types, lists, tables) becomes text, so
    that the table can always be written as CSV."""
    present = [value for value in values if value is not None]
    kinds = {type(value) for value in present}
    if kinds <= {bool}:
        return pl.Series(name, values, dtype=pl.Boolean)
    if kinds <= {int}:
        return pl.Series(name, values, dtype=pl.Int64)
    if kinds <= {int, float}:
        return pl.Series(name, values, dtype=pl.Float64)
    return pl.Series(name, [_as_text(value) for value in values], dtype=pl.String)


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str)
