"""`clos reproduce`: the repository's claims files, the claim language, the verdicts, and an
end-to-end reproduction of a tiny paper."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

import clos
from clos.cli.main import app
from clos.reproduce.experiments import SCALES, experiments_root, load_paper, load_papers
from clos.reproduce.verdicts import judge, passed, select
from clos.sweep.batch import RunRecord

EXPERIMENTS = Path(__file__).resolve().parents[1] / "python" / "clos" / "data" / "experiments"


def test_every_repository_experiment_is_a_valid_scenario_at_both_scales():
    papers = load_papers(experiments_root(EXPERIMENTS))
    assert set(papers) >= {"vl2", "plts", "drill", "localflow"}
    for paper in papers.values():
        assert paper.claims, paper.key
        for experiment in paper.experiments.values():
            if experiment.kind != "scenario":
                continue  # no scenario: tests/test_multicast_eval.py checks multicast-eval runs
            for scale in SCALES:
                for run in experiment.runs:
                    # Raises ScenarioError naming the field if an override does not apply.
                    clos.validate(experiment.scenario_for(scale, run))


def write_paper(root: Path, tiny: Path, claims: str) -> Path:
    folder = root / "toy"
    folder.mkdir(parents=True)
    (folder / "tiny.toml").write_text(tiny.read_text())
    (folder / "claims.toml").write_text(
        'title = "Toy: a paper about ECMP and spraying"\n\n'
        "[experiments.perm]\n"
        'scenario = "tiny.toml"\n'
        'small = ["workload.bytes=100KB"]\n'
        "runs.ecmp = []\n"
        'runs.spray = ["routing.scheme=spray-rr"]\n'
        'plot = { key = "goodput.aggregate_bps", label = "goodput" }\n\n' + claims
    )
    return folder / "claims.toml"


RATIO = """
[[claims]]
name = "ratio"
title = "spraying moves at least ECMP's bytes per second"
paper = 1.0
ours = "perm.spray.goodput.aggregate_bps / perm.ecmp.goodput.aggregate_bps"
close = 0.5
holds = "ours > 0.5"
"""


@pytest.mark.parametrize(
    ("ours", "holds", "message"),
    [
        ("__import__('os')", "ours > 1", "claims[0].ours"),
        ("perm.nope.goodput.jain", "ours > 1", "has no run 'nope'"),
        ("other.ecmp.goodput.jain", "ours > 1", "no experiment named 'other'"),
        ("perm.ecmp.goodput.jain", "ours == 1", "claims[0].holds"),
        ("perm.ecmp.goodput.jain", "ours > 1 or ours < 0", "with `and` only"),
    ],
)
def test_claim_mistakes_are_reported_naming_the_field(
    tmp_path: Path, tiny: Path, ours: str, holds: str, message: str
):
    claims = f'[[claims]]\nname = "x"\ntitle = "x"\nours = "{ours}"\nholds = "{holds}"\n'
    path = write_paper(tmp_path, tiny, claims)
    with pytest.raises(clos.ScenarioError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_paper(path)


def record(summary: dict) -> RunRecord:
    return RunRecord(parameters={}, name="r", key="k", summary=summary, folder=None, cached=False)


def verdicts_for(tmp_path: Path, tiny: Path, claims: str, ecmp: float, spray: float):
    paper = load_paper(write_paper(tmp_path, tiny, claims))
    records = {
        ("toy", "perm", "ecmp"): record({"goodput": {"aggregate_bps": ecmp}}),
        ("toy", "perm", "spray"): record({"goodput": {"aggregate_bps": spray}}),
    }
    return judge(paper.claims, {"toy": paper}, records)


@pytest.mark.parametrize(
    ("spray", "status"),
    [(1.2, "matches"), (1.8, "deviates"), (0.4, "FAILS"), (None, "missing")],
)
def test_verdicts(tmp_path: Path, tiny: Path, spray: float | None, status: str):
    (verdict,) = verdicts_for(tmp_path, tiny, RATIO, 1.0, spray)  # type: ignore[arg-type]
    assert verdict.status == status
    assert passed([verdict]) == (status in ("matches", "deviates"))


def test_a_known_deviation_is_reported_but_does_not_fail(tmp_path: Path, tiny: Path):
    claims = RATIO + 'known_deviation = "we know"\n'
    (verdict,) = verdicts_for(tmp_path, tiny, claims, 1.0, 0.4)
    assert (verdict.status, verdict.note) == ("differs", "we know")
    assert passed([verdict])


@pytest.mark.parametrize("width", [60, 80, 200])
def test_the_terminal_table_fits_its_width_and_keeps_the_numbers(
    tmp_path: Path, tiny: Path, width: int
):
    from rich.console import Console

    from clos.reproduce.page import verdict_table

    claims = RATIO + 'known_deviation = "' + "a long explanation " * 20 + '"\n'
    verdicts = verdicts_for(tmp_path, tiny, claims, 1.0, 0.4)
    console = Console(width=width, record=True, color_system=None)
    console.print(verdict_table(verdicts, "toy", width))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    # Ours (0.4), the ratio and the verdict survive at any width; the note gives way first.
    assert "0.4" in text and "differs" in text


def test_goodput_between_reads_a_window_of_the_time_series(tmp_path: Path, tiny: Path):
    """A window is given as fractions of the run; the value is the bytes of the bins that start
    in it over the window's length, as summing the saved time series by hand gives it."""
    from clos.reproduce.claim_expr import Node, goodput_between

    results = clos.run(clos.Scenario.load(tiny, ["stop=4ms", "output.bin=1ms"]))
    results.save(tmp_path / "run")
    run = Node(results.summary, "toy.run", lambda: clos.Results.load(tmp_path / "run"))
    series = results.timeseries
    by_hand = series.filter(series["bin_start_ps"] >= 1_000_000_000)["bytes"].sum() * 8 / 3e-3
    assert goodput_between(run, 0.25, 1) == pytest.approx(by_hand, rel=1e-12)
    assert goodput_between(run, 0, 1) * 4 == pytest.approx(
        goodput_between(run, 0, 0.25) + 3 * by_hand
    )


def test_only_names_unknown_claims(tmp_path: Path, tiny: Path):
    write_paper(tmp_path, tiny, RATIO)
    papers = load_papers(tmp_path)
    with pytest.raises(clos.ScenarioError, match="--only nope"):
        select(papers, "toy", ["nope"])
    with pytest.raises(clos.ScenarioError, match="no paper 'vl3'"):
        select(papers, "vl3")


def test_reproduce_runs_a_tiny_paper_end_to_end(runner: CliRunner, tmp_path: Path, tiny: Path):
    write_paper(tmp_path / "papers", tiny, RATIO)
    out = tmp_path / "out"
    args = ["reproduce", "toy", "--experiments", str(tmp_path / "papers"), "--out", str(out)]
    result = runner.invoke(app, [*args, "--workers", "1", "-q"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "claims.csv").open()))
    assert [r["verdict"] for r in rows] in (["matches"], ["deviates"])
    # The value is the ratio of the two runs, as running them directly gives it (runs are
    # deterministic, so exactly).
    small = tiny.read_text().replace('bytes = "200KB"', 'bytes = "100KB"')
    (tmp_path / "direct.toml").write_text(small)
    ecmp, spray = (
        clos.run(clos.Scenario.load(tmp_path / "direct.toml", [f"routing.scheme={s}"]))
        for s in ("ecmp", "spray-rr")
    )
    expected = spray.get("goodput", "aggregate_bps") / ecmp.get("goodput", "aggregate_bps")
    assert float(rows[0]["ours"]) == pytest.approx(expected, rel=1e-12)
    assert (out / "reproduce.html").is_file() and (out / "plots" / "toy-perm.png").is_file()
    # A second reproduction finds every run in the cache.
    again = runner.invoke(app, [*args, "--workers", "1", "-q"])
    assert again.exit_code == 0 and list(csv.DictReader((out / "claims.csv").open())) == rows
    listed = runner.invoke(app, [*args[:4], "--list"])
    assert listed.exit_code == 0 and "toy/ratio" in listed.output


def test_a_flipped_claim_exits_1(runner: CliRunner, tmp_path: Path, tiny: Path):
    flipped = RATIO.replace('holds = "ours > 0.5"', 'holds = "ours > 100"')
    write_paper(tmp_path / "papers", tiny, flipped)
    args = ["reproduce", "toy", "--experiments", str(tmp_path / "papers")]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out"), "--workers", "1", "-q"])
    assert result.exit_code == 1
    assert "FAILS" in result.output


def test_the_documented_claims_example_loads(tmp_path: Path):
    docs = (Path(__file__).resolve().parents[1] / "docs" / "reproduction.md").read_text()
    (example,) = [b for b in docs.split("```toml\n")[1:2]]
    folder = tmp_path / "vl2"
    folder.mkdir()
    (folder / "claims.toml").write_text(example.split("```")[0])
    (folder / "shuffle.toml").write_text((EXPERIMENTS / "vl2" / "shuffle.toml").read_text())
    paper = load_paper(folder / "claims.toml")
    assert [c.name for c in paper.claims] == ["shuffle-efficiency"]
    assert set(paper.experiments["shuffle"].runs) == {"vlb", "tcp"}


def test_runs_named_series_and_number_plot_as_lines():
    from clos.reproduce.page import _series

    got = _series(["ecmp_10", "drill_10", "ecmp_50"], [1.0, 0.9, 2.0])
    assert got == {"ecmp": [(10.0, 1.0), (50.0, 2.0)], "drill": [(10.0, 0.9)]}
    # One run not so named and the experiment stays a bar chart.
    assert _series(["ecmp_10", "drill_600KB"], [1.0, 2.0]) == {}


def test_only_runs_just_what_the_named_claims_read():
    from clos.reproduce.experiments import experiments_root, load_papers
    from clos.reproduce.verdicts import needed_runs, select

    papers = load_papers(experiments_root())
    claims = select(papers, "drill", ["engines-do-not-matter"])
    assert sorted(run for _, run in needed_runs(papers, claims, only_read=True)) == [
        "drill",
        "drill_48_engines",
    ]
    # A whole reproduction runs every run of the experiments (the plots show them all).
    assert len(needed_runs(papers, claims)) == len(papers["drill"].experiments["fb80"].runs)
