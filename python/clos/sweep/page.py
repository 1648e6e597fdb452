"""`sweep.html`: a sweep's key numbers plotted against what it swept, with their spread over
seeds.

Each figure is one key number. Its x-axis is the first swept parameter whose values are all
numbers (a load, a buffer size in bytes, a count), and each line is one combination of the
others (a scheme, say), drawn at the mean over seeds with a band for the 95% confidence interval
(`stats.py`). A sweep that varies no number draws one bar per combination, with the interval as
an error bar. The table below the figures holds every mean and interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

from clos.results import page
from clos.results.page import Plot
from clos.sweep.batch import COLUMNS
from clos.sweep.stats import CI95, MEAN, SEEDS_COLUMN

PAGE = "sweep.html"
PLOTS = "plots"
DPI = 110

# The key numbers drawn, in this order, when the sweep measured them.
PLOTTED = (
    "fct_mean_s",
    "fct_p99_s",
    "short_fct_p99_s",
    "slowdown_p99",
    "goodput_bps",
    "jain",
    "packets_dropped",
    "timeouts",
)

# How a column's unit is shown: its suffix, the axis label's unit and the factor to it.
_UNITS = (("_bps", "Gb/s", 1e-9), ("_s", "ms", 1e3))


def _scale(column: str) -> tuple[str, float]:
    for suffix, unit, factor in _UNITS:
        if column.endswith(suffix):
            return unit, factor
    return "", 1.0


def _label(column: str) -> str:
    quantity = next(c.quantity for c in COLUMNS if c.column == column)
    unit, _ = _scale(column)
    return f"{quantity} ({unit})" if unit else quantity


def _is_numeric(stats: pl.DataFrame, name: str) -> bool:
    return stats.schema[name].is_numeric() and stats[name].null_count() == 0


def write_page(stats: pl.DataFrame, parameters: Sequence[str], title: str, folder: Path) -> Path:
    """Write `folder/sweep.html` and its PNGs (in `folder/plots/`) from `seed_statistics`'
    table; returns the page's path."""
    swept = [p for p in parameters if p in stats.columns]
    x = next((p for p in swept if _is_numeric(stats, p) and stats[p].n_unique() > 1), None)
    lines = [p for p in swept if p != x]
    html = folder / PAGE
    plots = []
    for column in PLOTTED:
        if column + MEAN not in stats.columns or stats[column + MEAN].null_count() == len(stats):
            continue
        path = folder / PLOTS / f"sweep-{column}.png"
        plots.append(_draw(stats, column, x, lines, path))
    seeds = stats[SEEDS_COLUMN].max() if len(stats) else 0
    body = [
        page.heading(f"clos sweep: {title}", 1),
        page.paragraph(
            f"{len(stats)} combinations of {', '.join(swept) or 'nothing'}; "
            f"up to {seeds} seed{'s' if seeds != 1 else ''} each. Lines and bars are means over the "
            "seeds; bands and error bars the 95% confidence interval of the mean (Student's t), "
            "drawn where there are two seeds or more.",
            "note",
        ),
        *(page.figure(plot, html) for plot in plots),
        page.heading("Means and intervals"),
        _table(stats, swept),
    ]
    html.write_text(page.document(f"clos sweep: {title}", body), encoding="utf-8")
    return html


def _series_label(row: dict, lines: Sequence[str]) -> str:
    return ", ".join(f"{p}={row[p]}" for p in lines) if lines else "all runs"


def _draw(
    stats: pl.DataFrame, column: str, x: str | None, lines: Sequence[str], path: Path
) -> Plot:
    _, factor = _scale(column)
    label = _label(column)
    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot()
    rows = list(stats.iter_rows(named=True))
    if x is not None:
        series: dict[str, list[dict]] = {}
        for row in rows:
            series.setdefault(_series_label(row, lines), []).append(row)
        for name, members in series.items():
            members.sort(key=lambda r: r[x])
            xs = [r[x] for r in members]
            means = [_value(r[column + MEAN], factor) for r in members]
            halves = [_value(r[column + CI95], factor, 0.0) for r in members]
            (line,) = axes.plot(xs, means, marker="o", label=name)
            lows = [m - h for m, h in zip(means, halves, strict=True)]
            highs = [m + h for m, h in zip(means, halves, strict=True)]
            axes.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.2, linewidth=0)
        axes.set_xlabel(x)
        axes.legend(fontsize="small")
    else:
        names = [_series_label(row, lines) for row in rows]
        means = [_value(r[column + MEAN], factor) for r in rows]
        halves = [_value(r[column + CI95], factor, 0.0) for r in rows]
        axes.bar(range(len(rows)), means, yerr=halves, capsize=4, color="#4c72b0")
        axes.set_xticks(range(len(rows)), names, rotation=30 if len(rows) > 3 else 0, ha="right")
    axes.set_ylabel(label)
    axes.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    caption = f"{label}: mean over seeds" + (f" against {x}" if x else "") + ", 95% interval."
    return Plot(label, caption, path)


def _value(value: float | None, factor: float, missing: float = float("nan")) -> float:
    return missing if value is None else value * factor


def _table(stats: pl.DataFrame, swept: Sequence[str]) -> str:
    shown = [c for c in PLOTTED if c + MEAN in stats.columns]
    header = [*swept, SEEDS_COLUMN, *(_label(c) for c in shown)]
    cells = []
    for row in stats.iter_rows(named=True):
        values = []
        for column in shown:
            _, factor = _scale(column)
            mean, half = row[column + MEAN], row[column + CI95]
            if mean is None:
                values.append("-")
            elif half is None:
                values.append(f"{mean * factor:.4g}")
            else:
                values.append(f"{mean * factor:.4g} ± {half * factor:.2g}")
        cells.append([*(str(row[p]) for p in swept), str(row[SEEDS_COLUMN]), *values])
    return page.table(header, cells)
