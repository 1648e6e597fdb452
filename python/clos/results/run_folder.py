"""A saved run as reports read it: the summary plus whichever tables the folder holds.

Reports must work on any results folder a user still has, so this reader is lenient where
`Results.load` is strict: only `summary.json` is required; a table that is missing becomes an
empty frame, and the plots that need it are skipped. Folders from before the per-service time
series hold `goodput.parquet` instead of `timeseries.parquet`; it is read as one service, "all".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from clos.results.results import SUMMARY, TABLES, Results

LEGACY_GOODPUT = "goodput.parquet"

# A sweep's folder (`clos sweep`, `clos.sweep`): its table, one row per run, names each run's
# folder under `runs/` in its `run` column, after the columns of the swept parameters.
SWEEP_TABLE = "sweep.parquet"
SWEEP_RUNS = "runs"
SWEEP_RUN_COLUMN = "run"


@dataclass(frozen=True, eq=False)
class SavedRun(Results):
    """`Results` read back leniently, with the folder they came from."""

    folder: Path

    @property
    def name(self) -> str:
        """The scenario's name when the summary records it, else the folder's."""
        name = self.get("scenario", "name")
        return name if isinstance(name, str) and name else self.folder.name


def load_run(directory: str | Path) -> SavedRun:
    """Read a results folder; raises OSError (shown to users as one line) if it holds no results."""
    folder = Path(directory)
    summary_path = folder / SUMMARY
    if not summary_path.is_file():
        raise FileNotFoundError(
            f"{folder} does not hold clos results: missing {SUMMARY} "
            "(a results folder is written by `clos run`)"
        )
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise OSError(f"{summary_path}: not a readable summary ({error})") from None
    if not isinstance(summary, dict):
        raise OSError(f"{summary_path}: not a readable summary (expected a JSON object)")
    tables = {table: _table(folder / f"{table}.parquet") for table in TABLES}
    if tables["timeseries"].is_empty() and (folder / LEGACY_GOODPUT).is_file():
        tables["timeseries"] = _legacy_timeseries(_table(folder / LEGACY_GOODPUT))
    return SavedRun(summary=summary, folder=folder, **tables)


def _table(path: Path) -> pl.DataFrame:
    if not path.is_file():
        return pl.DataFrame()
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        # A truncated or foreign file is the user's to fix, so it reaches them as one line.
        raise OSError(f"{path}: not a readable Parquet file ({error})") from None


def _legacy_timeseries(goodput: pl.DataFrame) -> pl.DataFrame:
    """Old `goodput.parquet` (bin_start_ps, bytes) as one-service timeseries rows.

    It recorded no bin width, so the width is taken as the smallest gap between bin starts.
    """
    if goodput.height < 2 or not {"bin_start_ps", "bytes"} <= set(goodput.columns):
        return pl.DataFrame()
    starts = goodput["bin_start_ps"].unique().sort()
    width_ps = starts.diff().drop_nulls().min()
    if not width_ps:
        return pl.DataFrame()
    return goodput.select(
        "bin_start_ps",
        pl.lit("all").alias("service"),
        "bytes",
        (pl.col("bytes").cast(pl.Float64) * 8 / (width_ps / 1e12)).alias("goodput_bps"),
    )


def is_sweep(folder: Path) -> bool:
    """A sweep's folder rather than one run's."""
    return (folder / SWEEP_TABLE).is_file() and not (folder / SUMMARY).is_file()


def sweep_runs(folder: Path) -> list[tuple[str, Path]]:
    """A sweep's runs in its table's order, each labelled by its parameters (`k=v, ...`)."""
    table = _table(folder / SWEEP_TABLE)
    if SWEEP_RUN_COLUMN not in table.columns:
        raise OSError(
            f"{folder / SWEEP_TABLE}: not a sweep's table (no `{SWEEP_RUN_COLUMN}` column)"
        )
    parameters = table.columns[: table.columns.index(SWEEP_RUN_COLUMN)]
    return [
        (
            ", ".join(f"{name}={row[name]}" for name in parameters) or row[SWEEP_RUN_COLUMN],
            folder / SWEEP_RUNS / row[SWEEP_RUN_COLUMN],
        )
        for row in table.iter_rows(named=True)
    ]
