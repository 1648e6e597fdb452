"""The `clos` entry point (`clos/cli/launch.py`, `early_run.py`): a plain `clos run` starts simulating before
typer parses the command line, gives the results the command would have given, and stops on
Ctrl-C or when the command ends without it."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import clos
from clos.cli import early_run, launch
from clos.scenario import Scenario

BENCH_B1 = Path(clos.__file__).parent / "data" / "bench" / "b1-fat-tree-k8.toml"


@pytest.mark.parametrize(
    ("argv", "plain"),
    [
        (["run", "s.toml"], ("s.toml", [])),
        (["run", "s", "--set", "seed=2", "-q", "--set=stop=1ms"], ("s", ["seed=2", "stop=1ms"])),
        (["run", "s", "--out", "x", "--quiet", "--out=y"], ("s", [])),
        (["run"], None),  # the default comparison of schemes
        (["run", "--help"], None),
        (["run", "s", "--set"], None),  # typer reports the missing value
        (["run", "s", "--seed", "2"], None),  # not an option of run: typer says so
        (["validate", "s"], None),
        ([], None),
    ],
)
def test_only_a_plain_run_of_a_scenario_starts_early(argv: list[str], plain):
    assert early_run.plain_run(argv) == plain


def test_the_command_line_gives_what_the_library_gives(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    out = tmp_path / "out"
    argv = ["clos", "run", str(tiny), "--set", "seed=3", "--out", str(out), "-q"]
    monkeypatch.setattr(sys, "argv", argv)
    started = []
    real = early_run.EarlyRun.__init__

    def spy(self, scenario_json, scenario=None):
        started.append(scenario_json)
        real(self, scenario_json, scenario)

    monkeypatch.setattr(early_run.EarlyRun, "__init__", spy)
    launch.main()  # a quiet run is finished without typer (plain_run.py): no SystemExit
    assert len(started) == 1, "a plain run starts before typer parses"
    library = clos.run(tiny, overrides=["seed=3"])
    saved = clos.load_results(out)
    assert saved.flows.equals(library.flows)
    assert json.loads(started[0]) == json.loads(Scenario.load(str(tiny), ["seed=3"]).to_json())


def test_a_run_for_another_scenario_is_stopped_not_taken(tiny: Path):
    long = Scenario.load(str(BENCH_B1), ["stop=10s", "max_time=10s"]).to_json()
    early = early_run.EarlyRun(long)
    early_run._started = early
    began = time.monotonic()
    assert early_run.take(Scenario.load(str(tiny), []).to_json()) is None
    # Stopped within one progress pause (2^20 events, a fraction of a second), where ten
    # simulated seconds of B1 take minutes.
    assert time.monotonic() - began < 10
    with pytest.raises(KeyboardInterrupt):
        early.output(None)


LONG = ["stop=1s", "max_time=1s"]
COMMAND = ["from clos.cli.launch import main; main()", "run", str(BENCH_B1)]
COMMAND += ["--set", LONG[0], "--set", LONG[1], "-q", "--out"]
LIBRARY = [f"import sys, clos; clos.run({str(BENCH_B1)!r}, overrides={LONG!r}).save(sys.argv[1])"]
# Not a plain run (typer runs it on the main thread) with a progress display, on two threads:
# Ctrl-C is raised in the display's Python code, which must stop the run too.
THREADS = ["from clos.cli.launch import main; main()", "run", str(BENCH_B1), "--threads", "2"]
THREADS += ["--set", LONG[0], "--set", LONG[1], "--out"]


@pytest.mark.parametrize(
    ("code", "interrupted"),
    [
        (COMMAND, lambda status, stderr: status == 130),  # the shells' status for Ctrl-C
        (LIBRARY, lambda status, stderr: status != 0 and "KeyboardInterrupt" in stderr),
        (THREADS, lambda status, stderr: status == 130),
    ],
    ids=["command", "library", "threads"],
)
def test_ctrl_c_stops_a_run_and_saves_nothing(code: list[str], interrupted, tmp_path: Path):
    # B1 for one simulated second takes about half a minute here; Ctrl-C after one second of
    # it must end the run within a few seconds, with no results written. (The command runs
    # the simulation on its own thread, the library on the caller's.)
    out = tmp_path / "out"

    # A shell's background job, as this suite may be, ignores SIGINT, and Python then keeps
    # ignoring it: give the command Ctrl-C's default, as a terminal does.
    def interruptible() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    command = [sys.executable, "-c", *code, str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    began = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - began < 10, stderr
    assert interrupted(process.returncode, stderr), (process.returncode, stderr)
    assert not (out / "summary.json").exists()


# Every flat table non-empty: queue samples and link bins asked for.
FULL = ["output.queue_interval=20us", "output.link_timeseries=true"]


def test_a_quiet_run_is_saved_by_the_core_as_the_library_saves_it(tiny: Path, tmp_path: Path):
    # `clos run -q` writes its tables from the core (plain_run.py, metrics/parquet.rs) without
    # importing typer, pydantic, polars or numpy; read back, every table must be the library's,
    # dtypes included, and the summary the same but for the run's own timings.
    out = tmp_path / "quiet"
    argv = ["run", str(tiny), *(a for o in FULL for a in ("--set", o)), "-q", "--out", str(out)]
    code = (
        "import sys; from clos.cli.launch import main; sys.argv = ['clos', *sys.argv[1:]]; main(); "
        "print(sorted(m for m in ('typer', 'pydantic', 'polars', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    library = clos.run(tiny, overrides=FULL)
    saved = clos.load_results(out)
    for table in ("flows", "links", "queues", "timeseries", "link_timeseries"):
        ours, theirs = getattr(saved, table), getattr(library, table)
        assert theirs.height > 0, table
        assert ours.schema == theirs.schema, table
        assert ours.equals(theirs), table
    timings = ("stats",)
    summary = {k: v for k, v in saved.summary.items() if k not in (*timings, "run")}
    assert summary == {k: v for k, v in library.summary.items() if k not in timings}
    assert saved.summary["run"]["overrides"] == FULL
    assert (out / "scenario.toml").is_file()


def test_a_quiet_run_with_a_trace_is_saved_by_polars(tiny: Path, tmp_path: Path):
    # The trace's nullable link and SACK arrays are polars' to write: the run goes on to typer.
    out = tmp_path / "traced"
    argv = ["clos", "run", str(tiny), "--set", "output.trace=[0]", "-q", "--out", str(out)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exit:
            launch.main()
    assert exit.value.code in (0, None)
    assert clos.load_results(out).trace.height > 0


def test_a_plain_run_prints_the_table_its_saved_results_give(tiny: Path, tmp_path: Path):
    # `clos run` without -q prints its table from the summary and the core's flow totals
    # (plain_run.py, run_table.py) without importing typer, rich, pydantic, polars or numpy; it
    # must be the table the saved results give. 10 Gb/s hosts over 1 Gb/s spines into 6 KB
    # buffers lose packets, so that there are retransmissions and a timeout to count.
    out = tmp_path / "plain"
    lossy = ["--set", "topology.fabric_rate=1Gbps", "--set", "switch.buffer=6KB"]
    argv = ["run", str(tiny), *lossy, "--out", str(out)]
    libraries = ("typer", "rich", "pydantic", "polars", "numpy")
    code = (
        "import sys; from clos.cli.launch import main; sys.argv = ['clos', *sys.argv[1:]]; main(); "
        f"print(sorted(m for m in {libraries!r} if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True
    )
    assert done.stderr.strip() == "[]", done.stderr
    from clos.cli.run_table import run_table

    saved = clos.load_results(out)
    assert saved.flow_total("retransmits") > 0 and saved.flow_total("timeouts") > 0
    assert done.stdout == run_table("tiny", saved).render() + f"\nsaved to {out}\n"
