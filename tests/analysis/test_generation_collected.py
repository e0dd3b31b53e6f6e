"""generation on runs collected for real: `collect --kind generation` with PyTorch on llama15m
(prompt 8, 8 new tokens, context depths 0 and 48, 2 runs each), then `analyze --only generation
--out`: analysis.json has every figure of every configuration with its interval across runs, and
the depth fit's slope and interval equal an independent statsmodels fit (OLS, HC3 standard errors;
t on tests/depth_fit_reference.py's Bell-McCaffrey degrees of freedom) of the runs' mean
inter-token latencies read from generation_summary; the report has the section.
Cost: about 30 s on two busy cores (4 worker processes of about 4 s, the analyses, the report)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from depth_fit_reference import hc3_interval
from typer.testing import CliRunner

from edgestats.cli import app

pytestmark = pytest.mark.frameworks
runner = CliRunner()


@pytest.fixture(scope="module")
def collected(tmp_path_factory, model_cache) -> Path:
    db = tmp_path_factory.mktemp("generation-collected") / "gen.duckdb"
    args = ["collect", "--kind", "generation", "--db", str(db), "--cache-dir", str(model_cache)]
    args += ["--framework", "pytorch", "--prompt-tokens", "8", "--new-tokens", "8", "--threads", "1"]
    args += ["--context-depth", "0", "--context-depth", "48", "--repeat", "2", "--power", "none"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return db


def rss_peaks(db: Path, depth: int) -> list[int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        query = "SELECT rss_peak_bytes FROM generation_summary WHERE context_depth = ?"
        return [row[0] for row in con.execute(query, [depth]).fetchall()]
    finally:
        con.close()


def test_analysis_json_has_every_figure_and_the_depth_fit_equals_statsmodels(collected, tmp_path):
    result = runner.invoke(app, ["analyze", str(collected), "--only", "generation", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    entries = json.loads((tmp_path / "analysis.json").read_text())["generation"]
    configs = [e for e in entries if "metrics" in e]
    assert sorted(e["group"]["context_depth"] for e in configs) == [0, 48]
    for entry in configs:
        assert entry["n"] == 2 and entry["group"]["framework"] == "pytorch"
        figures = {m["metric"]: m for m in entry["metrics"]}
        for name in ("ttft_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "itl_p50_ms"):
            assert 0 < figures[name]["ci_low"] <= figures[name]["estimate"] <= figures[name]["ci_high"], name
        # Two fresh processes of one model can peak at the very same RSS (a CI run met it): then
        # there is no spread to build an interval from, and the figure says so.
        peaks = rss_peaks(collected, entry["group"]["context_depth"])
        rss = figures["rss_peak_bytes"]
        if len(set(peaks)) == 1:
            assert rss["ci_low"] is None and "are equal" in rss["note"] and rss["estimate"] == peaks[0], rss
        else:
            assert 0 < rss["ci_low"] <= rss["estimate"] <= rss["ci_high"], rss
        assert figures["kv_cache_bytes"]["estimate"] > 0
        assert figures["decode_energy_per_token_j"]["estimate"] is None  # --power none: and it says why
        assert figures["decode_energy_per_token_j"]["note"]
    (fit,) = [e for e in entries if "slope" in e]
    con = duckdb.connect(str(collected), read_only=True)
    try:
        frame = con.execute("SELECT context_depth AS depth, itl_mean_ms FROM generation_summary").df()
    finally:
        con.close()
    expected = hc3_interval(frame["depth"], frame["itl_mean_ms"])["slope"]
    assert fit["n"] == 4 and fit["depths"] == [0, 48]
    assert (fit["slope"]["estimate"], fit["slope"]["ci_low"], fit["slope"]["ci_high"]) == pytest.approx(
        expected, rel=1e-9
    )
    page = (tmp_path / "index.html").read_text()
    assert 'id="generation"' in page and "Decode time per token against context depth" in page
