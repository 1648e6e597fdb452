"""`clos report` and `clos compare` on synthetic results folders in the saved format.

The folders are written directly (Parquet + summary.json), not by the simulator, so these tests
pin the format the reports read and run in a blink.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib import image
from typer.testing import CliRunner

import clos
from clos.cli.main import app
from clos.results.compare import key_numbers_table, load_runs, run_labels, write_comparison
from clos.results.report import write_report
from clos.results.run_folder import load_run
from clos.scenario import Scenario, bundled_names

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PS = 10**12
# Hop by hop, as the summary lists them.
TIERS = ("host_up", "tor_up", "agg_up", "core_down", "agg_down", "tor_down")


def stats(mean: float, p99: float) -> dict:
    return {"mean": mean, "p50": mean * 0.8, "p99": p99, "p999": p99 * 1.5, "p9999": p99 * 2}


def summary(name: str, fct_p99: float, efficiency: float) -> dict:
    bucket_stats = [
        ("<10KB", 0, 10_000, 3.0),
        ("10KB-1MB", 10_000, 10**6, 2.0),
        (">1MB", 10**6, None, 1.5),
    ]
    buckets = [
        {
            "label": label,
            "min_bytes": lo,
            "max_bytes": hi,
            "count": 10,
            "finished": 10,
            "fct_s": stats(1e-4 * k, fct_p99),
            "slowdown": stats(k, 4 * k),
        }
        for label, lo, hi, k in bucket_stats
    ]
    # An empty bucket: its statistics are null, and the report must draw no bar for it.
    buckets.append(
        {
            "label": "huge",
            "min_bytes": 10**9,
            "max_bytes": None,
            "count": 0,
            "finished": 0,
            "fct_s": None,
            "slowdown": None,
        }
    )
    return {
        "scenario": {"name": name, "seed": 1},
        "stats": {
            "events": 10_000_000,
            "events_per_sec": 7.3e6,
            "cpu_seconds": 1.37,
            "wall_seconds": 1.4,
            "peak_memory_bytes": 66_000_000,
            "simulated_seconds": 0.02,
        },
        "packets": {"sent": 123_456, "delivered": 123_000, "dropped": 456, "in_flight": 0},
        "flows": {
            "count": 40,
            "finished": 39,
            "fct_mean_s": 1e-3,
            "fct_p50_s": 5e-4,
            "fct_p99_s": fct_p99,
            "fct_p999_s": fct_p99 * 1.2,
            "fct_max_s": fct_p99 * 1.3,
            "retransmits": 12,
            "timeouts": 1,
            "with_dupacks": 3,
            "with_dupacks_fraction": 0.075,
            "with_over_3_dupacks": 1,
            "spurious_retransmits": 0,
        },
        "fct": {
            "short_max_bytes": 100_000,
            "long_min_bytes": 10_000_000,
            "buckets": buckets,
            "short": buckets[0],
            "long": buckets[2],
            "all": buckets[1],
        },
        "queueing": {
            "tiers": [
                {
                    "tier": tier,
                    "hop": f"hop {i}",
                    "packets": 1000,
                    "drops": 10 * i,
                    "drop_fraction": 0.01 * i,
                    "mean_s": 1e-6 * (i + 1),
                    "p50_s": 1e-6,
                    "p99_s": 1e-5 * (i + 1),
                    "p999_s": 2e-5,
                    "max_s": 3e-5,
                }
                for i, tier in enumerate(TIERS)
            ]
        },
        "queues": {
            "interval_s": 1e-5,
            "samples": 400,
            "tiers": [
                {
                    "tier": "tor_up",
                    "mean_bytes": 1500,
                    "p50_bytes": 0,
                    "p99_bytes": 30000,
                    "max_bytes": 60000,
                }
            ],
            "uplink_stdev": {"mean_bytes": 700, "p50_bytes": 0, "p99_bytes": 9000},
        },
        "links": {
            "tiers": [
                {
                    "tier": t,
                    "links": 4,
                    "utilisation_mean": 0.5,
                    "utilisation_p50": 0.5,
                    "utilisation_p99": 0.9,
                    "utilisation_max": 0.95,
                }
                for t in TIERS
            ],
            "split_jain": {
                "tor_up": {
                    "switches": 2,
                    "bins": 10,
                    "mean": 0.98,
                    "min": 0.7,
                    "p1": 0.8,
                    "p50": 0.99,
                }
            },
        },
        "services": [
            {
                "name": "web",
                "flows": 20,
                "finished": 20,
                "delivered_bytes": 10**7,
                "goodput_bps": 4e9,
            },
            {
                "name": "storage",
                "flows": 20,
                "finished": 19,
                "delivered_bytes": 10**8,
                "goodput_bps": 6e9,
            },
        ],
        "goodput": {
            "completion_time_s": 0.02,
            "delivered_bytes": 11 * 10**7,
            "aggregate_bps": 1e10,
            "ideal_bps": 1.2e10,
            "efficiency": efficiency,
            "jain": 0.97,
        },
        "load_balancer": {"scheme": "ecmp", "salted": True},
        "workload": {"kind": "permutation", "bytes": 200000},
    }


def links_table() -> pl.DataFrame:
    """Two ToRs with two uplinks each, plus one link of every other tier."""
    rows = [
        (0, "tor0", "agg0", "tor_up"),
        (1, "tor0", "agg1", "tor_up"),
        (2, "tor1", "agg0", "tor_up"),
        (3, "tor1", "agg1", "tor_up"),
    ]
    rows += [(4 + i, f"{t}-src", f"{t}-dst", t) for i, t in enumerate(TIERS) if t != "tor_up"]
    n = len(rows)
    rng = np.random.default_rng(1)
    return pl.DataFrame(
        {
            "id": pl.Series([r[0] for r in rows], dtype=pl.UInt32),
            "src": [r[1] for r in rows],
            "dst": [r[2] for r in rows],
            "tier": [r[3] for r in rows],
            "rate_bps": pl.Series([10**10] * n, dtype=pl.UInt64),
            "bytes": pl.Series(rng.integers(10**5, 10**7, n), dtype=pl.UInt64),
            "packets": pl.Series(rng.integers(100, 10**4, n), dtype=pl.UInt64),
            "drops": pl.Series(rng.integers(0, 10, n), dtype=pl.UInt64),
            "ecn_marks": pl.Series([0] * n, dtype=pl.UInt64),
            "queueing_ps": pl.Series(rng.integers(0, 10**9, n), dtype=pl.UInt64),
            "utilisation": rng.uniform(0, 1, n),
        }
    )


def flows_table(scale: float) -> pl.DataFrame:
    rng = np.random.default_rng(2)
    n = 40
    size = rng.integers(1_000, 5_000_000, n)
    fct = (rng.lognormal(-8, 1, n) * scale * PS).astype(np.int64)
    finished = np.arange(n) != 0  # one unfinished flow: fct 0, slowdown NaN
    ideal = (size * 8 / 1e10 * PS).astype(np.int64) + 1
    u64 = pl.UInt64
    return pl.DataFrame(
        {
            "id": pl.Series(range(n), dtype=pl.UInt32),
            "src": pl.Series(rng.integers(0, 8, n), dtype=pl.UInt32),
            "dst": pl.Series(rng.integers(0, 8, n), dtype=pl.UInt32),
            "service": ["web" if i % 2 else "storage" for i in range(n)],
            "bytes": pl.Series(size, dtype=u64),
            "delivered": pl.Series(np.where(finished, size, size // 2), dtype=u64),
            "start_ps": pl.Series([0] * n, dtype=u64),
            "end_ps": pl.Series(np.where(finished, fct, 0), dtype=u64),
            "finished": finished,
            "fct_ps": pl.Series(np.where(finished, fct, 0), dtype=u64),
            "ideal_fct_ps": pl.Series(ideal, dtype=u64),
            "slowdown": np.where(finished, fct / ideal, np.nan),
            **{
                c: pl.Series([0] * n, dtype=u64)
                for c in ("retransmits", "timeouts", "dupacks", "out_of_order")
            },
        }
    )


def timeseries_table(scale: float = 1.0) -> pl.DataFrame:
    bins = [i * 10**9 for i in range(20)]  # 1 ms bins
    rng = np.random.default_rng(int(scale * 100))
    rows = [
        (b, s, int(rate / 8 / 1e3), rate)
        for b in bins
        for s in ("web", "storage")
        for rate in [float(rng.uniform(1e9, 5e9) / scale)]
    ]
    return pl.DataFrame(
        rows,
        schema={
            "bin_start_ps": pl.UInt64,
            "service": pl.String,
            "bytes": pl.UInt64,
            "goodput_bps": pl.Float64,
        },
        orient="row",
    )


def queues_table() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    rows = [(t * 10**7, link, int(rng.integers(0, 60_000))) for t in range(50) for link in range(4)]
    return pl.DataFrame(
        rows, schema={"time_ps": pl.UInt64, "link": pl.UInt32, "bytes": pl.UInt32}, orient="row"
    )


def link_timeseries_table() -> pl.DataFrame:
    rng = np.random.default_rng(4)
    rows = [
        (b * 10**9, link, int(rng.integers(0, 10**6)), float(rng.uniform()))
        for b in range(20)
        for link in range(10)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "bin_start_ps": pl.UInt64,
            "link": pl.UInt32,
            "bytes": pl.UInt64,
            "utilisation": pl.Float64,
        },
        orient="row",
    )


def write_results(
    folder: Path,
    name: str = "tiny",
    fct_p99: float = 2e-3,
    efficiency: float = 0.9,
    scale: float = 1.0,
) -> Path:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(summary(name, fct_p99, efficiency), indent=2))
    flows_table(scale).write_parquet(folder / "flows.parquet")
    links_table().write_parquet(folder / "links.parquet")
    queues_table().write_parquet(folder / "queues.parquet")
    timeseries_table(scale).write_parquet(folder / "timeseries.parquet")
    link_timeseries_table().write_parquet(folder / "link_timeseries.parquet")
    return folder


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "tiny")


def images(html: Path) -> list[Path]:
    sources = re.findall(r'<img src="([^"]+)"', html.read_text())
    return [html.parent / source for source in sources]


def assert_real_png(path: Path) -> None:
    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_SIGNATURE, path
    pixels = image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels[..., :3].var() > 0, f"{path} is blank"


def test_report_references_only_real_non_blank_pngs(results: Path):
    html = write_report(results)
    assert html == results / "report.html"
    shown = images(html)
    names = {path.name for path in shown}
    assert names == {
        "fabric.png",
        "fct_cdf.png",
        "slowdown_by_bucket.png",
        "goodput_over_time.png",
        "per_hop_queueing.png",
        "queue_length_cdf.png",
        "utilisation_cdf.png",
        "split_fairness.png",
    }
    for path in shown:
        assert path.parent == results / "plots"  # relative paths: the page travels with plots/
        assert_real_png(path)
    assert "not plotted" not in html.read_text()


def test_report_shows_the_key_numbers(results: Path):
    text = write_report(results).read_text()
    assert "clos report: tiny" in text
    for number in (
        "39",
        "2.000 ms",
        "2.400 ms",
        "90.0 %",
        "0.97",
        "123,456",
        "456",
        "7.30 M/s",
        "1.370 s",
        "66.0 MB",
        "1.400 s wall, 1.370 s CPU, for 20.000 ms simulated",  # the run's time taken
    ):
        assert f"<td>{number}</td>" in text, number


def test_report_to_another_folder_or_file(results: Path, tmp_path: Path):
    into_folder = write_report(results, tmp_path / "elsewhere")
    assert into_folder == tmp_path / "elsewhere" / "report.html"
    named = write_report(results, tmp_path / "pages" / "tiny.html")
    assert named == tmp_path / "pages" / "tiny.html"
    for html in (into_folder, named):
        assert images(html)
        for path in images(html):
            assert_real_png(path)


@pytest.mark.parametrize("missing", ["queues", "link_timeseries", "timeseries", "flows"])
def test_missing_optional_table_skips_its_plots(results: Path, missing: str):
    (results / f"{missing}.parquet").unlink()
    html = write_report(results)
    text = html.read_text()
    assert "not plotted" in text
    for path in images(html):
        assert_real_png(path)


def test_empty_optional_tables_and_a_bare_summary(tmp_path: Path):
    folder = write_results(tmp_path / "thin")
    queues_table().clear().write_parquet(folder / "queues.parquet")
    link_timeseries_table().clear().write_parquet(folder / "link_timeseries.parquet")
    html = write_report(folder)
    names = {path.name for path in images(html)}
    assert "queue_length_cdf.png" not in names and "split_fairness.png" not in names
    assert "utilisation_cdf.png" in names  # still drawn from the links table alone

    # Older results: a summary with sections absent or null and no tables at all.
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "summary.json").write_text(
        json.dumps({"flows": {"count": 3, "fct_p99_s": None}, "queues": None})
    )
    text = write_report(bare).read_text()
    assert images(bare / "report.html") == []
    assert text.count("not plotted") == 8  # every figure, the fabric included
    assert "clos report: bare" in text  # no scenario name: the folder's


def test_results_from_before_the_timeseries_table(results: Path):
    (results / "timeseries.parquet").unlink()
    legacy = pl.DataFrame(
        {"bin_start_ps": [0, 10**9, 2 * 10**9], "bytes": [10**5, 2 * 10**5, 0]},
        schema={"bin_start_ps": pl.UInt64, "bytes": pl.UInt64},
    )
    legacy.write_parquet(results / "goodput.parquet")
    series = load_run(results).timeseries
    assert series["service"].to_list() == ["all"] * 3
    assert series["goodput_bps"].to_list() == [8e8, 1.6e9, 0.0]  # 1 ms bins
    assert "goodput_over_time.png" in {path.name for path in images(write_report(results))}


def test_a_rerun_report_removes_plots_it_no_longer_draws(results: Path):
    write_report(results)
    (results / "queues.parquet").unlink()
    write_report(results)
    assert not (results / "plots" / "queue_length_cdf.png").exists()


def test_compare_shows_both_runs_and_their_numbers(tmp_path: Path):
    ecmp = write_results(tmp_path / "ecmp", "shuffle", fct_p99=3e-3, efficiency=0.71)
    vlb = write_results(tmp_path / "vlb", "shuffle", fct_p99=1e-3, efficiency=0.94, scale=0.5)
    html = write_comparison([ecmp, vlb], tmp_path / "cmp")
    assert html == tmp_path / "cmp" / "compare.html"
    text = html.read_text()
    assert "<th>ecmp</th>" in text and "<th>vlb</th>" in text
    assert "<td>71.0 %</td><td>94.0 %</td>" in text
    assert "<td>3.000 ms</td><td>1.000 ms</td>" in text
    shown = images(html)
    overlaid = {"fct_cdf.png", "slowdown_by_bucket.png", "goodput_over_time.png"}
    assert overlaid <= {path.name for path in shown}
    for path in shown:
        assert_real_png(path)


def test_compare_of_one_folder(results: Path, tmp_path: Path):
    html = write_comparison([results], tmp_path / "one.html")
    assert "<th>tiny</th>" in html.read_text()
    for path in images(html):
        assert_real_png(path)


def test_run_labels_tell_same_named_folders_apart(tmp_path: Path):
    a, b = tmp_path / "a" / "ecmp", tmp_path / "b" / "ecmp"
    assert run_labels([a, b, tmp_path / "vlb"]) == ["a/ecmp", "b/ecmp", "vlb"]
    assert run_labels([a, a]) == ["a/ecmp", "a/ecmp (2)"]


def test_terminal_table_has_a_column_per_run(tmp_path: Path):
    runs = load_runs([write_results(tmp_path / "x" / "r"), write_results(tmp_path / "y" / "r")])
    table = key_numbers_table(runs)
    assert [column.header for column in table.columns] == ["section", "quantity", "x/r", "y/r"]


def test_cli_report(runner: CliRunner, results: Path):
    outcome = runner.invoke(app, ["report", str(results)])
    assert outcome.exit_code == 0, outcome.output
    assert f"wrote {results / 'report.html'}" in outcome.output


def test_cli_compare_prints_the_table(runner: CliRunner, tmp_path: Path):
    ecmp = write_results(tmp_path / "ecmp", efficiency=0.71)
    vlb = write_results(tmp_path / "vlb", efficiency=0.94)
    outcome = runner.invoke(app, ["compare", str(ecmp), str(vlb), "--out", str(tmp_path / "c")])
    assert outcome.exit_code == 0, outcome.output
    assert "71.0 %" in outcome.output and "94.0 %" in outcome.output
    assert f"wrote {tmp_path / 'c' / 'compare.html'}" in outcome.output


@pytest.mark.parametrize("command", [["report"], ["compare"]])
def test_cli_on_a_folder_without_results(runner: CliRunner, tmp_path: Path, command: list[str]):
    missing = tmp_path / "nonexistent"
    outcome = runner.invoke(app, [*command, str(missing), "--out", str(tmp_path / "out")])
    assert outcome.exit_code == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert outcome.stderr.startswith("error: ")
    assert f"{missing} does not hold clos results: missing summary.json" in outcome.stderr


def test_cli_on_a_corrupt_table(runner: CliRunner, results: Path):
    (results / "flows.parquet").write_bytes(b"not parquet")
    outcome = runner.invoke(app, ["report", str(results)])
    assert outcome.exit_code == 2, outcome.output
    assert "flows.parquet: not a readable Parquet file" in outcome.stderr


# A bundled scenario run for 2 ms of simulated time (with queue sampling and per-link bins on, so
# every plot has data) must give a report whose plots all exist and are not blank.
@pytest.mark.parametrize("name", bundled_names())
def test_report_renders_for_every_bundled_scenario(name: str, tmp_path: Path):
    scenario = Scenario.load(
        name, ["max_time=2ms", "output.queue_interval=10us", "output.link_timeseries=true"]
    )
    results = clos.run(scenario)
    folder = results.save(tmp_path / name)
    html = write_report(folder)
    shown = images(html)
    expected = {
        "per_hop_queueing.png",
        "queue_length_cdf.png",
        "goodput_over_time.png",
        "utilisation_cdf.png",
    }
    if results.summary["flows"]["finished"]:  # the VL2 shuffle's 500 MB flows need > 2 ms
        expected.add("fct_cdf.png")
    assert expected <= {p.name for p in shown}
    for path in shown:
        assert_real_png(path)


def test_report_names_what_ran(tiny: Path, tmp_path: Path):
    """The report opens with the scenario, its seed, the overrides and the clos that ran it."""
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", str(tiny), "--quiet", "--set", "seed=3", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = write_report(out).read_text()
    for cell in (
        "<td>scenario</td><td>tiny</td>",
        "<td>seed</td><td>3</td>",
        "<td>overrides</td><td>seed=3</td>",
    ):
        assert cell in text.replace("\n", ""), cell
    assert "<td>clos</td><td>clos " in text.replace("\n", "")


# The fabric's picture (results/fabric.py).


def test_fabric_picture_joins_directions_and_places_layers():
    from clos.results.fabric import _layer_of, _undirected

    links = pl.DataFrame(
        {
            "src": ["tor0", "spine0", "h0", "tor0"],
            "dst": ["spine0", "tor0", "tor0", "h0"],
            "tier": ["tor_up", "core_down", "host_up", "tor_down"],
            "utilisation": [0.2, 0.7, 0.5, 0.1],
            "drops": [1, 2, 0, 0],
        }
    )
    pairs = {(r["a"], r["b"]): r for r in _undirected(links).iter_rows(named=True)}
    assert pairs["spine0", "tor0"]["utilisation"] == 0.7  # the busier direction
    assert pairs["spine0", "tor0"]["drops"] == 3  # both directions' drops
    assert pairs["h0", "tor0"]["drops"] == 0
    # Leaf-spine has no aggregation layer: its spines sit right above the ToRs.
    assert _layer_of({"h", "tor", "spine"}) == {"h": 0, "tor": 1, "spine": 2}
    assert _layer_of({"h", "tor", "agg", "int"}) == {"h": 0, "tor": 1, "agg": 2, "int": 3}


@pytest.mark.parametrize("k", [4, 16])
def test_show_draws_a_fabric_small_or_by_tier(tmp_path: Path, k: int):
    out = tmp_path / "fabric.png"
    result = CliRunner().invoke(
        app, ["show", "fat-tree-k4", "--set", f"topology.k={k}", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert_real_png(out)
