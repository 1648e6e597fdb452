"""Telemetry queries (`clos.results.query`, Frenetic's Select/Where/GroupBy/Every, seed 004
L4625-L4745), checked on the small leaf-spine permutation (16 hosts, each sending 1 MB under
DCTCP, no losses, run for 5 ms) where the counts follow by hand from the frame layering in
`crates/clos-core/src/packet.rs`."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest

import clos
from clos.results.query import Query, QueryError
from clos.scenario import Scenario

PAYLOAD = 1_000_000
MSS = 1460
DATA_OVERHEAD = 20 + 20 + 18 + 20  # IP, TCP, Ethernet header and FCS, preamble and gap
ACK_FRAME = 64 + 20  # a bare ACK fills the minimum Ethernet frame, plus preamble and gap


@pytest.fixture(scope="module")
def results():
    return clos.run(
        Scenario.load(
            "leaf-spine-permutation",
            ["output.link_timeseries=true", "output.bin=100us", "stop=5ms"],
        )
    )


def test_a_host_port_carries_one_flows_data_and_another_flows_acks(results):
    """tor0's port to h0 carries the 1 MB flow to h0 (685 segments of at most 1460 bytes) and
    the ACKs of h0's own flow: bytes = payload + 78 per segment + 84 per ACK."""
    got = Query().where(switch="tor0", to="h0").run(results)["bytes"].item()
    packets = Query().select("packets").where(switch="tor0", to="h0").run(results).item()
    segments = math.ceil(PAYLOAD / MSS)
    assert results.get("packets", "dropped") == 0
    assert got == PAYLOAD + segments * DATA_OVERHEAD + (packets - segments) * ACK_FRAME


def test_a_port_total_is_the_sum_of_its_bins(results):
    """The per-interval counts (link_timeseries) add up to the run's total (links), port by
    port: two counters kept apart in the core. The run goes on (5 ms) after the last flow ends
    (3.5 ms): stopped at that instant, the last ACK, still on the wire, is in `links` and in
    no bin yet."""
    per_bin = Query().group_by("port").every("500us").run(results)
    summed = per_bin.group_by("port").agg(pl.col("bytes").sum()).sort("port")
    total = Query().group_by("port").run(results)
    assert summed.equals(total)
    assert per_bin["interval_start_s"].unique().sort().to_list()[:3] == [0.0, 5e-4, 1e-3]


def test_flows_grouped_by_source_deliver_what_each_host_sent(results):
    by_src = Query().group_by("src").run(results)
    assert by_src.height == 16
    assert by_src["bytes"].to_list() == [PAYLOAD] * 16
    # Per service and interval (the timeseries table): the same bytes in all.
    per_ms = Query().group_by("service").every("1ms").run(results)
    assert per_ms["bytes"].sum() == 16 * PAYLOAD
    assert set(per_ms["service"]) == {"permutation"}


def test_where_takes_a_list_and_no_group_gives_one_total(results):
    two = Query().where(flow=[0, 1]).run(results)
    assert two.shape == (1, 1) and two.item() == 2 * PAYLOAD
    tiers = Query().select("drops").group_by("tier").run(results)
    assert set(tiers["tier"]) == {"host_up", "tor_up", "core_down", "tor_down"}
    assert tiers["drops"].sum() == 0


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Query().select("flows"), "select: 'flows' is not a counter"),
        (lambda: Query().where(vlan=3), "where: 'vlan' is not a field"),
        (lambda: Query().every("fast"), "every: 'fast' is not a duration"),
        (lambda: Query().every(0), "every: the interval must be positive"),
    ],
)
def test_bad_clauses_name_themselves(make, says: str):
    with pytest.raises(QueryError, match=says):
        make()


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (Query().where(switch="tor0", flow=1), "not both at once"),
        (Query().every("150us"), "not a multiple of the 0.0001 s bins"),
        (Query().select("packets").every("1ms"), 'only "bytes"'),
        (Query().group_by("flow").every("1ms"), "per service or tenant"),
        (Query().select("ecn_marks").where(flow=1), "flows count"),
    ],
)
def test_queries_the_counters_cannot_answer_say_why(results, query: Query, says: str):
    with pytest.raises(QueryError, match=says):
        query.run(results)


def test_the_documented_example_runs():
    """docs/measurements.md's query example (STYLE.md: documented examples run)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "measurements.md").read_text()
    section = text.split("## Telemetry queries")[1].split("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    scope: dict = {}
    exec(compile(code, "docs/measurements.md", "exec"), scope)
    per_port, per_host = scope["per_port"], scope["per_host"]
    assert per_port.columns == ["interval_start_s", "port", "to", "bytes"]
    assert set(per_port["to"]) == {"h0", "h1", "h2", "h3", "spine0", "spine1"}
    assert per_host["bytes"].to_list() == [PAYLOAD] * 16
