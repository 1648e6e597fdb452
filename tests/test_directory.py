"""`clos directory`: the CLI finds the Rust service's binary, starts a local cluster and benchmarks
it, and says clearly what to do when the binary or etcd is missing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clos.cli import directory
from clos.cli.main import app

REQUIRED = bool(os.environ.get("CI") or os.environ.get("CLOS_REQUIRE_ETCD"))


def service_or_skip() -> Path:
    """The binary and etcd, or a skip; in CI a missing piece is a failure, not a skip."""
    try:
        path = directory.binary()
    except directory.DirectoryError as error:
        if REQUIRED:
            raise
        pytest.skip(str(error))
    if shutil.which("etcd") is None and not os.environ.get("CLOS_ETCD"):
        if REQUIRED:
            pytest.fail("etcd is not installed (apt-get install etcd-server)")
        pytest.skip("etcd is not installed")
    return path


def test_directory_help_lists_up_and_bench(runner: CliRunner):
    result = runner.invoke(app, ["directory", "--help"])
    assert result.exit_code == 0
    assert "up" in result.stdout and "bench" in result.stdout


def test_a_missing_binary_is_one_error_line_with_the_fix(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CLOS_DIRECTORY_BIN", str(tmp_path / "nowhere"))
    result = runner.invoke(app, ["directory", "up", "--for", "1s"])
    assert result.exit_code == 2
    assert "CLOS_DIRECTORY_BIN" in result.stderr
    assert "cargo build --release -p clos-directory" in result.stderr
    assert "Traceback" not in result.output


def test_a_bad_duration_is_refused_by_name(runner: CliRunner):
    service_or_skip()
    result = runner.invoke(app, ["directory", "up", "--for", "10"])
    assert result.exit_code == 2
    assert "--for" in result.stderr and "no unit" in result.stderr


def test_up_starts_a_cluster_that_answers_then_stops(runner: CliRunner, tmp_path: Path):
    service_or_skip()
    folder = tmp_path / "cluster"
    result = runner.invoke(
        app,
        ["directory", "up", "--etcd", "1", "--servers", "2", "--dir", str(folder), "--for", "1s"],
    )
    assert result.exit_code == 0, result.output
    assert "directory system up on loopback" in result.stdout
    assert "stopped" in result.stdout
    configs = sorted(p.name for p in folder.glob("ds*.toml"))
    assert configs == ["ds0.toml", "ds1.toml"]
    events = [json.loads(line) for line in (folder / "ds0.log").read_text().splitlines()]
    messages = {event["message"] for event in events}
    assert {"listening", "synchronised with the store"} <= messages, (
        "structured logs, one JSON a line"
    )
    # TLS by default, with a CA made for the cluster, and commands that check against it.
    listening = next(event for event in events if event["message"] == "listening")
    assert listening["tls"] is True
    assert {"ca.crt", "ds0.crt", "ds0.key", "ds1.crt", "ds1.key"} <= {
        p.name for p in folder.iterdir()
    }
    assert f"--ca-file {folder / 'ca.crt'}" in result.stdout


def test_up_without_tls_says_so_loudly(runner: CliRunner, tmp_path: Path):
    service_or_skip()
    folder = tmp_path / "cluster"
    result = runner.invoke(
        app,
        [
            "directory", "up", "--etcd", "1", "--servers", "1", "--dir", str(folder),
            "--for", "1s", "--no-tls",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "TLS:               OFF" in result.stdout and "--no-tls" in result.stdout
    assert "TLS IS OFF" in (folder / "ds0.log").read_text()
    assert not (folder / "ca.crt").exists()


def test_bench_reports_latency_percentiles_per_offered_rate(runner: CliRunner, tmp_path: Path):
    service_or_skip()
    out = tmp_path / "bench.json"
    result = runner.invoke(
        app,
        [
            "directory", "bench", "--etcd", "1", "--servers", "2", "--agents", "2",
            "--update-rates", "400", "--lookup-rates", "2000,4000", "--step", "400ms",
            "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert [s["offered_per_s"] for s in report["lookups"]] == [2000, 4000]
    assert report["tls"] is True, "the benchmark runs in TLS unless told --no-tls"
    for step in report["updates"] + report["lookups"]:
        assert step["failed"] == 0
        latency = step["latency_ms"]
        assert 0 < latency["p50"] <= latency["p99"] <= latency["p999"] <= latency["max"]
    # Every update waits for its 50 ms batch window and the commit.
    assert report["updates"][0]["latency_ms"]["p50"] >= 25
    assert "highest lookup rate with p99 < 10 ms" in result.stdout
