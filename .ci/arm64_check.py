"""What `make test-arm64` asserts about the DB written in the arm64 userland, once merged on the host.

The collected runs must come from an aarch64 device, all `ok`, three per runtime, each with its
steady-state latencies and with samples read from the emulated board's /proc (memory of the
worker's process tree, CPU utilisation): the parsing ran on arm64. The imported table's runs and
the host's own must be there beside them. Timings are not checked: under qemu they mean nothing.
"""

from __future__ import annotations

import sys

import duckdb


def check(db: str) -> list[str]:
    con = duckdb.connect(db, read_only=True)
    problems: list[str] = []
    arches = con.execute(
        "SELECT d.name, d.arch, count(*) FROM runs r JOIN devices d USING (device_id) "
        "WHERE r.source = 'collect' GROUP BY ALL"
    ).fetchall()
    if arches != [("arm64-qemu", "aarch64", 6)]:
        problems.append(
            f"collected runs by device name and arch: {arches}, expected [('arm64-qemu', 'aarch64', 6)]"
        )
    per_framework = dict(
        con.execute(
            "SELECT framework, count(*) FILTER (WHERE status = 'ok') FROM runs "
            "WHERE source = 'collect' GROUP BY ALL"
        ).fetchall()
    )
    if per_framework != {"onnxruntime": 3, "tflite": 3}:
        problems.append(f"ok runs per framework: {per_framework}, expected 3 of onnxruntime and of tflite")
    short = con.execute(
        "SELECT count(*) FROM runs r WHERE source = 'collect' AND (SELECT count(*) FROM latencies l "
        "WHERE l.run_id = r.run_id AND NOT l.warmup) < 20"
    ).fetchone()[0]
    if short:
        problems.append(f"{short} collected runs have fewer than their 20 steady-state latencies")
    metrics = {
        m
        for (m,) in con.execute(
            "SELECT DISTINCT metric FROM samples JOIN runs USING (run_id) WHERE source = 'collect'"
        ).fetchall()
    }
    if not any(m.startswith("rss") for m in metrics) or not any(m.startswith("cpu") for m in metrics):
        problems.append(f"the arm64 runs' samples lack memory or CPU figures from /proc: {sorted(metrics)}")
    imported = dict(
        con.execute("SELECT kind, count(*) FROM runs WHERE source LIKE 'import:%' GROUP BY ALL").fetchall()
    )
    if not imported.get("inference") or not imported.get("training"):
        problems.append(f"imported runs by kind: {imported}, expected the arm64 table's and the host's")
    return problems


if __name__ == "__main__":
    found = check(sys.argv[1])
    for problem in found:
        print(f"test-arm64: {problem}", file=sys.stderr)
    sys.exit(1 if found else 0)
