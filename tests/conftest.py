"""Shared fixtures: a scenario small enough that a full simulation takes a blink."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

TINY = """\
name = "tiny"
seed = 1
stop = "all_flows_done"

[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate = "10Gbps"
fabric_rate = "10Gbps"

[routing]
scheme = "ecmp"

[transport]
kind = "tcp"

[workload]
kind = "permutation"
bytes = "200KB"
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
