"""Types of the Rust extension, as agreed in docs/interface.md."""

import os
import threading
from collections.abc import Callable
from typing import Any, Literal, TypedDict, overload

import numpy as np
import numpy.typing as npt

class ScenarioError(ValueError):
    """A scenario the core rejects; the message names the dotted field and the fix."""

class FlowColumns(TypedDict):
    id: npt.NDArray[np.uint32]
    src: npt.NDArray[np.uint32]
    dst: npt.NDArray[np.uint32]
    service: list[str]
    bytes: npt.NDArray[np.uint64]
    delivered: npt.NDArray[np.uint64]
    start_ps: npt.NDArray[np.uint64]
    end_ps: npt.NDArray[np.uint64]
    finished: npt.NDArray[np.bool_]
    fct_ps: npt.NDArray[np.uint64]
    ideal_fct_ps: npt.NDArray[np.uint64]
    slowdown: npt.NDArray[np.float64]
    retransmits: npt.NDArray[np.uint64]
    timeouts: npt.NDArray[np.uint64]
    dupacks: npt.NDArray[np.uint64]
    out_of_order: npt.NDArray[np.uint64]
    reordered: npt.NDArray[np.uint64]
    spurious_retransmits: npt.NDArray[np.uint64]
    drops: npt.NDArray[np.uint64]

class LinkColumns(TypedDict):
    id: npt.NDArray[np.uint32]
    src: list[str]
    dst: list[str]
    tier: list[str]
    rate_bps: npt.NDArray[np.uint64]
    bytes: npt.NDArray[np.uint64]
    packets: npt.NDArray[np.uint64]
    drops: npt.NDArray[np.uint64]
    ecn_marks: npt.NDArray[np.uint64]
    queueing_ps: npt.NDArray[np.uint64]
    utilisation: npt.NDArray[np.float64]

class QueueColumns(TypedDict):
    time_ps: npt.NDArray[np.uint64]
    link: npt.NDArray[np.uint32]
    bytes: npt.NDArray[np.uint32]

class TimeSeriesColumns(TypedDict):
    bin_start_ps: npt.NDArray[np.uint64]
    service: list[str]
    bytes: npt.NDArray[np.uint64]
    goodput_bps: npt.NDArray[np.float64]

class LinkTimeSeriesColumns(TypedDict):
    bin_start_ps: npt.NDArray[np.uint64]
    link: npt.NDArray[np.uint32]
    bytes: npt.NDArray[np.uint64]
    utilisation: npt.NDArray[np.float64]

class RunOutput(TypedDict):
    summary: str
    flows: FlowColumns
    links: LinkColumns
    queues: QueueColumns
    timeseries: TimeSeriesColumns
    link_timeseries: LinkTimeSeriesColumns

Progress = Callable[[float, float, int, int, int], object]

def version() -> str: ...
def commit() -> str: ...
def schemes() -> list[tuple[str, str, list[tuple[str, str, str]]]]: ...
def schema() -> str: ...
def validate(scenario_json: str, build: bool = False) -> str: ...

class CoreRun:
    """A finished run whose tables stay in the core (`run(..., held=True)`)."""

    def summary(self) -> str: ...
    def flow_total(self, column: str) -> int: ...
    def trace_rows(self) -> int: ...
    def write_tables(self, folder: str | os.PathLike[str]) -> None: ...
    def columns(self) -> RunOutput: ...

@overload
def run(
    scenario_json: str,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    held: Literal[False] = False,
) -> RunOutput: ...
@overload
def run(
    scenario_json: str,
    progress: Progress | None,
    cancel: threading.Event | None,
    held: Literal[True],
) -> CoreRun: ...
def multicast_eval(params: dict[str, Any]) -> dict[str, Any]: ...
def partition(scenario_json: str, threads: list[int] | None = None) -> str: ...
