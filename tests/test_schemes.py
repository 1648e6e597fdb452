"""`clos schemes`: every scheme the core implements, with its parameters and defaults."""

from typer.testing import CliRunner

from clos.cli.main import app
from clos.cli.schemes import schemes

# The schemes issue 4 requires: the seeds' systems and the peers they compare against.
REQUIRED = {
    "ecmp",
    "vlb",
    "spray-rr",
    "spray-random",
    "spray-counter",
    "drill",
    "drill-flow",
    "localflow",
    "localflow-ns",
    "presto",
    "letflow",
    "conga",
    "wcmp",
}


def test_every_required_scheme_is_listed_with_its_parameters():
    by_name = {s.name: s for s in schemes()}
    assert REQUIRED <= set(by_name)
    drill = {p.name: p.default for p in by_name["drill"].params}
    assert drill == {
        "d": "2",
        "m": "1",
        "engines": "1",
        "entering": "100ns",
        "decompose": "true",
    }, (
        "DRILL(2,1), single engine (DRILL §4), packets invisible for a pipeline delay, §3.4's decomposition on"
    )
    assert {p.name for p in by_name["presto"].params} == {"flowcell", "weighted"}
    assert by_name["ecmp"].params == ()


def test_cli_prints_the_parameters(runner: CliRunner):
    result = runner.invoke(app, ["schemes"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name in ("drill", "localflow-ns", "conga"):
        assert name in result.stdout
    assert "flowlet_gap" in result.stdout and "500us" in result.stdout
    # Brackets are text, not style tags: the header keeps "[routing]".
    assert "parameters ([routing] fields, default)" in result.stdout


def test_a_parameter_of_another_scheme_is_an_error_naming_the_field(runner: CliRunner, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        '[topology]\nkind = "fat_tree"\nk = 4\n[workload]\nkind = "permutation"\nbytes = "1MB"\n'
        '[routing]\nscheme = "ecmp"\nflowcell = "64KB"\n'
    )
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "routing.flowcell" in result.output and "presto" in result.output
