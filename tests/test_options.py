"""What is derived from a tuple of declared options (edgestats/options.py) besides the typer command
(tests/cli/test_declared.py): a dataclass's fields, the values by key (dotted keys gathered into
one dict), repeatable values as lists, tagged subsets, and a Python signature with every keyword."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence

import pytest

from edgestats.options import (
    Opt,
    declared_fields,
    fed,
    given,
    keyword_signature,
    nested,
    tagged,
    values_of,
)

OPTIONS = (
    Opt("only", str, "One of them."),
    Opt("level", float, "The level.", default=0.95, tags=("runs",)),
    Opt("factor", str, "A factor (repeatable).", repeatable=True, key="factors"),
    Opt("device", str, "A device (repeatable).", repeatable=True, key="filters.device", tags=("runs",)),
    Opt("model", str, "A model (repeatable).", repeatable=True, key="filters.model"),
    Opt("verbose", bool, "Say more.", default=False),
)


@dataclasses.dataclass
@declared_fields(OPTIONS)
class Options:
    extra: int = 7  # a field of the class's own: after the declared ones


def test_a_dataclass_gets_a_field_per_option_by_key_with_the_filters_in_one_dict():
    fields = {f.name: f for f in dataclasses.fields(Options)}
    assert list(fields) == ["only", "level", "factors", "filters", "verbose", "extra"]
    made = Options()
    assert (made.only, made.level, made.factors, made.filters, made.verbose, made.extra) == (
        None,
        0.95,
        [],
        {},
        False,
        7,
    )
    assert Options().factors is not made.factors  # a fresh list each time
    with pytest.raises(ValueError, match="feed the field 'level'"):
        declared_fields((*OPTIONS, Opt("other_level", float, "Again.", key="level")))(type("X", (), {}))


def test_values_reach_their_keys_as_the_library_takes_them():
    values = {"only": "a", "factor": "batch_size", "device": ["pi5", "nano"], "model": None, "db": "x"}
    picked = values_of(OPTIONS, values)
    assert "db" not in picked
    as_taken = {o.name: given(o, picked[o.name]) for o in OPTIONS if o.name in picked}
    by_key = nested(fed(OPTIONS, as_taken))
    assert by_key == {"only": "a", "factors": ["batch_size"], "filters": {"device": ["pi5", "nano"]}}
    assert Options(**by_key).filters == {"device": ["pi5", "nano"]}
    assert given(OPTIONS[2], ("a", "b")) == ["a", "b"] and given(OPTIONS[2], None) == []
    assert given(OPTIONS[1], 0.9) == 0.9
    assert [o.name for o in tagged(OPTIONS, "runs")] == ["level", "device"]


def test_the_signature_shows_every_keyword_with_its_default():
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    other = inspect.Parameter("other", inspect.Parameter.KEYWORD_ONLY, default=None)
    signature = keyword_signature(OPTIONS, first=[this], positional=("only",), extra=[other])
    params = signature.parameters
    assert list(params) == ["self", "only", "other", "level", "factor", "device", "model", "verbose"]
    assert params["only"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert params["level"].kind is inspect.Parameter.KEYWORD_ONLY and params["level"].default == 0.95
    assert params["level"].annotation is float and params["only"].annotation == str | None
    assert params["factor"].annotation == str | Sequence[str] | None

    def method(self, only=None, **flags):
        """Do it."""

    method.__signature__ = signature
    assert "verbose: bool = False" in str(inspect.signature(method))
