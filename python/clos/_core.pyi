"""Types of the Rust extension, as agreed in docs/interface.md."""

from typing import TypedDict

import numpy as np
import numpy.typing as npt

class ScenarioError(ValueError):
    """A scenario the core rejects; the message names the dotted field and the fix."""

class FlowColumns(TypedDict):
    id: npt.NDArray[np.uint32]
    src: npt.NDArray[np.uint32]
    dst: npt.NDArray[np.uint32]
    bytes: npt.NDArray[np.uint64]
    delivered: npt.NDArray[np.uint64]
    start_ps: npt.NDArray[np.uint64]
    end_ps: npt.NDArray[np.uint64]
    finished: npt.NDArray[np.bool_]
    fct_ps: npt.NDArray[np.uint64]
    retransmits: npt.NDArray[np.uint64]
    timeouts: npt.NDArray[np.uint64]
    dupacks: npt.NDArray[np.uint64]
    out_of_order: npt.NDArray[np.uint64]

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

class GoodputColumns(TypedDict):
    bin_start_ps: npt.NDArray[np.uint64]
    bytes: npt.NDArray[np.uint64]

class RunOutput(TypedDict):
    summary: str
    flows: FlowColumns
    links: LinkColumns
    goodput: GoodputColumns

def version() -> str: ...
def schemes() -> list[tuple[str, str, list[tuple[str, str, str]]]]: ...
def validate(scenario_json: str) -> str: ...
def run(scenario_json: str) -> RunOutput: ...
