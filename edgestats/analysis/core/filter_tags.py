"""The page filter's fields (device, framework, runtime, model) of a figure row, from the runs behind
it. The training analyses (hyperparams, pipeline) group by hyperparameters, storage or device, so
their rows would otherwise not say which model or runtime they are about, and the report's filter
could not reach them.

A field the runs share is that value. Runs that span several values give them sorted and joined
by ", " ("cnn9, mnist_cnn"): the row pools models, so it is the figure of none of them alone and
the page's filter hides it whenever one value of that field is chosen (its drop-down lists the
members, not the joined text). Runs that all lack the field (an imported run without a runtime)
give None: unknown, hidden when that field is chosen. A column the runs do not have is left out:
the row is not about it and stays under any choice.
"""

from __future__ import annotations

import polars as pl

FILTER_TAGS = ("device", "framework", "runtime", "model")
SPAN_SEPARATOR = ", "


def filter_tags(runs: pl.DataFrame, skip: object = ()) -> dict[str, str | None]:
    """{field: value} for each FILTER_TAGS column of `runs` not in `skip` (a group's own keys)."""
    tags: dict[str, str | None] = {}
    for column in FILTER_TAGS:
        if column in skip or column not in runs.columns:
            continue
        values = sorted({str(v) for v in runs[column].drop_nulls().to_list()})
        tags[column] = SPAN_SEPARATOR.join(values) if values else None
    return tags


def tag_columns(runs: pl.DataFrame, skip: object = ()) -> list[str]:
    """The FILTER_TAGS columns `runs` has, not in `skip`: those to carry along a selection."""
    return [c for c in FILTER_TAGS if c in runs.columns and c not in skip]
