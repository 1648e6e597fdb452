"""Issue 36, item 5: multicast pub-sub beside unicast DCTCP on a k = 8 fat tree (docs/multicast.md).

A k = 8 fat tree (128 hosts, 16 cores) at 10 Gb/s, the multicast address space in n = 4
partitions of r_c = 4 cores (r_a = 2 aggregation switches a pod). Eight pub-sub groups of 16
members placed by the seed (two groups a partition), each fed by two publishers at 0.5 Gb/s of
datagrams for the first three quarters of the run. Beside them, unicast DCTCP web search (flow
sizes of the DCTCP paper, Poisson arrivals at 40% of every host's rate). The runs:

- `unicast`: the web search alone (the FCT baseline);
- `multicast`, `multicast-group`, `multicast-packet`: the groups alone (delivery ratio 1:
  nothing to lose), with upstream spreading over a partition's four replica cores off, per
  group, per packet;
- `none`, `group`, `packet`: both together, spreading off, per group, per packet;
- `failure`: both together, spreading off, with the core-aggregation link that carried the
  most bytes down in `multicast` (a group's root into one of its pods) failing at a quarter of
  the run; the controller rebuilds the trees 1 ms (detection + install) later.

Prints the table docs/multicast.md holds (per-receiver delivery and latency, unicast FCT, the
busiest core downlink, detours) and draws two figures:

- docs/images/multicast-latency.png: every receiver's mean one-way latency per run;
- docs/images/multicast-core-load.png: the bytes every core sends down with the groups alone,
  per spreading mode.

    .venv/bin/python scripts/multicast_experiment.py               # full size: about a minute
    .venv/bin/python scripts/multicast_experiment.py --small       # a few seconds (the test)
    .venv/bin/python scripts/multicast_experiment.py --out DIR     # the figures elsewhere
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.figure import Figure

import clos
from clos.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
GROUPS, MEMBERS, PUBLISHERS, RATE_GBPS = 8, 16, 2, 0.5
LOAD = 0.4
SIZES = {"full": {"stop_ms": 20}, "small": {"stop_ms": 5}}
RUNS = (
    "unicast",
    "multicast",
    "multicast-group",
    "multicast-packet",
    "multicast-failure",
    "none",
    "group",
    "packet",
    "failure",
)
SPREAD = {
    "multicast-group": "group",
    "multicast-packet": "packet",
    "group": "group",
    "packet": "packet",
}


def scenario(run: str, size: dict[str, Any], failed: list[str] | None = None) -> Scenario:
    stop_ms = size["stop_ms"]
    # Publishers stop at three quarters of the run, so that every datagram has arrived (or
    # been lost) when it ends: a delivery ratio below 1 is a loss, not a datagram on its way.
    publish_bytes = int(RATE_GBPS * 1e9 / 8 * 0.75 * stop_ms * 1e-3)
    table: dict[str, Any] = {
        "name": f"multicast-k8-{run}",
        "seed": 1,
        "stop": f"{stop_ms}ms",
        "topology": {"kind": "fat_tree", "k": 8, "host_rate": "10Gbps", "fabric_rate": "10Gbps"},
        "switch": {"buffer": "300KB", "ecn_threshold": "97.5KB"},
        "routing": {"scheme": "ecmp"},
        "transport": {"kind": "dctcp"},
        "multicast": {
            "partitions": 4,
            "cores_per_partition": 4,
            "aggrs_per_partition": 2,
            "spread": SPREAD.get(run, "none"),
            "groups": [{"name": f"g{i}", "members": MEMBERS} for i in range(GROUPS)],
        },
    }
    # Publishers: two hosts a group, spread over the pods (hosts 0, 16, 32, ... then 8, 24, ...).
    publishers = [
        {
            "kind": "multicast",
            "name": f"pub-g{i}",
            "group": f"g{i}",
            "hosts": [(16 * (PUBLISHERS * i + j) + 8 * j) % 128 for j in range(PUBLISHERS)],
            "bytes": publish_bytes,
            "rate": f"{RATE_GBPS}Gbps",
        }
        for i in range(GROUPS)
    ]
    unicast = {"kind": "poisson", "name": "unicast", "cdf": "websearch_dctcp", "load": LOAD}
    parts = (
        [unicast]
        if run == "unicast"
        else publishers
        if run.startswith("multicast")
        else [unicast, *publishers]
    )
    table["workload"] = {"kind": "services", "services": parts}
    if run == "unicast":
        table.pop("multicast")
    if run.endswith("failure"):
        table["failures"] = [{"at": f"{stop_ms / 4}ms", "action": "down", "link": failed}]
        table["convergence"] = {"detection": "500us", "install": "500us"}
    return Scenario(copy.deepcopy(table))


def receivers(r: clos.Results) -> list[dict[str, Any]]:
    return [x for g in r.get("multicast", "groups") for x in g["receivers"]]


def unicast(r: clos.Results) -> pl.DataFrame:
    return r.flows.filter(pl.col("service") == "unicast")


def unicast_fct(r: clos.Results, q: float) -> float | None:
    """FCT quantile `q` over the unicast flows that finished (those still running at the stop
    are the last to arrive, counted in the "done" column)."""
    done = unicast(r).filter(pl.col("finished"))
    return float(done["fct_ps"].quantile(q)) / 1e12 if done.height else None


def core_down_bytes(r: clos.Results) -> dict[str, int]:
    """Bytes each core sent down (to aggregation switches) over the run."""
    per = r.links.filter(pl.col("tier") == "core_down").group_by("src").agg(pl.col("bytes").sum())
    return dict(zip(per["src"].to_list(), per["bytes"].to_list(), strict=True))


def busiest_core_link(r: clos.Results) -> list[str]:
    """The core-aggregation link that carried the most bytes down (a group's root into a pod)."""
    links = r.links.filter(pl.col("tier") == "core_down").sort("bytes", descending=True)
    return [links["src"][0], links["dst"][0]]


def core_imbalance(r: clos.Results) -> tuple[float, float, int]:
    """The busiest core's bytes sent down (MB), its ratio to the mean over the cores, and the
    cores that sent anything down."""
    b = list(core_down_bytes(r).values())
    return max(b) / 1e6, max(b) / (sum(b) / len(b)), sum(1 for x in b if x > 0)


def worst_in_periods(r: clos.Results) -> dict[str, tuple[int, int]]:
    """Per period (before, detour, rebuilt): the member that lost the most, (received, expected)."""
    out = {}
    for p in ("before", "detour", "rebuilt"):
        got = [(x["periods"][p]["received"], x["periods"][p]["expected"]) for x in receivers(r)]
        got = [g for g in got if g[1] > 0]
        if got:
            out[p] = min(got, key=lambda g: (g[0] - g[1], g[0] / g[1]))
    return out


def failure_line(name: str, r: clos.Results, failed: list[str]) -> str:
    f = r.get("multicast")
    periods = ", ".join(f"{p} {g[0]} of {g[1]}" for p, g in worst_in_periods(r).items())
    return (
        f"{name}: {failed[0]} - {failed[1]} fails; the member that lost most, per period: "
        f"{periods}; detours by hops {f['detours']['by_hops']}; "
        f"groups moved {f['rebuilds']['groups_moved']}"
    )


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f} ms"


def us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.1f} us"


def row(name: str, r: clos.Results, base: clos.Results) -> list[str]:
    cells = [name]
    if r.get("multicast") is not None:
        rs = receivers(r)
        ratios = [x["delivery_ratio"] for x in rs]
        lat = [x["latency_mean_s"] for x in rs if x["latency_mean_s"] is not None]
        cells += [
            f"{min(ratios):.4f}",
            f"{sum(ratios) / len(ratios):.4f}",
            us(sum(lat) / len(lat)),
            us(max(x["latency_max_s"] or 0 for x in rs)),
            f"{r.get('multicast', 'packets', 'dropped'):,}",
            f"{r.get('multicast', 'detours', 'copies'):,}",
        ]
    else:
        cells += ["-"] * 6
    p50, p99 = unicast_fct(r, 0.5), unicast_fct(r, 0.99)
    b99 = unicast_fct(base, 0.99)
    busiest, ratio, used = core_imbalance(r)
    u = unicast(r)
    cells += [
        f"{u['finished'].sum()} / {u.height}" if u.height else "-",
        ms(p50),
        ms(p99),
        "-" if p99 is None or b99 is None else f"{p99 / b99:.2f}",
        f"{busiest:.2f} ({ratio:.2f}), {used} cores",
    ]
    return cells


HEADER = [
    "run",
    "worst delivery",
    "mean delivery",
    "latency mean",
    "latency max",
    "copies dropped",
    "copies detoured",
    "unicast flows done",
    "unicast FCT p50",
    "unicast FCT p99",
    "p99 / alone",
    "busiest core: MB down (/ mean)",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=IMAGES, help="folder for the two figures")
    ap.add_argument("--small", action="store_true", help="5 ms instead of 20 (the test's size)")
    args = ap.parse_args(argv)
    size = SIZES["small" if args.small else "full"]
    # The failure: the busiest core-aggregation link of the groups alone (a root into a pod).
    runs = {"multicast": clos.run(scenario("multicast", size))}
    failed = busiest_core_link(runs["multicast"])
    runs = {name: runs.get(name) or clos.run(scenario(name, size, failed)) for name in RUNS}
    base = runs["unicast"]
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for name, r in runs.items():
        print("| " + " | ".join(row(name, r, base)) + " |")
    for name in ("multicast-failure", "failure"):
        print(failure_line(name, runs[name], failed))

    images = args.out
    images.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(8, 3.6))
    ax = fig.subplots()
    legend = {
        "multicast": "groups alone",
        "none": "beside web search, no spreading",
        "group": "beside web search, spread per group",
        "packet": "beside web search, spread per packet",
        "failure": "beside web search, a core link failed",
    }
    for name, label in legend.items():
        lat = sorted(
            x["latency_mean_s"] * 1e6 for x in receivers(runs[name]) if x["latency_mean_s"]
        )
        ax.plot(
            lat,
            [(i + 1) / len(lat) for i in range(len(lat))],
            label=label,
            lw=1.2,
            drawstyle="steps-post",
        )
    ax.set_xlabel("receiver's mean one-way latency (us)")
    ax.set_ylabel("fraction of receivers")
    ax.set_title(
        f"k = 8 fat tree: {GROUPS} groups x {MEMBERS} members beside DCTCP web search",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(images / "multicast-latency.png", dpi=110)

    fig = Figure(figsize=(8, 3.4))
    ax = fig.subplots()
    modes = ("multicast", "multicast-group", "multicast-packet")
    cores = [f"core{i}" for i in range(16)]
    width = 0.27
    for j, mode in enumerate(modes):
        b = core_down_bytes(runs[mode])
        ax.bar(
            [i + (j - 1) * width for i in range(len(cores))],
            [b.get(c, 0) / 1e6 for c in cores],
            width,
            label=f"spread = {SPREAD.get(mode, 'none')}",
        )
    ax.set_xticks(range(len(cores)), [c.removeprefix("core") for c in cores], fontsize=7)
    ax.set_xlabel("core")
    ax.set_ylabel("MB sent down")
    ax.set_title("the groups alone: bytes each core sends down, by upstream spreading", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(images / "multicast-core-load.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
