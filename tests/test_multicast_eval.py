"""The multicast control plane's statistical evaluation through Python (clos._core.multicast_eval,
docs/multicast.md), and its wiring into `clos reproduce multicast`.

A reduced configuration (k = 8, 40 tenants) keeps this fast; the paper-scale numbers are checked by
`clos reproduce multicast` and the Rust unit tests (crates/clos-core/src/multicast/)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from clos._core import ScenarioError, multicast_eval
from clos.cli.main import app
from clos.reproduce.experiments import BUNDLED, load_paper

# k = 8: 128 hosts, 16 cores; Algorithm 1 needs n·r_c = 16 and r_a² = r_c.
SMALL = {
    "k": 8,
    "n": 4,
    "rc": 4,
    "ra": 2,
    "tenants": 40,
    "vm_median": 20,
    "vm_max": 60,
    "tail_tenants": 0,
    "tail_min": 30,
    "capacity": 100,
    "groups": 400,
}


def run(**overrides: object) -> dict:
    return multicast_eval(SMALL | overrides)


def test_every_group_assigned_and_every_entry_counted() -> None:
    out = run(aggregate="none")
    groups = out["groups"]
    assert groups["count"] == 400
    # Subscriptions per host is the members of all groups over the hosts: 400 groups of
    # size_mean members over 128 hosts.
    assert groups["subscriptions_per_host"] == pytest.approx(400 * groups["size_mean"] / 128)
    entries = out["entries"]
    # Every group has at least one edge entry: the edge layer holds at least one per group.
    assert entries["edge"]["mean"] * entries["edge"]["switches"] >= 400
    for layer in ("core", "aggr", "edge"):
        stats = entries[layer]
        # Overflow is counted, never dropped: entries beyond C add up over the switches over C.
        assert (stats["overflow_entries"] > 0) == (stats["over_capacity"] > 0)
        assert stats["min"] <= stats["median"] <= stats["max"]


def test_overflow_counted_at_a_tiny_capacity() -> None:
    out = run(capacity=10, aggregate="none")
    edge = out["entries"]["edge"]
    assert edge["over_capacity"] > 0
    assert edge["overflow_entries"] >= edge["max"] - 10


def test_aggregation_fits_capacity_and_only_adds_traffic() -> None:
    # An edge switch of k = 8 has 4 host ports: 16 port sets at most, so only a capacity below
    # that forces groups with different ports to share: 6 = the 5 reserved meta-groups (one per
    # port, one for all) plus one.
    out = run(capacity=6, aggregate="edge")
    agg = out["aggregation"]
    assert agg["entries"]["max"] <= 6
    assert out["entries"]["edge"]["max"] > 6  # it had something to do
    assert agg["overhead_total"] > 0
    assert agg["overhead_top1pct"] >= 0
    # With room for every port set, nothing needs to share: no overhead (δ = 0).
    roomy = run(capacity=30, aggregate="edge")["aggregation"]
    assert roomy["overhead_total"] == 0
    assert roomy["entries"]["max"] <= 16


def test_churn_updates_per_event_are_consistent() -> None:
    out = run(churn_events=3000, aggregate="none")
    join, leave = out["churn"]["join"], out["churn"]["leave"]
    assert join["events"] + leave["events"] == 3000
    for side in (join, leave):
        # Every event updates its edge switch, exactly once.
        assert side["edge"] == 1.0
        assert side["total"] == pytest.approx(side["edge"] + side["aggr"] + side["core"])
        # An event updates at most 2 r_a aggregation switches and r_c cores.
        assert side["aggr"] <= 2 * 2 and side["core"] <= 4


def test_batching_saves_updates() -> None:
    out = run(groups=0, batching_joins=20, batching_pods=2, batching_trials=50)
    b = out["batching"]
    assert b["batched"]["total"] < b["unbatched"]["total"]
    # Without batching every join updates its edge switch.
    assert b["unbatched"]["edge"] == 1.0


def test_deterministic_for_a_seed() -> None:
    a, b = run(seed=3), run(seed=3)
    a.pop("seconds"), b.pop("seconds")
    assert a == b
    c = run(seed=4)
    c.pop("seconds")
    assert c != a


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"placement": "far"}, "multicast.placement"),
        ({"ra": 3}, "multicast.ra"),
        ({"groupz": 1}, "unknown field `groupz`"),
        ({"k": 7}, "multicast.k"),
        ({"failover": [33]}, "multicast.failover"),  # k = 8 has 32 aggregation switches
        ({"failover": [1], "groups": 0}, "multicast.failover"),
        ({"events_per_pod_per_s": -1}, "multicast.events_per_pod_per_s"),
    ],
)
def test_bad_parameters_name_the_field(override: dict, field: str) -> None:
    with pytest.raises(ScenarioError, match=field):
        run(**override)


def test_reproduce_lists_the_multicast_claims() -> None:
    result = CliRunner().invoke(app, ["reproduce", "multicast", "--list"])
    assert result.exit_code == 0, result.output
    assert "multicast/table2b-join" in result.output
    assert "multicast/batching-with" in result.output


def test_claims_file_loads_with_its_experiments() -> None:
    paper = load_paper(BUNDLED / "multicast" / "claims.toml")
    assert {e.kind for e in paper.experiments.values()} == {"multicast-eval"}
    params = paper.experiments["fig6"].params_for("paper", "near_wve_ra2")
    assert (params["ra"], params["rc"], params["n"], params["groups"]) == (2, 4, 144, 0)
    assert paper.experiments["fig5"].params_for("small", "near_uniform")["group_sizes"] == "uniform"


def test_reproduce_runs_an_evaluation_claim(tmp_path) -> None:
    result = CliRunner().invoke(
        app,
        ["reproduce", "multicast", "--only", "batching-with", "--out", str(tmp_path), "-q"],
    )
    assert result.exit_code == 0, result.output
    assert "batching-with" in (tmp_path / "claims.csv").read_text()
    assert (tmp_path / "runs" / "multicast-batching-example-small.json").is_file()


def test_every_multicast_run_is_accepted_by_the_core_at_both_scales() -> None:
    paper = load_paper(BUNDLED / "multicast" / "claims.toml")
    for experiment in paper.experiments.values():
        for scale in ("small", "paper"):
            for run_name in experiment.runs:
                # Cheap: validate by evaluating nothing but the setup (no groups, no sections).
                params = experiment.params_for(scale, run_name) | {
                    "groups": 0,
                    "capacity_search": False,
                    "churn_events": 0,
                    "batching_joins": 0,
                    "failover": [],
                }
                assert "population" in multicast_eval(params)


def test_capacity_limits_are_ordered() -> None:
    # Each limit relaxes the one before: any switch over C; a switch of a layer that is not
    # aggregated; the same with edge switches counting only entries of two or more ports.
    cap = run(groups=0, capacity_search=True, aggregate="aggr", placement="random")["capacity"]
    without = cap["without_aggregation"]["groups"]
    with_la = cap["with_aggregation"]["groups"]
    unicast = cap["with_unicast_edges"]["groups"]
    assert 0 < without <= with_la <= unicast
    assert cap["with_unicast_edges"]["unicast_rules_max"] >= 0


def test_failover_from_none_failed_to_all_failed() -> None:
    # Figure 8's section (failover.rs): with no aggregation switch down every receiver is reached
    # at no stretch; with all 32 down nothing beyond a sender's own edge switch is reached, so
    # no detour is taken and every group spanning two edge switches loses receivers.
    out = run(aggregate="none", failover=[0, 4, 32])["failover"]
    none, some, every = out["failed_0"], out["failed_4"], out["failed_32"]
    assert none["stretch"]["max"] == 1.0 and none["groups_unreachable"] == 0
    assert none["three_hop_detours"] == none["five_hop_detours"] == 0
    assert every["stretch"]["max"] == 1.0 and every["three_hop_detours"] == 0
    assert 0 < every["groups_unreachable"] <= 1 and every["unreachable"]["max"] == 1.0
    # A few failures: some groups detour (an AB tree's three-hop detour, 8 hops for 6).
    assert some["three_hop_detours"] > 0 and some["five_hop_detours"] == 0
    assert 1.0 < some["stretch"]["max"] <= 8 / 6
