"""Every example in the README runs (STYLE.md: documented examples are run by CI)."""

import re
import tomllib
from pathlib import Path

import pytest

import clos

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


WORKLOADS = (ROOT / "docs" / "workloads.md").read_text()


def blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_readme_scenario_runs_and_conserves_packets():
    toml_text = blocks("toml")[0]
    results = clos.run(tomllib.loads(toml_text))
    packets = results.summary["packets"]
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    assert results.summary["flows"]["finished"] == results.summary["flows"]["count"] == 16


def test_readme_python_example_runs(tmp_path, monkeypatch):
    (python_text,) = blocks("python")
    monkeypatch.chdir(ROOT)
    code = python_text.replace('"out/"', repr(str(tmp_path / "out")))
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "out" / "summary.json").exists()


WORKLOAD_EXAMPLES = blocks("toml")[1:] + blocks("toml", WORKLOADS)


@pytest.mark.parametrize("toml_text", WORKLOAD_EXAMPLES, ids=lambda t: t.split("\n")[0])
def test_workload_examples_run_at_a_small_size(toml_text):
    # CI runs each example for 2 ms of simulated time (max_time caps every run); the workload is
    # still generated in full, so errors anywhere in it surface.
    table = tomllib.loads(toml_text)
    table["max_time"] = "2ms"
    results = clos.run(table)
    packets = results.summary["packets"]
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    assert results.summary["flows"]["count"] > 0


FAILURES = (ROOT / "docs" / "failures.md").read_text()


@pytest.mark.parametrize("toml_text", blocks("toml", FAILURES), ids=lambda t: t.split("\n")[0])
def test_failure_examples_run_and_count_their_losses(toml_text):
    results = clos.run(tomllib.loads(toml_text))
    packets = results.summary["packets"]
    assert packets["sent"] == packets["delivered"] + packets["dropped"] + packets["in_flight"]
    failures = results.summary["failures"]
    assert failures["sent_into_failed_links_after_convergence"] == 0
    assert failures["lost_on_failed_links"] + failures["lost_to_link_loss"] > 0
    assert [e["what"] for e in failures["timeline"]] == ["down", "loss 0.01", "up"]
