"""scripts/scale_table.py: the paper-scale table in docs/reproduction.md is made by it."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "scripts" / "scale_table.py"
HEADER = "paper,claim,where,paper_value,ours,ratio,verdict,note\n"


def test_paper_values_sit_beside_small_ones_and_missing_ones_say_so(tmp_path: Path):
    small = tmp_path / "small.csv"
    small.write_text(
        HEADER + "plts,a,§IV,1.5,1.47,0.98,matches,\nvl2,b,§5.1,0.94,0.93,0.99,matches,\n"
    )
    paper = tmp_path / "paper.csv"
    paper.write_text(HEADER + "plts,a,§IV,1.5,1.43,0.95,matches,\n")
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(small), str(paper)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[2] == "| plts/a | 1.5 | 1.47 | 1.43 | matches |"
    assert out[3] == "| vl2/b | 0.94 | 0.93 | not run | |"


def test_without_files_it_prints_its_usage_and_exits_2():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 2 and "scale_table.py SMALL_CLAIMS_CSV" in result.stderr


def test_a_missing_file_is_named_without_a_traceback(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "none.csv"), str(tmp_path / "none.csv")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "none.csv: no such file" in result.stderr
    assert "Traceback" not in result.stderr
