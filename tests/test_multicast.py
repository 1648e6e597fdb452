"""Packet-level multicast on a fat tree with a failure (issue 36; docs/multicast.md): the bundled
`multicast-failover` scenario, in which host 0 publishes 2 Gb/s to five members and the link
core0 - agg2 fails at 0.5 ms, detection and install taking 0.5 ms each.
"""

from __future__ import annotations

import math
import re

import pytest

import clos
from clos import ScenarioError
from clos.scenario import Scenario

# A 1,460-byte datagram is a 1,538-byte frame on the wire: at 2 Gb/s one leaves every 6.152 us.
GAP_S = 1538 * 8 / 2e9


@pytest.fixture(scope="module")
def summary() -> dict:
    return clos.run(Scenario.load("multicast-failover")).summary


def test_pod_1_keeps_receiving_through_the_detour_before_the_rebuild(summary: dict):
    m = summary["multicast"]
    assert m["periods_s"] == {
        "before": 0.0,
        "detour": pytest.approx(0.5e-3),
        "rebuilt": pytest.approx(1.5e-3),
    }
    group = m["groups"][0]
    pod_1 = [r for r in group["receivers"] if r["host"] in (5, 7)]
    assert len(pod_1) == 2
    for r in pod_1:
        detour = r["periods"]["detour"]
        # The 1 ms detour period carries 1 ms / 6.152 us = 162 datagrams; at most the one on
        # the failed link (and the one per receiver still in flight at the boundary) is lost.
        assert detour["expected"] == pytest.approx(1e-3 / GAP_S, abs=2)
        assert detour["received"] >= detour["expected"] - 2, r
        assert r["detoured"] >= detour["received"] - 2
    # Only core0 -> pod 1 is detoured (3 hops: core0, agg0, core1, agg2), once per datagram.
    assert set(m["detours"]["by_hops"]) == {"3"}
    assert m["detours"]["copies"] == pytest.approx(1e-3 / GAP_S, abs=2)
    assert group["root"] == "core(1)"


def test_every_member_receives_after_the_rebuild_and_copies_are_conserved(summary: dict):
    m = summary["multicast"]
    for r in m["groups"][0]["receivers"]:
        after = r["periods"]["rebuilt"]
        assert after["received"] >= after["expected"] - 2, r
        # Not received by the stop: the datagram on the failed link, and those still on their way.
        assert r["lost"] <= 1 + math.ceil(r["latency_max_s"] / GAP_S), r
    p = m["packets"]
    assert p["sent"] + p["replicas"] == p["delivered"] + p["dropped"] + p["in_flight"]
    packets = summary["packets"]
    assert (
        packets["sent"] + p["replicas"]
        == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    )
    # 1 datagram a gap for 3 ms, each to 5 members.
    assert p["sent"] == pytest.approx(3e-3 / GAP_S, abs=1)
    assert m["tables"]["overflow_groups"] == []


def test_a_workload_naming_no_group_is_one_error_naming_the_field():
    with pytest.raises(
        ScenarioError,
        match=re.escape('workload.group: "news" is not a group of [[multicast.groups]] (feed)'),
    ):
        clos.run(Scenario.load("multicast-failover", ["workload.group=news"]))


def test_meta_groups_report_their_overhead_beside_algorithm_2s():
    """Meta-groups at the edge (docs/multicast.md, "Meta-groups by hand"): k = 4, C = 3, Δ = 1;
    edge 0 holds four groups and puts them all in its all-ports meta-group, so every datagram of
    a, b and d reaches one host that did not join: 150 extra copies against 400 wanted, 0.375,
    which is also Algorithm 2's prediction at equal rates. `clos report`'s table shows both."""
    from clos.cli.run_table import run_table

    groups = [("a", [0, 12], 4), ("b", [1, 13], 6), ("c", [0, 1], 8), ("d", [0, 14], 10)]
    table = {
        "topology": {"kind": "fat_tree", "k": 4, "host_rate": "10Gbps", "fabric_rate": "10Gbps"},
        "multicast": {
            "capacity": 3,
            "aggregate": "edge",
            "delta_ports": 1,
            "groups": [{"name": n, "members": m} for n, m, _ in groups],
        },
        "workload": {
            "kind": "services",
            "services": [
                {"kind": "multicast", "group": n, "hosts": [s], "bytes": 50 * 1460, "rate": "1Gbps"}
                for n, _, s in groups
            ],
        },
    }
    r = clos.run(Scenario(table))
    a = r.summary["multicast"]["aggregation"]
    assert (a["copies"]["extra"], a["copies"]["needed"]) == (150, 400)
    assert a["copies"]["overhead"] == a["predicted_overhead"] == 0.375
    assert r.summary["multicast"]["packets"]["discarded"] == 150
    assert all(
        x["received"] == 50 for g in r.summary["multicast"]["groups"] for x in g["receivers"]
    )
    text = run_table("meta", r).render()
    assert "overhead, measured" in text and "overhead, Algorithm 2" in text and "37.5" in text
    # A bad layer is one error naming the field.
    table["multicast"]["aggregate"] = "core"
    with pytest.raises(ScenarioError, match=re.escape("multicast.aggregate")):
        clos.run(Scenario(table))


def test_vl2_meta_groups_at_the_tors_fit_and_every_extra_copy_is_discarded():
    """The bundled `multicast-vl2-meta` (docs/multicast.md): 32 groups on the VL2 testbed,
    meta-groups at the ToRs with C = 21. Algorithm 2 never uses more than C meta-groups, so every
    ToR fits after aggregation though each held more than C entries before; every copy a ToR sends
    to a server that did not join is discarded there (and nowhere else); members lose nothing
    (at 20 Mb/s a publisher sends a datagram every 0.6 ms, far longer than any copy's latency, so
    at most one per publisher is still on its way at the stop)."""
    m = clos.run(Scenario.load("multicast-vl2-meta")).summary["multicast"]
    a = m["aggregation"]
    assert a["layer"] == "edge" and a["capacity"] == 21
    assert a["entries_before"]["min"] > 21 and a["entries_after"]["max"] <= 21
    assert a["copies"]["extra"] == a["copies"]["discarded"] == m["packets"]["discarded"] > 0
    assert all(node.startswith("h") for node in a["copies"]["discarded_by_node"])
    p = m["packets"]
    assert p["sent"] + p["replicas"] == p["delivered"] + p["dropped"] + p["in_flight"]
    assert p["dropped"] == 0
    for g in m["groups"]:
        for r in g["receivers"]:
            assert r["received"] >= r["expected"] - 1, (g["name"], r)


def test_the_k8_experiment_runs_at_its_small_size(tmp_path, capsys):
    """scripts/multicast_experiment.py --small, as docs/multicast.md documents it: a row per run;
    the groups alone lose nothing (no failure, no link over its rate: delivery ratio 1 exactly);
    spreading per packet over a partition's four replica cores leaves the busiest core near the
    mean (each of the 16 cores carries a quarter of two groups' fan-out, against a whole group's
    on 4 cores without spreading: max / mean about 4); through the failure of a group's root link
    the members lose at most the copy on the link as it failed (ratio at least 1 - 2/expected,
    expected being hundreds of datagrams); only the failure runs detour; both figures are drawn."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "multicast_experiment.py"
    spec = importlib.util.spec_from_file_location("multicast_experiment", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--small", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in out.splitlines()
        if line.startswith("| ") and not line.startswith("| run ")
    }
    assert list(rows) == list(module.RUNS)
    col = {name: i for i, name in enumerate(module.HEADER[1:])}

    def cell(run: str, name: str) -> str:
        return rows[run][col[name]]

    def imbalance(run: str) -> float:
        return float(cell(run, "busiest core: MB down (/ mean)").split("(")[1].split(")")[0])

    for run in ("multicast", "multicast-group", "multicast-packet"):
        assert cell(run, "worst delivery") == "1.0000", run
        assert cell(run, "copies dropped") == "0", run
    assert cell("unicast", "worst delivery") == "-"
    assert imbalance("multicast") > 3.0
    assert imbalance("multicast-packet") < 1.5
    assert float(cell("multicast-failure", "worst delivery")) >= 0.98
    for run in ("multicast-failure", "failure"):
        assert int(cell(run, "copies detoured").replace(",", "")) > 0, run
    for run in ("multicast", "none", "group", "packet"):
        assert cell(run, "copies detoured") == "0", run
    for name in ("multicast-latency.png", "multicast-core-load.png"):
        assert (tmp_path / name).stat().st_size > 10_000
