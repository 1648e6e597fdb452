"""The `clos` command's entry point: a plain `clos run SCENARIO` starts simulating before typer
parses the command line (`early_run.py` says why and how); a quiet one is finished and saved
without typer (`quiet_run.py`); otherwise the typer app (`main.py`) runs."""

from __future__ import annotations

import sys

from clos.cli import early_run, quiet_run


def main() -> None:
    """`clos`: start a plain `clos run` early; finish it here if it is quiet (`quiet_run.py`),
    else parse the command line with typer."""
    early_run.start(sys.argv[1:])
    try:
        if quiet_run.finish(sys.argv[1:]):
            return
        from clos.cli.main import app

        app()
    finally:
        early_run.take("")  # stops a run the command did not take
