"""The small expression language claims use to say which number of which run is "ours".

A claim's `ours` reads like `plts.spray_rr.goodput.aggregate_bps / plts.ecmp.goodput.aggregate_bps`:
an experiment, a run, then a path into that run's summary. Arithmetic (+ - * /), numbers, and a
few functions over runs (`service`, `tier`, `rate_spread`, `goodput_between`) are allowed; nothing else is
evaluated, so a claims file cannot run code. Python's own parser does the parsing.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from clos._core import ScenarioError
from clos.results.results import Results

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


class Missing(Exception):
    """A value the run did not produce (a null in its summary, an absent section)."""


class Node:
    """A table in a run's summary, reached by attribute access."""

    def __init__(self, value: Any, path: str, tables: Callable[[], Results] | None = None):
        self.value = value
        self.path = path
        # Loads the run's saved tables; only functions that need per-flow data call it.
        self.tables = tables

    def attr(self, name: str) -> Any:
        if not isinstance(self.value, dict) or name not in self.value:
            raise Missing(f"{self.path}.{name}")
        found = self.value[name]
        if found is None:
            raise Missing(f"{self.path}.{name} is null")
        if isinstance(found, dict):
            return Node(found, f"{self.path}.{name}", self.tables)
        return found


def _services(run: Node) -> list[dict[str, Any]]:
    value = run.value.get("services") if isinstance(run.value, dict) else None
    if not isinstance(value, list):
        raise Missing(f"{run.path}.services")
    return value


def service(run: Node, name: str) -> Node:
    for entry in _services(run):
        if entry.get("name") == name:
            return Node(entry, f"{run.path}.services[{name}]", run.tables)
    raise Missing(f"{run.path}: no service named {name!r}")


def tier(run: Node, section: str, name: str) -> Node:
    """An entry of a per-tier list, e.g. `tier(x, "queueing", "hop1")` -> its row."""
    rows = run.attr(section)
    rows = rows.value if isinstance(rows, Node) else rows
    if isinstance(rows, dict):
        rows = rows.get("tiers")
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("tier") == name:
            return Node(row, f"{run.path}.{section}[{name}]", run.tables)
    raise Missing(f"{run.path}.{section}: no tier {name!r}")


def bucket(run: Node, label: str) -> Node:
    """A flow-size bucket of the FCT summary by its label, e.g. `bucket(x, "10KB-100KB")`."""
    fct = run.attr("fct")
    rows = fct.value.get("buckets") if isinstance(fct, Node) else None
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("label") == label:
            return Node(row, f"{run.path}.fct[{label}]", run.tables)
    raise Missing(f"{run.path}.fct: no bucket {label!r}")


def rate_spread(run: Node, service_name: str | None = None) -> float:
    """Fastest over slowest per-flow rate (bytes delivered over the flow's life): PLTS Fig. 4(b)."""
    if run.tables is None:
        raise Missing(f"{run.path}: the flows table is not available")
    flows = run.tables().flows
    if service_name is not None:
        flows = flows.filter(flows["service"] == service_name)
    if flows.height == 0:
        raise Missing(f"{run.path}: no flows")
    # A flow's life ends at its completion, or at the end of the run for one still running.
    end = run.attr("stats").attr("simulated_seconds") * 1e12
    rates = (
        flows.select(
            pl.col("delivered").cast(pl.Float64)
            / (
                pl.when(pl.col("finished")).then(pl.col("end_ps")).otherwise(end)
                - pl.col("start_ps")
            )
        )
        .to_series()
        .to_list()
    )
    if min(rates) <= 0:
        raise Missing(f"{run.path}: a flow delivered nothing")
    return max(rates) / min(rates)


def goodput_between(run: Node, start: float, stop: float, service_name: str | None = None) -> float:
    """Goodput (b/s) in a window of the run, from the goodput time series: the bins that start in
    [start, stop), with start and stop as fractions of the run's simulated time, so that a window
    scales with a timeline that does (a `small` scale dividing the paper's times). Over all
    services, or over `service_name`'s flows. VL2 §5.3 and §5.4 read goodput before, during and
    after a change this way."""
    if run.tables is None:
        raise Missing(f"{run.path}: the time series is not available")
    if not 0 <= start < stop <= 1:
        raise Missing(f"{run.path}: window [{start}, {stop}) is not within [0, 1] of the run")
    length = run.attr("stats").attr("simulated_seconds")
    bin_s = run.attr("links").attr("bin_s")
    series = run.tables().timeseries
    if service_name is not None:
        series = series.filter(series["service"] == service_name)
    first = math.ceil(start * length / bin_s - 1e-9)
    last = math.ceil(stop * length / bin_s - 1e-9)  # exclusive
    if last <= first:
        raise Missing(f"{run.path}: window [{start}, {stop}) holds no whole {bin_s} s bin")
    starts = pl.col("bin_start_ps").cast(pl.Float64) / 1e12 / bin_s
    inside = series.filter((starts.round(0) >= first) & (starts.round(0) < last))
    return float(inside["bytes"].sum()) * 8 / ((last - first) * bin_s)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "service": service,
    "goodput_between": goodput_between,
    "tier": tier,
    "bucket": bucket,
    "rate_spread": rate_spread,
    "min": min,
    "max": max,
}


def parse(text: str, where: str) -> ast.expr:
    """Parse an expression once, when the claims file is read, so that typos show up early."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise ScenarioError(f"{where}: {text!r} is not an expression: {error.msg}") from None
    for node in ast.walk(tree):
        allowed = (
            ast.Expression,
            ast.BinOp,
            ast.UnaryOp,
            ast.USub,
            ast.Constant,
            ast.Name,
            ast.Attribute,
            ast.Call,
            ast.Load,
            *_BINARY,
        )
        if not isinstance(node, allowed):
            raise ScenarioError(
                f"{where}: {text!r} uses {type(node).__name__}; claims may use numbers, "
                "experiment.run.summary.path, + - * /, and " + ", ".join(sorted(FUNCTIONS))
            )
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
        ):
            raise ScenarioError(
                f"{where}: {text!r} calls something other than " + ", ".join(sorted(FUNCTIONS))
            )
    return tree.body


def evaluate(expr: ast.expr, names: Mapping[str, Any]) -> Any:
    """The value of `expr` with `names` (experiments, and `ours`/`paper` for checks) bound.

    Raises Missing when a run lacks a value; ZeroDivisionError becomes Missing too, since a
    ratio against a run that moved nothing is not a measurement."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        if expr.id not in names:
            raise Missing(f"{expr.id} (known: {', '.join(sorted(names))})")
        return names[expr.id]
    if isinstance(expr, ast.Attribute):
        base = evaluate(expr.value, names)
        if isinstance(base, Node):
            return base.attr(expr.attr)
        if isinstance(base, Mapping):
            if expr.attr not in base:
                raise Missing(f"{expr.attr} (known: {', '.join(sorted(base))})")
            return base[expr.attr]
        raise Missing(f".{expr.attr} of a number")
    if isinstance(expr, ast.UnaryOp):
        return -_number(evaluate(expr.operand, names))
    if isinstance(expr, ast.BinOp):
        left = _number(evaluate(expr.left, names))
        right = _number(evaluate(expr.right, names))
        try:
            return _BINARY[type(expr.op)](left, right)
        except ZeroDivisionError:
            raise Missing("division by zero") from None
    if isinstance(expr, ast.Call):
        assert isinstance(expr.func, ast.Name)
        args = [evaluate(a, names) for a in expr.args]
        return FUNCTIONS[expr.func.id](*args)
    raise Missing(f"cannot evaluate {ast.dump(expr)}")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Missing(f"{value!r} is not a number")
    return float(value)


_COMPARE: dict[type, Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def check(expr: ast.expr, names: Mapping[str, Any]) -> bool:
    """Whether a claim's qualitative statement (`ours > 1.2 and ours < 3`) holds."""
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.And):
        return all(check(part, names) for part in expr.values)
    if isinstance(expr, ast.Compare):
        left = _number(evaluate(expr.left, names))
        for op, right_expr in zip(expr.ops, expr.comparators, strict=True):
            right = _number(evaluate(right_expr, names))
            compare = _COMPARE.get(type(op))
            if compare is None or not compare(left, right):
                return False
            left = right
        return True
    raise Missing(f"not a comparison: {ast.unparse(expr)}")
