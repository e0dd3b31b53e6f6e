"""The module index of docs/architecture.md §3, made from the module docstrings: every package and
module of the installed library with the first sentence of its docstring, its one responsibility.

`python tests/module_index.py --write` rewrites the index in the doc (after adding, moving or
renaming a module, or changing the first sentence of a docstring); tests/test_module_index.py
fails when the doc and the code disagree, or when a module has no docstring.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).parents[1]
DOC = REPO / "docs" / "architecture.md"
# The source folders of the installed package, in the order the index lists them (pyproject's
# package-dir: collectors/ installs as edgestats.collectors, reports/ as edgestats.reports).
FOLDERS = ("edgestats", "collectors", "reports", "schema")
BEGIN = "<!-- module index: made by `python tests/module_index.py --write` from the docstrings -->"
END = "<!-- end of the module index -->"
NAME_WIDTH = 30  # the column the responsibilities start at
WIDTH = 110


@dataclass(frozen=True)
class Entry:
    path: Path  # relative to the repository
    depth: int
    summary: str | None  # the docstring's first sentence; None: no docstring


def first_sentence(docstring: str | None) -> str | None:
    """The first sentence of the docstring's first paragraph, on one line."""
    if not docstring or not docstring.strip():
        return None
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    # a full stop ends a sentence where a space and a capital, a backtick or a quote follow
    match = re.search(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)\.(?=\s+[A-Z`\"(])", paragraph)
    return (paragraph[: match.start() + 1] if match else paragraph).rstrip()


def docstring_of(path: Path) -> str | None:
    return _docstring_of(path, path.stat().st_mtime_ns)


@functools.cache
def _docstring_of(path: Path, _version: int) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))


def entries() -> list[Entry]:
    """Every package (its __init__'s docstring) and module, depth-first, modules before subpackages."""
    found: list[Entry] = []

    def walk(folder: Path, depth: int) -> None:
        init = folder / "__init__.py"
        found.append(Entry(folder.relative_to(REPO), depth, first_sentence(docstring_of(init))))
        for module in sorted(p for p in folder.glob("*.py") if p.name != "__init__.py"):
            found.append(Entry(module.relative_to(REPO), depth + 1, first_sentence(docstring_of(module))))
        for sub in sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file()):
            walk(sub, depth + 1)

    for name in FOLDERS:
        walk(REPO / name, 0)
    return found


def line_of(entry: Entry) -> str:
    """The entry's lines: its name (a folder with a slash) and its summary wrapped in its column."""
    name = "  " * entry.depth + entry.path.name + ("/" if entry.path.suffix != ".py" else "")
    text = entry.summary or "(no docstring)"
    column = max(NAME_WIDTH, len(name) + 2)
    lines = textwrap.wrap(text, WIDTH - column, break_on_hyphens=False, break_long_words=False)
    if len(name) + 2 > NAME_WIDTH:  # a long name: the summary starts on the next line, in the column
        column = NAME_WIDTH
        lines = textwrap.wrap(text, WIDTH - column, break_on_hyphens=False, break_long_words=False)
        return "\n".join([name] + [" " * column + line for line in lines])
    return "\n".join([name.ljust(column) + lines[0]] + [" " * column + line for line in lines[1:]])


def render() -> str:
    """The index as the doc holds it, markers included."""
    body = "\n".join(line_of(entry) for entry in entries())
    return f"{BEGIN}\n\n```\n{body}\n```\n\n{END}"


def in_doc(text: str) -> str | None:
    """The index the doc holds now (markers included), or None."""
    start, end = text.find(BEGIN), text.find(END)
    return text[start : end + len(END)] if start != -1 and end != -1 else None


def write() -> None:
    text = DOC.read_text(encoding="utf-8")
    current = in_doc(text)
    if current is None:
        raise SystemExit(f"{DOC}: no module index between {BEGIN!r} and {END!r}")
    DOC.write_text(text.replace(current, render()), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(
            "usage: python tests/module_index.py --write  (rewrites docs/architecture.md's index)"
        )
    write()
