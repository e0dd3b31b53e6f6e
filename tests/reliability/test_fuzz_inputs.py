"""Fuzzed input, run through the CLI in-process: generated CSV files for `import`, TOML sweep
files for `collect`, and option values for `collect`. The generated `--where`, `--by` and queries
for `analyze` and `sql` are in test_fuzz_queries.py; the invariant both check is in fuzz_cli.py.

The invariant for every input: the exit code is 0, 1 or 2, nothing escapes as an exception (no
traceback), and on an error the DB is absent if it did not exist before, else byte-identical.
`collect` never reaches a run here: a sweep that passes validation is given a DB in a folder that
does not exist, and the planning step is replaced by one that fails the test if it is reached.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fuzz_cli import FUZZ, db_placer, invoke_checked, workdir
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestats.collectors.sweep import AXES, SETTINGS, combine, load_sweep_file
from edgestats.imports.columns import CANONICAL


@pytest.fixture
def existing_db(results_db_template: Path):
    """Copy the session's results DB into an example's folder."""
    return db_placer(results_db_template)


# -- import: generated CSV files ----------------------------------------------------------------

NAMES = sorted(CANONICAL) + [
    "Batch Size",
    "Training Time (s)",
    "latency_us",
    "mem_max_gib",
    "latency_mb",
    "colour",
    "",
    " ",
    "a,b",
    'x"y',
    "dup",
    "dup",
    "\x00",
    "é€",
]
CELLS = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.floats().map(repr),
    st.sampled_from(
        [
            '"',
            '""',
            '"pi',
            'pi"',
            '"a,b"',
            "1,234.5",
            "\x00",
            "1e23",
            "3000000000",
            "2147483648",
            "NaN",
            "inf",
            "-0",
            " ",
            "",
            "ok",
            "killed",
            "inference",
            "training",
            "1e400",
            "0x10",
        ]
    ),
    st.text(max_size=6),
)


INT_COLUMNS = [name for name, spec in CANONICAL.items() if spec.type == "int"]
COUNTS = st.one_of(
    st.sampled_from(["1e23", "3000000000", "2147483648", "2147483647", "4", "1.5", "-1", "1,000", "inf"]),
    st.integers(min_value=0, max_value=10**25).map(str),
)


@st.composite
def csv_rows(draw) -> list[list[str]]:
    """A header and rows: half of the files look importable (a device, a framework and a count,
    with a few odd cells), the others are any known or junk names with any cells."""
    if draw(st.booleans()):
        extra = draw(st.lists(st.sampled_from(NAMES), max_size=1))
        header = ["device", "framework", draw(st.sampled_from(INT_COLUMNS)), *extra]
        rows = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["pi", "pi", "pi", '"pi', "jetson nano", ""]),
                    st.sampled_from(["pytorch", "tflite"]),
                    COUNTS,
                    *[CELLS for _ in extra],
                ).map(list),
                min_size=1,
                max_size=3,
            )
        )
        return [header, *rows]
    header = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5))
    return [header, *draw(st.lists(st.lists(CELLS, min_size=len(header), max_size=len(header)), max_size=4))]


@st.composite
def csv_files(draw) -> bytes:
    rows = draw(csv_rows())
    delimiter = draw(st.sampled_from([",", ",", ",", "\t", ";"]))
    quote = draw(st.integers(min_value=0, max_value=3)) == 3  # (hypothesis favours small integers)
    lines = [delimiter.join(f'"{c}"' if quote and '"' not in c else c for c in row) for row in rows]
    data = ("\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))).encode("utf-8", "surrogatepass")
    if draw(st.integers(min_value=0, max_value=3)) == 3:  # bytes that are not UTF-8 somewhere in the file
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff\xfe", b"\xc3", b"\x80", b"\xed\xa0\x80"])) + data[at:]
    return data


@FUZZ
@given(
    data=csv_files(),
    suffix=st.sampled_from([".csv", ".tsv", ".txt"]),
    kind=st.sampled_from(["inference", "training"]),
    device=st.sampled_from([None, "pi"]),
    into_existing=st.booleans(),
)
@pytest.mark.slow
def test_fuzzed_csv_import(existing_db, data, suffix, kind, device, into_existing):
    with workdir() as folder:
        db = existing_db(folder) if into_existing else folder / "new.duckdb"
        src = folder / f"results{suffix}"
        src.write_bytes(data)
        args = ["import", db, src, "--kind", kind] + (["--device", device] if device else [])
        invoke_checked(args, db)


# -- collect: generated TOML sweep files and option values ---------------------------------------

KEYS = list(AXES) + list(SETTINGS) + ["options", "colour", "batchsize"]
SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.sampled_from(
        [
            0,
            1,
            1000,
            1001,
            1e9,
            2**31 - 1,
            2**31,
            "pytorch",
            "onnxruntime",
            "cnn9",
            "squeezenet",
            "missing.onnx",
            "fp16",
            "int4",
            "cpu",
            "cuda",
            "training",
            "inference",
            "none",
            "auto",
            "csv:/nonexistent.csv",
            True,
            False,
        ]
    ),
    st.text(max_size=8),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["xnnpack", "colour"]), SCALARS, max_size=2),
)


def toml_value(value) -> str:
    """TOML for a generated value; floats include nan and inf, strings any text (a lone
    surrogate or a control character gives a file that is not valid TOML, on purpose)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if math.isinf(value)
            else repr(value)
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"


@st.composite
def sweep_files(draw) -> bytes:
    table = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6))
    if draw(st.booleans()):  # valid-ish: a framework and a model that exist
        table.update(framework=draw(st.sampled_from(["pytorch", "onnxruntime", "tflite"])), model="cnn9")
    head = draw(st.sampled_from(["[sweep]", "[sweep]", "[runs]", "[sweep", ""]))
    text = head + "\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items())
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        data += draw(st.sampled_from([b"\xff\xfe", b"= =\n", b"[sweep]\n", b"\x00", b"model = 'cnn9'\n"]))
    return data


@pytest.fixture
def no_runs(monkeypatch):
    """collect must stop before planning: planning imports frameworks and starts runs."""

    def reached(*args, **kwargs):
        raise AssertionError("a fuzzed collect got past its checks to planning runs")

    monkeypatch.setattr("edgestats.workflows.collect.plan", reached)


def valid_sweep(path: Path) -> bool:
    try:
        combine(load_sweep_file(path), {}, path)
    except Exception:  # noqa: BLE001  (any failure: the CLI run below must then fail cleanly)
        return False
    return True


@FUZZ
@given(data=sweep_files(), into_existing=st.booleans())
def test_fuzzed_sweep_files(existing_db, no_runs, data, into_existing):
    with workdir() as folder:
        path = folder / "sweep.toml"
        path.write_bytes(data)
        if valid_sweep(path):  # it would run: give it a DB it cannot open
            db = folder / "no-such-folder" / "r.duckdb"
        else:
            db = existing_db(folder) if into_existing else folder / "new.duckdb"
        result = invoke_checked(["collect", path, "--db", db, "--power", "none"], db)
        assert result.exit_code != 0


NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(repr),
    st.sampled_from(
        ["nan", "inf", "-inf", "1e400", "1e9", "0", "-1", "", "abc", "0x10", "1_000", "2147483648", "1e-400"]
    ),
)
COLLECT_OPTIONS = [
    "--iterations",
    "--batch-size",
    "--threads",
    "--timeout",
    "--sample-hz",
    "--repeat",
    "--warmup",
    "--cooldown",
    "--seed",
    "--shuffle-seed",
    "--memory-limit-mb",
    "--epochs",
    "--learning-rate",
    "--clock-offset",
]


@settings(FUZZ, max_examples=20)
@given(
    values=st.lists(st.tuples(st.sampled_from(COLLECT_OPTIONS), NUMBERS), min_size=1, max_size=4),
    kind=st.sampled_from([[], ["--kind", "training", "--data", "no-such-dataset"]]),
)
def test_fuzzed_collect_options(no_runs, values, kind):
    with workdir() as folder:
        db = folder / "no-such-folder" / "r.duckdb"  # a valid combination must not run either
        args = ["collect", "--db", db, "--power", "none", "-f", "pytorch", "-m", "cnn9", *kind]
        for option, value in values:
            args += [option, value]
        assert invoke_checked(args, db).exit_code != 0
