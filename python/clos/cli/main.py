"""The `clos` command: run and validate scenarios, compare schemes, list them, benchmark, sweep
parameters, and report on or compare saved runs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from clos import build_info, extras, simulation
from clos._core import ScenarioError
from clos.cli import early_run
from clos.cli.bench import (
    BENCH,
    SCALING,
    TARGET_COMMAND_RATIO,
    TARGET_CPU_SECONDS,
    TARGET_PEAK_BYTES,
    bench_files,
    time_command,
)
from clos.cli.directory import app as directory_app
from clos.cli.progress import RunProgress, engine_note
from clos.cli.results_folder import default_folder, writable_folder
from clos.cli.run_table import run_table, unfinished_note
from clos.cli.schemes import schemes as known_schemes
from clos.scenario import Scenario, describe, json_schema, located

if TYPE_CHECKING:
    from clos.results.results import Results

# The terminal tables (`clos.cli.tables`), results and sweeps import polars, a quarter of a
# second: each command imports them where it needs them, so that `clos run` can import them
# while the core simulates (`clos.simulation.run`) and `clos validate` never does.

app = typer.Typer(
    help="Packet-level simulator of Clos datacenter fabrics.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
app.add_typer(directory_app, name="directory")
# Output that goes to a file or a pipe (`clos bench > bench.txt`) has no width, and rich then
# assumes 80 columns, which cuts the benchmark table's numbers to "…". Give such output room for
# the widest table unless COLUMNS says otherwise; a terminal keeps its own width.
PIPED_WIDTH = 160
stdout = Console(highlight=False)
if not stdout.is_terminal and "COLUMNS" not in os.environ:
    stdout.width = PIPED_WIDTH
stderr = Console(stderr=True, highlight=False)

DEFAULT_SCENARIO = "vl2-testbed"
DEFAULT_SCHEMES = ("ecmp", "vlb")

Overrides = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a scenario field, e.g. routing.scheme=ecmp or seed=3. Repeatable.",
    ),
]


@contextmanager
def reported_errors() -> Iterator[None]:
    """Mistakes in the user's input become one red paragraph and exit status 2, not a traceback."""
    try:
        yield
    except (ScenarioError, OSError) as error:
        fail(str(error))


@contextmanager
def at_its_line(scenario: Scenario, overrides: list[str] | None) -> Iterator[None]:
    """A scenario error names the file and line that wrote its field, as compilers do."""
    try:
        yield
    except ScenarioError as error:
        raise ScenarioError(located(str(error), scenario, overrides or [])) from None


def fail(message: str) -> NoReturn:
    stderr.print(Text(f"error: {message}", style="bold red"), soft_wrap=True)
    raise typer.Exit(2)


def simulate(scenario: Scenario, quiet: bool) -> Results:
    early = early_run.take(scenario.to_json())

    def results(progress: RunProgress | None) -> Results:
        if early is None:
            return simulation.run(scenario, progress)
        return simulation.results_of(lambda: early.output(progress).columns())

    if quiet:
        return results(None)
    with RunProgress(stderr, scenario.name + engine_note(scenario)) as progress:
        ran = results(progress)
    if note := unfinished_note(scenario.name, ran):
        stderr.print(Text(note, style="yellow"))
    return ran


def show_version(value: bool) -> None:
    if value:
        from clos.build_info import describe

        stdout.print(describe(), markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=show_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Packet-level simulator of Clos datacenter fabrics."""


@app.command()
def run(
    scenario: Annotated[
        str | None,
        typer.Argument(
            help="A scenario TOML file or a bundled scenario name. Without it: the VL2 testbed "
            "shuffle, once with ecmp and once with vlb, compared side by side.",
            show_default=False,
        ),
    ] = None,
    overrides: Overrides = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Folder for the results. Default: results/<scenario name>, with a short hash "
            "of the --set overrides when there are some; without a scenario, "
            "results/default with one subfolder per scheme.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing; only save.")] = False,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="Run on the partitioned engine with this many threads (as run.threads): the "
            "same results at every count (docs/parallel.md). Default: the scenario's, else "
            "sequential.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run a scenario and save its summary and tables (flows, links, queues, time series)."""
    if threads is not None:
        overrides = [*(overrides or []), f"run.threads={threads}"]
    with reported_errors():
        if scenario is None:
            compare_schemes(overrides or [], out or Path("results", "default"), quiet)
            return
        loaded = Scenario.load(scenario, overrides or [])
        folder = writable_folder(out or default_folder(loaded.slug, overrides or []))
        with at_its_line(loaded, overrides):
            results = simulate(loaded, quiet)
        results.summary["run"] = {"overrides": list(overrides or []), "clos": build_info.describe()}
        folder = results.save(folder)
        if not quiet:
            print(run_table(loaded.name, results).render(styled=stdout.is_terminal))
            stdout.print(f"saved to {folder}")


def compare_schemes(overrides: list[str], out: Path, quiet: bool) -> None:
    """The default run: the same scenario under each load-balancing scheme, the scheme set last."""
    base = Scenario.load(DEFAULT_SCENARIO, overrides)
    runs = {}
    for scheme in DEFAULT_SCHEMES:
        runs[scheme] = simulate(base.with_overrides([f"routing.scheme={scheme}"]), quiet)
        runs[scheme].save(out / scheme)
    if not quiet:
        from clos.cli.tables import comparison_table

        stdout.print(comparison_table(runs, title=f"{base.name}: ecmp vs vlb"))
        stdout.print(f"saved to {out}/{{{','.join(DEFAULT_SCHEMES)}}}")


@app.command()
def validate(
    scenario: Annotated[
        str, typer.Argument(help="A scenario TOML file or a bundled scenario name.")
    ],
    overrides: Overrides = None,
) -> None:
    """Check a scenario without running it: the core's schema, and everything a run checks
    before its first event (its flows file, hosts, fabric and workload are built, then dropped)."""
    with reported_errors():
        loaded = Scenario.load(scenario, overrides or [])
        with at_its_line(loaded, overrides):
            normalised = simulation.validate(loaded, build=True)
        stdout.print(Text(f"ok: {loaded.name}", style="green"))
        stdout.print(Text(describe(normalised)))


# `clos init`'s commented starter scenario, which tests/test_cli_run.py validates and runs.
STARTER = Path(__file__).resolve().parents[1] / "data" / "init" / "scenario.toml"


@app.command()
def init(
    path: Annotated[
        Path, typer.Argument(help="Where to write the scenario (it must not exist yet).")
    ] = Path("scenario.toml"),
) -> None:
    """Write a commented starter scenario: a small leaf-spine under web-search traffic, every
    section explained, ready for `clos run`."""
    if path.exists():
        fail(f"{path} exists; clos never replaces a file you have: give another path")
    try:
        with path.open("x", encoding="utf-8") as file:
            file.write(STARTER.read_text(encoding="utf-8"))
    except OSError as error:
        fail(f"cannot write {path}: {error.strerror or error}")
    stdout.print(f"wrote {path}; run it with: clos run {path}", soft_wrap=True)


@app.command()
def schema(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write the schema to this file instead of printing it. It must not exist yet, "
            "unless --force.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace --out if it exists (say, after upgrading clos)."),
    ] = False,
) -> None:
    """Print the JSON Schema of scenario files, for a TOML editor (Taplo, Even Better TOML) to
    complete keys and values and flag mistakes as you type: write it to a file and put
    `#:schema ./clos-schema.json` at the top of a scenario."""
    text = json.dumps(json_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    if out.exists() and not force:
        fail(f"{out} exists; clos never replaces a file you have: give another path, or --force")
    try:
        with out.open("w" if force else "x", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        fail(f"cannot write {out}: {error.strerror or error}")
    # Taplo reads a relative path in the directive from the scenario's folder.
    path = out.as_posix()
    if out.is_absolute():
        directive = f"`#:schema {path}`"
    else:
        relative = path if path.startswith(".") else f"./{path}"
        directive = f"`#:schema {relative}` (a path from the scenario's folder)"
    stdout.print(
        Text(f"wrote {out}; begin a scenario with {directive} for Taplo and Even Better TOML"),
        soft_wrap=True,
    )


@app.command()
def sweep(
    spec: Annotated[
        Path,
        typer.Argument(
            help="A sweep spec (TOML): a base scenario and a list of values for each parameter "
            "(docs/sweeps.md), or a bundled spec's name (ecmp-vs-drill). Every combination runs.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Folder for the table (sweep.parquet, sweep.csv) and the run cache (runs/). "
            "Default: results/<spec name>.",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Local processes running simulations. Default: every CPU.",
            show_default=False,
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="A Dask scheduler, e.g. tcp://10.0.0.5:8786: run on its cluster instead of "
            "local processes.",
            show_default=False,
        ),
    ] = None,
    overrides: Overrides = None,
    summaries_only: Annotated[
        bool,
        typer.Option(
            "--summaries-only", help="Keep each run's summary.json but not its Parquet tables."
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no table; only save.")
    ] = False,
) -> None:
    """Run every combination of a sweep's parameters, reusing runs already done, into one table."""
    if workers is not None and scheduler is not None:
        fail(
            "--workers sizes the local process pool; with --scheduler the cluster's workers run "
            "the simulations, so size the cluster instead"
        )
    from clos.cli.tables import sweep_stats_table, sweep_table
    from clos.sweep.sweep import RUNS_FOLDER, STATS_FILES, TABLE_FILES, run_sweep

    with reported_errors():
        result = run_sweep(
            spec,
            out,
            overrides=overrides or [],
            workers=workers,
            scheduler=scheduler,
            progress=not quiet,
            tables=not summaries_only,
        )
    if not quiet:
        stdout.print(sweep_table(result.table, result.parameters, title=result.name))
        if "seed" in result.parameters:
            title = f"{result.name}: mean over seeds"
            stdout.print(sweep_stats_table(result.stats, result.parameters, title=title))
        page = f"; plots in {result.page}" if result.page else ""
        stdout.print(
            f"{len(result.records)} runs ({result.simulated} simulated, {result.from_cache} from "
            "the cache); "
            f"table in {result.folder}/{{{','.join(TABLE_FILES)}}}, means and intervals over "
            f"seeds in {result.folder}/{{{','.join(STATS_FILES)}}}{page}, runs in "
            f"{result.folder / RUNS_FOLDER}",
            soft_wrap=True,
        )


@app.command()
def schemes() -> None:
    """List the load-balancing schemes (`routing.scheme`)."""
    table = Table(title="load-balancing schemes")
    table.add_column("scheme", style="bold")
    table.add_column("description")
    # Text, not markup: "[routing]" and the docs' brackets would be taken for style tags.
    table.add_column(Text("parameters ([routing] fields, default)"))
    for scheme in known_schemes():
        params = "\n".join(f"{p.name} = {p.default}: {p.doc}" for p in scheme.params)
        table.add_row(Text(scheme.name), Text(scheme.description), Text(params or "-"))
    stdout.print(table)


@app.command()
def bench(
    only: Annotated[
        str | None,
        typer.Option("--only", help="Run one benchmark, by name or prefix (e.g. b1, scaling-k8)."),
    ] = None,
    scaling: Annotated[
        bool,
        typer.Option(
            "--scaling",
            help="Run the scaling curve instead: the same traffic on fat trees of 128 to 8,192 "
            "hosts (k = 8 to 32); a few minutes in all.",
        ),
    ] = False,
    command: Annotated[
        bool,
        typer.Option(
            "--command",
            help="Time `clos run` of each benchmark end to end, as a new process (Python "
            "start-up, parsing, saving), alternating with the Rust example binary "
            "(target/release/examples/cpu_seconds, where built; else the core's own run): "
            "CPU and wall seconds, medians of --repeat runs each.",
        ),
    ] = False,
    repeat: Annotated[
        int,
        typer.Option("--repeat", min=1, help="With --command: runs of each, alternating."),
    ] = 3,
    threads: Annotated[
        str | None,
        typer.Option(
            "--threads",
            metavar="N,N,...",
            help="Run each benchmark (or, with --scaling, each size) sequentially and then on "
            "the partitioned engine at each of these thread counts, e.g. 1,2: wall time, "
            "speedup over the first count and over the sequential run, efficiency, and whether "
            "the results are identical at every count.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the bundled benchmark scenarios one after another and report simulator speed."""
    from clos.cli.tables import bench_table, command_table, scaling_table, threads_table

    with reported_errors():
        if threads is not None:
            counts = thread_counts(threads)
            if any(n < 1 for n in counts):
                fail(f"--threads: every count must be at least 1; got {threads!r}")
            measured = []
            for path in bench_files(only, SCALING if scaling else BENCH):
                base = Scenario.load(path)
                sequential = simulate(base, quiet=False)
                runs = [
                    (n, simulate(base.with_overrides([f"run.threads={n}"]), False)) for n in counts
                ]
                measured.append((path.stem, sequential, runs))
            stdout.print(threads_table(measured))
            return
        if command:
            files = bench_files(only, SCALING if scaling else BENCH)
            timed = [(path.stem, time_command(path, repeat)) for path in files]
            stdout.print(command_table(timed, TARGET_COMMAND_RATIO))
            return
        runs = []
        for path in bench_files(only, SCALING if scaling else BENCH):
            runs.append((path.stem, simulate(Scenario.load(path), quiet=False)))
        if scaling:
            stdout.print(scaling_table(runs))
        else:
            stdout.print(bench_table(runs, TARGET_CPU_SECONDS, TARGET_PEAK_BYTES))


def thread_counts(text: str) -> list[int]:
    """`--threads 2,4,8,16` as numbers, or one clear error."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        fail(
            f"--threads: expected whole numbers separated by commas, such as 2,4,8,16; got {text!r}"
        )
    return counts


@app.command()
def partition(
    scenario: Annotated[
        str, typer.Argument(help="A scenario TOML file or a bundled scenario name.")
    ],
    analyse: Annotated[
        str | None,
        typer.Option(
            "--analyse",
            metavar="DURATION",
            help="Also run the scenario for this simulated time (e.g. 1ms), twice, and count "
            "its events per partition per window of the lookahead: what a window engine "
            "would gain.",
            show_default=False,
        ),
    ] = None,
    threads: Annotated[
        str,
        typer.Option("--threads", help="Thread counts to estimate the speedup at, with --analyse."),
    ] = "2,4,8,16",
    overrides: Overrides = None,
) -> None:
    """Show how a scenario's fabric is cut for a parallel engine: partitions, cut links and the
    lookahead (docs/parallel.md)."""
    from clos.cli.tables import estimate_table, partition_table, window_table

    with reported_errors():
        loaded = Scenario.load(scenario, overrides or [])
        counts = thread_counts(threads)
        with at_its_line(loaded, overrides):
            cut = simulation.partition(loaded, analyse, counts)
        stdout.print(partition_table(loaded.name, cut))
        if "analysis" in cut:
            stdout.print(window_table(cut["analysis"]))
            stdout.print(estimate_table(cut["analysis"]))


# `clos report` and `clos compare` import their modules inside the command, not at the top, so
# that matplotlib (the `plots` extra) is loaded only by the commands that draw.


@app.command()
def report(
    results_dir: Annotated[Path, typer.Argument(help="A results folder written by `clos run`.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where to write: an .html file, or a folder for report.html. Default: inside "
            "RESULTS_DIR. Plots go into plots/ beside the page.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write an HTML report of one run: key numbers, plots and per-tier tables."""
    with reported_errors():
        extras.require("plots", "clos report")
        from clos.results.report import write_report

        # soft_wrap: a long path stays on one line, so it can be copied.
        stdout.print(f"wrote {write_report(results_dir, out)}", soft_wrap=True)


@app.command()
def show(
    scenario: Annotated[
        str, typer.Argument(help="A scenario TOML file or a bundled scenario name.")
    ],
    out: Annotated[Path, typer.Option("--out", help="The PNG to write.")] = Path("fabric.png"),
    overrides: Overrides = None,
) -> None:
    """Draw a scenario's fabric (its switches, hosts and links) into a PNG, without running its
    traffic; `clos report` draws a run's fabric with its links' utilisation and drops."""
    with reported_errors():
        extras.require("plots", "clos show")
        from clos.results.fabric import draw_fabric

        loaded = Scenario.load(scenario, [*(overrides or []), "stop=1ps", "max_time=1ps"])
        links = simulation.run(loaded).links
        plot = draw_fabric(links, out, title=f"{loaded.name}: the fabric", loads=False)
        stdout.print(f"wrote {plot.file}", soft_wrap=True)


@app.command()
def compare(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(help="Results folders written by `clos run`.", show_default=False),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Where to write: an .html file, or a folder for compare.html. Plots go into "
            "plots/ beside the page.",
        ),
    ] = Path("results", "compare"),
) -> None:
    """Compare saved runs side by side: a table here and an HTML page with overlaid plots."""
    from clos.results.compare import key_numbers_table, load_runs, write_runs

    with reported_errors():
        runs = load_runs(results_dirs)
        stdout.print(key_numbers_table(runs))
        extras.require("plots", "clos compare's page (the table above needs nothing more)")
        stdout.print(f"wrote {write_runs(runs, out)}", soft_wrap=True)


@app.command()
def reproduce(
    paper: Annotated[
        str,
        typer.Argument(help="vl2, plts, drill, localflow, multicast, or all.", show_default=False),
    ] = "all",
    scale: Annotated[
        str,
        typer.Option("--scale", help="small (minutes on 2 cores) or paper (the published setup)."),
    ] = "small",
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            metavar="CLAIM",
            help="Only this claim (repeatable), and only the runs it reads.",
        ),
    ] = None,
    list_claims: Annotated[
        bool, typer.Option("--list", help="List the claims and exit, running nothing.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Folder for runs, claims.csv and reproduce.html.", show_default=False
        ),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Local processes (default: every core).")
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="A Dask scheduler, e.g. tcp://host:8786, to run on."),
    ] = None,
    experiments: Annotated[
        Path | None,
        typer.Option(
            "--experiments", help="Experiments folder (default: the ones bundled with clos)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Rerun the seed papers' experiments and set each claim's value beside ours.

    Exits 1 if a claim's qualitative statement no longer holds (a result flipped)."""
    from clos.reproduce.experiments import experiments_root, load_papers
    from clos.reproduce.page import verdict_table, write_report
    from clos.reproduce.verdicts import judge, needed_runs, passed, run_experiments, select

    with reported_errors():
        papers = load_papers(experiments_root(experiments))
        claims = select(papers, paper, only or [])
        if list_claims:
            table = Table(title="claims")
            for column in ("claim", "where", "paper", "what"):
                table.add_column(column, overflow="fold")
            for c in claims:
                table.add_row(f"{c.paper}/{c.name}", c.section, c.paper_text or "-", c.title)
            stdout.print(table)
            return
        folder = out or Path("results", "reproduce", scale)
        runs = needed_runs(papers, claims, only_read=bool(only))
        records = run_experiments(
            runs, scale, folder, scheduler=scheduler, workers=workers, progress=not quiet
        )
        verdicts = judge(claims, papers, records)
        stdout.print(verdict_table(verdicts, f"{paper}: {scale} scale", stdout.width))
        page = write_report(verdicts, papers, records, scale, folder)
        stdout.print(f"wrote {page}", soft_wrap=True)
        if not passed(verdicts):
            raise typer.Exit(1)
