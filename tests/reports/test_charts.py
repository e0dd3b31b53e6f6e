"""Golden tests of the chart builders: each builder's Vega-Lite spec (`chart.to_dict()`,
normalised) for a fixed input frame is compared with tests/golden/charts/<name>.spec.json.

The input frames are frozen too (<name>.input.json, made once from the analyses of
report_builders.make_report_db), so a golden changes only when a builder does. After a
deliberate change, regenerate with EDGESTATS_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest
from report_builders import make_report_db

from edgestats.analysis import run_analyses
from edgestats.analysis.power_trace import PowerTrace, load_power_trace
from edgestats.reports import charts_energy, charts_latency, charts_tradeoff, charts_training
from edgestats.reports.report import figures_for, generic_interval_chart

GOLDEN = Path(__file__).parents[1] / "golden" / "charts"
UPDATE = bool(os.environ.get("EDGESTATS_UPDATE_GOLDEN"))

# builder name -> (analysis, frame key or None for a frame built otherwise, build(frames) -> chart)
BUILDERS = {
    "latency_distribution": ("summary", ("metrics", "distribution"),
                             lambda f: charts_latency.latency_distribution_chart(f["metrics"], f["distribution"])),
    "latency_ecdf": ("summary", "ecdf", lambda f: charts_latency.latency_ecdf_chart(f["ecdf"])),
    "latency_quantiles": ("summary", "metrics", lambda f: charts_latency.latency_distribution_chart(f["metrics"])),
    "phase_breakdown": ("breakdown", "phases", lambda f: charts_latency.phase_breakdown_chart(f["phases"])),
    "load_ratio": ("breakdown", "ratios", lambda f: charts_latency.ratio_chart(f["ratios"], ratio_name="load_model / steady",
                                                                       title="load_model / steady")),
    # The fitted line and its band come from the analysis (energy's band frame), no longer from the
    # chart: the points input gained n_runs, the band input was added, the golden spec is unchanged.
    "time_energy": ("energy", ("points", "band"), lambda f: charts_energy.time_energy_chart(f["points"], f["band"])),
    "correlation": ("energy", "correlation", lambda f: charts_energy.correlation_chart(f["correlation"])),
    "pareto": ("tradeoff", "pareto", lambda f: charts_tradeoff.pareto_chart(f["pareto"])),
    "winners": ("tradeoff", "winners", lambda f: charts_tradeoff.winners_chart(f["winners"])),
    "main_effects": ("hyperparams", "main_effects", lambda f: charts_training.main_effects_chart(f["main_effects"])),
    # The means with their intervals come from the analysis (hyperparams' vs_iterations frame),
    # no longer from the chart: its frozen input was added, the golden spec is unchanged.
    "vs_iterations": ("hyperparams", "vs_iterations", lambda f: charts_training.response_vs_iterations_chart(
        f["vs_iterations"])),
    "workers": ("pipeline", "workers", lambda f: charts_training.workers_chart(f["workers"])),
    "resources": ("pipeline", "resources", lambda f: charts_training.resources_chart(f["resources"])),
    "generic_interval": ("pipeline", "reductions", lambda f: generic_interval_chart(f["reductions"])),
    "power_over_time": ("power", ("power", "phases"), lambda f: charts_energy.power_over_time_chart(
        PowerTrace("run", "jetson-nano · pytorch · squeezenet · rapl", f["power"], f["phases"], 3.0))),
}


def normalise(spec: dict) -> dict:
    """Stable across runs and platforms: dataset names are content hashes (renamed in order of
    appearance), floats rounded to 6 significant digits, the $schema URL dropped."""
    text = json.dumps(spec, sort_keys=True)
    names = {}
    for name in re.findall(r'"(data-[0-9a-f]{32})"', text):
        names.setdefault(name, f"data-{len(names)}")
    for old, new in names.items():
        text = text.replace(old, new)
    spec = json.loads(text)
    spec.pop("$schema", None)
    return _round(spec)


def _round(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


@pytest.fixture(scope="module")
def frozen_inputs(tmp_path_factory) -> dict[str, pl.DataFrame]:
    """The input frames, read from the golden folder; made from the analyses when updating."""
    paths = {p.name.removesuffix(".input.json"): p for p in GOLDEN.glob("*.input.json")}
    if UPDATE or not paths:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        db = make_report_db(tmp_path_factory.mktemp("golden") / "golden.duckdb")
        frames = {f"{name}.{key}": frame for name, result in run_analyses(db).items() for key, frame in result.frames.items()}
        trace = load_power_trace(db)
        frames["power.power"], frames["power.phases"] = trace.power, trace.phases
        for key, frame in frames.items():
            (GOLDEN / f"{key}.input.json").write_text(json.dumps(frame.to_dicts(), indent=1, default=str) + "\n")
        paths = {p.name.removesuffix(".input.json"): p for p in GOLDEN.glob("*.input.json")}
    return {key: pl.DataFrame(json.loads(path.read_text()), infer_schema_length=None) for key, path in paths.items()}


def inputs_for(analysis: str, keys, frozen: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    keys = (keys,) if isinstance(keys, str) else keys
    return {key: frozen[f"{analysis}.{key}"] for key in keys}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_chart_spec_matches_golden(name, frozen_inputs):
    analysis, keys, build = BUILDERS[name]
    spec = normalise(build(inputs_for(analysis, keys, frozen_inputs)).to_dict())
    path = GOLDEN / f"{name}.spec.json"
    if UPDATE:
        path.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    assert path.exists(), f"no golden for {name}: run with EDGESTATS_UPDATE_GOLDEN=1 and review it"
    assert spec == json.loads(path.read_text()), f"{name}'s spec differs from {path.name} (EDGESTATS_UPDATE_GOLDEN=1 after a deliberate change)"


def test_every_chart_draws_its_intervals(frozen_inputs):
    """A chart of estimates must encode ci_low/ci_high (or its band) somewhere in its layers."""
    for name, (analysis, keys, build) in BUILDERS.items():
        if name in ("pareto", "power_over_time", "latency_ecdf"):
            continue  # a Pareto front, a raw trace and a sample's ECDF are not estimates
        text = json.dumps(build(inputs_for(analysis, keys, frozen_inputs)).to_dict())
        assert ("ci_low" in text and "ci_high" in text) or "band_low" in text or "err_low" in text, name


def test_charts_embed_aggregates_not_runs(tmp_path):
    """1,500 runs give charts of the same size as 60: the frames are aggregated first."""
    small = run_analyses(make_report_db(tmp_path / "small.duckdb", n_inference_runs=60, latencies_per_run=5))
    big = run_analyses(make_report_db(tmp_path / "big.duckdb", n_inference_runs=1500, latencies_per_run=5))
    for name in ("summary", "breakdown", "tradeoff"):
        small_size = sum(len(json.dumps(b().to_dict())) for _, _, b in figures_for(name, small[name]))
        big_size = sum(len(json.dumps(b().to_dict())) for _, _, b in figures_for(name, big[name]))
        assert big_size < 1.5 * small_size, name


def test_builders_accept_the_live_analysis_frames(tmp_path):
    """The golden inputs are frozen; this checks the builders against today's analysis output."""
    db = make_report_db(tmp_path / "live.duckdb")
    results = run_analyses(db)
    built = [key for name, result in results.items() for key, _, build in figures_for(name, result) if build().to_dict()]
    assert len(built) >= 12


def test_chart_builders_compute_no_statistics():
    """Reports draw, analyses compute: no chart module imports a numerical or statistics library
    (the time-energy band, for one, is fitted by the energy analysis)."""
    import ast

    for path in sorted(Path(charts_energy.__file__).parent.glob("charts*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
        assert not imported & {"numpy", "scipy", "statsmodels"}, f"{path.name} imports {imported & {'numpy', 'scipy', 'statsmodels'}}"


def test_time_energy_draws_the_band_it_is_given(frozen_inputs):
    """The chart's line and band rows are the analysis' band frame, row for row, unchanged."""
    points, band = frozen_inputs["energy.points"], frozen_inputs["energy.band"]
    spec = charts_energy.time_energy_chart(points, band).to_dict()
    (rows,) = spec["datasets"].values()
    drawn = [(r["device"], r["x"], r["fit"], r["band_low"], r["band_high"]) for r in rows if r.get("fit") is not None]
    assert drawn == band.select("device", "x", "fit", "band_low", "band_high").rows()
    assert sum(1 for r in rows if r.get("n_runs") is not None) == points.height
