"""Rich tables of results: several runs side by side, benchmark timings, sweeps and partitions
(the run table `clos run` prints is `run_table.py`'s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import polars as pl
from rich import box
from rich.table import Table
from rich.text import Text

from clos import units
from clos.cli.bench import CommandTiming
from clos.cli.run_table import FCT, Metric, efficiency, flow_total_metric, summary_metric
from clos.results.results import Results
from clos.sweep.batch import COLUMNS

COMPARISON: list[Metric] = [
    ("completion time", summary_metric("goodput", "completion_time_s", units.duration)),
    ("efficiency", efficiency),
    ("Jain fairness", summary_metric("goodput", "jain", units.ratio)),
    ("aggregate goodput", summary_metric("goodput", "aggregate_bps", units.rate)),
    *FCT,
    ("retransmits", flow_total_metric("retransmits")),
    ("drops", summary_metric("packets", "dropped", units.count)),
    ("events/s", summary_metric("stats", "events_per_sec", units.millions_per_second)),
    ("CPU time", summary_metric("stats", "cpu_seconds", units.duration)),
    ("peak memory", summary_metric("stats", "peak_memory_bytes", units.megabytes)),
]


BENCH_COLUMNS = ("CPU", "wall", "events", "events/s", "sim/CPU", "delivered/CPU s", "peak mem")


def comparison_table(runs: Mapping[str, Results], title: str) -> Table:
    table = Table(title=title)
    table.add_column("")
    for name in runs:
        table.add_column(name, justify="right")
    for label, value in COMPARISON:
        table.add_row(label, *(value(results) for results in runs.values()))
    return table


def bench_table(
    runs: Sequence[tuple[str, Results]],
    cpu_targets: Mapping[str, float],
    memory_targets: Mapping[str, float],
) -> Table:
    """Simulator speed per benchmark, against its CPU-time and memory targets where it has them."""
    table = Table(title="benchmarks")
    table.add_column("name", no_wrap=True)
    for header in BENCH_COLUMNS:
        table.add_column(header, justify="right")
    table.add_column("target", no_wrap=True)
    for name, results in runs:
        stats = results.summary["stats"]
        cpu = stats["cpu_seconds"]
        peak = stats["peak_memory_bytes"]
        delivered = int(results.timeseries["bytes"].sum())
        targets = [
            _target(f"<= {limit} CPU s", cpu <= limit)
            for limit in [cpu_targets.get(name)]
            if limit is not None
        ] + [
            _target(f"<= {units.megabytes(limit)}", peak <= limit)
            for limit in [memory_targets.get(name)]
            if limit is not None
        ]
        table.add_row(
            name,
            units.duration(cpu),
            units.duration(stats["wall_seconds"]),
            units.count(stats["events"]),
            units.millions_per_second(stats["events_per_sec"]),
            units.ratio(stats["simulated_seconds"] / cpu if cpu else None),
            units.megabytes(delivered / cpu if cpu else None),
            units.megabytes(peak),
            Text("\n").join(targets) if targets else Text(units.MISSING),
        )
    return table


def command_table(runs: Sequence[tuple[str, CommandTiming]], targets: Mapping[str, float]) -> Table:
    """`clos run` end to end against the Rust example binary (or, where it is not built, the
    core's own run), per benchmark: CPU seconds (user + system) and wall seconds, medians."""
    table = Table(title="clos run, end to end")
    table.add_column("name", no_wrap=True)
    for header in ("CPU", "against", "ref CPU", "CPU ratio", "wall", "ref wall", "wall ratio"):
        table.add_column(header, justify="right")
    table.add_column("target (CPU)", no_wrap=True)
    for name, t in runs:
        ratio = t.command_cpu / t.reference_cpu if t.reference_cpu else None
        wall_ratio = t.command_wall / t.reference_wall if t.reference_wall else None
        limit = targets.get(name)
        met = ratio is not None and limit is not None and ratio <= limit
        target = _target(f"<= {limit}x", met) if limit is not None else Text(units.MISSING)
        table.add_row(
            name,
            units.duration(t.command_cpu),
            t.reference,
            units.duration(t.reference_cpu),
            units.ratio(ratio),
            units.duration(t.command_wall),
            units.duration(t.reference_wall),
            units.ratio(wall_ratio),
            target,
        )
    return table


SCALING_COLUMNS = ("hosts", "events", "CPU", "events/s", "ns/event", "peak mem")


def scaling_table(runs: Sequence[tuple[str, Results]]) -> Table:
    """Simulator speed and memory against the fabric's size (docs/performance.md)."""
    table = Table(title="scaling")
    table.add_column("name", no_wrap=True)
    for header in SCALING_COLUMNS:
        table.add_column(header, justify="right")
    for name, results in runs:
        stats = results.summary["stats"]
        cpu, events = stats["cpu_seconds"], stats["events"]
        # Hosts counted by their NIC links, whatever the topology.
        hosts = int((results.links["tier"] == "host_up").sum())
        table.add_row(
            name,
            units.count(hosts),
            units.count(events),
            units.duration(cpu),
            units.millions_per_second(stats["events_per_sec"]),
            f"{cpu / events * 1e9:.0f}" if events else units.MISSING,
            units.megabytes(stats["peak_memory_bytes"]),
        )
    return table


def _target(what: str, met: bool) -> Text:
    return Text(f"{what} ").append("met" if met else "missed", style="green" if met else "bold red")


# The sweep table's columns a terminal has room for, with short headers; the files hold them all.
SWEEP_SHOWN = {
    "finished": "done",
    "fct_p50_s": "FCT p50",
    "fct_p99_s": "FCT p99",
    "efficiency": "efficiency",
    "jain": "Jain",
    "packets_dropped": "drops",
}


def sweep_table(table: pl.DataFrame, parameters: Sequence[str], title: str) -> Table:
    """One row per run: its parameter values, then a few key numbers formatted as in reports."""
    shown = [column for column in COLUMNS if column.column in SWEEP_SHOWN]
    headers = [*parameters, *(SWEEP_SHOWN[column.column] for column in shown)]
    cells = [
        [str(row[name]) for name in parameters]
        + [column.fmt(row[column.column]) for column in shown]
        for row in table.iter_rows(named=True)
    ]
    # No vertical rules, so that a few parameters and the key numbers fit 80 columns.
    rich_table = Table(title=title, box=box.SIMPLE_HEAD)
    for index, header in enumerate(headers):
        # Values keep their width (a cut number misleads); on a narrow terminal headers wrap.
        width = max((len(row[index]) for row in cells), default=0)
        justify: Literal["left", "right"] = "left" if index < len(parameters) else "right"
        rich_table.add_column(header, justify=justify, min_width=width)
    for row in cells:
        rich_table.add_row(*row)
    return rich_table


def sweep_stats_table(stats: pl.DataFrame, parameters: Sequence[str], title: str) -> Table:
    """One row per combination of the parameters other than the seed: the mean over seeds of a
    few key numbers, each ± the half-width of its 95% confidence interval."""
    swept = [p for p in parameters if p in stats.columns]
    shown = [c for c in COLUMNS if c.column in SWEEP_SHOWN and f"{c.column}_mean" in stats.columns]
    rich_table = Table(title=title, box=box.SIMPLE_HEAD)
    for name in [*swept, "seeds"]:
        rich_table.add_column(name)
    for column in shown:
        rich_table.add_column(f"{SWEEP_SHOWN[column.column]} (95% CI)", justify="right")
    for row in stats.iter_rows(named=True):
        cells = [str(row[name]) for name in swept] + [str(row["seeds"])]
        for column in shown:
            mean, half = row[f"{column.column}_mean"], row[f"{column.column}_ci95"]
            # A mean of counts is not a count: one decimal.
            fmt = (lambda v: "-" if v is None else f"{v:,.1f}") if column.integer else column.fmt
            cells.append(fmt(mean) + ("" if half is None else f" ± {fmt(half)}"))
        rich_table.add_row(*cells)
    return rich_table


def _spread(part: Mapping[str, float]) -> str:
    return f"{part['min']:,} / {part['mean']:,.1f} / {part['max']:,}"


def partition_table(name: str, cut: Mapping[str, Any]) -> Table:
    """How a fabric is cut for a parallel engine (`clos partition`, docs/parallel.md)."""
    table = Table(title=f"{name}: partitions", show_header=False, box=box.SIMPLE)
    table.add_column("what", no_wrap=True)
    table.add_column("value")
    lookahead = cut["lookahead_ps"]
    rows = [
        ("rule", cut["rule"]),
        ("partitions", units.count(cut["partitions"])),
        ("hosts per partition (min / mean / max)", _spread(cut["hosts"])),
        ("switches per partition", _spread(cut["switches"])),
        ("ports per partition", _spread(cut["ports"])),
        ("cut links", f"{cut['cut_links']:,} of {cut['links']:,}"),
        ("channels (partition pairs joined)", units.count(cut["channels"])),
        ("lookahead", "none (one partition)" if lookahead is None else f"{lookahead / 1e6:.4f} us"),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def window_table(analysis: Mapping[str, Any]) -> Table:
    """A run counted per window of the lookahead, and what windows would gain (`--analyse`)."""
    table = Table(title="windows of the lookahead", show_header=False, box=box.SIMPLE)
    table.add_column("what", no_wrap=True)
    table.add_column("value")
    part = analysis["per_partition"]
    rows = [
        ("simulated", units.duration(analysis["simulated_ps"] / 1e12)),
        ("events", units.count(analysis["events"])),
        ("windows", units.count(analysis["windows"])),
        ("events per window", f"{analysis['events_per_window']:,.1f}"),
        ("events per partition (min / mean / max)", _spread(part)),
        (
            "global events (serial steps)",
            f"{analysis['global_events']:,} ({analysis['global_steps']:,})",
        ),
        ("events crossing partitions", units.percent(analysis["crossing_fraction"])),
        ("flow starts crossing at once", units.count(analysis["instant_crossings"])),
        ("cost of an event, one thread", f"{analysis['ns_per_event']:.0f} ns"),
        ("barrier round, 2 threads (spin)", f"{analysis['barrier_ns']:.0f} ns"),
        ("barrier round, 2 threads (std)", f"{analysis['std_barrier_ns']:.0f} ns"),
        ("cores here", str(analysis["cores"])),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def estimate_table(analysis: Mapping[str, Any]) -> Table:
    """The window engine's estimated speedup per thread count (an upper bound)."""
    table = Table(title="estimated speedup of windows (upper bound)")
    slow = f"with a {analysis['slow_barrier_ns'] / 1e3:g} us barrier"
    for header in ("threads", "speedup", "efficiency", "balance bound", slow):
        table.add_column(header, justify="right")
    for e in analysis["estimates"]:
        table.add_row(
            str(e["threads"]),
            f"{e['speedup']:.2f}x",
            units.percent(e["efficiency"]),
            f"{e['balance_bound']:.2f}x",
            f"{e['speedup_slow_barrier']:.2f}x",
        )
    return table


def _same_results(a: Results, b: Results) -> bool:
    """Whether two runs computed the same thing: their summaries but for what the run cost, and
    their flow and link tables."""

    def computed(results: Results) -> dict[str, Any]:
        return {k: v for k, v in results.summary.items() if k not in ("stats", "run", "scenario")}

    tables = ("flows", "links", "queues", "timeseries", "link_timeseries")
    return computed(a) == computed(b) and all(getattr(a, t).equals(getattr(b, t)) for t in tables)


def threads_table(measured: Sequence[tuple[str, Results, Sequence[tuple[int, Results]]]]) -> Table:
    """`clos bench --threads`: per benchmark, the sequential run, then the partitioned engine at
    each thread count, with speedups side by side (all measured in this one invocation)."""
    table = Table(title="partitioned engine: speedup by threads")
    for column in ("benchmark", "engine", "wall time", "speedup", "efficiency", "vs sequential"):
        table.add_column(column, justify="left" if column in ("benchmark", "engine") else "right")
    table.add_column("identical")
    for name, sequential, runs in measured:
        base_wall = sequential.summary["stats"]["wall_seconds"]
        table.add_row(name, "sequential", units.duration(base_wall), "", "", "1.00x", "")
        first_threads, first = runs[0]
        first_wall = first.summary["stats"]["wall_seconds"]
        for threads, results in runs:
            wall = results.summary["stats"]["wall_seconds"]
            speedup = first_wall / wall if wall > 0 else float("nan")
            table.add_row(
                "",
                f"{threads} thread{'s' if threads != 1 else ''}",
                units.duration(wall),
                f"{speedup:.2f}x",
                f"{speedup * first_threads / threads:.0%}",
                f"{base_wall / wall:.2f}x" if wall > 0 else "-",
                "yes" if _same_results(first, results) else Text("NO", style="bold red"),
            )
        table.add_section()
    return table
