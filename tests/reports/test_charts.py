"""Golden tests of the chart builders: each builder's normalised Vega-Lite spec for a frozen input
frame (<name>.input.json, made once from report_builders.make_report_db) is compared with
tests/golden/charts/<name>.spec.json, so a golden changes only when a builder does. After a
deliberate change: EDGESTATS_UPDATE_GOLDEN=NAME[,NAME...] (a builder's or an analysis' name, 1
for all: tests/golden_files.py), and review the diff."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from chart_specs import units
from fleet_builders import fleet_frames
from golden_files import any_requested, golden_names, is_requested, normalise, unknown_names
from report_builders import make_report_db

from edgestats.analysis import run_analyses
from edgestats.analysis.load.power_trace import PowerTrace, load_power_trace
from edgestats.registry.analyses import analysis_names
from edgestats.reports import (
    charts_breakdown,
    charts_energy,
    charts_latency,
    charts_tradeoff,
    charts_training,
)
from edgestats.reports.report import figures_for, generic_interval_chart
from edgestats.reports.sections import fleet as fleet_section

GOLDEN = Path(__file__).parents[1] / "golden" / "charts"

# builder name -> (analysis, frame key or None for a frame built otherwise, build(frames) -> chart)
BUILDERS = {
    "latency_distribution": (
        "summary",
        ("metrics", "distribution"),
        lambda f: charts_latency.latency_distribution_chart(f["metrics"], f["distribution"]),
    ),
    "latency_ecdf": ("summary", "ecdf", lambda f: charts_latency.latency_ecdf_chart(f["ecdf"])),
    "latency_quantiles": (
        "summary",
        "metrics",
        lambda f: charts_latency.latency_distribution_chart(f["metrics"]),
    ),
    "phase_breakdown": ("breakdown", "phases", lambda f: charts_breakdown.phase_breakdown_chart(f["phases"])),
    "load_ratio": (
        "breakdown",
        "ratios",
        lambda f: charts_breakdown.ratio_chart(
            f["ratios"], ratio_name="load_model / steady", title="load_model / steady"
        ),
    ),
    # The fitted line and its band come from the analysis (energy's band frame), no longer from the
    # chart: the points input gained n_runs, the band input was added, the golden spec is unchanged.
    "time_energy": (
        "energy",
        ("points", "band"),
        lambda f: charts_energy.time_energy_chart(f["points"], f["band"]),
    ),
    "correlation": ("energy", "correlation", lambda f: charts_energy.correlation_chart(f["correlation"])),
    "pareto": ("tradeoff", "pareto", lambda f: charts_tradeoff.pareto_chart(f["pareto"])),
    "winners": ("tradeoff", "contenders", lambda f: charts_tradeoff.winners_chart(f["contenders"])),
    "main_effects": (
        "hyperparams",
        "main_effects",
        lambda f: charts_training.main_effects_chart(f["main_effects"]),
    ),
    # The means with their intervals come from the analysis (hyperparams' vs_iterations frame),
    # no longer from the chart: its frozen input was added, the golden spec is unchanged.
    "vs_iterations": (
        "hyperparams",
        "vs_iterations",
        lambda f: charts_training.response_vs_iterations_chart(f["vs_iterations"]),
    ),
    "workers": ("pipeline", "workers", lambda f: charts_training.workers_chart(f["workers"])),
    "resources": ("pipeline", "resources", lambda f: charts_training.resources_chart(f["resources"])),
    "fleet_units": ("fleet", "units", lambda f: fleet_section.units_chart(f["units"])),
    "generic_interval": ("pipeline", "reductions", lambda f: generic_interval_chart(f["reductions"])),
    "power_over_time": (
        "power",
        ("power", "phases"),
        lambda f: charts_energy.power_over_time_chart(
            PowerTrace("run", "jetson-nano · pytorch · squeezenet · rapl", f["power"], f["phases"], 3.0)
        ),
    ),
}


@pytest.fixture(scope="module")
def frozen_inputs(tmp_path_factory) -> dict[str, pl.DataFrame]:
    """The input frames, read from the golden folder; made from the analyses (every one: so only
    when an input is asked for, by all, an analysis' name, `power` or its stem) when updating."""
    paths = {p.name.removesuffix(".input.json"): p for p in GOLDEN.glob("*.input.json")}
    if not paths or any_requested({*analysis_names(), "power", *paths}):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        db = make_report_db(tmp_path_factory.mktemp("golden") / "golden.duckdb")
        frames = {
            f"{name}.{key}": frame
            for name, result in run_analyses(db).items()
            for key, frame in result.frames.items()
        }
        trace = load_power_trace(db)
        frames["power.power"], frames["power.phases"] = trace.power, trace.phases
        frames.update(fleet_frames(tmp_path_factory.mktemp("golden-fleet")))  # fleet_builders says why
        for key, frame in frames.items():
            if is_requested(key) or not paths:
                (GOLDEN / f"{key}.input.json").write_text(
                    json.dumps(frame.to_dicts(), indent=1, default=str) + "\n"
                )
        paths = {p.name.removesuffix(".input.json"): p for p in GOLDEN.glob("*.input.json")}
    return {
        key: pl.DataFrame(json.loads(path.read_text()), infer_schema_length=None)
        for key, path in paths.items()
    }


def inputs_for(analysis: str, keys, frozen: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    keys = (keys,) if isinstance(keys, str) else keys
    return {key: frozen[f"{analysis}.{key}"] for key in keys}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_chart_spec_matches_golden(name, frozen_inputs):
    analysis, keys, build = BUILDERS[name]
    spec = normalise(build(inputs_for(analysis, keys, frozen_inputs)).to_dict())
    path = GOLDEN / f"{name}.spec.json"
    if is_requested(name, analysis):
        path.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    assert path.exists(), f"no golden for {name}: run with EDGESTATS_UPDATE_GOLDEN={name} and review it"
    assert spec == json.loads(path.read_text()), (
        f"{name}'s spec differs from {path.name} (EDGESTATS_UPDATE_GOLDEN={name} after a deliberate change)"
    )


def test_update_golden_names_a_golden_file():
    """A NAME that selects nothing would rewrite nothing, silently: a typo fails here instead."""
    unknown = unknown_names({*golden_names(GOLDEN.parent), *BUILDERS, *analysis_names(), "power"})
    assert not unknown, f"EDGESTATS_UPDATE_GOLDEN names no golden file: {', '.join(unknown)}"


def test_every_chart_draws_its_intervals(frozen_inputs):
    """A chart of estimates must encode ci_low/ci_high (or its band) somewhere in its layers."""
    for name, (analysis, keys, build) in BUILDERS.items():
        if name in ("pareto", "power_over_time", "latency_ecdf"):
            continue  # a Pareto front, a raw trace and a sample's ECDF are not estimates
        text = json.dumps(build(inputs_for(analysis, keys, frozen_inputs)).to_dict())
        assert ("ci_low" in text and "ci_high" in text) or "band_low" in text or "err_low" in text, name


@pytest.mark.slow
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
    built = [
        key
        for name, result in results.items()
        for key, _, build in figures_for(name, result)
        if build().to_dict()
    ]
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
        assert not imported & {"numpy", "scipy", "statsmodels"}, (
            f"{path.name} imports {imported & {'numpy', 'scipy', 'statsmodels'}}"
        )


def test_time_energy_draws_the_band_it_is_given(frozen_inputs):
    """The chart's line and band rows are the analysis' band frame, row for row, unchanged."""
    points, band = frozen_inputs["energy.points"], frozen_inputs["energy.band"]
    spec = charts_energy.time_energy_chart(points, band).to_dict()
    (rows,) = spec["datasets"].values()
    drawn = [
        (r["device"], r["x"], r["fit"], r["band_low"], r["band_high"])
        for r in rows
        if r.get("fit") is not None
    ]
    assert drawn == band.select("device", "x", "fit", "band_low", "band_high").rows()
    assert sum(1 for r in rows if r.get("n_runs") is not None) == points.height


# -- what a reader sees: honest axes, intervals, tooltips, colours (issue 14's chart defects) -------

INTERVAL_COLUMNS = re.compile(r"(ci_low|ci_high|band_low|band_high|_ci_low|_ci_high)$")


def without_intervals(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as imported one-figure-per-run results give it: every interval bound null."""
    return frame.with_columns(
        *(pl.lit(None, pl.Float64).alias(c) for c in frame.columns if INTERVAL_COLUMNS.search(c))
    )


def passes(row: dict, unit: dict) -> bool:
    """The row survives the unit's filters (the isValid(datum.X) and datum.X forms the builders use)."""
    for step in unit.get("transform", []):
        expression = step.get("filter", "")
        for name in re.findall(r"isValid\(datum\.(\w+)\)", expression):
            if row.get(name) is None:
                return False
        if re.fullmatch(r"datum\.(\w+)", expression) and not row.get(expression.removeprefix("datum.")):
            return False
    return True


def empty_extents(spec: dict) -> list[str]:
    """Positional fields a layer draws that have no value in a facet panel: Vega warns "Infinite
    extent" for each (and for NaN), the browser console fills with warnings."""
    problems = []
    for unit, data, panels in units(spec):
        rows = [r for r in spec.get("datasets", {}).get(data, []) if passes(r, unit)]
        groups: dict = {}
        for row in rows:
            groups.setdefault(tuple(row.get(p) for p in panels), []).append(row)
        for channel in ("x", "x2", "y", "y2"):
            encoding = unit.get("encoding", {}).get(channel) or {}
            field = encoding.get("field") if encoding.get("type", "quantitative") == "quantitative" else None
            for key, members in (groups or {(): []}).items():
                if field and not any(isinstance(r.get(field), (int, float)) for r in members):
                    problems.append(f"{channel}={field} in panel {key}")
    return problems


def built(frozen, strip: bool = False) -> dict[str, dict]:
    return {
        name: build(
            {k: without_intervals(v) if strip else v for k, v in inputs_for(analysis, keys, frozen).items()}
        ).to_dict()
        for name, (analysis, keys, build) in BUILDERS.items()
    }


@pytest.mark.parametrize("strip", [False, True], ids=["with-intervals", "imported-no-intervals"])
def test_no_layer_draws_a_field_without_values(frozen_inputs, strip):
    for name, spec in built(frozen_inputs, strip).items():
        assert empty_extents(spec) == [], name


def test_every_mark_has_a_tooltip_with_the_interval(frozen_inputs):
    for name, spec in built(frozen_inputs).items():
        for unit, _, _ in units(spec):
            encoding = unit.get("encoding", {})
            if not any("field" in e for e in encoding.values() if isinstance(e, dict)):
                continue  # a reference line at a constant (1 = break-even, 0)
            assert "tooltip" in encoding, f"{name}: a {unit['mark']} without a tooltip"
            tips = [t["field"] for t in encoding["tooltip"]]
            if (
                name not in ("latency_ecdf", "power_over_time", "time_energy")
                and unit["mark"] != "line"
                and (unit["mark"] if isinstance(unit["mark"], str) else unit["mark"]["type"]) != "line"
            ):
                assert any("interval" in t for t in tips), (
                    f"{name}: {unit['mark']} tooltip lacks the interval: {tips}"
                )


def axis_titles(spec: dict, channel: str) -> list[tuple[str, str | None]]:
    """(title, scale type) of each layer's `channel`."""
    return [
        (e.get("title"), (e.get("scale") or {}).get("type"))
        for unit, _, _ in units(spec)
        if isinstance(e := unit.get("encoding", {}).get(channel), dict) and "field" in e
    ]


@pytest.mark.slow
def test_an_axis_says_log_exactly_when_it_is_log(frozen_inputs):
    for strip in (False, True):
        for name, spec in built(frozen_inputs, strip).items():
            for channel in ("x", "y"):
                pairs = axis_titles(spec, channel)
                is_log = any(kind == "log" for _, kind in pairs)
                says_log = any(title and "log" in title for title, _ in pairs)
                assert is_log == says_log, f"{name} {channel}: log={is_log}, titles {pairs}"


def test_ratio_axis_of_the_section_says_what_is_drawn(frozen_inputs):
    """The ratio chart said "(log scale)" on a linear axis (a bound at or below 0)."""
    from types import SimpleNamespace

    from edgestats.reports.sections import breakdown

    ratios = frozen_inputs["breakdown.ratios"]
    linear = ratios.with_columns(
        pl.when(pl.col("ci_low").is_not_null()).then(-0.5).otherwise(None).alias("ci_low")
    )
    for frame, log in ((ratios, True), (linear, False)):
        ((_, _, build),) = [
            f for f in breakdown.figures(SimpleNamespace(frames={"ratios": frame})) if f[0] == "ratio"
        ]
        (title, kind), *_ = [p for p in axis_titles(build().to_dict(), "x") if p[0]]
        assert (kind == "log") is log and ("log scale" in title) is log, (title, kind)


def ecdf_frame(n_configs: int, values: int = 5) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "device": "pi",
                "model": f"m{i:02d}",
                "p": j / (values - 1),
                "latency_ms": 10.0 + i + j,
                "n": values,
                "n_unit": "latencies",
            }
            for i in range(n_configs)
            for j in range(values)
        ]
    )


def test_colours_stay_distinct_up_to_20_configurations_then_dashes_join():
    palettes = {"tableau10": 10, "tableau20": 20, "category20": 20}
    for n in (14, 20):
        ((unit, _, _),) = units(charts_latency.latency_ecdf_chart(ecdf_frame(n)).to_dict())
        colour = unit["encoding"]["color"]
        assert palettes.get(colour["scale"].get("scheme"), 0) >= n, colour
    ((unit, _, _),) = units(charts_latency.latency_ecdf_chart(ecdf_frame(25)).to_dict())
    enc = unit["encoding"]
    assert enc["strokeDash"]["field"] == "config" and len(enc["strokeDash"]["scale"]["range"]) % 2 == 1


def test_a_one_value_ecdf_is_replaced_by_a_line_of_text():
    single = ecdf_frame(3).filter(pl.col("p") == 0).with_columns(pl.lit(1, pl.Int64).alias("n"))
    spec = charts_latency.latency_ecdf_chart(single).to_dict()
    assert spec["mark"]["type"] == "text" and "single latency figure" in json.dumps(spec)
    mixed = charts_latency.latency_ecdf_chart(
        pl.concat([single.with_columns(("s" + pl.col("model")).alias("model")), ecdf_frame(2)])
    )
    assert {r["config"] for r in next(iter(mixed.to_dict()["datasets"].values()))} == {"m00", "m01"}


def test_the_pareto_front_stands_out_of_the_palette(frozen_inputs):
    spec = charts_tradeoff.pareto_chart(frozen_inputs["tradeoff.pareto"]).to_dict()
    front = [u for u, _, _ in units(spec) if u.get("transform") == [{"filter": "datum.pareto"}]]
    line = next(u for u in front if u["mark"]["type"] == "line")
    ring = next(u for u in front if u["mark"]["type"] == "point")
    dots = max(
        u["mark"].get("size", 0) for u, _, _ in units(spec) if u not in front and u["mark"]["type"] == "point"
    )
    assert line["mark"]["strokeWidth"] >= 2.5 and "strokeDash" not in line["mark"]
    assert line["encoding"]["stroke"]["scale"]["range"] == [charts_tradeoff.FRONT] == [ring["mark"]["color"]]
    assert (
        charts_tradeoff.FRONT.lower() not in ("#1f77b4", "#d62728", "#4c78a8", "#e45756")
        and ring["mark"]["size"] >= 2 * dots
    )


@pytest.mark.slow
def test_memory_is_drawn_in_mib_never_bytes(frozen_inputs):
    for name, spec in built(frozen_inputs).items():
        fields = {
            e.get("field")
            for u, _, _ in units(spec)
            for e in u.get("encoding", {}).values()
            if isinstance(e, dict)
        }
        assert not any(f and "bytes" in f for f in fields), name
    rows = next(iter(built(frozen_inputs)["winners"]["datasets"].values()))
    memory = [r for r in rows if "MiB" in r["metric"]]
    assert (
        memory and all(r["estimate"] < 1e5 for r in memory) and not any("bytes" in r["metric"] for r in rows)
    )
