"""Results survive a save and a load unchanged; a folder without them gives a clear error."""

from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import clos
from clos.results.results import TABLES


def test_save_load_round_trip(tiny: Path, tmp_path: Path):
    results = clos.run(tiny)
    assert results.flows.height == results.summary["flows"]["count"]
    assert results.links.height > 0

    loaded = clos.load_results(results.save(tmp_path / "saved"))
    assert loaded.summary == results.summary
    for table in TABLES:
        assert_frame_equal(getattr(loaded, table), getattr(results, table))


def test_load_from_a_folder_without_results(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"missing flows\.parquet, links\.parquet"):
        clos.load_results(tmp_path)


def test_frames_for_notebooks():
    # 3 ms of the bundled web-search scenario with queue sampling and per-link bins on.
    results = clos.run(
        clos.Scenario.load(
            "leaf-spine-websearch", ["stop=3ms", "output.bin=1ms", "output.link_timeseries=true"]
        )
    )
    flows, links = results.flows, results.links
    assert {"service", "ideal_fct_ps", "slowdown"} <= set(flows.columns)
    assert {"queueing_ps", "utilisation"} <= set(links.columns)
    # The ideal is a physical lower bound (line rate, empty shortest path): no flow beats it.
    done = flows.filter(flows["finished"])
    assert done.height > 0
    assert done["slowdown"].min() >= 1.0
    assert (done["fct_ps"] >= done["ideal_fct_ps"]).all()
    # 10 us sampling of every switch port for 3 ms: 300 samples x (8 x 20 + 4 x 8) ports.
    assert results.queues.height == 300 * (8 * (16 + 4) + 4 * 8)
    # Goodput per service per bin: one service, three 1 ms bins; the bins add up to delivery.
    assert results.timeseries.height == 3
    assert results.timeseries["bytes"].sum() == flows["delivered"].sum()
    assert results.link_timeseries.height == 3 * links.height
    assert (results.link_timeseries["utilisation"] <= 1.0 + 1e-9).all()


def test_repr_is_one_short_line_naming_the_run(tiny: Path):
    """A notebook shows a result as one line: the scenario, flows, headline numbers and the
    tables' sizes, not every table's contents (issue 35)."""
    text = repr(clos.run(tiny))
    assert "\n" not in text and len(text) < 300, text
    assert text.startswith("Run('tiny', 4 flows (4 finished)") and "flows 4 rows" in text, text


def test_efficiency_is_missing_for_open_loop_workloads():
    """Open-loop arrivals offer what they offer: delivered over the hosts' capacity measures the
    load, not the fabric, so every table leaves the efficiency out for them (issue 35)."""
    from clos.results.key_numbers import KEY_NUMBERS

    efficiency = next(k for k in KEY_NUMBERS if k.column == "efficiency")
    closed = {"scenario": {"workload": {"kind": "permutation"}}, "goodput": {"efficiency": 0.9}}
    poisson = {"scenario": {"workload": {"kind": "poisson"}}, "goodput": {"efficiency": 0.1}}
    nested = {
        "scenario": {"workload": {"kind": "services", "services": [{"kind": "incast"}]}},
        "goodput": {"efficiency": 0.1},
    }
    assert efficiency.of(closed) == 0.9
    assert efficiency.of(poisson) is None
    assert efficiency.of(nested) is None
