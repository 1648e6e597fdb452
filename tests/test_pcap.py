"""Packet captures (`output.pcap`, `Results.write_pcap`, clos/results/pcap.py): the traced flows'
packets written as pcap, read back with an independent reader (dpkt) and checked against the
simulator's own counters."""

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import dpkt
import polars as pl
import pytest

import clos
from clos.results.pcap import DATA_PORT, isn, port

MEASUREMENTS = (Path(__file__).parent.parent / "docs" / "measurements.md").read_text()

# The IP header's ECN field (RFC 3168; dpkt's IP_TOS_CE is RFC 2481's).
ECT0, CE = 2, 3

# Eight DCTCP senders into one receiver's 30 KB port marking above 10 KB: every flow sees CE
# marks, and all but the luckiest lose packets, resent by fast retransmit (SACK) or timeout.
INCAST = {
    "topology": {
        "kind": "leaf_spine",
        "leaves": 1,
        "spines": 1,
        "hosts_per_leaf": 9,
        "link_delay": "1us",
    },
    "switch": {"buffer": "30KB", "ecn_threshold": "10KB"},
    "transport": {"kind": "dctcp", "rto_min": "1ms"},
    "workload": {
        "kind": "incast",
        "requesters": 1,
        "responders": 8,
        "bytes": "64KB",
        "interval": "5ms",
    },
    "stop": "4ms",  # one round, every flow done and every ACK home
    "output": {"trace": list(range(8)), "pcap": "sender"},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    results = clos.run(INCAST)
    folder = results.save(tmp_path_factory.mktemp("incast"))
    results.write_pcap(folder / "receiver.pcap", vantage="receiver")
    return results, folder


def read(path: Path) -> list[dict]:
    """Every packet of a capture, as dpkt reads it."""
    packets = []
    with path.open("rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == dpkt.pcap.DLT_EN10MB
        for ts, frame in reader:
            ip = dpkt.ethernet.Ethernet(frame).data
            tcp = ip.data
            payload = ip.len - 4 * ip.hl - 4 * tcp.off
            sack = [o for kind, o in dpkt.tcp.parse_opts(tcp.opts) if kind == dpkt.tcp.TCP_OPT_SACK]
            packets.append(
                {
                    "ns": int(ts * 10**9),
                    "captured": len(frame),
                    "sport": tcp.sport,
                    "dport": tcp.dport,
                    "seq": tcp.seq,
                    "ack": tcp.ack,
                    "flags": tcp.flags,
                    "ecn": ip.tos & 3,
                    "payload": payload,
                    "sack": sack[0] if sack else b"",
                }
            )
    return packets


def flow_of(p: dict) -> int:
    """The flow a packet belongs to, by its sender's port (8 flows, no wrap)."""
    return (p["sport"] if p["dport"] == DATA_PORT else p["dport"]) - port(0)


def segment(flow: int, seq: int, mss: int) -> int:
    offset = (seq - isn(flow) - 1) % 2**32
    assert offset % mss == 0, "every data segment starts on a segment boundary"
    return offset // mss


def test_the_capture_counts_what_the_simulator_counts(run):
    results, folder = run
    sender, receiver = read(folder / "trace.pcap"), read(folder / "receiver.pcap")
    data = lambda packets: [p for p in packets if p["dport"] == DATA_PORT]  # noqa: E731
    acks = lambda packets: [p for p in packets if p["sport"] == DATA_PORT]  # noqa: E731
    packets = results.summary["packets"]
    assert packets["in_flight"] == 0
    # Every packet of the run is one of these 8 flows': each sent one is in a capture at its
    # source, each delivered one at its destination, and the rest were dropped.
    assert len(data(sender)) + len(acks(receiver)) == packets["sent"]
    assert len(data(receiver)) + len(acks(sender)) == packets["delivered"]
    assert packets["sent"] - packets["delivered"] == results.flows["drops"].sum() > 0
    # Per flow: a capture at the sender holds each segment once plus every retransmission.
    flows = results.flows.sort("id")
    per_flow = Counter(flow_of(p) for p in data(sender))
    segments = (flows["bytes"] + flows["mss"] - 1) // flows["mss"]
    assert [per_flow[f] for f in flows["id"]] == (segments + flows["retransmits"]).to_list()


def test_sequence_numbers_are_the_simulators_segments(run):
    results, folder = run
    sender = read(folder / "trace.pcap")
    trace = results.trace
    flows = {row["id"]: row for row in results.flows.iter_rows(named=True)}
    retransmitted = 0
    for flow, spec in flows.items():
        mss, size = spec["mss"], spec["bytes"]
        data = [p for p in sender if p["dport"] == DATA_PORT and flow_of(p) == flow]
        segs = [segment(flow, p["seq"], mss) for p in data]
        sent = trace.filter(
            (pl.col("flow") == flow) & pl.col("event").is_in(["send", "resend", "probe"])
        )
        assert segs == sent["seg"].to_list(), "in the order TCP sent them"
        assert [p["payload"] for p in data] == [min(mss, size - s * mss) for s in segs]
        # Retransmissions repeat a sequence number, as many times as the flow counted.
        repeats = sum(n - 1 for n in Counter(p["seq"] for p in data).values())
        assert repeats == spec["retransmits"]
        assert sorted(set(segs)) == list(range(-(-size // mss)))
        retransmitted += repeats
        # ACK numbers: the cumulative ACK in bytes; the last one acknowledges every byte.
        acks = [p for p in sender if p["sport"] == DATA_PORT and flow_of(p) == flow]
        assert (acks[-1]["ack"] - isn(flow) - 1) % 2**32 == size
        assert all(p["seq"] == isn(flow, receiver=True) + 1 for p in acks)
    assert retransmitted > 0, "the incast must lose packets for this test to mean anything"


def test_ecn_bits_where_the_fabric_marked(run):
    results, folder = run
    sender, receiver = read(folder / "trace.pcap"), read(folder / "receiver.pcap")
    sent = [p for p in sender if p["dport"] == DATA_PORT]
    arrived = [p for p in receiver if p["dport"] == DATA_PORT]
    # DCTCP sends ECT(0); the receiver sees CE on exactly the packets the switch marked.
    assert {p["ecn"] for p in sent} == {ECT0}
    marked = sum(p["ecn"] == CE for p in arrived)
    assert marked == results.links["ecn_marks"].sum() > 0
    # ACKs are not ECN-capable; they echo the marks (ECE), and the sender answers with CWR.
    assert all(p["ecn"] == 0 for p in receiver if p["sport"] == DATA_PORT)
    assert any(p["flags"] & dpkt.tcp.TH_ECE for p in sender if p["sport"] == DATA_PORT)
    assert any(p["flags"] & dpkt.tcp.TH_CWR for p in sent)
    trace = results.trace.filter(pl.col("event") == "arrive")
    assert marked == (trace["ecn"] == CE).sum()


def test_sack_blocks_timestamps_and_lengths(run):
    results, folder = run
    sender = read(folder / "trace.pcap")
    trace = results.trace.filter(pl.col("event").is_in(["send", "resend", "probe", "ack"]))
    # Simulated time in nanoseconds, in the simulator's order.
    assert [p["ns"] for p in sender] == (trace["time_ps"] // 1000).to_list()
    # SACK blocks are byte ranges on segment boundaries (or the flow's end), as the trace's
    # blocks say.
    sacked = [(flow_of(p), p["sack"]) for p in sender if p["sack"]]
    assert sacked, "the losses must draw SACKs"
    for flow, option in sacked:
        edges = [int.from_bytes(option[i : i + 4]) for i in range(0, len(option), 4)]
        size, mss = results.flows.filter(pl.col("id") == flow).select("bytes", "mss").row(0)
        offsets = [(e - isn(flow) - 1) % 2**32 for e in edges]
        assert all(o % mss == 0 or o == size for o in offsets)
    with_sack = trace.filter(pl.col("event") == "ack")["sack"].to_list()
    assert len(sacked) == sum(any(blocks) for blocks in with_sack)
    # Headers only: the file stays small; the IP length still counts the payload.
    assert max(p["captured"] for p in sender) <= 14 + 20 + 20 + 4 + 24
    assert all(p["payload"] > 0 for p in sender if p["dport"] == DATA_PORT)


def test_asked_for_in_the_scenario_or_not_at_all(tmp_path):
    quiet = {**INCAST, "output": {"trace": [0]}}
    results = clos.run(quiet)
    (tmp_path / "trace.pcap").write_bytes(b"stale")
    results.save(tmp_path)
    assert not (tmp_path / "trace.pcap").exists(), "a folder run again loses its old capture"
    with pytest.raises(clos.ScenarioError, match=r"output\.pcap: captures the flows"):
        clos.run({**INCAST, "output": {"pcap": "receiver"}})
    with pytest.raises(clos.ScenarioError, match=r"output\.pcap"):
        clos.run({**INCAST, "output": {"trace": [0], "pcap": "switch"}})
    with pytest.raises(ValueError, match="vantage 'middle'"):
        results.write_pcap(tmp_path / "x.pcap", vantage="middle")
    with pytest.raises(ValueError, match=r"flows \[3\] are not in the trace"):
        results.write_pcap(tmp_path / "x.pcap", flows=[3])
    # A saved run writes its capture again later, flow by flow.
    again = clos.load_results(results.save(tmp_path)).write_pcap(tmp_path / "0.pcap", flows=[0])
    assert {flow_of(p) for p in read(again)} == {0}


def test_the_documented_example_writes_a_capture(tmp_path, monkeypatch):
    section = MEASUREMENTS.split("## Packet traces (pcap)")[1].split("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/measurements.md", "exec"), {})
    packets = read(tmp_path / "flow22-rx.pcap")
    assert packets and {flow_of(p) for p in packets} == {22}


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_reads_the_same_packets(run):
    _, folder = run
    out = subprocess.run(
        ["tshark", "-r", str(folder / "trace.pcap"), "-T", "fields", "-e", "tcp.seq_raw"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [int(s) for s in out] == [p["seq"] for p in read(folder / "trace.pcap")]
