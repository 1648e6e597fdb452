"""A run as `clos.run` and `clos.load_results` hand it over, for a notebook or a script: its
tables, its key numbers as an HTML table when a notebook shows it, tables with times in human
units, and the report's figures as matplotlib Figures instead of files.

    run = clos.run("leaf-spine-permutation", overrides=["routing.scheme=drill"])
    run                                  # a line; in a notebook, the key numbers' table
    run.table("flows", unit="ms")        # fct_ms, start_ms, ... instead of *_ps
    run.plot("fct_cdf")                  # a matplotlib Figure
    run.flows.to_pandas()                # with pandas installed
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from clos.results import key_numbers, page
from clos.results.results import TABLES, Results
from clos.units import PICOSECONDS

# Picoseconds per unit, for `Run.table`.
UNITS = PICOSECONDS


def _figures() -> dict[str, Callable[[Results], Any]]:
    """The report's figures by name (matplotlib is an extra: imported when one is drawn)."""
    from clos.results import plots
    from clos.results.fabric import draw_fabric

    def one(draw: Callable[..., Any]) -> Callable[[Results], Any]:
        return lambda run: draw({run_name(run): run})

    return {
        "fabric": lambda run: draw_fabric(run.links, title=f"{run_name(run)}: the fabric"),
        "fct_cdf": one(plots.fct_cdf),
        "slowdown_by_bucket": one(plots.slowdown_by_bucket),
        "goodput_over_time": one(plots.goodput_over_time),
        "per_hop_queueing": one(plots.per_hop_queueing),
        "queue_length_cdf": plots.queue_length_cdf,
        "utilisation_cdf": plots.utilisation_cdf,
        "split_fairness": plots.split_fairness_over_time,
    }


def run_name(run: Results) -> str:
    name = run.get("scenario", "name")
    return name if isinstance(name, str) and name else "run"


class Run(Results):
    """`Results` with what a notebook wants on top (this module's docstring)."""

    def _repr_html_(self) -> str:
        rows = key_numbers.rows([self])
        return page.heading(run_name(self), 3) + page.table(
            ("section", "quantity", "value"), rows, sections=True
        )

    def table(self, name: str, unit: str = "us") -> pl.DataFrame:
        """Table `name` with every `<x>_ps` column as `<x>_<unit>` (a float in `unit`: ns, us,
        ms or s); the other columns as they are."""
        if name not in TABLES:
            raise ValueError(f"no table {name!r}: the tables are {', '.join(TABLES)}")
        if unit not in UNITS:
            raise ValueError(f"unit {unit!r}: use one of {', '.join(UNITS)}")
        frame: pl.DataFrame = getattr(self, name)
        return frame.select(
            (pl.col(c).cast(pl.Float64) / UNITS[unit]).alias(c.removesuffix("_ps") + f"_{unit}")
            if c.endswith("_ps")
            else pl.col(c)
            for c in frame.columns
        )

    def plot(self, name: str) -> Any:
        """The report's figure `name` (fabric, fct_cdf, slowdown_by_bucket, goodput_over_time,
        per_hop_queueing, queue_length_cdf, utilisation_cdf, split_fairness) as a matplotlib
        Figure; raises ValueError, saying why, when the run has nothing to draw it from."""
        from clos import extras

        extras.require("plots", "Run.plot")
        figures = _figures()
        if name not in figures:
            raise ValueError(f"no figure {name!r}: the figures are {', '.join(figures)}")
        drawn = figures[name](self)
        if drawn.figure is None:
            raise ValueError(f"{name}: not drawn, {drawn.skipped}")
        _shown_in_notebooks()
        return drawn.figure


def _shown_in_notebooks() -> None:
    """In IPython, show a Figure that a cell returns as a PNG, as pyplot's inline backend does
    for its own figures (ours are built without pyplot)."""
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import select_figure_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        select_figure_formats(shell, {"png"})
