"""Packet-level multicast on an AB (F10) fat tree (issue 36; docs/multicast.md): the bundled
`multicast-ab-failover` scenario. Host 0 publishes 2 Gb/s to five members in four pods on core0;
at 0.5 ms core0 - agg2, core1 - agg3 and core2 - agg2 fail (no 3-hop detour into pod 1 is left)
and agg7 - tor7 too (no single core reaches pods 1 and 3); detection and install take 0.5 ms
each.
"""

from __future__ import annotations

import pytest

import clos
from clos.scenario import Scenario

# A 1,460-byte datagram is a 1,538-byte frame on the wire: at 2 Gb/s one leaves every 6.152 us.
GAP_S = 1538 * 8 / 2e9
# One hop of a 1,538-byte frame at 10 Gb/s plus 1 us of propagation.
HOP_S = 1538 * 8 / 10e9 + 1e-6


@pytest.fixture(scope="module")
def summary() -> dict:
    return clos.run(Scenario.load("multicast-ab-failover")).summary


def test_pod_1_is_reached_by_the_five_hop_detour(summary: dict):
    m = summary["multicast"]
    # Every copy for pod 1 in the 1 ms detour period takes core0 -> agg0 -> tor0 -> agg1 ->
    # core3 -> agg3: 5 hops, one copy per datagram.
    assert set(m["detours"]["by_hops"]) == {"5"}
    assert m["detours"]["copies"] == pytest.approx(1e-3 / GAP_S, abs=2)
    for r in m["groups"][0]["receivers"]:
        if r["host"] not in (5, 7):
            assert r["detoured"] == 0, r
            continue
        detour = r["periods"]["detour"]
        assert detour["received"] >= detour["expected"] - 2, r
        # 6 hops on the tree, 4 more on the detour (10 in all), no queueing at 2 of 10 Gb/s.
        assert r["latency_max_s"] == pytest.approx(10 * HOP_S, rel=1e-6)
        assert r["latency_min_s"] == pytest.approx(6 * HOP_S, rel=1e-6)


def test_set_cover_rebuilds_the_tree_over_two_cores(summary: dict):
    m = summary["multicast"]
    group = m["groups"][0]
    # Greedy: core3 covers tor2, tor3 (pod 1 through agg3) and tor5 (pod 2 through agg5), not
    # tor7 (agg7 - tor7 down); then core0 covers tor7 through agg6.
    assert group["root"] == "cover"
    assert group["cover_cores"] == [3, 0]
    assert m["rebuilds"]["groups_unrepaired"] == 0
    assert m["periods_s"]["rebuilt"] == pytest.approx(1.5e-3)
    for r in group["receivers"]:
        after = r["periods"]["rebuilt"]
        assert after["received"] >= after["expected"] - 2, r
    p = m["packets"]
    assert p["sent"] + p["replicas"] == p["delivered"] + p["dropped"] + p["in_flight"]
