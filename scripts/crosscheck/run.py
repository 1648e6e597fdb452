"""clos beside ns-3 on the same scenarios (docs/validation.md, "Beside ns-3"), one command:

    .venv/bin/python scripts/crosscheck/run.py [--flows 2,4,8,16] [--end 0.25] [--markdown]
    .venv/bin/python scripts/crosscheck/run.py --leaf-spine [--seeds 1,2,3] [--markdown]
    .venv/bin/python scripts/crosscheck/run.py --leaf-spine --routing ecmp [--seeds 1,2,3] [--markdown]
    .venv/bin/python scripts/crosscheck/run.py --incast [--fanin 4,8,16,32] [--cc newreno] [--markdown]

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
A pure ACK does not scale alike: 42 bytes in ns-3 (43 of clos's at that rate), 84 in clos (the
64-byte minimum frame with preamble and gap).

The leaf-spine under per-flow ECMP (`--routing ecmp`): the same permutation, DCTCP with SACK
(clos's default; per-flow paths do not reorder), clos's `routing.scheme = "ecmp"` with
`seed` = the permutation's seed. How both sides take the same path per flow: clos hashes each
flow's 5-tuple with a per-switch salt and has no path output, and ns-3 3.44 has no per-flow
ECMP, so the paths are read from clos and installed in ns-3. `clos_paths` runs the same
scenario (same seed, same flow list: the same salts and the same per-flow hash keys, which
depend on the flow's index, source and destination only) once per flow with only that flow
started, and reads from clos's per-link byte counters the leaf-to-spine link its data took
and the one its ACKs took. The full run's counters are checked against that assignment (every
fabric link it loads carries bytes, every other none). leaf_spine.cc installs the choices with
a routing table of its own on each leaf, ahead of global routing, keyed by source, destination
and the flow's port (a permutation may hold both a -> b and b -> a, so an address pair alone
would mix one flow's data with the other's ACKs), and reports the spine each flow's data and
ACKs crossed, which run.py checks too.

Two more things are made alike there. The ports count bytes on both sides (ns-3's `--bytes`:
K = 65 x 1,500 B, 200 x 1,500 B of buffer), as clos's do: a permutation puts ACKs in the data
ports, and counted as packets each ACK took a full packet's share of K and of the buffer. And
the hosts: `--host fifo` (the default) is one unbounded FIFO per NIC for data and ACKs on both
sides (ns-3's 10,000-packet FIFO, clos's `host.qdisc = "fifo"`, `tsq = "off"`); `--host fq` is
clos's default host, beside ns-3's fq_codel with CoDel off, which is not the same model: clos
keeps a flow's excess window inside TCP and stamps RTT samples at the NIC, ns-3 keeps it in the
qdisc, where it lengthens the RTT. The marks column counts marks on data packets only (ns-3's
DCTCP sends its pure ACKs ECN-capable, clos's are not). The table adds the max-min fair share
of the paths (`max_min`: data frames and per-segment ACKs on every link they cross), with
clos's framing and with ns-3's.

The incast (`--incast`): N senders and one receiver on one switch (clos: a leaf-spine of one
leaf and one spine with N + 1 hosts, as the bottleneck), 10 Gb/s, 1 us, the bottleneck's port
(200 packets; under DCTCP CE above K = 65), each sender sending one response of `--response`
bytes (64 KiB by default) at t = 0, DCTCP or `--cc newreno` (not ECN-capable: the port is a
200-packet drop-tail FIFO on both sides). 64 KiB is 45 segments: more than IW10, so slow start
and DCTCP's marks both act during a response, and at N = 32 the first windows alone (320
packets) overflow the port, so the sweep 4..32 crosses from no loss into loss. Per run: the
round's duration (the last response's completion), the round's goodput N x response x 8 /
duration, retransmission timeouts, retransmitted segments and drops at the receiver's port.
Both sides are deterministic; `--jitter` spreads the senders' starts uniformly over that many
microseconds (drawn per seed, the same starts on both sides) when the seeds should differ.
ns-3 opens the connections first and starts the responses 1 ms later (clos has no handshake);
durations are counted from there. incast.cc also reports why a sender timed out (its state,
window and bytes in flight then), the threshold each fast recovery set, the segments dropped
and, with `--sample`, the port's queue; `--trace=i` prints one sender's segments and ACKs.
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
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ns3 = Path(site) / "ns3"
    if not (ns3 / "include" / "ns3" / "core-module.h").exists():
        print(f"installing {NS3_WHEEL} into {venv} (once)", file=sys.stderr)
        subprocess.run(
            [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", NS3_WHEEL],
            check=True,
        )
    source = HERE / f"{name}.cc"
    binary = WORK / name
    newest = max(source.stat().st_mtime, (HERE / "clos_like.h").stat().st_mtime)
    if not binary.exists() or binary.stat().st_mtime < newest:
        libs = sorted(p.name[3:-3] for p in (ns3 / "lib64").glob("libns3.*.so"))
        subprocess.run(
            [
                "g++",
                "-std=c++20",
                "-O2",
                "-w",
                f"-I{ns3 / 'include'}",
                f"-I{HERE}",
                str(source),
                "-o",
                str(binary),
                f"-L{ns3 / 'lib64'}",
                *[f"-l{lib}" for lib in libs],
                f"-Wl,-rpath,{ns3 / 'lib64'}",
            ],
            check=True,
        )
    return binary


def run_ns3(binary: Path, flows: int, cc: str, warmup: float, end: float) -> dict:
    rate = round(10e9 * NS3_FRAME / FRAME)
    out = subprocess.run(
        [
            str(binary),
            f"--flows={flows}",
            f"--cc={cc}",
            f"--k={K_PACKETS}",
            f"--buffer={BUFFER_PACKETS}",
            f"--warmup={warmup}",
            f"--end={end}",
            f"--rate={rate}bps",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def star_scenario(senders: int, cc: str, csv: Path, seed: int = 1) -> dict:
    """clos's side of the one-switch star (`clos_like.h`'s BuildStar): the senders and a
    receiver under one switch, the receiver's port as the bottleneck, the flows from `csv`."""
    return {
        "seed": seed,
        "topology": {
            "kind": "leaf_spine",
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": senders + 1,
            "host_rate": "10Gbps",
            "fabric_rate": "10Gbps",
            "link_delay": "1us",
        },
        "switch": {"buffer": BUFFER_PACKETS * FRAME, "ecn_threshold": K_PACKETS * FRAME},
        "transport": {"kind": cc if cc == "dctcp" else "tcp"},
        "workload": {"kind": "flows", "file": str(csv)},
    }


def run_clos(flows: int, cc: str, warmup: float, end: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        csv.write_text(
            "src,dst,bytes,start\n" + "".join(f"{i},{flows},1TB,0\n" for i in range(flows))
        )
        scenario = {**star_scenario(flows, cc, csv), "output": {"queue_interval": "10us"}}
        early = clos.run({**scenario, "stop": f"{warmup}s"})
        late = clos.run({**scenario, "stop": f"{end}s"})
    rates = [
        (b - a) * 8 / (end - warmup)
        for a, b in zip(early.flows["delivered"], late.flows["delivered"], strict=True)
    ]
    links = late.links
    port = int(links.filter((links["src"] == "tor0") & (links["dst"] == f"h{flows}"))["id"][0])
    q = late.queues
    q = q.filter((q["link"] == port) & (q["time_ps"] >= int(warmup * 1e12)))
    marks = int(links["ecn_marks"][port]) - int(early.links["ecn_marks"][port])
    return {
        "flows": rates,
        "marks": marks,
        "drops": int(links["drops"][port]),
        "mean_queue_packets": float(q["bytes"].mean()) / FRAME,
    }


LEAVES, SPINES, HOSTS = 4, 4, 4
SHAPE = (LEAVES, SPINES, HOSTS)
ACK_FRAME, NS3_ACK = 84, 42  # a pure ACK on the wire: clos's minimum Ethernet frame; PPP + IP + TCP


def permutation(seed: int, leaves: int = LEAVES, hosts: int = HOSTS) -> list[tuple[int, int]]:
    """A random permutation of the hosts in which no host sends within its own leaf."""
    import random

    rng = random.Random(seed)
    n = leaves * hosts
    while True:
        dst = list(range(n))
        rng.shuffle(dst)
        if all(i // hosts != dst[i] // hosts for i in range(n)):
            return list(enumerate(dst))


def run_ns3_leaf_spine(
    binary: Path,
    pairs: list[tuple[int, int]],
    warmup: float,
    end: float,
    paths: list[tuple[int, int]] | None = None,
    shape: tuple[int, int, int] = SHAPE,
    host: str = "fifo",
) -> dict:
    """With `paths`: per-flow paths, SACK, ports counting bytes, and `host` "fifo" or "fq"."""
    rate = round(10e9 * NS3_FRAME / FRAME)
    leaves, spines, hosts = shape
    extra = (
        [
            "--paths=" + ",".join(f"{d}:{a}" for d, a in paths),
            "--sack=true",
            "--bytes=true",
            f"--hostfq={str(host == 'fq').lower()}",
        ]
        if paths
        else []
    )
    out = subprocess.run(
        [
            str(binary),
            f"--leaves={leaves}",
            f"--spines={spines}",
            f"--hosts={hosts}",
            f"--k={K_PACKETS}",
            f"--buffer={BUFFER_PACKETS}",
            f"--rate={rate}bps",
            f"--warmup={warmup}",
            f"--end={end}",
            "--pairs=" + ",".join(f"{a}-{b}" for a, b in pairs),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def leaf_spine_scenario(
    csv: Path,
    routing: str,
    seed: int,
    shape: tuple[int, int, int],
    host: str = "fq",
    dctcp_loss: str = "halve",
) -> dict:
    leaves, spines, hosts = shape
    transport = {"kind": "dctcp", "sack": False} if routing == "spray" else {"kind": "dctcp"}
    transport["dctcp_loss"] = dctcp_loss
    return {
        **({"host": {"qdisc": "fifo", "tsq": "off"}} if host == "fifo" else {}),
        "seed": 1 if routing == "spray" else seed,
        "topology": {
            "kind": "leaf_spine",
            "leaves": leaves,
            "spines": spines,
            "hosts_per_leaf": hosts,
            "host_rate": "10Gbps",
            "fabric_rate": "10Gbps",
            "link_delay": "1us",
        },
        "switch": {"buffer": BUFFER_PACKETS * FRAME, "ecn_threshold": K_PACKETS * FRAME},
        "routing": {"scheme": "spray-random" if routing == "spray" else "ecmp"},
        "transport": transport,
        "workload": {"kind": "flows", "file": str(csv)},
    }


def clos_paths(
    pairs: list[tuple[int, int]], seed: int, shape: tuple[int, int, int] = SHAPE
) -> list[tuple[int, int]]:
    """Each flow's (data spine, ACK spine) under clos's ECMP, read from clos's per-link counters.

    ECMP hashes a flow's key (its index, source and destination: `sim::flow_entropy`) with each
    switch's salt (drawn from the seed), and nothing else: not its size, not its start. So the
    same scenario with only flow j started (the others start after the stop) sends flow j's
    packets where the full run does, alone: the leaf-to-spine link that carries bytes out of
    the source's leaf is its data's, the one out of the destination's leaf its ACKs'.
    """
    hosts = shape[2]
    paths = []
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        scenario = {**leaf_spine_scenario(csv, "ecmp", seed, shape), "stop": "1ms"}
        for j in range(len(pairs)):
            csv.write_text(
                "src,dst,bytes,start\n"
                + "".join(
                    f"{a},{b},{14600 if i == j else 1},{0 if i == j else '1s'}\n"
                    for i, (a, b) in enumerate(pairs)
                )
            )
            links = clos.run(scenario).links
            up = links.filter((links["tier"] == "tor_up") & (links["bytes"] > 0))
            a, b = pairs[j]
            spine_of = {
                src: int(dst.removeprefix("spine"))
                for src, dst in zip(up["src"], up["dst"], strict=True)
            }
            assert (
                len(up) == 2 and f"tor{a // hosts}" in spine_of and f"tor{b // hosts}" in spine_of
            ), up
            paths.append((spine_of[f"tor{a // hosts}"], spine_of[f"tor{b // hosts}"]))
    return paths


def path_links(pairs: list[tuple[int, int]], paths: list[tuple[int, int]], hosts: int):
    """Per flow, the links its data crosses and the links its ACKs cross, by clos's link names."""
    for (a, b), (up, back) in zip(pairs, paths, strict=True):
        la, lb = f"tor{a // hosts}", f"tor{b // hosts}"
        yield (
            [(f"h{a}", la), (la, f"spine{up}"), (f"spine{up}", lb), (lb, f"h{b}")],
            [(f"h{b}", lb), (lb, f"spine{back}"), (f"spine{back}", la), (la, f"h{a}")],
        )


def max_min(
    pairs: list[tuple[int, int]],
    paths: list[tuple[int, int]],
    hosts: int,
    ack: float = ACK_FRAME,
    rate: float = 10e9,
) -> list[float]:
    """Max-min fair goodput (payload b/s) of the flows on their paths.

    Every link carries `rate` of wire time; a flow's data costs FRAME / MSS of it per payload
    byte, its ACKs (one per segment) `ack` / MSS on the links they cross. The ACK load is taken
    as given (ACKs follow their flow's rate and do not back off), the data shares the rest by
    progressive filling; repeated to a fixed point (the ACK terms are 5% of a link).
    """
    mss = 1460
    routes = list(path_links(pairs, paths, hosts))
    rates = [0.0] * len(pairs)
    for _ in range(50):
        spare = {}
        for (data, acks), r in zip(routes, rates, strict=True):
            for e in data:
                spare.setdefault(e, rate)
            for e in acks:
                spare[e] = spare.get(e, rate) - r * ack / mss
        # Payload capacity of each link for data, then water-filling.
        cap = {e: c * mss / FRAME for e, c in spare.items()}
        new, active = [0.0] * len(pairs), set(range(len(pairs)))
        while active:
            users = {e: [f for f in active if e in routes[f][0]] for e in cap}
            step = min(
                (cap[e] - sum(new[f] for f in range(len(pairs)) if e in routes[f][0])) / len(u)
                for e, u in users.items()
                if u
            )
            for f in active:
                new[f] += step
            full = {
                e
                for e in cap
                if users[e]
                and cap[e] - sum(new[f] for f in range(len(pairs)) if e in routes[f][0]) < 1e-3
            }
            active -= {f for f in active if any(e in full for e in routes[f][0])}
        rates = new
    return rates


def run_clos_leaf_spine(
    pairs: list[tuple[int, int]],
    warmup: float,
    end: float,
    routing: str = "spray",
    seed: int = 1,
    shape: tuple[int, int, int] = SHAPE,
    host: str = "fq",
    dctcp_loss: str = "halve",
) -> dict:
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        csv.write_text("src,dst,bytes,start\n" + "".join(f"{a},{b},1TB,0\n" for a, b in pairs))
        scenario = leaf_spine_scenario(csv, routing, seed, shape, host, dctcp_loss)
        early = clos.run({**scenario, "stop": f"{warmup}s"})
        late = clos.run({**scenario, "stop": f"{end}s"})
    links = late.links
    ports = links.filter(links["tier"] != "host_up")
    return {
        "flows": [
            (b - a) * 8 / (end - warmup)
            for a, b in zip(early.flows["delivered"], late.flows["delivered"], strict=True)
        ],
        "links": {
            (s, t): int(n)
            for s, t, n in zip(links["src"], links["dst"], links["bytes"], strict=True)
        },
        "drops": int(ports["drops"].sum()),
        "marks": int(ports["ecn_marks"].sum()),
        "fast_recoveries": late.summary["flows"]["fast_recoveries"],
        "timeouts": int(late.flows["timeouts"].sum()),
        "retransmits": int(late.flows["retransmits"].sum()),
    }


def check_paths(
    links: dict, pairs: list[tuple[int, int]], paths: list[tuple[int, int]], hosts: int
) -> None:
    """The full run loaded exactly the fabric links the per-flow probes assigned."""
    used = {e for data, acks in path_links(pairs, paths, hosts) for e in data + acks}
    for (src, dst), n in links.items():
        if "spine" in src or "spine" in dst:
            assert (n > 0) == ((src, dst) in used), (
                f"{src}->{dst} carried {n} B against the assignment {paths}"
            )


def finish(a: argparse.Namespace, header: tuple[str, ...], rows: list[tuple]) -> int:
    """The end of every mode: the table as markdown if asked for; the exit status."""
    if a.markdown:
        print_markdown(header, rows)
    return 0


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


RESPONSE = 65536
NS3_START = 0.001  # ns-3's responses start once its handshakes are done


def incast_offsets(n: int, seed: int, jitter_us: float) -> list[float]:
    """Each sender's start in microseconds: all at 0, or uniform over `jitter_us` per seed."""
    import random

    rng = random.Random(seed)
    return [rng.uniform(0, jitter_us) if jitter_us else 0.0 for _ in range(n)]


def incast_bound(n: int, response: int) -> float:
    """The shortest round: the first frame crosses the sender's link (serialisation and 1 us),
    then the receiver's port serialises every frame of every response back to back, then 1 us."""
    mss, overhead = 1460, FRAME - 1460
    full, rest = divmod(response, mss)
    wire = full * FRAME + (rest + overhead if rest else 0)
    return (min(FRAME, response + overhead) * 8 / 10e9 + 1e-6) + n * wire * 8 / 10e9 + 1e-6


def run_ns3_incast(binary: Path, n: int, response: int, cc: str, offsets: list[float]) -> dict:
    rate = round(10e9 * NS3_FRAME / FRAME)
    out = subprocess.run(
        [
            str(binary),
            f"--senders={n}",
            f"--response={response}",
            f"--cc={cc}",
            f"--k={K_PACKETS}",
            f"--buffer={BUFFER_PACKETS}",
            f"--rate={rate}bps",
            f"--warmup={NS3_START}",
            "--end=10",
            "--offsets=" + ",".join(f"{x:.6f}" for x in offsets),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    assert min(r["done"]) >= 0, f"a response did not complete: {r}"
    return {**r, "duration": max(r["done"])}


def run_clos_incast(n: int, response: int, cc: str, offsets: list[float], seed: int = 1) -> dict:
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        csv.write_text(
            "src,dst,bytes,start\n"
            + "".join(f"{i},{n},{response},{round(x * 1000)}ns\n" for i, x in enumerate(offsets))
        )
        r = clos.run({**star_scenario(n, cc, csv, seed), "stop": "10s"})
    f, links = r.flows, r.links
    assert f["finished"].all(), f
    port = links.filter((links["src"] == "tor0") & (links["dst"] == f"h{n}"))
    return {
        "done": [e / 1e12 for e in f["end_ps"]],
        "duration": int(f["end_ps"].max()) / 1e12,
        "timeouts": int(f["timeouts"].sum()),
        "retransmits": int(f["retransmits"].sum()),
        "fast_recoveries": r.summary["flows"]["fast_recoveries"],
        "spurious": int(f["spurious_retransmits"].sum()),
        "drops": int(port["drops"][0]),
        "marks": int(port["ecn_marks"][0]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", default="2,4,8,16")
    ap.add_argument("--cc", default="dctcp", choices=["dctcp", "newreno"])
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--end", type=float, default=0.25)
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--leaf-spine", action="store_true", help="the leaf-spine permutation instead")
    ap.add_argument(
        "--seeds", default="1,2,3", help="--leaf-spine: permutations to draw; --incast: start draws"
    )
    ap.add_argument(
        "--routing",
        default="spray",
        choices=["spray", "ecmp"],
        help="--leaf-spine: per-packet spraying or per-flow ECMP (paths from clos)",
    )
    ap.add_argument(
        "--host",
        default="fifo",
        choices=["fifo", "fq"],
        help="--routing ecmp: hosts' egress, one FIFO for data and ACKs on both sides, or fq",
    )
    ap.add_argument("--incast", action="store_true", help="the incast instead")
    ap.add_argument("--fanin", default="4,8,16,32", help="--incast: senders")
    ap.add_argument("--response", type=int, default=RESPONSE, help="--incast: bytes per sender")
    ap.add_argument("--jitter", type=float, default=0.0, help="--incast: spread of the starts, us")
    a = ap.parse_args()
    if a.incast:
        return incast(a)
    if a.leaf_spine:
        return leaf_spine_ecmp(a) if a.routing == "ecmp" else leaf_spine(a)
    binary = ns3_binary()
    header = (
        "flows",
        "sim",
        "Gb/s",
        "min/mean",
        "max/mean",
        "Jain",
        "mean queue (pkts)",
        "marks",
        "drops",
    )
    rows = []
    for n in (int(v) for v in a.flows.split(",")):
        for name, r in (
            ("ns-3", run_ns3(binary, n, a.cc, a.warmup, a.end)),
            ("clos", run_clos(n, a.cc, a.warmup, a.end)),
        ):
            agg, lo, hi, jain = describe(r)
            rows.append(
                (
                    n,
                    name,
                    f"{agg:.2f}",
                    f"{lo:.3f}",
                    f"{hi:.3f}",
                    f"{jain:.4f}",
                    f"{r['mean_queue_packets']:.1f}",
                    r["marks"],
                    r["drops"],
                )
            )
            print(*rows[-1], sep="\t", file=sys.stderr)
    return finish(a, header, rows)


def leaf_spine(a: argparse.Namespace) -> int:
    binary = ns3_binary("leaf_spine")
    header = ("seed", "sim", "Gb/s", "min/mean", "max/mean", "Jain")
    rows = []
    for seed in (int(v) for v in a.seeds.split(",")):
        pairs = permutation(seed)
        # clos twice: DCTCP halving on a loss as RFC 8257 and Linux do (its default), and cutting
        # by alpha/2 as ns-3's TcpDctcp does (docs/validation.md: the gap between them).
        for name, r in (
            ("ns-3", run_ns3_leaf_spine(binary, pairs, a.warmup, a.end)),
            ("clos", run_clos_leaf_spine(pairs, a.warmup, a.end)),
            (
                'clos, `dctcp_loss = "alpha"`',
                run_clos_leaf_spine(pairs, a.warmup, a.end, dctcp_loss="alpha"),
            ),
        ):
            agg, lo, hi, jain = describe(r)
            rows.append((seed, name, f"{agg:.2f}", f"{lo:.3f}", f"{hi:.3f}", f"{jain:.4f}"))
            print(*rows[-1], sep="\t", file=sys.stderr)
    return finish(a, header, rows)


def leaf_spine_ecmp(a: argparse.Namespace) -> int:
    binary = ns3_binary("leaf_spine")
    header = ("seed", "sim", "Gb/s", "min/mean", "max/mean", "Jain", "drops", "data marks")
    rows = []
    for seed in (int(v) for v in a.seeds.split(",")):
        pairs = permutation(seed)
        paths = clos_paths(pairs, seed)
        print(f"seed {seed}: (data spine, ACK spine) per flow {paths}", file=sys.stderr)
        ns3 = run_ns3_leaf_spine(binary, pairs, a.warmup, a.end, paths, host=a.host)
        assert list(zip(ns3["data_spines"], ns3["ack_spines"], strict=True)) == paths, (
            ns3["data_spines"],
            ns3["ack_spines"],
            paths,
        )
        ns3["marks"] = ns3["data_marks"]  # clos's ACKs are not ECN-capable, ns-3 DCTCP's are
        ours = run_clos_leaf_spine(pairs, a.warmup, a.end, "ecmp", seed, host=a.host)
        check_paths(ours["links"], pairs, paths, HOSTS)
        for name, r in (("ns-3", ns3), ("clos", ours)):
            agg, lo, hi, jain = describe(r)
            rows.append(
                (
                    seed,
                    name,
                    f"{agg:.2f}",
                    f"{lo:.3f}",
                    f"{hi:.3f}",
                    f"{jain:.4f}",
                    r["drops"],
                    r["marks"],
                )
            )
            print(
                *rows[-1],
                f"fast recoveries {r['fast_recoveries']}, timeouts {r['timeouts']}",
                "per flow " + " ".join(f"{v / 1e9:.2f}" for v in r["flows"]),
                sep="\t",
                file=sys.stderr,
            )
        for name, ack in (
            ("max-min, clos's frames", ACK_FRAME),
            ("max-min, ns-3's frames", NS3_ACK * FRAME / NS3_FRAME),
        ):
            agg, lo, hi, jain = describe({"flows": max_min(pairs, paths, HOSTS, ack)})
            rows.append(
                (seed, name, f"{agg:.2f}", f"{lo:.3f}", f"{hi:.3f}", f"{jain:.4f}", "-", "-")
            )
            print(*rows[-1], sep="\t", file=sys.stderr)
    return finish(a, header, rows)


def incast(a: argparse.Namespace) -> int:
    binary = ns3_binary("incast")
    header = (
        "senders",
        "seed",
        "sim",
        "duration (us)",
        "Gb/s",
        "timeouts",
        "retransmits",
        "drops",
        "marks",
    )
    rows = []
    seeds = [int(v) for v in a.seeds.split(",")] if a.jitter else [1]
    for n in (int(v) for v in a.fanin.split(",")):
        bound = incast_bound(n, a.response)
        for seed in seeds:
            offsets = incast_offsets(n, seed, a.jitter)
            for name, r in (
                ("ns-3", run_ns3_incast(binary, n, a.response, a.cc, offsets)),
                ("clos", run_clos_incast(n, a.response, a.cc, offsets, seed)),
            ):
                rows.append(
                    (
                        n,
                        seed,
                        name,
                        f"{r['duration'] * 1e6:.1f}",
                        f"{n * a.response * 8 / r['duration'] / 1e9:.2f}",
                        r["timeouts"],
                        r["retransmits"],
                        r["drops"],
                        r["marks"],
                    )
                )
                print(
                    *rows[-1], f"fast recoveries {r['fast_recoveries']}", sep="\t", file=sys.stderr
                )
        rows.append(
            (
                n,
                "-",
                "bound",
                f"{bound * 1e6:.1f}",
                f"{n * a.response * 8 / bound / 1e9:.2f}",
                "-",
                "-",
                "-",
                "-",
            )
        )
    return finish(a, header, rows)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
