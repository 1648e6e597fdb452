"""The training runs of the profile-guided build (scripts/pgo.sh, docs/performance.md).

Every benchmark and every bundled scenario, each cut short: the profile should see each scheme's
hot path in proportion to how a user's runs exercise it, not one benchmark only. A few seconds in
all, under the instrumented build.
"""

from pathlib import Path

import clos
from clos.scenario import Scenario

DATA = Path(clos.__file__).parent / "data"

# Long enough for queues to fill and the schemes' steady state to dominate the counts; short
# enough that training adds seconds, not minutes, to a build. B2 trained to 6 ms instead of 2 ms
# (its queues still filling) ran every benchmark 2-4% faster (docs/performance.md); 10 ms no more.
STOP = {
    "b1-fat-tree-k8": "10ms",
    "b2-fat-tree-k16": "6ms",
    "b2-fat-tree-k16-spray": "6ms",
    "b3-fat-tree-k24": "1ms",
    "b4-leaf-spine-drill": "3ms",
}


def main() -> None:
    runs = [(path, STOP.get(path.stem)) for path in sorted((DATA / "bench").glob("*.toml"))]
    runs += [(path, "5ms") for path in sorted((DATA / "scenarios").glob("*.toml"))]
    for path, stop in runs:
        if stop is None:
            continue  # B5 (8,192 hosts, ECMP): its paths are B2's and B3's, at a larger size
        clos.run(Scenario.load(path, [f"stop={stop}"]))


if __name__ == "__main__":
    main()
