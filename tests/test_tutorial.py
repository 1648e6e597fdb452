"""docs/tutorial.md runs as written: its ```bash blocks, in order, in an empty folder, each exit 0,
leave the files the text promises, and print the numbers the text quotes."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
# The `clos` and `python` that the tutorial's reader runs: this environment's.
BIN = Path(sys.executable).parent


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", TUTORIAL.read_text(), flags=re.S | re.M)


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The folder the blocks ran in, and what each printed."""
    folder = tmp_path_factory.mktemp("tutorial")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    printed = []
    for block in blocks("bash"):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{block}\nexited {done.returncode}:\n{done.stderr}"
        printed.append(done.stdout)
    return folder, printed


def test_the_tutorial_has_its_commands():
    commands = "\n".join(blocks("bash"))
    for command in ("clos run", "clos compare", "clos report", "clos sweep"):
        assert command in commands
    assert (BIN / "clos").exists(), f"no clos beside {sys.executable}"


def test_every_block_runs_and_leaves_what_the_text_promises(tutorial):
    folder, _ = tutorial
    for run in ("ecmp", "drill"):
        summary = json.loads((folder / run / "summary.json").read_text())
        assert summary["scenario"]["routing"]["scheme"] == run
        assert (folder / run / "flows.parquet").exists()
    assert (folder / "compare" / "compare.html").exists()
    assert (folder / "drill" / "report.html").exists()
    assert (folder / "drill" / "plots" / "fct_cdf.png").exists()
    assert (folder / "seeds" / "sweep.parquet").exists()
    assert (folder / "seeds" / "sweep.html").exists()
    with (folder / "seeds" / "sweep-stats.csv").open(newline="") as f:
        stats = {r["routing.scheme"]: r for r in csv.DictReader(f)}
    assert {s: stats[s]["seeds"] for s in stats} == {"ecmp": "5", "drill": "5"}
    assert (folder / "seeds" / "runs").is_dir()
    with (folder / "seeds" / "sweep.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 10


def test_the_numbers_it_quotes_are_the_ones_it_prints(tutorial):
    """The excerpt of `clos compare` and the claims about it: when the model changes them,
    update docs/tutorial.md (the table and the sentences after it)."""
    folder, printed = tutorial
    compare = next(
        out for block, out in zip(blocks("bash"), printed, strict=True) if "clos compare" in block
    )
    excerpt = next(b for b in blocks("text") if "FCT p99" in b)
    for line in excerpt.splitlines():
        if "..." not in line:
            assert line in compare, (
                f"docs/tutorial.md quotes a line `clos compare` no longer prints:\n{line}"
            )
    ecmp, drill = (json.loads((folder / r / "summary.json").read_text()) for r in ("ecmp", "drill"))
    assert drill["flows"]["fct_p99_s"] < 0.75 * ecmp["flows"]["fct_p99_s"]  # "about a third"
    assert drill["flows"]["fct_p50_s"] > ecmp["flows"]["fct_p50_s"]
    assert drill["flows"]["retransmits"] == drill["flows"]["spurious_retransmits"] > 0
    assert drill["packets"]["dropped"] == 0
    with (folder / "seeds" / "sweep.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    p99 = {(r["routing.scheme"], r["seed"]): float(r["fct_p99_s"]) for r in rows}
    for seed in {r["seed"] for r in rows}:
        assert p99["drill", seed] < p99["ecmp", seed], f"seed {seed}"
