"""The `clos` command's entry point: a plain `clos run SCENARIO` starts simulating before typer
parses the command line (`early_run.py` says why and how), then the typer app (`main.py`) runs."""

from __future__ import annotations

import sys

from clos.cli import early_run


def main() -> None:
    """`clos`: start a plain `clos run` early, then parse the command line with typer."""
    early_run.start(sys.argv[1:])
    try:
        from clos.cli.main import app

        app()
    finally:
        early_run.take("")  # stops a run the command did not take
