"""`clos schema`: the JSON Schema of scenario files that TOML editors check and complete with.

It must accept every scenario clos ships, refuse what the core refuses by form (an unknown key, a
value of the wrong type, a unit the parser does not know), and accept exactly the spellings of
quantities, host lists and stop times that the core's parsers accept."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from typer.testing import CliRunner

from clos import _core
from clos.cli.main import app
from clos.scenario import BUNDLED, bundled_names, json_schema, read_toml

DATA = BUNDLED.parent
README = Path(__file__).resolve().parent.parent / "README.md"
# Taplo's command-line checker, from the `test` extra: what Even Better TOML runs in VS Code.
TAPLO = Path(sys.executable).parent / "taplo"
SCHEMA = json_schema()
VALIDATOR = Draft7Validator(SCHEMA)


def schema_errors(table: dict[str, Any]) -> list[str]:
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(table)
    ]


def core_accepts(table: dict[str, Any]) -> bool:
    try:
        _core.validate(json.dumps(table))
    except _core.ScenarioError:
        return False
    return True


def shipped_scenarios() -> list[Path]:
    """Every scenario file in the package: the bundled ones `clos run NAME` finds, `clos init`'s
    starter, the benchmarks, the scaling curve and the papers' experiments."""
    found = [p for p in sorted(DATA.rglob("*.toml")) if "topology" in read_toml(p)]
    assert {BUNDLED / f"{name}.toml" for name in bundled_names()} <= set(found)
    assert DATA / "init" / "scenario.toml" in found
    return found


def test_the_schema_is_a_valid_draft_7_schema():
    Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize("path", shipped_scenarios(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_shipped_scenario_validates(path: Path):
    assert schema_errors(read_toml(path)) == []


TINY: dict[str, Any] = {
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
    "workload": {"kind": "permutation", "bytes": "200KB"},
}


def tiny(**fields: Any) -> dict[str, Any]:
    """The tiny scenario with each table given merged into its own, and other values set."""
    table = json.loads(json.dumps(TINY))
    for name, value in fields.items():
        if isinstance(value, dict):
            table.setdefault(name, {}).update(value)
        else:
            table[name] = value
    return table


@pytest.mark.parametrize(
    ("tables", "where"),
    [
        ({"topology": {"leafs": 2}}, "topology"),
        ({"routing": {"schem": "ecmp"}}, "routing"),
        ({"transport": {"sackk": True}}, "transport"),
        ({"failures": [{"at": "1ms", "lnk": ["leaf0", "spine0"]}]}, "failures.0"),
        ({"workload": {"services": [{"kind": "shuffle", "bytes": 1, "byte": 2}]}}, "workload"),
    ],
)
def test_a_misspelt_key_is_refused_as_the_core_refuses_it(tables: dict[str, Any], where: str):
    table = tiny(**tables)
    errors = schema_errors(table)
    assert errors and all("Additional properties are not allowed" in e for e in errors), errors
    assert any(e.startswith(where) for e in errors), errors
    assert not core_accepts(table)


@pytest.mark.parametrize(
    "tables",
    [
        {"topology": {"leaves": "four"}},
        {"topology": {"kind": "clos"}},
        {"routing": {"scheme": "magic"}},
        {"transport": {"sack": "yes"}},
        {"transport": {"preset": "bsd"}},
        {"switch": {"buffer": "150 parsecs"}},
        {"workload": {"pattern": "everywhere"}},
        {"output": {"trace": "all"}},
    ],
    ids=lambda t: json.dumps(t),
)
def test_a_value_of_the_wrong_type_or_name_is_refused(tables: dict[str, Any]):
    table = tiny(**tables)
    assert schema_errors(table) != []
    assert not core_accepts(table)


# Spellings each parser accepts or refuses, at values no range check in the core refuses, so the
# core's verdict is its parser's. The schema must give the same verdict on every one.
DURATIONS = [
    "40us", "40 us", " 40us ", "40µs", "0.5ms", ".5ms", "5.ms", "1e3ns", "1e+3ns", "1e-3s",
    "1_000ns", "_1ms", "+1ms", "0", "0.001", "-0s", "-0.0ms", 0, 0.5, 3,
    "40uS", "40 u s", "40ms!", "ms", "", "-1ms", "1E3ns", "inf", "nan", "1e3e3ns", "1ms2",
    "._5ms", "+-1ms", "1,5ms", -1, -0.5,
]  # fmt: skip
SIZES = [
    "2MB", "2 MB", "2_000_000", "2e6", "2e6B", "2.5MiB", "2000kB", "2000KB", "+2MB", "2.MB",
    ".5GB", 2000000, 2.5e6,
    "2mb", "2 M B", "2MBs", "MB", "", "2E6", "-2MB", "2,000,000", "2 000 000", "2Mb", -2000000,
]  # fmt: skip
RATES = [
    "10Gbps", "10 Gbps", "1e10", "10_000Mbps", "+10Gbps", "10.0Gbps", "1e1Gbps", "10000kbps",
    "10000Kbps", 10_000_000_000, 1e10,
    "10Gb/s", "10 gbps", "10GBps", "Gbps", "10Gbps!", "10G", -1e10,
]  # fmt: skip
STOPS = ["all_flows_done", "20ms", " 20 ms ", 0.02, 1, "0.02", "All_flows_done", "forever", -1, 0]
HOSTS = [
    4, [0, "1-3"], ["h0", " h1 - h3 "], ["+0", 1, "h2", "hh3"], [0, 1, 2, 3], ["0-1", "2-3"],
    "4", ["a1"], ["1:3"], [True], ["1-2-3"], [-1, 0], [0.5], ["h-1"],
]  # fmt: skip
TSQ = ["auto", " off ", "256KB", "64 KiB", "1e5", "automatic", 65536, "256 parsecs"]
ENTERING = ["100ns", "serialisation", "serialization", " serialisation ", "0ns", 100, "serial"]

CASES = [
    *(({"transport": {"delayed_ack_timeout": v}}) for v in DURATIONS),
    *(({"output": {"long_flow": v}}) for v in SIZES),
    *(({"topology": {"host_rate": v, "fabric_rate": "10Gbps"}}) for v in RATES),
    *(({"workload": {"hosts": v}}) for v in HOSTS),
    *(({"host": {"qdisc": "fifo", "tsq": v}}) for v in TSQ),
    *(({"routing": {"scheme": "drill", "entering": v}}) for v in ENTERING),
    *(({"stop": v}) for v in STOPS),
]


@pytest.mark.parametrize("tables", CASES, ids=lambda t: json.dumps(t, ensure_ascii=False))
def test_the_schema_accepts_exactly_the_spellings_the_core_parses(tables: dict[str, Any]):
    table = tiny(**tables)
    assert (schema_errors(table) == []) == core_accepts(table), schema_errors(table)


def test_the_corpus_has_spellings_of_both_verdicts():
    verdicts = {core_accepts(tiny(**t)) for t in CASES}
    assert verdicts == {True, False}


def test_descriptions_come_from_the_cores_doc_comments():
    definitions = SCHEMA["definitions"]
    sack = definitions["TransportSpec"]["properties"]["sack"]["description"]
    assert sack.startswith("SACK on both ends")
    presets = {p["const"] for p in definitions["TransportSpec"]["properties"]["preset"]["oneOf"]}
    assert presets == {"linux", "linux-2.6", "htsim", "ns3"}
    schemes = {s["const"] for s in definitions["Scheme"]["oneOf"]}
    assert schemes == {name for name, _, _ in _core.schemes()}


def test_clos_schema_prints_the_schema_and_writes_it_without_replacing_a_file(tmp_path: Path):
    runner = CliRunner()
    printed = runner.invoke(app, ["schema"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout) == SCHEMA
    path = tmp_path / "clos-schema.json"
    written = runner.invoke(app, ["schema", "--out", str(path)])
    assert written.exit_code == 0, written.output
    assert json.loads(path.read_text(encoding="utf-8")) == SCHEMA
    path.write_text("{}\n")
    again = runner.invoke(app, ["schema", "--out", str(path)])
    assert again.exit_code == 2 and "exists" in again.output
    assert path.read_text() == "{}\n"
    forced = runner.invoke(app, ["schema", "--out", str(path), "--force"])
    assert forced.exit_code == 0, forced.output
    assert json.loads(path.read_text(encoding="utf-8")) == SCHEMA


def test_taplo_checks_scenarios_with_the_schema_as_the_readme_says(tmp_path: Path):
    readme = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    (example,) = [b for b in blocks if b.startswith("#:schema ./clos-schema.json\n")]
    rule = ["[[rule]]", 'include = ["scenarios/**/*.toml"]', 'schema.path = "./clos-schema.json"']
    assert all(f"`{line}`" in readme for line in rule)
    written = CliRunner().invoke(app, ["schema", "--out", str(tmp_path / "clos-schema.json")])
    assert written.exit_code == 0, written.output
    (tmp_path / ".taplo.toml").write_text("\n".join(rule) + "\n")
    (tmp_path / "mine.toml").write_text(example)
    (tmp_path / "typo.toml").write_text(example.replace("leaves =", "leafs ="))
    (tmp_path / "scenarios").mkdir()
    undirected = example.removeprefix("#:schema ./clos-schema.json\n")
    (tmp_path / "scenarios" / "ruled.toml").write_text(
        undirected.replace("permutation", "permutaton")
    )

    def check(name: str) -> subprocess.CompletedProcess[str]:
        command = [str(TAPLO), "check", name]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)

    assert check("mine.toml").returncode == 0, check("mine.toml").stderr
    typo = check("typo.toml")
    assert typo.returncode != 0 and "'leafs' was unexpected" in typo.stdout + typo.stderr
    ruled = check("scenarios/ruled.toml")
    assert ruled.returncode != 0 and '"permutaton" is not valid' in ruled.stdout + ruled.stderr
