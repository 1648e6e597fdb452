"""Packet captures of traced flows (`output.pcap`, `Results.write_pcap`): the `trace` table as a
standard pcap file that Wireshark, tshark, tcpdump and tcptrace open.

What a capture on one end of each flow would show (`vantage`):
- "sender": data segments as TCP hands them to the sending host (the trace's `send`, `resend`
  and `probe`), ACKs as they reach it (`ack`);
- "receiver": data segments as they reach the receiving host, with the CE marks the fabric
  set (`arrive`), ACKs as the receiver hands them to its host (`ack_send`).
Drops and timeouts are no packets at either end; they stay in the `trace` table.

Each record is an Ethernet frame holding IPv4 and TCP headers as clos's packets would carry
them: sequence numbers in bytes from the flow's ISN, the cumulative ACK, the ECN field
(ECT(0) from DCTCP senders, CE where a switch marked), ECE and CWR, SACK blocks. The payload is
not captured (snaplen: the headers), but the frame's original length counts it. Timestamps are
simulated time since the Unix epoch, in nanoseconds (magic 0xa1b23c4d); events within one
nanosecond keep the simulator's order. Synthesised, since clos does not model them:
addresses (host h is 10.0.0.0 + h + 1, MAC 02:00 + h), ports (49152 + flow id mod 16384 to
5001), ISNs (`isn`), the window field (`transport.rwnd` scaled by 2^7, as Linux's usual
window scale), IP ID 0 with DF, TTL 64, a zero TCP checksum, no SYN or FIN, no timestamps
option.

The file is written with `struct` rather than a packet library: the format is a 24-byte header
and a 16-byte record header per packet (libpcap's), and the headers are fixed layouts, so a
runtime dependency (scapy, dpkt) would buy nothing; the tests read the files back with dpkt,
which shares no code with this writer.
"""

from __future__ import annotations

import struct
from os import PathLike
from pathlib import Path
from typing import Any, Protocol

import polars as pl


class Run(Protocol):
    """What a capture reads of a run (`Results` has it): its trace and flows tables, and its
    summary's values."""

    trace: pl.DataFrame
    flows: pl.DataFrame

    def get(self, *keys: str) -> Any: ...


VANTAGES = ("sender", "receiver")
# The trace's events that are packets on the wire at each vantage point: (data, ACKs).
EVENTS = {
    "sender": (("send", "resend", "probe"), ("ack",)),
    "receiver": (("arrive",), ("ack_send",)),
}

MAGIC_NANO = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
ETHERNET, IPV4, TCP = 14, 20, 20
# Headers at most: Ethernet, IPv4, TCP with NOP, NOP and three SACK blocks.
SNAPLEN = ETHERNET + IPV4 + TCP + 2 + 2 + 3 * 8
DATA_PORT = 5001
FIRST_PORT, PORTS = 49152, 16384
WINDOW_SCALE = 7
TTL = 64
DONT_FRAGMENT = 0x4000
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = (1 << i for i in range(8))
NOP, SACK_OPTION = 1, 5

TRACE_DEFAULTS = {"ecn": 0, "ece": False, "cwr": False}


def isn(flow: int, receiver: bool = False) -> int:
    """The initial sequence number of `flow`'s sender (or receiver): a fixed hash of the flow
    id, so that the same run writes the same file. The first data byte is ISN + 1."""
    return (flow * 0x9E3779B1 + (0x68E31DA4 if receiver else 0x2545F491)) & 0xFFFFFFFF


def address(host: int) -> int:
    """Host `host`'s IPv4 address as an integer: 10.0.0.0 + host + 1."""
    return (10 << 24) + host + 1


def port(flow: int) -> int:
    """The sender's TCP port of `flow` (the receiver's is `DATA_PORT`)."""
    return FIRST_PORT + flow % PORTS


def write_pcap(
    results: Run,
    path: str | PathLike[str],
    vantage: str = "sender",
    flows: list[int] | None = None,
) -> Path:
    """Write the traced flows' packets (all, or `flows`) at `vantage` to `path`; returns it."""
    if vantage not in VANTAGES:
        raise ValueError(f"vantage {vantage!r}: a capture is taken at the sender or the receiver")
    trace = results.trace
    if trace.is_empty():
        raise ValueError("no packet trace to write: list the flows to capture in output.trace")
    if flows is not None:
        untraced = sorted(set(flows) - set(trace["flow"].unique().to_list()))
        if untraced:
            raise ValueError(f"flows {untraced} are not in the trace (output.trace)")
        trace = trace.filter(pl.col("flow").is_in(flows))
    data, acks = EVENTS[vantage]
    trace = trace.with_columns(
        pl.lit(value).alias(name) for name, value in TRACE_DEFAULTS.items() if name not in trace
    )
    rows = trace.filter(pl.col("event").is_in([*data, *acks]))
    per_flow = {
        row["id"]: row
        for row in results.flows.filter(pl.col("id").is_in(rows["flow"].unique().to_list()))
        .select("id", "src", "dst", "bytes", "mss")
        .iter_rows(named=True)
    }
    rwnd = results.get("scenario", "transport", "rwnd")
    window = min(rwnd >> WINDOW_SCALE, 0xFFFF) if isinstance(rwnd, int) else 0xFFFF
    sacks = rows["sack"].to_list() if "sack" in rows else [None] * rows.height
    out = Path(path)
    with out.open("wb") as f:
        f.write(struct.pack("<IHHiIII", MAGIC_NANO, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET))
        for time_ps, flow, event, seg, ecn, ece, cwr, sack in zip(
            rows["time_ps"],
            rows["flow"],
            rows["event"],
            rows["seg"],
            rows["ecn"],
            rows["ece"],
            rows["cwr"],
            sacks,
            strict=True,
        ):
            spec = per_flow[flow]
            frame, length = _frame(spec, flow, event in data, seg, ecn, ece, cwr, sack, window)
            ns = time_ps // 1000
            f.write(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(frame), length))
            f.write(frame)
    return out


def _frame(
    spec: dict[str, int],
    flow: int,
    is_data: bool,
    seg: int,
    ecn: int,
    ece: bool,
    cwr: bool,
    sack: list[int] | None,
    window: int,
) -> tuple[bytes, int]:
    """One packet's headers, and the length of the whole frame with its payload."""
    mss, size = spec["mss"], spec["bytes"]
    first, first_back = isn(flow) + 1, isn(flow, receiver=True) + 1

    def byte(segment: int) -> int:
        """Sequence number of segment `segment`'s first byte."""
        return (first + min(segment * mss, size)) & 0xFFFFFFFF

    flags = ACK | (ECE if ece else 0) | (CWR if cwr else 0)
    options = b""
    if is_data:
        src, dst, sport, dport = spec["src"], spec["dst"], port(flow), DATA_PORT
        seq, ack = byte(seg), first_back
        payload = max(0, min(mss, size - seg * mss))
    else:
        src, dst, sport, dport = spec["dst"], spec["src"], DATA_PORT, port(flow)
        seq, ack, payload = first_back, byte(seg), 0
        blocks = [(a, b) for a, b in zip(sack[::2], sack[1::2], strict=True) if b] if sack else []
        if blocks:
            options = struct.pack("!BBBB", NOP, NOP, SACK_OPTION, 2 + 8 * len(blocks)) + b"".join(
                struct.pack("!II", byte(a), byte(b)) for a, b in blocks
            )
    tcp_length = TCP + len(options)
    tcp = (
        struct.pack(
            "!HHIIBBHHH", sport, dport, seq, ack, (tcp_length // 4) << 4, flags, window, 0, 0
        )
        + options
    )
    ip = _ipv4(address(src), address(dst), ecn, IPV4 + tcp_length + payload)
    ethernet = _mac(dst) + _mac(src) + b"\x08\x00"
    headers = ethernet + ip + tcp
    return headers, len(headers) + payload


def _mac(host: int) -> bytes:
    """A locally administered MAC address holding the host id: 02:00 + 4 bytes."""
    return b"\x02\x00" + struct.pack("!I", host)


def _ipv4(src: int, dst: int, ecn: int, total: int) -> bytes:
    """An IPv4 header with its checksum (DSCP 0, the ECN field `ecn`, protocol TCP)."""
    header = struct.pack("!BBHHHBBHII", 0x45, ecn, total, 0, DONT_FRAGMENT, TTL, 6, 0, src, dst)
    words = sum(struct.unpack("!10H", header))
    while words >> 16:
        words = (words & 0xFFFF) + (words >> 16)
    return header[:10] + struct.pack("!H", ~words & 0xFFFF) + header[12:]
