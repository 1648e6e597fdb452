"""The update strategies applied to LocalFlow's rule rewrites (issue 38; docs/updates.md, "Update
strategies for LocalFlow's rewrites"; `control/rewrites.rs`, `control/rewrite_versions.rs`).

Each round's rules go through the control channel under `[convergence] update`: in place
(`unordered`), tier by tier downstream first (`ordered`), or as a version stamped at the source
ToR (`two_phase`). Mixed-version packets, stale packets and the rule space are counted. The
timings are checked by hand in the Rust unit tests; these check the runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

import clos
from clos.cli.main import app
from clos.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
PERMUTATION = ROOT / "python" / "clos" / "data" / "experiments" / "localflow" / "permutation.toml"
CHANNEL = [
    "topology.k=4",
    "routing.interval=10ms",
    "stop=100ms",
    "convergence.mode=controller",
    "convergence.latency=2.5ms",
    "convergence.rule_rate=1000",
]


def run(*over: str) -> dict:
    return clos.run(Scenario.load(str(PERMUTATION), [*CHANNEL, *over])).summary


def conserved(s: dict) -> bool:
    p = s["packets"]
    return p["sent"] == p["delivered"] + p["dropped"] + p["in_flight"]


def test_two_phase_mixes_no_packet_where_in_place_writes_do():
    """Switches write a round's rules at different times, so under in-place writes some packets
    meet one round's rule at one switch and another round's at the next. Under two-phase every
    hop uses the rules of the version the source ToR stamped: no packet mixes, and with the
    default 1 ms drain (ten 100 us link delays) no packet outlives its version's rules. The
    tables hold old and new versions at once: the peak rule space is about double (old + new
    whole versions; the runs differ, so their rules do too)."""
    plain = run()["load_balancer"]["install"]
    two = run("convergence.update=two_phase")
    i = two["load_balancer"]["install"]
    assert plain["update"] == "unordered" and i["update"] == "two_phase"
    assert plain["mixed_version_packets"] > 100
    assert i["mixed_version_packets"] == 0 and i["stale_version_packets"] == 0
    assert i["versions"] > 1 and i["stamping_rules_written"] == 16 * i["versions"]
    assert 1.3 < i["peak_rules_total"] / plain["peak_rules_total"] < 2.7
    # Stage, flip and removal each take the channel's round trip at least.
    assert i["time_to_flip_mean_ms"] > 2 * 2.5
    assert i["time_to_remove_old_mean_ms"] > i["time_to_flip_mean_ms"] + 2.5 + 1
    assert conserved(two)


def test_a_drain_too_short_for_the_packets_in_flight_shows_as_stale_and_mixed():
    """With no channel latency (the controller hears of the last flip as it is written) and
    1 us from then to the removal, packets stamped with the old version are still on 100 us
    links when their rules go: the next switch forwards them by the new version's rules, and
    each such packet is mixed (so the count can fail). With a 2.5 ms round trip the removal
    reaches a switch at least 2.5 ms after the last flip, and no drain is this short."""
    over = ["convergence.update=two_phase", "convergence.latency=0s", "convergence.drain=1us"]
    i = run(*over)["load_balancer"]["install"]
    assert i["stale_version_packets"] > 0
    assert 0 < i["mixed_version_packets"] <= i["stale_version_packets"]


def test_per_flow_keeps_long_flows_on_their_first_round():
    """Per-flow: every packet is forwarded by the round its source ToR pinned its flow to, so
    none mixes (as two-phase). The permutation's long flows never idle for the 1 s default soft
    timeout, so after the first version flips they all stay on the round before it (the ECMP
    default, round 0), the old rules are held to the end of the run, and no later round is
    installed. Even 1 ms is too long here (these flows never pause that long); with a 20 us
    timeout, shorter than some gaps between a flow's packets, flows leave the old round, its
    rules go and later versions install."""
    s = run("convergence.update=per_flow")
    i = s["load_balancer"]["install"]
    assert i["update"] == "per_flow" and i["flow_timeout_ms"] == 1000.0
    assert i["mixed_version_packets"] == 0 and i["stale_version_packets"] == 0
    assert i["versions"] == 1 and i["old_version_held_at_end"]
    assert i["rounds_waited"] == i["intervals"] - 1
    # Every flow and its ACK stream started before the first flip: each is kept.
    flows = len(clos.run(Scenario.load(str(PERMUTATION), [*CHANNEL, "stop=1ms"])).flows)
    assert i["flows_kept_on_old_round"] >= flows
    assert conserved(s)
    assert run("convergence.update=per_flow", "convergence.flow_timeout=1ms")["load_balancer"][
        "install"
    ]["old_version_held_at_end"]
    short = run("convergence.update=per_flow", "convergence.flow_timeout=20us")
    j = short["load_balancer"]["install"]
    assert j["mixed_version_packets"] == 0 and j["versions"] > 1
    assert j["time_to_remove_old_mean_ms"] > 0
    assert conserved(short)


def test_ordered_sends_the_tiers_in_turn_and_its_rules_come_later():
    """Ordered: a round's messages go to the aggregation switches, then, once they have
    acknowledged, to the ToRs, so the ToRs' rules are in force at least one round trip later
    than unordered's and the mean install delay grows."""
    plain = run()["load_balancer"]["install"]
    ordered = run("convergence.update=ordered")
    i = ordered["load_balancer"]["install"]
    assert i["tier_rounds"] > i["intervals"]  # two tiers in most rounds
    assert i["install_delay_mean_ms"] > plain["install_delay_mean_ms"]
    assert i["mixed_version_packets"] > 0 and i["versions"] == 0
    assert conserved(ordered)


def test_the_same_strategy_runs_the_same():
    a = run("convergence.update=two_phase", "stop=40ms")
    b = run("convergence.update=two_phase", "stop=40ms")
    a.pop("stats"), b.pop("stats")
    assert a == b


@pytest.mark.parametrize(
    ("override", "says"),
    [
        (
            ["convergence.update=per_flow", "convergence.coalesce=true"],
            'convergence.coalesce: applies to update = "unordered" only',
        ),
        (
            ["convergence.update=ordered", "convergence.coalesce=true"],
            'convergence.coalesce: applies to update = "unordered" only',
        ),
    ],
)
def test_input_errors_name_the_field(override: list[str], says: str):
    args = ["validate", str(PERMUTATION)]
    for o in [*CHANNEL, *override]:
        args += ["--set", o]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert says in result.stderr


def test_the_documented_experiment_at_a_small_size(tmp_path):
    """scripts/localflow_updates_experiment.py --small: every strategy's row is there, two-phase
    mixes nothing, and the figure is drawn."""
    script = ROOT / "scripts" / "localflow_updates_experiment.py"
    spec = importlib.util.spec_from_file_location("localflow_updates_experiment", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runs = module.run_all(small=True)
    for workload in runs.values():
        assert workload["two_phase"].get("load_balancer", "install", "mixed_version_packets") == 0
        assert workload["unordered"].get("load_balancer", "install", "rules_written") > 0
    table = module.tables(runs)
    for workload in runs.values():
        assert workload["per_flow"].get("load_balancer", "install", "mixed_version_packets") == 0
    for name in ("no channel", "unordered", "ordered", "two_phase", "per_flow", "ECMP"):
        assert f"| {name} |" in table
    module.figure(runs, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 10_000
