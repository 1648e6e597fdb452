"""Results survive a save and a load unchanged; a folder without them gives a clear error."""

from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import clos
from clos.results import TABLES


def test_save_load_round_trip(tiny: Path, tmp_path: Path):
    results = clos.run(tiny)
    assert results.flows.height == results.summary["flows"]["count"]
    assert results.links.height > 0

    loaded = clos.load_results(results.save(tmp_path / "saved"))
    assert loaded.summary == results.summary
    for table in TABLES:
        assert_frame_equal(getattr(loaded, table), getattr(results, table))


def test_load_from_a_folder_without_results(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="missing flows.parquet, links.parquet"):
        clos.load_results(tmp_path)
