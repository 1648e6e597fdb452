"""clos beside the Linux kernel on a one-switch star (issue 41; docs/validation.md, "Beside the
Linux kernel"). Needs root, network namespaces, `ip`, `tc`, `ethtool` and `nstat`; elsewhere it
says so in one line and exits 0.

The kernel's side: one namespace per host and one for the switch, a Linux bridge in it, a veth
pair per host with segmentation and receive offloads off. tbf shapes every link to the line rate:
on each host's egress (the NIC, with a queue of 1,000 packets that Linux's TCP small queues keep
short) and on each switch port toward a host (its drop-tail buffer, `--buffer` bytes). The hosts
run Reno (or `--cc cubic`, clos's `transport.kind = "cubic"`) with the kernel's own loss
recovery (RACK-TLP unless `--no-rack`), ECN off, and `rto_min` set on their routes. One process
drives every host through sockets made in their namespaces: each round's responses go out over
fresh connections (or, with `--persistent`, over one connection per responder kept across
rounds), queued whole within microseconds of each other, and end when the receiver reads the
sender's FIN (or the response's last byte); the harness reads retransmissions and timeouts from
`nstat` and the receiver's port drops from `tc -s`.

clos's side: the same star (a leaf of N + 1 hosts), rates, buffer, `rto_min`, and link delays
from the kernel's measured round-trip time, Linux-like hosts (`transport.preset = "linux"`,
`host.qdisc = "fifo"` with TSQ, as a veth under tbf), and the same flows at the same instants:
the start of each kernel flow, as its sender called `connect`, goes into clos's flows file.

    python3 scripts/kernel/star.py incast --fanin 1,2,4,8,16,32 --runs 5 --rto-min 200ms
    python3 scripts/kernel/star.py long --flows 2,4,8 --runs 5
    python3 scripts/kernel/star.py turnaround   # the hosts' software wait (needs tcpdump)

clos's hosts wait a random time before each packet (`host.jitter`, exponential), with the mean
that `turnaround` measures on the kernel's hosts under load (`--jitter`; `0ns` to keep exact time),
its links deliver each packet a random time late, as tbf's dequeue is (`topology.link_jitter`,
`--link-jitter`, from the spread of departures measured at the switch),
and their TCP timers fire on the running kernel's tick (`transport.timer_tick`, 1 / CONFIG_HZ;
`--tick 0ns` for exact timers).

Each row gives the kernel's median and range over the runs and clos's value, for the same
scenario drawn once per run.
"""

import argparse
import ctypes
import fcntl
import json
import os
import re
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PREFIX = "clos-k"
NET = "10.78.0"
MSS = 1448  # a 1,500-byte MTU less IP and TCP headers with timestamps
PORT = 5001
# The kernel's hosts under the 8-flow load take 6-20 us (10th-90th percentile) from an ACK's
# arrival to the data it releases, spread close to exponentially above the least (about 4 us);
# the mean above it is 6 us (5.7, 6.2 and 7.1 in three runs of `turnaround`, Linux 6.18 on two
# cores). clos's link delays carry the least (from the unloaded round trip), `host.jitter` the
# rest.
HOST_JITTER = "6us"
# tbf sends each packet when its tokens allow, but the timer and softirq that dequeue it run a
# little late: at the switch port toward the receiver, back-to-back packets left 110-132 us
# apart (5th-95th percentile) around the 121 us a frame takes at 100 Mb/s. The difference of two
# exponential delays of mean m spreads over +-2.3 m at those percentiles, so m is about 5 us
# (clos's `topology.link_jitter`, `sim/jitter.rs`).
LINK_JITTER = "5us"

CLONE_NEWNET = 0x40000000
SO_SNDBUFFORCE = 32  # root may exceed net.core.wmem_max, so a whole response is queued at once


LIBC = ctypes.CDLL(None, use_errno=True)
COUNTERS = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPSpuriousRTOs")


def missing() -> str | None:
    """Why the kernel side cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "ethtool", "nstat"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (apt-get install iproute2 ethtool)"
    probe = f"{PREFIX}probe"
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None if ok else "cannot create network namespaces here"


def kernel_tick() -> str:
    """The running kernel's clock tick (1 / CONFIG_HZ), on which its TCP timers fire, as clos's
    `transport.timer_tick`; "0ns" (exact) where its build configuration cannot be read."""
    import gzip

    sources = [lambda: gzip.open("/proc/config.gz", "rt").read()]
    sources.append(lambda: Path(f"/boot/config-{os.uname().release}").read_text())
    for read in sources:
        try:
            hz = re.search(r"^CONFIG_HZ=(\d+)$", read(), re.M)
        except OSError:
            continue
        if hz:
            return f"{1_000_000 // int(hz.group(1))}us"
    return "0ns"


def sh(*cmd: str, ns: str | None = None, check: bool = True) -> str:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    done = subprocess.run(full, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {done.stderr.strip()}")
    return done.stdout


class Star:
    """Hosts h0..h{n} under one bridge; h{n} receives. Torn down on exit, even after an error."""

    def __init__(
        self, senders: int, rate: str, buffer: int, rto_min: str, rack: bool, cc: str = "reno"
    ):
        self.n = senders
        self.rate, self.buffer, self.rto_min, self.rack, self.cc = rate, buffer, rto_min, rack, cc
        self.sw = f"{PREFIX}sw"
        self.hosts = [f"{PREFIX}h{i}" for i in range(senders + 1)]

    def ip(self, i: int) -> str:
        return f"{NET}.{i + 1}"

    def __enter__(self) -> "Star":
        self.hold()
        self.teardown()
        sh("ip", "netns", "add", self.sw)
        sh("ip", "link", "add", "br0", "type", "bridge", ns=self.sw)
        sh("ip", "link", "set", "br0", "up", ns=self.sw)
        for i in range(len(self.hosts)):
            self.host(i, self.sw, f"{NET}.0/24")
            # tbf counts a full frame as 1,514 B, clos as the 1,538 B it takes on the wire
            # (preamble, FCS, gap): the same buffer in frames.
            self.tbf(self.sw, f"p{i}", self.buffer * 1514 // 1538)
        return self

    def veth(self, a: str, a_dev: str, b: str, b_dev: str) -> None:
        """A link: a veth pair from `a_dev` in namespace `a` to `b_dev` in `b`, offloads off."""
        sh(
            "ip",
            "link",
            "add",
            a_dev,
            "netns",
            a,
            "type",
            "veth",
            "peer",
            "name",
            b_dev,
            "netns",
            b,
        )
        for ns, dev in ((a, a_dev), (b, b_dev)):
            sh("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)

    def host(self, i: int, switch: str, subnet: str, gateway: str | None = None) -> None:
        """Host i: its namespace, its NIC (eth0, shaped, a queue of 1,000 packets as txqueuelen)
        on port p{i} of the bridge in `switch`, its address, `rto_min` on its routes (to
        `subnet`, and through `gateway` to the rest), Reno by default, ECN off (a namespace may
        default only to what `tcp_allowed_congestion_control` lists; each socket asks for
        `cc` itself, which root may, `socket_in`)."""
        h = self.hosts[i]
        sh("ip", "netns", "add", h)
        self.veth(h, "eth0", switch, f"p{i}")
        sh("ip", "link", "set", f"p{i}", "master", "br0", ns=switch)
        sh("ip", "link", "set", "lo", "up", ns=h)
        sh("ip", "addr", "add", f"{self.ip(i)}/24", "dev", "eth0", ns=h)
        sh("ip", "route", "replace", subnet, "dev", "eth0", "rto_min", self.rto_min, ns=h)
        if gateway:
            route = ("default", "via", gateway, "rto_min", self.rto_min)
            sh("ip", "route", "add", *route, ns=h)
        self.tbf(h, "eth0", 1000 * 1514)
        for key, value in (
            ("net.ipv4.tcp_congestion_control", "reno"),
            ("net.ipv4.tcp_ecn", "0"),
            ("net.ipv4.tcp_recovery", "1" if self.rack else "0"),
            ("net.ipv4.tcp_early_retrans", "3" if self.rack else "0"),
            ("net.ipv4.tcp_no_metrics_save", "1"),
        ):
            sh("sysctl", "-qw", f"{key}={value}", ns=h)

    def tbf(self, ns: str, dev: str, limit: int) -> None:
        # burst: two frames, the least tbf takes at these rates without throttling below them.
        sh(
            "tc",
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            self.rate,
            "burst",
            "3028",
            "limit",
            str(limit),
            ns=ns,
        )

    def __exit__(self, *_) -> None:
        self.teardown()
        self.lock.close()

    def hold(self) -> None:
        """Wait until no other testbed runs on this machine: every run names its namespaces
        alike, so a second one (a test beside a table) would tear down the first's."""
        self.lock = open(Path(tempfile.gettempdir()) / "clos-kernel.lock", "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)

    def teardown(self) -> None:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for name in re.findall(rf"^({PREFIX}\S+)", out, re.M):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)

    def socket_in(self, i: int) -> socket.socket:
        """A TCP socket made inside host i's namespace (a socket keeps the namespace it was made
        in, so one process drives every host, and sends start microseconds apart)."""
        here = os.open("/proc/self/ns/net", os.O_RDONLY)
        there = os.open(f"/run/netns/{self.hosts[i]}", os.O_RDONLY)
        try:
            if LIBC.setns(there, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            sock = socket.socket()
        finally:
            LIBC.setns(here, CLONE_NEWNET)
            os.close(here)
            os.close(there)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cc.encode())
        return sock

    def drops(self) -> int:
        out = sh("tc", "-s", "qdisc", "show", "dev", f"p{self.n}", ns=self.sw)
        return int(re.search(r"dropped (\d+)", out).group(1))

    def counters(self) -> dict[str, int]:
        total = dict.fromkeys(COUNTERS, 0)
        for h in self.hosts[: self.n]:
            out = json.loads(sh("nstat", "-az", "--json", *COUNTERS, ns=h))["kernel"]
            for k in COUNTERS:
                total[k] += int(out.get(k, 0))
        return total

    def listen(self, i: int | None = None) -> socket.socket:
        """A listening socket on host i (the receiver, host n, by default)."""
        i = self.n if i is None else i
        lst = self.socket_in(i)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind((self.ip(i), PORT))
        lst.listen(1024)
        return lst

    def connect(
        self, lst: socket.socket, i: int, dst: int | None = None
    ) -> tuple[socket.socket, socket.socket]:
        """A fresh connection from host i to host `dst` (the receiver by default), which `lst`
        listens on: (sender's end, receiver's end)."""
        c = self.socket_in(i)
        c.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
        c.connect((self.ip(self.n if dst is None else dst), PORT))
        r, _ = lst.accept()
        return c, r

    def rtt(self, dst: int | None = None) -> float:
        """Median round trip of a one-byte exchange between h0 and host `dst` (the receiver by
        default), in seconds."""
        with self.listen(dst) as lst:
            c, r = self.connect(lst, 0, dst)
            samples = []
            for _ in range(200):
                t = time.monotonic()
                c.sendall(b"x")
                r.recv(1)
                r.sendall(b"x")
                c.recv(1)
                samples.append(time.monotonic() - t)
            c.close()
            r.close()
        return statistics.median(samples)


def run_kernel(
    star: Star, rounds: list[list[tuple[int, int]]], gap: float, persistent: bool = False
) -> dict:
    """Send each round's (sender, bytes) flows at once over fresh connections (opened before the
    round, so the handshake is not timed), or with `persistent` over one connection per sender
    opened before the first round and kept; the next round starts `gap` seconds after its last
    flow ends. A third field delays a flow's start by that many seconds, a fourth names its
    receiver (host n by default). Returns the flows with their start and end times."""
    for h in star.hosts[: star.n]:
        sh("nstat", "-n", ns=h)
    drops0 = star.drops()
    flows = []
    base = None

    def dst(f: tuple) -> int:
        return f[3] if len(f) > 3 else star.n

    receivers = sorted({dst(f) for round_ in rounds for f in round_})
    listeners = {d: star.listen(d) for d in receivers}
    try:
        senders = sorted({f[0] for round_ in rounds for f in round_})
        lst = listeners[receivers[0]]
        kept = {i: star.connect(lst, i) for i in senders} if persistent else {}
        for r, round_ in enumerate(rounds):
            pairs = [
                kept[f[0]] if persistent else star.connect(listeners[dst(f)], f[0], dst(f))
                for f in round_
            ]
            sel = selectors.DefaultSelector()
            t0 = time.monotonic()
            base = t0 if base is None else base
            left, starts, unread = {}, {}, {}
            # Flows keyed by their place in the round; a third field delays a flow's start.
            waiting = sorted((t0 + (f[2] if len(f) > 2 else 0.0), j) for j, f in enumerate(round_))
            ends: dict[int, float] = {}
            deadline = t0 + 60 + (waiting[-1][0] - t0 if waiting else 0)
            while len(ends) < len(round_):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"round {r} did not finish in 60 s")
                while waiting and waiting[0][0] <= time.monotonic():
                    j = waiting.pop(0)[1]
                    (c, rx), size = pairs[j], round_[j][1]
                    c.setblocking(False)
                    rx.setblocking(False)
                    starts[j] = time.monotonic()
                    unread[j] = size
                    left[c] = memoryview(b"x" * size)[c.send(b"x" * size) :]
                    if left[c]:
                        sel.register(c, selectors.EVENT_WRITE, j)
                    elif not persistent:
                        c.shutdown(socket.SHUT_WR)
                    sel.register(rx, selectors.EVENT_READ, j)
                wait = min(1.0, max(0.0, waiting[0][0] - time.monotonic())) if waiting else 1.0
                for key, _ in sel.select(wait):
                    sock, j = key.fileobj, key.data
                    if key.events == selectors.EVENT_WRITE:
                        sent = sock.send(left[sock])
                        left[sock] = left[sock][sent:]
                        if not left[sock]:
                            sel.unregister(sock)
                            if not persistent:
                                sock.shutdown(socket.SHUT_WR)
                        continue
                    got = len(sock.recv(1 << 20))
                    unread[j] -= got
                    # A fresh connection's response ends with its FIN; a kept one's with its
                    # last byte.
                    if (got == 0) if not persistent else (unread[j] == 0):
                        ends[j] = time.monotonic()
                        sel.unregister(sock)
            if not persistent:
                for c, rx in pairs:
                    c.close()
                    rx.close()
            for j, f in enumerate(round_):
                flows.append(
                    {
                        "round": r,
                        "src": f[0],
                        "dst": dst(f),
                        "bytes": f[1],
                        "start": starts[j] - base,
                        "end": ends[j] - base,
                    }
                )
            time.sleep(gap)
        for c, rx in kept.values():
            c.close()
            rx.close()
    finally:
        for lst in listeners.values():
            lst.close()
    flows.sort(key=lambda f: (f["start"], f["src"]))
    return {"flows": flows, "drops": star.drops() - drops0, **star.counters()}


def clos_run(a: argparse.Namespace, topology: dict, flows: list[dict], **fields) -> dict:
    """Run `flows` (the kernel's: src, dst, bytes, start) in clos on `topology` with the
    testbed's hosts: the `linux` preset, FIFO NICs with TSQ, the hosts' and links' timing noise,
    timers on the tick, and `--clos` overrides. `fields` are further top-level or table entries
    (`routing`, `seed`, `workload`). Returns each flow's start and end (in the kernel's order:
    sorted by start and sender, clos's starts being the kernel's to the nanosecond), the drops at
    the tiers `drops_at` names (every tier if none), and the timeouts."""
    import clos

    drops_at = fields.pop("drops_at", None)
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "flows.csv"
        rows = "".join(f"{f['src']},{f['dst']},{f['bytes']},{f['start']:.9f}\n" for f in flows)
        csv.write_text("src,dst,bytes,start\n" + rows)
        scenario = {
            "seed": 1,
            "topology": {
                **topology,
                "host_rate": a.rate_clos,
                "fabric_rate": a.rate_clos,
                "link_jitter": a.link_jitter,
            },
            "switch": {"buffer": a.buffer},
            "host": {"qdisc": "fifo", "jitter": a.jitter},
            "transport": {
                "preset": "linux",
                "kind": {"reno": "tcp", "cubic": "cubic"}[a.cc],
                "rto_min": a.rto_min,
                "mss": MSS,
                "timer_tick": a.tick,
            },
            "max_time": "3600s",
            **fields,
        }
        scenario["workload"] = {"kind": "flows", "file": str(csv), **scenario.get("workload", {})}
        for override in getattr(a, "clos", None) or []:
            key, value = override.split("=", 1)
            *tables, field = key.split(".")
            table = scenario
            for t in tables:
                table = table.setdefault(t, {})
            try:
                table[field] = json.loads(value)  # numbers, true and false
            except json.JSONDecodeError:
                table[field] = value  # "10ms", "fifo"
        res = clos.run(scenario)
    fl = res.flows.sort(["start_ps", "src"])
    if not fl["finished"].all():
        raise RuntimeError(f"clos left {(~fl['finished']).sum()} flows unfinished")
    s = res.summary
    tiers = s["queueing"]["tiers"]
    return {
        "starts": [x / 1e12 for x in fl["start_ps"].to_list()],
        "ends": [x / 1e12 for x in fl["end_ps"].to_list()],
        "drops": sum(t["drops"] for t in tiers if drops_at in (None, t["tier"])),
        "TcpRetransSegs": s["flows"]["retransmits"],
        "TcpExtTCPTimeouts": s["flows"]["timeouts"],
        "results": res,
    }


def save_both(a: argparse.Namespace, label: str, kernel: dict, ours: dict) -> None:
    """With `--out`, one run's two sides as results folders that `clos compare` reads:
    `<out>/<label>/clos` (clos's own) and `<out>/<label>/kernel`: the kernel's flows
    (`flows.parquet`: src, dst, bytes, start_ps, end_ps, finished, fct_ps) and a `summary.json`
    with the same keys as clos's where the kernel measures them (flow count, FCT mean and
    nearest-rank percentiles, retransmissions and timeouts from `nstat`, drops from `tc -s`),
    and its counters and round trip under `kernel`."""
    if not getattr(a, "out", None):
        return
    import polars as pl

    folder = Path(a.out) / label
    ours["results"].save(folder / "clos")
    flows = pl.DataFrame(
        {
            "id": range(len(kernel["flows"])),
            "src": [f["src"] for f in kernel["flows"]],
            "dst": [f["dst"] for f in kernel["flows"]],
            "bytes": [f["bytes"] for f in kernel["flows"]],
            "start_ps": [round(f["start"] * 1e12) for f in kernel["flows"]],
            "end_ps": [round(f["end"] * 1e12) for f in kernel["flows"]],
        }
    ).with_columns(
        pl.lit(True).alias("finished"), (pl.col("end_ps") - pl.col("start_ps")).alias("fct_ps")
    )
    fct = sorted(flows["fct_ps"].to_list())

    def rank(q: float) -> float:
        return fct[min(len(fct) - 1, max(0, int(-(-q * len(fct) // 1)) - 1))] / 1e12

    summary = {
        "scenario": {"name": f"{label} (Linux {sh('uname', '-r').strip()})"},
        "flows": {
            "count": flows.height,
            "finished": flows.height,
            "fct_mean_s": sum(fct) / len(fct) / 1e12,
            "fct_p50_s": rank(0.5),
            "fct_p99_s": rank(0.99),
            "fct_p999_s": rank(0.999),
            "retransmits": kernel["TcpRetransSegs"],
            "timeouts": kernel["TcpExtTCPTimeouts"],
        },
        "packets": {"dropped": kernel["drops"]},
        "kernel": {k: v for k, v in kernel.items() if k not in ("flows", "starts", "ends")},
    }
    (folder / "kernel").mkdir(parents=True, exist_ok=True)
    flows.write_parquet(folder / "kernel" / "flows.parquet")
    (folder / "kernel" / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def run_clos(n: int, a: argparse.Namespace, rtt: float, kernel_flows: list[dict]) -> dict:
    """The star in clos: a leaf of n + 1 hosts, link delays from the kernel's round trip (four
    link traversals; the kernel's also holds its software path), drops at the receiver's port."""
    star = {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": n + 1}
    star["link_delay"] = f"{max(1, round(rtt / 4 * 1e9))}ns"
    flows = [{**f, "dst": n} for f in kernel_flows]
    connections = "persistent" if a.persistent else "fresh"
    return clos_run(a, star, flows, workload={"connections": connections}, drops_at="tor_down")


def rounds_of(flows: list[dict], starts: list[float], ends: list[float]) -> list[float]:
    """Each round's completion time: its last flow's end less its first flow's start."""
    out: dict[int, tuple[float, float]] = {}
    for f, s, e in zip(flows, starts, ends, strict=True):
        lo, hi = out.get(f["round"], (s, e))
        out[f["round"]] = (min(lo, s), max(hi, e))
    return [hi - lo for lo, hi in out.values()]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def both(
    a: argparse.Namespace, n: int, rounds: list[list[tuple[int, int]]]
) -> tuple[list, list, float]:
    """`a.runs` runs of the same rounds in the kernel and in clos: each side's results (with
    their flows' `starts` and `ends`, in the kernel's order), and the last measured round trip."""
    kernel, ours = [], []
    for run in range(a.runs):
        with Star(n, a.rate, a.buffer_bytes, a.rto_min, not a.no_rack, a.cc) as star:
            rtt = star.rtt()
            k = run_kernel(star, rounds, a.gap, a.persistent)
        ours.append(run_clos(n, a, rtt, k["flows"]))
        k["starts"], k["ends"] = [f["start"] for f in k["flows"]], [f["end"] for f in k["flows"]]
        k["rtt"] = rtt
        kernel.append(k)
        if getattr(a, "out", None):
            save_both(a, f"{a.case}-{n}-run{run + 1}", k, ours[-1])
    return kernel, ours, rtt


def incast(a: argparse.Namespace) -> list[tuple]:
    rows = []
    for n in (int(x) for x in a.fanin.split(",")):
        kernel, ours, rtt = both(
            a, n, [[(i, a.response) for i in range(n)] for _ in range(a.rounds)]
        )
        round_ms = [
            statistics.median(rounds_of(k["flows"], k["starts"], k["ends"])) * 1e3 for k in kernel
        ]
        ours_ms = [
            statistics.median(rounds_of(k["flows"], c["starts"], c["ends"])) * 1e3
            for k, c in zip(kernel, ours, strict=True)
        ]
        rows.append(
            (
                n,
                spread(round_ms),
                f"{statistics.median(ours_ms):.3g}",
                spread([k["TcpExtTCPTimeouts"] / a.rounds for k in kernel]),
                f"{statistics.median(c['TcpExtTCPTimeouts'] for c in ours) / a.rounds:.3g}",
                spread([k["drops"] / a.rounds for k in kernel]),
                f"{statistics.median(c['drops'] for c in ours) / a.rounds:.3g}",
                f"{rtt * 1e6:.0f}",
            )
        )
        print(" | ".join(map(str, rows[-1])), file=sys.stderr)
    return rows


def long(a: argparse.Namespace) -> list[tuple]:
    rows = []
    for n in (int(x) for x in a.flows.split(",")):
        kernel, ours, rtt = both(a, n, [[(i, a.size) for i in range(n)]])
        rows.append(
            (
                n,
                spread([first_share(k["starts"], k["ends"]) for k in kernel]),
                f"{statistics.median(first_share(c['starts'], c['ends']) for c in ours):.3g}",
                spread([k["drops"] for k in kernel]),
                f"{statistics.median(c['drops'] for c in ours):.3g}",
                spread([k["TcpExtTCPTimeouts"] for k in kernel]),
                f"{statistics.median(c['TcpExtTCPTimeouts'] for c in ours):.3g}",
                f"{rtt * 1e6:.0f}",
            )
        )
        print(" | ".join(map(str, rows[-1])), file=sys.stderr)
    return rows


def short(a: argparse.Namespace) -> list[tuple]:
    """Short flows beside a long one: host 0 sends `--size` to the receiver; from 0.1 s on,
    hosts 1 to `--senders` take turns sending `--short` every `--every` seconds, each on a fresh
    connection, until the long flow is three quarters through at the line rate."""
    m = re.fullmatch(r"(\d+)([kmg])bit", a.rate)
    rate = int(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    span = a.size * 8 / rate * 0.75
    count = max(1, int((span - 0.1) / a.every))
    round_ = [(0, a.size)] + [(1 + k % a.senders, a.short, 0.1 + k * a.every) for k in range(count)]
    kernel, ours, rtt = both(a, a.senders + 1, [round_])

    def fcts(flows: list[dict], starts: list[float], ends: list[float]) -> list[float]:
        return sorted(e - s for f, s, e in zip(flows, starts, ends, strict=True) if f["src"] != 0)

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1e3

    rows = []
    for q in (0.5, 0.9, 0.99):
        theirs = [pct(fcts(k["flows"], k["starts"], k["ends"]), q) for k in kernel]
        mine = [
            pct(fcts(k["flows"], c["starts"], c["ends"]), q)
            for k, c in zip(kernel, ours, strict=True)
        ]
        rows.append((f"p{round(q * 100)}", spread(theirs), f"{statistics.median(mine):.3g}"))
    rows.append(
        (
            "timeouts",
            spread([k["TcpExtTCPTimeouts"] for k in kernel]),
            f"{statistics.median(c['TcpExtTCPTimeouts'] for c in ours):.3g}",
        )
    )
    rows.append(
        (
            "drops",
            spread([k["drops"] for k in kernel]),
            f"{statistics.median(c['drops'] for c in ours):.3g}",
        )
    )
    print(f"{count} short flows, round trip {rtt * 1e6:.0f} us", file=sys.stderr)
    return rows


def turnaround(a: argparse.Namespace) -> None:
    """Capture at the switch during one run of 8 long flows and print how long a host takes from
    an ACK leaving the switch toward it to the data packet it releases arriving back, for hosts
    that had nothing to send before that ACK."""
    if shutil.which("tcpdump") is None:
        print("turnaround needs tcpdump (apt-get install tcpdump)")
        return
    n = 8
    with (
        Star(n, a.rate, a.buffer_bytes, a.rto_min, not a.no_rack, a.cc) as star,
        tempfile.TemporaryDirectory() as d,
    ):
        pcap = Path(d) / "switch.pcap"
        cap = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                star.sw,
                "tcpdump",
                "-i",
                "any",
                "-s",
                "96",
                "-w",
                str(pcap),
                "tcp",
            ],
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1)
        run_kernel(star, [[(i, a.size) for i in range(n)]], a.gap)
        time.sleep(0.5)
        cap.terminate()
        cap.wait()
        text = subprocess.run(
            ["tcpdump", "-r", str(pcap), "-n", "-tt"], capture_output=True, text=True
        ).stdout
    receiver = star.ip(n)
    last_ack: dict[str, float] = {}
    last_data: dict[str, float] = {}
    waits = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 7 or f[3] != "IP" or "length" not in line:
            continue
        t, out = float(f[0]), f[2] == "Out"
        src, dst = f[4].rsplit(".", 1)[0], f[6].rstrip(":").rsplit(".", 1)[0]
        data = not line.endswith("length 0")
        if src == receiver and out:
            last_ack[dst] = t
        elif dst == receiver and not out and data:
            ack, before = last_ack.get(src), last_data.get(src)
            # The host was idle: its last data left well before the ACK (a frame takes 121 us).
            if ack is not None and before is not None and ack - before > 130e-6 and t > ack:
                waits.append((t - ack) * 1e6)
            last_data[src] = t
    waits.sort()
    q = {p: waits[int(len(waits) * p / 100)] for p in (1, 10, 50, 90, 99)}
    core = waits[: int(len(waits) * 0.99)]
    print(
        f"{len(waits):,} ACK-to-data waits, us: " + ", ".join(f"p{p} {v:.1f}" for p, v in q.items())
    )
    print(
        f"mean above the 1st percentile (the 99% below the 99th): {statistics.mean(core) - q[1]:.1f} us"
    )


def testbed_args(ap: argparse.ArgumentParser) -> None:
    """The options both testbeds take: rates, buffers, `rto_min`, and clos's timing."""
    # 100 Mb/s: through the namespaces' software path a packet costs about 18 us of CPU (sender,
    # bridge, receiver, its ACK), so 1 Gb/s saturates two cores and serialises a round's starts.
    ap.add_argument("--rate", default="100mbit", help="every link's rate (tc's units)")
    ap.add_argument("--buffer", default="150KB", help="every switch port's drop-tail buffer")
    ap.add_argument("--rto-min", default="200ms")
    # DCTCP would need ECN marking at the switch (red) and tcp_dctcp: neither is in every kernel
    # build (this machine's has neither), so the testbeds offer the two every build has.
    ap.add_argument(
        "--cc",
        choices=("reno", "cubic"),
        default="reno",
        help="the hosts' congestion control, in the kernel and in clos (transport.kind)",
    )
    ap.add_argument("--jitter", default=HOST_JITTER, help="clos's host.jitter (mean software wait)")
    ap.add_argument(
        "--link-jitter",
        default=LINK_JITTER,
        help="clos's topology.link_jitter (mean timing noise of a shaped port)",
    )
    ap.add_argument(
        "--out",
        metavar="DIR",
        help="write each run's two sides as results folders (DIR/<case>-<n>-run<k>/kernel and "
        "clos) for `clos compare`",
    )
    ap.add_argument(
        "--tick",
        default="kernel",
        help="clos's transport.timer_tick: 'kernel' (the running kernel's 1 / CONFIG_HZ), or a time ('0ns': exact)",
    )


def ready(a: argparse.Namespace) -> bool:
    """Whether the kernel side can run here (else say why in one line); completes `a`."""
    why = missing()
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    if not why and a.cc not in available.read_text().split():
        why = f"this kernel has no {a.cc} (tcp_available_congestion_control)"
    if why:
        print(f"kernel comparison skipped: {why}")
        return False
    a.buffer_bytes = size(a.buffer)
    a.tick = kernel_tick() if a.tick == "kernel" else a.tick
    a.rate_clos = a.rate.replace("gbit", "Gbps").replace("mbit", "Mbps")
    return True


def print_table(header: tuple, rows: list[tuple]) -> None:
    """A Markdown table, as docs/validation.md shows it."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")


def first_share(starts: list[float], ends: list[float]) -> float:
    """When the first flow finished, as a share of the round (the last flow's finish)."""
    t0 = min(starts)
    return (min(ends) - t0) / (max(ends) - t0)


def size(text: str) -> int:
    m = re.fullmatch(r"(\d+)(KB|MB)?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected bytes like 64KB or 20MB, got {text!r}")
    return int(m.group(1)) * {None: 1, "KB": 1000, "MB": 1000_000}[m.group(2)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=("incast", "long", "short", "turnaround"))
    ap.add_argument("--fanin", default="1,2,4,8,16,32", help="incast: responders")
    ap.add_argument("--flows", default="2,4,8", help="long: flows sharing the receiver's port")
    ap.add_argument("--response", type=size, default="64KB", help="incast: bytes per responder")
    ap.add_argument("--size", type=size, default="20MB", help="long, short: bytes per long flow")
    ap.add_argument("--short", type=size, default="20KB", help="short: bytes per short flow")
    ap.add_argument("--every", type=float, default=0.02, help="short: seconds between short flows")
    ap.add_argument("--senders", type=int, default=4, help="short: hosts taking turns")
    ap.add_argument("--rounds", type=int, default=10, help="incast: rounds per run")
    ap.add_argument("--gap", type=float, default=0.05, help="incast: seconds between rounds")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--persistent",
        action="store_true",
        help="incast: one connection per responder kept across rounds (clos: connections)",
    )
    ap.add_argument("--no-rack", action="store_true", help="turn off RACK and TLP in the kernel")
    testbed_args(ap)
    ap.add_argument(
        "--clos",
        action="append",
        metavar="KEY=VALUE",
        help="set a field of clos's scenario, for ablations (transport.tlp=false); repeatable",
    )
    a = ap.parse_args()
    if not ready(a):
        return 0
    rack = "off" if a.no_rack else "on"
    print(
        f"Linux {sh('uname', '-r').strip()}, {a.rate}, {a.buffer} port buffer, rto_min {a.rto_min}, RACK-TLP {rack}, {a.runs} runs, clos's host.jitter {a.jitter}, link_jitter {a.link_jitter}, timer tick {a.tick}"
    )
    if a.case == "turnaround":
        turnaround(a)
        return 0
    if a.case == "incast":
        print(
            f"{a.rounds} rounds of {a.response:,} B per responder per run; kernel: median (min-max) over runs of each run's median"
        )
        header = (
            "responders",
            "round ms, kernel",
            "clos",
            "timeouts/round, kernel",
            "clos",
            "drops/round, kernel",
            "clos",
            "RTT us",
        )
        rows = incast(a)
    elif a.case == "short":
        print(
            f"{a.short:,} B short flows every {a.every * 1e3:g} ms beside a {a.size:,} B flow; kernel: median (min-max) over runs"
        )
        header = ("short flows' FCT, ms", "kernel", "clos")
        rows = short(a)
    else:
        print(f"{a.size:,} B per flow; kernel: median (min-max) over runs")
        header = (
            "flows",
            "first finish / round, kernel",
            "clos",
            "drops, kernel",
            "clos",
            "timeouts, kernel",
            "clos",
            "RTT us",
        )
        rows = long(a)
    print_table(header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
