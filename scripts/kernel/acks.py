"""How the Linux kernel's TCP receiver ACKs a connection's first segments (docs/validation.md,
"Beside the Linux kernel"). Needs root, `ip` and `ethtool`; tests/test_kernel.py runs a short form.

Two network namespaces joined by a veth pair, with segmentation and receive offloads off so that
every segment is a packet. For each flow length, it opens fresh connections, sends that many
full segments (TCP_NODELAY), and reads the receiver's own counters with `nstat`: segments it sent
per connection, less the handshake's and the close's, are its ACKs of data, and
TcpExtDelayedACKs counts ACKs its delayed-ACK timer sent.

    python3 scripts/kernel/acks.py --segments 1,2,3,8,16,20,22,24,30
"""

import argparse
import json
import subprocess
import sys
import time

A, B = "clos-acks-a", "clos-acks-b"
SERVER = """
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.2", 5001))
s.listen(16)
while True:
    c, _ = s.accept()
    while c.recv(1 << 20):
        pass
    c.close()
"""
CLIENT = """
import socket, sys, time
size, reps = int(sys.argv[1]), int(sys.argv[2])
for _ in range(reps):
    c = socket.socket()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.connect(("10.77.0.2", 5001))
    c.sendall(b"x" * size)
    time.sleep(0.2)
    c.close()
    time.sleep(0.05)
"""


def sh(*cmd: str, ns: str | None = None) -> str:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=True, capture_output=True, text=True).stdout


def setup() -> None:
    teardown()
    sh("ip", "netns", "add", A)
    sh("ip", "netns", "add", B)
    sh("ip", "link", "add", "clos-va", "type", "veth", "peer", "name", "clos-vb")
    for ns, dev, addr in ((A, "clos-va", "10.77.0.1/24"), (B, "clos-vb", "10.77.0.2/24")):
        sh("ip", "link", "set", dev, "netns", ns)
        sh("ip", "addr", "add", addr, "dev", dev, ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", ns=ns)


def teardown() -> None:
    for ns in (A, B):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def counters() -> dict[str, int]:
    out = sh("nstat", "-z", "--json", "TcpOutSegs", "TcpExtDelayedACKs", ns=B)
    return {k: int(v) for k, v in json.loads(out)["kernel"].items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", default="1,2,3,8,16,20,22,24,30")
    ap.add_argument("--connections", type=int, default=10)
    args = ap.parse_args()
    setup()
    server = subprocess.Popen(["ip", "netns", "exec", B, sys.executable, "-c", SERVER])
    try:
        time.sleep(0.5)
        mss = 1448  # a 1,500-byte MTU less 52 bytes of IP and TCP headers with timestamps
        print(f"Linux {sh('uname', '-r').strip()}, {args.connections} connections per row")
        print("| data segments | ACKs of data per connection | delayed-ACK timer |")
        print("|---|---|---|")
        for n in (int(x) for x in args.segments.split(",")):
            sh("nstat", "-n", ns=B)
            sh(sys.executable, "-c", CLIENT, str(n * mss), str(args.connections), ns=A)
            c = counters()
            # The receiver's own segments per connection: the SYN-ACK, and its FIN, which
            # carries the ACK of the sender's; the rest ACK data.
            acks = c.get("TcpOutSegs", 0) / args.connections - 2
            print(f"| {n} | {acks:g} | {c.get('TcpExtDelayedACKs', 0)} |")
    finally:
        server.kill()
        teardown()


if __name__ == "__main__":
    main()
