"""Where a benchmark's time goes: `perf record` one bundled benchmark or scaling scenario, then
share the samples taken in the Rust core by source file, function and line.

    .venv/bin/python scripts/profile.py b2-fat-tree-k16 [--stop 5ms] [--lines]

Fat LTO inlines nearly the whole event loop into a few symbols, so perf's own per-symbol report
says little. Each sample's address is resolved with `addr2line -i` (the release profile keeps
line tables) and charged to the innermost frame that is clos-core's own code; standard-library
code inlined into it (a Vec push, a sort) counts for that frame, except the u128 division
helpers of compiler-builtins, named apart. docs/performance.md has the tables this printed.
Needs `perf` (kernel.perf_event_paranoid <= 2 is enough for one's own process) and binutils.
"""

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import clos._core
from clos.cli.bench import BENCH, SCALING

CORE = Path(clos._core.__file__).resolve()

RUN = """
import sys, tomllib, clos
table = tomllib.load(open(sys.argv[1], "rb"))
if sys.argv[2]:
    table["stop"] = sys.argv[2]
stats = clos.run(table).summary["stats"]
print(f"{stats['events']:,} events, {stats['cpu_seconds']:.2f} CPU s", file=sys.stderr)
"""


def record(scenario: Path, stop: str, data: Path) -> None:
    subprocess.run(
        [
            "perf",
            "record",
            "-F",
            "999",
            "-o",
            str(data),
            "--",
            sys.executable,
            "-c",
            RUN,
            str(scenario),
            stop,
        ],
        check=True,
    )


def core_samples(data: Path) -> tuple[int, collections.Counter[int]]:
    """All samples, and the core's by address in the shared object."""
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "--show-mmap-events", "-F", "ip,dso"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # The executable segment's file offset differs from its address by a constant.
    segments = subprocess.run(["readelf", "-lW", str(CORE)], capture_output=True, text=True).stdout
    load = next(line.split() for line in segments.splitlines() if "LOAD" in line and "R E" in line)
    shift = int(load[2], 16) - int(load[1], 16)
    mapped, total, addresses = None, 0, collections.Counter()
    for line in script.splitlines():
        if "PERF_RECORD_MMAP" in line and str(CORE) in line and "r-xp" in line:
            start, offset = re.search(
                r"\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+)", line
            ).groups()
            mapped = (int(start, 16), int(offset, 16))
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].startswith("("):
            continue
        total += 1
        if str(CORE) in parts[1] and mapped:
            addresses[int(parts[0], 16) - mapped[0] + mapped[1] + shift] += 1
    return total, addresses


def frames(addresses: list[int]) -> dict[int, list[tuple[str, str]]]:
    """Inlining chain of each address, innermost first: (function, file:line)."""
    out = subprocess.run(
        ["addr2line", "-i", "-f", "-C", "-a", "-e", str(CORE), *map(hex, addresses)],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    chains: dict[int, list[tuple[str, str]]] = {}
    i = 0
    while i < len(out):
        if out[i].startswith("0x"):
            current = chains.setdefault(int(out[i], 16), [])
            i += 1
        else:
            current.append((out[i], out[i + 1]))
            i += 2
    return chains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="a benchmark or scaling scenario, e.g. b1-fat-tree-k8")
    parser.add_argument("--stop", default="", help="cut the run to this simulated time")
    parser.add_argument("--lines", action="store_true", help="also share by source line")
    args = parser.parse_args()
    scenario = next(
        p for folder in (BENCH, SCALING) for p in [folder / f"{args.name}.toml"] if p.exists()
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        record(scenario, args.stop, data)
        total, addresses = core_samples(data)
    chains = frames(sorted(addresses))
    shares = {
        "source file": collections.Counter(),
        "function": collections.Counter(),
        "line": collections.Counter(),
    }
    for address, n in addresses.items():
        chain = chains.get(address) or [("?", "?")]
        own = next(((f, loc) for f, loc in chain if "clos-core/src/" in loc), None)
        builtin = "compiler-builtins" in chain[0][1]
        if own is None:
            # Out-of-line standard-library code (a sort, a memcpy): named by the function that
            # contains it, whose type parameters say whose data it works on.
            own = (chain[-1][0], "(standard library):?")
        path, _, line = re.sub(r".*clos-core/src/", "", own[1]).rpartition(":")
        shares["source file"][path + (" [u128 division]" if builtin else "")] += n
        shares["function"][re.sub(r"^clos_core::", "", own[0])[:100]] += n
        shares["line"][f"{path}:{line}  {own[0][:60]}"] += n
    in_core = sum(addresses.values())
    print(
        f"{total} samples, {in_core} in the Rust core ({100 * in_core / total:.1f}%); shares of the core's"
    )
    for kind, counter in shares.items():
        if kind == "line" and not args.lines:
            continue
        print(f"\nby {kind}:")
        for key, n in counter.most_common(25):
            print(f"{100 * n / in_core:6.1f}%  {key}")


if __name__ == "__main__":
    main()
