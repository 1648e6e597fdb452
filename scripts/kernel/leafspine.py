"""clos beside the Linux kernel on a two-tier leaf-spine under the kernel's own ECMP (issue 41;
docs/validation.md, "A leaf-spine under the kernel's ECMP"). Needs what `star.py` needs; elsewhere
it says so in one line and exits 0.

The kernel's side: one namespace per host, per leaf and per spine. A leaf is a Linux router whose
hosts hang off a bridge (its address is their gateway); it reaches the other leaves' subnets over
one multipath route with a next hop through every spine, hashed on the 5-tuple
(`fib_multipath_hash_policy = 1`), so a flow's path is the kernel's ECMP choice. A spine routes
each leaf's subnet down its one link. tbf shapes every link to the line rate in each direction,
with the drop-tail buffer of `--buffer` bytes on every router port (the host's NIC as in
`star.py`); offloads off, Reno (or `--cc cubic`), ECN off, `rto_min` on the hosts' routes,
reverse-path filtering off (ECMP may bring a flow's ACKs back through another spine).

The workload is a permutation across leaves: host k sends `--size` bytes to host
k + hosts_per_leaf (mod all hosts), every flow started at once over a fresh connection. Each
flow's goodput is its bytes over its completion time.

clos's side: a leaf-spine of the same shape, rates and buffer, ECMP, link delays from the
kernel's measured round trip across the fabric, Linux-like hosts (`transport.preset = "linux"`,
`host.qdisc = "fifo"`, `host.jitter`, `topology.link_jitter` and timers on the kernel's tick, as in
`star.py`), and the same flows at the kernel's start times, with the
run's index as the seed (the kernel's hash differs from run to run with the ports it picks).

    python3 scripts/kernel/leafspine.py --runs 5
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The harness's shared pieces (namespaces, sockets in them, a run of flows, clos's side of a run,
# the options) are star.py's.
from star import (
    COUNTERS,
    PREFIX,
    Star,
    clos_run,
    print_table,
    ready,
    run_kernel,
    save_both,
    sh,
    size,
    spread,
    testbed_args,
)

HOSTS_NET = "10.79"  # leaf i's hosts: 10.79.i.0/24, the leaf at .1
LINKS_NET = "10.81"  # leaf i to spine j: 10.81.(i * spines + j).0/30, the leaf at .1


class LeafSpine(Star):
    """Hosts h0.. under leaves l0.., leaves under spines s0..; torn down on exit. Host k is on
    leaf k // hosts_per_leaf. Every host sends and receives, so `n` counts them all."""

    def __init__(
        self,
        leaves: int,
        spines: int,
        per_leaf: int,
        rate: str,
        buffer: int,
        rto_min: str,
        cc: str = "reno",
    ):
        super().__init__(leaves * per_leaf, rate, buffer, rto_min, True, cc)
        self.leaves, self.spines, self.per_leaf = leaves, spines, per_leaf
        self.hosts = [f"{PREFIX}h{i}" for i in range(self.n)]
        self.leaf_ns = [f"{PREFIX}l{i}" for i in range(leaves)]
        self.spine_ns = [f"{PREFIX}s{j}" for j in range(spines)]
        # Router ports with a drop-tail buffer: (namespace, device).
        self.ports: list[tuple[str, str]] = []

    def ip(self, i: int) -> str:
        return f"{HOSTS_NET}.{i // self.per_leaf}.{i % self.per_leaf + 2}"

    def link(self, leaf: int, spine: int, end: int) -> str:
        return f"{LINKS_NET}.{leaf * self.spines + spine}.{end}"

    def router(self, ns: str) -> None:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        for key, value in (
            ("net.ipv4.ip_forward", "1"),
            ("net.ipv4.fib_multipath_hash_policy", "1"),
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
        ):
            sh("sysctl", "-qw", f"{key}={value}", ns=ns)

    def __enter__(self) -> "LeafSpine":
        self.hold()
        self.teardown()
        buffer = self.buffer * 1514 // 1538  # the same buffer in frames as clos's (star.py)
        for ns in self.leaf_ns + self.spine_ns:
            self.router(ns)
        for i, leaf in enumerate(self.leaf_ns):
            sh("ip", "link", "add", "br0", "type", "bridge", ns=leaf)
            sh("ip", "addr", "add", f"{HOSTS_NET}.{i}.1/24", "dev", "br0", ns=leaf)
            sh("ip", "link", "set", "br0", "up", ns=leaf)
            for j, spine in enumerate(self.spine_ns):
                self.veth(leaf, f"u{j}", spine, f"d{i}")
                sh("ip", "addr", "add", f"{self.link(i, j, 1)}/30", "dev", f"u{j}", ns=leaf)
                sh("ip", "addr", "add", f"{self.link(i, j, 2)}/30", "dev", f"d{i}", ns=spine)
                self.ports += [(leaf, f"u{j}"), (spine, f"d{i}")]
                sh(
                    "ip",
                    "route",
                    "add",
                    f"{HOSTS_NET}.{i}.0/24",
                    "via",
                    self.link(i, j, 1),
                    ns=spine,
                )
        for i, leaf in enumerate(self.leaf_ns):
            hops = [
                ("nexthop", "via", self.link(i, j, 2), "dev", f"u{j}") for j in range(self.spines)
            ]
            for other in range(self.leaves):
                if other != i:
                    route = [w for hop in hops for w in hop]
                    sh("ip", "route", "add", f"{HOSTS_NET}.{other}.0/24", *route, ns=leaf)
        for k in range(self.n):
            i = k // self.per_leaf
            self.host(k, self.leaf_ns[i], f"{HOSTS_NET}.{i}.0/24", f"{HOSTS_NET}.{i}.1")
            self.ports.append((self.leaf_ns[i], f"p{k}"))
        for ns, dev in self.ports:
            self.tbf(ns, dev, buffer)
        return self

    def drops(self) -> int:
        total = 0
        for ns, dev in self.ports:
            out = sh("tc", "-s", "qdisc", "show", "dev", dev, ns=ns)
            total += int(re.search(r"dropped (\d+)", out).group(1))
        return total

    def counters(self) -> dict[str, int]:
        total = dict.fromkeys(COUNTERS, 0)
        for h in self.hosts:
            out = json.loads(sh("nstat", "-az", "--json", *COUNTERS, ns=h))["kernel"]
            for k in COUNTERS:
                total[k] += int(out.get(k, 0))
        return total


def permutation(net: LeafSpine) -> list[tuple[int, int]]:
    """(sender, receiver) pairs: each host to the host one leaf over."""
    return [(k, (k + net.per_leaf) % net.n) for k in range(net.n)]


def run_clos(
    net: LeafSpine, a: argparse.Namespace, rtt: float, flows: list[dict], seed: int
) -> dict:
    """The leaf-spine in clos: the same shape under ECMP, link delays from the kernel's round
    trip across the fabric (eight link traversals), seeded per run."""
    fabric = {
        "kind": "leaf_spine",
        "leaves": net.leaves,
        "spines": net.spines,
        "hosts_per_leaf": net.per_leaf,
        "link_delay": f"{max(1, round(rtt / 8 * 1e9))}ns",
    }
    return clos_run(a, fabric, flows, seed=seed, routing={"scheme": "ecmp"})


def goodputs(flows: list[dict], starts: list[float], ends: list[float]) -> list[float]:
    """Each flow's goodput, Mb/s."""
    return sorted(
        f["bytes"] * 8 / (e - s) / 1e6 for f, s, e in zip(flows, starts, ends, strict=True)
    )


def jain(x: list[float]) -> float:
    return sum(x) ** 2 / (len(x) * sum(v * v for v in x))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leaves", type=int, default=2)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--hosts-per-leaf", type=int, default=4)
    ap.add_argument("--size", type=size, default="10MB", help="bytes per flow")
    ap.add_argument("--runs", type=int, default=5)
    testbed_args(ap)
    a = ap.parse_args()
    if not ready(a):
        return 0
    print(
        f"Linux {sh('uname', '-r').strip()}, {a.leaves} leaves x {a.spines} spines x {a.hosts_per_leaf} hosts, "
        f"{a.rate} links, {a.buffer} port buffers, rto_min {a.rto_min}, {a.size:,} B per flow, {a.runs} runs"
    )
    kernel, ours = [], []
    for run in range(a.runs):
        shape = (a.leaves, a.spines, a.hosts_per_leaf)
        with LeafSpine(*shape, a.rate, a.buffer_bytes, a.rto_min, a.cc) as net:
            rtt = net.rtt(a.hosts_per_leaf)
            k = run_kernel(net, [[(s, a.size, 0.0, d) for s, d in permutation(net)]], 0.0)
        k["starts"] = [f["start"] for f in k["flows"]]
        k["ends"] = [f["end"] for f in k["flows"]]
        k["rtt"] = rtt
        ours.append(run_clos(net, a, rtt, k["flows"], seed=run + 1))
        kernel.append(k)
        save_both(a, f"leafspine-run{run + 1}", k, ours[-1])
        g = goodputs(k["flows"], k["starts"], k["ends"])
        c = goodputs(k["flows"], ours[-1]["starts"], ours[-1]["ends"])
        print(
            f"run {run + 1}: round trip {rtt * 1e6:.0f} us; goodputs Mb/s kernel "
            f"{[round(x) for x in g]}, clos {[round(x) for x in c]}",
            file=sys.stderr,
        )
    header = ("per-flow goodput", "kernel", "clos")
    rows = []
    for name, pick in (
        ("least, Mb/s", lambda g: g[0]),
        ("median, Mb/s", statistics.median),
        ("most, Mb/s", lambda g: g[-1]),
        ("Jain's index", jain),
    ):
        theirs = [pick(goodputs(k["flows"], k["starts"], k["ends"])) for k in kernel]
        mine = [
            pick(goodputs(k["flows"], c["starts"], c["ends"]))
            for k, c in zip(kernel, ours, strict=True)
        ]
        rows.append((name, spread(theirs), spread(mine)))
    for name, key in (("drops in a run", "drops"), ("timeouts in a run", "TcpExtTCPTimeouts")):
        rows.append((name, spread([k[key] for k in kernel]), spread([c[key] for c in ours])))
    print_table(header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
