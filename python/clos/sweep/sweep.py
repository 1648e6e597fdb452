"""Parameter sweeps: one base scenario, a list of values for each of a few of its fields, and
every combination run (cached, in parallel) into one tidy table.

A sweep spec is a TOML file (docs/sweeps.md):

    name = "ecmp-vs-drill"              # optional: names the output folder (default: file stem)
    base = "leaf-spine-websearch"       # a scenario file (relative to this spec) or bundled name
    seeds = 3                           # optional: also sweep seed = 1, 2, 3

    [set]                               # optional: fields fixed for every run
    stop = "20ms"

    [parameters]                        # dotted scenario keys, as `clos run --set`, and values
    "routing.scheme" = ["ecmp", "drill"]
    "workload.load" = [0.3, 0.6]

The runs are the cross product of the lists, the first parameter varying slowest and `seeds`
fastest; the table's rows come in that order whichever backend ran them.

`clos.sweep` (the function) shares its name with the subpackage that holds this module: after
`import clos`, the attribute is the function, so import the rest with `from clos.sweep import
SweepSpec`.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from clos import extras, simulation
from clos._core import ScenarioError
from clos.results.run_folder import SWEEP_RUNS, SWEEP_TABLE
from clos.scenario import (
    BUNDLED,
    Scenario,
    bundled_names,
    is_dotted_key,
    read_toml,
    set_field,
    slug,
)
from clos.sweep.batch import RunRecord, describe, run_many, summary_table
from clos.sweep.stats import seed_statistics

if TYPE_CHECKING:
    from distributed import Client

TABLE_FILES = (SWEEP_TABLE, "sweep.csv")
# Per combination of the other parameters: each key number's mean over seeds and its interval.
STATS_FILES = ("sweep-stats.parquet", "sweep-stats.csv")
RUNS_FOLDER = SWEEP_RUNS
_FIELDS = ("name", "base", "seeds", "set", "parameters")


class SpecError(ScenarioError):
    """A mistake in a sweep spec. A ScenarioError, so that whatever reports scenario mistakes as
    one line (the CLI's error handling) reports these too."""


# Specs that ship with the package, runnable by name: `clos sweep ecmp-vs-drill`.
BUNDLED_SPECS = Path(__file__).parents[1] / "data" / "sweeps"


def bundled_spec_names() -> list[str]:
    return sorted(path.stem for path in BUNDLED_SPECS.glob("*.toml"))


@dataclass(frozen=True)
class SweepSpec:
    """A base scenario and the values to try for each swept field, in the spec's order."""

    name: str
    base: Scenario
    parameters: dict[str, list[Any]]
    # How errors name the spec: its path, or "sweep spec" for one given as a table.
    where: str = "sweep spec"

    @classmethod
    def load(cls, path: str | PathLike[str]) -> SweepSpec:
        """A spec file, or the name of a bundled spec (`ecmp-vs-drill`)."""
        spec_path = Path(path)
        if not spec_path.is_file() and str(path) in bundled_spec_names():
            spec_path = BUNDLED_SPECS / f"{path}.toml"
        if not spec_path.is_file():
            raise FileNotFoundError(
                f"sweep spec not found: {spec_path} (bundled specs: {', '.join(bundled_spec_names())})"
            )
        return cls.from_table(
            read_toml(spec_path), spec_path.parent, str(spec_path), default_name=spec_path.stem
        )

    @classmethod
    def of(cls, spec: SweepSpec | dict[str, Any] | str | PathLike[str]) -> SweepSpec:
        """A spec, a spec's table (its base relative to the working directory), or a path."""
        if isinstance(spec, SweepSpec):
            return spec
        if isinstance(spec, dict):
            return cls.from_table(spec, Path.cwd())
        return cls.load(spec)

    @classmethod
    def from_table(
        cls,
        table: dict[str, Any],
        folder: Path,
        where: str = "sweep spec",
        default_name: str = "sweep",
    ) -> SweepSpec:
        """Read a parsed spec; `folder` is where a relative `base` is looked for."""
        unknown = [key for key in table if key not in _FIELDS]
        if unknown:
            raise SpecError(
                f"{where}: unknown field {unknown[0]!r}; a sweep spec has name, base, seeds, "
                "[set] and [parameters], and scenario fields go in [set] or [parameters] as "
                'dotted keys, e.g. "routing.scheme" = ["ecmp", "vlb"] (docs/sweeps.md)'
            )
        name = table.get("name", default_name)
        if not isinstance(name, str) or not name:
            raise SpecError(f'{where}: name: expected a non-empty string, e.g. name = "my-sweep"')
        base = _base(table.get("base"), folder, where)
        fixed = table.get("set", {})
        if not isinstance(fixed, dict):
            raise SpecError(f'{where}: set: expected a table, e.g. [set] then stop = "20ms"')
        parameters = _parameters(table.get("parameters", {}), where)
        if "seeds" in table:
            parameters = _with_seeds(parameters, table["seeds"], fixed, where)
        if not parameters:
            raise SpecError(
                f'{where}: parameters: nothing to sweep; add e.g. [parameters] "routing.scheme" '
                '= ["ecmp", "vlb"], or seeds = 3'
            )
        scenario = copy.deepcopy(base.table)
        for key, value in _flatten(fixed):
            if key in parameters:
                raise SpecError(
                    f'{where}: set."{key}": {key} is also a parameter; keep it in one of the two'
                )
            set_field(scenario, key, value, f'{where}: set."{key}"')
        return cls(name, Scenario(scenario, base.source), parameters, where)

    def with_overrides(self, assignments: Iterable[str]) -> SweepSpec:
        """The spec with fields fixed for every run (`clos sweep --set`), e.g. to shrink it."""
        assignments = list(assignments)
        for assignment in assignments:
            key = assignment.partition("=")[0].strip()
            if key in self.parameters:
                raise SpecError(
                    f"--set {assignment!r}: {key} is swept by {self.where}; remove it from "
                    "--set, or from the spec's [parameters]"
                )
        return replace(self, base=self.base.with_overrides(assignments))

    @property
    def size(self) -> int:
        count = 1
        for values in self.parameters.values():
            count *= len(values)
        return count

    def runs(self) -> list[tuple[dict[str, Any], Scenario]]:
        """Every combination, in order, each checked by the core; errors name the spec field."""
        runs = []
        for combination in itertools.product(*self.parameters.values()):
            parameters = dict(zip(self.parameters, combination, strict=True))
            table = copy.deepcopy(self.base.table)
            for key, value in parameters.items():
                set_field(table, key, copy.deepcopy(value), f'{self.where}: parameters."{key}"')
            scenario = Scenario(table, self.base.source)
            try:
                simulation.validate(scenario)
            except ScenarioError as error:
                raise self._blame(error, parameters) from None
            runs.append((parameters, scenario))
        return runs

    def _blame(self, error: ScenarioError, parameters: dict[str, Any]) -> SpecError:
        """Point at the parameter whose field the core rejects, else at the whole run."""
        message = str(error)
        field = message.partition(":")[0].strip()
        for key, value in parameters.items():
            if field == key or field.startswith(f"{key}.") or key.startswith(f"{field}."):
                return SpecError(
                    f'{self.where}: parameters."{key}" = {json.dumps(value, default=str)}: '
                    f"{message}"
                )
        return SpecError(f"{self.where}: the run {describe(parameters)}: {message}")


def _base(reference: Any, folder: Path, where: str) -> Scenario:
    if reference is None:
        raise SpecError(
            f'{where}: base: required; name the scenario to vary, e.g. base = "fat-tree-k4" (a '
            'bundled scenario) or base = "my-scenario.toml" (relative to the spec)'
        )
    if not isinstance(reference, str):
        raise SpecError(f"{where}: base: expected a scenario file or bundled name, a string")
    candidate = folder / reference
    if candidate.is_file():
        return Scenario.load(candidate)
    if reference in bundled_names():
        return Scenario.load(BUNDLED / f"{reference}.toml")
    raise SpecError(
        f"{where}: base: scenario not found: {candidate}; give a scenario file relative to the "
        f"spec's folder, or a bundled scenario ({', '.join(bundled_names())})"
    )


def _parameters(table: Any, where: str) -> dict[str, list[Any]]:
    if not isinstance(table, dict):
        raise SpecError(
            f'{where}: parameters: expected a table, e.g. [parameters] then "routing.scheme" = '
            '["ecmp", "vlb"]'
        )
    parameters: dict[str, list[Any]] = {}
    for key, values in _flatten(table):
        field = f'{where}: parameters."{key}"'
        if not is_dotted_key(key):
            raise SpecError(f"{field}: expected a dotted scenario key, e.g. routing.scheme")
        if not isinstance(values, list):
            raise SpecError(
                f"{field}: expected a list of values, e.g. [{json.dumps(values, default=str)}]; "
                "a field fixed for every run goes in [set]"
            )
        if not values:
            raise SpecError(f"{field}: empty list; give at least one value, or remove the line")
        # As JSON text, so that 1, 1.0 and true count as different values, as they are in TOML.
        seen: set[str] = set()
        for value in values:
            text = json.dumps(value, sort_keys=True, default=str)
            if text in seen:
                raise SpecError(f"{field}: {text} is listed twice; list each value once")
            seen.add(text)
        parameters[key] = values
    return parameters


def _with_seeds(
    parameters: dict[str, list[Any]], seeds: Any, fixed: dict[str, Any], where: str
) -> dict[str, list[Any]]:
    """`seeds = N` is `seed = [1, ..., N]`, swept fastest (the innermost loop)."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise SpecError(f"{where}: seeds: expected a whole number of seeds >= 1, e.g. seeds = 5")
    if "seed" in parameters or "seed" in fixed:
        where_else = "parameters" if "seed" in parameters else "set"
        raise SpecError(f"{where}: seeds: seed is also in [{where_else}]; keep one of the two")
    return {**parameters, "seed": list(range(1, seeds + 1))}


def _flatten(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) pairs, so that `"routing.scheme" = [...]` and `routing.scheme = [...]`
    (a nested table in TOML) mean the same."""
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


@dataclass(frozen=True, eq=False)
class SweepResult:
    """A finished sweep: its table, the records behind it, and the folder holding both."""

    name: str
    table: pl.DataFrame
    records: list[RunRecord]
    folder: Path
    # The swept keys, which are the table's first columns.
    parameters: list[str]
    # The table summarised over seeds (`stats.seed_statistics`).
    stats: pl.DataFrame
    # `sweep.html`, or None where matplotlib (the `plots` extra) is not installed.
    page: Path | None

    @property
    def simulated(self) -> int:
        """Distinct scenarios simulated by this call."""
        return len({record.key for record in self.records if not record.cached})

    @property
    def from_cache(self) -> int:
        """Distinct scenarios found in the cache."""
        return len({record.key for record in self.records if record.cached})


def run_sweep(
    spec: SweepSpec | dict[str, Any] | str | PathLike[str],
    out: str | PathLike[str] | None = None,
    *,
    overrides: Iterable[str] = (),
    workers: int | None = None,
    scheduler: str | Client | None = None,
    progress: bool = True,
    tables: bool = True,
) -> SweepResult:
    """Run a sweep into `out` (default `results/<spec name>`): runs cached in `out/runs/<key>/`,
    the table in `out/sweep.parquet` and `out/sweep.csv`, its means and 95% intervals over seeds
    in `out/sweep-stats.parquet` and `.csv`, and their plots in `out/sweep.html` (with the `plots`
    extra). See `run_many` for the options."""
    loaded = SweepSpec.of(spec).with_overrides(overrides)
    runs = loaded.runs()
    folder = Path(out) if out is not None else Path("results", slug(loaded.name))
    records = run_many(
        runs,
        folder / RUNS_FOLDER,
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        tables=tables,
        title=loaded.name,
    )
    parameters = list(loaded.parameters)
    table = summary_table(records, parameters)
    _write(table, folder, TABLE_FILES)
    stats = seed_statistics(table, parameters)
    _write(stats, folder, STATS_FILES)
    html = None
    if extras.installed("plots"):
        from clos.sweep.page import write_page  # matplotlib, an extra

        html = write_page(stats, parameters, loaded.name, folder)
    return SweepResult(loaded.name, table, records, folder, parameters, stats, html)


def sweep(
    spec: SweepSpec | dict[str, Any] | str | PathLike[str],
    out: str | PathLike[str] | None = None,
    *,
    overrides: Iterable[str] = (),
    workers: int | None = None,
    scheduler: str | Client | None = None,
    progress: bool = True,
    tables: bool = True,
) -> pl.DataFrame:
    """Run every combination of a sweep spec's parameters and return one row per run.

    `spec` is a spec file, its parsed table, or a SweepSpec. Runs already in `out/runs/` are not
    simulated again. `overrides` fix fields for every run (`["max_time=2ms"]`); `workers` sizes
    the local process pool (default: every CPU); `scheduler` sends the runs to a Dask cluster
    instead (an address such as `tcp://10.0.0.5:8786`, or a `distributed.Client`); `tables`
    False keeps only each run's summary.
    """
    return run_sweep(
        spec,
        out,
        overrides=overrides,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
        tables=tables,
    ).table


def _write(table: pl.DataFrame, folder: Path, names: tuple[str, str]) -> None:
    """Write both files beside temporary names first, so an old table is never half replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        temporary = folder / f".{name}.tmp"
        if name.endswith(".parquet"):
            table.write_parquet(temporary)
        else:
            table.write_csv(temporary)
        os.replace(temporary, folder / name)
