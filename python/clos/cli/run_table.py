"""The table `clos run` prints: one run in detail, from its summary and two sums over its flows
table, drawn by `box_table.py`. `plain_run.py` prints it for a run whose tables are still in
the core; `main.py` for a `Results`. Neither needs polars, numpy or rich for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from clos import units
from clos.cli.box_table import BoxTable
from clos.results.key_numbers import open_loop, slowest_migration, summary_value


class Run(Protocol):
    """What the table reads of a run: `Results`, or `plain_run.HeldRun` (tables in the core)."""

    summary: dict[str, Any]

    def get(self, *keys: str) -> Any: ...

    def flow_total(self, column: str) -> int: ...


Metric = tuple[str, Callable[[Run], str]]


def summary_metric(section: str, key: str, fmt: Callable[[Any], str]) -> Callable[[Run], str]:
    """A summary value; `section` may be a dotted path (`fct.short.slowdown`)."""
    return summary_value(fmt, *section.split("."), key)


def flow_total_metric(column: str) -> Callable[[Run], str]:
    # The summary carries no per-flow counters; they are summed from the flows table.
    return lambda run: units.count(run.flow_total(column))


def efficiency(run: Run) -> str:
    if open_loop(run.summary):
        return "- (open loop)"
    return summary_metric("goodput", "efficiency", units.percent)(run)


FCT = [
    ("FCT mean", summary_metric("flows", "fct_mean_s", units.duration)),
    ("FCT p50", summary_metric("flows", "fct_p50_s", units.duration)),
    ("FCT p99", summary_metric("flows", "fct_p99_s", units.duration)),
    ("FCT p99.9", summary_metric("flows", "fct_p999_s", units.duration)),
]


def _engine(run: Run) -> str:
    """`sequential`, or the partitioned engine's partitions, threads and windows."""
    stats = run.summary.get("stats", {})
    if stats.get("engine") != "partitioned":
        return "sequential"
    threads = stats["threads"]
    return (
        f"partitioned: {stats['partitions']} partitions on {threads} "
        f"thread{'s' if threads != 1 else ''}, {units.count(stats['windows'])} windows"
    )


SECTIONS: dict[str, list[Metric]] = {
    "stats": [
        ("engine", _engine),
        ("events", summary_metric("stats", "events", units.count)),
        ("events/s", summary_metric("stats", "events_per_sec", units.millions_per_second)),
        ("CPU time", summary_metric("stats", "cpu_seconds", units.duration)),
        ("wall time", summary_metric("stats", "wall_seconds", units.duration)),
        ("simulated time", summary_metric("stats", "simulated_seconds", units.duration)),
        ("peak memory", summary_metric("stats", "peak_memory_bytes", units.megabytes)),
    ],
    "packets": [
        ("sent", summary_metric("packets", "sent", units.count)),
        ("delivered", summary_metric("packets", "delivered", units.count)),
        ("dropped", summary_metric("packets", "dropped", units.count)),
        ("in flight", summary_metric("packets", "in_flight", units.count)),
    ],
    "flows": [
        ("flows", summary_metric("flows", "count", units.count)),
        ("finished", summary_metric("flows", "finished", units.count)),
        *FCT,
        ("FCT max", summary_metric("flows", "fct_max_s", units.duration)),
        ("retransmits", flow_total_metric("retransmits")),
        ("timeouts", flow_total_metric("timeouts")),
    ],
    "slowdown": [
        ("short flows mean", summary_metric("fct.short.slowdown", "mean", units.ratio)),
        ("short flows p99", summary_metric("fct.short.slowdown", "p99", units.ratio)),
        ("long flows mean", summary_metric("fct.long.slowdown", "mean", units.ratio)),
        ("all flows p99.9", summary_metric("fct.all.slowdown", "p999", units.ratio)),
    ],
    "dupACKs and reordering": [
        ("flows with dupACKs", summary_metric("flows", "with_dupacks_fraction", units.percent)),
        ("flows with > 3 dupACKs", summary_metric("flows", "with_over_3_dupacks", units.count)),
        ("flows reordered", summary_metric("flows", "reordered_fraction", units.percent)),
        (
            "reordered, no loss",
            summary_metric("flows", "reordered_without_loss_fraction", units.percent),
        ),
        ("dupACKs from loss", summary_metric("flows", "dupacks_loss", units.count)),
        ("dupACKs from reordering", summary_metric("flows", "dupacks_reordering", units.count)),
        ("spurious retransmits", summary_metric("flows", "spurious_retransmits", units.count)),
    ],
    "goodput": [
        ("completion time", summary_metric("goodput", "completion_time_s", units.duration)),
        ("aggregate goodput", summary_metric("goodput", "aggregate_bps", units.rate)),
        ("ideal goodput", summary_metric("goodput", "ideal_bps", units.rate)),
        ("efficiency", efficiency),
        ("Jain fairness", summary_metric("goodput", "jain", units.ratio)),
    ],
}


# Shown only when the run modelled VL2's directory (docs/directory.md).
DIRECTORY: list[Metric] = [
    ("lookups", summary_metric("directory", "lookups", units.count)),
    ("cache hits", summary_metric("directory", "cache_hits", units.count)),
    ("lookup wait mean", summary_metric("directory", "lookup_wait_mean_s", units.duration)),
    ("lookup wait p99", summary_metric("directory", "lookup_wait_p99_s", units.duration)),
    ("misdelivered", summary_metric("directory", "misdelivered", units.count)),
    ("reports", summary_metric("directory", "reports", units.count)),
    ("corrections", summary_metric("directory", "corrections", units.count)),
    ("caches converged", slowest_migration(units.duration, "senders_converged_s")),
    ("first delivery after a move", slowest_migration(units.duration, "first_delivery_s")),
]


def _receivers(run: Run) -> list[dict[str, Any]]:
    groups = run.summary.get("multicast", {}).get("groups", [])
    return [r for g in groups for r in g.get("receivers", [])]


def _worst_receiver(
    key: str, fmt: Callable[[Any], str], worst: Callable[..., Any] = min
) -> Callable[[Run], str]:
    """The worst member's `key` over every group (lowest delivery, highest latency)."""

    def value(run: Run) -> str:
        values = [r[key] for r in _receivers(run) if r.get(key) is not None]
        return fmt(worst(values)) if values else "-"

    return value


def _worst_in_period(period: str) -> Callable[[Run], str]:
    """The lowest share of what it was sent that a member received in `period`."""

    def value(run: Run) -> str:
        shares = [
            r["periods"][period]["received"] / r["periods"][period]["expected"]
            for r in _receivers(run)
            if r["periods"][period]["expected"] > 0
        ]
        return units.percent(min(shares)) if shares else "-"

    return value


# Shown only when the run had multicast groups (docs/multicast.md).
MULTICAST: list[Metric] = [
    ("datagrams sent", summary_metric("multicast.packets", "sent", units.count)),
    ("replicas made", summary_metric("multicast.packets", "replicas", units.count)),
    ("copies delivered", summary_metric("multicast.packets", "delivered", units.count)),
    ("copies dropped", summary_metric("multicast.packets", "dropped", units.count)),
    ("worst member delivery", _worst_receiver("delivery_ratio", units.percent)),
    ("worst member, detour period", _worst_in_period("detour")),
    ("worst member, after rebuild", _worst_in_period("rebuilt")),
    ("worst member latency max", _worst_receiver("latency_max_s", units.duration, max)),
    ("copies detoured", summary_metric("multicast.detours", "copies", units.count)),
    ("groups unrepaired", summary_metric("multicast.rebuilds", "groups_unrepaired", units.count)),
    (
        "groups over capacity",
        lambda r: units.count(len(r.summary["multicast"]["tables"]["overflow_groups"])),
    ),
]

# Shown only when the run aggregated groups into meta-groups (`multicast.aggregate`).
MULTICAST_AGGREGATION: list[Metric] = [
    ("layer", lambda r: str(r.get("multicast", "aggregation", "layer"))),
    (
        "switches aggregated",
        lambda r: units.count(len(r.get("multicast", "aggregation", "switches") or [])),
    ),
    ("extra copies sent", summary_metric("multicast.aggregation.copies", "extra", units.count)),
    ("copies discarded", summary_metric("multicast.packets", "discarded", units.count)),
    (
        "overhead, measured",
        summary_metric("multicast.aggregation.copies", "overhead", units.percent),
    ),
    (
        "overhead, Algorithm 2",
        summary_metric("multicast.aggregation", "predicted_overhead", units.percent),
    ),
]


def run_table(name: str, run: Run) -> BoxTable:
    table = BoxTable(name, [("section", "left"), ("quantity", "left"), ("value", "right")])
    sections = dict(SECTIONS)
    if isinstance(run.get("directory"), dict):
        sections["directory"] = DIRECTORY
    if isinstance(run.get("multicast"), dict):
        sections["multicast"] = MULTICAST
        if isinstance(run.get("multicast", "aggregation"), dict):
            sections["meta-groups"] = MULTICAST_AGGREGATION
    for section, metrics in sections.items():
        for row, (label, value) in enumerate(metrics):
            table.add_row(section if row == 0 else "", label, value(run))
        table.add_section()
    return table


def unfinished_note(name: str, run: Run) -> str | None:
    """What to say when a run meant to end with its last flow hit its time limit first: its
    numbers then describe the flows that finished, which is easy to miss in the table."""
    count, finished = run.get("flows", "count"), run.get("flows", "finished")
    if run.get("scenario", "stop") != "all_flows_done" or not count or finished >= count:
        return None
    limit = run.get("stats", "simulated_seconds")
    return (
        f"note: {name} reached its time limit ({limit:g} s) with {count - finished:,} of "
        f"{count:,} flows unfinished, so all_flows_done was not reached and the FCTs are of the "
        "finished flows only: raise max_time, or check the workload's start times and sizes"
    )
