"""One number per quantity, and filters that reach every chart: on a real multi-configuration DB
(report_builders.make_report_db, with one configuration split by thread count so a tradeoff
stratum holds two configurations of one framework), every chart data row of every section and of
the power trace, as the report builds them, is checked

- against summary's run-level estimate and interval for the same configuration, for each of
  median, p90 and p99 latency, throughput and energy per inference (and mean latency) it shows:
  under its own name (`latency_median_ms`, with `latency_median_ms_ci_low` / `_ci_high`) or as a
  tidy row (`metric` and `estimate`, `ci_low`, `ci_high`); a figure of those quantities under any
  other name is an error unless it is named, and titled in its tooltip, as pooled;
- for the page filter's fields (device, framework, runtime, model): every row of a chart of
  configurations carries them (a fitted line's rows, which span configurations, excepted)."""

from __future__ import annotations

import re

import duckdb
import pytest
from report_builders import make_report_db

from edgestats.analysis import run_analyses
from edgestats.analysis.load.frames import CONFIG_COLUMNS
from edgestats.analysis.load.power_trace import load_power_trace
from edgestats.reports.charts_common import FILTER_FIELDS
from edgestats.reports.report import build_section, power_section

QUANTITIES = (
    "latency_median_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "throughput_per_s",
    "energy_per_inference_j",
    "latency_mean_ms",  # beyond the five: the time-energy chart's x
)
# A field that names one of these quantities by another name (median_ms, p99, throughput ...).
ALIAS = re.compile(r"median|p90|p99|q99|throughput|energy_per", re.IGNORECASE)
# Charts whose rows span configurations, so carry no filter field: the time-energy correlation
# across all configurations, and the training analyses (grouped by hyperparameters).
ACROSS_CONFIGURATIONS = ("energy/correlation", "hyperparams/", "pipeline/")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """(summary's estimates by configuration, {chart: (spec, rows)}) of the report of a DB with
    120 latencies a run (so p99 has values) and pytorch/squeezenet on jetson-nano split into 2
    and 4 threads."""
    db = make_report_db(tmp_path_factory.mktemp("one") / "one.duckdb", latencies_per_run=120)
    with duckdb.connect(str(db)) as con:
        con.execute(
            "UPDATE runs SET threads = 4 WHERE run_id IN (SELECT run_id FROM runs r JOIN devices d "
            "USING (device_id) WHERE r.framework = 'pytorch' AND r.model = 'squeezenet' "
            "AND d.name = 'jetson-nano' ORDER BY r.started_at LIMIT 2)"
        )
    results = run_analyses(db)
    errors: list[str] = []
    sections = [build_section(name, result, errors) for name, result in results.items()]
    sections.append(power_section(load_power_trace(db)))
    assert not errors, errors
    charts = {
        f"{s.key}/{f.key}": (f.spec, [row for rows in f.spec.get("datasets", {}).values() for row in rows])
        for s in sections
        for f in s.figures
    }
    return summary_estimates(results["summary"].frames["metrics"]), charts


def summary_estimates(metrics) -> dict[tuple, dict[str, tuple]]:
    """{configuration (column, value) pairs: {metric: (estimate, ci_low, ci_high)}}."""
    keys = [c for c in CONFIG_COLUMNS if c in metrics.columns]
    out: dict[tuple, dict[str, tuple]] = {}
    for row in metrics.iter_rows(named=True):
        config = tuple((k, row[k]) for k in keys if row[k] is not None)
        out.setdefault(config, {})[row["metric"]] = (row["estimate"], row["ci_low"], row["ci_high"])
    return out


def configuration_of(row: dict, summary: dict) -> tuple | None:
    """The one summary configuration whose columns the row carries, else None."""
    carried = {k: row[k] for k in CONFIG_COLUMNS if row.get(k) is not None}
    matches = [c for c in summary if carried and all(dict(c).get(k) == v for k, v in carried.items())]
    return matches[0] if len(matches) == 1 else None


def shown(row: dict) -> list[tuple[str, tuple]]:
    """(quantity, (estimate, low, high)) of each quantity the row shows; a bound the row lacks is ...."""
    out = [
        (q, (row[q], row.get(f"{q}_ci_low", ...), row.get(f"{q}_ci_high", ...)))
        for q in QUANTITIES
        if row.get(q) is not None
    ]
    if row.get("metric") in QUANTITIES and row.get("estimate") is not None:
        out.append((row["metric"], (row["estimate"], row.get("ci_low", ...), row.get("ci_high", ...))))
    return out


def tooltip_titles(spec) -> dict[str, set[str]]:
    """{field: the titles its tooltips give it} over every layer of a spec."""
    titles: dict[str, set[str]] = {}
    if isinstance(spec, dict):
        for tip in (spec.get("encoding") or {}).get("tooltip") or []:
            if isinstance(tip, dict) and "field" in tip:
                titles.setdefault(tip["field"], set()).add(tip.get("title") or tip["field"])
        for value in spec.values():
            for field, found in tooltip_titles(value).items():
                titles.setdefault(field, set()).update(found)
    elif isinstance(spec, list):
        for value in spec:
            for field, found in tooltip_titles(value).items():
                titles.setdefault(field, set()).update(found)
    return titles


@pytest.mark.slow
def test_every_chart_row_gives_summary_s_estimate_and_interval(report):
    summary, charts = report
    compared: set[tuple[str, str]] = set()
    for chart, (_, rows) in charts.items():
        for row in rows:
            figures = shown(row)
            if not figures:
                continue
            config = configuration_of(row, summary)
            assert config is not None, (
                f"{chart}: a row with {[q for q, _ in figures]} names no one configuration"
            )
            for quantity, found in figures:
                expected = summary[config][quantity]
                for value, want, what in zip(found, expected, ("estimate", "ci_low", "ci_high")):
                    if value is ...:  # the row does not give this bound
                        continue
                    assert value == pytest.approx(want, rel=1e-12) if want is not None else value is None, (
                        f"{chart}: {quantity} {what} of {dict(config)} is {value}, summary's {want}"
                    )
                compared.add((chart, quantity))
    assert {
        ("summary/latency", "latency_median_ms"),
        ("summary/latency", "latency_p90_ms"),
        ("summary/latency", "latency_p99_ms"),
        ("tradeoff/pareto", "latency_median_ms"),
        ("tradeoff/winners", "latency_median_ms"),
        ("tradeoff/winners", "throughput_per_s"),
        ("tradeoff/winners", "energy_per_inference_j"),
        ("energy/time-energy", "energy_per_inference_j"),
        ("energy/time-energy", "latency_mean_ms"),
    } <= compared, sorted(compared)


@pytest.mark.slow
def test_no_chart_shows_a_quantity_under_another_name_unless_pooled(report):
    _, charts = report
    for chart, (spec, rows) in charts.items():
        fields = {k for row in rows for k, v in row.items() if isinstance(v, (int, float))}
        titles = tooltip_titles(spec)
        for field in fields:
            if (
                not ALIAS.search(field)
                or field.removesuffix("_ci_low").removesuffix("_ci_high") in QUANTITIES
            ):
                continue
            assert field.startswith("pooled_"), f"{chart}: {field} is a quantity under another name"
            assert all("pooled" in t for t in titles.get(field, {"pooled"})), (chart, field, titles[field])


@pytest.mark.slow
def test_the_winners_compare_configurations_split_by_threads(report):
    """pytorch at 2 and at 4 threads are two candidates of their stratum, each with its own figures."""
    _, charts = report
    _, rows = charts["tradeoff/winners"]
    threads = {
        r.get("threads") for r in rows if r.get("framework") == "pytorch" and r["model"] == "squeezenet"
    }
    assert threads == {2, 4}, threads


@pytest.mark.slow
def test_every_chart_row_of_a_configuration_carries_the_filter_fields(report):
    _, charts = report
    checked = []
    for chart, (_, rows) in charts.items():
        if chart.startswith(ACROSS_CONFIGURATIONS):
            continue
        lacking = [r for r in rows if "fit" not in r and any(r.get(k) is None for k in FILTER_FIELDS)]
        assert rows and not lacking, f"{chart}: {len(lacking)} of {len(rows)} rows lack a filter field"
        checked.append(chart)
    assert {"summary/latency", "summary/ecdf", "breakdown/phases", "tradeoff/winners", "power/trace"} <= set(
        checked
    ), checked
