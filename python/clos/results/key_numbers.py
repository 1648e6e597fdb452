"""The handful of numbers that characterise a run, shared by `clos report`, `clos compare` and
the tidy table of `clos sweep`.

Each is read from the saved summary alone, so a report of a large run never re-scans its tables,
and a value the run could not measure (null, or a section older results lack) shows as "-" in
the reports and as null in a sweep's table. Each key number is data (where in the summary, what
column, how to format) rather than a closure, so that reports format it and sweeps keep the
number itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from clos import units
from clos.results.summary_keys import summary_get

if TYPE_CHECKING:
    from clos.results.results import Results


def summary_value(fmt: Callable[[Any], str], *keys: str) -> Callable[[Results], str]:
    """The formatted summary value at `keys` of a run (fresh or saved)."""

    def value(run: Results) -> str:
        return fmt(number(run.get(*keys)))

    return value


def number(found: object) -> int | float | None:
    """A summary value as a number; text where a number belongs counts as missing."""
    if isinstance(found, bool) or not isinstance(found, int | float):
        return None
    return found


# Workloads whose flows arrive on their own clock: their goodput is what they offer, so its
# ratio to the fabric's ideal measures the load, not how well the fabric carried it.
OPEN_LOOP = {"poisson", "incast", "periodic"}


def workload_kinds(workload: Any) -> set[str]:
    """Every kind in a workload table, its services and backgrounds included."""
    if not isinstance(workload, dict):
        return set()
    kinds = {workload.get("kind")} - {None, "services"}
    for part in [*(workload.get("services") or []), workload.get("background")]:
        kinds |= workload_kinds(part)
    return kinds


def open_loop(summary: Any) -> bool:
    """Whether a run's workload (from its summary's scenario) has open-loop arrivals."""
    return bool(workload_kinds(summary_get(summary, "scenario", "workload")) & OPEN_LOOP)


class KeyNumber(NamedTuple):
    section: str
    quantity: str
    # The sweep table's column: snake case, with the unit when it has one (`fct_p99_s`).
    column: str
    keys: tuple[str, ...]
    fmt: Callable[[Any], str]
    # Measures the simulator rather than the network, so it varies from run to run and machine
    # to machine (sweeps leave these out when they compare backends).
    timing: bool = False
    # Means nothing for open-loop workloads (the efficiency), so it is missing for them.
    closed_loop_only: bool = False

    def of(self, summary: dict[str, Any]) -> int | float | None:
        """The number in a run's summary, or None where the run did not or could not measure
        it."""
        if self.closed_loop_only and open_loop(summary):
            return None
        return number(summary_get(summary, *self.keys))

    def value(self, run: Results) -> str:
        return self.fmt(self.of(run.summary))

    @property
    def integer(self) -> bool:
        """Counts and byte sizes are integers in the summary, and stay so in a sweep's table."""
        return self.fmt in (units.count, units.megabytes)


# Sections group the rows of the HTML and terminal tables.
KEY_NUMBERS: list[KeyNumber] = [
    KeyNumber("flows", "flows", "flows", ("flows", "count"), units.count),
    KeyNumber("flows", "finished", "finished", ("flows", "finished"), units.count),
    KeyNumber("flows", "FCT mean", "fct_mean_s", ("flows", "fct_mean_s"), units.duration),
    KeyNumber("flows", "FCT p50", "fct_p50_s", ("flows", "fct_p50_s"), units.duration),
    KeyNumber("flows", "FCT p99", "fct_p99_s", ("flows", "fct_p99_s"), units.duration),
    KeyNumber("flows", "FCT p99.9", "fct_p999_s", ("flows", "fct_p999_s"), units.duration),
    KeyNumber(
        "flows",
        "short-flow FCT p99",
        "short_fct_p99_s",
        ("fct", "short", "fct_s", "p99"),
        units.duration,
    ),
    KeyNumber(
        "flows", "slowdown p99", "slowdown_p99", ("fct", "all", "slowdown", "p99"), units.ratio
    ),
    KeyNumber("flows", "retransmits", "retransmits", ("flows", "retransmits"), units.count),
    KeyNumber("flows", "timeouts", "timeouts", ("flows", "timeouts"), units.count),
    KeyNumber(
        "goodput", "aggregate goodput", "goodput_bps", ("goodput", "aggregate_bps"), units.rate
    ),
    KeyNumber(
        "goodput",
        "efficiency",
        "efficiency",
        ("goodput", "efficiency"),
        units.percent,
        closed_loop_only=True,
    ),
    KeyNumber("goodput", "Jain fairness", "jain", ("goodput", "jain"), units.ratio),
    KeyNumber(
        "goodput",
        "completion time",
        "completion_time_s",
        ("goodput", "completion_time_s"),
        units.duration,
    ),
    KeyNumber("packets", "sent", "packets_sent", ("packets", "sent"), units.count),
    KeyNumber("packets", "dropped", "packets_dropped", ("packets", "dropped"), units.count),
    KeyNumber(
        "simulator",
        "events/s",
        "events_per_sec",
        ("stats", "events_per_sec"),
        units.millions_per_second,
        timing=True,
    ),
    KeyNumber(
        "simulator", "CPU time", "cpu_seconds", ("stats", "cpu_seconds"), units.duration, True
    ),
    KeyNumber(
        "simulator",
        "peak memory",
        "peak_memory_bytes",
        ("stats", "peak_memory_bytes"),
        units.megabytes,
        timing=True,
    ),
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


# (section, quantity, formatted value): rows computed from more than one summary value.
Row = tuple[str, str, Callable[["Results"], str]]

# Shown only when a run modelled VL2's directory (a `[directory]` table; docs/directory.md).
# Reports only: a sweep's table keeps the key numbers above.
DIRECTORY_NUMBERS: list[Row] = [
    ("directory", "lookups", _directory(units.count, "lookups")),
    ("directory", "cache hits", _directory(units.count, "cache_hits")),
    ("directory", "lookup wait mean", _directory(units.duration, "lookup_wait_mean_s")),
    ("directory", "lookup wait p99", _directory(units.duration, "lookup_wait_p99_s")),
    ("directory", "misdelivered", _directory(units.count, "misdelivered")),
    ("directory", "corrections", _directory(units.count, "corrections")),
    ("directory", "caches converged", slowest_migration(units.duration, "senders_converged_s")),
]


def key_numbers(runs: Sequence[Results]) -> list[Row]:
    """The rows that apply to these runs: the directory's only if one of them modelled it."""
    with_directory = any(isinstance(run.get("directory"), dict) for run in runs)
    rows: list[Row] = [(k.section, k.quantity, k.value) for k in KEY_NUMBERS]
    return rows + (DIRECTORY_NUMBERS if with_directory else [])


def rows(runs: Sequence[Results]) -> list[tuple[str, ...]]:
    """(section, quantity, one value per run); a section is named only on its first row."""
    shown, previous = [], None
    for section, quantity, value in key_numbers(runs):
        shown.append(("" if section == previous else section, quantity, *(value(r) for r in runs)))
        previous = section
    return shown
