"""The model hyperparams fits: OLS of a response on its factors in statsmodels, and each numeric
factor's chosen scale. The fit has per-term intervals, R² and the type-II ANOVA; a factor is
log10-scaled where a learning rate or batch size spans two decades and the log fit is at least as
good.

Apart from hyperparams.py, which runs the analysis per group and assembles its entries and
frames, because the design matrix, the formula's term names and the scale choice are one subject:
how the factors enter the model.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import polars as pl

from edgestats.analysis.estimators.intervals import finite_or_none
from edgestats.analysis.load.frames import AnalysisInputError

DECADES_FOR_LOG = 2.0  # max/min ≥ 100: the factor acts on a log scale

# Factors that act multiplicatively (docs/architecture.md §6); others (iterations: time is linear in them)
# stay linear unless --log asks.
LOG_CANDIDATES = ("learning_rate", "batch_size")


def choose_scale(values: np.ndarray, requested: str = "auto", factor: str = "learning_rate") -> str:
    """'log' for a learning rate or batch size that is positive and spans ≥ 2 decades, or for any
    factor when asked; else 'linear'."""
    if requested in ("log", "linear"):
        if requested == "log" and (len(values) == 0 or values.min() <= 0):
            raise AnalysisInputError("a factor with values ≤ 0 cannot be log-scaled; drop --log for it")
        return requested
    if (
        factor in LOG_CANDIDATES
        and len(values)
        and values.min() > 0
        and math.log10(values.max() / values.min()) >= DECADES_FOR_LOG
    ):
        return "log"
    return "linear"


def pick_scales(
    rows: pl.DataFrame,
    response: str,
    factors: list[str],
    requested: dict[str, str],
    interactions: bool,
    level: float,
) -> tuple[dict[str, str], dict[str, str]]:
    """Each numeric factor's scale, and why. --log/--linear decide where given. Otherwise a
    learning rate or batch size spanning two decades is a log candidate, and the fit decides:
    log10 is kept only if its R² is at least the linear fit's (batch size 50..5000 on log10 once
    gave R² 0.86 against 0.9999 linear, and said nothing)."""
    scales, why = {}, {}
    for f in [f for f in factors if rows[f].dtype.is_numeric()]:
        values = rows[f].cast(pl.Float64).to_numpy()
        scales[f] = choose_scale(values, requested.get(f, "auto"), f)
        why[f] = (
            f"on a {scales[f]} scale, as asked"
            if f in requested
            else "on a linear scale: it spans less than two decades, or is not a log candidate"
        )
    for f in [f for f, scale in scales.items() if scale == "log" and f not in requested]:
        r2 = {
            scale: fit_ols(rows, response, factors, {**scales, f: scale}, interactions, level).get(
                "r_squared"
            )
            for scale in ("log", "linear")
        }
        if r2["log"] is not None and r2["linear"] is not None:
            scales[f] = "log" if r2["log"] >= r2["linear"] else "linear"
            other = "linear" if scales[f] == "log" else "log"
            why[f] = (
                f"on a {scales[f]} scale: R² {r2[scales[f]]:.4f} against {r2[other]:.4f} on the {other} scale"
            )
        else:
            why[f] = "on a log scale: it spans two decades or more (too few runs to compare fits)"
    return scales, why


def _safe(name: str) -> str:
    return re.sub(r"\W", "_", name)


def design(rows: pl.DataFrame, response: str, factors: list[str], scales: dict[str, str], interactions: bool):
    """(pandas frame, formula, {formula term name -> reported term name}, notes)."""
    data = {"y": rows[response].cast(pl.Float64).to_numpy()}
    terms, names, notes = [], {"Intercept": "intercept"}, []
    for factor in factors:
        column = rows[factor]
        if column.n_unique() < 2:
            notes.append(f"{factor} takes one value here ({column[0]}): left out of the model")
            continue
        if column.dtype.is_numeric():
            values = column.cast(pl.Float64).to_numpy()
            if scales.get(factor) == "log":
                data[f"log10_{_safe(factor)}"] = np.log10(values)
                term, shown = f"log10_{_safe(factor)}", f"log10({factor})"
            else:
                data[_safe(factor)] = values
                term, shown = _safe(factor), factor
        else:
            data[_safe(factor)] = column.cast(pl.String).to_numpy()
            term, shown = f"C({_safe(factor)})", factor
        terms.append(term)
        names[term] = shown
    formula_terms = list(terms)
    if interactions:
        formula_terms += [f"{a}:{b}" for i, a in enumerate(terms) for b in terms[i + 1 :]]
    formula = "y ~ " + (" + ".join(formula_terms) if formula_terms else "1")
    return data, formula, names, notes


def _term_name(raw: str, names: dict[str, str]) -> str:
    """'C(framework)[T.torch]' -> 'framework[torch]';
    'log10_batch_size:iterations' -> 'log10(batch_size):iterations'."""
    parts = []
    for piece in raw.split(":"):
        match = re.match(r"^(C\(\w+\))\[T\.(.*)\]$", piece)
        parts.append(
            f"{names.get(match.group(1), match.group(1))}[{match.group(2)}]"
            if match
            else names.get(piece, piece)
        )
    return ":".join(parts)


def fit_ols(
    rows: pl.DataFrame,
    response: str,
    factors: list[str],
    scales: dict[str, str],
    interactions: bool,
    level: float,
) -> dict:
    """OLS with per-term intervals and the type-II ANOVA; a 'reason' instead when it cannot be fitted."""
    import pandas as pd
    import statsmodels.formula.api as smf

    data, formula, names, notes = design(rows, response, factors, scales, interactions)
    frame = pd.DataFrame(data)
    n = len(frame)
    if np.all(frame["y"].to_numpy() == frame["y"].iloc[0]):
        return {
            "reason": f"not enough data: all {n} runs have the same {response}, so nothing can be explained",
            "notes": notes,
        }
    with warnings.catch_warnings():  # a rank-deficient design is said in a note, not as a stray warning
        warnings.simplefilter("ignore")
        model = smf.ols(formula, data=frame).fit()
    if model.model.rank < len(model.params):
        notes.append(
            f"the factors are confounded in these runs (rank {model.model.rank} for {len(model.params)} "
            "parameters): their separate effects cannot be told apart; vary one at a time"
        )
    if model.df_resid < 1:
        return {
            "reason": f"not enough data: {n} runs for {len(model.params)} parameters leave no residual "
            "degrees of freedom for intervals",
            "notes": notes,
        }
    terms = _terms(model, names, level)
    anova = _anova(model, names)
    shown = " + ".join(_term_name(t.strip(), names) for t in formula.split("~", 1)[1].split("+"))
    r2, adj_r2 = _r_squared(model)
    return {
        "model": f"{response} ~ {shown}",
        "r_squared": r2,
        "adj_r_squared": adj_r2,
        "terms": terms,
        "anova": anova,
        "notes": notes,
    }


def _terms(model, names: dict[str, str], level: float) -> list[dict]:
    """Each fitted term's estimate, interval and p-value, under its reported name."""
    ci = model.conf_int(alpha=1 - level)
    return [
        {
            "term": _term_name(raw, names),
            "estimate": float(model.params[raw]),
            "ci_low": float(ci.loc[raw, 0]),
            "ci_high": float(ci.loc[raw, 1]),
            "p_value": finite_or_none(model.pvalues[raw]),
        }
        for raw in model.params.index
    ]


def _anova(model, names: dict[str, str]) -> list[dict]:
    """The type-II ANOVA table, one row per term and the residual; empty for an intercept-only
    model or where statsmodels cannot make one."""
    import statsmodels.api as sm

    if len(model.params) <= 1:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            table = sm.stats.anova_lm(model, typ=2)
        except (ValueError, np.linalg.LinAlgError):
            return []
    return [
        {
            "term": _term_name(str(t), names) if t != "Residual" else "residual",
            "df": float(r["df"]),
            "sum_sq": float(r["sum_sq"]),
            "f": finite_or_none(r.get("F")),
            "p_value": finite_or_none(r.get("PR(>F)")),
        }
        for t, r in table.iterrows()
    ]


def _r_squared(model) -> tuple[float | None, float | None]:
    """R² and adjusted R²; None for a perfect fit, whose R² is 0/0."""
    with (
        np.errstate(all="ignore"),
        warnings.catch_warnings(),
    ):  # R² of a perfect fit is 0/0: None, not a warning
        warnings.simplefilter("ignore")
        return finite_or_none(model.rsquared), finite_or_none(model.rsquared_adj)
