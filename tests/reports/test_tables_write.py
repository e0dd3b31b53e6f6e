"""`analyze --tables latex|markdown|csv`: the paper tables as files. The LaTeX is compiled by
pdflatex (booktabs), each file wrapped in a minimal document; Markdown and CSV are read back."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from report_builders import make_report_db
from table_builders import answers_result, metrics_frame

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.core.result import AnalysisResult
from edgestats.analysis.load.environment import load_environment
from edgestats.reports.tables import TableFormatError
from edgestats.reports.tables_wide import Cell, PaperTable, summary_paper_table
from edgestats.reports.tables_write import render, to_markdown, write_tables

# Names a paper's LaTeX must survive: every special character, symbols, an accent, another script.
HOSTILE_DEVICES = ("jetson_nano #1 & 50% {a}", "pi5 × ±2 é ~^ \\ 板")
WRAPPER = (
    "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{%s}\n\\end{document}\n"
)


def pdflatex() -> str:
    """pdflatex with booktabs, or a failure that says how to install them (never a skip)."""
    exe = shutil.which("pdflatex")
    kpsewhich = shutil.which("kpsewhich")
    if exe is None or kpsewhich is None:
        pytest.fail(
            "pdflatex is not installed: `make system-deps` installs it "
            "(texlive-latex-base, texlive-latex-recommended)"
        )
    found = subprocess.run([kpsewhich, "booktabs.sty"], capture_output=True, text=True, check=False)
    if not found.stdout.strip():
        pytest.fail("booktabs.sty is missing: `make system-deps` installs it (texlive-latex-recommended)")
    return exe


def compile_standalone(table: Path) -> str:
    """Compile `table` \\input into a minimal document; its log. Fails with the log's end."""
    document = table.with_name(f"wrap-{table.stem}.tex")
    document.write_text(WRAPPER % table.name, encoding="utf-8")
    done = subprocess.run(
        [pdflatex(), "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=table.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    log = document.with_suffix(".log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, f"{table.name} does not compile:\n{log[-2000:]}"
    assert document.with_suffix(".pdf").stat().st_size > 0
    return log


@pytest.fixture(scope="module")
def real_tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path]:
    """summary and answers of a real DB (two devices with hostile names), and its environment."""
    db = make_report_db(tmp_path_factory.mktemp("paper") / "r.duckdb", device_names=HOSTILE_DEVICES)
    results = {
        **run_analyses(db, AnalysisOptions(only="answers")),
        **run_analyses(db, AnalysisOptions(only="summary")),
    }
    return results, load_environment(db), tmp_path_factory.mktemp("out")


@pytest.mark.slow
def test_every_latex_table_compiles_with_pdflatex(real_tables):
    results, environment, out = real_tables
    paths = write_tables(results, out, "latex", environment=environment)
    names = [p.name for p in paths]
    assert names[:2] == ["answers.tex", "summary.tex"], "the answers and the summary come first"
    assert {"environment-devices.tex", "environment-software.tex"} <= set(names)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert r"\toprule" in text and r"\bottomrule" in text, path.name
        assert "板" not in text and "×" not in text, f"{path.name}: raw unicode left for pdflatex"
        log = compile_standalone(path)
        assert "Missing character" not in log, f"{path.name}: a glyph the font lacks"


@pytest.mark.slow
def test_real_summary_has_one_row_per_configuration_in_every_format(real_tables):
    results, environment, out = real_tables
    configurations = results["summary"].frames["distribution"].height
    table = summary_paper_table(results["summary"].frames["metrics"])
    assert len(table.rows) == configurations
    rows = list(csv.DictReader(io.StringIO(render(table, "csv"))))
    assert len(rows) == configurations, "the CSV: one row per configuration too"
    markdown = render(table, "markdown").splitlines()
    assert sum(line.startswith("| ") for line in markdown) == configurations + 1, "header + one line each"
    latex = render(table, "latex")
    assert latex.count(r"\\") - latex.count(r"\\ {") >= configurations + 1


def test_markdown_is_a_pipe_table_with_its_notes_below():
    text = to_markdown(summary_paper_table(metrics_frame()))
    lines = text.splitlines()
    assert lines[0] == "Table: Per configuration"
    table = [line for line in lines if line.startswith("|")]
    cells = [re.split(r"(?<!\\)\|", line)[1:-1] for line in table]
    assert len(table) == 2 + 4, "header, rule, one line per configuration"
    assert {len(c) for c in cells} == {7}, "every line has the header's columns"
    assert cells[1][2].strip().endswith(":"), "numbers right-aligned"
    assert len({len(line) for line in table}) == 1, "padded: the source reads as a table"
    assert max(len(line) for line in lines) <= 120, "4 metrics and 2 keys fit a 120-column screen"
    assert "| median latency (ms)¹ |" in table[0]
    notes = lines[lines.index("Notes:") + 2 :]
    assert any(line.startswith("1. median latency (ms):") for line in notes)
    assert not any("too few latencies" in line for line in table), "notes stay out of the cells"


def test_csv_of_a_wide_table_keeps_numbers_and_bounds():
    rows = list(csv.DictReader(io.StringIO(render(summary_paper_table(metrics_frame()), "csv"))))
    assert len(rows) == 4
    assert float(rows[0]["latency_median_ms_ci_low"]) == 0.9
    assert float(rows[0]["rss_peak_bytes"]) == 100 * 1024 * 1024, "bytes, as the analysis wrote them"
    assert rows[0]["energy_per_inference_j"] == "", "a missing figure is an empty field, never 0"


def test_write_tables_one_file_per_table(tmp_path: Path):
    results = {
        "summary": AnalysisResult("summary", 0.95, [{"n": 3}], {"metrics": metrics_frame()}),
        "answers": answers_result(),
    }
    environment = {"devices": pl.DataFrame({"device": ["pi5"], "n_runs": [3]}), "software": pl.DataFrame()}
    paths = write_tables(results, tmp_path, "markdown", environment=environment)
    assert paths == [tmp_path / "tables" / f"{k}.md" for k in ("answers", "summary", "environment-devices")]
    assert (
        (tmp_path / "tables" / "answers.md").read_text(encoding="utf-8").startswith("Table: Which is fastest")
    )
    with pytest.raises(TableFormatError, match="latex, markdown, csv"):
        write_tables({}, tmp_path, "xlsx")


@pytest.mark.slow
def test_hand_made_tables_compile_too(tmp_path: Path):
    """Footnote marks, stacked intervals, the answers' × and –: the paths the real DB may not take."""
    results = {
        "summary": AnalysisResult("summary", 0.95, [{"n": 3}], {"metrics": metrics_frame()}),
        "answers": answers_result(),
    }
    for path in write_tables(results, tmp_path, "latex"):
        compile_standalone(path)


def test_footnote_marks_in_markdown_and_latex():
    table = PaperTable(
        "k", "c", [Cell("x (ms)", (2,))], [True], [[Cell("7.00", (1, 12), "[6.00, 8.00]")]], pl.DataFrame()
    )
    assert "| 7.00¹,¹² [6.00, 8.00] |" in to_markdown(table)
    latex = render(table, "latex")
    assert r"7.00\textsuperscript{1,12}\\ {\scriptsize [6.00, 8.00]}" in latex
    assert r"(ms)\textsuperscript{2}" in latex
