"""LocalFlow's rule rewrites through the control channel (issue 38; docs/updates.md,
"LocalFlow's rule rewrites"; `control/rewrites.rs`).

With `[convergence] mode = "controller"`, each round's rules reach a switch `latency` after
the round (counters up, rules down) and are written at `rule_rate`; until then the switch
forwards by its old rules. Without the section LocalFlow is unchanged (the goldens hold that).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import clos
from clos.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
PERMUTATION = ROOT / "python" / "clos" / "data" / "experiments" / "localflow" / "permutation.toml"
SMALL = ["topology.k=4", "routing.interval=10ms"]


def run(*over: str) -> dict:
    return clos.run(Scenario.load(str(PERMUTATION), [*SMALL, *over])).summary


def test_one_interval_is_in_after_latency_plus_rules_over_rate():
    """By hand: one round at 10 ms (the run stops before the second), 2.5 ms round trip, 1000
    rules/s: nothing is queued before it, so the switch with the most rules, N, has them in
    2.5 ms + N / 1000 s after the round, and that is the longest delay."""
    s = run(
        "stop=15ms",
        "convergence.mode=controller",
        "convergence.latency=2.5ms",
        "convergence.rule_rate=1000",
    )
    i = s["load_balancer"]["install"]
    assert i["intervals"] == 1 and i["backlogged_messages"] == 0
    n = i["rules_per_message_max"]
    assert n > 1
    assert i["install_delay_max_ms"] == pytest.approx(2.5 + n, abs=1e-9)
    assert i["install_delay_mean_ms"] == pytest.approx(2.5 + i["rules_per_message_mean"], abs=1e-9)
    assert i["rules_written"] == pytest.approx(i["rules_per_message_mean"] * i["messages"])


def test_without_the_channel_there_is_no_install_section():
    assert "install" not in run("stop=15ms")["load_balancer"]


def test_a_rate_too_low_for_the_interval_backs_up_and_changes_the_run():
    """At 50 rules/s a switch writes at most 0.5 rule per 10 ms interval, fewer than any switch
    that splits flows must write: later intervals find it still writing."""
    base = run("stop=60ms")
    slow = run(
        "stop=60ms",
        "convergence.mode=controller",
        "convergence.latency=0s",
        "convergence.rule_rate=50",
    )
    i = slow["load_balancer"]["install"]
    assert i["backlogged_messages"] > 0 and i["backlogged_intervals"] > 0
    assert i["install_delay_max_ms"] > 10
    assert slow["goodput"]["aggregate_bps"] != base["goodput"]["aggregate_bps"]


CHANNEL = ["stop=100ms", "convergence.mode=controller", "convergence.latency=0s"]


def test_the_table_limit_refuses_rules_and_counts_them_per_switch():
    """A table as large as the most rules any switch held without a limit changes nothing (bit
    for bit); one rule smaller, the fullest switches refuse rules: no switch holds more than
    the table, and the per-switch refusals add up to the total."""
    free = run(*CHANNEL, "convergence.rule_rate=1000")
    peak = free["load_balancer"]["install"]["peak_rules_one_switch"]
    assert peak > 1 and free["load_balancer"]["install"]["rules_refused"] == 0
    exact = run(*CHANNEL, "convergence.rule_rate=1000", f"convergence.table_size={peak}")
    assert exact["goodput"] == free["goodput"]
    assert exact["load_balancer"]["install"]["table_overflows"] == []
    tight = run(*CHANNEL, "convergence.rule_rate=1000", f"convergence.table_size={peak - 1}")
    i = tight["load_balancer"]["install"]
    assert i["peak_rules_one_switch"] == peak - 1
    assert i["rules_refused"] > 0 and i["switch_intervals_over_table"] > 0
    per_switch = i["table_overflows"]
    assert sum(o["rules_refused"] for o in per_switch) == i["rules_refused"]
    assert sum(o["intervals_full"] for o in per_switch) == i["switch_intervals_over_table"]
    assert all(o["intervals_full"] <= i["intervals"] for o in per_switch)
    p = tight["packets"]
    assert p["sent"] == p["delivered"] + p["dropped"] + p["in_flight"]


def test_a_backlogged_switch_coalesces_to_the_newest_round():
    """At 100 rules/s (a rule per 10 ms interval) switches fall behind: coalescing drops queued
    rounds unwritten, so fewer rules are written and the rules in force are younger. With no
    backlog (1e15 rules/s) there is nothing to coalesce and the run is the same bit for bit."""
    queued = run(*CHANNEL, "convergence.rule_rate=100")["load_balancer"]["install"]
    newest = run(*CHANNEL, "convergence.rule_rate=100", "convergence.coalesce=true")[
        "load_balancer"
    ]["install"]
    assert queued["coalesced_messages"] == 0 and newest["coalesced_messages"] > 0
    assert newest["rules_superseded"] > 0
    assert newest["install_delay_mean_ms"] < queued["install_delay_mean_ms"]
    assert newest["install_delay_max_ms"] < queued["install_delay_max_ms"]
    fast = run(*CHANNEL, "convergence.rule_rate=1e15")
    fast_c = run(*CHANNEL, "convergence.rule_rate=1e15", "convergence.coalesce=true")
    assert fast_c["load_balancer"]["install"].pop("coalesce") is True
    assert fast["load_balancer"]["install"].pop("coalesce") is False
    assert fast_c["load_balancer"] == fast["load_balancer"]
    assert fast_c["goodput"] == fast["goodput"]


def load_experiment():
    script = ROOT / "scripts" / "localflow_install_experiment.py"
    spec = importlib.util.spec_from_file_location("localflow_install_experiment", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_experiment_at_a_small_size(tmp_path, capsys):
    """scripts/localflow_install_experiment.py --small: an instant channel (no latency, writes
    under a picosecond) is the channel-less run bit for bit; at 100 rules/s the installs back
    up; every LocalFlow row with the channel counts its rules; the figure is drawn."""
    module = load_experiment()
    runs = module.run_all(small=True)
    for workload in runs.values():
        plain, instant = workload["no channel"].summary, workload["instant"].summary
        assert instant["load_balancer"].pop("install")["backlogged_messages"] == 0
        # Everything but the echo of the scenario and the run's own cost (CPU time, memory).
        assert instant.pop("stats")["events"] == plain.pop("stats")["events"]
        assert instant.pop("scenario")["convergence"]["mode"] == "controller"
        plain.pop("scenario")
        assert instant == plain
        assert workload["instant"].flows.equals(workload["no channel"].flows)
        assert workload["100/s"].get("load_balancer", "install", "backlogged_messages") > 0
        for name in ("1000/s", "600/s", "100/s", "1000/s + 2.5 ms"):
            assert workload[name].get("load_balancer", "install", "rules_written") > 0, name
    module.figure(runs, tmp_path / "updates-localflow.png")
    assert (tmp_path / "updates-localflow.png").stat().st_size > 10_000
    table = module.tables(runs)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "|---" not in line]
    assert len(rows) == 2 * (len(module.RUNS) + 1) + 2
