"""`clos run`: a scenario goes in, a results folder comes out, and the packet books balance."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clos.cli import app
from clos.results import FILES


def summary_of(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_run_writes_results_and_conserves_packets(runner: CliRunner, tiny: Path, tmp_path: Path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(tiny), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {path.name for path in out.iterdir()} == set(FILES)
    assert "completion time" in result.stdout

    packets = summary_of(out)["packets"]
    assert packets["sent"] > 0
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    flows = summary_of(out)["flows"]
    assert flows["count"] == flows["finished"] == 4


def test_run_saves_under_results_and_scenario_name_by_default(
    runner: CliRunner, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", str(tiny), "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert (tmp_path / "results" / "tiny" / "summary.json").is_file()


def test_set_overrides_reach_the_core(runner: CliRunner, tiny: Path, tmp_path: Path):
    out = tmp_path / "out"
    args = ["run", str(tiny), "--out", str(out), "--quiet"]
    args += ["--set", "seed=7", "--set", "routing.scheme=vlb", "--set", 'workload.bytes="100KB"']
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    scenario = summary_of(out)["scenario"]
    assert scenario["seed"] == 7
    assert scenario["routing"]["scheme"] == "vlb"


def test_default_run_compares_ecmp_and_vlb(runner: CliRunner, tmp_path: Path):
    overrides = ["--set", "workload.hosts=4", "--set", "workload.bytes=100KB"]
    result = runner.invoke(app, ["run", *overrides, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for scheme in ("ecmp", "vlb"):
        assert summary_of(tmp_path / scheme)["scenario"]["routing"]["scheme"] == scheme
        assert scheme in result.stdout
    assert "Jain fairness" in result.stdout
