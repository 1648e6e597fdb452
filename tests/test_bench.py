"""`clos bench` written to a file or a pipe keeps every number whole (rich assumes 80 columns
for output that is not a terminal, which cut the benchmark table's cells to "…")."""

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


def test_bench_times_the_command_around_the_core(runner: CliRunner):
    # `clos run` as a new process includes the core's own run, so its wall time is the larger:
    # the ratio is at least 1 whatever the machine (its 1.2x target is measured, not tested).
    result = runner.invoke(app, ["bench", "--command", "--only", "b1"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "b1-fat-tree-k8" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert float(cells[3]) > 1.0, cells
    assert cells[4].startswith("<= 1.2x"), cells
