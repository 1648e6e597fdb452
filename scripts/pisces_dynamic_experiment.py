"""Pisces's dynamic workloads (seed 004 §4.3, Figure 5a; docs/tenants.md, "Measured: varying demand").

Two bursty tenants of weight 1, two diurnal tenants of weight 2 and four constant tenants of
weight 1 share the storage service on the testbed shape of `clos reproduce pisces`
(python/clos/data/experiments/pisces/testbed.toml: 8 clients and 8 servers of 1,000 requests/s
on one 1 Gb/s switch), twice: with all four of Pisces's mechanisms on, and without weight
allocation (FQ + PP + RS; docs/tenants.md says why both). The paper describes its demand
only in words, so the timeline is ours, laid out as its text tells it (lines 8242-8254):

- the diurnal tenants ramp up from 0 s, peak at 25 s and are back at their low at 50 s (a
  raised-cosine day over [0 s, 50 s));
- the bursty tenants are at their peak over [15 s, 45 s) and again over [70 s, 85 s);
- the constant tenants keep 32 requests outstanding all the run (the testbed's demand).

The varying tenants are open loop (Poisson requests at a rate that varies, as Figure 5a's
demand does), each at most 64 (bursty) or 128 (diurnal) requests outstanding so that a demand
above its share backs up at the client, not in the servers' queues, and ends with its peak:
a peak of 1,600 requests/s for a bursty tenant and 3,200 for a diurnal one, twice their fair
shares at the peak (a tenth and a fifth of the 8,000/s), and 100/s outside. Weight allocation
from 4 s, every 2 s; replica-selection windows every 100 ms, as the testbed's.

Measured, from 1 s bins of completed requests:

- at the peak (20-30 s): the ratio of the diurnal tenants' mean throughput to the weight-1
  tenants' (paper: "Pisces enforces the proper 2-to-1 weighted ratio") and the MMR of
  weight-normalised throughput;
- in the trough (55-65 s), the constant tenants' throughput over their fair share at the peak
  (a tenth of the capacity): they take the excess;
- at the second burst (75-85 s), the bursty tenants' throughput over the constant tenants'
  (paper: "equal shares").

Prints the table docs/tenants.md holds and draws docs/images/pisces-dynamic.png (every
tenant's throughput over time, a panel per run).

    .venv/bin/python scripts/pisces_dynamic_experiment.py            # 90 s simulated: ~8 s
    .venv/bin/python scripts/pisces_dynamic_experiment.py --small    # time x 0.2 (the test)
    .venv/bin/python scripts/pisces_dynamic_experiment.py --out DIR  # the figure elsewhere
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

import clos
from clos.reproduce.experiments import experiments_root
from clos.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
TESTBED = experiments_root() / "pisces" / "testbed.toml"
STOP_S = 90.0
# (name, weight, profile, peak requests/s, most outstanding, peak intervals in seconds)
TENANTS = [
    ("bursty0", 1, "bursty", 1600.0, 64, [(15.0, 45.0), (70.0, 85.0)]),
    ("bursty1", 1, "bursty", 1600.0, 64, [(15.0, 45.0), (70.0, 85.0)]),
    ("diurnal0", 2, "diurnal", 3200.0, 128, [(0.0, 50.0)]),
    ("diurnal1", 2, "diurnal", 3200.0, 128, [(0.0, 50.0)]),
    *[(f"constant{i}", 1, "constant", None, 32, []) for i in range(4)],
]
LOW = 100.0
WINDOWS = {"peak": (20.0, 30.0), "trough": (55.0, 65.0), "burst": (75.0, 85.0)}
# The runs: all four mechanisms, and without weight allocation. The value: whether WA runs.
CONFIGS = {"all four": True, "FQ + PP + RS": False}


def scenario(scale: float, config: str) -> dict[str, Any]:
    """Figure 5a's mix on the testbed, every time multiplied by `scale`, with the mechanisms
    of `config` (a key of CONFIGS)."""
    table = copy.deepcopy(load_scenario(TESTBED))
    t = lambda seconds: f"{seconds * scale * 1000:.0f}ms"  # noqa: E731
    table["stop"] = t(STOP_S)
    table["output"] = {"bin": t(1.0)}
    table["tenants"] = [{"name": n, "weight": w} for n, w, *_ in TENANTS]
    demand = []
    for name, _, profile, peak, most, peaks in TENANTS:
        d: dict[str, Any] = {"tenant": name, "concurrency": most}
        if profile != "constant":
            d |= {
                "rate": peak,
                "profile": profile,
                "low": LOW,
                "peaks": [[t(a), t(b)] for a, b in peaks],
            }
        demand.append(d)
    service = table["service"]
    service |= {
        "demand": demand,
        "fair_queuing": True,
        "placement": "pisces",
        "weight_allocation": CONFIGS[config],
        "replica_selection": "pisces",
        "wa_start": t(4.0),
        "wa_period": t(2.0),
        "rs_interval": t(0.1),
        "bin": t(1.0),
        "measure_from": "0s",
    }
    return table


def measure(summary: dict[str, Any]) -> dict[str, Any]:
    """The per-tenant throughput series (requests/s per bin) and the ratios in each window."""
    service = summary["service"]
    series = service["timeseries"]["rps"]
    bins = len(series[0])

    def mean(tenant: int, window: tuple[float, float]) -> float:
        lo, hi = (round(x / STOP_S * bins) for x in window)
        part = series[tenant][lo:hi]
        return sum(part) / len(part)

    kind = [profile for _, _, profile, *_ in TENANTS]
    weight = [w for _, w, *_ in TENANTS]
    group = lambda k, window: [mean(i, window) for i in range(len(TENANTS)) if kind[i] == k]  # noqa: E731
    avg = lambda xs: sum(xs) / len(xs)  # noqa: E731
    peak = WINDOWS["peak"]
    ones = [mean(i, peak) for i in range(len(TENANTS)) if weight[i] == 1]
    normalised = [mean(i, peak) / weight[i] for i in range(len(TENANTS))]
    capacity = service["capacity_rps"] * service["servers"]
    fair_one = capacity / sum(weight)
    return {
        "series": series,
        "bins": bins,
        "peak_ratio": avg(group("diurnal", peak)) / avg(ones),
        "peak_mmr": min(normalised) / max(normalised),
        "peak_total": sum(mean(i, peak) for i in range(len(TENANTS))),
        "fair_one": fair_one,
        "trough_constant": avg(group("constant", WINDOWS["trough"])),
        "trough_excess": avg(group("constant", WINDOWS["trough"])) / fair_one,
        "burst_ratio": avg(group("bursty", WINDOWS["burst"]))
        / avg(group("constant", WINDOWS["burst"])),
        "capacity": capacity,
    }


def figure(results: dict[str, dict[str, Any]], path: Path) -> None:
    """One panel per run: every tenant's throughput per bin, the measured windows shaded."""
    fig = Figure(figsize=(8, 3.2 * len(results)))
    axes = fig.subplots(len(results), 1, sharex=True, squeeze=False)[:, 0]
    colours = {"bursty": "tab:red", "diurnal": "tab:blue", "constant": "tab:green"}
    for ax, (config, result) in zip(axes, results.items(), strict=True):
        bins = result["bins"]
        x = [(i + 0.5) * STOP_S / bins for i in range(bins)]
        seen = set()
        for i, (_, weight, profile, *_) in enumerate(TENANTS):
            label = f"{profile} (weight {weight})" if profile not in seen else None
            seen.add(profile)
            ax.plot(x, result["series"][i], color=colours[profile], lw=1.2, label=label)
        for name, (a, b) in WINDOWS.items():
            ax.axvspan(a, b, color="0.9", zorder=0)
            ax.text(
                (a + b) / 2, 0.97, name, transform=ax.get_xaxis_transform(), ha="center", va="top"
            )
        ax.set_ylabel("requests/s")
        ax.set_xlim(0, STOP_S)
        ax.set_ylim(0, None)
        ax.set_title(
            f"{config}: per-tenant throughput (8 servers of 1,000 requests/s)", fontsize=10
        )
        ax.legend(loc="upper right", fontsize=8, bbox_to_anchor=(1.0, 0.88))
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| measured | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(r) for r in results.values()) + " |")
    return "\n".join(lines)


ROWS = [
    (
        "throughput at the peak, all tenants (of 8,000/s)",
        lambda r: f"{r['peak_total']:,.0f}/s",
    ),
    (
        "diurnal : weight-1 throughput at the peak, 20-30 s (paper: 2)",
        lambda r: f"{r['peak_ratio']:.2f}",
    ),
    ("MMR of weight-normalised throughput at the peak", lambda r: f"{r['peak_mmr']:.2f}"),
    (
        "constant tenants in the trough, 55-65 s (over their fair share at the peak, 800/s)",
        lambda r: f"{r['trough_constant']:,.0f}/s ({r['trough_excess']:.2f})",
    ),
    (
        "bursty : constant throughput at the second burst, 75-85 s (paper: equal)",
        lambda r: f"{r['burst_ratio']:.2f}",
    ),
]


def run(scale: float, config: str, seed: int = 1) -> dict[str, Any]:
    """Run Figure 5a's mix with every time multiplied by `scale`, and measure it."""
    table_ = scenario(scale, config)
    table_["seed"] = seed
    return measure(clos.run(table_).summary)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="every time x 0.2 (a few seconds)")
    parser.add_argument("--out", type=Path, default=IMAGES, help="folder of the figure")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    results = {c: run(0.2 if args.small else 1.0, c, args.seed) for c in CONFIGS}
    print(table(results))
    figure(results, args.out / "pisces-dynamic.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
