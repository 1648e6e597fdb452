"""scripts/crosscheck/run.py: clos's half of the ns-3 cross-check runs here (ns-3's half needs the
500 MB ns3 wheel and runs by hand, docs/validation.md, "Beside ns-3")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "crosscheck" / "run.py"


def load():
    spec = importlib.util.spec_from_file_location("crosscheck", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_clos_fills_the_bottleneck_as_dctcp_should():
    run = load()
    r = run.run_clos(2, "dctcp", 0.01, 0.03)
    aggregate, lo, hi, jain = run.describe(r)
    # Header-limited capacity of 10 Gb/s with 1,460 B of payload in 1,538 B frames: 9.493 Gb/s;
    # DCTCP keeps the port busy (its queue hovers at K = 65 packets), so within 1%.
    assert abs(aggregate - 10 * 1460 / 1538) < 0.01 * 9.493, aggregate
    assert jain > 0.99 and r["drops"] == 0
    assert 0.5 * run.K_PACKETS < r["mean_queue_packets"] < 1.5 * run.K_PACKETS, r["mean_queue_packets"]
