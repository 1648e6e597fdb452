"""clos beside ns-3 on the same scenarios (docs/validation.md, "Beside ns-3"), one command:

    .venv/bin/python scripts/crosscheck/run.py [--flows 2,4,8,16] [--end 0.25] [--markdown]
    .venv/bin/python scripts/crosscheck/run.py --leaf-spine [--seeds 1,2,3] [--markdown]

The bottleneck: N long flows from N hosts through one switch into one receiver (10 Gb/s links
with 1 us of delay, the port toward the receiver marking CE above K = 65 packets and holding
200), DCTCP or NewReno. The leaf-spine: 4 leaves x 4 spines x 4 hosts at 10 Gb/s, the same ports,
a random permutation across leaves, per-packet spraying (ns-3's global routing with
RandomEcmpRouting, clos's `spray-random`). ns-3's sides are `dctcp_bottleneck.cc` and
`leaf_spine.cc` beside this file, compiled against the `ns3` wheel from PyPI, which the first
run installs into target/crosscheck/venv (about 500 MB, two minutes).
clos runs the same scenario twice (stopped at the warm-up and at the end) and takes each flow's
goodput between the two. Prints one row per point: aggregate goodput, the flows' spread (min
and max over mean, Jain's index), the bottleneck's mean queue, marks and drops. Not part of
./test.sh: it needs the wheel and about a minute per point.

Framing differs between the two: ns-3's point-to-point links carry 2 bytes of PPP header on a
1,500-byte IP packet, clos's frames are Ethernet's 1,538 bytes with preamble and gap. So that a
packet takes the same time on the wire in both, ns-3's links run at 10 Gb/s x 1,502 / 1,538.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import clos

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORK = ROOT / "target" / "crosscheck"
NS3_WHEEL = "ns3==3.44.post0"
FRAME, NS3_FRAME = 1538, 1502
K_PACKETS, BUFFER_PACKETS = 65, 200


def ns3_binary(name: str = "dctcp_bottleneck") -> Path:
    venv = WORK / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    ns3 = Path(site) / "ns3"
    if not (ns3 / "include" / "ns3" / "core-module.h").exists():
        print(f"installing {NS3_WHEEL} into {venv} (once)", file=sys.stderr)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", NS3_WHEEL], check=True)
    source = HERE / f"{name}.cc"
    binary = WORK / name
    newest = max(source.stat().st_mtime, (HERE / "clos_like.h").stat().st_mtime)
    if not binary.exists() or binary.stat().st_mtime < newest:
        libs = sorted(p.name[3:-3] for p in (ns3 / "lib64").glob("libns3.*.so"))
        subprocess.run(
            ["g++", "-std=c++20", "-O2", "-w", f"-I{ns3 / 'include'}", f"-I{HERE}", str(source), "-o", str(binary),
             f"-L{ns3 / 'lib64'}", *[f"-l{lib}" for lib in libs], f"-Wl,-rpath,{ns3 / 'lib64'}"],
            check=True,
        )
    return binary


def run_ns3(binary: Path, flows: int, cc: str, warmup: float, end: float) -> dict:
    rate = round(10e9 * NS3_FRAME / FRAME)
    out = subprocess.run(
        [str(binary), f"--flows={flows}", f"--cc={cc}", f"--k={K_PACKETS}", f"--buffer={BUFFER_PACKETS}",
         f"--warmup={warmup}", f"--end={end}", f"--rate={rate}bps"],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_clos(flows: int, cc: str, warmup: float, end: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        csv.write_text("src,dst,bytes,start\n" + "".join(f"{i},{flows},1TB,0\n" for i in range(flows)))
        scenario = {
            "seed": 1,
            "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": flows + 1,
                         "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"},
            "switch": {"buffer": BUFFER_PACKETS * FRAME, "ecn_threshold": K_PACKETS * FRAME},
            "transport": {"kind": cc if cc == "dctcp" else "tcp"},
            "workload": {"kind": "flows", "file": str(csv)},
            "output": {"queue_interval": "10us"},
        }
        early = clos.run({**scenario, "stop": f"{warmup}s"})
        late = clos.run({**scenario, "stop": f"{end}s"})
    rates = [(b - a) * 8 / (end - warmup) for a, b in zip(early.flows["delivered"], late.flows["delivered"])]
    links = late.links
    port = int(links.filter((links["src"] == "tor0") & (links["dst"] == f"h{flows}"))["id"][0])
    q = late.queues
    q = q.filter((q["link"] == port) & (q["time_ps"] >= int(warmup * 1e12)))
    marks = int(links["ecn_marks"][port]) - int(early.links["ecn_marks"][port])
    return {"flows": rates, "marks": marks, "drops": int(links["drops"][port]),
            "mean_queue_packets": float(q["bytes"].mean()) / FRAME}


LEAVES, SPINES, HOSTS = 4, 4, 4


def permutation(seed: int) -> list[tuple[int, int]]:
    """A random permutation of the hosts in which no host sends within its own leaf."""
    import random

    rng = random.Random(seed)
    n = LEAVES * HOSTS
    while True:
        dst = list(range(n))
        rng.shuffle(dst)
        if all(i // HOSTS != dst[i] // HOSTS for i in range(n)):
            return list(enumerate(dst))


def run_ns3_leaf_spine(binary: Path, pairs: list[tuple[int, int]], warmup: float, end: float) -> dict:
    rate = round(10e9 * NS3_FRAME / FRAME)
    out = subprocess.run(
        [str(binary), f"--leaves={LEAVES}", f"--spines={SPINES}", f"--hosts={HOSTS}", f"--k={K_PACKETS}",
         f"--buffer={BUFFER_PACKETS}", f"--rate={rate}bps", f"--warmup={warmup}", f"--end={end}",
         "--pairs=" + ",".join(f"{a}-{b}" for a, b in pairs)],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_clos_leaf_spine(pairs: list[tuple[int, int]], warmup: float, end: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        csv.write_text("src,dst,bytes,start\n" + "".join(f"{a},{b},1TB,0\n" for a, b in pairs))
        scenario = {
            "seed": 1,
            "topology": {"kind": "leaf_spine", "leaves": LEAVES, "spines": SPINES, "hosts_per_leaf": HOSTS,
                         "host_rate": "10Gbps", "fabric_rate": "10Gbps", "link_delay": "1us"},
            "switch": {"buffer": BUFFER_PACKETS * FRAME, "ecn_threshold": K_PACKETS * FRAME},
            "routing": {"scheme": "spray-random"},
            "transport": {"kind": "dctcp", "sack": False},
            "workload": {"kind": "flows", "file": str(csv)},
        }
        early = clos.run({**scenario, "stop": f"{warmup}s"})
        late = clos.run({**scenario, "stop": f"{end}s"})
    return {"flows": [(b - a) * 8 / (end - warmup) for a, b in zip(early.flows["delivered"], late.flows["delivered"])]}


def print_markdown(header: tuple[str, ...], rows: list[tuple]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


def describe(r: dict) -> tuple[float, float, float, float]:
    x = r["flows"]
    mean = sum(x) / len(x)
    jain = sum(x) ** 2 / (len(x) * sum(v * v for v in x))
    return sum(x) / 1e9, min(x) / mean, max(x) / mean, jain


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", default="2,4,8,16")
    ap.add_argument("--cc", default="dctcp", choices=["dctcp", "newreno"])
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--end", type=float, default=0.25)
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--leaf-spine", action="store_true", help="the leaf-spine permutation instead")
    ap.add_argument("--seeds", default="1,2,3", help="--leaf-spine: permutations to draw")
    a = ap.parse_args()
    if a.leaf_spine:
        return leaf_spine(a)
    binary = ns3_binary()
    header = ("flows", "sim", "Gb/s", "min/mean", "max/mean", "Jain", "mean queue (pkts)", "marks", "drops")
    rows = []
    for n in (int(v) for v in a.flows.split(",")):
        for name, r in (("ns-3", run_ns3(binary, n, a.cc, a.warmup, a.end)), ("clos", run_clos(n, a.cc, a.warmup, a.end))):
            agg, lo, hi, jain = describe(r)
            rows.append((n, name, f"{agg:.2f}", f"{lo:.3f}", f"{hi:.3f}", f"{jain:.4f}",
                         f"{r['mean_queue_packets']:.1f}", r["marks"], r["drops"]))
            print(*rows[-1], sep="\t", file=sys.stderr)
    if a.markdown:
        print_markdown(header, rows)
    return 0


def leaf_spine(a: argparse.Namespace) -> int:
    binary = ns3_binary("leaf_spine")
    header = ("seed", "sim", "Gb/s", "min/mean", "max/mean", "Jain")
    rows = []
    for seed in (int(v) for v in a.seeds.split(",")):
        pairs = permutation(seed)
        for name, r in (("ns-3", run_ns3_leaf_spine(binary, pairs, a.warmup, a.end)), ("clos", run_clos_leaf_spine(pairs, a.warmup, a.end))):
            agg, lo, hi, jain = describe(r)
            rows.append((seed, name, f"{agg:.2f}", f"{lo:.3f}", f"{hi:.3f}", f"{jain:.4f}"))
            print(*rows[-1], sep="\t", file=sys.stderr)
    if a.markdown:
        print_markdown(header, rows)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
