"""The report's inlined script is cached on disk with its hash; a damaged copy is rebuilt."""

from __future__ import annotations

import hashlib

import pytest
import vl_convert

from edgestats.reports import bundle


@pytest.fixture
def fake_builder(monkeypatch, tmp_path):
    """vl-convert's builder takes seconds: count calls to a stand-in; the cache code is real."""
    calls = []

    def build() -> str:
        calls.append(1)
        return f"/* vega bundle {len(calls)} */"

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(vl_convert, "javascript_bundle", build)
    bundle.vega_bundle.cache_clear()
    yield calls
    bundle.vega_bundle.cache_clear()


def cached_file(tmp_path):
    return tmp_path / "edgestats" / f"vega-bundle-vl-convert-{vl_convert.__version__}.js"


def test_the_bundle_is_built_once_and_then_read_from_disk(fake_builder, tmp_path):
    first = bundle.vega_bundle()
    bundle.vega_bundle.cache_clear()  # a new process
    assert bundle.vega_bundle() == first and len(fake_builder) == 1
    path = cached_file(tmp_path)
    assert path.read_text() == first
    assert path.with_name(path.name + ".sha256").read_text() == hashlib.sha256(first.encode()).hexdigest()


def test_a_damaged_cached_bundle_is_rebuilt_not_served(fake_builder, tmp_path):
    bundle.vega_bundle()
    path = cached_file(tmp_path)
    path.write_text("/* cut sh")  # a partial copy, or an edit
    bundle.vega_bundle.cache_clear()
    assert bundle.vega_bundle() == "/* vega bundle 2 */" and len(fake_builder) == 2
    assert path.read_text() == "/* vega bundle 2 */"


def test_an_unwritable_cache_costs_time_only(fake_builder, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert bundle.vega_bundle() == "/* vega bundle 1 */"
