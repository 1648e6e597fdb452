"""The isolation experiment set of docs/tenants.md: VL2's TCP-only isolation against DWRR across
tenants when one tenant misbehaves, by opening many flows or with an unresponsive sender.

    .venv/bin/python examples/tenants/compare.py

prints the table docs/tenants.md shows: the well-behaved tenant's goodput and the MMR, over the
whole run and over its second half (past every start-up).
"""

from __future__ import annotations

from pathlib import Path

import clos
from clos.results.tenants import window_mmr

HERE = Path(__file__).parent
BUFFERS = 'tenants=[{name="good", buffer="500KB"}, {name="greedy", buffer="500KB"}]'
ARMS = {
    "FIFO (VL2: TCP and VLB only)": ["switch.tenant_queues=false"],
    "DWRR across tenants": ["switch.tenant_queues=true"],
    "DWRR, 500 KB buffer per tenant": ["switch.tenant_queues=true", BUFFERS],
}


def main() -> None:
    print("| misbehaviour | ports | good's goodput | greedy's goodput | MMR | MMR, second half |")
    print("|---|---|---|---|---|---|")
    for scenario, label in [("many-flows", "8 flows against 1"), ("udp-flood", "1 Gb/s datagrams")]:
        for arm, overrides in ARMS.items():
            r = clos.run(clos.Scenario.load(HERE / f"{scenario}.toml", overrides))
            good, greedy = r.summary["tenants"]["tenants"]
            end = int(r.summary["stats"]["simulated_seconds"] * 1e12)
            late = window_mmr(r, end // 2, end)
            print(
                f"| {label} | {arm} | {good['goodput_bps'] / 1e6:.0f} Mb/s "
                f"| {greedy['goodput_bps'] / 1e6:.0f} Mb/s | {r.summary['tenants']['mmr']:.3f} "
                f"| {late:.3f} |"
            )


if __name__ == "__main__":
    main()
