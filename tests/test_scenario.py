"""Scenario loading and overrides, and that every bundled scenario is one the core accepts."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

import clos
from clos.cli.bench import BENCH, SCALING, TARGET_CPU_SECONDS, TARGET_PEAK_BYTES, UNTARGETED
from clos.cli.main import app
from clos.scenario import BUNDLED, apply_overrides, bundled_names, parse_value

BUNDLED_FILES = (
    sorted(BUNDLED.glob("*.toml")) + sorted(BENCH.glob("*.toml")) + sorted(SCALING.glob("*.toml"))
)


@pytest.mark.parametrize("path", BUNDLED_FILES, ids=lambda path: path.stem)
def test_bundled_scenarios_validate(path: Path):
    normalised = clos.validate(path)
    assert normalised["name"] == path.stem


def test_every_benchmark_has_a_target():
    targeted = set(TARGET_CPU_SECONDS) | set(TARGET_PEAK_BYTES)
    assert {path.stem for path in BENCH.glob("*.toml")} == targeted | UNTARGETED


def test_bundled_scenario_by_name(runner: CliRunner):
    assert "vl2-testbed" in bundled_names()
    result = runner.invoke(app, ["validate", "vl2-testbed"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok: vl2-testbed\n")
    assert "shuffle" in result.stdout


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("3", 3),
        ("0.5", 0.5),
        ("true", True),
        ("ecmp", "ecmp"),
        ('"10Gbps"', "10Gbps"),
        ("10Gbps", "10Gbps"),
        ("all flows", "all flows"),
    ],
)
def test_override_values_are_toml_scalars_or_text(raw: str, value: object):
    assert parse_value(raw) == value


def test_overrides_set_nested_keys_without_touching_the_original():
    table = {"routing": {"scheme": "vlb"}, "seed": 1}
    overridden = apply_overrides(table, ["routing.scheme=ecmp", "seed=3", "output.bin=2ms"])
    assert overridden == {"routing": {"scheme": "ecmp"}, "seed": 3, "output": {"bin": "2ms"}}
    assert table == {"routing": {"scheme": "vlb"}, "seed": 1}


def test_overrides_index_arrays_of_tables_and_name_the_range_when_out_of_it():
    table = {"workload": {"services": [{"name": "a"}, {"name": "b"}]}}
    overridden = apply_overrides(table, ["workload.services.1.start=60ms"])
    assert overridden["workload"]["services"] == [{"name": "a"}, {"name": "b", "start": "60ms"}]
    with pytest.raises(
        clos.ScenarioError, match=r"array of 2 tables; name one by its index, 0 to 1"
    ):
        apply_overrides(table, ["workload.services.2.start=1ms"])
    with pytest.raises(clos.ScenarioError, match=r"workload\.services\.0\.name is a value"):
        apply_overrides(table, ["workload.services.0.name.x=1"])
    with pytest.raises(clos.ScenarioError, match="failures is not in the scenario"):
        apply_overrides(table, ["failures.0.at=1ms"])


def test_flow_file_is_relative_to_the_scenario(tmp_path: Path):
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "s.toml").write_text('[workload]\nkind = "flows"\nfile = "flows.csv"\n')
    workload = clos.load_scenario(folder / "s.toml")["workload"]
    assert workload["file"] == str((folder / "flows.csv").resolve())


def test_cdf_files_are_relative_to_the_scenario_and_bundled_names_are_kept(tmp_path: Path):
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "sizes.cdf").write_text("1000 0\n20000 1\n")
    (folder / "s.toml").write_text(
        '[workload]\nkind = "services"\n'
        '[[workload.services]]\nkind = "poisson"\ncdf = "sizes.cdf"\n'
        '[[workload.services]]\nkind = "closed_loop"\ncdf = "websearch_dctcp"\n'
        'concurrency = "vl2"\n'
    )
    services = clos.load_scenario(folder / "s.toml")["workload"]["services"]
    assert services[0]["cdf"] == str((folder / "sizes.cdf").resolve())
    assert services[1]["cdf"] == "websearch_dctcp"
    assert services[1]["concurrency"] == "vl2"


def test_line_of_finds_the_line_that_writes_a_field():
    from clos.scenario import line_of

    text = """name = "x"
topology.kind = "leaf_spine"

[routing]
scheme = "ecmpp"

[[workload.services]]
cdf = "websearch_dctcp"

[[workload.services]]
load = 0.1
"""
    assert line_of(text, "routing.scheme") == 5
    assert line_of(text, "topology.kind") == 2  # a dotted key at the top
    assert line_of(text, "workload.services[1].load") == 11  # the second [[...]]
    assert line_of(text, "workload.services[1].cdf") == 10  # not written: its table's line
    assert line_of(text, "routing.d") == 4
    assert line_of(text, "switch.buffer") is None


def test_errors_name_the_file_and_line_unless_an_override_wrote_the_field(tmp_path: Path):
    from typer.testing import CliRunner

    from clos.cli.main import app

    path = tmp_path / "typo.toml"
    path.write_text(
        'name = "x"\n[topology]\nkind = "leaf_spine"\nleaves = 2\nspines = 1\n'
        'hosts_per_leaf = 2\n[routing]\nscheme = "ecmpp"\n'
        '[workload]\nkind = "permutation"\nbytes = "1KB"\n'
    )
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert f"{path}:8: routing.scheme: unknown value" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["validate", str(path), "--set", "routing.scheme=ecmpq"])
    assert result.exit_code == 2
    assert f"{path}:" not in result.output and "routing.scheme" in result.output


SKEWED = {
    "name": "skewed",
    "seed": 1,
    "stop": "2ms",
    "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 2, "hosts_per_leaf": 4},
    "workload": {"kind": "poisson", "cdf": "fb_webserver", "load": 0.3, "stop": "1ms"},
}


def test_destinations_skew_the_matrix_by_source():
    """`hosts = 4` and `destinations = 16`: the first rack's hosts send, to any host but
    themselves; without `destinations` they send only among themselves."""
    skewed = {**SKEWED, "workload": {**SKEWED["workload"], "hosts": 4, "destinations": 16}}
    flows = clos.run(skewed).flows
    assert flows.height > 20
    assert set(flows["src"]) <= {0, 1, 2, 3}
    assert (flows["src"] != flows["dst"]).all()
    # 16 destinations, 15 valid for each sender: most flows leave the rack.
    assert (flows["dst"] >= 4).mean() > 0.6
    alone = {**SKEWED, "workload": {**SKEWED["workload"], "hosts": 4}}
    assert set(clos.run(alone).flows["dst"]) <= {0, 1, 2, 3}


def test_destinations_apply_to_arrival_workloads_only():
    wrong = {**SKEWED, "workload": {"kind": "permutation", "bytes": "1MB", "destinations": 8}}
    with pytest.raises(clos.ScenarioError, match=r"workload\.destinations: applies to"):
        clos.validate(wrong, build=True)
