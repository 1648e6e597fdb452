"""The `clos` command's entry point: a plain `clos run SCENARIO` starts simulating before typer
parses the command line (`early_run.py` says why and how) and is finished, saved and printed
without typer (`plain_run.py`); otherwise the typer app (`main.py`) runs."""

from __future__ import annotations

import sys

from clos.cli import early_run, plain_run


def main() -> None:
    """`clos`: start a plain `clos run` early and finish it here (`plain_run.py`); else parse the
    command line with typer."""
    early_run.start(sys.argv[1:])
    try:
        if plain_run.finish(sys.argv[1:]):
            return
        from clos.cli.main import app

        app()
    finally:
        early_run.take("")  # stops a run the command did not take
