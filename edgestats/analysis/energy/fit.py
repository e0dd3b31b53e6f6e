"""The time–energy line and correlation across configurations, and what the time-energy chart draws.
They answer pCAMP's Insight 3: is a slower configuration also a hungrier one?

The unit is the configuration, not the run. Runs of one configuration share its power draw, so
its runs scatter around its own point, not independently around the line; a fit over runs counts
one configuration's deviation from the line once per run and its interval is too narrow (in
simulation its 95 % slope interval covered the true slope about half the time). So each
configuration becomes one point, the mean over its runs of each run's mean latency and of its
energy per inference, and the line is OLS through those points, unweighted: a configuration's
deviation from the line does not shrink with more runs, so weighting by run count would trust a
configuration that was merely repeated more (docs/methodology.md, "Energy against latency").

Mean latency, not the median: a run's energy per inference is the mean over its steady
inferences of the energy above idle in each one's window, i.e. the mean power above idle times
the mean latency; the median misses the slow inferences that still cost energy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from edgestats.analysis.core.result import estimate_row, iter_groups
from edgestats.analysis.estimators.correlations import correlation
from edgestats.analysis.estimators.intervals import finite_or_none, t_quantile

ENERGY = "energy_per_inference_j"
LATENCY_MEAN = "latency_mean_ms"
LATENCY_MEDIAN = "latency_median_ms"
BAND_STEPS = 40  # grid points along latency of the fitted line and its band
BAND_SCHEMA = {"x": pl.Float64, "fit": pl.Float64, "band_low": pl.Float64, "band_high": pl.Float64}
TERM_NAMES = ("intercept_j", "slope_j_per_ms")
MEDIAN_NOTE = (
    "no run with energy has a mean latency (an import without latency_ms): each run's median "
    "latency is used instead, which matches energy per inference (mean power × mean latency) "
    "only approximately"
)


@dataclass(frozen=True)
class LatencyChoice:
    """Which per-run latency figure the fit and correlation use, and why where it is not the mean."""

    column: str
    note: str | None = None

    @property
    def statistic(self) -> str:
        return "mean" if self.column == LATENCY_MEAN else "median"


def latency_choice(runs: pl.DataFrame) -> LatencyChoice:
    """The mean latency where some run with energy has one; the median only where none has (one
    figure for the whole analysis, so every point and line is in the same statistic)."""
    with_energy = runs.filter(pl.col(ENERGY).is_not_null())
    if with_energy[LATENCY_MEAN].is_not_null().any():
        left_out = with_energy.filter(pl.col(LATENCY_MEAN).is_null()).height
        note = f"{left_out} run(s) with energy but no mean latency are left out" if left_out else None
        return LatencyChoice(LATENCY_MEAN, note)
    return LatencyChoice(LATENCY_MEDIAN, MEDIAN_NOTE)


def configuration_means(runs: pl.DataFrame, keys: list[str], latency: str) -> pl.DataFrame:
    """One row per configuration (`keys`) with both figures measured in some run: the mean over
    runs of the run's latency figure and of its energy per inference, and how many runs."""
    return (
        runs.filter(pl.col(ENERGY).is_not_null() & pl.col(latency).is_not_null())
        .group_by(keys, maintain_order=True)
        .agg(pl.col(latency).mean(), pl.col(ENERGY).mean(), pl.len().alias("n_runs"))
        .sort(keys, nulls_last=True, maintain_order=True)
    )


# -- the line: closed-form OLS, vectorised over leading axes (the simulation test fits thousands) --


@dataclass(frozen=True)
class LineFit:
    """y = intercept + slope·x by OLS over the last axis of x and y; arrays of the leading shape."""

    intercept: np.ndarray
    slope: np.ndarray
    se_intercept: np.ndarray
    se_slope: np.ndarray
    residual_var: np.ndarray  # s², on n − 2 degrees of freedom
    x_mean: np.ndarray
    sxx: np.ndarray  # Σ(x − x̄)²
    total_ss: np.ndarray  # Σ(y − ȳ)², for R²
    n: int

    @property
    def df(self) -> int:
        return self.n - 2

    @property
    def r_squared(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - self.residual_var * self.df / self.total_ss

    def mean_response_se(self, x0: np.ndarray) -> np.ndarray:
        """Standard error of the fitted mean at x0: s·√(1/n + (x0 − x̄)²/Sxx)."""
        return np.sqrt(self.residual_var * (1.0 / self.n + (x0 - self.x_mean) ** 2 / self.sxx))


def ols_line(x: np.ndarray, y: np.ndarray) -> LineFit:
    """The textbook simple-regression formulas (equal to statsmodels OLS, tested); n ≥ 3 points and
    x not constant are the caller's to check."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.shape[-1]
    x_mean, y_mean = x.mean(axis=-1), y.mean(axis=-1)
    dx, dy = x - x_mean[..., None], y - y_mean[..., None]
    sxx = (dx**2).sum(axis=-1)
    slope = (dx * dy).sum(axis=-1) / sxx
    intercept = y_mean - slope * x_mean
    residuals = dy - slope[..., None] * dx
    residual_var = (residuals**2).sum(axis=-1) / (n - 2)
    return LineFit(
        intercept=intercept,
        slope=slope,
        se_intercept=np.sqrt(residual_var * (1.0 / n + x_mean**2 / sxx)),
        se_slope=np.sqrt(residual_var / sxx),
        residual_var=residual_var,
        x_mean=x_mean,
        sxx=sxx,
        total_ss=(dy**2).sum(axis=-1),
        n=n,
    )


def line_entry(x: np.ndarray, y: np.ndarray, level: float) -> dict:
    """The fit's JSON body: `terms` with t intervals on n − 2 degrees of freedom, `r_squared`; a
    `reason` where no line can be fitted, a `note` where a figure has no interval."""
    from scipy import stats

    n = len(x)
    if n < 3:
        return {"reason": f"not enough data: {n} configurations (a line with an interval needs at least 3)"}
    if np.all(x == x[0]):
        return {
            "reason": "not enough data: every configuration has the same latency, so no slope can be fitted"
        }
    fit = ols_line(x, y)
    # A perfect line leaves no residual spread (beyond rounding, relative to the energies): the
    # estimate stands, without an interval.
    rounding = (1e-12 * float(np.max(np.abs(y)))) ** 2
    exact = not float(fit.residual_var) > rounding
    t = t_quantile(level, fit.df)
    terms = []
    for name, estimate, se in zip(
        TERM_NAMES, (fit.intercept, fit.slope), (fit.se_intercept, fit.se_slope), strict=True
    ):
        estimate, se = float(estimate), float(se)
        terms.append(
            {
                "term": name,
                "estimate": estimate,
                "ci_low": None if exact else estimate - t * se,
                "ci_high": None if exact else estimate + t * se,
                "p_value": None if exact else finite_or_none(2 * stats.t.sf(abs(estimate / se), fit.df)),
            }
        )
    r2 = finite_or_none(float(fit.r_squared)) if float(fit.total_ss) > n * rounding else None
    notes = (
        ["the configurations lie exactly on a line: no residual spread to build an interval from"]
        if exact
        else []
    )
    if r2 is None:
        notes.append("every configuration has the same energy: R² is undefined")
    return {"terms": terms, "r_squared": r2, **({"note": "; ".join(notes)} if notes else {})}


def line_band(x: np.ndarray, y: np.ndarray, level: float, steps: int = BAND_STEPS) -> pl.DataFrame:
    """The fitted line on a grid over x's range, with the confidence band of the mean response,
    ŷ ± t_{n−2}·s·√(1/n + (x − x̄)²/Sxx). Empty when no line can be fitted (n < 3 or x constant),
    so a chart then shows the points alone."""
    if len(x) < 3 or np.all(x == x[0]):
        return pl.DataFrame(schema=BAND_SCHEMA)
    fit = ols_line(x, y)
    grid = np.linspace(float(x.min()), float(x.max()), steps)
    line = float(fit.intercept) + float(fit.slope) * grid
    half = t_quantile(level, fit.df) * fit.mean_response_se(grid)
    return pl.DataFrame({"x": grid, "fit": line, "band_low": line - half, "band_high": line + half})


# -- the analysis parts ----------------------------------------------------------------------------


def correlations(
    runs: pl.DataFrame, config: list[str], by: list[str], level: float, latency: LatencyChoice
) -> tuple[list, list]:
    """Pearson (Fisher z) and Spearman (Fisher z, Bonett–Wright) over configuration means, per group."""
    entries, rows = [], []
    points = configuration_means(runs, list(dict.fromkeys([*by, *config])), latency.column)
    for group, sub in iter_groups(points, by):
        x, y = sub[latency.column].to_numpy(), sub[ENERGY].to_numpy()
        results = [correlation(x, y, m, level=level) for m in ("pearson", "spearman")]
        entries.append(
            {
                "part": "correlation",
                "group": group,
                "n": sub.height,
                "n_unit": "configurations",
                "n_runs": int(sub["n_runs"].sum()),
                "level": level,
                "x": latency.column,
                "y": ENERGY,
                **({"note": latency.note} if latency.note else {}),
                **{r.method: r.as_dict() for r in results},
            }
        )
        rows += [
            estimate_row(
                group, r.estimate, part="correlation", method=r.method, p_value=finite_or_none(r.p_value)
            )
            for r in results
        ]
    return entries, rows


def fits(means: pl.DataFrame, fit_by: list[str], level: float, latency: LatencyChoice) -> tuple[list, list]:
    """OLS energy ~ latency through the configuration means (`configuration_means`), per fit group."""
    entries, rows = [], []
    for group, sub in iter_groups(means, fit_by):
        body = line_entry(
            sub[latency.column].to_numpy().astype(float), sub[ENERGY].to_numpy().astype(float), level
        )
        notes = [text for text in (body.pop("note", None), latency.note) if text]
        counts = {"n": sub.height, "n_unit": "configurations", "n_runs": int(sub["n_runs"].sum())}
        entries.append(
            {
                "part": "fit",
                "group": group,
                **counts,
                "level": level,
                "model": f"{ENERGY} ~ {latency.column}",
                "method": "ols over configuration means",
                "x": latency.column,
                **body,
                **({"note": "; ".join(notes)} if notes else {}),
            }
        )
        for term in body.get("terms", []):
            rows.append(
                {**group, "part": "fit", **term, "level": level, **counts, "r_squared": body["r_squared"]}
            )
    return entries, rows


def fit_bands(points: pl.DataFrame, fit_by: list[str], level: float, latency: str) -> pl.DataFrame:
    """Per fit group, the line and band (`line_band`) through exactly the points the chart draws,
    with the group's keys and the level; groups where no line can be fitted have no rows."""
    bands = []
    for group, sub in iter_groups(points, fit_by):
        band = line_band(sub[latency].to_numpy().astype(float), sub[ENERGY].to_numpy().astype(float), level)
        bands.append(
            band.with_columns(
                *(pl.lit(group[k], dtype=points.schema[k]).alias(k) for k in fit_by),
                pl.lit(level).alias("level"),
            )
        )
    if not bands:
        return pl.DataFrame(
            schema={**BAND_SCHEMA, **{k: points.schema[k] for k in fit_by}, "level": pl.Float64}
        )
    return pl.concat(bands, how="diagonal_relaxed")


def time_energy_parts(
    runs: pl.DataFrame, config: list[str], by: list[str], fit_by: list[str], level: float
) -> tuple[list, dict[str, list], dict[str, pl.DataFrame]]:
    """The correlation and fit entries, their frame rows, and the chart's `points` (one per
    configuration, with n_runs) and `band` (the same fit's line, so the chart shows what is reported)."""
    latency = latency_choice(runs)
    corr_entries, corr_rows = correlations(runs, config, by, level, latency)
    points = configuration_means(runs, list(dict.fromkeys([*config, *fit_by])), latency.column)
    fit_entries, fit_rows = fits(points, fit_by, level, latency)
    chart = {"points": points, "band": fit_bands(points, fit_by, level, latency.column)}
    return corr_entries + fit_entries, {"correlation": corr_rows, "fit": fit_rows}, chart
