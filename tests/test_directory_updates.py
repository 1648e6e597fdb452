"""A VM migration's new mapping pushed to the agents as rules through the control channel
(issue 38; docs/updates.md, "The VM migration through the channel"; `directory/push.rs`).

The bundled `vm-migration-unordered`, `vm-migration-two-phase` and `vm-migration-per-flow` are
`vm-migration` with `[directory] channel = true` and a controller: 2.5 ms round trip, 1000
rules/s per agent, one rule per agent (the caches are shared). Without `channel` the model is
unchanged (the `vm-migration` golden holds that).
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import clos
from clos.cli.main import app
from clos.results.report import write_report
from clos.scenario import Scenario

STRATEGIES = ("unordered", "two-phase", "per-flow")
ONE_WAY_MS = 1.25
RULE_MS = 1.0  # one rule at 1000 rules/s


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    out = {s: clos.run(f"vm-migration-{s}").summary for s in STRATEGIES}
    out["reactive"] = clos.run("vm-migration").summary
    return out


def move(summary: dict) -> dict:
    (m,) = summary["directory"]["migrations"]
    return m


def test_every_run_conserves_packets_and_finishes(runs):
    for name, s in runs.items():
        p = s["packets"]
        assert p["sent"] == p["delivered"] + p["dropped"] + p["in_flight"], name
        assert s["flows"]["finished"] == s["flows"]["count"], name


def test_unordered_is_in_one_way_plus_a_rule_after_the_commit(runs):
    """By hand: each agent holds one entry for AA 0, written 1.25 ms (one way) + 1 ms (one
    rule at 1000/s) after the commit; agents write in parallel."""
    m = move(runs["unordered"])
    p = m["push"]
    assert p["update"] == "unordered" and p["agents"] >= 4
    assert p["sent_s"] == pytest.approx(m["directory_updated_s"], abs=1e-12)
    assert p["time_to_complete_s"] * 1e3 == pytest.approx(ONE_WAY_MS + RULE_MS, abs=1e-9)
    assert (p["rules_written"], p["peak_rules"]) == (p["agents"], p["agents"])
    assert m["reports"] == 0, "with the channel, ToRs report nothing"
    # No agent sends to the old place after its rule is in.
    assert m["last_stale_send_s"] <= p["completed_s"] + 1e-12
    assert m["stale_senders_left"] == 0


def test_two_phase_stages_acknowledges_and_flips(runs):
    """By hand: staged at commit + 2.25 ms, acknowledged 1.25 ms later, flipped (one stamping
    rule) 2.25 ms after that: 5.75 ms. Old rules removed after the last acknowledgement (1.25),
    the 1 ms drain, one way (1.25) and one rule (1): 4.5 ms after the flip. Rule space: old and
    new at every agent."""
    p = move(runs["two-phase"])["push"]
    n = p["agents"]
    assert p["time_to_complete_s"] * 1e3 == pytest.approx(
        2 * (ONE_WAY_MS + RULE_MS) + ONE_WAY_MS, abs=1e-9
    )
    removed_after = p["old_rules_removed_s"] - p["completed_s"]
    assert removed_after * 1e3 == pytest.approx(2 * ONE_WAY_MS + 1.0 + RULE_MS, abs=1e-9)
    assert (p["rules_written"], p["peak_rules"]) == (3 * n, 2 * n)


def test_slower_strategies_send_more_to_the_old_location(runs):
    """The runs are the same packet for packet until the first agent's rule is in (commit +
    2.25 ms): from then on unordered sends nothing to the old place, while two-phase's agents
    may send there 3.5 ms longer, and per-flow keeps every flow that sent within its 1 s
    timeout there until it idles 1 s."""
    stale = {s: move(runs[s])["stale_sends"] for s in STRATEGIES}
    assert stale["unordered"] <= stale["two-phase"] <= stale["per-flow"]
    pf = move(runs["per-flow"])["push"]
    # The VM's flows stalled on the old place before the commit (their last packet there came
    # less than 1 s before the flip), so they are kept on the old mapping.
    assert pf["flows_kept_on_old_mapping"] > 0
    assert pf["last_old_mapping_send_s"] > pf["completed_s"]
    # The old rules go once the last kept flow has idled 1 s, heard one way later, removed one
    # way and one rule after that.
    removed_after = pf["old_rules_removed_s"] - pf["last_old_mapping_send_s"]
    assert removed_after * 1e3 == pytest.approx(1000 + 2 * ONE_WAY_MS + RULE_MS, abs=1e-9)
    slowest = {s: runs[s]["fct"]["all"]["fct_s"]["p99"] for s in (*STRATEGIES, "reactive")}
    assert slowest["per-flow"] > 1.0 > slowest["reactive"] > slowest["unordered"]


def test_ordered_is_unordered_in_one_round():
    """A mapping has nothing downstream of it, so an ordered push is the unordered one."""
    a = clos.run(Scenario.load("vm-migration-unordered")).summary
    b = clos.run(Scenario.load("vm-migration-unordered", ["convergence.update=ordered"])).summary
    pa, pb = move(a).pop("push"), move(b).pop("push")
    assert pa.pop("update") == "unordered" and pb.pop("update") == "ordered"
    assert pa == pb
    assert a["directory"]["migrations"] == b["directory"]["migrations"]
    assert a["packets"] == b["packets"] and a["goodput"] == b["goodput"]


def test_the_channel_needs_the_controller():
    runner = CliRunner()
    result = runner.invoke(app, ["validate", "vm-migration", "--set", "directory.channel=true"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert 'directory.channel: needs [convergence] mode = "controller"' in result.stderr


def test_the_documented_experiment_prints_its_table(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "migration_updates_experiment.py"
    spec = importlib.util.spec_from_file_location("migration_updates_experiment", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    rows = [r for r in printed.splitlines() if r.startswith("| ") and "|---" not in r]
    assert len(rows) == 1 + len(module.RUNS) * len(module.COMMITS)
    assert (tmp_path / "migration-updates.md").read_text().strip() == printed.strip()


def test_the_report_shows_the_push(tmp_path):
    results = clos.run("vm-migration-two-phase")
    text = write_report(results.save(tmp_path / "run")).read_text()
    assert "Directory: mappings pushed through the control channel" in text
    assert "two_phase" in text
    plain = clos.run("vm-migration")
    text = write_report(plain.save(tmp_path / "plain")).read_text()
    assert "pushed through the control channel" not in text


@pytest.mark.parametrize(
    ("strategy", "fits", "refuses"),
    [("unordered", 4, 3), ("two-phase", 5, 4)],
)
def test_a_mapping_that_overfills_an_agents_table_is_refused_and_looked_up(
    tmp_path, strategy: str, fits: int, refuses: int
):
    """By hand. The VM's peers h1, h21, h41 and h61 each map the 4 other members of their
    shuffle (4 rules); h50 and h70 map only the VM (1 rule). In place, the new rule replaces the
    old: a table of 4 takes it, one of 3 is already over-full and refuses it at the 4 peers.
    Staged (two-phase), the new rule goes beside the agent's 4: a table of 5 takes it, one of 4
    refuses it at the 4 peers while h50 and h70 (1 + 1) take theirs. Each refusing agent drops
    its mapping, and its next packet to the VM looks it up: 4 more lookups."""
    base = clos.run(f"vm-migration-{strategy}").summary
    ok = clos.run(Scenario.load(f"vm-migration-{strategy}", [f"convergence.table_size={fits}"]))
    assert "agent_table_refusals" not in ok.summary["directory"]
    assert move(ok.summary) == move(base)
    full = clos.run(
        Scenario.load(f"vm-migration-{strategy}", [f"convergence.table_size={refuses}"])
    )
    d = full.summary["directory"]
    push = move(full.summary)["push"]
    assert (push["agents"], push["rules_refused"], push["agents_refused"]) == (6, 4, 4)
    assert [r["agent"] for r in d["agent_table_refusals"]] == ["h1", "h21", "h41", "h61"]
    assert all(r["rules_refused"] == r["messages_refused"] == 1 for r in d["agent_table_refusals"])
    assert d["agent_table_size"] == refuses
    assert d["lookups"] == base["directory"]["lookups"] + 4
    p = full.summary["packets"]
    assert p["sent"] == p["delivered"] + p["dropped"] + p["in_flight"]
    text = write_report(full.save(tmp_path / "run")).read_text()
    assert "<td>4 (4)</td>" in text and f"tables of {refuses} rules refused" in text
