"""A progress bar for one simulation: simulated time, flows completed and events/s.

The core calls back every ~10^6 events (a fraction of a second), so the bar costs the simulation
nothing measurable; it appears once a run has taken `delay` seconds (quick runs print nothing). How far along a run is depends on how it stops: a run with a fixed duration is
as far as its simulated time, a run until all flows finish as far as its completed flows, so the
bar shows the larger of the two fractions. rich is imported when the bar first appears, so a quick
run never imports it (docs/performance.md, "`clos run` end to end").
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from clos import units

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from clos.scenario import Scenario


class RunProgress:
    """Context manager; pass the instance as `progress=` to `clos.run`."""

    def __init__(self, console: Console | None, name: str, delay: float = 1.0) -> None:
        """`console` None: standard error."""
        self._console = console
        self._name = name
        self._bar: Progress | None = None
        self._task: Any = None
        self._started = time.monotonic()
        self._delay = delay
        self._last = (self._started, 0)

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, simulated: float, end: float, done: int, flows: int, events: int) -> None:
        now = time.monotonic()
        then, events_then = self._last
        rate = (events - events_then) / (now - then) if now > then else 0.0
        self._last = (now, events)
        fraction = max(simulated / end if end > 0 else 0.0, done / flows if flows else 0.0)
        detail = (
            f"{units.duration(simulated)} simulated · {done:,}/{flows:,} flows · "
            f"{units.millions_per_second(rate)}"
        )
        if self._bar is not None:
            self._bar.update(self._task, completed=min(fraction, 1.0), detail=detail)
        elif now - self._started >= self._delay:
            self._show(min(fraction, 1.0), detail)

    def _show(self, completed: float, detail: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("simulating [bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self._console or Console(stderr=True, highlight=False),
            transient=True,
        )
        self._task = self._bar.add_task(self._name, total=1.0, completed=completed, detail=detail)
        self._bar.start()


def engine_note(scenario: Scenario) -> str:
    """What the progress line says of the engine: nothing for a sequential run."""
    run = scenario.table.get("run")
    threads = run.get("threads") if isinstance(run, dict) else None
    if not isinstance(threads, int) or isinstance(threads, bool):
        return ""
    return f" (partitioned, {threads} thread{'s' if threads != 1 else ''})"
