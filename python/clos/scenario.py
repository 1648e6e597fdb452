"""Scenarios as Python sees them: TOML files, dotted command-line overrides, JSON for the core.

The Rust core owns the schema, its defaults and its validation (docs/interface.md). This module only
gets a table of values across, with errors that point at the file and line a person has to fix.
"""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from clos import _core
from clos._core import ScenarioError

BUNDLED = Path(__file__).parent / "data" / "scenarios"

# tomllib (3.11) puts the position only in the message text.
_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)$")


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 7) of scenario files, derived in the core from the types it reads a
    scenario into: what `clos schema` writes for TOML editors to complete and check scenarios.
    It checks keys, types, names and units; ranges and cross-field rules stay with `validate`."""
    return json.loads(_core.schema())


def bundled_names() -> list[str]:
    return sorted(path.stem for path in BUNDLED.glob("*.toml"))


def find(ref: str | PathLike[str]) -> Path:
    """The file a scenario reference means: a path, or else the name of a bundled scenario."""
    path = Path(ref)
    if path.is_file():
        return path
    if str(ref) in bundled_names():
        return BUNDLED / f"{ref}.toml"
    raise FileNotFoundError(
        f"scenario file not found: {ref} (bundled scenarios: {', '.join(bundled_names())})"
    )


def load_scenario(ref: str | PathLike[str]) -> dict[str, Any]:
    """Parse a scenario file, with workload files made relative to the file rather than the cwd."""
    path = find(ref)
    table = read_toml(path)
    workload = table.get("workload")
    if isinstance(workload, dict):
        _resolve_workload_paths(workload, path.parent)
    return table


def _resolve_workload_paths(workload: dict[str, Any], folder: Path) -> None:
    """Make the workload's files relative to the scenario's folder, in services and backgrounds too.

    `file` is always a path. `cdf` and `concurrency` name a bundled distribution unless a file of
    that name exists beside the scenario, so only those that exist there are rewritten.
    """
    if isinstance(workload.get("file"), str):
        workload["file"] = str((folder / workload["file"]).resolve())
    for key in ("cdf", "concurrency"):
        value = workload.get(key)
        if isinstance(value, str) and (folder / value).is_file():
            workload[key] = str((folder / value).resolve())
    parts = [*(workload.get("services") or []), workload.get("background")]
    for part in parts:
        if isinstance(part, dict):
            _resolve_workload_paths(part, folder)


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's table; a syntax error names the file, the line and what is on it, and a file
    that is not UTF-8 text or nests too deeply for the parser says so in one line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        byte = error.object[error.start]
        raise ScenarioError(
            f"{path}: not UTF-8 text (byte 0x{byte:02x} at offset {error.start}); TOML files are "
            "UTF-8: save it as UTF-8 (a binary file is not a scenario)"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _syntax_error(path, text, error) from None
    except RecursionError:
        raise ScenarioError(
            f"{path}: arrays or tables nested too deeply to read (scenarios nest a few levels)"
        ) from None


def _syntax_error(path: Path, text: str, error: tomllib.TOMLDecodeError) -> ScenarioError:
    reason = str(error)
    position = _POSITION.search(reason)
    if position is None:
        return ScenarioError(f"{path}: TOML syntax error: {reason}")
    line = int(position.group(1))
    lines = text.splitlines()
    source = lines[line - 1].strip() if line <= len(lines) else ""
    return ScenarioError(
        f"{path}, line {line}: TOML syntax error: {reason[: position.start()]}: {source!r}"
    )


def apply_overrides(table: dict[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """A copy of `table` with each `dotted.key=value` applied, creating tables as needed."""
    result = copy.deepcopy(table)
    for assignment in assignments:
        key, equals, raw = assignment.partition("=")
        if not equals or not is_dotted_key(key.strip()):
            raise ScenarioError(
                f"--set {assignment!r}: expected KEY=VALUE with a dotted key, "
                "e.g. routing.scheme=ecmp or seed=3"
            )
        set_field(result, key.strip(), parse_value(raw.strip()), f"--set {assignment!r}")
    return result


def is_dotted_key(key: str) -> bool:
    return all(key.split("."))


def set_field(table: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Set the field a dotted key names (`routing.scheme`), creating tables as needed. A number
    picks an entry of an array of tables, counting from 0 (`workload.services.1.start`,
    `failures.0.at`); it must name an entry that exists.

    Shared by `--set` and sweeps so that both read a key the same way; `where` says in errors
    which input the key came from. Mutates `table`.
    """
    parts = key.split(".")
    node: Any = table
    for depth, part in enumerate(parts):
        here = ".".join(parts[: depth + 1])
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(
                    f"{where}: {'.'.join(parts[:depth])} is an array of {len(node)} tables; "
                    f"name one by its index, 0 to {len(node) - 1} (e.g. {'.'.join(parts[:depth])}.0)"
                )
            if last:
                node[int(part)] = value
                return
            node = node[int(part)]
        else:
            if last:
                node[part] = value
                return
            if part not in node and parts[depth + 1].isdigit():
                raise ScenarioError(
                    f"{where}: {here} is not in the scenario, so {here}.{parts[depth + 1]} names "
                    f"nothing; an index picks an entry of an array of tables the file already has"
                )
            node = node.setdefault(part, {})
        # Checked here for the next step, so that node is always a table or an array above.
        if not isinstance(node, dict | list):
            raise ScenarioError(f"{where}: {here} is a value, not a table")


def parse_value(raw: str) -> Any:
    """A TOML value (3, true, "10Gbps"), else the text: `routing.scheme=ecmp` needs no quotes."""
    if "\n" not in raw:
        try:
            return tomllib.loads(f"value = {raw}")["value"]
        except tomllib.TOMLDecodeError:
            pass
    return raw


@dataclass(frozen=True)
class Scenario:
    """A scenario table plus the file it came from, which names it when the table does not."""

    table: dict[str, Any]
    source: Path | None = None

    @classmethod
    def load(cls, ref: str | PathLike[str], overrides: Iterable[str] = ()) -> Scenario:
        path = find(ref)
        return cls(apply_overrides(load_scenario(path), overrides), path)

    @classmethod
    def of(cls, scenario: Scenario | dict[str, Any] | str | PathLike[str]) -> Scenario:
        """Accept whatever the public API accepts: a Scenario, a table, a path or a bundled name."""
        if isinstance(scenario, Scenario):
            return scenario
        if isinstance(scenario, dict):
            return cls(scenario)
        return cls.load(scenario)

    def with_overrides(self, assignments: Iterable[str]) -> Scenario:
        return Scenario(apply_overrides(self.table, assignments), self.source)

    @property
    def name(self) -> str:
        if isinstance(self.table.get("name"), str) and self.table["name"]:
            return self.table["name"]
        return self.source.stem if self.source else "scenario"

    @property
    def slug(self) -> str:
        """The name as one safe folder name (`results/<slug>`): letters, digits, `.`, `_` and
        `-` only, no leading dot, never empty, so that a name like `../../x` or `/etc` cannot
        place results outside the output root."""
        return slug(self.name)

    def to_json(self) -> str:
        try:
            _refuse_non_finite(self.table, "")
            # TOML dates have no JSON form; as strings the core can name the field that rejects
            # them.
            return json.dumps(self.table, default=str)
        except RecursionError:
            raise ScenarioError("scenario: tables nested too deeply to read") from None


def slug(name: str) -> str:
    """`name` as one safe path component (see `Scenario.slug`)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return safe[:100].rstrip("-.") or "scenario"


def _refuse_non_finite(value: Any, where: str) -> None:
    """NaN and infinity are valid TOML floats but no scenario value: name the field."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(f"{where or 'scenario'}: {value} is not a number a scenario can use")
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        _refuse_non_finite(item, f"{where}.{key}" if where else str(key))


_TOPOLOGY_SIZE = (
    "preset",
    "k",
    "remove_cores",
    "wiring",
    "tors",
    "servers_per_tor",
    "aggs",
    "intermediates",
    "leaves",
    "spines",
    "hosts_per_leaf",
    "links_per_pair",
)


def describe(scenario: dict[str, Any]) -> str:
    """One line saying what a (normalised) scenario simulates, for `clos validate`."""
    topology = scenario.get("topology", {})
    size = ", ".join(f"{key}={topology[key]}" for key in _TOPOLOGY_SIZE if key in topology)
    workload = scenario.get("workload", {})
    load = ", ".join(f"{key}={value}" for key, value in workload.items() if key != "kind")
    directory = scenario.get("directory")
    moves = ""
    if isinstance(directory, dict) and directory.get("enabled", True):
        count = len(directory.get("migrations") or [])
        moves = f"VL2 directory, {count} migration{'' if count == 1 else 's'}; "
    return (
        f"{topology.get('kind', '?')} ({size}); "
        f"routing {scenario.get('routing', {}).get('scheme', '?')}; "
        f"transport {scenario.get('transport', {}).get('kind', '?')}; "
        f"{workload.get('kind', '?')} workload ({load}); "
        f"{moves}stop at {scenario.get('stop', '?')}"
    )


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(
    r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+)(?:\s*\.\s*(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+))*)\s*="
)


def _parts(dotted: str) -> list[str]:
    return [p.strip().strip("\"'") for p in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", dotted)]


def line_of(text: str, field: str) -> int | None:
    """The line (1-based) of a TOML file that writes `field` (a dotted path as errors name it,
    with array indices: `workload.services[1].cdf`), or the line of the nearest table above it
    that the file writes; None if the file writes none of it."""
    want = re.sub(r"\[(\d+)\]", r".\1", field).split(".")
    best: tuple[int, int] | None = None  # (parts matched, line)
    table: list[str] = []
    counts: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _parts(header.group(2))
            if header.group(1) == "[[":
                key = tuple(table)
                counts[key] = counts.get(key, -1) + 1
                table = [*table, str(counts[key])]
            path = table
        else:
            key = _KEY.match(line)
            if not key:
                continue
            path = [*table, *_parts(key.group(1))]
        matched = 0
        while matched < min(len(path), len(want)) and path[matched] == want[matched]:
            matched += 1
        if matched == len(path) and (best is None or matched > best[0]):
            best = (matched, number)
    return best[1] if best else None


def located(message: str, scenario: Scenario, overrides: Iterable[str] = ()) -> str:
    """`message` (an error naming a field first, `routing.scheme: ...`) with the file and line
    that wrote the field in front, as compilers print them; as it is when the field came from an
    override or the scenario has no file."""
    field = message.split(":", 1)[0].strip()
    if scenario.source is None or " " in field or not field:
        return message
    if any(o.split("=", 1)[0].strip() == field for o in overrides):
        return message
    try:
        line = line_of(scenario.source.read_text(encoding="utf-8"), field)
    except (OSError, UnicodeDecodeError):
        return message
    return f"{scenario.source}:{line}: {message}" if line else message
