"""`edgestats compare` reads well with 2 noisy runs a side and in a narrow terminal, end to end on
real DBs (tests/compare_builders.py): what a verdict could detect is said in words (never a figure
like 434,234,365,500,553,216% or 4.34e+17%) in text, markdown and the page, the JSON keeps the
number beside the words, and the runs that would settle an inconclusive verdict equal an
independent computation from the run medians read straight from the DBs. At 80 and 120 columns
no line is wider than the terminal, lines break at word boundaries but never inside a command,
a quoted expression or "±5%", and every table row keeps its columns under the header's."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from compare_builders import make_db
from scipy import stats
from typer.testing import CliRunner

from edgestats.cli import app

runner = CliRunner()
pytestmark = pytest.mark.slow  # compare end to end on real DBs, several formats: 5-20 s
BEFORE = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 40.0}
AFTER = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 48.0}
BUSY = "other processes used 85 % of 4 CPUs (> 10 %); load average 5.2 before the run (> 1 per CPU)"
NOISE = {"cnn9": BUSY, "squeezenet": BUSY}
SPREADS = {"cnn9": 0.6, "squeezenet": 0.1}  # run medians 10-60 % apart, 2 runs a side
# A figure nobody can use: four or more comma groups (1,234,567,890) or an exponent (4.34e+17).
ABSURD = re.compile(r"\d{1,3}(,\d{3}){3,}|\d(\.\d+)?e\+?\d")
VERDICTS = ("same", "slower", "faster", "inconclusive")
READABLE = ("could detect no change below 100×", "could detect only a change ≥ ")


@pytest.fixture(scope="module")
def noisy_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("two-noisy-runs")
    before = make_db(folder / "before.duckdb", BEFORE, n_runs=2, spreads=SPREADS, noise=NOISE)
    after = make_db(folder / "after.duckdb", AFTER, n_runs=2, seed=10, spreads=SPREADS, noise=NOISE)
    return before, after


@pytest.fixture(scope="module")
def clean_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("clean")
    return make_db(folder / "before.duckdb", BEFORE), make_db(folder / "after.duckdb", AFTER, seed=10)


def invoke(pair: tuple[Path, Path], *args: str, columns: int = 80) -> Any:
    result = runner.invoke(app, ["compare", *map(str, pair), *args], env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    return result


def run_medians(db: Path, model: str) -> np.ndarray:
    """One model's run medians, read with DuckDB (not through edgestats)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT latency_median_ms FROM run_summary WHERE model = ?", [model]).fetchall()
    return np.array([r[0] for r in rows])


def welch_half_width(sd_a: float, sd_b: float, n: int) -> float:
    """Half the width of scipy's 95 % Welch interval, n values a side with exactly these SDs."""
    rng = np.random.default_rng(n)
    a, b = (rng.normal(size=n) for _ in range(2))
    a, b = ((x - x.mean()) / x.std(ddof=1) * sd for x, sd in ((a, sd_a), (b, sd_b)))
    low, high = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    return (high - low) / 2


def test_the_json_keeps_the_figure_and_says_it_in_words_with_the_runs_to_resolve(noisy_pair) -> None:
    document = json.loads(invoke(noisy_pair, "--format", "json").stdout)
    said = []
    for entry in document["comparisons"]:
        [latency] = entry["metrics"]
        model = entry["config"]["model"]
        assert latency["verdict"] == "inconclusive"
        mde = latency["min_detectable_pct"]
        assert mde is None or mde > 100  # the number stays, however large
        said.append(latency["min_detectable_text"])
        logs = [np.log(run_medians(db, model)) for db in noisy_pair]
        sd_a, sd_b = (float(np.std(x, ddof=1)) for x in logs)
        step = latency["next_step"]
        n = step["runs_needed"]
        assert step["target_rel_half_width"] == 0.05 and step["more_runs"] == n - 2
        assert welch_half_width(sd_a, sd_b, n) <= math.log1p(0.05)
        fewer = n - 1 if n <= 100 else int(n * 0.97)  # exact below 100 runs, steps of 2 % above
        assert welch_half_width(sd_a, sd_b, fewer) > math.log1p(0.05)
        assert step["text"] == f"about {n - 2:,} more runs a side would resolve ±5%"
    assert sorted(said) == sorted(
        ["could detect no change below 100×", next(s for s in said if s.startswith(READABLE[1]))]
    )


@pytest.mark.parametrize("columns", [80, 120])
def test_text_reads_well_at_80_and_120_columns(noisy_pair, clean_pair, columns: int) -> None:
    for pair in (noisy_pair, clean_pair):
        lines = invoke(pair, columns=columns).stdout.splitlines()
        text = "\n".join(lines)
        assert all(len(line) <= columns for line in lines), max(lines, key=len)
        assert not ABSURD.search(text), ABSURD.search(text)
        assert not any(line.lstrip().startswith(("±", "%", "×", "]", "TRUE")) for line in lines), text
        for header in (i for i, line in enumerate(lines) if line.lstrip().startswith("metric ")):
            column, p_end = lines[header].index("verdict"), lines[header].index(" p ") + 2
            for row in lines[header + 1 :]:
                if not row.startswith("  median latency"):
                    break
                # the verdict starts under "verdict", Holm's p ends under "p", however wide the interval
                assert row[column - 1] == " " and row[column:].startswith(VERDICTS), (row, lines[header])
                assert row[p_end - 1] != " " and row[p_end] == " ", (row, lines[header])
        if pair is noisy_pair:
            assert all(s.split(" ≥ ")[0] in " ".join(text.split()) for s in READABLE)
            assert any('--where "noisy IS NOT TRUE"' in line for line in lines)
            assert any("edgestats collect --until-precise" in line for line in lines)
            assert "more runs a side would resolve ±5%" in " ".join(text.split())


def test_markdown_and_the_page_say_it_in_words(noisy_pair, tmp_path: Path) -> None:
    markdown = invoke(noisy_pair, "--format", "markdown").stdout
    rows = [line for line in markdown.splitlines() if line.startswith("| model=")]
    assert len(rows) == 2 and not ABSURD.search(markdown)
    assert any("| inconclusive (could detect no change below 100×: about " in r for r in rows)
    out = tmp_path / "page"
    invoke(noisy_pair, "--out", str(out))
    page = (out / "index.html").read_text()
    body = re.sub(r"<(script|style).*?</\1>", "", page, flags=re.S)  # the text, not the code or the CSS
    assert not ABSURD.search(body), ABSURD.search(body)
    assert "could detect (80% power)" in body and "no change below 100×" in body
    assert "could find no slowdown below 100× at this spread" in body and "next step" in body
    [specs] = re.findall(r'<script type="application/json" id="edgestats-specs">(.*?)</script>', page, re.S)
    spec_rows = [
        row
        for spec in json.loads(specs).values()
        for rows_ in spec.get("datasets", {}).values()
        for row in rows_
    ]
    assert spec_rows and all("min_detectable_pct" not in row for row in spec_rows)
    assert {row.get("could_detect") for row in spec_rows} >= {"no change below 100×"}
