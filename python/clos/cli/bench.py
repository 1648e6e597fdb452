"""Performance benchmarks: bundled scenarios and the CPU time each should stay within.

Targets live here, not in the TOML files, because the core's schema rejects keys it does not know.
"""

import re
from pathlib import Path

BENCH = Path(__file__).parents[1] / "data" / "bench"

# The scaling curve (`clos bench --scaling`): one traffic pattern on fat trees of growing size.
SCALING = Path(__file__).parents[1] / "data" / "scaling"

TARGET_CPU_SECONDS = {
    "b1-fat-tree-k8": 1.0,
    "b2-fat-tree-k16": 5.0,
    "b2-fat-tree-k16-spray": 5.0,
    "b3-fat-tree-k24": 30.0,
}

# Benchmarks the performance issue sets no target for: measured and reported only.
UNTARGETED = {"b4-leaf-spine-drill"}

# Peak memory of the whole process (the Python interpreter included).
TARGET_PEAK_BYTES = {
    "b3-fat-tree-k24": 400e6,
    "b5-fat-tree-k32": 4e9,
}


def bench_files(only: str | None = None, folder: Path = BENCH) -> list[Path]:
    """All scenarios in `folder` (the benchmarks, or `SCALING`), in order of size, or those named
    `only` (full name, or a prefix such as `b1`)."""
    files = sorted(folder.glob("*.toml"), key=_natural)
    if only is None:
        return files
    chosen = [path for path in files if path.stem == only or path.stem.startswith(f"{only}-")]
    if not chosen:
        raise FileNotFoundError(
            f"no benchmark named {only} (benchmarks: {', '.join(path.stem for path in files)})"
        )
    return chosen


def _natural(path: Path) -> list[int | str]:
    """Sort key that puts `scaling-k8` before `scaling-k16` (numbers compared as numbers)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.stem)]
