"""The papers' experiments and claims, as `data/experiments/<paper>/claims.toml` describes them.

A paper's claims file names its experiments (a scenario file, the overrides that make each
scale, and the runs: one set of overrides each, e.g. one per scheme) and its claims (the
paper's value, the expression that computes ours from the runs, and the qualitative statement
that must hold). The format is in docs/reproduction.md.

An experiment of `kind = "multicast-eval"` has no scenario: its `params` table, the scale's and the
run's KEY=VALUE overrides make the parameters of the multicast control plane's statistical
evaluation (`clos._core.multicast_eval`, docs/multicast.md), whose result is the run's summary.
"""

from __future__ import annotations

import ast
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clos._core import ScenarioError
from clos.reproduce.claim_expr import FUNCTIONS, parse
from clos.scenario import Scenario

SCALES = ("small", "paper")

# The seed papers' experiments ship with the package, one folder per paper.
BUNDLED = Path(__file__).parents[1] / "data" / "experiments"


# What an experiment runs: a packet simulation per run, or the multicast statistical evaluation.
KINDS = ("scenario", "multicast-eval")


@dataclass(frozen=True)
class Experiment:
    paper: str
    name: str
    # None for kinds other than "scenario".
    scenario: Path | None
    scales: dict[str, list[str]]
    runs: dict[str, list[str]]
    plot: dict[str, str] | None
    kind: str = "scenario"
    # The base parameters of a "multicast-eval" experiment.
    params: dict[str, Any] = field(default_factory=dict)

    def scenario_for(self, scale: str, run: str) -> Scenario:
        """The base scenario, then the scale's overrides, then the run's."""
        if self.scenario is None:
            raise ScenarioError(
                f"{self.paper}.{self.name}: a {self.kind} experiment has no scenario"
            )
        base = Scenario.load(self.scenario)
        overrides = [*self.scales.get(scale, []), *self.runs[run]]
        scenario = base.with_overrides(overrides)
        table = dict(scenario.table)
        table["name"] = f"{self.paper}-{self.name}-{run}"
        return Scenario(table, scenario.source)

    def params_for(self, scale: str, run: str) -> dict[str, Any]:
        """A "multicast-eval" run's parameters: `params`, then the scale's overrides, the run's."""
        params = dict(self.params)
        for override in [*self.scales.get(scale, []), *self.runs[run]]:
            key, value = _key_value(override, f"{self.paper}: experiments.{self.name}")
            params[key] = value
        return params


def _key_value(text: str, where: str) -> tuple[str, Any]:
    """`groups=30000` -> ("groups", 30000); a value is TOML (`placement="random"`, `true`), or
    else taken as text (`placement=random`)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise ScenarioError(f"{where}: {text!r}: expected KEY=VALUE, like groups=30000")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return key.strip(), parsed


@dataclass(frozen=True)
class Claim:
    paper: str
    name: str
    title: str
    section: str
    source: str
    paper_value: float | None
    paper_text: str
    unit: str
    ours: ast.expr
    ours_text: str
    holds: ast.expr
    holds_text: str
    close: float | None
    explain: str
    # Set when our simulator does not reproduce the paper's qualitative result and we know why:
    # the claim is then reported as `differs` and does not fail the run. See Verdict.
    known_deviation: str
    experiments: tuple[str, ...] = field(default=())
    # The (experiment, run) pairs `ours` and `holds` read.
    runs: tuple[tuple[str, str], ...] = field(default=())


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    seeds: str
    experiments: dict[str, Experiment]
    claims: list[Claim]


def experiments_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Where the experiments live: the argument, $CLOS_EXPERIMENTS, or the package's own."""
    if root is not None:
        path = Path(root)
    elif os.environ.get("CLOS_EXPERIMENTS"):
        path = Path(os.environ["CLOS_EXPERIMENTS"])
    else:
        path = BUNDLED
    if not path.is_dir():
        raise ScenarioError(
            f"no experiments folder at {path}: pass --experiments DIR (a folder with one "
            "subfolder per paper, each holding a claims.toml) or set CLOS_EXPERIMENTS"
        )
    return path


def load_papers(root: Path) -> dict[str, Paper]:
    papers = {}
    for claims in sorted(root.glob("*/claims.toml")):
        paper = load_paper(claims)
        papers[paper.key] = paper
    if not papers:
        raise ScenarioError(f"{root} holds no */claims.toml")
    return papers


def _list_of_str(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ScenarioError(f"{where}: expected a list of KEY=VALUE strings, got {value!r}")
    return value


def _text(table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ScenarioError(f"{where}.{key}: required text" + (f", got {value!r}" if value else ""))
    return value


def load_paper(path: Path) -> Paper:
    try:
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{path}: TOML syntax error: {error}") from None
    key = path.parent.name
    where = str(path)
    experiments = {}
    for name, table in (spec.get("experiments") or {}).items():
        at = f"{where}: experiments.{name}"
        kind = table.get("kind", "scenario")
        if kind not in KINDS:
            raise ScenarioError(f"{at}.kind: {kind!r} is not one of {', '.join(KINDS)}")
        scenario: Path | None = None
        params: dict[str, Any] = {}
        if kind == "scenario":
            scenario = path.parent / _text(table, "scenario", at)
            if not scenario.is_file():
                raise ScenarioError(f"{at}.scenario: no file {scenario}")
        else:
            params = table.get("params", {})
            if not isinstance(params, dict):
                raise ScenarioError(
                    f"{at}.params: a table of parameters, like {{ groups = 100000 }}"
                )
        scales = {s: _list_of_str(table.get(s, []), f"{at}.{s}") for s in SCALES}
        runs_table = table.get("runs")
        if not isinstance(runs_table, dict) or not runs_table:
            raise ScenarioError(f"{at}.runs: required, a table of run = [overrides]")
        runs = {}
        for run, overrides in runs_table.items():
            if not run.isidentifier():
                raise ScenarioError(
                    f"{at}.runs.{run}: run names must be identifiers (a_b, not a-b)"
                )
            runs[run] = _list_of_str(overrides, f"{at}.runs.{run}")
        plot = table.get("plot")
        if plot is not None and not (isinstance(plot, dict) and isinstance(plot.get("key"), str)):
            raise ScenarioError(f'{at}.plot: expected {{key = "summary.path", label = ...}}')
        if plot is not None and not isinstance(plot.get("x", ""), str):
            raise ScenarioError(f'{at}.plot.x: the x axis\'s label, a string such as "load (%)"')
        experiment = Experiment(key, name, scenario, scales, runs, plot, kind, params)
        for run in runs if kind != "scenario" else []:
            for scale in SCALES:
                experiment.params_for(scale, run)  # KEY=VALUE syntax errors now, not mid-run
        experiments[name] = experiment
    claims = []
    for i, table in enumerate(spec.get("claims") or []):
        at = f"{where}: claims[{i}]"
        name = _text(table, "name", at)
        ours_text = _text(table, "ours", at)
        holds_text = _text(table, "holds", at)
        ours = parse(ours_text, f"{at}.ours")
        holds = _parse_check(holds_text, f"{at}.holds")
        used = _experiments_used(ours)
        unknown = [e for e in used if e not in experiments]
        if unknown:
            raise ScenarioError(
                f"{at}.ours: no experiment named {unknown[0]!r} (known: {', '.join(experiments)})"
            )
        for e in used:
            for run in _runs_used(ours, e):
                if run not in experiments[e].runs:
                    raise ScenarioError(
                        f"{at}.ours: experiment {e!r} has no run {run!r} "
                        f"(runs: {', '.join(experiments[e].runs)})"
                    )
        value = table.get("paper")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ScenarioError(f"{at}.paper: a number, or leave it out for a qualitative claim")
        close = table.get("close")
        if close is not None and not isinstance(close, int | float):
            raise ScenarioError(f"{at}.close: a relative tolerance such as 0.1")
        claims.append(
            Claim(
                paper=key,
                name=name,
                title=_text(table, "title", at),
                section=_text(table, "section", at, ""),
                source=_text(table, "source", at, ""),
                paper_value=None if value is None else float(value),
                paper_text=_text(table, "paper_text", at, "" if value is None else f"{value:g}"),
                unit=_text(table, "unit", at, ""),
                ours=ours,
                ours_text=ours_text,
                holds=holds,
                holds_text=holds_text,
                close=None if close is None else float(close),
                explain=_text(table, "explain", at, ""),
                known_deviation=_text(table, "known_deviation", at, ""),
                experiments=tuple(used),
                runs=tuple(
                    (e, r) for e in experiments for r in _runs_used(ours, e) + _runs_used(holds, e)
                ),
            )
        )
    names = [c.name for c in claims]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ScenarioError(f"{where}: two claims are named {duplicate!r}")
    return Paper(
        key=key,
        title=_text(spec, "title", where),
        seeds=_text(spec, "seeds", where, ""),
        experiments=experiments,
        claims=claims,
    )


def _parse_check(text: str, where: str) -> ast.expr:
    """A check compares `ours` (and `paper`) with numbers: `ours > 1.2`, `ours < paper * 2`."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as error:
        raise ScenarioError(f"{where}: {text!r} is not a comparison: {error.msg}") from None
    parts = [tree] if not isinstance(tree, ast.BoolOp) else tree.values
    if isinstance(tree, ast.BoolOp) and not isinstance(tree.op, ast.And):
        raise ScenarioError(f"{where}: {text!r}: join comparisons with `and` only")
    for part in parts:
        if not isinstance(part, ast.Compare) or not all(
            isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in part.ops
        ):
            raise ScenarioError(
                f"{where}: {text!r}: expected comparisons with < <= > >=, like `ours > 1.2`"
            )
        for side in [part.left, *part.comparators]:
            parse(ast.unparse(side), where)
    return tree


def _attribute_chain(node: ast.expr) -> list[str]:
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return []  # rooted in a call, e.g. tier(...).mean_s: the call's arguments are walked
    chain.append(node.id)
    return chain[::-1]


def _chains(expr: ast.expr) -> list[list[str]]:
    found = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute | ast.Name):
            chain = _attribute_chain(node)
            if chain:
                found.append(chain)
    return found


def _experiments_used(expr: ast.expr) -> list[str]:
    used: list[str] = []
    for chain in _chains(expr):
        if chain[0] not in FUNCTIONS and chain[0] not in used:
            used.append(chain[0])
    return used


def _runs_used(expr: ast.expr, experiment: str) -> list[str]:
    return sorted({c[1] for c in _chains(expr) if c[0] == experiment and len(c) > 1})
