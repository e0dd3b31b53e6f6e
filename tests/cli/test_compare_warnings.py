"""`edgestats compare` for people and for CI, end to end on real DBs (tests/compare_builders.py):
noisy runs and a wide between-run spread print pyperf's warning, with its cause and next step, in
text, markdown and JSON, and the page's banner; the overall geometric mean of B/A with its interval
in every format, equal to an independent computation from the run medians read straight from the
DBs; markdown keeps the "compared: ..." line; and the warning leaves the exit status and the
verdicts as they are."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from compare_builders import make_db
from scipy import stats
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.formatting import format_interval

runner = CliRunner()
pytestmark = pytest.mark.slow  # each test runs compare end to end on real DBs: 1-5 s
CONFIGS = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 40.0}
SLOWER = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 48.0}
BUSY = "other processes used 85 % of 4 CPUs (> 10 %); load average 5.2 before the run (> 1 per CPU)"
EVERY_MODEL_BUSY = {"cnn9": BUSY, "squeezenet": BUSY}


def run_medians(db: Path) -> dict[str, np.ndarray]:
    """Each model's run medians, read with DuckDB (not through edgestats)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT model, latency_median_ms FROM run_summary").fetchall()
    return {m: np.array([v for model, v in rows if model == m]) for m in sorted({r[0] for r in rows})}


def independent_overall(a_db: Path, b_db: Path) -> tuple[float, float, float]:
    """The geometric mean of the per-model ratios B/A with its 95 % t interval: se^2 adds each
    model's Welch variance (over k^2), df is Satterthwaite's over the sample variances."""
    a, b = run_medians(a_db), run_medians(b_db)
    d, parts = [], []
    for model in a:
        x, y = np.log(a[model]), np.log(b[model])
        d.append(y.mean() - x.mean())
        parts += [(x.var(ddof=1) / len(x), len(x) - 1), (y.var(ddof=1) / len(y), len(y) - 1)]
    total = sum(v for v, _ in parts)
    df = total**2 / sum(v**2 / nu for v, nu in parts)
    half = stats.t.ppf(0.975, df) * math.sqrt(total) / len(d)
    mean = float(np.mean(d))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


@pytest.fixture(scope="module")
def noisy_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Every run of both sides flagged noisy; squeezenet 20 % slower on B."""
    folder = tmp_path_factory.mktemp("noisy")
    before = make_db(folder / "before.duckdb", CONFIGS, noise=EVERY_MODEL_BUSY)
    after = make_db(folder / "after.duckdb", SLOWER, seed=10, noise=EVERY_MODEL_BUSY)
    return before, after


@pytest.fixture(scope="module")
def noisy_outputs(noisy_pair, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """compare of the noisy pair, once per format (the page's folder under "out")."""
    before, after = noisy_pair
    out = tmp_path_factory.mktemp("noisy-page") / "page"
    outputs: dict[str, Any] = {"out": out}
    for fmt in ("text", "markdown", "json"):
        extra = ["--out", str(out)] if fmt == "text" else []
        outputs[fmt] = runner.invoke(app, ["compare", str(before), str(after), "--format", fmt, *extra])
    return outputs


def test_noisy_runs_print_the_warning_in_text_markdown_and_json(noisy_outputs) -> None:
    text = noisy_outputs["text"]
    assert text.exit_code == 1, text.output  # the warning leaves the regression's exit status as it is
    lines = text.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    start = lines.index("WARNING: the result may be unstable")
    assert start < next(i for i, line in enumerate(lines) if line.startswith("model="))  # before the tables
    said = " ".join(line.strip() for line in lines[start:])
    assert "20 of 20 runs compared were flagged noisy by collect's noise sentinel" in said
    assert "10 of 10 on A, 10 of 10 on B" in said
    assert "other processes used … of … CPUs: 20 runs; load average … before the run: 20 runs" in said
    assert "next: quiet the machine (edgestats doctor" in said

    markdown = noisy_outputs["markdown"]
    assert markdown.exit_code == 1
    assert "> **WARNING: the result may be unstable**" in markdown.stdout
    assert "> - 20 of 20 runs compared were flagged noisy" in markdown.stdout

    assert noisy_outputs["json"].exit_code == 1
    document = json.loads(noisy_outputs["json"].stdout)
    [warning] = document["warnings"]
    assert warning["kind"] == "noisy" and warning["n_noisy"] == {"a": 10, "b": 10}
    assert warning["reasons"] == {"other processes used … of … CPUs": 20, "load average … before the run": 20}
    assert "edgestats doctor" in warning["next_step"]
    assert document["regression"] is True


def test_the_warning_changes_no_verdict_or_exit_status(noisy_pair, tmp_path: Path) -> None:
    """The same latencies without the noisy flags: the same verdicts, figures and exit status."""
    before, after = noisy_pair
    quiet_before = make_db(tmp_path / "before.duckdb", CONFIGS)
    quiet_after = make_db(tmp_path / "after.duckdb", SLOWER, seed=10)
    documents = []
    for a, b in ((before, after), (quiet_before, quiet_after)):
        result = runner.invoke(app, ["compare", str(a), str(b), "--format", "json"])
        assert result.exit_code == 1
        documents.append(json.loads(result.stdout))
    noisy, quiet = documents
    assert quiet["warnings"] == [] and noisy["warnings"]
    figures = ("estimate", "ci_low", "ci_high", "p_holm")  # equal up to the order runs are summed in
    for entry_n, entry_q in zip(noisy["comparisons"], quiet["comparisons"], strict=True):
        assert entry_n["config"] == entry_q["config"]
        for m_n, m_q in zip(entry_n["metrics"], entry_q["metrics"], strict=True):
            assert m_n["verdict"] == m_q["verdict"]
            assert [m_n[f] for f in figures] == pytest.approx([m_q[f] for f in figures], rel=1e-9)
    [o_n], [o_q] = noisy["overall"], quiet["overall"]
    assert [o_n[f] for f in figures[:3]] == pytest.approx([o_q[f] for f in figures[:3]], rel=1e-9)


def test_a_wide_between_run_spread_prints_the_warning(tmp_path: Path) -> None:
    spreads = {"squeezenet": 0.25}
    before = make_db(tmp_path / "before.duckdb", CONFIGS, spreads=spreads, n_runs=4)
    after = make_db(tmp_path / "after.duckdb", CONFIGS, spreads=spreads, n_runs=4, seed=7)
    result = runner.invoke(app, ["compare", str(before), str(after), "--format", "json"])
    [warning] = json.loads(result.stdout)["warnings"]
    assert warning["kind"] == "spread" and warning["limit_cv"] == 0.1
    medians = {"a": run_medians(before)["squeezenet"], "b": run_medians(after)["squeezenet"]}
    for entry in warning["configurations"]:
        assert entry["config"]["model"] == "squeezenet"
        values = medians[entry["side"]]
        assert entry["cv"] == pytest.approx(np.std(values, ddof=1) / np.mean(values), rel=1e-9)
    text = runner.invoke(app, ["compare", str(before), str(after)]).stdout
    assert "WARNING: the result may be unstable" in text and "collect --until-precise" in " ".join(
        text.split()
    )


def test_the_overall_ratio_is_in_every_format_and_equals_an_independent_computation(
    noisy_pair, noisy_outputs
) -> None:
    estimate, low, high = independent_overall(*noisy_pair)
    document = json.loads(noisy_outputs["json"].stdout)
    [overall] = document["overall"]
    assert overall["metric"] == "latency_median_ms" and overall["n_configurations"] == 2
    assert (overall["estimate"], overall["ci_low"], overall["ci_high"]) == pytest.approx(
        (estimate, low, high), rel=1e-9
    )
    shown = format_interval(estimate, low, high)
    text = " ".join(noisy_outputs["text"].stdout.split())
    assert (
        "overall B/A (geometric mean across configurations, 95% interval over runs): "
        f"median latency {shown} over 2 configurations"
    ) in text
    assert f"median latency {shown} over 2 configurations" in noisy_outputs["markdown"].stdout
    html = (noisy_outputs["out"] / "index.html").read_text()
    assert f"the geometric mean of B/A over 2 configurations is {shown}" in html
    assert "Overall: the geometric mean of B/A across the matched configurations" in html
    assert json.loads((noisy_outputs["out"] / "compare.json").read_text())["overall"] == document["overall"]


def test_the_page_opens_with_the_warning_banner(noisy_outputs, tmp_path: Path) -> None:
    html = (noisy_outputs["out"] / "index.html").read_text()
    banner = html.index("<h2>Warning: the result may be unstable</h2>")
    assert banner < html.index("<h2>Compare: B against A</h2>")
    assert (
        "20 of 20 runs compared were flagged noisy" in html[banner:] and "edgestats doctor" in html[banner:]
    )
    quiet = make_db(tmp_path / "quiet.duckdb", CONFIGS)
    runner.invoke(app, ["compare", str(quiet), str(quiet), "--out", str(tmp_path / "quiet")])
    assert "Warning: the result may be unstable" not in (tmp_path / "quiet" / "index.html").read_text()


def test_markdown_keeps_the_compared_line(tmp_path: Path) -> None:
    db = make_db(tmp_path / "one.duckdb", {("pytorch", "cnn9"): 10.0, ("onnxruntime", "cnn9"): 6.0})
    args = ["compare", str(db), "--a", "framework = 'pytorch'", "--b", "framework = 'onnxruntime'"]
    text = runner.invoke(app, args).stdout
    markdown = runner.invoke(app, [*args, "--format", "markdown"]).stdout
    line = "compared: framework pytorch (A) vs onnxruntime (B)"
    assert line in text.splitlines() and line in markdown.splitlines()
    assert markdown.splitlines().index(line) < markdown.splitlines().index(
        "| configuration | metric | A | B | B/A [interval] | p (Holm) | verdict | runs |"
    )
