"""The VL2 directory model inside the simulator, from Python: the bundled VM migration, the
summary's `directory` section, where the key numbers and reports show it, and bad input.

(`test_directory.py` tests the directory *service*, `clos directory`.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import clos
from clos.cli.main import app
from clos.results import key_numbers
from clos.scenario import Scenario

# Hosts that exchange with the VM (AA 0) in vm-migration.toml, and the peers among themselves.
PEERS = {1, 21, 41, 61}
# The directory service's slowest measured lookup (latency.json: lookups at 25,000/s, max).
SLOWEST_LOOKUP_S = 2.297e-3


@pytest.fixture(scope="module")
def moved() -> clos.Results:
    return clos.run("vm-migration")


def test_a_vm_migration_heals_only_after_the_update_commits(moved: clos.Results):
    summary = moved.summary
    packets = summary["packets"]
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    assert summary["flows"]["finished"] == summary["flows"]["count"]
    (move,) = summary["directory"]["migrations"]
    assert (move["from"], move["to"], move["to_tor"]) == ("h0", "h60", "tor3")
    # Until the update commits the directory still maps AA 0 to tor0, so reports correct
    # nothing, and h70's lookup (at 2 ms, after the move) returns the old place.
    updated = move["directory_updated_s"]
    assert updated == move["update_latency_s"] > 0
    assert move["reports_unanswered"] > 0 and move["stale_answers"] == 1
    assert move["misdelivered"] >= move["reports"] > move["corrections"] > 0
    # Every sender that used the old mapping was corrected, after the commit, and sent with the
    # old mapping only before its correction arrived.
    assert move["stale_senders"] == 5 and move["stale_senders_left"] == 0
    assert updated < move["senders_converged_s"]
    assert move["last_stale_send_s"] < move["senders_converged_s"]
    assert move["first_delivery_s"] > updated
    # h50 mapped AA 0 before the move and never sent to it again: its entry stays stale.
    assert move["stale_caches_at_end"] == 1


def test_the_move_stalls_the_vms_flows_and_leaves_the_others_alone(moved: clos.Results):
    flows = moved.flows
    vm = flows.filter((flows["src"] == 0) | (flows["dst"] == 0))
    between_peers = flows.filter(flows["src"].is_in(PEERS) & flows["dst"].is_in(PEERS))
    assert len(between_peers) == 12
    assert between_peers["timeouts"].sum() == 0
    # The VM's long flows all lose their windows and wait for retransmission timeouts; only the
    # 5 KB exchange with h50, over before the move, is untouched.
    long_vm = vm.filter(vm["bytes"] > 5_000)
    assert len(long_vm) == 10 and long_vm["timeouts"].min() >= 1


def test_an_update_committed_at_the_switchover_heals_within_one_exchange(moved: clos.Results):
    quick = clos.run(Scenario.load("vm-migration", ["directory.update_latency=0s"]))
    (move,) = quick.summary["directory"]["migrations"]
    assert move["reports_unanswered"] == 0 and move["stale_answers"] == 0
    # The last stale sender is corrected at most one report-and-correction exchange (timed like
    # a lookup: at most the measured maximum plus the network round trip) after its last stale
    # packet reached tor0, and that packet got there within 1 ms of leaving the agent (a window
    # queued at a 1 Gb/s NIC, then a few microseconds of fabric).
    rtt = quick.summary["directory"]["network_rtt_s"]
    healed = move["senders_converged_s"] - move["last_stale_send_s"]
    assert healed <= SLOWEST_LOOKUP_S + rtt + 1e-3
    assert move["senders_converged_s"] < 5e-3
    slow = moved.summary["goodput"]["completion_time_s"]
    assert quick.summary["goodput"]["completion_time_s"] < slow / 2


def test_the_section_and_its_key_numbers_appear_only_with_the_table(
    tiny: Path, moved: clos.Results
):
    plain = clos.run(tiny)
    assert "directory" not in plain.summary
    sections = {row[0] for row in key_numbers.rows([plain])}
    assert "directory" not in sections
    converged = moved.get("directory", "migrations")[0]["senders_converged_s"]
    shown = key_numbers.rows([plain, moved])
    rows = [row for row in shown if row[1] == "caches converged"]
    assert rows == [("", "caches converged", "-", f"{converged * 1e3:.3f} ms")]


def test_lookups_and_cache_hits_on_a_tiny_fabric(tiny: Path):
    on = clos.run(Scenario.load(tiny, ["directory.lookup_latency=300us"]))
    plain = clos.run(tiny)
    d = on.summary["directory"]
    # A permutation of 4 hosts: each host looks up its destination and its source (for ACKs).
    assert (d["lookups"], d["cache_hits"]) == (8, 0)
    assert d["lookup_wait_mean_s"] == pytest.approx(300e-6, abs=1e-12)
    # Every flow waits 300 us for its first window.
    slower = on.flows["fct_ps"] - plain.flows["fct_ps"]
    assert slower.min() >= 300 * 10**6


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            'directory.migrations=[{at = "1ms", aa = 9, to = 1}]',
            "directory.migrations[0].aa: host 9 does not exist; the fabric has hosts 0-3",
        ),
        (
            'directory.migrations=[{at = "1ms", aa = 0, to = 1}]',
            "directory.migrations[0].to: host 1 is under tor0, where AA 0 already is",
        ),
        (
            'directory.migrations=[{at = "1ms", aa = 0, to = "tor1"}, {at = "1ms", aa = 0, to = 0}]',
            "directory.migrations[1].at: 1ms is not after AA 0's previous move",
        ),
        ("directory.lookup_latency=fast", "directory.lookup_latency: `fast` does not start"),
        ("directory.cache_ttl=0", "directory.cache_ttl: must be positive"),
    ],
    ids=["unknown host", "same ToR", "out of order", "latency", "ttl"],
)
def test_bad_directory_input_names_the_field(
    runner: CliRunner, tiny: Path, assignment: str, message: str
):
    result = runner.invoke(app, ["validate", str(tiny), "--set", assignment])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stderr.startswith(f"error: {message}"), result.stderr


def test_validate_describes_the_directory(runner: CliRunner):
    result = runner.invoke(app, ["validate", "vm-migration"])
    assert result.exit_code == 0, result.output
    assert "VL2 directory, 1 migration;" in " ".join(result.stdout.split())
