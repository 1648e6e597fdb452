"""Set the paper-scale values beside the small-scale ones, as the markdown table in
docs/reproduction.md ("The claims at the paper scale").

    python scripts/scale_table.py SMALL_CLAIMS_CSV PAPER_CLAIMS_CSV [PAPER_CLAIMS_CSV ...]

Each CSV is a `claims.csv` that `clos reproduce` wrote. The paper-scale files may each hold a
subset of the claims (one per paper, or one per `--only` batch); a claim found in none of them
is listed as not run at the paper scale.
"""

import csv
import sys
from pathlib import Path


def read(path: str) -> dict[str, dict[str, str]]:
    if not Path(path).is_file():
        print(
            f"error: {path}: no such file (a claims.csv that `clos reproduce --out` wrote)",
            file=sys.stderr,
        )
        sys.exit(2)
    with Path(path).open(newline="") as f:
        return {f"{r['paper']}/{r['claim']}": r for r in csv.DictReader(f)}


def number(text: str) -> str:
    return f"{float(text):.3g}" if text else ""


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    small = read(argv[1])
    paper: dict[str, dict[str, str]] = {}
    for path in argv[2:]:
        paper.update(read(path))
    print("| claim | paper | ours (small) | ours (paper scale) | verdict (paper scale) |")
    print("|---|---|---|---|---|")
    for name, s in small.items():
        p = paper.get(name)
        value = s["paper_value"] or "-"
        if p is None:
            print(f"| {name} | {value} | {number(s['ours'])} | not run | |")
        else:
            print(
                f"| {name} | {value} | {number(s['ours'])} | {number(p['ours'])} | {p['verdict']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
