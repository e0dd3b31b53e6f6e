"""Repeated options arrive as lists or tuples: click, and typer before 0.29, hand `collect`'s
repeated flags over as tuples (ctx.params); the Python API may pass any sequence. A sweep built
from either is the same sweep; a string is one value, never its letters."""

from __future__ import annotations

from collections import UserDict

import pytest

from edgestats.collectors.options import COLLECT_OPTIONS
from edgestats.collectors.sweep import SweepError, as_values, build_sweep, combine
from edgestats.collectors.sweep_keys import sweep_values


def flag_params(**given) -> dict:
    """collect's values with nothing given but `given`, as click holds them: tuples."""
    params = {opt.name: opt.default for opt in COLLECT_OPTIONS}
    params.update({"option": (), "retry_failed": False, **given})
    return params


def test_tuples_lists_and_other_sequences_are_axes():
    as_lists = build_sweep({"framework": ["onnxruntime", "pytorch"], "model": ["cnn9"], "threads": [1, 2]})
    as_tuples = build_sweep({"framework": ("onnxruntime", "pytorch"), "model": ("cnn9",), "threads": (1, 2)})
    as_ranges = build_sweep(
        {"framework": ("onnxruntime", "pytorch"), "model": "cnn9", "threads": range(1, 3)}
    )
    assert as_lists.axes == as_tuples.axes == as_ranges.axes
    assert as_tuples.axes["framework"] == ["onnxruntime", "pytorch"]  # stored as lists, as TOML gives them
    assert [c.config_hash() for c in as_lists.configs()] == [c.config_hash() for c in as_tuples.configs()]


def test_a_string_is_one_value_not_its_letters():
    assert as_values("cnn9") == ["cnn9"] and as_values(b"x") == [b"x"] and as_values(3) == [3]
    assert build_sweep({"framework": "onnxruntime", "model": "cnn9"}).axes["model"] == ["cnn9"]


def test_collect_flags_as_click_hands_them_build_the_sweep():
    """The tuples of a repeated -f / -m (the failure this guards: 'framework: expected a string (or a
    list of them), got tuple')."""
    params = flag_params(
        framework=("onnxruntime", "pytorch"), model=("cnn9", "squeezenet"), option=("xnnpack=false",)
    )
    sweep = combine(None, sweep_values(COLLECT_OPTIONS, params), None)
    assert sweep.axes["framework"] == ["onnxruntime", "pytorch"]
    assert sweep.axes["model"] == ["cnn9", "squeezenet"]
    assert len(sweep.configs()) == 4


def test_an_empty_tuple_is_a_flag_not_given():
    file_values = {"framework": ["onnxruntime"], "model": ["cnn9"]}
    sweep = combine(file_values, {"framework": (), "model": ()}, None)
    assert sweep.axes["framework"] == ["onnxruntime"] and sweep.axes["model"] == ["cnn9"]
    with pytest.raises(SweepError, match="an empty list gives no runs"):
        build_sweep({"framework": (), "model": "cnn9"})


def test_options_as_any_mapping_with_tuples_become_lists():
    sweep = build_sweep(
        {"framework": "onnxruntime", "model": "cnn9", "options": UserDict({"input_shape": (3, 16, 16)})}
    )
    assert sweep.options == {"input_shape": [3, 16, 16]}
    assert (
        build_sweep(
            {"framework": "onnxruntime", "model": "cnn9", "options": {"input_shape": [3, 16, 16]}}
        ).options
        == sweep.options
    )
