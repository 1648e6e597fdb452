"""The house rules that a reader can check mechanically (issue 33): no import circles among the
Rust crates' top-level modules, so that a packet's path reads top-down through them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_graph(src: Path) -> dict[str, set[str]]:
    """Each top-level module of a crate and the others it names as `crate::x` outside its tests."""
    graph: dict[str, set[str]] = {}
    for path in src.rglob("*.rs"):
        top = path.relative_to(src).parts[0].removesuffix(".rs")
        if top in ("lib", "main", "bin"):
            continue
        code = path.read_text(encoding="utf-8").split("#[cfg(test)]")[0]
        graph.setdefault(top, set()).update(set(re.findall(r"crate::([a-z_]+)", code)) - {top})
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v] & graph.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("crate", ["clos-core", "clos-directory"])
def test_no_import_circles_among_top_level_modules(crate: str):
    graph = module_graph(ROOT / "crates" / crate / "src")
    assert len(graph) > 5
    assert circles(graph) == []
