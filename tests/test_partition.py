"""`clos partition` and `clos.partition` (docs/parallel.md): the commands the page documents, run
on small bundled fabrics, with the numbers computed by hand there.

By hand (docs/parallel.md, `topology/partition.rs`): a k = 4 fat tree is 4 partitions (one per
pod, core i with pod i) of 4 hosts, 5 switches and 24 ports each; of its 48 links the 12
aggregation-core links to the other pods' cores are cut. Every cut link is 10 Gb/s with 1 us of
propagation, so the lookahead is 1 us + 84 bytes at 10 Gb/s = 1.0672 us. The leaf-spine
permutation (4 leaves, 2 spines): 4 partitions, spine j with leaf j, 6 of its 8 leaf-spine links
cut (24 links in all). The VL2 testbed: 3 aggregation switches, one partition each, 40/20/20
hosts, 10 of 97 links cut.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import clos
from clos.cli.main import app

LOOKAHEAD_PS = 1_000_000 + 67_200


def test_k4_fat_tree_by_hand(runner: CliRunner) -> None:
    result = runner.invoke(app, ["partition", "fat-tree-k4"])
    assert result.exit_code == 0, result.output
    assert "one per pod" in result.output
    assert "12 of 48" in result.output
    assert "1.0672 us" in result.output
    cut = clos.partition("fat-tree-k4")
    assert cut["partitions"] == 4
    assert cut["hosts"] == {"min": 4, "mean": 4.0, "max": 4}
    assert cut["switches"] == {"min": 5, "mean": 5.0, "max": 5}
    assert cut["ports"] == {"min": 24, "mean": 24.0, "max": 24}
    assert cut["cut_links"] == 12
    assert cut["lookahead_ps"] == LOOKAHEAD_PS
    # Hosts run with their pod: hosts 0-3 are pod 0's, 12-15 pod 3's.
    assert cut["of_node"][:16] == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4


def test_leaf_spine_and_vl2_by_hand() -> None:
    leaf_spine = clos.partition("leaf-spine-permutation")
    assert (leaf_spine["partitions"], leaf_spine["cut_links"], leaf_spine["links"]) == (4, 6, 24)
    assert leaf_spine["lookahead_ps"] == LOOKAHEAD_PS
    vl2 = clos.partition("vl2-testbed")
    assert (vl2["partitions"], vl2["cut_links"], vl2["links"]) == (3, 10, 97)
    assert vl2["hosts"]["min"] == 20 and vl2["hosts"]["max"] == 40
    # The cut links are the 10 Gb/s fabric links: the same lookahead.
    assert vl2["lookahead_ps"] == LOOKAHEAD_PS


def test_analysis_of_a_short_run(runner: CliRunner) -> None:
    """The documented `--analyse` on the k = 4 fat tree, for 200 us: every event is some
    partition's or global; windows are at least a lookahead apart, so there are at most
    200 us / 1.0672 us + 1 of them besides the global steps; the speedup never exceeds the
    thread count nor the partition count (4), and barriers only lower it."""
    result = runner.invoke(
        app, ["partition", "fat-tree-k4", "--analyse", "200us", "--threads", "1,2,4,8"]
    )
    assert result.exit_code == 0, result.output
    assert "estimated speedup" in result.output
    out = clos.partition("fat-tree-k4", analyse="200us", threads=[1, 2, 4, 8])
    a = out["analysis"]
    assert a["simulated_ps"] == 200_000_000
    assert a["events"] > 10_000
    assert a["windows"] <= 200_000_000 // LOOKAHEAD_PS + 1 + a["global_steps"]
    assert a["per_partition"]["mean"] * 4 + a["global_events"] == pytest.approx(a["events"])
    # A cross-pod packet's 6 arrivals include 1 or 2 over cut links (at and from its core).
    assert 1 / 6 * 0.8 < a["crossing_fraction"] < 2 / 6
    assert [e["threads"] for e in a["estimates"]] == [1, 2, 4, 8]
    for e in a["estimates"]:
        assert e["speedup"] <= e["balance_bound"] <= min(e["threads"], 4) + 1e-9
    assert a["estimates"][0]["balance_bound"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threads", "2,x"], "--threads: expected whole numbers"),
        (["--analyse", "1ms", "--threads", "0"], "threads: give whole numbers"),
        (["--analyse", "1xs"], "analyse: '1xs' is not a simulated duration"),
    ],
)
def test_bad_input_is_one_clear_error(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["partition", "fat-tree-k4", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("scenario", "partitions"),
    [
        ("python/clos/data/bench/b2-fat-tree-k16.toml", 16),  # one per pod
        ("vl2-testbed", 3),  # one per aggregation switch (3 is odd)
        ("python/clos/data/bench/b4-leaf-spine-drill.toml", 16),  # one per leaf
    ],
)
def test_the_pages_reproduce_commands_run(runner: CliRunner, scenario: str, partitions: int):
    # docs/parallel.md's "Reproduce" block, as written; the numbers it reports are measured
    # there, so only their structure is checked here: the speedup never passes the partition
    # count (the balance bound) nor the thread count.
    result = runner.invoke(app, ["partition", scenario, "--analyse", "2ms"])
    assert result.exit_code == 0, result.output
    assert "estimated speedup" in result.output
    out = clos.partition(scenario, analyse="2ms", threads=[2, 16])
    assert out["partitions"] == partitions
    for e in out["analysis"]["estimates"]:
        assert e["speedup"] <= e["balance_bound"] <= min(e["threads"], partitions) + 1e-9
