"""Draw the Rust core's top-level modules and their dependencies, as docs/architecture.md shows
them (docs/images/modules.svg).

    python scripts/module_picture.py            # writes docs/images/modules.svg
    python scripts/module_picture.py --edges    # prints the graph's edges, one `a -> b` a line
    python scripts/module_picture.py --png P    # also a PNG copy at P, to look at

The graph is the one tests/test_house.py checks for circles (`module_graph`: a module uses
another where it names `crate::other` outside its tests), so the picture is the code's, not a
drawing by hand. Modules that use nothing sit at the bottom; every module sits above all the
modules it uses, and an arrow goes from a module to each module it uses. The SVG records the
edges it drew in its description; tests/test_house.py fails when they differ from `--edges`, so
run this again after changing which modules a module uses.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "crates" / "clos-core" / "src"
SVG = ROOT / "docs" / "images" / "modules.svg"
# How the SVG's description introduces the edge list, which the test reads back.
EDGES_MARK = "edges:"


def graph() -> dict[str, set[str]]:
    """clos-core's top-level modules and the modules each uses (tests/test_house.py's rule)."""
    spec = importlib.util.spec_from_file_location("test_house", ROOT / "tests" / "test_house.py")
    assert spec and spec.loader
    house = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(house)
    found = house.module_graph(SRC)
    # Only edges between top-level modules: `crate::Error` (a re-export) is no module.
    return {m: uses & found.keys() for m, uses in found.items()}


def edges(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, u) for m, uses in g.items() for u in uses)


def layers(g: dict[str, set[str]]) -> list[list[str]]:
    """Layer 0: modules that use nothing; a module's layer is one above its highest use."""
    level: dict[str, int] = {}

    def height(m: str) -> int:
        if m not in level:
            level[m] = 1 + max((height(u) for u in g[m]), default=-1)
        return level[m]

    for m in g:
        height(m)
    out: list[list[str]] = [[] for _ in range(max(level.values()) + 1)]
    for m in sorted(g):
        out[level[m]].append(m)
    return out


def order(g: dict[str, set[str]], rows: list[list[str]]) -> list[list[str]]:
    """Fewer crossings: sort each layer by the mean position of its neighbours (barycentres),
    sweeping up and down a few times. Deterministic: ties keep the previous order."""
    users = {m: {v for v, uses in g.items() if m in uses} for m in g}

    def positions() -> dict[str, float]:
        return {m: (i + 0.5) / len(row) for row in rows for i, m in enumerate(row)}

    def mean(ms: set[str], pos: dict[str, float], own: float) -> float:
        # Summed in name order and rounded, so that equal means tie whatever the sets' order.
        return round(sum(pos[m] for m in sorted(ms)) / len(ms), 9) if ms else own

    for _ in range(8):
        for k in range(1, len(rows)):  # up: by the modules used
            pos = positions()
            rows[k] = sorted(rows[k], key=lambda m: mean(g[m], pos, pos[m]))
        for k in range(len(rows) - 2, -1, -1):  # down: by the users
            pos = positions()
            rows[k] = sorted(rows[k], key=lambda m: mean(users[m], pos, pos[m]))
    return rows


def columns(g: dict[str, set[str]], rows: list[list[str]]) -> dict[str, int]:
    """Each module's column, in half steps of the widest layer's spacing, so that an arrow
    passes through as few boxes as it can and is short: start from the layers' order, centred,
    then move one module at a time to the free column that lowers the cost, while any does.
    Modules of a layer keep their order and stay a whole step apart."""
    slots = 2 * max(len(r) for r in rows) - 1
    col: dict[str, int] = {}
    for row in rows:
        first = (slots - (2 * len(row) - 1)) // 2
        for i, m in enumerate(row):
            col[m] = first + 2 * i
    layer = {m: k for k, row in enumerate(rows) for m in row}
    pairs = edges(g)

    def cost() -> float:
        total = 0.0
        for m, u in pairs:
            (x0, y0), (x1, y1) = (col[m], layer[m]), (col[u], layer[u])
            total += abs(x1 - x0) * 0.15
            for k in range(y1 + 1, y0):  # boxes in the layers between the two ends
                x = x0 + (x1 - x0) * (y0 - k) / (y0 - y1)
                total += sum(2.0 for b in rows[k] if abs(col[b] - x) < 1.3)
        return total

    best = cost()
    improved = True
    while improved:
        improved = False
        for row in rows:
            for i, m in enumerate(row):
                low = col[row[i - 1]] + 2 if i > 0 else 0
                high = col[row[i + 1]] - 2 if i + 1 < len(row) else slots - 1
                for c in range(low, high + 1):
                    was, col[m] = col[m], c
                    now = cost()
                    if now < best - 1e-9:
                        best, improved = now, True
                    else:
                        col[m] = was
    return col


def draw(g: dict[str, set[str]], svg: Path, png: Path | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    # The same bytes for the same graph: no date, fixed ids, text kept as text.
    plt.rcParams.update({"svg.hashsalt": "clos-modules", "svg.fonttype": "none"})
    rows = order(g, layers(g))
    col = columns(g, rows)
    step, row_gap = 1.0, 1.5  # half a column; a layer
    box_w, box_h = 1.5, 0.46
    xy = {m: (col[m] * step, k * row_gap) for k, row in enumerate(rows) for m in row}
    width = max(x for x, _ in xy.values())
    height = (len(rows) - 1) * row_gap

    fig, ax = plt.subplots(figsize=(width * 0.85 + 1.6, height * 0.85 + 1.4))
    ax.set_xlim(-box_w / 2 - 0.1, width + box_w / 2 + 0.1)
    ax.set_ylim(-box_h / 2 - 0.1, height + box_h / 2 + 0.25)
    ax.axis("off")
    pairs = edges(g)
    sources = sorted({m for m, _ in pairs}, key=lambda m: (-xy[m][1], xy[m][0]))
    palette = [plt.get_cmap("tab10")(i) for i in range(10)] + ["#8c6d31", "#393b79", "#637939"]
    colour = {m: palette[i % len(palette)] for i, m in enumerate(sources)}

    # Each arrow leaves its module's box from a point of the bottom edge and enters the used
    # module's box at a point of the top edge, both spread in the order of the other ends, so
    # that the arrows of one box fan out instead of meeting in one point.
    def spread(ends: list[str], x: float) -> dict[str, float]:
        ends = sorted(ends, key=lambda o: (xy[o][0], -xy[o][1]))
        n = len(ends)
        return {
            o: x + (i - (n - 1) / 2) * (box_w * 0.8) / max(n - 1, 1) for i, o in enumerate(ends)
        }

    leave = {m: spread([u for v, u in pairs if v == m], xy[m][0]) for m in g}
    enter = {u: spread([v for v, w in pairs if w == u], xy[u][0]) for u in g}
    for m, u in pairs:
        y0, y1 = xy[m][1], xy[u][1]
        ax.add_patch(
            FancyArrowPatch(
                (leave[m][u], y0 - box_h / 2),
                (enter[u][m], y1 + box_h / 2),
                arrowstyle="-|>",
                mutation_scale=10,
                color=colour[m],
                lw=1.0,
                alpha=0.8,
                shrinkA=0,
                shrinkB=0,
                zorder=1,
            )
        )
    for m, (x, y) in xy.items():
        ax.add_patch(
            FancyBboxPatch(
                (x - box_w / 2, y - box_h / 2),
                box_w,
                box_h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                facecolor="white",
                edgecolor=colour.get(m, "0.35"),
                lw=1.6,
                zorder=2,
            )
        )
        ax.text(x, y, m, ha="center", va="center", fontsize=11, family="monospace", zorder=3)
    description = (
        "Made by scripts/module_picture.py from crates/clos-core/src; run it again after a "
        f"module starts or stops using another. {EDGES_MARK} "
        + " ".join(f"{m}->{u}" for m, u in edges(g))
    )
    fig.tight_layout()
    svg.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(
        svg,
        format="svg",
        metadata={"Date": None, "Creator": None, "Description": description},
    )
    if png is not None:
        fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    g = graph()
    if argv[1:] == ["--edges"]:
        for m, u in edges(g):
            print(f"{m} -> {u}")
        return 0
    png = None
    if argv[1:2] == ["--png"] and len(argv) == 3:
        png = Path(argv[2])
    elif argv[1:]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    draw(g, SVG, png)
    print(f"wrote {SVG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
