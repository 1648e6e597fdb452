"""Packet traces (`output.trace`, metrics/trace.rs): one flow's packets, by hand and against the
run's own counters."""

import contextlib
import io
import re
from pathlib import Path

import polars as pl
import pytest

import clos

MEASUREMENTS = (Path(__file__).parent.parent / "docs" / "measurements.md").read_text()

STAR = {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2, "link_delay": "1us"}


def test_a_three_segment_flow_by_hand():
    # 3 full segments under a window of 10 and an ACK per segment. The fq host's NIC queue takes
    # two frames (`host.nic_buffer`), so TCP hands over segments 0 and 1 at 0 and segment 2 when
    # the first frame has left: 1,538 B at 10 Gb/s, 1,230.4 ns. Each arrives and is ACKed once,
    # nothing is dropped or resent, and flow 1 (not listed) is absent.
    r = clos.run(
        {
            "topology": STAR,
            "workload": {"kind": "permutation", "bytes": 3 * 1460},
            "stop": "1ms",  # past the last ACK: a run that stops when the flows end drops them
            "output": {"trace": [0]},
        }
    )
    t = r.trace
    assert set(t["flow"]) == {0}
    sends = t.filter(pl.col("event") == "send")
    assert sends["seg"].to_list() == [0, 1, 2]
    assert sends["time_ps"].to_list() == [0, 0, 1_230_400]
    arrive = t.filter(pl.col("event") == "arrive")
    assert arrive["seg"].to_list() == [0, 1, 2]
    # Two links, each 1,230.4 ns of serialisation and 1 us of delay; then one frame apart.
    assert arrive["time_ps"].to_list() == [4_460_800, 5_691_200, 6_921_600]
    assert t.filter(pl.col("event") == "ack")["seg"].to_list() == [1, 2, 3]
    # The receiver ACKs each segment as it arrives (`transport.delayed_ack = 1`).
    ack_send = t.filter(pl.col("event") == "ack_send")
    assert ack_send["seg"].to_list() == [1, 2, 3]
    assert ack_send["time_ps"].to_list() == arrive["time_ps"].to_list()
    # TCP without ECN: no ECN field, no ECE or CWR; no loss, no SACK.
    assert (t["ecn"] == 0).all() and not t["ece"].any() and not t["cwr"].any()
    assert (t["sacked"] == 0).all()
    assert t.filter(pl.col("event").is_in(["drop", "drop_ack", "resend", "timeout"])).is_empty()
    assert t["link"].null_count() == t.height
    assert t["time_ps"].is_sorted()


def test_a_lossy_incast_agrees_with_the_flow_counters():
    # 8 senders into one 30 KB port: drops, retransmissions and timeouts traced for every flow
    # are exactly what the flows table counts, and every data drop is at a port into a host.
    r = clos.run(
        {
            "topology": {**STAR, "hosts_per_leaf": 9, "host_rate": "1Gbps", "fabric_rate": "1Gbps"},
            "switch": {"buffer": "30KB"},
            "transport": {"rto_min": "1ms"},
            "workload": {
                "kind": "incast",
                "requesters": 1,
                "responders": 8,
                "bytes": "64KB",
                "interval": "5ms",
            },
            "stop": "12ms",
            "output": {"trace": list(range(16))},
        }
    )
    t, flows = r.trace, r.flows.filter(pl.col("id") < 16)
    per = t.group_by("flow").agg(
        drops=pl.col("event").is_in(["drop", "drop_ack"]).sum(),
        resends=(pl.col("event") == "resend").sum(),
        timeouts=(pl.col("event") == "timeout").sum(),
    )
    joined = flows.join(per, left_on="id", right_on="flow", how="left").fill_null(0)
    assert joined["drops"].sum() > 0, "the port must overflow for this test to mean anything"
    assert (joined["drops"] == joined["drops_right"]).all()
    assert (joined["retransmits"] == joined["resends"]).all()
    assert (joined["timeouts"] == joined["timeouts_right"]).all()
    into_hosts = r.links.filter(pl.col("tier") == "tor_down")["id"].to_list()
    assert set(t.filter(pl.col("event") == "drop")["link"]) <= set(into_hosts)


def test_off_by_default_and_bounded():
    r = clos.run({"topology": STAR, "workload": {"kind": "permutation", "bytes": 1000}})
    assert r.trace.is_empty()
    with pytest.raises(clos.ScenarioError, match=r"output\.trace: lists 1001 flows"):
        clos.run(
            {
                "topology": STAR,
                "workload": {"kind": "permutation", "bytes": 1000},
                "output": {"trace": list(range(1001))},
            }
        )


def test_the_documented_example_runs_and_shows_the_losses():
    section = MEASUREMENTS.split("## One flow's packets")[1].split("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/measurements.md", "exec"), {})
    # Flow 22 loses 9 packets in those 3 ms and resends each: 18 rows.
    assert "shape: (18, 10)" in out.getvalue()
