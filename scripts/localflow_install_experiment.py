"""Issue 38's LocalFlow experiment: does the paper's scheduling survive realistic rule
installation times? (docs/updates.md, "LocalFlow's rule rewrites").

LocalFlow's own setup as `clos reproduce localflow` runs it at its small scale
(python/clos/data/experiments/localflow/permutation.toml: a k = 8 fat tree of 1 Gb/s links,
100 us between queues, 100-packet queues, TCP with 1,000 B packets), with a 10 ms scheduling
interval instead of the paper's 50 ms, and each round's rules written through the control
channel (`[convergence] mode = "controller"`) at a finite rate per switch. Two workloads:

- the paper's random permutation of long flows (aggregate goodput, the paper's metric);
- the same fabric under Poisson arrivals of web-search flow sizes at 50% load (FCT by size).

Runs: LocalFlow without the channel (rules in force at each round, as in the paper), the
channel with no latency and writes under a picosecond ("instant": the same run, bit for bit),
then 1000, 600 and 100 rules/s with no latency (LocalFlow's loop runs on the switch) and 1000
rules/s behind a 2.5 ms controller round trip; 600 and 100 rules/s with backlogged switches
coalescing to the newest round (`convergence.coalesce`), and 600 rules/s into tables of 16
per-flow rules; ECMP is the reference a scheduler must beat.
Prints the tables docs/updates.md holds and draws docs/images/updates-localflow.png.

    .venv/bin/python scripts/localflow_install_experiment.py            # about 2 minutes
    .venv/bin/python scripts/localflow_install_experiment.py --out DIR --small  # a test does
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

import clos
from clos.scenario import Scenario, apply_overrides, load_scenario

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
SCENARIO = ROOT / "python" / "clos" / "data" / "experiments" / "localflow" / "permutation.toml"
INTERVAL = "10ms"
CHANNEL = "convergence.mode=controller"
COALESCE = "convergence.coalesce=true"
# Name, overrides. "instant": no latency, and 1e15 rules/s writes a message of up to 499 rules in
# under half a picosecond, which rounds to no time at all.
RUNS = {
    "no channel": [],
    "instant": [CHANNEL, "convergence.latency=0s", "convergence.rule_rate=1e15"],
    "1000/s": [CHANNEL, "convergence.latency=0s", "convergence.rule_rate=1000"],
    "600/s": [CHANNEL, "convergence.latency=0s", "convergence.rule_rate=600"],
    "100/s": [CHANNEL, "convergence.latency=0s", "convergence.rule_rate=100"],
    "1000/s + 2.5 ms": [CHANNEL, "convergence.latency=2.5ms", "convergence.rule_rate=1000"],
    # A backlogged switch drops queued rounds for the newest; a table of 16 per-flow rules.
    "600/s coalesced": [CHANNEL, "convergence.latency=0s", "convergence.rule_rate=600", COALESCE],
    "100/s coalesced": [CHANNEL, "convergence.latency=0s", "convergence.rule_rate=100", COALESCE],
    "600/s, table 16": [
        CHANNEL,
        "convergence.latency=0s",
        "convergence.rule_rate=600",
        "convergence.table_size=16",
    ],
}
POISSON = ["workload.kind=poisson", "workload.cdf=websearch_dctcp", "workload.load=0.5"]
# Size classes (bytes): [lo, hi).
CLASSES = {
    "< 100 KB": (0, 100_000),
    "100 KB - 1 MB": (100_000, 1_000_000),
    ">= 1 MB": (1_000_000, 1 << 62),
}


def scenario(extra: list[str], small: bool) -> Scenario:
    stop = "60ms" if small else "300ms"
    base = ["topology.k=4" if small else "topology.k=8", f"stop={stop}"]
    table = load_scenario(SCENARIO)
    if "workload.kind=poisson" in extra:
        table["workload"].pop("bytes")  # the permutation's flow size; Poisson flows draw theirs
    return Scenario(apply_overrides(table, base + extra))


def run_all(small: bool) -> dict[str, dict[str, clos.Results]]:
    out: dict[str, dict[str, clos.Results]] = {"permutation": {}, "poisson": {}}
    for workload, extra in (("permutation", []), ("poisson", POISSON)):
        for name, over in RUNS.items():
            out[workload][name] = clos.run(
                scenario([*extra, f"routing.interval={INTERVAL}", *over], small)
            )
        out[workload]["ECMP"] = clos.run(scenario([*extra, "routing.scheme=ecmp"], small))
    return out


def install(r: clos.Results) -> dict | None:
    return r.get("load_balancer").get("install")


def fct_by_class(r: clos.Results) -> dict[str, tuple[float, float, int]]:
    """Per size class: mean and p99 FCT (ms) of the flows that finished, and their count."""
    done = r.flows.filter(pl.col("finished"))
    out = {}
    for name, (lo, hi) in CLASSES.items():
        c = done.filter((pl.col("bytes") >= lo) & (pl.col("bytes") < hi))["fct_ps"]
        if len(c) == 0:
            out[name] = (float("nan"), float("nan"), 0)
        else:
            out[name] = (c.mean() / 1e9, c.quantile(0.99, "nearest") / 1e9, len(c))
    return out


def install_cells(r: clos.Results) -> list[str]:
    i = install(r)
    if i is None:
        return ["-"] * 7
    return [
        f"{i['rules_per_interval']:.1f}",
        f"{i['rules_per_message_max']}",
        f"{i['backlogged_messages']:,} / {i['messages']:,}",
        f"{i['backlogged_intervals']} / {i['intervals']}",
        f"{i['install_delay_mean_ms']:.1f} / {i['install_delay_max_ms']:.1f} ms",
        f"{i['rules_superseded']:,} ({i['coalesced_messages']:,})",
        f"{i['rules_refused']:,} ({len(i['table_overflows'])})",
    ]


def tables(runs: dict[str, dict[str, clos.Results]]) -> str:
    lines = [
        "| permutation | goodput (Gb/s) | x no channel | rules per interval | most rules, one switch "
        "and interval | messages backlogged | intervals backlogged | decision to installed "
        "(mean / max) | rules superseded (messages coalesced) | rules refused (switches) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    perm = runs["permutation"]
    ref = perm["no channel"].get("goodput", "aggregate_bps")
    for name, r in perm.items():
        g = r.get("goodput", "aggregate_bps")
        lines.append(
            "| " + " | ".join([name, f"{g / 1e9:.2f}", f"{g / ref:.3f}", *install_cells(r)]) + " |"
        )
    lines += [
        "",
        "| web search, 50% load | "
        + " | ".join(f"{c}: mean / p99 (n)" for c in CLASSES)
        + " | rules per interval | messages backlogged | decision to installed (mean / max) "
        "| rules superseded (messages coalesced) | rules refused (switches) |",
        "|---|" + "---|" * (len(CLASSES) + 5),
    ]
    for name, r in runs["poisson"].items():
        cells = [f"{m:.2f} / {p:.1f} ms ({n})" for m, p, n in fct_by_class(r).values()]
        i = install_cells(r)
        lines.append("| " + " | ".join([name, *cells, i[0], i[2], i[4], i[5], i[6]]) + " |")
    return "\n".join(lines)


def figure(runs: dict[str, dict[str, clos.Results]], path: Path) -> None:
    fig = Figure(figsize=(8, 3.4))
    left, right = fig.subplots(1, 2)
    names = [n for n in runs["permutation"] if n != "instant"]  # "instant" is "no channel", exactly
    perm = [runs["permutation"][n].get("goodput", "aggregate_bps") / 1e9 for n in names]
    left.bar(range(len(names)), perm, color="tab:blue")
    left.set_xticks(range(len(names)), names, rotation=30, fontsize=7, ha="right")
    left.set_ylabel("aggregate goodput (Gb/s)")
    left.set_title("permutation of long flows", fontsize=9)
    for j, cls in enumerate(CLASSES):
        vals = [fct_by_class(runs["poisson"][n])[cls][1] for n in names]
        right.bar([x + (j - 1) * 0.27 for x in range(len(names))], vals, width=0.27, label=cls)
    right.set_xticks(range(len(names)), names, rotation=30, fontsize=7, ha="right")
    right.set_yscale("log")
    right.set_ylabel("p99 FCT (ms, finished flows)")
    right.set_title("web search flows, 50% load", fontsize=9)
    right.set_ylim(top=right.get_ylim()[1] * 6)
    right.legend(fontsize=7, ncols=3, loc="upper left")
    fig.suptitle(f"LocalFlow, {INTERVAL} interval, rules written at a finite rate", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=IMAGES, help="folder for the figure")
    ap.add_argument("--small", action="store_true", help="k = 4 and 60 ms (seconds; for tests)")
    args = ap.parse_args(argv)
    runs = run_all(args.small)
    print(tables(runs))
    args.out.mkdir(parents=True, exist_ok=True)
    figure(runs, args.out / "updates-localflow.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
