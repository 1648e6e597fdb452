"""`clos run`: a scenario goes in, a results folder comes out, and the packet books balance."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clos.cli.main import app
from clos.results.saved_files import FILES


def summary_of(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_run_writes_results_and_conserves_packets(runner: CliRunner, tiny: Path, tmp_path: Path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(tiny), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {path.name for path in out.iterdir()} == set(FILES)
    assert "completion time" in result.stdout
    # Duplicate ACKs come from loss as well as reordering: their section says both.
    assert "dupACKs and reordering" in result.stdout

    packets = summary_of(out)["packets"]
    assert packets["sent"] > 0
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    flows = summary_of(out)["flows"]
    assert flows["count"] == flows["finished"] == 4


def test_a_run_that_hits_its_time_limit_before_its_last_flow_says_so(
    runner: CliRunner, tiny: Path, tmp_path: Path
):
    # Under all_flows_done, flows that start after max_time never finish; the table would show
    # the finished ones' FCTs as if they were all. The tiny scenario's four 200 KB flows take
    # well under a millisecond at 10 Gb/s, so a 1 ms cap with starts spread over 20 ms leaves
    # flows unfinished, and the cap alone leaves none.
    jittered = ["--set", "max_time=1ms", "--set", "workload.start_jitter=20ms"]
    result = runner.invoke(app, ["run", str(tiny), "--out", str(tmp_path / "a"), *jittered])
    assert result.exit_code == 0, result.output
    flows = summary_of(tmp_path / "a")["flows"]
    assert flows["finished"] < flows["count"] == 4
    assert f"{4 - flows['finished']} of 4 flows unfinished" in " ".join(result.stderr.split())
    capped = ["--set", "max_time=1ms"]
    result = runner.invoke(app, ["run", str(tiny), "--out", str(tmp_path / "b"), *capped])
    assert result.exit_code == 0 and "unfinished" not in result.stderr


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


def test_efficiency_is_not_shown_for_open_loop_workloads(
    runner: CliRunner, tiny: Path, tmp_path: Path
):
    """An open-loop workload's goodput is what it offers, so its efficiency measures the load:
    the run table says so instead of printing a percentage (issue 35)."""
    text = tiny.read_text().replace(
        'kind = "permutation"\nbytes = "200KB"',
        'kind = "poisson"\nload = 0.3\ncdf = "websearch_dctcp"\nstop = "1ms"',
    )
    tiny.write_text(text)
    result = runner.invoke(
        app, ["run", str(tiny), "--out", str(tmp_path / "out")], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert "- (open loop)" in result.stdout


def test_runs_that_differ_by_overrides_land_in_different_folders(
    runner: CliRunner, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`--set` never replaces the plain run's results: each set of overrides has its own folder,
    and the summary records the overrides and the clos that ran them (issue 35)."""
    monkeypatch.chdir(tmp_path)
    for args in ([], ["--set", "routing.scheme=spray-random"], ["--set", "seed=2"]):
        assert runner.invoke(app, ["run", str(tiny), "--quiet", *args]).exit_code == 0
    folders = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert (
        len(folders) == 3
        and folders[0] == "tiny"
        and all(f.startswith("tiny-") for f in folders[1:])
    )
    runs = [
        json.loads((tmp_path / "results" / f / "summary.json").read_text())["run"] for f in folders
    ]
    assert sorted(r["overrides"] for r in runs) == [[], ["routing.scheme=spray-random"], ["seed=2"]]
    assert all(r["clos"].startswith("clos ") for r in runs)


def test_init_writes_a_starter_that_runs_and_never_replaces_a_file(tmp_path: Path):
    runner = CliRunner()
    path = tmp_path / "mine.toml"
    first = runner.invoke(app, ["init", str(path)])
    assert first.exit_code == 0, first.output
    lines = path.read_text().splitlines()
    # Every section is explained by the comment just above it.
    sections = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert len(sections) >= 5
    assert all(lines[i - 1].startswith("#") for i in sections)
    run = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert run.exit_code == 0, run.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["flows"]["finished"] > 0
    path.write_text("# mine\n")
    again = runner.invoke(app, ["init", str(path)])
    assert again.exit_code == 2
    assert "exists" in again.output and path.read_text() == "# mine\n"


def test_shell_completion_completes_commands_and_options():
    import os
    import subprocess
    import sys

    clos = Path(sys.executable).parent / "clos"
    env = {
        **os.environ,
        "_CLOS_COMPLETE": "complete_bash",
        "COMP_WORDS": "clos re",
        "COMP_CWORD": "1",
    }
    done = subprocess.run([clos], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["report", "reproduce"]


def test_a_run_records_its_scenario_and_reruns_from_it_bit_for_bit(tmp_path: Path):
    runner = CliRunner()
    first, second = tmp_path / "first", tmp_path / "second"
    args = ["run", "leaf-spine-permutation", "--set", "routing.scheme=drill", "--quiet"]
    assert runner.invoke(app, [*args, "--out", str(first)]).exit_code == 0
    text = (first / "scenario.toml").read_text()
    assert "# overrides given: --set routing.scheme=drill" in text
    rerun = ["run", str(first / "scenario.toml"), "--out", str(second), "--quiet"]
    assert runner.invoke(app, rerun).exit_code == 0
    a, b = (json.loads((f / "summary.json").read_text()) for f in (first, second))
    for volatile in ("stats", "run"):  # timings, and how each was asked for
        a.pop(volatile), b.pop(volatile)
    assert a == b


def test_the_run_table_is_drawn_as_rich_draws_it():
    # cli/box_table.py draws the run table in rich's HEAVY_HEAD layout without importing rich;
    # the same rows through rich must give the same text, and styling only adds escapes.
    import re

    from rich.console import Console
    from rich.table import Table

    from clos.cli.box_table import BoxTable

    rows = [
        ["stats", "events", "11,130,367"],
        ["", "CPU time", "567 ms"],
        None,
        ["flows", "n", "4"],
    ]
    ours = BoxTable("b1", [("section", "left"), ("quantity", "left"), ("value", "right")])
    theirs = Table(title="b1")
    for header, justify in (("section", "left"), ("quantity", "left"), ("value", "right")):
        theirs.add_column(header, justify=justify)
    for row in rows:
        if row is None:
            ours.add_section()
            theirs.add_section()
        else:
            ours.add_row(*row)
            theirs.add_row(*row)
    console = Console(width=200, record=True)
    console.print(theirs)
    expected = "\n".join(line.rstrip() for line in console.export_text().splitlines())
    assert "\n".join(line.rstrip() for line in ours.render().splitlines()) == expected
    styled = ours.render(styled=True)
    assert "\x1b[1mstats\x1b[0m" in styled
    assert re.sub(r"\x1b\[\d+m", "", styled) == ours.render()
