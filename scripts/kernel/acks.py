"""How the Linux kernel's TCP receiver ACKs a connection's first segments (docs/validation.md,
"Beside the Linux kernel"). Needs root, `ip` and `ethtool`; tests/test_kernel.py runs a short form.

A star of one sender and one receiver (star.py's), with segmentation and receive offloads off
so that every segment is a packet. For each flow length, it opens fresh connections, sends that many
full segments (TCP_NODELAY), and reads the receiver's own counters with `nstat`: segments it sent
per connection, less the handshake's and the close's, are its ACKs of data, and
TcpExtDelayedACKs counts ACKs its delayed-ACK timer sent.

    python3 scripts/kernel/acks.py --segments 1,2,3,8,16,20,22,24,30
"""

import argparse
import json
import time

import star

MSS = 1448  # a 1,500-byte MTU less 52 bytes of IP and TCP headers with timestamps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", default="1,2,3,8,16,20,22,24,30")
    ap.add_argument("--connections", type=int, default=10)
    args = ap.parse_args()
    why = star.missing()
    if why:
        print(f"kernel measurement skipped: {why}")
        return
    # star.py's star of one sender: links at 10 Gb/s with a deep buffer, so nothing queues.
    with star.Star(1, "10gbit", 10 << 20, "200ms", True) as s, s.listen() as lst:
        receiver = s.hosts[1]
        print(f"Linux {star.sh('uname', '-r').strip()}, {args.connections} connections per row")
        print("| data segments | ACKs of data per connection | delayed-ACK timer |")
        print("|---|---|---|")
        for n in (int(x) for x in args.segments.split(",")):
            star.sh("nstat", "-n", ns=receiver)
            for _ in range(args.connections):
                c, r = s.connect(lst, 0)
                c.sendall(b"x" * (n * MSS))
                time.sleep(0.2)
                c.close()
                while r.recv(1 << 20):
                    pass
                r.close()
                time.sleep(0.05)
            out = star.sh("nstat", "-z", "--json", "TcpOutSegs", "TcpExtDelayedACKs", ns=receiver)
            c = {k: int(v) for k, v in json.loads(out)["kernel"].items()}
            # The receiver's own segments per connection: the SYN-ACK, and its FIN, which
            # carries the ACK of the sender's; the rest ACK data.
            acks = c.get("TcpOutSegs", 0) / args.connections - 2
            print(f"| {n} | {acks:g} | {c.get('TcpExtDelayedACKs', 0)} |")


if __name__ == "__main__":
    main()
