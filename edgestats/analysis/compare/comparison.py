"""compare: is B faster than A, by how much, and is the difference real? (docs/cli/compare.md)

Two selections of runs (two DBs, or two --where selections of one) are matched configuration by
configuration. For each matched configuration and metric (median latency, energy per inference,
peak RSS) the ratio B/A comes with an interval whose unit is the RUN: runs are the independent
units (a fresh process each); latencies within a run share that process's state and are not.

Method (Welch 1947 on the log scale; the arithmetic is in estimators/welch.py): each run contributes
one figure; with x = log of A's figures and y = log of B's, d = mean(y) - mean(x), Welch's
standard error and degrees of freedom, and the interval d ± t·se mapped back by exp: a ratio of
geometric means whose interval is always positive. The p-value is the same Welch test's.

Verdict, with threshold t (default 5 %) and band [1/(1+t), 1+t] (symmetric on the log scale):
slower (higher) when Holm's p < 1 - level and the whole interval lies above 1+t; faster (lower)
likewise below 1/(1+t) (criterion.rs's rule: significant and beyond the noise threshold); same
when Schuirmann's TOST p, Holm-adjusted, is < (1 - level)/2 (for one configuration: the whole
interval inside the band); inconclusive otherwise. Holm (1979) adjusts each metric's family of
p-values, and of TOST p-values, across configurations. Beside it, the minimum detectable effect (the
smallest increase called slower (higher) with 80 % power at the measured spread) in words, and the
runs that would settle an inconclusive verdict (compare/detect.py). Across configurations: the
geometric mean of the ratios (compare/overall.py) and warnings (compare/cautions.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from edgestats.analysis.compare.cautions import CompareWarning, compare_warnings
from edgestats.analysis.compare.detect import describe_detectable
from edgestats.analysis.compare.overall import Overall, overall_ratios
from edgestats.analysis.core.result import iter_groups, json_safe
from edgestats.analysis.estimators import welch as cs
from edgestats.analysis.estimators.intervals import DEFAULT_LEVEL, clean_values
from edgestats.analysis.estimators.multiplicity import holm
from edgestats.analysis.load.frames import AnalysisInputError, check_where, load_data, present_columns
from edgestats.formatting import counted

# The configuration axes a run is matched on (iterations and warm-up are not: they change how
# long a run measures, not what it measures).
MATCH_COLUMNS = (
    "device",
    "framework",
    "runtime",
    "model",
    "batch_size",
    "threads",
    "precision",
    "accelerator",
)
# metric -> (title, unit, word when B is larger, word when B is smaller)
METRICS = {
    "latency_median_ms": ("median latency", "ms", "slower", "faster"),
    "energy_per_inference_j": ("energy per inference", "J", "higher", "lower"),
    "rss_peak_bytes": ("peak RSS", "bytes", "higher", "lower"),
}
GATE_METRIC = "latency_median_ms"  # the metric whose "slower" is a regression (the exit status)
DEFAULT_THRESHOLD = 0.05
TOO_FEW = "needs >= 2 runs per side"


@dataclass(frozen=True)
class Selection:
    """One side: a DB and an optional --where on its run_summary."""

    db: Path
    where: str | None = None

    @property
    def label(self) -> str:
        return f"{self.db.name}" + (f" where {self.where}" if self.where else "")


@dataclass
class RatioTest:
    """B/A of one metric for one configuration: estimate, interval, Welch's p and the verdict."""

    metric: str
    a_estimate: float | None
    b_estimate: float | None
    n_a: int
    n_b: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    level: float
    p_value: float | None
    df: float | None
    p_holm: float | None = None
    p_equivalence: float | None = None  # Schuirmann's TOST against the ±threshold band
    p_equivalence_holm: float | None = None
    min_detectable_pct: float | None = None  # the smallest increase called slower/higher at 80 % power
    min_detectable_alpha: float | None = None  # the test's two-sided level it assumes: Holm's first step
    min_detectable_text: str | None = None  # min_detectable_pct in words (detect.detect_text)
    next_step: dict[str, Any] | None = None  # an inconclusive verdict's runs to resolve (resolve_step)
    verdict: str = "inconclusive"
    method: str = "Welch t on log per-run figures"
    note: str | None = None
    design: cs.Design | None = None  # the SDs of logs and run counts the power depends on; not in the JSON

    def as_dict(self) -> dict[str, Any]:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "design"}
        power = None if self.min_detectable_alpha is None else cs.DETECT_POWER
        return json_safe({**shown, "min_detectable_power": power, "n_unit": "runs"})


@dataclass
class Comparison:
    """Everything `edgestats compare` reports (docs/cli/compare.md, "JSON")."""

    a: Selection
    b: Selection
    key: list[str]
    differing: dict[str, tuple[Any, Any]]
    threshold: float
    level: float
    matched: list[tuple[dict[str, Any], list[RatioTest]]] = field(default_factory=list)
    unmatched: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overall: list[Overall] = field(default_factory=list)  # the geometric mean of B/A per metric
    warnings: list[CompareWarning] = field(default_factory=list)  # why the result may be unstable

    @property
    def regressions(self) -> list[dict[str, Any]]:
        """The configurations whose median latency is significantly slower beyond the threshold."""
        return [
            config
            for config, tests in self.matched
            for t in tests
            if t.metric == GATE_METRIC and t.verdict == "slower"
        ]

    def to_json(self) -> dict[str, Any]:
        return json_safe(
            {
                "a": {"db": str(self.a.db), "where": self.a.where},
                "b": {"db": str(self.b.db), "where": self.b.where},
                "match_key": self.key,
                "differing": {c: {"a": va, "b": vb} for c, (va, vb) in self.differing.items()},
                "threshold": self.threshold,
                "level": self.level,
                "regression": bool(self.regressions),
                "comparisons": [
                    {"config": config, "metrics": [t.as_dict() for t in tests]}
                    for config, tests in self.matched
                ],
                "overall": [o.as_dict() for o in self.overall],
                "unmatched": self.unmatched,
                "notes": self.notes,
                "warnings": [w.as_dict() for w in self.warnings],
            }
        )

    def frame(self) -> pl.DataFrame:
        """One row per configuration and metric (the report's chart and table); next_step is its text."""
        rows = [
            {**config, **t.as_dict(), "next_step": (t.next_step or {}).get("text")}
            for config, tests in self.matched
            for t in tests
        ]
        return pl.DataFrame(rows, strict=False, infer_schema_length=None) if rows else pl.DataFrame()


# -- statistics ---------------------------------------------------------------------------------


def welch_log_ratio(
    a_values: Any,
    b_values: Any,
    *,
    metric: str,
    level: float = DEFAULT_LEVEL,
    threshold: float = DEFAULT_THRESHOLD,
) -> RatioTest:
    """B/A as the ratio of geometric means of per-run figures, with Welch's t interval of the
    difference of mean logs mapped through exp, Welch's two-sided p-value and the TOST p-value of
    equivalence within ±threshold (none of them adjusted yet: see `holm_adjust`)."""
    a, b = clean_values(a_values), clean_values(b_values)
    a_est = float(np.exp(np.mean(np.log(a)))) if len(a) and np.all(a > 0) else None
    b_est = float(np.exp(np.mean(np.log(b)))) if len(b) and np.all(b > 0) else None
    test = RatioTest(metric, a_est, b_est, len(a), len(b), None, None, None, level, None, None)
    if len(a) == 0 or len(b) == 0:
        missing = "either side" if len(a) == len(b) else "side A" if len(a) == 0 else "side B"
        test.note = f"not measured on {missing}"
        return test
    if np.any(a <= 0) or np.any(b <= 0):
        test.note = "some runs have a value <= 0 (energy above idle can be): no ratio on the log scale"
        return test
    x, y = np.log(a), np.log(b)
    test.estimate = math.exp(float(np.mean(y) - np.mean(x)))
    if len(x) < 2 or len(y) < 2:
        test.note = f"{len(x)} vs {len(y)} runs: no interval and no test ({TOO_FEW})"
        return test
    w = cs.welch_log(x, y)
    if not w.se > 1e-12:
        test.note = "every run on both sides has the same value: no spread to build an interval from"
        return test
    low, high = cs.ratio_interval(w, level)
    test.ci_low, test.ci_high = float(low), float(high)
    test.p_value = float(cs.welch_p_value(w))
    test.p_equivalence = float(cs.equivalence_p_value(w, threshold))
    test.df = float(w.df)
    test.design = cs.Design(float(np.std(x, ddof=1)), len(x), float(np.std(y, ddof=1)), len(y))
    return test


def holm_adjust(tests: list[RatioTest]) -> None:
    """Holm's step-down adjustment over the tests that have a p-value (one family), of the
    difference tests and, as a second family, of the equivalence tests."""
    tested = [t for t in tests if t.p_value is not None]
    if tested:
        for t, p in zip(tested, holm([t.p_value for t in tested])):
            t.p_holm = float(p)
    equivalence = [t for t in tests if t.p_equivalence is not None]
    if equivalence:
        for t, p in zip(equivalence, holm([t.p_equivalence for t in equivalence])):
            t.p_equivalence_holm = float(p)


def add_min_detectable(tests: list[RatioTest], threshold: float) -> None:
    """Each test's minimum detectable effect, with the test at Holm's first-step level
    (1 - level)/m for a family of m tests: conservative, since Holm's later steps are less strict."""
    tested = [t for t in tests if t.design is not None]
    for t in tested:
        t.min_detectable_alpha = float(f"{(1.0 - t.level) / len(tested):.12g}")  # 1 - 0.95 is 0.0500...04
        t.min_detectable_pct = cs.measured_min_detectable_pct(
            t.design, threshold=threshold, level=t.level, alpha_test=t.min_detectable_alpha
        )


def verdict(test: RatioTest, threshold: float) -> str:
    """faster/slower (or lower/higher), same or inconclusive: see the module docstring."""
    _, _, larger, smaller = METRICS[test.metric]
    # a missing figure is NaN: never significant, never inside the band
    figures = [
        [np.nan if x is None else x]
        for x in (test.ci_low, test.ci_high, test.p_holm, test.p_equivalence_holm)
    ]
    [code] = cs.verdict_codes(*figures, level=test.level, threshold=threshold)
    return {cs.LARGER: larger, cs.SMALLER: smaller}.get(code, code)


# -- matching -----------------------------------------------------------------------------------


def single_value(runs: pl.DataFrame, column: str) -> tuple[bool, Any]:
    values = runs[column].unique().to_list()
    return len(values) == 1, (json_safe(values[0]) if values else None)


def match_key(
    runs_a: pl.DataFrame, runs_b: pl.DataFrame, match: list[str] | None = None
) -> tuple[list[str], dict[str, tuple[Any, Any]]]:
    """The columns configurations are matched on, and the compared ones left out: a column that
    holds one value on each side, different between the sides (framework for --a "framework =
    'pytorch'" --b "framework = 'onnxruntime'", device for two devices' DBs). `match` names the
    key explicitly."""
    differing: dict[str, tuple[Any, Any]] = {}
    candidates = [
        c
        for c in MATCH_COLUMNS
        if c in present_columns(runs_a, MATCH_COLUMNS) or c in present_columns(runs_b, MATCH_COLUMNS)
    ]
    for column in candidates:
        (one_a, va), (one_b, vb) = single_value(runs_a, column), single_value(runs_b, column)
        if one_a and one_b and va != vb:
            differing[column] = (va, vb)
    if match is not None:
        valid = [c for c in runs_a.columns if c not in ("run_idx", "run_id")]
        unknown = [c for c in match if c not in valid]
        if unknown:
            raise AnalysisInputError(
                f"--match {', '.join(unknown)}: not a run column; use e.g. {', '.join(MATCH_COLUMNS)}"
            )
        return list(match), {c: v for c, v in differing.items() if c not in match}
    return [c for c in candidates if c not in differing], differing


def compare_runs(
    a: Selection,
    b: Selection,
    runs_a: pl.DataFrame,
    runs_b: pl.DataFrame,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = DEFAULT_LEVEL,
    match: list[str] | None = None,
) -> Comparison:
    """The comparison of two frames of per-run figures (load.load_data's runs)."""
    key, differing = match_key(runs_a, runs_b, match)
    groups_a = {tuple(g.values()): (g, sub) for g, sub in iter_groups(runs_a, key)}
    groups_b = {tuple(g.values()): (g, sub) for g, sub in iter_groups(runs_b, key)}
    comparison = Comparison(a, b, key, differing, threshold, level)
    for side, mine, other in (("a", groups_a, groups_b), ("b", groups_b, groups_a)):
        comparison.unmatched += [
            {"side": side, "config": g, "n_runs": sub.height}
            for k, (g, sub) in mine.items()
            if k not in other
        ]
    for k, (config, sub_a) in groups_a.items():
        if k in groups_b:
            sub_b = groups_b[k][1]
            tests = [
                welch_log_ratio(
                    sub_a[m].to_numpy(), sub_b[m].to_numpy(), metric=m, level=level, threshold=threshold
                )
                for m in METRICS
                if m in sub_a.columns and m in sub_b.columns
            ]
            comparison.matched.append((config, [t for t in tests if t.n_a or t.n_b]))
    for metric, (title, *_) in METRICS.items():
        if not any(t.metric == metric for _, tests in comparison.matched for t in tests):
            comparison.notes.append(f"{title}: not measured on either side (nothing to compare)")
    for metric in METRICS:
        family = [t for _, tests in comparison.matched for t in tests if t.metric == metric]
        holm_adjust(family)
        add_min_detectable(family, threshold)
    for t in (t for _, tests in comparison.matched for t in tests):
        t.verdict = verdict(t, threshold)
        describe_detectable(t, threshold)
    comparison.overall = overall_ratios(comparison.matched, list(METRICS), level)
    comparison.warnings = compare_warnings(comparison, runs_a, runs_b)
    return comparison


def combined_where(parts: dict[str, str | None]) -> str | None:
    """{option: expression} checked one by one (an error names the option at fault), AND-ed."""
    checked = []
    for option, text in parts.items():
        if text is not None and text.strip():
            try:
                checked.append(check_where(text))
            except AnalysisInputError as exc:
                raise AnalysisInputError(str(exc).replace("--where", option, 1)) from None
    return " AND ".join(checked) if checked else None


def load_side(selection: Selection, name: str) -> pl.DataFrame:
    """The inference runs of one side that have a latency, one row per run."""
    runs = load_data(selection.db, where=selection.where).runs
    if runs.height:
        runs = runs.filter(pl.col("latency_median_ms").is_not_null())
    if runs.height == 0:
        raise AnalysisInputError(
            f"side {name} ({selection.label}) selects no ok run with a latency; "
            "check the DB and the --where/--a/--b expressions "
            '(edgestats sql DB "SELECT ... FROM run_summary")'
        )
    return runs


def compare(
    a: Selection,
    b: Selection,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = DEFAULT_LEVEL,
    match: list[str] | None = None,
) -> Comparison:
    """Load both sides (sandboxed, read-only) and compare them. Raises AnalysisInputError for
    options the data cannot answer, and when no configuration matches."""
    if not 0.5 <= level < 1:
        raise AnalysisInputError(f"--level {level}: give a confidence level between 0.5 and 1, e.g. 0.95")
    if not 0 <= threshold < 1:
        raise AnalysisInputError(
            f"--threshold {threshold * 100:g} %: give a percentage between 0 and 100, e.g. 5"
        )
    runs_a, runs_b = load_side(a, "A"), load_side(b, "B")
    comparison = compare_runs(a, b, runs_a, runs_b, threshold=threshold, level=level, match=match)
    if not comparison.matched:
        raise AnalysisInputError(no_match_message(comparison))
    if a.db.resolve() == b.db.resolve():
        shared = set(runs_a["run_id"].to_list()) & set(runs_b["run_id"].to_list())
        if shared:
            comparison.notes.append(
                f"{counted(len(shared), 'runs')} {'is' if len(shared) == 1 else 'are'} in both "
                "selections: the two sides are not independent"
            )
    return comparison


def no_match_message(comparison: Comparison) -> str:
    def configs(side: str) -> str:
        shown = [
            ", ".join(f"{k}={v}" for k, v in u["config"].items())
            for u in comparison.unmatched
            if u["side"] == side
        ]
        return "; ".join(shown[:3]) + (f" (+{len(shown) - 3} more)" if len(shown) > 3 else "")

    return (
        f"no configuration of A matches one of B on {', '.join(comparison.key) or 'nothing'}: "
        f"A has {configs('a')}; B has {configs('b')}. Select comparable runs with --a/--b/--where, "
        "or name the columns to match on with --match COL"
    )
