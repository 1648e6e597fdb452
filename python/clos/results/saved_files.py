"""A results folder's files, and the writers of those that need no dataframe library: the file
names, `summary.json` and `scenario.toml` (the scenario as the core ran it).

`Results.save` (`results.py`) writes the tables with polars; `clos run -q` writes them from the
core (`clos.cli.plain_run`) and the rest with these, so that both folders read back alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomli_w

TABLES = ("flows", "links", "queues", "timeseries", "link_timeseries", "trace")
# Tables that results saved before they existed lack, or that are written only when asked for
# (`output.trace`); they load empty.
OPTIONAL = ("trace",)
SUMMARY = "summary.json"
PCAP = "trace.pcap"
# The scenario as the core ran it (every default filled in): `clos run scenario.toml` reruns it.
SCENARIO = "scenario.toml"
FILES = (*(f"{table}.parquet" for table in TABLES), SUMMARY, SCENARIO)
REQUIRED = (*(f"{t}.parquet" for t in TABLES if t not in OPTIONAL), SUMMARY)


def write_summary(folder: Path, summary: dict[str, Any]) -> None:
    """`summary.json`, pretty, and beside it `scenario.toml` when the summary holds the scenario."""
    (folder / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    scenario = summary.get("scenario")
    if isinstance(scenario, dict):
        (folder / SCENARIO).write_text(scenario_toml(scenario, summary), encoding="utf-8")


def scenario_toml(scenario: dict[str, Any], summary: dict[str, Any]) -> str:
    """The resolved scenario as TOML, headed by what produced it."""
    run = summary.get("run") if isinstance(summary.get("run"), dict) else {}
    overrides = " ".join(f"--set {o}" for o in run.get("overrides") or [])
    lines = [
        "# The scenario as clos ran it, every default filled in; `clos run scenario.toml` runs it",
        "# again and gives the same results, bit for bit, on the same version of clos.",
        f"# clos: {run.get('clos') or 'version not recorded'}",
    ]
    if overrides:
        lines.append(f"# overrides given: {overrides}")
    return "\n".join(lines) + "\n\n" + tomli_w.dumps(scenario)
