"""Every example in the README runs (STYLE.md: documented examples are run by CI)."""

import re
import tomllib
from pathlib import Path

import clos

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_readme_scenario_runs_and_conserves_packets():
    (toml_text,) = blocks("toml")
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
