"""The example notebook (examples/notebook.ipynb) runs headless, cell by cell, as a user's would
(issue 35): its outputs are the run's key numbers as HTML, tables and figures."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def test_example_notebook_runs_and_shows_tables_and_figures(tmp_path: Path):
    notebook = nbformat.read(ROOT / "examples" / "notebook.ipynb", as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<th>quantity</th>" in h for h in html)  # the run's key numbers
    assert any("fct_ms" in h for h in html)  # a table in milliseconds
    pictures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(pictures) == 2  # the FCT CDF and the fabric
