"""WCMP's and Quiver's new weights through the control channel (issue 38; docs/updates.md, "WCMP
and Quiver weights through the channel"), on examples/wcmp-weights-through-the-channel.toml: a
leaf-spine fabric (4 ToRs, 2 spines, 10 Gb/s) under WCMP whose spine0-tor3 link is degraded to
2.5 Gb/s at 5 ms, detected 1 ms later. No next hop changes, only weights.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import clos
from clos.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "wcmp-weights-through-the-channel.toml"


def run(*over: str) -> dict:
    return clos.run(Scenario.load(str(EXAMPLE), list(over))).summary


@pytest.mark.parametrize("scheme", ["wcmp", "drill"])
def test_new_weights_are_in_force_latency_plus_rules_over_rate_after_detection(scheme: str):
    """By hand. tor3's uplink to spine0 now carries a quarter of spine1's, so tor3's 3 entries
    (toward tor0-tor2) move to a new weighted group: 3 entry writes, 1 group added and the
    equal-weight group dropped, N = 5 rules. tor0-tor2 each rewrite 1 entry (toward tor3) to a
    new weighted group and keep the equal one for their other entries: 2 rules each; spine0's
    one port to tor3 has nothing to weigh. 11 rules on 4 switches. At R = 1000 rules/s behind
    L = 2.5 ms, tor3 has its new weights L + N / R = 7.5 ms after detection (at 13.5 ms); at
    500 rules/s, 12.5 ms. DRILL's Quiver components (`routing.decompose`, on by default) are
    weighted the same way here, so its rules are WCMP's."""
    for rate, done in ((1000, 7.5e-3), (500, 12.5e-3)):
        s = run(f"routing.scheme={scheme}", f"convergence.rule_rate={rate}")
        u = s["failures"]["update"]["updates"][0]
        assert (u["busiest_switch"], u["most_rules_one_switch"]) == ("tor3", 5)
        assert (u["rules_written"], u["switches_written"]) == (11, 4)
        assert u["time_to_complete_s"] == pytest.approx(done, abs=1e-12)
        assert u["completed_s"] == pytest.approx(6e-3 + done, abs=1e-12)


def test_switches_forward_by_their_old_weights_until_the_new_ones_are_written():
    """A controller whose messages would arrive after the run stops (100 ms round trip) leaves
    every switch on its old weights: the run is the one in which the controller never hears of
    the degrade (detection after the stop), flow for flow. Written in 7.5 ms, the new weights
    take tor3's flows off the slow link and the goodput differs."""
    late = run("convergence.latency=100ms")
    never = run("convergence.detection=100ms")
    assert late["failures"]["update"]["updates"][0]["completed_s"] is None
    assert never["failures"]["update"]["updates"] == []
    assert late["goodput"] == never["goodput"] and late["fct"] == never["fct"]
    soon = run()
    assert soon["goodput"]["aggregate_bps"] > 1.05 * never["goodput"]["aggregate_bps"]


def test_two_phase_writes_whole_versions_of_weights():
    """Two-phase stages the whole new version (59 rules), flips the 16 server ports' stamping
    rules, and deletes the old version (56): 131 writes where in place takes 11; no packet
    mixes weights of both versions."""
    u = run("convergence.update=two_phase")["failures"]["update"]
    v = u["updates"][0]
    assert (v["rules_new_version"], v["rules_old_version"]) == (59, 56)
    assert v["rules_written"] == 59 + 16 + 56
    assert u["mixed_version_packets"] == 0
