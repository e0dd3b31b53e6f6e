"""`edgestats compare` end to end: real DBs written through the Store, the CLI through typer's
CliRunner; the exit status (0 same, 1 regression, 2 bad input), the three formats, the page, and
the minimum detectable effect beside `same` and `inconclusive` (at 80 and 120 columns)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest
from compare_builders import make_db
from scipy import stats
from typer.testing import CliRunner

from edgestats.cli import app

runner = CliRunner()


BEFORE = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 40.0}


def test_two_dbs_regression_exits_1_and_names_the_slower_configuration(tmp_path: Path) -> None:
    before = make_db(tmp_path / "before.duckdb", BEFORE)
    after = make_db(
        tmp_path / "after.duckdb", {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 48.0}, seed=10
    )
    result = runner.invoke(app, ["compare", str(before), str(after)])
    assert result.exit_code == 1, result.output
    text = result.stdout
    assert "matched on: device, framework, model, batch_size, threads" in text
    assert all(len(line) <= 80 for line in text.splitlines()), max(text.splitlines(), key=len)
    blocks = {block.splitlines()[0].split(":")[0]: block for block in text.split("\n\n")}
    assert "slower" in blocks["model=squeezenet"] and "same" in blocks["model=cnn9"]
    assert "regression: 1 configuration significantly slower by more than 5%" in text

    document = json.loads(runner.invoke(app, ["compare", str(before), str(after), "--format", "json"]).stdout)
    assert document["regression"] is True and document["match_key"][:3] == ["device", "framework", "model"]
    squeeze = next(c for c in document["comparisons"] if c["config"]["model"] == "squeezenet")
    latency = next(m for m in squeeze["metrics"] if m["metric"] == "latency_median_ms")
    assert latency["n_a"] == latency["n_b"] == 5 and latency["n_unit"] == "runs"
    assert 0 < latency["ci_low"] < 1.2 < latency["ci_high"] and latency["verdict"] == "slower"


def test_no_change_exits_0_and_markdown_is_one_table(tmp_path: Path) -> None:
    before = make_db(tmp_path / "before.duckdb", BEFORE)
    again = make_db(tmp_path / "again.duckdb", BEFORE, seed=20)
    result = runner.invoke(app, ["compare", str(before), str(again), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("| model=")]
    # one row per configuration: only latency is measured here (no samples, no power source)
    assert len(rows) == 2 and all(
        "| median latency |" in r and "| same (within ±5%; could detect ≥ " in r for r in rows
    )
    assert result.stdout.rstrip().endswith("no significant regression")


def test_two_selections_of_one_db_compare_the_frameworks_and_write_the_page(tmp_path: Path) -> None:
    db = make_db(tmp_path / "one.duckdb", {("pytorch", "cnn9"): 10.0, ("onnxruntime", "cnn9"): 6.0})
    out = tmp_path / "page"
    result = runner.invoke(
        app,
        [
            "compare",
            str(db),
            "--a",
            "framework = 'pytorch'",
            "--b",
            "framework = 'onnxruntime'",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "compared: framework pytorch (A) vs onnxruntime (B)" in result.stdout
    assert "faster" in result.stdout
    html = (out / "index.html").read_text()
    assert "Compare: B against A" in html and "ratio B/A" in html
    assert json.loads((out / "compare.json").read_text())["differing"] == {
        "framework": {"a": "pytorch", "b": "onnxruntime"}
    }


def test_the_page_of_two_dbs_says_which_side_each_device_row_is(tmp_path: Path) -> None:
    """A before/after of one device: its two header rows read "pi5 (A)" and "pi5 (B)", not "pi5" twice."""
    before = make_db(tmp_path / "before.duckdb", BEFORE)
    after = make_db(tmp_path / "after.duckdb", BEFORE, seed=20, n_runs=3)
    out = tmp_path / "page"
    result = runner.invoke(app, ["compare", str(before), str(after), "--out", str(out)])
    assert result.exit_code == 0, result.output
    # each device row: its name, then (after any other cells) its run count, the row's last cell
    rows = re.findall(
        r"<td[^>]*>(pi5[^<]*)</td>(?:<td[^>]*>[^<]*</td>)*?<td class=num[^>]*>(\d+)</td></tr>",
        (out / "index.html").read_text(),
    )
    assert rows == [("pi5 (A)", "10"), ("pi5 (B)", "6")], rows


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--a", "framework = 'pytorch'"], "give two DBs"),
        (["--a", "framework = 'pytorch'", "--b", "framework = 'tflite'"], "side B"),
        (["--a", "1; DROP TABLE runs", "--b", "TRUE"], "--a"),
        (
            ["--a", "model = 'cnn9'", "--b", "model = 'squeezenet'", "--match", "model"],
            "no configuration of A matches",
        ),
        (["--a", "TRUE", "--b", "TRUE", "--format", "yaml"], "--format"),
    ],
)
@pytest.mark.slow
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    db = make_db(tmp_path / "one.duckdb", BEFORE)
    result = runner.invoke(app, ["compare", str(db), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_a_missing_db_exits_2(tmp_path: Path) -> None:
    db = make_db(tmp_path / "one.duckdb", BEFORE)
    result = runner.invoke(app, ["compare", str(db), str(tmp_path / "nowhere.duckdb")])
    assert result.exit_code == 2 and "nowhere.duckdb" in result.output


def run_logs(db: Path, model: str) -> np.ndarray:
    """The log run medians of one model, read straight from the DB (not through edgestats)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT latency_median_ms FROM run_summary WHERE model = ?", [model]).fetchall()
    return np.log([r[0] for r in rows])


def slower_share(logs_a: np.ndarray, logs_b: np.ndarray, ratio: float, m: int, threshold: float) -> float:
    """An independent power computation by simulation with scipy's Welch test: normal logs with
    the runs' counts, B/A = ratio; how often compare's rule says slower (p at Holm's first step of
    m below 0.05 and the 95 % interval above 1 + threshold). The printed MDE takes the runs' SDs as
    measured, not known: each comparison's true SDs are the measured ones over u, u^2 drawn as
    chi^2_nu / nu with nu the measured SDs' Welch-Satterthwaite df. 20,000 comparisons, seed 4."""
    rng = np.random.default_rng(4)
    s_a, s_b = np.std(logs_a, ddof=1), np.std(logs_b, ddof=1)
    v_a, v_b = s_a**2 / len(logs_a), s_b**2 / len(logs_b)
    nu = (v_a + v_b) ** 2 / (v_a**2 / (len(logs_a) - 1) + v_b**2 / (len(logs_b) - 1))
    u = np.sqrt(rng.chisquare(nu, (20_000, 1)) / nu)
    a = rng.normal(0.0, s_a / u, (20_000, len(logs_a)))
    b = rng.normal(np.log(ratio), s_b / u, (20_000, len(logs_b)))
    welch = stats.ttest_ind(b, a, axis=1, equal_var=False)
    low = welch.confidence_interval(0.95).low
    return float(np.mean((m * welch.pvalue < 0.05) & (low > np.log1p(threshold))))


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 120])
def test_same_and_inconclusive_say_what_they_could_detect(tmp_path: Path, columns: int) -> None:
    """cnn9 (5 vs 5 runs, 1 % apart) is `same`, squeezenet (3 vs 3 runs, 8 % apart) `inconclusive`:
    each verdict says the smallest slowdown it would find with 80 % power, which the JSON gives
    with the power and the test's alpha (Holm's first step, 0.05 / 2), and which an independent
    simulation with scipy's Welch test (the true SDs drawn about the measured ones by their
    sampling error) finds slower 80 % of the time; the inconclusive one says
    how many more runs would resolve it. At 120 columns the `same` detail is on the verdict's line;
    a longer one, and any at 80, under it; no line is longer than the width. The page (--out)
    shows it as well."""
    spreads = {"squeezenet": 0.08}
    before = make_db(tmp_path / "before.duckdb", BEFORE, spreads=spreads, n_runs=3)
    after = make_db(tmp_path / "after.duckdb", BEFORE, spreads=spreads, n_runs=3, seed=30)
    result = runner.invoke(app, ["compare", str(before), str(after)], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    document = json.loads(runner.invoke(app, ["compare", str(before), str(after), "--format", "json"]).stdout)
    for entry in document["comparisons"]:
        [latency] = entry["metrics"]
        model, mde = entry["config"]["model"], latency["min_detectable_pct"]
        assert latency["min_detectable_power"] == 0.8 and latency["min_detectable_alpha"] == pytest.approx(
            0.025
        )
        shown = f"{mde:.1f}%" if mde < 9.95 else f"{mde:,.0f}%"
        assert latency["min_detectable_text"] == f"could detect ≥ {shown}"
        detail = (
            f"(within ±5%; could detect ≥ {shown})"
            if latency["verdict"] == "same"
            else f"(could detect ≥ {shown}: {latency['next_step']['text']})"
        )
        row = next(
            i for i, line in enumerate(lines) if line.startswith("  median latency") and model in lines[i - 2]
        )
        # on the verdict's line where it fits (the short `same` detail at 120 columns), else under it
        on_the_line = len(lines[row]) + len(detail) + 1 <= columns or lines[row].endswith(")")
        if on_the_line:
            assert lines[row].endswith(f"{latency['verdict']} {detail}")
        else:
            assert lines[row].endswith(latency["verdict"]) and lines[row + 1].strip() == detail
        assert on_the_line == (columns == 120 and latency["verdict"] == "same")
        power = slower_share(
            run_logs(before, model), run_logs(after, model), 1 + mde / 100, m=2, threshold=0.05
        )
        assert abs(power - 0.8) < 0.015, (model, mde, power)
    verdicts = {e["config"]["model"]: e["metrics"][0]["verdict"] for e in document["comparisons"]}
    assert verdicts == {"cnn9": "same", "squeezenet": "inconclusive"}
    if columns == 120:  # the page shows it too: a column of the table and a clause of the sentence
        out = tmp_path / "page"
        assert runner.invoke(app, ["compare", str(before), str(after), "--out", str(out)]).exit_code == 0
        html = (out / "index.html").read_text()
        assert "could detect (80% power)" in html and "the smallest slowdown found with 80% power is" in html
