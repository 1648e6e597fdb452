"""Compare the callgrind benchmarks' instruction counts with the committed baseline.

Called by scripts/instructions.sh with the JSON lines gungraun printed (one summary per
benchmark). Prints a table of baseline and current counts and exits 1 if any benchmark runs more
than `REGRESSION_PCT` percent more instructions than its baseline, or 2 if the counts cannot be
compared (another compiler or valgrind, or a benchmark missing on either side). `--update`
rewrites the baseline instead; the baseline is committed on its own, with the reason.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BASELINE = (
    Path(__file__).resolve().parent.parent / "crates/clos-core/benches/instructions/baseline.json"
)
REGRESSION_PCT = 10.0


def tool_versions() -> dict[str, str]:
    """The tools the counts depend on. rustc decides which instructions exist at all (inlining,
    code generation), so counts from two compilers differ without any change to the code;
    valgrind counts them, and gungraun-runner decides what is counted (the benchmark function,
    not its setup)."""

    def first_line(*cmd: str) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return out.strip().splitlines()[0]

    return {
        "rustc": first_line("rustc", "--version"),
        "valgrind": first_line("valgrind", "--version"),
        "gungraun-runner": first_line("gungraun-runner", "--version"),
    }


def read_counts(results: Path) -> dict[str, int]:
    """Instructions (callgrind's Ir) per benchmark, named `group::function::id`."""
    counts: dict[str, int] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        if not line.startswith("{"):
            continue
        summary = json.loads(line)
        name = f"{summary['group']}::{summary['function_name']}::{summary['id']}"
        (profile,) = [p for p in summary["profiles"] if p["tool"] == "Callgrind"]
        counts[name] = int(profile["data"]["total"]["metrics"]["Ir"]["values"]["new"])
    if not counts:
        sys.exit(f"error: no benchmark results in {results}")
    return counts


def change_pct(old: int, new: int) -> float:
    return (new - old) / old * 100.0


def table(baseline: dict[str, int], now: dict[str, int]) -> tuple[str, list[str]]:
    """The comparison table, and the names of the benchmarks that regressed."""
    rows = [("benchmark", "baseline", "now", "change", "")]
    regressed = []
    for name in sorted(baseline.keys() | now.keys()):
        old, new = baseline.get(name), now.get(name)
        if old is None or new is None:
            note = "not in the baseline" if old is None else "no longer run"
            rows.append((name, f"{old:,}" if old else "-", f"{new:,}" if new else "-", "", note))
            continue
        pct = change_pct(old, new)
        note = ""
        if pct > REGRESSION_PCT:
            note = f"REGRESSION (> +{REGRESSION_PCT:g}%)"
            regressed.append(name)
        elif pct < -REGRESSION_PCT:
            note = "faster: update the baseline to keep this gain"
        rows.append((name, f"{old:,}", f"{new:,}", f"{pct:+.2f}%", note))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]:>{widths[3]}}  {row[4]}".rstrip()
        for row in rows
    ]
    return "\n".join(lines), regressed


def update(now: dict[str, int], versions: dict[str, str]) -> None:
    baseline = {**versions, "instructions": dict(sorted(now.items()))}
    BASELINE.write_text(json.dumps(baseline, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {BASELINE}")
    print("Commit it on its own, and say in the message why the counts moved.")


def check(now: dict[str, int], versions: dict[str, str]) -> int:
    if not BASELINE.exists():
        print(
            f"error: no baseline at {BASELINE}: run scripts/instructions.sh --update",
            file=sys.stderr,
        )
        return 2
    recorded = json.loads(BASELINE.read_text(encoding="utf-8"))
    baseline: dict[str, int] = recorded["instructions"]
    report, regressed = table(baseline, now)
    print(report)
    mismatched = [
        f"{tool}: baseline {recorded.get(tool)!r}, here {v!r}"
        for tool, v in versions.items()
        if recorded.get(tool) != v
    ]
    if mismatched:
        # Another compiler moves counts by itself; comparing would blame the code for it.
        print(
            "error: the baseline was counted with other tools, so the counts cannot be compared:\n  "
            + "\n  ".join(mismatched)
            + "\nIf the new tools are meant to stay, run scripts/instructions.sh --update and commit the"
            " baseline on its own, naming the tool change as the reason.",
            file=sys.stderr,
        )
        return 2
    if baseline.keys() != now.keys():
        print(
            "error: the benchmarks run differ from the baseline's: after adding, renaming or removing"
            " one, run scripts/instructions.sh --update and commit the baseline on its own.",
            file=sys.stderr,
        )
        return 2
    if regressed:
        print(
            f"error: {len(regressed)} benchmark(s) run more than {REGRESSION_PCT:g}% more instructions than the"
            " baseline. If the cost is deliberate (more work for a reason), run scripts/instructions.sh"
            " --update and commit the baseline on its own, with the reason.",
            file=sys.stderr,
        )
        return 1
    print(f"instruction counts: {len(now)} benchmarks within +{REGRESSION_PCT:g}% of the baseline")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="gungraun's JSON lines (--output-format=json)")
    parser.add_argument(
        "--update", action="store_true", help="rewrite the baseline from these results"
    )
    args = parser.parse_args()
    now = read_counts(args.results)
    versions = tool_versions()
    if args.update:
        if BASELINE.exists():
            print(table(json.loads(BASELINE.read_text(encoding="utf-8"))["instructions"], now)[0])
        update(now, versions)
        return 0
    return check(now, versions)


if __name__ == "__main__":
    sys.exit(main())
