"""`edgestats import --format llama-bench`: llama.cpp's `llama-bench` output as generation runs.

llama-bench writes one record per test (`-o md`, `csv`, `json`, `jsonl`, `sql`): a prompt-processing
test `ppN` (n_prompt N, n_gen 0), a token-generation test `tgN` (n_gen N) or a combined `ppN+tgM`
(`-pg`), each at a context depth (`-d`, " @ dN"), averaged over its repetitions (`-r`). JSON and
JSONL also carry each repetition's time and tokens/s (samples_ns, samples_ts): there each
repetition becomes a run of its own, as `collect` stores one process per run; the other formats
give one run per test, with the mean and the standard deviation llama-bench printed.

Each run gets the generation columns (contract of schema 0009): prompt_tokens, new_tokens,
context_depth, and the test's tokens/s as prefill_tokens_per_s (pp tests) or decode_tokens_per_s
(tg tests). A pp+tg test's rate is of both phases together (llama-bench divides prompt plus
generated tokens by the test's time), so it is neither: it stays in the extra column tokens_per_s,
which every run carries as llama-bench printed it. Nothing is recomputed. docs/cli/import.md,
"llama-bench".
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from edgestats.errors import ImportFileError

FORMAT = "llama-bench"
EXPECTED = (
    "its -o md table ('| model | ... | test | t/s |'), -o csv (a header beginning 'build_commit,'), "
    "-o json ('[' ... ']'), -o jsonl (one '{...}' per line) or -o sql ('INSERT INTO llama_bench ...')"
)
# The markdown table's column names (llama-bench's get_field_display_name) -> its field names.
MD_FIELDS = {
    "ngl": "n_gpu_layers",
    "sm": "split_mode",
    "threads": "n_threads",
    "nkvo": "no_kv_offload",
    "fa": "flash_attn",
    "lm": "load_mode",
    "embd": "embeddings",
    "nopo": "no_op_offload",
    "noh": "no_host",
    "rpk": "repack",
    "dev": "devices",
    "ts": "tensor_split",
    "ot": "tensor_buft_overrides",
    "fitt": "fit_target",
    "fitc": "fit_min_ctx",
    "backend": "backends",
}
# Fields kept as extra columns under the same name, where the output has them.
EXTRA_FIELDS = (
    "n_batch",
    "n_ubatch",
    "type_k",
    "type_v",
    "n_gpu_layers",
    "flash_attn",
    "build_commit",
    "build_number",
    "cpu_info",
    "gpu_info",
    "test_time",
)
# Backends that compute on the CPU (llama-bench's markdown treats these as CPU backends too).
CPU_BACKENDS = {"CPU", "BLAS", "ZENDNN", "RPC"}
# llama.cpp's file types (llama_model_ftype_name) -> edgestats' precision names where they have one.
PRECISIONS = {"F32": "fp32", "F16": "fp16", "BF16": "bf16"}
# llama_ftype_name's names that are not llama-quantize's type name with a size suffix
FTYPE_NAMES = {"Q2_K - Medium": "Q2_K", "IQ3_S mix - 3.66 bpw": "IQ3_M"}
NUMBER = r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
# A GGUF that `edgestats prepare` wrote (collectors/generation/gguf_export.py, gguf_file_name):
# its runs are of the zoo model it names, so they group with the runs collect measures of it.
PACK_FILE = re.compile(r"(?P<model>[a-z0-9]+)-seed\d+\.[a-z0-9_]+\.gguf")


def _error(path: Path, what: str) -> ImportFileError:
    return ImportFileError(f"{path}: {what} (--format {FORMAT}); nothing was imported")


def _records_json(text: str, path: Path) -> list[dict]:
    """-o json: one array of test objects."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _error(
            path, f"llama-bench JSON that does not parse ({exc}): import the file as it wrote it"
        ) from None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise _error(path, "JSON that is not llama-bench's -o json (an array of test objects)")
    return data


def _records_jsonl(text: str, path: Path) -> list[dict]:
    """-o jsonl: one test object per line."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _error(
                path, f"line {number} is not a JSON object ({exc}); llama-bench -o jsonl writes one a line"
            ) from None
        if not isinstance(record, dict):
            raise _error(path, f"line {number} is not a JSON object; llama-bench -o jsonl writes one a line")
        records.append(record)
    return records


def _records_csv(text: str, path: Path) -> list[dict]:
    """-o csv: a header of field names, then one quoted row per test (log lines before it skipped)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("build_commit,"))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, records = rows[0], []
    for number, row in enumerate(rows[1:], start + 2):
        if not row:
            continue
        if len(row) != len(header):
            raise _error(path, f"line {number} has {len(row)} fields, the header {len(header)}")
        records.append(dict(zip(header, row)))
    return records


SQL_INSERT = re.compile(r"^INSERT INTO llama_bench \(([^)]*)\) VALUES \((.*)\);\s*$")
SQL_VALUE = re.compile(r"\s*'((?:[^']|'')*)'\s*(?:,|$)")


def _records_sql(text: str, path: Path) -> list[dict]:
    """-o sql: a CREATE TABLE llama_bench, then one INSERT a test, every value quoted as text.
    Read as text, never run: only these two statements are accepted."""
    records, in_create = [], False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("CREATE TABLE IF NOT EXISTS llama_bench"):
            in_create = True
        elif in_create:
            in_create = not stripped.startswith(");")
        elif stripped:
            match = SQL_INSERT.match(stripped)
            if match is None:
                raise _error(path, f"line {number} is not an 'INSERT INTO llama_bench (...) VALUES (...);'")
            fields = [name.strip() for name in match.group(1).split(",")]
            values = [v.replace("''", "'") for v in SQL_VALUE.findall(match.group(2))]
            if len(values) != len(fields):
                raise _error(path, f"line {number} has {len(values)} quoted values for {len(fields)} fields")
            records.append(dict(zip(fields, values)))
    return records


def _md_test(text: str) -> dict | None:
    """'pp512', 'tg128', 'pp512+tg128', each with ' @ d4096' at a depth ('pp 512' in old versions)."""
    match = re.fullmatch(r"(?:pp ?(\d+))?(\+)?(?:tg ?(\d+))?(?: @ d(\d+))?", text)
    if match is None or not (match.group(1) or match.group(3)):
        return None
    prompt, gen, depth = (int(g) if g else 0 for g in match.group(1, 3, 4))
    return {"n_prompt": prompt, "n_gen": gen, "n_depth": depth}


def _md_scaled(text: str, units: dict[str, float]) -> int | None:
    """'26.25 MiB' -> bytes, '0.07 M' -> a count: as printed (two decimals)."""
    match = re.fullmatch(rf"({NUMBER}) (\w+)", text)
    if match is None or match.group(2) not in units:
        return None
    return round(float(match.group(1)) * units[match.group(2)])


def _md_record(header: list[str], cells: list[str], path: Path, number: int) -> dict:
    if len(cells) != len(header):
        raise _error(path, f"line {number} has {len(cells)} cells, the table's header {len(header)}")
    record: dict = {}
    for name, cell in zip(header, cells):
        if name == "test":
            test = _md_test(cell)
            if test is None:
                raise _error(path, f"line {number}: test {cell!r} is not ppN, tgN or ppN+tgM (@ dN)")
            record.update(test)
        elif name == "t/s":
            rate = re.fullmatch(rf"({NUMBER}) ± ({NUMBER})", cell)
            if rate is None:
                raise _error(path, f"line {number}: t/s {cell!r} is not 'MEAN ± SD'")
            record["avg_ts"], record["stddev_ts"] = float(rate.group(1)), float(rate.group(2))
        elif name == "model":
            record["model_type"] = cell
        elif name == "size":
            record["model_size"] = _md_scaled(cell, {"MiB": 2.0**20, "GiB": 2.0**30})
        elif name == "params":
            record["model_n_params"] = _md_scaled(cell, {"M": 1e6, "B": 1e9})
        else:
            record[MD_FIELDS.get(name, name)] = cell
    return record


def _records_md(text: str, path: Path) -> list[dict]:
    """-o md: the table (log lines around it skipped) and its footer 'build: COMMIT (NUMBER)'."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if _is_md_header(line))
    header = [cell.strip() for cell in lines[start].strip().strip("|").split("|")]
    records = []
    for number, line in enumerate(lines[start + 2 :], start + 3):
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        records.append(_md_record(header, cells, path, number))
    build = re.search(r"^build: (\S+) \((\d+)\)\s*$", text, re.MULTILINE)
    for record in records:
        if build:
            record["build_commit"], record["build_number"] = build.group(1), build.group(2)
    return records


def _is_md_header(line: str) -> bool:
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return line.startswith("|") and "test" in cells and "t/s" in cells


def _records(text: str, path: Path) -> list[dict]:
    """The file's test records, in whichever of llama-bench's formats it is written."""
    stripped = text.lstrip()
    lines = text.splitlines()
    if stripped.startswith("["):
        return _records_json(stripped, path)
    if stripped.startswith("{"):
        return _records_jsonl(stripped, path)
    if re.search(r"^(CREATE TABLE IF NOT EXISTS|INSERT INTO) llama_bench\b", text, re.MULTILINE):
        return _records_sql(text, path)
    if any(_is_md_header(line) for line in lines):
        return _records_md(text, path)
    if any(line.startswith("build_commit,") for line in lines):
        return _records_csv(text, path)
    raise _error(path, f"not llama-bench output: expected {EXPECTED}")


def _value(record: dict, field: str, path: Path, where: str, kind: type = int):
    """A field as `kind` (int or float), None where the output leaves it out or empty."""
    value = record.get(field)
    if value is None or value == "":
        return None
    try:
        number = kind(value) if not isinstance(value, str) or kind is float else int(value.strip())
    except (TypeError, ValueError):
        raise _error(
            path, f"{where}: {field} {value!r} is not a {'whole number' if kind is int else 'number'}"
        ) from None
    return number


def _precision(model_type: str | None) -> str | None:
    """The file type of llama_model_desc's 'ARCH SIZE FTYPE' ('llama ?B all F32', 'llama 8B Q4_K -
    Medium', '(guessed)' before a guessed one) as llama-quantize names it, in lower case; F32, F16
    and BF16 as edgestats names them (fp32, fp16, bf16). None for an unknown type."""
    parts = (model_type or "").split(" ", 2)
    if len(parts) < 3 or "unknown" in parts[2]:
        return None
    name = parts[2].replace("(guessed) ", "").removeprefix("all ")
    name = FTYPE_NAMES.get(name, name)
    base, _, detail = name.partition(" - ")  # ' - 4.25 bpw', ' - Medium'
    base += {"Small": "_S", "Medium": "_M", "Large": "_L"}.get(detail, "")
    return PRECISIONS.get(base, base.lower().replace(" ", "_"))


def _accelerator(backends: str | None, gpu_layers: int | None) -> str:
    """'cpu' where every layer runs on a CPU backend, else the first other backend, in lower case."""
    others = [
        b.strip() for b in (backends or "").split(",") if b.strip() and b.strip().upper() not in CPU_BACKENDS
    ]
    return others[0].lower() if others and gpu_layers != 0 else "cpu"


def _model(model_file: str | None, model_type: str | None) -> str | None:
    """The model: the zoo model of an edgestats GGUF, else the file's stem, else the type (md)."""
    if not model_file:
        return model_type
    pack = PACK_FILE.fullmatch(Path(model_file).name)
    return pack.group("model") if pack else Path(model_file).stem


def _test_name(prompt: int, gen: int, depth: int) -> str:
    """The test as llama-bench's markdown names it."""
    name = f"pp{prompt}" if gen == 0 else f"tg{gen}" if prompt == 0 else f"pp{prompt}+tg{gen}"
    return f"{name} @ d{depth}" if depth else name


def _test_row(record: dict, path: Path, where: str) -> dict:
    """A test's configuration: the run columns and the extras every run of the test shares."""
    prompt, gen = (_value(record, f, path, where) for f in ("n_prompt", "n_gen"))
    if prompt is None or gen is None or prompt + gen == 0:
        raise _error(
            path, f"{where} gives no test (n_prompt and n_gen, or a 'test' cell like pp512 or tg128)"
        )
    # versions before -d had no n_depth: their tests ran on an empty context
    depth = _value(record, "n_depth", path, where) or 0
    gpu_layers = _value(record, "n_gpu_layers", path, where)
    model_type, model_file = record.get("model_type"), record.get("model_filename")
    row = {
        "framework": "llamacpp",
        "model": _model(model_file, model_type),
        "precision": _precision(model_type),
        "accelerator": _accelerator(record.get("backends"), gpu_layers),
        "threads": _value(record, "n_threads", path, where),
        "batch_size": 1,  # llama-bench decodes one sequence
        "prompt_tokens": prompt,
        "new_tokens": gen,
        "context_depth": depth,
        "test": _test_name(prompt, gen, depth),
        "backend": record.get("backends"),
        "model_type": model_type,
        "model_file": model_file,
        "model_size_bytes": _value(record, "model_size", path, where),
        "model_params": _value(record, "model_n_params", path, where),
    }
    row.update({field: record[field] for field in EXTRA_FIELDS if record.get(field) not in (None, "")})
    return row


def _with_rate(row: dict, tokens_per_s: float) -> dict:
    """The rate as llama-bench gives it, and as the phase it measures (none for a pp+tg test)."""
    row["tokens_per_s"] = tokens_per_s
    if row["new_tokens"] == 0:
        row["prefill_tokens_per_s"] = tokens_per_s
    elif row["prompt_tokens"] == 0:
        row["decode_tokens_per_s"] = tokens_per_s
    return row


def _runs(record: dict, path: Path, where: str) -> list[dict]:
    """One run per repetition where the record carries them (JSON, JSONL), else one for the test."""
    test = _test_row(record, path, where)
    samples_ns, samples_ts = record.get("samples_ns"), record.get("samples_ts")
    if isinstance(samples_ns, list) and isinstance(samples_ts, list) and samples_ts:
        if len(samples_ns) != len(samples_ts):
            raise _error(path, f"{where} has {len(samples_ns)} samples_ns but {len(samples_ts)} samples_ts")
        runs = []
        for index, (ns, ts) in enumerate(zip(samples_ns, samples_ts), 1):
            run = {**test, "repetition": index, "repetitions": len(samples_ts)}
            run["duration_ms"] = _value({"ns": ns}, "ns", path, f"{where}, samples_ns", float) / 1e6
            runs.append(_with_rate(run, _value({"ts": ts}, "ts", path, f"{where}, samples_ts", float)))
        return runs
    mean = _value(record, "avg_ts", path, where, float)
    if mean is None:
        raise _error(path, f"{where} has no tokens/s (avg_ts, or a 't/s' cell)")
    run = _with_rate(test, mean)
    run["tokens_per_s_std"] = _value(record, "stddev_ts", path, where, float)
    avg_ns, std_ns = (_value(record, f, path, where, float) for f in ("avg_ns", "stddev_ns"))
    run["duration_ms"] = avg_ns / 1e6 if avg_ns is not None else None
    run["duration_std_ms"] = std_ns / 1e6 if std_ns is not None else None
    return [run]


def parse_llama_bench(text: str, path: Path) -> list[dict]:
    """llama-bench's output in any of its formats -> one row per run, in the file's order."""
    records = _records(text, path)
    if not records:
        raise _error(path, "llama-bench output with no test in it")
    rows = [run for number, record in enumerate(records, 1) for run in _runs(record, path, f"test {number}")]
    if all("prefill_tokens_per_s" not in r and "decode_tokens_per_s" not in r for r in rows):
        raise _error(
            path,
            "only pp+tg tests, whose tokens/s is of prefill and decode together: edgestats stores a "
            "prefill or decode rate; run llama-bench with -p and -n tests too",
        )
    return rows
