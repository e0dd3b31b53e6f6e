"""The options of an analysis, declared once: each one's flag, help and default, and what it feeds.

From ANALYSIS_OPTIONS come `edgestats analyze`'s flags (cli/analyze.py, through cli/declared.py),
AnalysisOptions' fields and its construction from flags (core/options.py: a field per option,
named by its key; the keys `filters.COL` are its filters), and the keywords of the Python API's
`Results.analyze` (those tagged `runs`: `Results.runs`'), with their signature. Adding an option
is adding its entry here; what reads it reads its AnalysisOptions field.

Standard library only (and the registry's names): the CLI imports it at start-up.
"""

from __future__ import annotations

from edgestats.options import Opt
from edgestats.registry.analyses import choices_text

RUNS = "runs"  # the tag of the options that select runs: Results.runs takes them too


def _filter(column: str, help: str) -> Opt:
    """--device NAME ...: only runs with one of these values in the column (repeatable)."""
    return Opt(column, str, help, repeatable=True, key=f"filters.{column}", tags=(RUNS,))


# In --help's order, --only first (cli/analyze.py puts its --json after it, its output options last).
ANALYSIS_OPTIONS = (
    Opt("only", str, f"Run one analysis: {choices_text()}.", metavar="NAME"),
    # -- which runs, grouped how, with which intervals
    Opt(
        "where",
        str,
        "Select runs with an expression on run_summary columns, e.g. \"framework = 'pytorch'\".",
        metavar="SQL",
        tags=(RUNS,),
    ),
    Opt(
        "by",
        str,
        "Group key (repeatable), any run column: device, framework, runtime, model, batch_size, "
        "threads, precision, dataset and the others of run_summary.",
        metavar="COL",
        repeatable=True,
    ),
    Opt("level", float, "Confidence level of every interval.", default=0.95),
    Opt("seed", int, "Seed of the bootstrap resampling (results are reproducible for a seed).", default=0),
    Opt("resamples", int, "Bootstrap resamples per interval.", default=2000, key="n_resamples"),
    Opt(
        "bca_max_n",
        int,
        "Largest sample bootstrapped with BCa; bigger ones use order statistics (quantiles) or the "
        "percentile bootstrap (ratios).",
        default=500,
    ),
    # -- the filters
    _filter("device", "Only runs on this device (repeatable)."),
    _filter("framework", "Only this framework (repeatable)."),
    _filter("runtime", "Only this runtime (repeatable)."),
    _filter("model", "Only this model (repeatable)."),
    _filter("dataset", "Only this dataset (repeatable)."),
    _filter("kind", "Only inference or training runs."),
    Opt(
        "noisy",
        str,
        "Runs flagged noisy by collect's noise sentinel (a busy machine): include them, counted in a "
        "note, or exclude them. Runs never judged (imported, recovered) are kept.",
        default="include",
        metavar="include|exclude",
        tags=(RUNS,),
    ),
    # -- answers
    Opt(
        "answer_by",
        str,
        "answers: a key of the groups compared within (repeatable; default device, model, "
        "batch_size, precision, or every configuration key but --answer-across).",
        metavar="COL",
        repeatable=True,
    ),
    Opt(
        "answer_across",
        str,
        "answers: a key of the candidates compared (repeatable; default the configuration keys "
        "not in --answer-by: framework, runtime, threads).",
        metavar="COL",
        repeatable=True,
    ),
    # -- hyperparams
    Opt(
        "response",
        str,
        "hyperparams: the response, e.g. training_time_s, accuracy_pct, epoch_time_s, testing_time_s, "
        "latency_median_ms.",
        metavar="COL",
    ),
    Opt(
        "factor",
        str,
        "hyperparams: a factor (repeatable), e.g. batch_size, iterations, learning_rate, threads.",
        metavar="COL",
        repeatable=True,
        key="factors",
    ),
    Opt(
        "interaction",
        bool,
        "hyperparams: add every pairwise interaction of the factors.",
        default=False,
        key="interactions",
    ),
    Opt(
        "best",
        str,
        "hyperparams: report the configuration with the min or max mean response per group.",
        metavar="min|max",
    ),
    Opt(
        "constraint",
        str,
        'hyperparams: only configurations meeting it count for --best, e.g. "training_time_s <= 600".',
        metavar="TEXT",
    ),
    Opt(
        "log",
        str,
        "hyperparams: log10-scale this factor (default: when it spans two decades).",
        metavar="COL",
        repeatable=True,
        key="log_factors",
    ),
    Opt(
        "linear",
        str,
        "hyperparams: never log-scale this factor.",
        metavar="COL",
        repeatable=True,
        key="linear_factors",
    ),
)
