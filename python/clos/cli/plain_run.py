"""A plain `clos run SCENARIO [--set ...] [--out DIR] [-q]` finished without typer, rich, numpy or
polars (docs/performance.md, "`clos run` end to end").

Such a run needs no command-line parser, and its tables need no dataframes: the run
`early_run.py` started is awaited here (with the progress bar of `progress.py`, which imports
rich only if the run lasts long enough to show it), its flat tables are written as Parquet by the
core (`CoreRun.write_tables`, `clos_core::metrics::parquet`) and its summary and scenario by
`clos.results.saved_files`, as `Results.save` writes them; unless `-q`, the run table
(`run_table.py`) is printed from the summary and the core's flow totals. Importing typer,
pydantic, polars and numpy would otherwise cost about as much CPU as B1's simulation itself.

Whatever this path does not cover goes on to typer's `run` as before, with the run still under
way or finished: a command line that is not a plain run, a folder that cannot be written,
a run that fails (typer's `run` reports the error, with the scenario line it comes from), and a
run with a packet trace or pcap (`output.trace`, `output.pcap`), whose table polars writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from clos import _core
from clos.cli import early_run
from clos.cli.progress import RunProgress, engine_note
from clos.cli.results_folder import default_folder, writable_folder
from clos.cli.run_table import run_table, unfinished_note
from clos.results.saved_files import PCAP, write_summary
from clos.results.summary_keys import summary_get

QUIET = ("-q", "--quiet")


def out_option(argv: list[str]) -> str | None:
    """The last `--out` of a plain run's command line (typer keeps the last), or None."""
    out = None
    for i, arg in enumerate(argv):
        if arg == "--out" and i + 1 < len(argv):
            out = argv[i + 1]
        elif arg.startswith("--out="):
            out = arg.removeprefix("--out=")
    return out


class HeldRun:
    """A finished run as the run table reads it, its tables still in the core."""

    def __init__(self, summary: dict[str, Any], core: _core.CoreRun) -> None:
        self.summary = summary
        self._core = core

    def get(self, *keys: str) -> Any:
        return summary_get(self.summary, *keys)

    def flow_total(self, column: str) -> int:
        return self._core.flow_total(column)


def finish(argv: list[str]) -> bool:
    """Finish the plain run `argv` asks for, save it and print its table unless it is quiet: True
    when done, False to hand the command (and the run, untaken) to typer. Ctrl-C exits with
    status 130, as typer does."""
    plain = early_run.plain_run(argv)
    early = early_run.started()
    if plain is None or early is None or early.scenario is None:
        return False
    if plain_value_is_option(argv):
        return False
    quiet = any(arg in QUIET for arg in argv[2:])
    name = early.scenario.name
    overrides = plain[1]
    out = out_option(argv)
    try:
        folder = writable_folder(
            Path(out) if out else default_folder(early.scenario.slug, overrides)
        )
    except OSError:
        return False
    try:
        if quiet:
            core = early.output(None)
        else:
            with RunProgress(None, name + engine_note(early.scenario)) as progress:
                core = early.output(progress)
    except KeyboardInterrupt:
        early_run.take(early.scenario_json)
        sys.exit(130)
    except Exception:  # typer's `run` meets it again, and reports it where it comes from
        return False
    summary = json.loads(core.summary())
    if core.trace_rows() or _pcap(summary):
        return False
    early_run.take(early.scenario_json)
    from clos import build_info

    summary["run"] = {"overrides": overrides, "clos": build_info.describe()}
    core.write_tables(folder)
    # An earlier run's trace and capture, in a folder run again.
    (folder / "trace.parquet").unlink(missing_ok=True)
    (folder / PCAP).unlink(missing_ok=True)
    write_summary(folder, summary)
    if not quiet:
        run = HeldRun(summary, core)
        if note := unfinished_note(name, run):
            print(_styled(note, YELLOW, sys.stderr), file=sys.stderr)
        print(run_table(name, run).render(styled=sys.stdout.isatty()))
        print(f"saved to {folder}")
    return True


YELLOW = "\x1b[33m"


def _styled(text: str, colour: str, stream: Any) -> str:
    return f"{colour}{text}\x1b[0m" if stream.isatty() else text


def plain_value_is_option(argv: list[str]) -> bool:
    """`--out -q` and the like: a value that looks like an option, which typer reads otherwise."""
    return any(
        arg in ("--out", "--set") and i + 1 < len(argv) and argv[i + 1].startswith("-")
        for i, arg in enumerate(argv)
    )


def _pcap(summary: dict[str, object]) -> bool:
    scenario = summary.get("scenario")
    output = scenario.get("output") if isinstance(scenario, dict) else None
    return bool(output.get("pcap")) if isinstance(output, dict) else False
