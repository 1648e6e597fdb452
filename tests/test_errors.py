"""Bad input ends in one readable error and exit status 2, never a traceback."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clos.cli.main import app


def fails_cleanly(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("error: ")
    return result.stderr


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("spines = 2", "spines = 2\nflavour = 3", "flavour"),
        ("leaves = 2", "leaves = -2", "topology.leaves"),
    ],
    ids=["unknown field", "negative count"],
)
def test_invalid_scenario_names_the_field(
    runner: CliRunner, tiny: Path, old: str, new: str, field: str
):
    tiny.write_text(tiny.read_text().replace(old, new))
    assert field in fails_cleanly(runner, ["validate", str(tiny)])


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["transport.mss_min=2000"], "between 64 bytes and transport.mss (1460)"),
        (["transport.mss_min=64", "routing.scheme=presto"], "presto splits flows by byte offsets"),
    ],
    ids=["above mss", "with presto"],
)
def test_per_flow_mss_range_and_scheme(
    runner: CliRunner, tiny: Path, overrides: list[str], says: str
):
    args = ["run", str(tiny)] + [a for o in overrides for a in ("--set", o)]
    error = fails_cleanly(runner, args)
    assert "transport.mss_min" in error and says in error


@pytest.mark.parametrize(
    ("override", "says"),
    [
        # 10 TB at a 1,460-byte MSS is 6.8 * 10^9 segments: a sender numbers them in 32 bits.
        ("workload.bytes=10TB", "more than 2^32 - 1 segments of 1460 bytes"),
        # Beyond 2^64 bytes a value cannot be held at all, and is not quietly capped.
        ("workload.bytes=1e30B", "too large"),
        ("stop=1e9s", "too large"),
    ],
    ids=["segments", "bytes beyond 64 bits", "time beyond 64 bits"],
)
def test_values_too_large_to_hold_are_refused(
    runner: CliRunner, tiny: Path, override: str, says: str
):
    assert says in fails_cleanly(runner, ["run", str(tiny), "--set", override])


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["workload.class=1"], "workload.class", "switch.classes is not set"),
        (
            ["switch.classes=[{weight = 2}]", "workload.class=3"],
            "workload.class",
            "switch.classes has 1 (0 to 0)",
        ),
        (["switch.classes=[{weight = 0}]"], "switch.classes[0].weight", "must be in 1..=1000"),
        (["switch.quantum=1500B"], "switch.quantum", "give switch.classes too"),
    ],
    ids=["class without classes", "class beyond classes", "zero weight", "quantum alone"],
)
def test_traffic_classes_are_checked(
    runner: CliRunner, tiny: Path, overrides: list[str], field: str, says: str
):
    args = ["validate", str(tiny)] + [a for o in overrides for a in ("--set", o)]
    error = fails_cleanly(runner, args)
    assert field in error and says in error


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["workload.request=64B"], "applies to incast workloads, not permutation"),
        (
            ["workload.connections=persistent"],
            "applies to incast, flows workloads, not permutation",
        ),
        (
            [
                "workload.kind=incast",
                "workload.requesters=1",
                "workload.fan_in=2",
                "workload.request=0B",
            ],
            "must be at least 1 byte",
        ),
    ],
    ids=["request not in an incast", "connections not in an incast", "empty request"],
)
def test_incast_requests_are_checked(
    runner: CliRunner, tiny: Path, overrides: list[str], says: str
):
    args = ["validate", str(tiny)] + [a for o in overrides for a in ("--set", o)]
    error = fails_cleanly(runner, args)
    assert "workload." in error and says in error


def test_invalid_override_names_the_field(runner: CliRunner, tiny: Path):
    assert "topology.leaves" in fails_cleanly(
        runner, ["run", str(tiny), "--set", "topology.leaves=-1"]
    )


def test_missing_file(runner: CliRunner, tmp_path: Path):
    missing = tmp_path / "nowhere.toml"
    message = fails_cleanly(runner, ["run", str(missing)])
    assert "not found" in message and "nowhere.toml" in message


def test_toml_syntax_error_names_the_line(runner: CliRunner, tiny: Path):
    lines = tiny.read_text().splitlines()
    lines[6] = "leaves = = 2"
    tiny.write_text("\n".join(lines))
    message = fails_cleanly(runner, ["validate", str(tiny)])
    assert "tiny.toml, line 7" in message
    assert "leaves = = 2" in message


@pytest.mark.parametrize("assignment", ["seed", "=3", "routing..scheme=ecmp", "seed.x=1"])
def test_malformed_set(runner: CliRunner, tiny: Path, assignment: str):
    assert assignment in fails_cleanly(runner, ["validate", str(tiny), "--set", assignment])


def test_unknown_benchmark(runner: CliRunner):
    assert "b9" in fails_cleanly(runner, ["bench", "--only", "b9"])


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('name = "caf\xe9"\n'.encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 11)"),
        (b"\x00\x01\x02\xff\xfe", "not UTF-8 text (byte 0xff at offset 3)"),
        (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply to read"),
    ],
    ids=["latin-1", "binary", "5000 levels"],
)
def test_any_file_content_is_one_error_line(
    runner: CliRunner, tmp_path: Path, content: bytes, says: str
):
    path = tmp_path / "odd.toml"
    path.write_bytes(content)
    assert says in fails_cleanly(runner, ["validate", str(path)])


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_are_named(runner: CliRunner, tiny: Path, value: str):
    tiny.write_text(tiny.read_text().replace('host_rate = "10Gbps"', f"host_rate = {value}"))
    error = fails_cleanly(runner, ["validate", str(tiny)])
    assert "topology.host_rate" in error and "is not a number a scenario can use" in error


@pytest.mark.parametrize(
    ("name", "folder"),
    [("../../escaped", "escaped"), ("/tmp/abs", "tmp-abs"), ("..", "scenario"), ("a\x00b", "a-b")],
    ids=["parent", "absolute", "dot-dot", "nul"],
)
def test_the_results_folder_never_leaves_results(
    runner: CliRunner,
    tiny: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    folder: str,
):
    """A scenario's name picks its folder under results/ only through a safe slug: a file received
    from someone else cannot write outside it (issue 39, item 3)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(app, ["run", str(tiny), "-q", "--set", f"name={json.dumps(name)}"])
    assert result.exit_code == 0, result.output
    # The name came by --set, so the folder carries the overrides' hash after the slug.
    (written,) = [p.relative_to(tmp_path) for p in tmp_path.rglob("summary.json")]
    assert written.parts[:2] == ("work", "results") and written.name == "summary.json"
    assert len(written.parts) == 4 and written.parts[2].startswith(f"{folder}-"), written


def test_an_unwritable_output_folder_fails_before_simulating(
    runner: CliRunner, tiny: Path, tmp_path: Path
):
    blocker = tmp_path / "file"
    blocker.write_text("")
    error = fails_cleanly(runner, ["run", str(tiny), "--out", str(blocker / "results")])
    assert "cannot write results to" in error and "give another --out" in error


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (
            'kind = "permutation"\nbytes = "200KB"',
            'kind = "flows"\nfile = "nowhere.csv"',
            "nowhere.csv",
        ),
        (
            'kind = "permutation"\nbytes = "200KB"',
            'kind = "permutation"\nbytes = "200KB"\nhosts = [0, "2-99999"]',
            "host 4 does not exist",
        ),
        (
            'kind = "permutation"\nbytes = "200KB"',
            'kind = "incast"\nbytes = "10KB"\nrequesters = 1\nfan_in = 9',
            "9 responders need more than the workload's 4 hosts",
        ),
    ],
    ids=["missing flows file", "hosts beyond the fabric", "fan_in beyond the hosts"],
)
def test_validate_makes_every_check_a_run_makes(
    runner: CliRunner, tiny: Path, old: str, new: str, says: str
):
    """`clos validate` refuses what `clos run` would refuse before its first event (issue 39)."""
    tiny.write_text(tiny.read_text().replace(old, new))
    assert says in fails_cleanly(runner, ["validate", str(tiny)])


def test_a_misspelt_field_or_value_gets_a_suggestion(runner: CliRunner, tiny: Path):
    error = fails_cleanly(runner, ["validate", str(tiny), "--set", "routing.schem=ecmp"])
    assert "routing.schem: unknown field `schem`: did you mean `scheme`?" in error
    error = fails_cleanly(runner, ["validate", str(tiny), "--set", "transport.kind=dctpc"])
    assert "did you mean `dctcp`?" in error
