"""Performance benchmarks: bundled scenarios and the CPU time each should stay within.

Targets live here, not in the TOML files, because the core's schema rejects keys it does not know.
"""

from pathlib import Path

BENCH = Path(__file__).parent / "data" / "bench"

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


def bench_files(only: str | None = None) -> list[Path]:
    """All benchmark scenarios, or those named `only` (full name, or a prefix such as `b1`)."""
    files = sorted(BENCH.glob("*.toml"))
    if only is None:
        return files
    chosen = [path for path in files if path.stem == only or path.stem.startswith(f"{only}-")]
    if not chosen:
        raise FileNotFoundError(
            f"no benchmark named {only} (benchmarks: {', '.join(path.stem for path in files)})"
        )
    return chosen
