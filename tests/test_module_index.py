"""docs/architecture.md §3 names every module (tests/module_index.py makes its index from the
docstrings): a module without a docstring, or one the index lacks, misnames or still lists after
it moved, fails here."""

from __future__ import annotations

import module_index
import pytest

MAX_SUMMARY = 150  # two lines of the index's responsibility column


def test_every_module_says_what_it_is_for():
    silent = [str(entry.path) for entry in module_index.entries() if entry.summary is None]
    assert not silent, "give these modules (or packages' __init__.py) a docstring:\n" + "\n".join(silent)


def test_each_responsibility_fits_a_line_or_two_of_the_index():
    """The first sentence is the module's line in the index: a paragraph there is a module saying
    too much at once (the detail belongs in the sentences after it)."""
    long = [
        f"{entry.path} ({len(entry.summary)} characters)"
        for entry in module_index.entries()
        if entry.summary is not None and len(entry.summary) > MAX_SUMMARY
    ]
    assert not long, f"shorten the first sentence of these docstrings to {MAX_SUMMARY} characters:\n" + (
        "\n".join(long)
    )


def test_the_architecture_doc_lists_every_module_as_the_code_has_it():
    current = module_index.in_doc(module_index.DOC.read_text(encoding="utf-8"))
    assert current is not None, (
        f"docs/architecture.md has no index between {module_index.BEGIN!r} and its end"
    )
    assert current == module_index.render(), (
        "docs/architecture.md's module index is out of date: run `.venv/bin/python tests/module_index.py "
        "--write` and review the diff"
    )


@pytest.mark.parametrize(
    ("docstring", "sentence"),
    [
        ("One thing. Another.", "One thing."),
        ("Reads a file, e.g. a CSV. Then more.", "Reads a file, e.g. a CSV."),
        ("`sql`: run a query.\n\nDetails.", "`sql`: run a query."),
        ("  Wrapped\n  over lines, here.  ", "Wrapped over lines, here."),
        ("", None),
        (None, None),
    ],
)
def test_the_first_sentence_is_the_responsibility(docstring, sentence):
    assert module_index.first_sentence(docstring) == sentence


def test_a_module_without_a_docstring_is_named(tmp_path, monkeypatch):
    package = tmp_path / "edgestats"
    package.mkdir()
    (package / "__init__.py").write_text('"""The package."""\n')
    (package / "silent.py").write_text("x = 1\n")
    monkeypatch.setattr(module_index, "REPO", tmp_path)
    monkeypatch.setattr(module_index, "FOLDERS", ("edgestats",))
    assert [(str(e.path), e.summary) for e in module_index.entries()] == [
        ("edgestats", "The package."),
        ("edgestats/silent.py", None),
    ]
    assert "(no docstring)" in module_index.render()
