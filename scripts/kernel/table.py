#!/usr/bin/env python3
"""The whole kernel comparison of docs/validation.md ("Beside the Linux kernel") in one command.

Runs each of its tables in turn, as the section's own commands do, and prints them as Markdown
under the section's headings: how a receiver ACKs a connection's first segments (`acks.py`);
incasts over fresh and kept connections at `rto_min` 200 ms and 10 ms, short flows beside a
long one and long flows sharing a port (`star.py`, Reno); the same long flows and incasts with
CUBIC; a leaf-spine permutation under the kernel's ECMP (`leafspine.py`). Needs root, network
namespaces, `ip`, `tc`, `ethtool` and `nstat`; elsewhere each part says in one line why it
skipped.

    sudo python3 scripts/kernel/table.py            # every table, 5 runs a point (3 for long flows)
    sudo python3 scripts/kernel/table.py --quick    # one run of a few points each, a few minutes

Extra arguments after `--` go to every `star.py` and `leafspine.py` run (for example
`-- --clos host.tsq=18KB` for an ablation of the whole table).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def parts(quick: bool) -> list[tuple[str, str, list[str]]]:
    """(heading, script, arguments) of each table, in the order docs/validation.md shows them."""
    runs = ["--runs", "1"] if quick else ["--runs", "5"]
    long_runs = ["--runs", "1"] if quick else ["--runs", "3"]
    rounds = ["--rounds", "2"] if quick else ["--rounds", "10"]
    fanin = ["--fanin", "4,16"] if quick else []
    kept_fanin = ["--fanin", "4,16"] if quick else ["--fanin", "4,8,16,32"]
    flows = ["--flows", "2"] if quick else ["--flows", "2,4,8"]
    incast = ["incast", *runs, *rounds]
    return [
        (
            "How a receiver ACKs a connection's first segments",
            "acks.py",
            ["--segments", "1,21,22,30" if quick else "1,2,3,8,16,20,21,22,23,24,30,40"],
        ),
        ("Incast, fresh connections, rto_min 200 ms", "star.py", [*incast, *fanin]),
        (
            "Incast, fresh connections, rto_min 10 ms",
            "star.py",
            [*incast, "--rto-min", "10ms", *kept_fanin],
        ),
        (
            "Incast, kept connections, rto_min 200 ms",
            "star.py",
            [*incast, "--persistent", *kept_fanin],
        ),
        (
            "Incast, kept connections, rto_min 10 ms",
            "star.py",
            [*incast, "--persistent", "--rto-min", "10ms", *kept_fanin],
        ),
        ("Short flows beside a long one", "star.py", ["short", *runs]),
        ("Long flows sharing a port", "star.py", ["long", *flows, *long_runs]),
        ("CUBIC: long flows", "star.py", ["long", *flows, *long_runs, "--cc", "cubic"]),
        (
            "CUBIC: incasts",
            "star.py",
            [*incast, "--fanin", "16" if quick else "8,16,32", "--cc", "cubic"],
        ),
        ("A leaf-spine under the kernel's ECMP", "leafspine.py", runs),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one run of a few points per table")
    ap.add_argument(
        "rest", nargs=argparse.REMAINDER, help="after --: passed to star.py and leafspine.py"
    )
    a = ap.parse_args()
    extra = [x for x in a.rest if x != "--"]
    failed = 0
    for heading, script, args in parts(a.quick):
        print(f"\n### {heading}\n", flush=True)
        command = [sys.executable, str(HERE / script), *args]
        if script != "acks.py":
            command += extra
        started = time.monotonic()
        status = subprocess.run(command).returncode
        print(f"\n({script} {' '.join(args)}: {time.monotonic() - started:.0f} s)", flush=True)
        failed += status != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
