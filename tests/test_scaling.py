"""`clos bench --scaling`: the scaling curve's scenarios differ only in the fabric's size, and the
smallest point runs (the others take minutes; docs/performance.md has their numbers)."""

import tomllib

from typer.testing import CliRunner

from clos.cli.bench import SCALING, bench_files
from clos.cli.main import app


def test_scaling_points_carry_the_same_traffic_on_growing_fat_trees():
    tables = [tomllib.loads(path.read_text()) for path in bench_files(folder=SCALING)]
    assert [table["topology"]["k"] for table in tables] == [8, 16, 24, 32]
    for table in tables:
        del table["name"], table["topology"]["k"]
    assert all(table == tables[0] for table in tables)


def test_smallest_scaling_point_reports_hosts_and_cost_per_event(runner: CliRunner):
    result = runner.invoke(app, ["bench", "--scaling", "--only", "scaling-k8"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "scaling-k8" in line)
    assert row.split("│")[2].strip() == "128"
    assert "ns/event" in result.stdout
