"""The storage service model (`[service]`, crates/clos-core/src/service/) and `clos reproduce
pisces` (python/clos/data/experiments/pisces/): bad input names its field, a run reports the
service section, and the reproduction gives every claim a verdict."""

from __future__ import annotations

import csv
import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import clos
from clos._core import ScenarioError
from clos.cli.main import app
from clos.reproduce.experiments import experiments_root
from clos.reproduce.verdicts import PASSING

PISCES = experiments_root() / "pisces"

# One server, two clients, two tenants of weights 1 and 3 (crates' sim/service.rs tests the
# same shape by hand).
SMALL = {
    "seed": 1,
    "stop": "1s",
    "topology": {
        "kind": "leaf_spine",
        "leaves": 1,
        "spines": 1,
        "hosts_per_leaf": 3,
        "host_rate": "1Gbps",
        "link_delay": "1us",
    },
    "tenants": [{"name": "a", "weight": 1}, {"name": "b", "weight": 3}],
    "service": {
        "servers": [0],
        "clients": ["1-2"],
        "capacity": 1000,
        "partitions": 4,
        "replication": 1,
        "concurrency": 8,
        "fair_queuing": True,
    },
}


def test_a_run_reports_per_tenant_throughput_latency_and_mmr():
    summary = clos.run(SMALL).summary
    service = summary["service"]
    done = [t["completed"] for t in service["tenants"]]
    # One server of 1,000 requests/s kept busy for 1 s (less the first request's trip), 8
    # outstanding per tenant: FQ splits it 1 : 3 (within a quantum and the run's ends).
    assert 990 <= sum(done) <= 1000
    assert done[0] / sum(done) == pytest.approx(0.25, abs=0.01)
    assert service["mmr"] == pytest.approx(1.0, abs=0.04)
    assert all(t["latency_p99_s"] > 0 for t in service["tenants"])
    # Requests and responses are flows: two per completed request, and a few in flight.
    assert summary["flows"]["count"] >= 2 * sum(done)
    assert summary["packets"]["sent"] == (
        summary["packets"]["delivered"]
        + summary["packets"]["dropped"]
        + summary["packets"]["in_flight"]
    )


def test_the_documented_example_splits_by_weight():
    text = (Path(__file__).resolve().parent.parent / "docs" / "tenants.md").read_text()
    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", text, flags=re.S) if "[service]" in b]
    service = clos.run(tomllib.loads(block)).summary["service"]
    done = [t["completed"] for t in service["tenants"]]
    # As the crate's hand-derived test: a quarter for tenant a within 1 point.
    assert done[0] / sum(done) == pytest.approx(0.25, abs=0.01)


def test_without_a_service_the_summary_has_no_service_section():
    table = {k: v for k, v in SMALL.items() if k != "service"}
    table["workload"] = {"kind": "permutation", "bytes": "10KB", "tenant": "a"}
    table["stop"] = "all_flows_done"
    assert "service" not in clos.run(table).summary


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"capacity": 0}, "service.capacity"),
        ({"clients": [0, 1]}, "service.clients"),
        ({"replication": 2}, "service.replication"),
        ({"zipf": -1}, "service.zipf"),
        ({"servers_per_tenant": 3}, "service.servers_per_tenant"),
        ({"demand": [{"tenant": "nobody", "concurrency": 1}]}, "service.demand[0].tenant"),
        ({"demand": [{"tenant": "a"}]}, "service.demand[0]"),
        ({"rs_step": 2.0}, "service.rs_step"),
        ({"bin": "0s"}, "service.bin"),
        ({"capacity_rps": 5}, "service"),
        ({"write_fraction": 1.5}, "service.write_fraction"),
        (
            {"demand": [{"tenant": "a", "rate": 5.0, "concurrency": 0}]},
            "service.demand[0].concurrency",
        ),
        ({"demand": [{"tenant": "a", "rate": -5.0, "concurrency": 2}]}, "service.demand[0].rate"),
        ({"write_cost": 0}, "service.write_cost"),
        (
            {"demand": [{"tenant": "a", "concurrency": 1, "write_fraction": -0.1}]},
            "service.demand[0].write_fraction",
        ),
        (
            {"demand": [{"tenant": "a", "concurrency": 4, "profile": "bursty"}]},
            "service.demand[0].peaks",
        ),
        ({"demand": [{"tenant": "a", "concurrency": 4, "low": 2}]}, "service.demand[0].low"),
        (
            {
                "demand": [
                    {"tenant": "a", "concurrency": 4, "profile": "diurnal", "peaks": [["2s", "1s"]]}
                ]
            },
            "service.demand[0].peaks[0]",
        ),
        (
            {
                "demand": [
                    {
                        "tenant": "a",
                        "concurrency": 4,
                        "profile": "bursty",
                        "peaks": [["1s", "2s"]],
                        "low": 5,
                    }
                ]
            },
            "service.demand[0].low",
        ),
        # 10^9 requests/s for 1 s: 2 x 10^9 flows, terabytes (the memory guard).
        ({"capacity": 1e9}, "service.capacity"),
    ],
)
def test_bad_input_names_the_field(change: dict, field: str):
    table = {**SMALL, "service": {**SMALL["service"], **change}}
    with pytest.raises(ScenarioError, match=field.replace("[", r"\[").replace("]", r"\]")):
        clos.validate(table)


def test_a_service_needs_tenants_and_a_stop_time():
    with pytest.raises(ScenarioError, match="tenants"):
        clos.validate({k: v for k, v in SMALL.items() if k != "tenants"})
    with pytest.raises(ScenarioError, match="stop"):
        clos.validate({**SMALL, "stop": "all_flows_done"})
    with pytest.raises(ScenarioError, match="workload"):
        clos.validate({k: v for k, v in SMALL.items() if k != "service"})


def test_reproduce_pisces_gives_every_claim_a_verdict(tmp_path: Path):
    result = CliRunner().invoke(
        app, ["reproduce", "pisces", "--out", str(tmp_path), "--workers", "1", "-q"]
    )
    rows = list(csv.DictReader((tmp_path / "claims.csv").open()))
    claims = tomllib.loads((PISCES / "claims.toml").read_text())["claims"]
    assert {r["claim"].split("/")[-1] for r in rows} == {c["name"] for c in claims}
    for row in rows:
        assert row["verdict"] in PASSING, row
        float(row["ours"])
    assert result.exit_code == 0, result.output


def test_the_report_shows_the_storage_service(tmp_path: Path):
    clos.run(SMALL).save(tmp_path / "run")
    page = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--out", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "Storage service" in text and "latency p99" in text


def test_read_only_is_the_default():
    """Without write_fraction the service reads only: nothing about writes in the summary, and
    the scenario echoed as written (the golden summaries, tests/test_golden.py, hold the rest)."""
    summary = clos.run(SMALL).summary
    assert "writes" not in summary["service"]
    assert all("write_throughput_rps" not in t for t in summary["service"]["tenants"])
    assert "write_fraction" not in summary["scenario"]["service"]
    assert "write_cost" not in summary["scenario"]["service"]


def test_the_report_shows_reads_and_writes_apart(tmp_path: Path):
    table = {**SMALL, "service": {**SMALL["service"], "write_fraction": 0.5}}
    summary = clos.run(table).summary
    rows = summary["service"]["tenants"]
    # Half the requests are writes: within 5 standard deviations of a binomial count.
    for row in rows:
        n = row["completed"]
        assert abs(row["writes"] - n / 2) < 5 * (n / 4) ** 0.5, row
        assert row["reads"] + row["writes"] == n
    clos.run(table).save(tmp_path / "run")
    page = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--out", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "writes/s" in text and "write p99" in text and "read p99" in text
