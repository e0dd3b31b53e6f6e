"""The Python API's keywords are the commands' declared options (edgestats/analysis/core/flags.py,
edgestats/analysis/compare/flags.py): help() and inspect show each with its default, and a
keyword no option has is refused with the valid ones named, before any DB is read."""

from __future__ import annotations

import inspect
import pydoc

import pytest

import edgestats
from edgestats.analysis.compare.flags import COMPARE_OPTIONS
from edgestats.analysis.core.flags import ANALYSIS_OPTIONS, RUNS
from edgestats.options import tagged


def parameters(method) -> dict[str, object]:
    return {name: p.default for name, p in inspect.signature(method).parameters.items()}


def test_the_signatures_are_the_declarations():
    results = edgestats.Results
    assert parameters(results.analyze) == {"self": inspect.Parameter.empty} | {
        o.name: o.default for o in ANALYSIS_OPTIONS
    }
    assert parameters(results.runs) == {"self": inspect.Parameter.empty} | {
        o.name: o.default for o in tagged(ANALYSIS_OPTIONS, RUNS)
    }
    names = [o.name for o in COMPARE_OPTIONS]
    assert list(parameters(results.compare)) == ["self", "a", "b", "other", *names[2:]]
    assert parameters(results.compare)["threshold"] == 5.0
    shown = pydoc.render_doc(results.analyze, renderer=pydoc.plaintext)
    assert "bca_max_n: int = 500" in shown and "noisy: str = 'include'" in shown


def test_a_keyword_no_option_has_is_refused_naming_the_options(results_db):
    results = edgestats.open(results_db)
    with pytest.raises(TypeError, match=r"analyze\(\).*resampels.*resamples"):
        results.analyze("summary", resampels=200)
    with pytest.raises(TypeError, match=r"runs\(\).*\bby\b.*where"):
        results.runs(by="framework")  # runs takes the options that select runs only
    with pytest.raises(TypeError, match=r"compare\(\).*treshold.*threshold"):
        results.compare(a="framework = 'pytorch'", b="framework = 'onnxruntime'", treshold=3)
