"""`clos run SCENARIO -q` finished without typer, numpy or polars (docs/performance.md, "`clos
run` end to end").

A quiet run prints nothing when it succeeds, so it needs no command-line parser, terminal tables
or dataframes: the run `early_run.py` started is awaited here, its flat tables are written as
Parquet by the core (`CoreRun.write_tables`, `clos_core::metrics::parquet`) and its summary and
scenario by `clos.results.saved_files`, as `Results.save` writes them. Importing typer, pydantic,
polars and numpy would otherwise cost about as much CPU as B1's simulation itself.

Whatever this path does not cover goes on to typer's `run` as before, with the run still under
way or finished: a command line that is not a plain quiet run, a folder that cannot be written,
a run that fails (typer's `run` reports the error, with the scenario line it comes from), and a
run with a packet trace or pcap (`output.trace`, `output.pcap`), whose table polars writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clos.cli import early_run
from clos.cli.results_folder import default_folder, writable_folder
from clos.results.saved_files import PCAP, write_summary

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


def finish(argv: list[str]) -> bool:
    """Finish the plain quiet run `argv` asks for and save it: True when done, False to hand
    the command (and the run, untaken) to typer. Ctrl-C exits with status 130, as typer does."""
    plain = early_run.plain_run(argv)
    early = early_run.started()
    if plain is None or early is None or early.scenario is None:
        return False
    if not any(arg in QUIET for arg in argv[2:]) or plain_value_is_option(argv):
        return False
    overrides = plain[1]
    out = out_option(argv)
    try:
        folder = writable_folder(
            Path(out) if out else default_folder(early.scenario.slug, overrides)
        )
    except OSError:
        return False
    try:
        core = early.output(None)
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
    return True


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
