"""A sweep's runs summarised over seeds: for every combination of the other swept parameters,
each key number's mean over the seeds, the half-width of its 95% confidence interval, and the
number of seeds that measured it.

The interval is Student's t interval for the mean of n independent runs (seeds draw independent
random streams), `t(0.975, n - 1) * s / sqrt(n)` with `s` the sample standard deviation. It says
how well n seeds pin down the mean of the quantity over seeds; with one seed there is no
interval (null). Runs that could not measure a number (null) are left out of its mean and count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from clos.sweep.batch import COLUMNS

SEED = "seed"
SEEDS_COLUMN = "seeds"
MEAN = "_mean"
CI95 = "_ci95"

# t(0.975, df) for df = 1..30 (two-sided 95%); above 30 the normal's 1.96 is within 2%.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """The 97.5th percentile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("a t interval needs at least two samples")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def interval(values: Sequence[float]) -> tuple[float | None, float | None, int]:
    """(mean, 95% half-width, n) of the values that are not None; None where undefined."""
    present = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(present)
    if n == 0:
        return None, None, 0
    mean = sum(present) / n
    if n == 1:
        return mean, None, 1
    variance = sum((v - mean) ** 2 for v in present) / (n - 1)
    return mean, t975(n - 1) * math.sqrt(variance / n), n


def metrics(table: pl.DataFrame) -> list[str]:
    """The key numbers a summary over seeds covers: those that measure the network (not the
    simulator's own timing) and that the table holds."""
    return [c.column for c in COLUMNS if not c.timing and c.column in table.columns]


def seed_statistics(table: pl.DataFrame, parameters: Sequence[str]) -> pl.DataFrame:
    """One row per combination of the swept parameters other than `seed`, in the order they
    first appear: those parameters, `seeds` (the runs in the group), then for every key number
    `<column>_mean` and `<column>_ci95` (the interval's half-width: the mean is within
    mean ± ci95 with 95% confidence)."""
    groups = [p for p in parameters if p != SEED]
    names = metrics(table)
    order: dict[tuple, list[dict]] = {}
    for row in table.iter_rows(named=True):
        order.setdefault(tuple(row[g] for g in groups), []).append(row)
    rows = []
    for key, members in order.items():
        out: dict = dict(zip(groups, key, strict=True))
        out[SEEDS_COLUMN] = len(members)
        for name in names:
            mean, half, _ = interval([m[name] for m in members])
            out[name + MEAN] = mean
            out[name + CI95] = half
        rows.append(out)
    schema: dict[str, pl.DataType] = {g: table.schema[g] for g in groups}
    schema[SEEDS_COLUMN] = pl.Int64()
    for name in names:
        schema[name + MEAN] = pl.Float64()
        schema[name + CI95] = pl.Float64()
    return pl.DataFrame(rows, schema=schema)
