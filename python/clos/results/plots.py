"""The figures of `clos report` and `clos compare`, each drawn from saved runs into one PNG.

Every function takes the runs to draw (label -> run; one run for a report, several overlaid for a
comparison) and the PNG path (none: only the figure, for a notebook), and returns a `Plot`. When the runs hold no data for a figure (an
optional table is empty, a summary section is absent in older results) the figure is skipped:
`Plot.skipped` says why and no file is written, so a report never fails on a thin run.

Figures are built with `matplotlib.figure.Figure`, not pyplot: no global figure registry that
grows with each plot, and no GUI backend needed on a headless machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from clos.results.page import Plot
from clos.results.run_folder import SavedRun

PS_PER_S = 1e12
DPI = 110
# The fabric's tiers in the order a packet meets them, so legends and bars read hop by hop.
TIERS = ("host_up", "tor_up", "agg_up", "core_down", "agg_down", "tor_down")
UPLINK_TIERS = ("tor_up", "agg_up")
# Above this many points a CDF is drawn through chosen order statistics: dense in the tail,
# where p99 and p99.9 live, sparse in the body, so million-flow runs plot in a blink.
CDF_POINTS = 4000

Runs = Mapping[str, SavedRun]


def _has(frame: pl.DataFrame, *columns: str) -> bool:
    return not frame.is_empty() and set(columns) <= set(frame.columns)


def _save(figure: Figure, path: Path | None) -> Path | None:
    figure.tight_layout()
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    return path


def _drawn(title: str, caption: str, figure: Figure, path: Path | None) -> Plot:
    """A drawn figure, saved to `path` when there is one."""
    return Plot(title, caption, _save(figure, path), figure=figure)


def _skip(title: str, caption: str, path: Path | None, reason: str) -> Plot:
    # A PNG left from an earlier report of the same folder would now be stale.
    if path is not None:
        path.unlink(missing_ok=True)
    return Plot(title, caption, skipped=reason)


def _cdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.sort(values[np.isfinite(values)])
    n = len(values)
    fraction = np.arange(1, n + 1) / n
    if n > CDF_POINTS:
        half = CDF_POINTS // 2
        picks = np.concatenate([np.linspace(0, n - 1, half), n - np.geomspace(1, n, half)])
        picks = np.unique(np.clip(picks.astype(np.int64), 0, n - 1))
        values, fraction = values[picks], fraction[picks]
    # Start the staircase at 0 so that even a single value draws a visible step.
    return np.concatenate([values[:1], values]), np.concatenate([[0.0], fraction])


def _draw_cdf(axes: Axes, values: np.ndarray, label: str) -> None:
    if np.isfinite(values).any():
        x, y = _cdf(values)
        axes.step(x, y, where="post", label=label)


def _legend(axes: Axes, entries: int) -> None:
    if entries > 1:
        axes.legend(fontsize="small")


def _tier_order(tiers: Sequence[str]) -> list[str]:
    known = [tier for tier in TIERS if tier in tiers]
    return known + sorted(set(tiers) - set(known))


def _grouped_bars(axes: Axes, groups: Sequence[str], series: Mapping[str, Sequence[float]]) -> None:
    """One cluster of bars per group, one bar per series; NaN draws no bar."""
    width = 0.8 / max(len(series), 1)
    positions = np.arange(len(groups))
    for i, (label, values) in enumerate(series.items()):
        axes.bar(positions + (i - (len(series) - 1) / 2) * width, values, width, label=label)
    axes.set_xticks(positions, groups, fontsize="small")


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else float("nan")


def fct_cdf(runs: Runs, path: Path | None = None) -> Plot:
    title = "Flow completion time"
    caption = "CDF of the completion time of finished flows (log scale)."
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    drawn = 0
    for label, run in runs.items():
        if not _has(run.flows, "finished", "fct_ps"):
            continue
        done = run.flows.filter(pl.col("finished") & (pl.col("fct_ps") > 0))
        if done.is_empty():
            continue
        _draw_cdf(axes, done["fct_ps"].to_numpy() / PS_PER_S, label)
        drawn += 1
    if not drawn:
        return _skip(title, caption, path, "no finished flows")
    axes.set_xscale("log")
    axes.set_xlabel("flow completion time (s)")
    axes.set_ylabel("fraction of flows")
    axes.grid(True, which="both", alpha=0.3)
    _legend(axes, drawn)
    return _drawn(title, caption, figure, path)


def slowdown_by_bucket(runs: Runs, path: Path | None = None) -> Plot:
    title = "Slowdown by flow size"
    caption = (
        "Mean and p99 slowdown (FCT over the FCT alone on an idle fabric) per flow-size bucket "
        "(log scale); an empty bucket has no bar."
    )
    groups: list[str] = []
    per_run: dict[str, dict[str, dict]] = {}
    for label, run in runs.items():
        buckets = run.get("fct", "buckets")
        if not isinstance(buckets, list):
            continue
        per_run[label] = {}
        for bucket in buckets:
            if isinstance(bucket, dict) and isinstance(bucket.get("label"), str):
                per_run[label][bucket["label"]] = bucket.get("slowdown") or {}
                if bucket["label"] not in groups:
                    groups.append(bucket["label"])
    series: dict[str, list[float]] = {}
    for label, buckets in per_run.items():
        for stat in ("mean", "p99"):
            name = stat if len(runs) == 1 else f"{label} {stat}"
            values = [_number(buckets.get(group, {}).get(stat)) for group in groups]
            # Log axes cannot show zero; a bucket without finished flows has no slowdown anyway.
            series[name] = [v if v > 0 else float("nan") for v in values]
    if not any(np.isfinite(v).any() for v in series.values()):
        return _skip(title, caption, path, "no flow-size bucket in the summary has finished flows")
    figure = Figure(figsize=(max(7, 1.2 * len(groups) * max(1, len(series) / 2)), 4.2))
    axes = figure.add_subplot()
    _grouped_bars(axes, groups, series)
    axes.set_yscale("log")
    # Slowdown is at least 1 by definition; start there so short bars stay visible, and label
    # ticks as plain numbers (2, 5, 10), not powers of ten.
    lowest = min(float(np.nanmin(v)) for v in series.values() if np.isfinite(v).any())
    axes.set_ylim(bottom=min(1.0, lowest / 1.5))
    axes.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    axes.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    axes.set_xlabel("flow size")
    axes.set_ylabel("slowdown")
    axes.grid(True, axis="y", which="both", alpha=0.3)
    axes.legend(fontsize="small")
    return _drawn(title, caption, figure, path)


def goodput_over_time(runs: Runs, path: Path | None = None) -> Plot:
    title = "Goodput over time"
    one = len(runs) == 1
    caption = (
        "Payload delivered per time bin, one line per service."
        if one
        else "Payload delivered per time bin, all services together, one line per run."
    )
    figure = Figure(figsize=(8, 4.2))
    axes = figure.add_subplot()
    drawn = 0
    for label, run in runs.items():
        series = run.timeseries
        if not _has(series, "bin_start_ps", "service", "goodput_bps"):
            continue
        if one:
            lines = {
                str(service): part.sort("bin_start_ps")
                for (service,), part in series.group_by("service", maintain_order=True)
            }
        else:
            lines = {
                label: series.group_by("bin_start_ps")
                .agg(pl.col("goodput_bps").sum())
                .sort("bin_start_ps")
            }
        for name, line in lines.items():
            ms = line["bin_start_ps"].to_numpy() / PS_PER_S * 1e3
            gbps = line["goodput_bps"].to_numpy() / 1e9
            if len(ms) > 1:
                # Draw the last bin to its end, as wide as the one before it.
                ms, gbps = np.append(ms, 2 * ms[-1] - ms[-2]), np.append(gbps, gbps[-1])
            axes.plot(ms, gbps, label=name, drawstyle="steps-post")
            drawn += 1
    if not drawn:
        return _skip(title, caption, path, "no goodput time series")
    axes.set_xlabel("time (ms)")
    axes.set_ylabel("goodput (Gb/s)")
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    _legend(axes, drawn)
    return _drawn(title, caption, figure, path)


def _with_tiers(run: SavedRun, table: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Samples of a per-link table tagged with their link's tier and source switch."""
    if not _has(table, "link", *columns) or not _has(run.links, "id", "tier", "src"):
        return pl.DataFrame()
    links = run.links.select(
        pl.col("id").cast(pl.Int64).alias("link"), "tier", pl.col("src").alias("switch")
    )
    return table.with_columns(pl.col("link").cast(pl.Int64)).join(links, on="link")


def queue_length_cdf(run: SavedRun, path: Path | None = None) -> Plot:
    title = "Queue length per tier"
    caption = (
        "Left: CDF of sampled switch-port queue lengths, one line per tier. Right: CDF of the "
        "standard deviation of queue lengths across one switch's uplinks at one sample time "
        "(population stdev; zero when the uplinks are evenly loaded; cf. DRILL Fig. 2)."
    )
    samples = _with_tiers(run, run.queues, "time_ps", "bytes")
    if samples.is_empty():
        return _skip(title, caption, path, "no queue samples (output.queue_interval unset)")
    figure = Figure(figsize=(11, 4.2))
    lengths, spread = figure.subplots(1, 2)
    tiers = _tier_order(samples["tier"].unique().to_list())
    for tier in tiers:
        kb = samples.filter(pl.col("tier") == tier)["bytes"].to_numpy() / 1e3
        _draw_cdf(lengths, kb, tier)
    lengths.set_xlabel("queue length (KB)")
    lengths.set_ylabel("fraction of samples")
    lengths.grid(True, alpha=0.3)
    lengths.legend(fontsize="small")
    stdevs = (
        samples.filter(pl.col("tier").is_in(UPLINK_TIERS))
        .group_by("tier", "switch", "time_ps")
        .agg(pl.col("bytes").cast(pl.Float64).std(ddof=0).alias("stdev"), pl.len().alias("n"))
        .filter(pl.col("n") > 1)
    )
    for tier in _tier_order(stdevs["tier"].unique().to_list()):
        kb = stdevs.filter(pl.col("tier") == tier)["stdev"].to_numpy() / 1e3
        _draw_cdf(spread, kb, tier)
    if stdevs.is_empty():
        spread.text(
            0.5, 0.5, "no switch with two sampled uplinks", ha="center", transform=spread.transAxes
        )
    else:
        spread.legend(fontsize="small")
    spread.set_xlabel("stdev of uplink queue lengths (KB)")
    spread.set_ylabel("fraction of (switch, time) samples")
    spread.grid(True, alpha=0.3)
    return _drawn(title, caption, figure, path)


def utilisation_cdf(run: SavedRun, path: Path | None = None) -> Plot:
    title = "Link utilisation per tier"
    caption = (
        "CDF of link utilisation, one line per tier: over the whole run (left) and per time bin "
        "(right, when the run recorded per-link time series)."
    )
    if not _has(run.links, "tier", "utilisation"):
        return _skip(title, caption, path, "the links table has no utilisation column")
    binned = _with_tiers(run, run.link_timeseries, "bin_start_ps", "utilisation")
    figure = Figure(figsize=(11 if not binned.is_empty() else 7, 4.2))
    panels = [(run.links, "over the whole run")]
    if not binned.is_empty():
        panels.append((binned, "per time bin"))
    axes_list = figure.subplots(1, len(panels), squeeze=False)[0]
    for axes, (frame, what) in zip(axes_list, panels, strict=True):
        tiers = _tier_order(frame["tier"].unique().to_list())
        for tier in tiers:
            _draw_cdf(axes, frame.filter(pl.col("tier") == tier)["utilisation"].to_numpy(), tier)
        axes.set_xlabel(f"utilisation {what}")
        axes.set_ylabel("fraction of links" if what.startswith("over") else "fraction of bins")
        axes.set_xlim(-0.02, 1.02)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    return _drawn(title, caption, figure, path)


def split_fairness_over_time(run: SavedRun, path: Path | None = None) -> Plot:
    title = "Split fairness over time"
    caption = (
        "Jain's index of the bytes each switch sent on each of its uplinks per time bin; solid: "
        "mean over switches, dashed: worst switch (1 = perfectly even split; cf. VL2 §5.2). "
        "Bins in which a switch sent nothing up are left out."
    )
    binned = _with_tiers(run, run.link_timeseries, "bin_start_ps", "bytes")
    if not binned.is_empty():
        binned = binned.filter(pl.col("tier").is_in(UPLINK_TIERS))
    if binned.is_empty():
        return _skip(title, caption, path, "no per-link time series for uplinks")
    bytes_ = pl.col("bytes").cast(pl.Float64)
    jain = (
        binned.group_by("tier", "switch", "bin_start_ps")
        .agg(
            (bytes_.sum() ** 2 / (pl.len() * (bytes_**2).sum())).alias("jain"),
            pl.len().alias("n"),
        )
        .filter((pl.col("n") > 1) & pl.col("jain").is_finite())
        .group_by("tier", "bin_start_ps")
        .agg(pl.col("jain").mean().alias("mean"), pl.col("jain").min().alias("min"))
        .sort("bin_start_ps")
    )
    if jain.is_empty():
        return _skip(title, caption, path, "no bin in which a switch sent on two uplinks")
    figure = Figure(figsize=(8, 4.2))
    axes = figure.add_subplot()
    for tier in _tier_order(jain["tier"].unique().to_list()):
        part = jain.filter(pl.col("tier") == tier)
        ms = part["bin_start_ps"].to_numpy() / PS_PER_S * 1e3
        (line,) = axes.plot(ms, part["mean"].to_numpy(), label=f"{tier} mean")
        axes.plot(ms, part["min"].to_numpy(), "--", color=line.get_color(), label=f"{tier} min")
    axes.set_xlabel("time (ms)")
    axes.set_ylabel("Jain's index across uplinks")
    axes.set_ylim(0, 1.05)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    return _drawn(title, caption, figure, path)


def per_hop_queueing(runs: Runs, path: Path | None = None) -> Plot:
    title = "Queueing delay and drops per hop"
    caption = (
        "Left: mean and p99 queueing delay of packets at each tier, in the order a packet meets "
        "them (cf. DRILL Fig. 6c and 14c). Right: packets dropped at each tier."
    )
    rows: dict[str, dict[str, dict]] = {}
    for label, run in runs.items():
        tiers = run.get("queueing", "tiers")
        if isinstance(tiers, list):
            rows[label] = {t["tier"]: t for t in tiers if isinstance(t, dict) and "tier" in t}
    # The summary lists tiers hop by hop; keep its order (first run first) over ours.
    order = list(dict.fromkeys(tier for by_tier in rows.values() for tier in by_tier))
    if not order:
        return _skip(title, caption, path, "the summary has no per-hop queueing section")
    hops = {}
    for by_tier in rows.values():
        for tier, row in by_tier.items():
            hops.setdefault(tier, row.get("hop"))
    groups = [f"{tier}\n{hops[tier]}" if hops.get(tier) else tier for tier in order]
    one = len(runs) == 1
    delays: dict[str, list[float]] = {}
    drops: dict[str, list[float]] = {}
    for label, by_tier in rows.items():
        for stat in ("mean", "p99"):
            name = stat if one else f"{label} {stat}"
            delays[name] = [_number(by_tier.get(t, {}).get(f"{stat}_s")) * 1e6 for t in order]
        drops["drops" if one else label] = [_number(by_tier.get(t, {}).get("drops")) for t in order]
    figure = Figure(figsize=(max(11, 1.6 * len(order) * max(1, len(delays) / 2)), 4.6))
    delay_axes, drop_axes = figure.subplots(1, 2)
    _grouped_bars(delay_axes, groups, delays)
    delay_axes.set_ylabel("queueing delay (µs)")
    delay_axes.grid(True, axis="y", alpha=0.3)
    delay_axes.legend(fontsize="small")
    _grouped_bars(drop_axes, groups, drops)
    drop_axes.set_ylabel("packets dropped")
    drop_axes.grid(True, axis="y", alpha=0.3)
    _legend(drop_axes, len(drops))
    return _drawn(title, caption, figure, path)
