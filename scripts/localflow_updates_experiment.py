"""Issue 38: the update strategies applied to LocalFlow's rule rewrites (docs/updates.md,
"Update strategies for LocalFlow's rewrites").

The setup of scripts/localflow_install_experiment.py (LocalFlow's own small-scale setup: a k = 8
fat tree of 1 Gb/s links, a 10 ms scheduling interval, 300 ms, seed 1), with each round's rules
written through the control channel at 1000 rules/s behind a 2.5 ms controller round trip,
under each update strategy: `unordered` (in place, as they arrive), `ordered` (tier by tier,
downstream first), `two_phase` (each round a version beside the old, stamped at the source
ToR) and `per_flow` (as two-phase, but a flow that has sent within the 1 s default soft timeout
keeps its round's rules, and the old rules go only once all such flows idled that long). LocalFlow without the channel and ECMP are the references. Two workloads: the paper's
permutation of long flows (aggregate goodput) and web-search flow sizes at 50% load (FCT by
size, and each flow's FCT against its own FCT without the channel: the same seed draws the same
flows). Prints the tables docs/updates.md holds and draws docs/images/updates-localflow-strategies.png.

    .venv/bin/python scripts/localflow_updates_experiment.py            # about a minute
    .venv/bin/python scripts/localflow_updates_experiment.py --out DIR --small  # a test does
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

import clos

HERE = Path(__file__).resolve().parent
IMAGES = HERE.parent / "docs" / "images"
_spec = importlib.util.spec_from_file_location(
    "localflow_install_experiment", HERE / "localflow_install_experiment.py"
)
assert _spec is not None and _spec.loader is not None
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)

CHANNEL = [
    "convergence.mode=controller",
    "convergence.latency=2.5ms",
    "convergence.rule_rate=1000",
]
STRATEGIES = ["unordered", "ordered", "two_phase", "per_flow"]
WORKLOADS = {"permutation": [], "web search": base.POISSON}


def run_all(small: bool) -> dict[str, dict[str, clos.Results]]:
    out: dict[str, dict[str, clos.Results]] = {}
    for workload, extra in WORKLOADS.items():
        lf = [*extra, f"routing.interval={base.INTERVAL}"]
        runs = {"no channel": clos.run(base.scenario(lf, small))}
        for s in STRATEGIES:
            over = [*lf, *CHANNEL, f"convergence.update={s}"]
            runs[s] = clos.run(base.scenario(over, small))
        runs["ECMP"] = clos.run(base.scenario([*extra, "routing.scheme=ecmp"], small))
        out[workload] = runs
    return out


def install(r: clos.Results) -> dict | None:
    return r.get("load_balancer").get("install")


def slowdown(r: clos.Results, ref: clos.Results) -> tuple[float, float, int]:
    """Each flow's FCT over its own FCT in `ref` (flows finished in both, matched by id):
    median, p99 and how many."""
    a = r.flows.filter(pl.col("finished")).select("id", "fct_ps")
    b = ref.flows.filter(pl.col("finished")).select("id", pl.col("fct_ps").alias("ref_ps"))
    both = a.join(b, on="id")
    if both.height == 0:
        return float("nan"), float("nan"), 0
    x = both["fct_ps"] / both["ref_ps"]
    return float(x.median()), float(x.quantile(0.99, "nearest")), both.height


def strategy_cells(r: clos.Results) -> list[str]:
    i = install(r)
    if i is None:
        return ["-"] * 6
    tagged = i["update"] in ("two_phase", "per_flow")
    versions = f"{i['versions']} ({i['rounds_waited']} waited)" if tagged else "-"
    if i["update"] == "per_flow":
        versions += f"; {i['flows_kept_on_old_round']:,} flows kept on an old round"
    removed = (
        f"{i['time_to_remove_old_mean_ms']:.1f} ms"
        if i["time_to_remove_old_mean_ms"] > 0 or not i.get("old_version_held_at_end")
        else "held to the end"
    )
    times = (
        f"{i['time_to_flip_mean_ms']:.1f} / {removed}"
        if tagged
        else f"{i['install_delay_mean_ms']:.1f} ms"
    )
    sent = r.get("packets", "sent")
    return [
        f"{i['mixed_version_packets']:,} ({i['mixed_version_packets'] / sent:.1%}) / "
        f"{i['stale_version_packets']:,}",
        f"{i['peak_rules_total']:,} ({i['peak_rules_one_switch']})",
        f"{i['rules_written']:,}",
        versions,
        times,
        f"{i['tier_rounds']}" if i["update"] == "ordered" else "-",
    ]


def tables(runs: dict[str, dict[str, clos.Results]]) -> str:
    head = (
        "mixed-version packets (of all sent) / stale | peak rules, all switches (one switch) "
        "| rules written | versions (rounds waited) | round to in force: mean (two-phase, "
        "per-flow: to last flip / old rules removed) | tiers sent in turn |"
    )
    lines = [
        f"| permutation | goodput (Gb/s) | x no channel | {head}",
        "|---|" + "---|" * 8,
    ]
    perm = runs["permutation"]
    ref = perm["no channel"].get("goodput", "aggregate_bps")
    for name, r in perm.items():
        g = r.get("goodput", "aggregate_bps")
        row = [name, f"{g / 1e9:.2f}", f"{g / ref:.3f}", *strategy_cells(r)]
        lines.append("| " + " | ".join(row) + " |")
    web = runs["web search"]
    lines += [
        "",
        "| web search, 50% load | "
        + " | ".join(f"{c}: mean / p99 (n)" for c in base.CLASSES)
        + " | per-flow FCT / no channel: median / p99 (flows) | mixed-version packets (of all "
        "sent) / stale "
        "| peak rules, all switches (one switch) | rules written |",
        "|---|" + "---|" * (len(base.CLASSES) + 4),
    ]
    for name, r in web.items():
        cells = [f"{m:.2f} / {p:.1f} ms ({n})" for m, p, n in base.fct_by_class(r).values()]
        med, p99, n = slowdown(r, web["no channel"])
        s = strategy_cells(r)
        lines.append(
            "| "
            + " | ".join([name, *cells, f"{med:.3f} / {p99:.2f} ({n})", s[0], s[1], s[2]])
            + " |"
        )
    return "\n".join(lines)


def figure(runs: dict[str, dict[str, clos.Results]], path: Path) -> None:
    fig = Figure(figsize=(9, 6))
    (gp, fct), (mixed, rules) = fig.subplots(2, 2)
    names = list(runs["permutation"])
    x = range(len(names))
    perm = [runs["permutation"][n].get("goodput", "aggregate_bps") / 1e9 for n in names]
    gp.bar(x, perm, color="tab:blue")
    gp.set_xticks(x, names, fontsize=7)
    gp.set_ylabel("aggregate goodput (Gb/s)")
    gp.set_title("permutation of long flows", fontsize=9)
    for j, cls in enumerate(base.CLASSES):
        vals = [base.fct_by_class(runs["web search"][n])[cls][1] for n in names]
        fct.bar([k + (j - 1) * 0.27 for k in x], vals, width=0.27, label=cls)
    fct.set_xticks(x, names, fontsize=7)
    fct.set_yscale("log")
    fct.set_ylabel("p99 FCT (ms, finished flows)")
    fct.set_title("web search flows, 50% load", fontsize=9)
    fct.set_ylim(top=fct.get_ylim()[1] * 6)
    fct.legend(fontsize=7, ncols=3, loc="upper left")
    chan = STRATEGIES
    for j, (w, color) in enumerate((("permutation", "tab:blue"), ("web search", "tab:orange"))):
        offs = [k + (j - 0.5) * 0.4 for k in range(len(chan))]
        m = [install(runs[w][s])["mixed_version_packets"] for s in chan]  # type: ignore[index]
        p = [install(runs[w][s])["peak_rules_total"] for s in chan]  # type: ignore[index]
        mixed.bar(offs, m, width=0.4, color=color, label=w)  # a 0 draws no bar on the log axis
        rules.bar(offs, p, width=0.4, color=color, label=w)
        for o, v in zip(offs, m, strict=True):
            mixed.text(o, max(v, 1), f"{v:,}", ha="center", va="bottom", fontsize=6)
    mixed.set_yscale("log")
    mixed.set_ylim(bottom=1)
    mixed.set_ylabel("packets forwarded by a mix of rounds")
    mixed.set_title("mixed-version packets", fontsize=9)
    mixed.set_xticks(range(len(chan)), chan, fontsize=7)
    mixed.set_ylim(top=mixed.get_ylim()[1] * 6)
    mixed.legend(fontsize=7)
    rules.set_ylabel("rules held, all switches, at the peak")
    rules.set_title("peak rule space", fontsize=9)
    rules.set_xticks(range(len(chan)), chan, fontsize=7)
    rules.legend(fontsize=7)
    fig.suptitle(
        f"LocalFlow, {base.INTERVAL} interval, 1000 rules/s behind a 2.5 ms round trip, "
        "by update strategy",
        fontsize=9,
    )
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
    figure(runs, args.out / "updates-localflow-strategies.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
