"""Issue 38's VM-migration experiment: the directory's new mapping pushed to the agents as rules
through the control channel, under each update strategy (docs/updates.md, "The VM migration
through the channel").

Runs the bundled `vm-migration` (reactive correction: ToRs report misdelivered packets and the
directory corrects each sender) and `vm-migration-unordered`, `-two-phase` and `-per-flow` (the
mapping pushed at the update's commit over a 2.5 ms round trip, 1000 rules/s per agent), plus
`ordered` and per-flow with a 2 ms timeout as overrides. Each once with the update latency
measured on the real directory (as bundled) and once committed at the move
(`directory.update_latency=0s`). Prints the table docs/updates.md holds (a few seconds).

    .venv/bin/python scripts/migration_updates_experiment.py
    .venv/bin/python scripts/migration_updates_experiment.py --out DIR   # also the table as a file
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import clos
from clos.scenario import Scenario

# Name, bundled scenario, overrides.
RUNS = [
    ("reactive (no channel)", "vm-migration", []),
    ("unordered", "vm-migration-unordered", []),
    ("ordered", "vm-migration-unordered", ["convergence.update=ordered"]),
    ("two_phase", "vm-migration-two-phase", []),
    ("per_flow, 1 s timeout", "vm-migration-per-flow", []),
    ("per_flow, 2 ms timeout", "vm-migration-per-flow", ["convergence.flow_timeout=2ms"]),
]
COMMITS = {"measured": [], "at the move": ["directory.update_latency=0s"]}


def run_all() -> dict[str, dict[str, dict]]:
    return {
        commit: {
            name: clos.run(Scenario.load(sc, [*over, *extra])).summary for name, sc, over in RUNS
        }
        for commit, extra in COMMITS.items()
    }


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f} ms"


def table(runs: dict[str, dict[str, dict]]) -> str:
    lines = [
        "| update committed | mapping reaches agents by | misdelivered | sent to the old place "
        "| last sent there | agents on the new mapping | old rules removed | rules written "
        "(peak) | flows kept on the old mapping | FCT mean / max |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for commit, by_name in runs.items():
        for name, s in by_name.items():
            (m,) = s["directory"]["migrations"]
            p = m.get("push")
            fct = s["fct"]["all"]["fct_s"]
            committed = f"{commit} ({ms(m['directory_updated_s'])})"
            if p is None:
                agents = ms(m["senders_converged_s"])
                removed, rules, kept = "-", "-", "-"
            else:
                agents = ms(p["completed_s"])
                removed = ms(p["old_rules_removed_s"])
                rules = f"{p['rules_written']} ({p['peak_rules']})"
                kept = str(p["flows_kept_on_old_mapping"])
            lines.append(
                "| "
                + " | ".join(
                    [
                        committed,
                        name,
                        f"{m['misdelivered']:,}",
                        f"{m['stale_sends']:,}",
                        ms(m["last_stale_send_s"]),
                        agents,
                        removed,
                        rules,
                        kept,
                        f"{fct['mean'] * 1e3:.1f} / {fct['p99'] * 1e3:.1f} ms",
                    ]
                )
                + " |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder to write the table to (migration-updates.md)")
    args = ap.parse_args(argv)
    text = table(run_all())
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "migration-updates.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
