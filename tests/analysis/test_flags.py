"""analyze's and compare's options, declared once (edgestats/analysis/core/flags.py,
edgestats/analysis/compare/flags.py): AnalysisOptions has a field per declared option with its
default, from_flags reads every option by name (repeatable ones as lists, the filters into
`filters`), the declared defaults are the estimators' own, and the commands' --help lists each."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from edgestats.analysis import AnalysisOptions
from edgestats.analysis.compare.comparison import DEFAULT_THRESHOLD
from edgestats.analysis.compare.flags import COMPARE_OPTIONS
from edgestats.analysis.core.flags import ANALYSIS_OPTIONS
from edgestats.analysis.estimators.intervals import DEFAULT_BCA_MAX_N, DEFAULT_LEVEL, DEFAULT_RESAMPLES
from edgestats.analysis.load.frames import FILTER_COLUMNS
from edgestats.cli import app
from edgestats.options import by_name


def test_every_declared_option_is_a_field_with_its_default():
    fields = {f.name: f for f in dataclasses.fields(AnalysisOptions)}
    made = AnalysisOptions()
    for opt in ANALYSIS_OPTIONS:
        outer, dot, column = opt.feeds.partition(".")
        assert outer in fields, opt.name
        if dot:
            assert column in FILTER_COLUMNS, f"--{opt.name}: the loader has no filter {column!r}"
        else:
            assert getattr(made, outer) == ([] if opt.repeatable else opt.default), opt.name


def test_the_declared_defaults_are_the_estimators():
    analyze, compare = by_name(ANALYSIS_OPTIONS), by_name(COMPARE_OPTIONS)
    assert analyze["level"].default == compare["level"].default == DEFAULT_LEVEL
    assert analyze["resamples"].default == DEFAULT_RESAMPLES
    assert analyze["bca_max_n"].default == DEFAULT_BCA_MAX_N
    assert compare["threshold"].default == pytest.approx(DEFAULT_THRESHOLD * 100)


def test_from_flags_reads_each_option_by_its_name():
    options = AnalysisOptions.from_flags(
        only="hyperparams",
        by="dataset",
        resamples=300,
        factor=["batch_size", "iterations"],
        interaction=True,
        log="learning_rate",
        linear=(),
        device="pi5",
        model=None,
        noisy="exclude",
        answer_across="runtime",
    )
    assert (options.only, options.by, options.n_resamples) == ("hyperparams", ["dataset"], 300)
    assert (options.factors, options.interactions) == (["batch_size", "iterations"], True)
    assert (options.log_factors, options.linear_factors, options.answer_across) == (
        ["learning_rate"],
        [],
        ["runtime"],
    )
    assert options.filters == {"device": ["pi5"], "noisy": ["exclude"]}  # --noisy travels as a filter
    with pytest.raises(TypeError, match="resampels.*resamples"):
        AnalysisOptions.from_flags(resampels=300)


@pytest.mark.parametrize(
    ("command", "options"), [("analyze", ANALYSIS_OPTIONS), ("compare", COMPARE_OPTIONS)]
)
def test_the_commands_help_lists_every_declared_option(command, options):
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    for opt in options:
        assert opt.spellings[0] in text and " ".join(opt.help.split()) in text, opt.name
