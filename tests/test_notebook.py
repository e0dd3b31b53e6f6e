"""docs/example.ipynb runs headlessly, top to bottom, in a kernel on this interpreter, and shows
what it promises: polars frames and the report's Altair charts (docs/python-api.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parents[1] / "docs" / "example.ipynb"
VEGA_LITE = ("application/vnd.vegalite.v5+json", "application/vnd.vegalite.v6+json")
# A probe cell added to the copy that runs: the kernel must be this interpreter (the venv that
# has edgestats installed), not whatever `python3` a kernelspec on the machine points at.
PROBE = "import sys; print('kernel executable:', sys.executable)"


def is_chart(output: dict) -> bool:
    data = output.get("data", {})
    return any(m in data for m in VEGA_LITE) or "vega-embed" in data.get("text/html", "")


def is_frame(output: dict) -> bool:
    data = output.get("data", {})
    html, text = data.get("text/html", ""), data.get("text/plain", "")
    return ("<table" in html and "shape:" in html) or text.startswith("shape: (")


def run_notebook() -> nbformat.NotebookNode:
    """The notebook, with its outputs, executed from docs/ (it finds sample_data/ from there)."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(PROBE))
    # kernel_name python3 is ipykernel's own spec, which jupyter_client starts with sys.executable
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    return notebook


def outputs(notebook: nbformat.NotebookNode) -> list[dict]:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_frames_and_charts(tmp_path, monkeypatch):
    # The kernel writes its IPython profile and connection files under these; tests never write
    # to the user's home (tests/conftest.py), and the kernel inherits this environment.
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    notebook = run_notebook()  # raises CellExecutionError, with the cell and its traceback, on any error
    shown = outputs(notebook)
    assert not [o for o in shown if o["output_type"] == "error"]
    probe = "".join(o.get("text", "") for o in notebook.cells[0].outputs)
    assert f"kernel executable: {sys.executable}" in probe, probe
    charts = [o for o in shown if is_chart(o)]
    frames = [o for o in shown if is_frame(o)]
    assert len(charts) >= 2, f"expected the hyperparams and summary charts, got {len(charts)}"
    assert len(frames) >= 4, f"expected runs, sql, analysis and comparison frames, got {len(frames)}"
    # The hyperparams cell prints the report's sentence: the analysis ran on the imported table.
    printed = "".join(o.get("text", "") for o in shown if o["output_type"] == "stream")
    assert "training_time_s depends" in printed and "runs added" in printed


def test_the_stored_notebook_is_valid_and_carries_no_outputs():
    """The notebook in docs/ is the source: outputs would hold one machine's temporary paths."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    assert any("edgestats.open(" in cell.source for cell in code)
