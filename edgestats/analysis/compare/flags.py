"""The options of a comparison, declared once: each one's flag, help and default; and the
comparison made from them by name (`compare_from_flags`).

From COMPARE_OPTIONS come `edgestats compare`'s flags (cli/compare.py, through cli/declared.py)
and the keywords of the Python API's `Results.compare`, with their signature; both call
`compare_from_flags`. Adding an option is adding its entry here and reading it there.

Standard library only: the CLI imports it at start-up (the statistics are imported when called).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.options import Opt, check_keywords, fed, given

# In --help's order (cli/compare.py adds the two DBs before them, --format and --out after).
COMPARE_OPTIONS = (
    Opt(
        "a",
        str,
        "Select side A's runs: an expression on run_summary columns, e.g. \"framework = 'pytorch'\".",
        metavar="SQL",
    ),
    Opt("b", str, "Select side B's runs, e.g. \"framework = 'onnxruntime'\".", metavar="SQL"),
    Opt("where", str, "Select the runs of both sides, e.g. \"model = 'cnn9'\".", metavar="SQL"),
    Opt(
        "match",
        str,
        "Match configurations on these run columns (repeatable); default: the configuration columns "
        "that do not differ between the sides.",
        metavar="COL",
        repeatable=True,
    ),
    Opt(
        "threshold",
        float,
        "Changes within ±PCT % count as the same; a regression must be beyond it (default 5).",
        default=5.0,
        metavar="PCT",
    ),
    Opt(
        "level",
        float,
        "Confidence level of the intervals; the tests' significance level is 1 - level.",
        default=0.95,
    ),
)


def compare_from_flags(db_a: str | Path, db_b: str | Path | None = None, **flags: Any):
    """B against A (edgestats.analysis.compare.comparison.compare): side A is db_a's runs that
    --where and --a select, side B db_b's (default: db_a's) that --where and --b select; --match,
    --threshold (in percent) and --level as given, by option name, else their defaults. A name no
    option has is a TypeError naming the options."""
    from edgestats.analysis.compare.comparison import Selection, combined_where, compare

    check_keywords(COMPARE_OPTIONS, flags, "compare")
    values = fed(COMPARE_OPTIONS, {o.name: given(o, flags.get(o.name, o.default)) for o in COMPARE_OPTIONS})
    side_a = Selection(Path(db_a), combined_where({"--where": values["where"], "--a": values["a"]}))
    side_b = Selection(Path(db_b or db_a), combined_where({"--where": values["where"], "--b": values["b"]}))
    threshold, level = values["threshold"] / 100.0, values["level"]
    return compare(side_a, side_b, threshold=threshold, level=level, match=values["match"] or None)
