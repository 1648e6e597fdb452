"""`clos run SCENARIO` simulating before the command line is parsed (`launch.py` starts it,
`main.py`'s `run` takes it).

Parsing takes typer, rich and (through typer's coercion) pydantic, and the results' tables take
polars: together about a third of a second, half of B1's whole simulation. So when the command
line is a plain `clos run SCENARIO [--set KEY=VALUE ...] [--out DIR] [--quiet]`, the entry
point loads the scenario and `start`s the core on another thread at once (it releases the GIL), then hands
over to the typer app (`main.py`), whose `run` command finds the simulation under way
(`take`) instead of starting it. Any other command line, or one this reading does not follow,
goes to typer untouched and runs as it always did; a command that ends without taking the run
(an unwritable `--out`, a usage error) cancels it. The run is the very one the command would
have started: the same scenario, read by the same `Scenario.load`, or it is not taken.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from clos import _core

if TYPE_CHECKING:
    from clos.scenario import Scenario

_started: EarlyRun | None = None


class EarlyRun:
    """A core run on its own thread; its progress goes to the display `output` is given."""

    def __init__(self, scenario_json: str, scenario: Scenario | None = None) -> None:
        self.scenario_json = scenario_json
        self.scenario = scenario
        self.cancel = threading.Event()
        self._display: _core.Progress | None = None
        self._output: _core.CoreRun | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="clos-run", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._output = _core.run(self.scenario_json, self._report, self.cancel, held=True)
        except BaseException as error:  # handed to the thread that waits, which raises it
            self._error = error

    def _report(self, *progress: Any) -> None:
        if self._display is not None:
            self._display(*progress)

    def output(self, display: _core.Progress | None) -> _core.CoreRun:
        """Wait for the run, showing its progress on `display` from now on; Ctrl-C stops it.
        The tables stay in the core (`CoreRun`) until asked for."""
        self._display = display
        try:
            # In short waits: a join without a timeout is not interrupted by Ctrl-C on Linux.
            while self._thread.is_alive():
                self._thread.join(0.1)
        except BaseException:
            self.stop()
            raise
        if self._error is not None:
            raise self._error
        assert self._output is not None
        return self._output

    def stop(self) -> None:
        """Cancel the run and wait for it to end (within one progress pause, 2^20 events)."""
        self.cancel.set()
        self._thread.join()


def plain_run(argv: list[str]) -> tuple[str, list[str]] | None:
    """The scenario and overrides of `run SCENARIO [--set KEY=VALUE]... [--out DIR] [-q]`, or
    None for anything else (typer then reads it, as for every other command)."""
    if len(argv) < 2 or argv[0] != "run" or argv[1].startswith("-"):
        return None
    overrides: list[str] = []
    rest = iter(argv[2:])
    for arg in rest:
        if arg in ("--quiet", "-q"):
            continue
        if arg in ("--set", "--out"):
            value = next(rest, None)
            if value is None:
                return None
            if arg == "--set":
                overrides.append(value)
        elif arg.startswith("--set="):
            overrides.append(arg.removeprefix("--set="))
        elif not arg.startswith("--out="):
            return None
    return argv[1], overrides


def start(argv: list[str]) -> None:
    """Start the run `argv` asks for, if it is a plain `clos run` of a scenario that loads."""
    global _started
    plain = plain_run(argv)
    if plain is None:
        return
    from clos.scenario import Scenario

    try:
        scenario = Scenario.load(*plain)
    except Exception:  # whatever it is, typer's `run` meets it again and reports it
        return
    _started = EarlyRun(scenario.to_json(), scenario)


def started() -> EarlyRun | None:
    """The run started early, if one was, left where it is."""
    return _started


def take(scenario_json: str) -> EarlyRun | None:
    """The run started for this very scenario, if one was; it is then the caller's. A run
    started for another one is stopped."""
    global _started
    early, _started = _started, None
    if early is not None and early.scenario_json != scenario_json:
        early.stop()
        return None
    return early
