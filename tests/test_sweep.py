"""Sweeps: a spec's cross product runs once per distinct scenario, in the spec's order, resumes
from its cache, and gives the same table on the local pool and on Dask.

Runs are the 4-host `tiny` fabric (a millisecond of CPU each), mostly in-process (`workers=1`)
so that a monkeypatched `clos.executors.simulate` sees every simulation.
"""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import dask
import polars as pl
import pytest
from distributed import LocalCluster
from typer.testing import CliRunner

import clos
from clos.cli.main import app
from clos.results.saved_files import FILES, SUMMARY
from clos.scenario import Scenario
from clos.sweep import executors
from clos.sweep.batch import COLUMNS, RUN_COLUMN, TIMING_COLUMNS, run_many, summary_table
from clos.sweep.run_cache import scenario_key
from clos.sweep.stats import interval, seed_statistics, t975
from clos.sweep.sweep import SweepResult, SweepSpec, bundled_spec_names, run_sweep

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "python" / "clos" / "data" / "sweeps" / "ecmp-vs-drill.toml"
DOCS = (ROOT / "docs" / "sweeps.md").read_text()
README = (ROOT / "README.md").read_text()

SPEC = """\
base = "tiny.toml"
seeds = 2

[set]
"workload.bytes" = "50KB"

[parameters]
"routing.scheme" = ["ecmp", "spray-random"]
transport.initial_window = [4, 10]
"""
SCHEMES = ["ecmp", "spray-random"]
WINDOWS = [4, 10]
SEEDS = [1, 2]
PARAMETERS = ["routing.scheme", "transport.initial_window", "seed"]
RUNS = len(SCHEMES) * len(WINDOWS) * len(SEEDS)


@pytest.fixture
def spec(tiny: Path) -> Path:
    path = tiny.parent / "sweep.toml"
    path.write_text(SPEC)
    return path


class Counter:
    """Counts the simulations `clos.executors.simulate` does; can stop after a few."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.calls = 0
        self.stop_after = stop_after

    def __call__(self, scenario_json: str, keep_tables: bool) -> executors.Outcome:
        if self.stop_after is not None and self.calls == self.stop_after:
            raise KeyboardInterrupt
        self.calls += 1
        return SIMULATE(scenario_json, keep_tables)


SIMULATE = executors.simulate


@pytest.fixture
def simulations(monkeypatch: pytest.MonkeyPatch) -> Counter:
    counter = Counter()
    monkeypatch.setattr(executors, "simulate", counter)
    return counter


def sweep_here(spec: Path, out: Path, tables: bool = True) -> SweepResult:
    return run_sweep(spec, out, workers=1, progress=False, tables=tables)


def without_timing(table: pl.DataFrame) -> pl.DataFrame:
    return table.drop(TIMING_COLUMNS)


def entries(out: Path) -> list[Path]:
    return sorted((out / "runs").iterdir())


def test_spec_runs_every_combination_in_the_specs_order(
    spec: Path, tmp_path: Path, simulations: Counter
):
    result = sweep_here(spec, tmp_path / "out")
    table = result.table

    assert simulations.calls == RUNS
    assert table.columns == [*PARAMETERS, RUN_COLUMN, *(column.column for column in COLUMNS)]
    assert table.select(PARAMETERS).rows() == list(itertools.product(SCHEMES, WINDOWS, SEEDS))
    assert table.schema["transport.initial_window"] == pl.Int64
    assert table.schema["fct_p99_s"] == pl.Float64 and table.schema["packets_sent"] == pl.Int64
    # Every run is a different scenario, and each ran what its row says.
    assert table[RUN_COLUMN].n_unique() == RUNS
    for row, record in zip(table.iter_rows(named=True), result.records, strict=True):
        scenario = record.summary["scenario"]
        assert scenario["routing"]["scheme"] == row["routing.scheme"]
        assert scenario["transport"]["initial_window"] == row["transport.initial_window"]
        assert scenario["seed"] == row["seed"]
        assert scenario["workload"]["bytes"] == 50_000
        assert row["flows"] == row["finished"] == 4
        assert row["packets_sent"] > 0 and 0 < row["efficiency"] <= 1
        assert row["cpu_seconds"] > 0
        assert clos.load_results(tmp_path / "out" / "runs" / row[RUN_COLUMN]).flows.height == 4

    assert pl.read_parquet(tmp_path / "out" / "sweep.parquet").equals(table)
    csv = pl.read_csv(tmp_path / "out" / "sweep.csv")
    assert csv.columns == table.columns and csv.height == RUNS


def test_rows_follow_the_spec_whatever_order_runs_finish(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    in_order = sweep_here(spec, tmp_path / "a").table
    forwards = executors.in_process

    def backwards(jobs: list[executors.Job], keep: bool) -> Iterator[tuple[str, executors.Outcome]]:
        return reversed(list(forwards(jobs, keep)))

    monkeypatch.setattr(executors, "in_process", backwards)
    reversed_finish = sweep_here(spec, tmp_path / "b").table
    assert without_timing(reversed_finish).equals(without_timing(in_order))


def test_rerun_takes_every_run_from_the_cache(spec: Path, tmp_path: Path, simulations: Counter):
    first = sweep_here(spec, tmp_path / "out")
    simulations.calls = 0
    again = sweep_here(spec, tmp_path / "out")

    assert simulations.calls == 0
    assert (again.simulated, again.from_cache) == (0, RUNS)
    # Timing columns too: nothing was simulated again, so they are the cached numbers.
    assert again.table.equals(first.table)


def test_interrupted_sweep_resumes_where_it_stopped(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    out = tmp_path / "out"
    monkeypatch.setattr(executors, "simulate", Counter(stop_after=3))
    with pytest.raises(KeyboardInterrupt):
        sweep_here(spec, out)
    assert len(entries(out)) == 3
    assert not (out / "sweep.parquet").exists()

    resumed = Counter()
    monkeypatch.setattr(executors, "simulate", resumed)
    result = sweep_here(spec, out)
    assert resumed.calls == RUNS - 3
    assert (result.simulated, result.from_cache) == (RUNS - 3, 3)
    assert len(entries(out)) == RUNS
    fresh = sweep_here(spec, tmp_path / "fresh").table
    assert without_timing(result.table).equals(without_timing(fresh))


def test_damaged_cache_entries_are_run_again(spec: Path, tmp_path: Path, simulations: Counter):
    out = tmp_path / "out"
    first = sweep_here(spec, out).table
    missing_table, truncated_summary, garbage_parquet, foreign, *_ = entries(out)
    (missing_table / "flows.parquet").unlink()
    summary_text = (truncated_summary / SUMMARY).read_text()
    (truncated_summary / SUMMARY).write_text(summary_text[: len(summary_text) // 2])
    (garbage_parquet / "links.parquet").write_bytes(b"not parquet at all")
    # A whole entry, but of another scenario (a folder copied over by hand).
    shutil.copy(entries(out)[-1] / SUMMARY, foreign / SUMMARY)

    simulations.calls = 0
    again = sweep_here(spec, out)
    assert simulations.calls == 4
    assert without_timing(again.table).equals(without_timing(first))
    for entry in entries(out):
        assert {path.name for path in entry.iterdir()} == set(FILES)
        clos.load_results(entry)


def test_summaries_only_entries_are_rerun_when_tables_are_wanted(
    spec: Path, tmp_path: Path, simulations: Counter
):
    out = tmp_path / "out"
    summaries_only = sweep_here(spec, out, tables=False)
    assert all({path.name for path in entry.iterdir()} == {SUMMARY} for entry in entries(out))

    with_tables = sweep_here(spec, out)
    assert simulations.calls == 2 * RUNS
    assert all({path.name for path in entry.iterdir()} == set(FILES) for entry in entries(out))
    assert without_timing(with_tables.table).equals(without_timing(summaries_only.table))

    sweep_here(spec, out, tables=False)
    assert simulations.calls == 2 * RUNS


def test_dask_cluster_gives_the_local_pools_table(spec: Path, tmp_path: Path):
    # Threads in this process keep the cluster's start-up under a second on two cores; the local
    # pool spawns two processes, so its results cross a process boundary.
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = run_sweep(
            spec, tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False
        )
    on_pool = run_sweep(spec, tmp_path / "pool", workers=2, progress=False)

    assert on_dask.simulated == on_pool.simulated == RUNS
    assert without_timing(on_dask.table).equals(without_timing(on_pool.table))
    assert sorted(path.name for path in entries(tmp_path / "dask")) == sorted(
        path.name for path in entries(tmp_path / "pool")
    )


def test_run_many_simulates_each_distinct_scenario_once(tiny: Path, simulations: Counter):
    base = Scenario.load(tiny)
    runs = [
        ({"label": "implicit seed"}, base),
        ({"label": "explicit seed"}, base.with_overrides(["seed=1"])),
        ({"label": "other seed"}, base.with_overrides(["seed=2"])),
    ]
    records = run_many(runs, cache=None, workers=1, progress=False)

    assert simulations.calls == 2
    assert [record.parameters["label"] for record in records] == [p["label"] for p, _ in runs]
    assert records[0].key == records[1].key != records[2].key
    assert records[0].summary == records[1].summary
    assert all(record.folder is None and not record.cached for record in records)
    assert summary_table(records)["label"].to_list() == [p["label"] for p, _ in runs]


def test_cache_key_follows_the_contents_of_a_flow_file(tmp_path: Path, tiny: Path):
    flows = tmp_path / "flows.csv"
    flows.write_text("src,dst,bytes,start\n0,3,10KB,0\n")
    scenario = Scenario.load(tiny).table | {"workload": {"kind": "flows", "file": str(flows)}}
    before = scenario_key(clos.validate(scenario))
    assert scenario_key(clos.validate(scenario)) == before
    flows.write_text("src,dst,bytes,start\n0,3,20KB,0\n")
    assert scenario_key(clos.validate(scenario)) != before


def test_cache_key_follows_the_core_build(tiny: Path, monkeypatch: pytest.MonkeyPatch):
    """A core rebuilt under the same version number must not find the old build's runs."""
    from clos.sweep import run_cache

    normalised = clos.validate(Scenario.load(tiny).table)
    before = scenario_key(normalised)
    monkeypatch.setattr(run_cache, "build_digest", lambda: "another build")
    assert scenario_key(normalised) != before


# Bad input: one line naming the spec field and the fix, exit status 2, no traceback.


def fails_cleanly(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("error: ")
    return result.stderr


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('"routing.scheme"', '"routing.schema"', ['parameters."routing.schema"', "unknown field"]),
        (
            '["ecmp", "spray-random"]',
            '["ecmp", "magic"]',
            ['parameters."routing.scheme" = "magic"', "unknown variant", "spray-random"],
        ),
        ('["ecmp", "spray-random"]', "[]", ['parameters."routing.scheme"', "empty list"]),
        ('["ecmp", "spray-random"]', '"ecmp"', ["expected a list of values", "[set]"]),
        ('["ecmp", "spray-random"]', '["ecmp", "ecmp"]', ['"ecmp" is listed twice']),
        ('"tiny.toml"', '"nowhere.toml"', ["base: scenario not found", "nowhere.toml"]),
        ('base = "tiny.toml"', "", ["base: required"]),
        ("seeds = 2", "seeds = 0", ["seeds: expected a whole number"]),
        ("seeds = 2", "sedes = 2", ["unknown field 'sedes'", "[parameters]"]),
        (
            "seeds = 2",
            'seeds = 2\n"transport.kind" = ["dctcp"]',
            ["unknown field 'transport.kind'"],
        ),
        (
            '"workload.bytes" = "50KB"',
            '"workload.bytes" = "50KB"\n"transport.kind" = "dctcp"',
            ["switch.ecn_threshold", 'the run routing.scheme="ecmp"'],
        ),
        ("[parameters]", "[parameters]\nseed = [1]", ["seeds: seed is also in [parameters]"]),
    ],
    ids=[
        "unknown key",
        "value the core rejects",
        "empty list",
        "not a list",
        "duplicate value",
        "missing base file",
        "no base",
        "no seeds",
        "unknown spec field",
        "scenario field at top level",
        "invalid combination",
        "seed twice",
    ],
)
def test_bad_spec_names_the_field(
    runner: CliRunner, spec: Path, old: str, new: str, expected: list[str]
):
    assert old in SPEC
    spec.write_text(SPEC.replace(old, new, 1))
    message = fails_cleanly(runner, ["sweep", str(spec), "--out", str(spec.parent / "out")])
    assert str(spec) in message
    for text in expected:
        assert text in message


def test_spec_syntax_error_names_the_line(runner: CliRunner, spec: Path):
    spec.write_text(SPEC.replace("seeds = 2", "seeds = = 2"))
    assert "sweep.toml, line 2" in fails_cleanly(runner, ["sweep", str(spec)])


def test_set_of_a_swept_field_is_refused(runner: CliRunner, spec: Path):
    message = fails_cleanly(runner, ["sweep", str(spec), "--set", "routing.scheme=vlb"])
    assert "routing.scheme is swept" in message


def test_missing_spec_and_conflicting_backends(runner: CliRunner, spec: Path, tmp_path: Path):
    assert "sweep spec not found" in fails_cleanly(runner, ["sweep", str(tmp_path / "no.toml")])
    args = ["sweep", str(spec), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"]
    assert "--workers sizes the local process pool" in fails_cleanly(runner, args)


def test_unreachable_scheduler_is_one_line(runner: CliRunner, spec: Path, tmp_path: Path):
    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        args = ["sweep", str(spec), "--out", str(tmp_path / "out")]
        message = fails_cleanly(runner, [*args, "--scheduler", "tcp://127.0.0.1:9"])
    assert "cannot reach a Dask scheduler" in message


# The command end to end, and the documented examples (STYLE.md: CI runs every one).


def test_sweep_command_prints_the_table_and_reuses_runs(
    runner: CliRunner, spec: Path, tmp_path: Path
):
    out = tmp_path / "out"
    args = ["sweep", str(spec), "--out", str(out), "--workers", "1"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "spray-random" in first.stdout and "FCT p99" in first.stdout
    # The efficiency column is headed as what it holds (it once read "goodput").
    assert "efficiency" in first.stdout and "goodput" not in first.stdout
    assert f"{RUNS} runs ({RUNS} simulated, 0 from the cache)" in first.stdout
    assert pl.read_parquet(out / "sweep.parquet").height == RUNS
    assert (out / "sweep.csv").is_file()

    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert f"{RUNS} runs (0 simulated, {RUNS} from the cache)" in again.stdout

    quiet = runner.invoke(app, [*args, "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout == ""


def test_example_spec_runs_at_a_small_size(tmp_path: Path):
    # Flows start during the first millisecond instead of ten; the rest is the example as is.
    table = clos.sweep(
        EXAMPLE, tmp_path, overrides=["workload.stop=1ms"], workers=1, progress=False
    )
    spec = SweepSpec.load(EXAMPLE)
    assert table.height == spec.size == 18
    assert table.select(list(spec.parameters)).rows() == list(
        itertools.product(*spec.parameters.values())
    )
    assert (table["finished"] == table["flows"]).all() and (table["flows"] > 0).all()
    # The bundled spec's three seeds: a mean and an interval per scheme and load, and the page.
    stats = pl.read_csv(tmp_path / "sweep-stats.csv")
    assert stats.height == 6 and (stats["seeds"] == 3).all()
    assert stats["fct_p99_s_ci95"].null_count() == 0
    assert "sweep-fct_p99_s.png" in (tmp_path / "sweep.html").read_text()


def blocks(language: str, text: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("toml_text", blocks("toml", DOCS), ids=lambda t: t.split("\n")[0])
def test_docs_specs_run_at_a_small_size(toml_text: str, tmp_path: Path):
    # Bases are bundled scenarios or files beside the bundled specs; each run is cut at 1 ms.
    spec = SweepSpec.from_table(tomllib.loads(toml_text), EXAMPLE.parent, "docs/sweeps.md")
    table = clos.sweep(spec, tmp_path, overrides=["max_time=1ms"], workers=1, progress=False)
    assert table.height == spec.size
    assert (table["flows"] > 0).all()


def test_docs_python_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The local examples run (the sweep shrunk, in this process); the SLURM recipe needs a
    cluster, so it is only compiled."""
    sweep_example, run_many_example, slurm = blocks("python", DOCS)
    assert "SLURMCluster" in slurm and "scheduler=cluster.scheduler_address" in slurm
    compile(slurm, "docs/sweeps.md (SLURM)", "exec")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(executors, "default_workers", lambda: 1)
    call = 'clos.sweep("ecmp-vs-drill")'
    assert call in sweep_example
    shrunk = call.replace(")", ', overrides=["workload.stop=1ms"])')
    exec(compile(sweep_example.replace(call, shrunk), "docs/sweeps.md", "exec"), {})
    assert (tmp_path / "results" / "ecmp-vs-drill" / "sweep.parquet").is_file()
    exec(compile(run_many_example, "docs/sweeps.md", "exec"), {})
    assert len(list((tmp_path / "results" / "schemes" / "runs").iterdir())) == 2


def test_docs_list_every_column():
    for column in COLUMNS:
        assert f"`{column.column}`" in DOCS
    for column in TIMING_COLUMNS:
        assert re.search(rf"`{column}`.*\(timing\)", DOCS), column


def test_documented_commands_use_real_options():
    """Every `clos sweep` line in the README and docs/sweeps.md names options the command has."""
    help_text = CliRunner().invoke(app, ["sweep", "--help"], terminal_width=200).stdout
    commands = [
        line
        for text in (README, DOCS)
        for block in blocks("sh", text)
        for line in block.splitlines()
        if line.strip().startswith("clos sweep")
    ]
    assert len(commands) >= 3
    for command in commands:
        words = shlex.split(command, comments=True)
        spec = words[2]
        assert (
            Path(ROOT, spec).is_file() or spec.endswith(".toml") or spec in bundled_spec_names()
        ), command
        for word in words:
            if word.startswith("-"):
                assert word.split("=")[0] in help_text, f"{word} in: {command}"


# Statistics over seeds (sweep/stats.py) and the sweep's page (sweep/page.py).


def test_interval_is_students_t_by_hand():
    # 1, 2, 3: mean 2, sample sd 1, t(0.975, 2) = 4.303, so the half-width is 4.303 / sqrt(3).
    mean, half, n = interval([1.0, 2.0, 3.0, None])
    assert (mean, n) == (2.0, 3)
    assert half == pytest.approx(4.303 / 3**0.5, rel=1e-12)
    assert interval([5.0]) == (5.0, None, 1)
    assert interval([None]) == (None, None, 0)
    # Above 30 degrees of freedom the normal's 1.96 stands in (within 2% of t).
    assert t975(31) == 1.96 and t975(30) == 2.042


def test_seed_statistics_group_the_other_parameters():
    table = pl.DataFrame(
        {
            "routing.scheme": ["ecmp", "ecmp", "ecmp", "drill", "drill", "drill"],
            "seed": [1, 2, 3, 1, 2, 3],
            "fct_mean_s": [1.0, 2.0, 3.0, 4.0, 4.0, None],
        }
    )
    stats = seed_statistics(table, ["routing.scheme", "seed"])
    assert stats["routing.scheme"].to_list() == ["ecmp", "drill"]
    assert stats["seeds"].to_list() == [3, 3]
    assert stats["fct_mean_s_mean"].to_list() == [2.0, 4.0]
    assert stats["fct_mean_s_ci95"][0] == pytest.approx(4.303 / 3**0.5)
    assert stats["fct_mean_s_ci95"][1] == 0.0  # two equal values: no spread
    assert "seed" not in stats.columns


def test_sweep_with_three_seeds_writes_means_intervals_and_a_page(tiny: Path, tmp_path: Path):
    spec = {
        "name": "three-seeds",
        "base": str(tiny),
        "seeds": 3,
        "set": {"workload.bytes": "50KB"},
        "parameters": {"routing.scheme": ["ecmp", "spray-random"]},
    }
    result = run_sweep(spec, tmp_path / "out", progress=False, workers=1)
    stats = pl.read_parquet(tmp_path / "out" / "sweep-stats.parquet")
    assert stats.equals(result.stats)
    assert stats["seeds"].to_list() == [3, 3]
    for name in ("fct_mean_s", "fct_p99_s", "goodput_bps"):
        means = stats[f"{name}_mean"].to_list()
        expected = [
            result.table.filter(pl.col("routing.scheme") == s)[name].mean() for s in SCHEMES
        ]
        assert means == pytest.approx(expected)
        assert stats[f"{name}_ci95"].null_count() == 0
    page = (tmp_path / "out" / "sweep.html").read_text()
    assert result.page == tmp_path / "out" / "sweep.html"
    for png in ("sweep-fct_mean_s.png", "sweep-goodput_bps.png"):
        assert (tmp_path / "out" / "plots" / png).stat().st_size > 1000
        assert f"plots/{png}" in page
    assert "±" in page  # the table of means and intervals


def test_compare_takes_a_sweep_folder_as_its_runs(spec: Path, tmp_path: Path):
    from clos.results.compare import load_runs

    result = run_sweep(spec, tmp_path / "out", progress=False, workers=1)
    runs = load_runs([tmp_path / "out"])
    assert len(runs) == RUNS
    first = next(iter(runs))
    assert first == "out: routing.scheme=ecmp, transport.initial_window=4, seed=1"
    assert runs[first].folder == tmp_path / "out" / "runs" / result.table["run"][0]
