"""The partitioned engine from the command line and the library (docs/parallel.md): the same
results at every thread count, the engine in the run's table, `clos bench --threads`, and one
clear error for what it cannot run. The engine's own tests (`sim/parallel.rs`) check identity on
every table at 1 to 4 threads, and that one partition is the sequential run event for event."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import clos
from clos.cli.main import app


def computed(folder: Path) -> tuple[dict, pl.DataFrame, pl.DataFrame]:
    """A saved run's summary without what the run cost or how it ran, and its flow and link
    tables."""
    summary = json.loads((folder / "summary.json").read_text())
    for key in ("stats", "run", "scenario"):
        summary.pop(key, None)
    return (
        summary,
        pl.read_parquet(folder / "flows.parquet"),
        pl.read_parquet(folder / "links.parquet"),
    )


def test_clos_run_gives_the_same_results_on_one_and_two_threads(runner: CliRunner, tmp_path: Path):
    saved = {}
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        result = runner.invoke(
            app, ["run", "fat-tree-k4", "--threads", str(threads), "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        assert f"partitioned: 4 partitions on {threads} thread" in result.output
        saved[threads] = computed(out)
    one, two = saved[1], saved[2]
    assert one[0] == two[0]
    assert one[1].equals(two[1])
    assert one[2].equals(two[2])


def test_partitions_joined_as_the_page_shows(runner: CliRunner, tmp_path: Path):
    args = [
        "run",
        "fat-tree-k4",
        "--threads",
        "2",
        "--set",
        "run.partitions=2",
        "--out",
        str(tmp_path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "partitioned: 2 partitions on 2 threads" in result.output


def test_a_sequential_run_says_so(runner: CliRunner, tmp_path: Path):
    result = runner.invoke(app, ["run", "fat-tree-k4", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "sequential" in result.output


def test_the_library_takes_threads_from_the_scenario():
    results = clos.run("fat-tree-k4", overrides=["run.threads=2", "run.partitions=2"])
    stats = results.summary["stats"]
    assert (stats["engine"], stats["threads"], stats["partitions"]) == ("partitioned", 2, 2)
    packets = results.summary["packets"]
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]


def test_bench_threads_reports_speedup_and_identity(runner: CliRunner):
    result = runner.invoke(app, ["bench", "--only", "b1", "--threads", "1,2"])
    assert result.exit_code == 0, result.output
    assert "sequential" in result.output
    assert "2 threads" in result.output
    assert "NO" not in result.output
    assert result.output.count("yes") == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "fat-tree-k4", "--threads", "0"], "run.threads"),
        (["run", "fat-tree-k4", "--set", "run.partitions=2"], "run.partitions"),
        (["run", "fat-tree-k4", "--threads", "2", "--set", "run.partitions=9"], "4 partitions"),
        (["run", "vl2-testbed", "--threads", "2", "--set", "routing.scheme=conga"], "CONGA"),
        (["bench", "--only", "b1", "--threads", "0,2"], "at least 1"),
        (["run", "fat-tree-k4", "--set", "run=3"], "run"),
    ],
)
def test_what_it_cannot_run_is_one_clear_error(
    runner: CliRunner, args: list[str], message: str, tmp_path: Path
):
    result = runner.invoke(app, [*args, *(["--out", str(tmp_path)] if args[0] == "run" else [])])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
