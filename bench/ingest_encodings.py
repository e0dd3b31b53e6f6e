"""bench/ingest_encodings: the optional `--compare-encodings` experiment of bench/ingest.py.

How to store the metric name: raw DuckDB with `metric` as VARCHAR, ENUM or a SMALLINT id with a
15-row `metrics` table, each fed an Arrow string or dictionary column; plus no metric column at
all (the floor) and the store fed a dictionary column. Reports ingest rate, bytes per sample, the
compression DuckDB chose and two query times per variant; every file is fingerprint-checked.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from measure import (
    METRICS,
    Measurement,
    PeakRss,
    check_file,
    empty_file_bytes,
    remove_db,
    run_edgestats,
    run_raw,
    source_fingerprint,
)


def encoding_variants(table: pa.Table) -> list[dict]:
    """Raw DuckDB variants of the samples table that differ only in how `metric` is stored."""
    names = list(METRICS)
    enum_values = ", ".join("'" + m.replace("'", "''") + "'" for m in names)
    dict_metric = table.column("metric").combine_chunks().dictionary_encode()
    as_dict = table.set_column(1, "metric", dict_metric)
    lookup = {m: i for i, m in enumerate(names)}
    ids = np.array([lookup[m] for m in dict_metric.dictionary.to_pylist()], dtype=np.int16)[
        dict_metric.indices.to_numpy(zero_copy_only=False)
    ]
    as_ids = pa.table(
        {"t_ns": table.column("t_ns"), "metric_id": pa.array(ids), "value": table.column("value")}
    )
    no_metric = table.drop_columns(["metric"])

    varchar = [
        "CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, "
        "metric VARCHAR NOT NULL, value DOUBLE)"
    ]
    enum = [
        f"CREATE TYPE metric_name AS ENUM ({enum_values})",
        "CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, "
        "metric metric_name NOT NULL, value DOUBLE)",
    ]
    smallint = [
        "CREATE TABLE metrics (metric_id SMALLINT PRIMARY KEY, metric VARCHAR NOT NULL UNIQUE)",
        "CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, "
        "metric_id SMALLINT NOT NULL, value DOUBLE)",
    ]
    # The id variant writes its 15-row dictionary in the same transaction, as a store would.
    id_setup = [
        (
            "INSERT INTO metrics VALUES " + ", ".join("(?, ?)" for _ in names),
            [x for i, m in enumerate(names) for x in (i, m)],
        )
    ]

    q_varchar = {
        "group_by_metric": "SELECT metric, count(*), avg(value), max(value) FROM samples "
        "GROUP BY metric ORDER BY metric",
        "one_metric": "SELECT count(*), sum(value) FROM samples WHERE metric = 'power_w'",
    }
    q_ids = {
        "group_by_metric": "SELECT m.metric, count(*), avg(s.value), max(s.value) FROM samples s "
        "JOIN metrics m USING (metric_id) GROUP BY m.metric ORDER BY m.metric",
        "one_metric": "SELECT count(*), sum(s.value) FROM samples s JOIN metrics m USING (metric_id) "
        "WHERE m.metric = 'power_w'",
    }
    q_enum = q_varchar  # a string literal compared with an ENUM column is cast to the ENUM once
    select = "SELECT CAST($1 AS UUID) AS run_id, t_ns, metric, value FROM rows"
    return [
        {
            "name": "VARCHAR (Arrow string in)",
            "table": table,
            "ddl": varchar,
            "queries": q_varchar,
            "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}",
        },
        {
            "name": "VARCHAR (Arrow dictionary in)",
            "table": as_dict,
            "ddl": varchar,
            "queries": q_varchar,
            "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}",
        },
        {
            "name": "ENUM (Arrow string in)",
            "table": table,
            "ddl": enum,
            "queries": q_enum,
            "check": {"metric": "metric::VARCHAR"},
            "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}",
        },
        {
            "name": "ENUM (Arrow dictionary in)",
            "table": as_dict,
            "ddl": enum,
            "queries": q_enum,
            "check": {"metric": "metric::VARCHAR"},
            "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}",
        },
        {
            "name": "SMALLINT id + metrics table",
            "table": as_ids,
            "ddl": smallint,
            "queries": q_ids,
            "check": {"metric": "m.metric", "source": "samples s JOIN metrics m USING (metric_id)"},
            "setup": id_setup,
            "insert": "INSERT INTO samples (run_id, t_ns, metric_id, value) "
            "SELECT CAST($1 AS UUID) AS run_id, t_ns, metric_id, value FROM rows",
        },
        {
            "name": "no metric column (floor)",
            "table": no_metric,
            "queries": {},
            "check": {"metric": "NULL"},
            "ddl": ["CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, value DOUBLE)"],
            "insert": "INSERT INTO samples (run_id, t_ns, value) "
            "SELECT CAST($1 AS UUID) AS run_id, t_ns, value FROM rows",
        },
        # The store itself, fed a dictionary-encoded metric column (what a collector could pass).
        {
            "name": "edgestats write_run (Arrow dictionary in)",
            "table": as_dict,
            "store": True,
            "queries": q_varchar,
        },
    ]


def compression_used(path: Path) -> dict[str, list[str]]:
    """Column -> the compression methods DuckDB chose for its segments (validity masks left out)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT column_name, list(DISTINCT compression ORDER BY compression) "
            "FROM pragma_storage_info('samples') "
            "WHERE segment_type <> 'VALIDITY' GROUP BY column_name, column_id ORDER BY column_id"
        ).fetchall()
        return dict(rows)
    finally:
        con.close()


def time_queries(path: Path, queries: dict[str, str], repeats: int) -> dict[str, float]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        times = {}
        for name, sql in queries.items():
            con.execute(sql).fetchall()  # warms the buffer pool
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                con.execute(sql).fetchall()
                runs.append(time.perf_counter() - t0)
            times[name] = statistics.median(runs)
        return times
    finally:
        con.close()


def compare_encodings(table: pa.Table, repeats: int, workdir: Path, rss: PeakRss) -> dict:
    variants = encoding_variants(table)
    expected = {"metric": source_fingerprint(table), "NULL": source_fingerprint(table, "NULL")}
    results: dict[str, list[Measurement]] = {v["name"]: [] for v in variants}
    empty: dict[str, int] = {}
    for v in variants:
        empty[v["name"]] = empty_file_bytes(
            "edgestats" if v.get("store") else "raw", v.get("ddl", []), workdir
        )
    last: dict[str, Path] = {}
    for r in range(repeats):
        # Rotate the order every round so no variant always runs first (or right after another).
        order = variants[r % len(variants) :] + variants[: r % len(variants)]
        for v in order:
            path = workdir / f"enc-{r}-{variants.index(v)}.duckdb"
            if v.get("store"):
                m = run_edgestats(path, v["table"], r, rss, label=v["name"])
            else:
                m = run_raw(
                    path, v["table"], r, rss, v["ddl"], v["insert"], label=v["name"], setup_sql=v.get("setup")
                )
            results[v["name"]].append(m)
            if r == repeats - 1:
                last[v["name"]] = path
            else:
                remove_db(path)

    summary = []
    reference = None
    ok = True
    for v in variants:
        ms = results[v["name"]]
        rate = statistics.median(m.rate for m in ms)
        reference = reference or rate
        size = statistics.median(m.file_bytes for m in ms)
        qtimes = time_queries(last[v["name"]], v["queries"], max(3, repeats)) if v["queries"] else {}
        compression = compression_used(last[v["name"]])
        how = v.get("check", {})
        check = check_file(
            last[v["name"]], expected["NULL" if how.get("metric") == "NULL" else "metric"], **how
        )
        ok &= check["ok"]
        summary.append(
            {
                "variant": v["name"],
                "median_rows_per_s": rate,
                "rate_vs_varchar": rate / reference,
                "rate_min": min(m.rate for m in ms),
                "rate_max": max(m.rate for m in ms),
                "median_rows_per_cpu_s": statistics.median(m.rows / m.cpu_s for m in ms),
                "file_bytes": size,
                "bytes_per_sample": size / table.num_rows,
                "net_bytes_per_sample": (size - empty[v["name"]]) / table.num_rows,
                "query_s": qtimes,
                "compression": compression,
                "rows_ok": check["ok"],
            }
        )
    for p in last.values():
        remove_db(p)
    return {
        "variants": summary,
        "measurements": {k: [asdict(m) for m in ms] for k, ms in results.items()},
        "rows_ok": ok,
    }
