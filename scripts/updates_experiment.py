"""Issue 38's link failure and repair on VL2 under each update strategy (docs/updates.md).

Runs the four bundled `updates-*` scenarios (tor0-agg0 fails at 5 ms and is repaired at 45 ms,
every server sending 20 MB to another under DCTCP) to the end of their last flow, and the same
fabric and workload without the failure as the baseline. Prints the tables docs/updates.md holds
(the second compares each flow's FCT with the same flow's in the baseline: the same seed draws
the same flows) and draws two figures, read with telemetry queries (`clos.results.Query`):

- docs/images/updates-goodput.png: payload delivered per millisecond, every strategy and the
  baseline;
- docs/images/updates-tor0-uplinks.png: bytes tor0 sends to agg0 per millisecond, by strategy.

    .venv/bin/python scripts/updates_experiment.py            # about 10 s
    .venv/bin/python scripts/updates_experiment.py --out DIR  # the figures elsewhere (a test does)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

import clos
from clos.results import Query
from clos.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
STRATEGIES = ("unordered", "ordered", "two-phase", "per-flow")
# Long enough for every flow to end (the slowest, on per-flow, ends near 330 ms).
RUN = ["stop=600ms", "output.link_timeseries=true", "output.bin=1ms"]
FAIL_S, REPAIR_S = 5e-3, 45e-3
XMAX_MS = 400


def baseline() -> clos.Results:
    table = Scenario.load("updates-unordered", RUN).table
    table.pop("failures")
    table.pop("convergence")
    return clos.run(Scenario(table))


def fct(r: clos.Results, q: float) -> float:
    return r.flows.filter(pl.col("finished"))["fct_ps"].quantile(q) / 1e12


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"


def row(name: str, r: clos.Results, base: clos.Results) -> str:
    u = r.get("failures", "update")
    first, *rest = u["updates"]
    repair = rest[0]["time_to_complete_s"] if rest else None
    cells = [
        name,
        f"{u['mixed_version_packets']:,}",
        f"{u['looped']:,}",
        f"{u['black_holed']:,}",
        f"{r.get('packets', 'dropped'):,}",
        ms(first["time_to_complete_s"]),
        ms(first["time_to_remove_old_s"]),
        ms(repair),
        f"{u['peak_rules_total']} ({u['peak_rules_max_switch']})",
        f"{fct(r, 0.5) * 1e3:.1f} / {fct(r, 1.0) * 1e3:.1f} ms",
        f"{fct(r, 1.0) / fct(base, 1.0):.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def slowdowns(r: clos.Results, base: clos.Results) -> pl.Series:
    """Each flow's FCT over the same flow's without the failure (same seed, so the same flows:
    matched by id, and checked to have the same ends and size)."""
    keys = ["id", "src", "dst", "bytes"]
    a = r.flows.filter(pl.col("finished")).select(*keys, "fct_ps")
    b = base.flows.filter(pl.col("finished")).select(*keys, pl.col("fct_ps").alias("base_ps"))
    both = a.join(b, on=keys, how="inner")
    if len(both) != len(a) or len(both) != len(b):
        raise SystemExit("the failure run and the baseline do not hold the same finished flows")
    return both["fct_ps"] / both["base_ps"]


def slowdown_row(name: str, r: clos.Results, base: clos.Results) -> str:
    s = slowdowns(r, base)
    cells = [
        name,
        f"{s.median():.3f}",
        f"{s.quantile(0.99, 'nearest'):.2f}",
        f"{s.max():.2f}",
        f"{(s > 2).sum()} of {len(s)}",
        f"{(s < 1).sum()}",
        f"{s.min():.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def goodput(r: clos.Results) -> pl.DataFrame:
    return Query().select("bytes").group_by("service").every("1ms").run(r)


def tor0_to_agg0(r: clos.Results) -> pl.DataFrame:
    return Query().select("bytes").where(switch="tor0", to="agg0").every("1ms").run(r)


def mark(ax) -> None:
    for at, what, y in ((FAIL_S, "fails", 0.3), (REPAIR_S, "repaired", 0.15)):
        ax.axvline(at * 1e3, color="grey", lw=0.8, ls="--")
        ax.text(at * 1e3 + 2, ax.get_ylim()[1] * y, f"tor0-agg0 {what}", fontsize=7)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=IMAGES, help="folder for the two figures")
    images = ap.parse_args(argv).out
    base = baseline()
    runs = {s: clos.run(Scenario.load(f"updates-{s}", RUN)) for s in STRATEGIES}
    print(
        "| strategy | mixed | looped | black-holed | dropped (all) | failure: complete | "
        "failure: old rules gone | repair: complete | peak rules (fullest switch) | "
        "FCT median / max | max FCT / baseline |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s, r in runs.items():
        print(row(s, r, base))
    print(
        f"baseline (no failure): {base.get('packets', 'dropped'):,} dropped, FCT median / max "
        f"{fct(base, 0.5) * 1e3:.1f} / {fct(base, 1.0) * 1e3:.1f} ms"
    )
    print()
    print(
        "| strategy | per-flow slowdown: median | p99 | max | flows slowed > 2x | flows faster | min |"
    )
    print("|---|---|---|---|---|---|---|")
    for s, r in runs.items():
        print(slowdown_row(s, r, base))

    images.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(8, 3.6))
    ax = fig.subplots()
    for label, r in {"no failure": base, **runs}.items():
        g = goodput(r)
        style = "--" if label == "per-flow" else "-"  # on two-phase's line until 82 ms
        x, y = g["interval_start_s"] * 1e3, g["bytes"] * 8 / 1e-3 / 1e9
        ax.plot(x, y, style, label=label, lw=1)
    ax.set_xlim(0, XMAX_MS)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("goodput (Gb/s, 1 ms bins)")
    mark(ax)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(images / "updates-goodput.png", dpi=110)

    fig = Figure(figsize=(8, 5))
    axes = fig.subplots(len(STRATEGIES), 1, sharex=True)
    for ax, (s, r) in zip(axes, runs.items(), strict=True):
        t = tor0_to_agg0(r)
        ax.plot(t["interval_start_s"] * 1e3, t["bytes"] * 8 / 1e-3 / 1e9, lw=1)
        ax.set_ylim(0, 10.5)
        ax.set_ylabel(s, fontsize=8)
        mark(ax)
    axes[0].set_title("tor0 to agg0 (Gb/s, 1 ms bins)", fontsize=9)
    axes[-1].set_xlim(0, XMAX_MS)
    axes[-1].set_xlabel("time (ms)")
    fig.tight_layout()
    fig.savefig(images / "updates-tor0-uplinks.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
