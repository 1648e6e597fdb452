"""The handful of numbers that characterise a run, shared by `clos report` and `clos compare`.

Each is read from the saved summary alone, so a report of a large run never re-scans its tables,
and a value the run could not measure (null, or a section older results lack) shows as "-".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clos import units
from clos.run_folder import SavedRun

KeyNumber = tuple[str, str, Callable[[SavedRun], str]]


def _from(fmt: Callable[[object], str], *keys: str) -> Callable[[SavedRun], str]:
    def value(run: SavedRun) -> str:
        found = run.get(*keys)
        # Text where a number belongs would make the formatter raise: show it as missing.
        return fmt(found if isinstance(found, int | float) else None)

    return value


# (section, quantity, value): sections group the rows of the HTML and terminal tables.
KEY_NUMBERS: list[KeyNumber] = [
    ("flows", "flows", _from(units.count, "flows", "count")),
    ("flows", "finished", _from(units.count, "flows", "finished")),
    ("flows", "FCT mean", _from(units.duration, "flows", "fct_mean_s")),
    ("flows", "FCT p50", _from(units.duration, "flows", "fct_p50_s")),
    ("flows", "FCT p99", _from(units.duration, "flows", "fct_p99_s")),
    ("flows", "FCT p99.9", _from(units.duration, "flows", "fct_p999_s")),
    ("flows", "short-flow FCT p99", _from(units.duration, "fct", "short", "fct_s", "p99")),
    ("flows", "slowdown p99", _from(units.ratio, "fct", "all", "slowdown", "p99")),
    ("flows", "retransmits", _from(units.count, "flows", "retransmits")),
    ("flows", "timeouts", _from(units.count, "flows", "timeouts")),
    ("goodput", "aggregate goodput", _from(units.rate, "goodput", "aggregate_bps")),
    ("goodput", "efficiency", _from(units.percent, "goodput", "efficiency")),
    ("goodput", "Jain fairness", _from(units.ratio, "goodput", "jain")),
    ("goodput", "completion time", _from(units.duration, "goodput", "completion_time_s")),
    ("packets", "sent", _from(units.count, "packets", "sent")),
    ("packets", "dropped", _from(units.count, "packets", "dropped")),
    ("simulator", "events/s", _from(units.millions_per_second, "stats", "events_per_sec")),
    ("simulator", "CPU time", _from(units.duration, "stats", "cpu_seconds")),
    ("simulator", "peak memory", _from(units.megabytes, "stats", "peak_memory_bytes")),
]


def rows(runs: Sequence[SavedRun]) -> list[tuple[str, ...]]:
    """(section, quantity, one value per run); a section is named only on its first row."""
    shown, previous = [], None
    for section, quantity, value in KEY_NUMBERS:
        shown.append(("" if section == previous else section, quantity, *(value(r) for r in runs)))
        previous = section
    return shown
