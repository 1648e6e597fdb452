"""`clos bench` written to a file or a pipe keeps every number whole (rich assumes 80 columns
for output that is not a terminal, which cut the benchmark table's cells to "…")."""

import pytest
from typer.testing import CliRunner

from clos.cli.main import app


def test_piped_bench_table_cuts_no_number(runner: CliRunner):
    result = runner.invoke(app, ["bench", "--only", "b1"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    row = next(line for line in result.stdout.splitlines() if "b1-fat-tree-k8" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    # name, CPU, wall, events, events/s, ...: B1 runs about ten million events (docs/performance.md).
    events = int(cells[3].replace(",", ""))
    assert 5_000_000 < events < 20_000_000, cells
    assert cells[-1].startswith("<= 1.0 CPU s"), cells


def test_bench_times_the_command_beside_the_binary(runner: CliRunner):
    # `clos run` and the Rust example binary (or the core's own run, where the binary is not
    # built), CPU and wall seconds; the ratios are the table's own division (the 1.2x target is
    # measured, docs/performance.md, not tested: a loaded machine moves it).
    result = runner.invoke(app, ["bench", "--command", "--only", "b1", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "b1-fat-tree-k8" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells[2] in ("binary", "core"), cells
    seconds = [_seconds(cells[i]) for i in (1, 3, 5, 6)]
    if cells[2] == "core":  # the command includes the core's own run
        assert seconds[0] > seconds[1] and seconds[2] > seconds[3], cells
    assert float(cells[4]) == pytest.approx(seconds[0] / seconds[1], abs=0.06), cells
    assert cells[8].startswith("<= 1.2x"), cells


def _seconds(cell: str) -> float:
    """`units.duration`'s text ("588.546 ms", "1.2 s") in seconds."""
    value, unit = cell.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]
