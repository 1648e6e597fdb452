"""A picture of the fabric: its switches and hosts in layers, each link coloured by how busy it
was and marked where it dropped packets.

Nodes are read from the links table (`h3`, `tor0`, `agg2`, `spine1`, `core5`, `int0`), so a
saved run draws without the scenario. Layers go up from the hosts: ToRs (leaves), aggregation
switches, then the top tier (spines, cores or VL2's intermediates). A link's two directions are
one line, coloured by the busier direction's utilisation and drawn dashed red where either
dropped packets. Above `MAX_NODES` nodes a picture of every switch would be a smear, so the
fabric is drawn by tier instead: one box per layer, and one band per pair of layers labelled
with its links' utilisation (mean and maximum) and drops.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from clos.results.page import Plot

MAX_NODES = 400
DPI = 110
# Bottom to top. Leaf-spine names its leaves `tor` and has no aggregation layer.
LAYERS = {"h": 0, "tor": 1, "agg": 2}
TOP = ("spine", "core", "int")
ROLE_NAMES = {
    "h": "hosts",
    "tor": "ToRs",
    "agg": "aggregation",
    "spine": "spines",
    "core": "cores",
    "int": "intermediates",
}
COLORMAP = "viridis"


def _role(node: str) -> tuple[str, int]:
    match = re.fullmatch(r"([a-z_]+?)(\d+)", node)
    if match is None:
        return node, 0
    return match.group(1), int(match.group(2))


def _layer_of(roles: set[str]) -> dict[str, int]:
    layers = {role: LAYERS[role] for role in roles if role in LAYERS}
    top = max(layers.values(), default=0) + 1
    for role in roles - set(layers):
        layers[role] = top
    return layers


def _undirected(links: pl.DataFrame) -> pl.DataFrame:
    """One row per node pair: the busier direction's utilisation and both directions' drops."""
    pairs = links.with_columns(
        pl.min_horizontal("src", "dst").alias("a"), pl.max_horizontal("src", "dst").alias("b")
    )
    return pairs.group_by("a", "b").agg(
        pl.col("utilisation").max().alias("utilisation"),
        pl.col("drops").sum().alias("drops"),
        pl.col("tier").first().alias("tier"),
    )


def draw_fabric(
    links: pl.DataFrame, path: Path | None = None, title: str = "the fabric", loads: bool = True
) -> Plot:
    """Draw the fabric of a run's links table into the PNG at `path`; without `loads`, its
    structure alone (every link grey)."""
    caption = (
        "Each line is a link (both directions), coloured by the busier direction's utilisation "
        "over the run; dashed red lines dropped packets."
        if loads
        else "The fabric's switches, hosts and links, layer by layer from the hosts up."
    )
    if links.is_empty() or not {"src", "dst", "utilisation", "drops"} <= set(links.columns):
        if path is not None:
            path.unlink(missing_ok=True)
        return Plot(title, caption, skipped="the run saved no links table")
    nodes = sorted(set(links["src"]) | set(links["dst"]), key=_role)
    layers = _layer_of({_role(n)[0] for n in nodes})
    figure = Figure(figsize=(10, 5.5))
    axes = figure.add_subplot()
    norm = Normalize(0.0, 1.0)
    cmap = colormaps[COLORMAP] if loads else ListedColormap(["#888"])
    if len(nodes) <= MAX_NODES:
        _draw_nodes(axes, nodes, layers, _undirected(links), cmap, norm)
    else:
        caption = (
            f"{len(nodes):,} nodes, drawn by tier: each band is the links between two layers"
            + (
                ", coloured by their mean utilisation and labelled with mean and maximum "
                "utilisation and drops."
                if loads
                else "."
            )
        )
        _draw_tiers(axes, nodes, layers, _undirected(links), cmap, norm, loads)
    if loads:
        figure.colorbar(ScalarMappable(norm, cmap), ax=axes, label="utilisation", fraction=0.03)
    axes.set_axis_off()
    axes.set_title(title)
    figure.tight_layout()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=DPI)
    return Plot(title, caption, path, figure=figure)


def _positions(nodes: list[str], layers: dict[str, int]) -> dict[str, tuple[float, float]]:
    by_layer: dict[int, list[str]] = {}
    for node in nodes:
        by_layer.setdefault(layers[_role(node)[0]], []).append(node)
    positions = {}
    for layer, members in by_layer.items():
        for i, node in enumerate(members):
            positions[node] = ((i + 0.5) / len(members), float(layer))
    return positions


def _draw_nodes(axes, nodes, layers, pairs: pl.DataFrame, cmap, norm) -> None:
    at = _positions(nodes, layers)
    for row in pairs.sort("utilisation").iter_rows(named=True):
        (x0, y0), (x1, y1) = at[row["a"]], at[row["b"]]
        colour = cmap(norm(row["utilisation"]))
        axes.plot([x0, x1], [y0, y1], color=colour, linewidth=1.2, zorder=1)
        if row["drops"]:
            axes.plot([x0, x1], [y0, y1], color="red", linewidth=0.8, linestyle="--", zorder=2)
    hosts = [n for n in nodes if layers[_role(n)[0]] == 0]
    switches = [n for n in nodes if n not in hosts]
    size = 12 if len(hosts) <= 64 else 4
    xs, ys = [at[h][0] for h in hosts], [at[h][1] for h in hosts]
    axes.scatter(xs, ys, s=size, color="#555", zorder=3)
    xs, ys = [at[s][0] for s in switches], [at[s][1] for s in switches]
    axes.scatter(xs, ys, s=90, marker="s", color="white", edgecolors="#222", zorder=3)
    if len(switches) <= 48:
        for node in switches:
            x, y = at[node]
            axes.annotate(node, (x, y), xytext=(0, 9), textcoords="offset points", ha="center",
                          fontsize=7)  # fmt: skip
    _layer_labels(axes, layers, nodes)


def _draw_tiers(axes, nodes, layers, pairs: pl.DataFrame, cmap, norm, loads: bool) -> None:
    layer_of = {n: layers[_role(n)[0]] for n in nodes}
    pairs = pairs.with_columns(
        pl.col("a").replace_strict(layer_of).alias("la"),
        pl.col("b").replace_strict(layer_of).alias("lb"),
    ).with_columns(
        pl.min_horizontal("la", "lb").alias("low"), pl.max_horizontal("la", "lb").alias("high")
    )
    bands = pairs.group_by("low", "high").agg(
        pl.col("utilisation").mean().alias("mean"),
        pl.col("utilisation").max().alias("max"),
        pl.col("drops").sum().alias("drops"),
        pl.len().alias("links"),
    )
    for row in bands.iter_rows(named=True):
        y0, y1 = row["low"] + 0.12, row["high"] - 0.12
        axes.fill_between([0.2, 0.8], y0, y1, color=cmap(norm(row["mean"])), alpha=0.85)
        label = f"{row['links']:,} links"
        if loads:
            label += (
                f": utilisation mean {row['mean']:.0%}, max {row['max']:.0%}; "
                f"{row['drops']:,} drops"
            )
        axes.text(0.5, (y0 + y1) / 2, label, ha="center", va="center", fontsize=8,
                  color="white" if loads and row["mean"] < 0.6 else "black")  # fmt: skip
    counts: dict[int, int] = {}
    for layer in layer_of.values():
        counts[layer] = counts.get(layer, 0) + 1
    for layer, count in counts.items():
        axes.add_patch(Rectangle((0.1, layer - 0.1), 0.8, 0.2, facecolor="white", edgecolor="#222"))
        axes.text(0.5, layer, f"{count:,}", ha="center", va="center", fontsize=9)
    _layer_labels(axes, layers, nodes)
    axes.set_xlim(0, 1)


def _layer_labels(axes, layers: dict[str, int], nodes: list[str]) -> None:
    present = {_role(n)[0] for n in nodes}
    for role, layer in layers.items():
        if role in present:
            axes.text(-0.02, layer, ROLE_NAMES.get(role, role), ha="right", va="center",
                      fontsize=9, transform=axes.get_yaxis_transform())  # fmt: skip
