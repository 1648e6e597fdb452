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
    aggregate, _lo, _hi, jain = run.describe(r)
    # Header-limited capacity of 10 Gb/s with 1,460 B of payload in 1,538 B frames: 9.493 Gb/s;
    # DCTCP keeps the port busy (its queue hovers at K = 65 packets), so within 1%.
    assert abs(aggregate - 10 * 1460 / 1538) < 0.01 * 9.493, aggregate
    assert jain > 0.99 and r["drops"] == 0
    assert 0.5 * run.K_PACKETS < r["mean_queue_packets"] < 1.5 * run.K_PACKETS, r[
        "mean_queue_packets"
    ]


def test_clos_per_flow_ecmp_reaches_the_max_min_share_of_its_paths():
    run = load()
    shape = (2, 2, 2)
    pairs = run.permutation(1, leaves=2, hosts=2)
    # clos's own ECMP choices, read from its per-link counters one flow at a time; with seed 1
    # flows 0 and 1 (both from tor0) hash onto the same uplink, flows 2 and 3 (from tor1) onto
    # one each.
    paths = run.clos_paths(pairs, 1, shape)
    r = run.run_clos_leaf_spine(pairs, 0.005, 0.02, "ecmp", 1, shape)
    run.check_paths(r["links"], pairs, paths, hosts=2)
    # Theory: on fixed paths DCTCP's long flows approach the max-min fair allocation, each link
    # carrying 10 Gb/s of 1,538-byte data frames and one 84-byte ACK per segment of the flows
    # whose ACKs cross it (`run.max_min`). A flow alone on its path gets the payload rate its
    # host link leaves beside the ACKs it sends for the flow it receives; flows sharing a link
    # split it.
    fair = run.max_min(pairs, paths, hosts=2)
    assert paths[0][0] == paths[1][0] and paths[2][0] != paths[3][0], paths
    assert abs(sum(r["flows"]) - sum(fair)) < 0.01 * sum(fair), (r["flows"], fair)
    for got, want in zip(r["flows"], fair, strict=True):
        assert abs(got - want) < 0.08 * want, (r["flows"], fair)


def test_clos_incast_without_loss_takes_the_port_s_serialisation_time():
    run = load()
    n = 8
    r = run.run_clos_incast(n, run.RESPONSE, "dctcp", [0.0] * n)
    # Theory: with no drop and the receiver's port never idle, the round lasts as long as that
    # port takes to serialise every frame of the 8 x 64 KiB responses (45 frames each, 69,046 B
    # of wire time at 10 Gb/s), plus the first frame's way to the switch and the last frame's
    # 1 us to the receiver: 445.1 us. It cannot be shorter, and is no longer if the port never
    # idles: 8 first windows are 80 packets and DCTCP's marks above K = 65 keep the queue below
    # the 200-packet buffer, so nothing is dropped and no sender waits for a timeout.
    bound = run.incast_bound(n, run.RESPONSE)
    assert r["drops"] == 0 and r["timeouts"] == 0, r
    assert bound * (1 - 1e-9) <= r["duration"] < 1.005 * bound, (r["duration"], bound)
