"""The install's optional parts and identity (README, "Installing clos elsewhere"): a missing
extra is one error line naming the command that adds it; --version names the commit; bundled
sweep specs and experiments are found inside the package, not the checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import clos
from clos import _core, build_info, extras
from clos.cli.main import app
from clos.reproduce.experiments import experiments_root
from clos.sweep.sweep import SweepSpec, bundled_spec_names

PACKAGE = Path(clos.__file__).parent


def test_version_names_the_version_and_a_commit():
    out = CliRunner().invoke(app, ["--version"]).stdout
    # A checkout's commit: 12 hex digits, perhaps "-dirty"; the core's own when it differs.
    assert re.fullmatch(
        rf"clos {re.escape(_core.version())} \(commit [0-9a-f]{{12}}(-dirty)?.*\)\n", out
    ), out
    assert _core.commit() != "" and build_info.checkout_commit() is not None


def test_a_missing_extra_is_one_line_naming_its_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(extras, "find_spec", lambda name: None)
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "pip install 'clos[plots]'" in lines[0] and "clos report" in lines[0]
    ), lines
    with pytest.raises(extras.MissingExtra, match=r"clos\[dask\]"):
        extras.require("dask", "a Dask scheduler")


def test_every_extra_is_declared_in_pyproject():
    import tomllib

    declared = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, (module, _) in extras.EXTRAS.items():
        assert extra in declared and any(
            module in requirement for requirement in declared[extra]
        ), extra
    required = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
    # polars reads and writes Parquet itself; pyarrow only serves to_pandas (the notebook extra).
    assert not any("pyarrow" in r for r in required), "the default install needs no pyarrow"


def test_bundled_data_lives_in_the_package():
    assert experiments_root() == PACKAGE / "data" / "experiments"
    assert "ecmp-vs-drill" in bundled_spec_names()
    spec = SweepSpec.load("ecmp-vs-drill")
    assert spec.name == "ecmp-vs-drill" and spec.size == 18


def test_an_unknown_spec_name_lists_the_bundled_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["sweep", "ecmp-vs-dril"])
    assert result.exit_code == 2 and "bundled specs: ecmp-vs-drill" in result.stderr, result.stderr
