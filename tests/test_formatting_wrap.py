"""edgestats.formatting's terminal wrapping (doctor's and collect's lines): pieces fit the width,
breaks fall only at spaces, continuations hang under the line's first column gap."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from edgestats.formatting import hanging_indent, terminal_width, wrap_line, wrap_spans, wrap_text

ROW = (
    "  pytorch      yes  2.13.0  5.81 s  cuda available: no; cuda version: -; num threads: 2; "
    "torchscript: yes"
)


def test_a_row_continues_under_its_first_column_gap():
    lines = wrap_line(ROW, 60)
    assert lines == [
        "  pytorch      yes  2.13.0  5.81 s  cuda available: no; cuda",
        "               version: -; num threads: 2; torchscript: yes",
    ]
    assert hanging_indent(ROW, 60) == ROW.index("yes")


def test_a_line_without_columns_hangs_four_in_and_a_deep_gap_is_not_followed():
    assert wrap_line("telemetry: one two three four", 20) == ["telemetry: one two", "    three four"]
    deep = " " * 50 + "fix: stop the busy processes now"
    assert hanging_indent(deep, 80) == 40  # never past half the width


def test_a_word_longer_than_the_room_stands_alone_whole():
    path = "/tmp/" + "x" * 90 + ".duckdb"
    assert wrap_line(f"{path}: 1 ok", 80) == [path + ":", "    1 ok"]


def test_no_width_or_a_short_line_is_left_as_it_is():
    assert wrap_line(ROW, None) == [ROW]
    assert wrap_line("short", 80) == ["short"]
    assert wrap_text("a\n\n" + ROW, None) == "a\n\n" + ROW
    assert wrap_text("a\n\nb", 80) == "a\n\nb"  # blank lines stay


def test_a_stream_that_is_not_a_terminal_has_no_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert terminal_width(io.StringIO()) is None  # a pipe or log: whole lines, COLUMNS or not


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz:;,.()/-0123456789", min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)  # well under a second: the fast lane's
@given(
    lead=st.integers(0, 6),
    parts=st.lists(st.tuples(words, st.integers(1, 3)), min_size=1, max_size=40),
    width=st.integers(20, 140),
)
def test_pieces_fit_and_words_stay_whole(lead, parts, width):
    line = " " * lead + "".join(word + " " * gap for word, gap in parts).rstrip()
    pieces = wrap_line(line, width)
    assert " ".join(pieces).split() == line.split()  # every word whole, in order, none lost
    hang = hanging_indent(line, width)
    for i, piece in enumerate(pieces):
        assert len(piece) <= width or len(piece.split()) == 1, (piece, width)  # only a lone long word
        if i:
            assert piece[:hang] == " " * hang and piece[hang] != " "
    spans = wrap_spans(line, width)
    assert all(line[end - 1] != " " and (start == 0 or line[start - 1] == " ") for start, end in spans)


def test_a_bound_the_estimates_decimals_would_round_to_zero_keeps_its_own_digits():
    from edgestats.formatting import format_interval

    assert format_interval(11.1, 0.0027, 48_101.4) == "11.1 [0.00270, 48,101.4]"
    assert format_interval(12.3, 11.9, 12.8) == "12.3 [11.9, 12.8]"  # the digits still line up
    assert format_interval(1.5, 0.0, 3.0) == "1.50 [0.00, 3.00]"  # a true zero stays a zero


def test_a_percent_sign_is_never_carried_to_the_next_line_alone():
    line = "until precise: each of 6 configurations until its median is known to ±2 % (95 %), 10 to 50 runs"
    lines = wrap_line(line, 80)
    assert lines[0].endswith("±2 %") and lines[1].lstrip().startswith("(95 %),")
    assert all(not piece.lstrip().startswith("%") for piece in lines)
