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


# The Python package: each module and the modules of `clos` it imports (anywhere in the file,
# lazy imports and TYPE_CHECKING ones included), by name. Importing a submodule also runs its
# packages' `__init__`, as Python always does; that implicit step is not an edge, so only what a
# module names counts.
PACKAGE = ROOT / "python" / "clos"

# The layers of clos/__init__.py's docstring, lowest first: a module may import its own layer
# (without a cycle) or lower ones, never a higher one.
LAYERS = [
    ["clos._core", "clos.units", "clos.build_info", "clos.extras", "clos.scenario"],
    ["clos.results"],
    ["clos.simulation"],
    ["clos.sweep"],
    ["clos.reproduce"],
    ["clos.cli"],
    ["clos"],
]


def python_modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("clos", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    modules["clos._core"] = PACKAGE / "_core.pyi"
    return modules


def python_graph() -> dict[str, set[str]]:
    import ast

    modules = python_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name == "clos._core":
            graph[name] = set()
            continue
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name.split(".")[0] == "clos"}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != "clos":
                    continue
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    edges.add(child if child in modules else node.module)
        graph[name] = edges - {name}
    return graph


def layer(module: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{module} is in no layer of LAYERS: add it")


def test_the_python_graph_sees_the_imports_it_should():
    graph = python_graph()
    assert "clos.results.run" in graph["clos.simulation"]
    assert "clos.sweep.batch" in graph["clos.sweep.sweep"]
    assert "clos.results.plots" in graph["clos.results.compare"]  # a lazy import counts


def test_no_import_circles_in_the_python_package():
    assert circles(python_graph()) == []


def test_python_layers_import_only_downward():
    upward = [
        f"{a} imports {b}"
        for a, targets in sorted(python_graph().items())
        for b in sorted(targets)
        if layer(b) > layer(a)
    ]
    assert upward == []


def test_the_module_picture_shows_the_current_graph():
    """docs/images/modules.svg (docs/architecture.md) records the edges it draws; after a module
    starts or stops using another, run `python scripts/module_picture.py` to draw it again."""
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    printed = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "module_picture.py"), "--edges"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    current = sorted(tuple(line.split(" -> ")) for line in printed.splitlines())
    assert len(current) > 20
    svg = ET.parse(ROOT / "docs" / "images" / "modules.svg")
    description = svg.find(".//{http://purl.org/dc/elements/1.1/}description")
    assert description is not None and description.text and "edges:" in description.text
    drawn = sorted(tuple(e.split("->")) for e in description.text.split("edges:", 1)[1].split())
    assert drawn == current, "run `python scripts/module_picture.py` and commit the picture"


def test_the_architecture_page_names_files_that_exist():
    """docs/architecture.md's tables name the core's files (relative to crates/clos-core/src),
    the Python package's (relative to python/clos) and the checkout's; a file moved or renamed
    without the page fails here."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    roots = [ROOT / "crates" / "clos-core" / "src", PACKAGE, ROOT]
    named = set(re.findall(r"`([a-z_/]+(?:\.rs|\.py|/))`", page))
    assert len(named) > 25
    assert sorted(n for n in named if not any((r / n).exists() for r in roots)) == []
