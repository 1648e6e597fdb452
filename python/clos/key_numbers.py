"""The handful of numbers that characterise a run, shared by `clos report` and `clos compare`.

Each is read from the saved summary alone, so a report of a large run never re-scans its tables,
and a value the run could not measure (null, or a section older results lack) shows as "-".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clos import units
from clos.results import Results

KeyNumber = tuple[str, str, Callable[[Results], str]]


def summary_value(fmt: Callable[[object], str], *keys: str) -> Callable[[Results], str]:
    """The formatted summary value at `keys` of a run (fresh or saved)."""

    def value(run: Results) -> str:
        found = run.get(*keys)
        # Text where a number belongs would make the formatter raise: show it as missing.
        return fmt(found if isinstance(found, int | float) else None)

    return value


# (section, quantity, value): sections group the rows of the HTML and terminal tables.
KEY_NUMBERS: list[KeyNumber] = [
    ("flows", "flows", summary_value(units.count, "flows", "count")),
    ("flows", "finished", summary_value(units.count, "flows", "finished")),
    ("flows", "FCT mean", summary_value(units.duration, "flows", "fct_mean_s")),
    ("flows", "FCT p50", summary_value(units.duration, "flows", "fct_p50_s")),
    ("flows", "FCT p99", summary_value(units.duration, "flows", "fct_p99_s")),
    ("flows", "FCT p99.9", summary_value(units.duration, "flows", "fct_p999_s")),
    ("flows", "short-flow FCT p99", summary_value(units.duration, "fct", "short", "fct_s", "p99")),
    ("flows", "slowdown p99", summary_value(units.ratio, "fct", "all", "slowdown", "p99")),
    ("flows", "retransmits", summary_value(units.count, "flows", "retransmits")),
    ("flows", "timeouts", summary_value(units.count, "flows", "timeouts")),
    ("goodput", "aggregate goodput", summary_value(units.rate, "goodput", "aggregate_bps")),
    ("goodput", "efficiency", summary_value(units.percent, "goodput", "efficiency")),
    ("goodput", "Jain fairness", summary_value(units.ratio, "goodput", "jain")),
    ("goodput", "completion time", summary_value(units.duration, "goodput", "completion_time_s")),
    ("packets", "sent", summary_value(units.count, "packets", "sent")),
    ("packets", "dropped", summary_value(units.count, "packets", "dropped")),
    ("simulator", "events/s", summary_value(units.millions_per_second, "stats", "events_per_sec")),
    ("simulator", "CPU time", summary_value(units.duration, "stats", "cpu_seconds")),
    ("simulator", "peak memory", summary_value(units.megabytes, "stats", "peak_memory_bytes")),
]


def slowest_migration(fmt: Callable[[object], str], key: str) -> Callable[[Results], str]:
    """The largest `key` over a run's migrations; missing if any migration lacks it (a move that
    did not happen, or caches that never converged) or the run had none."""

    def value(run: Results) -> str:
        moves = run.get("directory", "migrations")
        moves = moves if isinstance(moves, list) else []
        found = [m.get(key) for m in moves if isinstance(m, dict)]
        numbers = [x for x in found if isinstance(x, int | float)]
        return fmt(max(numbers) if numbers and len(numbers) == len(found) else None)

    return value


def _directory(fmt: Callable[[object], str], key: str) -> Callable[[Results], str]:
    return summary_value(fmt, "directory", key)


# Shown only when a run modelled VL2's directory (a `[directory]` table; docs/directory.md).
DIRECTORY_NUMBERS: list[KeyNumber] = [
    ("directory", "lookups", _directory(units.count, "lookups")),
    ("directory", "cache hits", _directory(units.count, "cache_hits")),
    ("directory", "lookup wait mean", _directory(units.duration, "lookup_wait_mean_s")),
    ("directory", "lookup wait p99", _directory(units.duration, "lookup_wait_p99_s")),
    ("directory", "misdelivered", _directory(units.count, "misdelivered")),
    ("directory", "corrections", _directory(units.count, "corrections")),
    ("directory", "caches converged", slowest_migration(units.duration, "senders_converged_s")),
]


def key_numbers(runs: Sequence[Results]) -> list[KeyNumber]:
    """The rows that apply to these runs: the directory's only if one of them modelled it."""
    with_directory = any(isinstance(run.get("directory"), dict) for run in runs)
    return KEY_NUMBERS + (DIRECTORY_NUMBERS if with_directory else [])


def rows(runs: Sequence[Results]) -> list[tuple[str, ...]]:
    """(section, quantity, one value per run); a section is named only on its first row."""
    shown, previous = [], None
    for section, quantity, value in key_numbers(runs):
        shown.append(("" if section == previous else section, quantity, *(value(r) for r in runs)))
        previous = section
    return shown
