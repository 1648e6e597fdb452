"""scripts/pisces_dynamic_experiment.py (Pisces's Figure 5a, docs/tenants.md "Measured: varying
demand") at its small size: every time x 0.2, the run without weight allocation, whose numbers
docs/tenants.md gives at full size."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pisces_dynamic_experiment.py"


def load():
    spec = importlib.util.spec_from_file_location("pisces_dynamic_experiment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figure_5a_mix_at_small_size(tmp_path: Path):
    """By weight and demand: at the peak every tenant wants more than its share (the diurnal
    ones 2 x 1,600/s against a fifth of 8,000/s, the others a tenth), so the servers are full
    and the diurnal tenants get twice the weight-1 tenants' throughput: 2 (paper: "the proper
    2-to-1 weighted ratio"), here within 0.5, the skew of Zipf partitions left to FQ + PP + RS
    (2.2-2.4 measured). In the trough the four varying tenants ask 100/s each, so the constant
    ones share the other 7,600/s: 1,900/s each, 2.375 times their peak share of 800/s, within
    10%. At the second burst the six weight-1 tenants are all backlogged: the bursty ones get
    what the constant ones do (paper: equal), within 25% (0.84-0.88 measured: the constant
    tenants' partitions sit better)."""
    module = load()
    r = module.run(0.2, "FQ + PP + RS")
    assert r["peak_total"] == pytest.approx(8000, rel=0.01)
    assert r["peak_ratio"] == pytest.approx(2.0, abs=0.5)
    assert r["trough_excess"] == pytest.approx(2.375, rel=0.1)
    assert r["burst_ratio"] == pytest.approx(1.0, abs=0.25)
    module.figure({"FQ + PP + RS": r}, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 10_000
    assert module.table({"FQ + PP + RS": r}).count("\n") == len(module.ROWS) + 1
