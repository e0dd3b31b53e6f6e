"""`edgestats compare` on runs collected for real: a known slowdown of about 10 % (the
`added_delay_ms` calibration option: a fixed busy-wait of CPU time inside every timed inference)
is found significant and called `slower`, and a 99.9 % interval holds the injected ratio (at 95 %
one test in twenty would miss it by design).

A and B are collected one run at a time, alternately (A #0, B #0, A #1, ...: `--repeat k`
resumes and adds run k-1), so a change in the machine's load during the test reaches both
sides alike instead of becoming a difference between them. Pairs are added until the ratio's
95 % interval is within ±4 % (as `collect --until-precise` would), at least 5 and at most 16:
on this VM a quiet machine still gave run medians 40 % off their neighbours now and then
(from outside the VM), and 5 pairs then left a 10 % slowdown "inconclusive". The rule stops on
precision, never on the verdict, so the assertions below still test what compare concludes:
once the interval is precise, "slower" and exit 1; if 16 pairs leave it wide (it happened here
in bursts of host noise), "inconclusive" and exit 0, never "same" or "faster"; and the 99.9 %
interval holds the injected ratio either way.
Cost: about 50 s, alone in make test's quiet lane (pairs are collected until the ratio is precise).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from edgestats.store.results import Store

# Run-to-run spread beside another test (a second xdist worker) was 20-40 % here, which hides a
# 10 % change from 8 runs; alone, it is 1-3 %. `make test` runs the quiet tests alone, last.
pytestmark = [pytest.mark.frameworks, pytest.mark.quiet]

MIN_PAIRS, MAX_PAIRS = 5, 16
TARGET_HALF_WIDTH = 0.04  # ±4 % around 1.10 clears compare's 3 % threshold
SLOWDOWN = 0.10


def collect(db: Path, cache: Path, repeat: int, *extra: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "edgestats",
        "collect",
        "--db",
        str(db),
        "-f",
        "onnxruntime",
        "-m",
        "mobilenet_v2",
        "--cache-dir",
        str(cache),
        "--threads",
        "1",
        "--warmup",
        "5",
        "-n",
        "100",
        "--repeat",
        str(repeat),
        *extra,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def median_ms(db: Path) -> float:
    with Store.open(db, read_only=True) as store:
        return store.con.execute("SELECT median(latency_median_ms) FROM run_summary").fetchone()[0]


def compare_latency(a: Path, b: Path, *args: str) -> tuple[int, dict, str]:
    result = subprocess.run(
        [sys.executable, "-m", "edgestats", "compare", str(a), str(b), "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    [entry] = json.loads(result.stdout)["comparisons"]
    return (
        result.returncode,
        next(m for m in entry["metrics"] if m["metric"] == "latency_median_ms"),
        result.stdout,
    )


def test_a_ten_percent_slowdown_is_found_and_its_ratio_covered(tmp_path: Path, model_cache: Path) -> None:
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    collect(a, model_cache, 1)
    delay_ms = SLOWDOWN * median_ms(a)  # about 10 % of this machine's own latency
    option = ("--option", f"added_delay_ms={delay_ms:.4f}")
    collect(b, model_cache, 1, *option)
    pairs = 1
    while True:
        if pairs >= MIN_PAIRS:
            code, latency, output = compare_latency(a, b, "--threshold", "3")
            half_width = math.sqrt(latency["ci_high"] / latency["ci_low"]) - 1
            if half_width <= TARGET_HALF_WIDTH or pairs >= MAX_PAIRS:
                break
        pairs += 1
        collect(a, model_cache, pairs)
        collect(b, model_cache, pairs, *option)

    print(
        f"delay {delay_ms:.3f} ms; {pairs} pairs; B/A {latency['estimate']:.3f} [{latency['ci_low']:.3f}, "
        f"{latency['ci_high']:.3f}], p Holm {latency['p_holm']:.2g}"
    )
    assert latency["n_a"] == latency["n_b"] == pairs
    assert latency["verdict"] in ("slower", "inconclusive"), output  # never "same" or "faster"
    if latency["ci_low"] > 1.03 or pairs < MAX_PAIRS:
        # precise enough to tell 1.10 from the 3 % threshold: it must be called, with exit 1
        assert code == 1 and latency["verdict"] == "slower", output
    else:  # host noise left it undecided after MAX_PAIRS: inconclusive is the honest answer
        assert code == 0, output
        print("the machine was too noisy to decide: inconclusive, as it should be")
    _, latency, _ = compare_latency(a, b, "--level", "0.999")
    assert latency["ci_low"] <= 1 + SLOWDOWN <= latency["ci_high"], latency
    with Store.open(b, read_only=True) as store:
        configs = store.con.execute(
            "SELECT DISTINCT CAST(config->'$.extra.added_delay_ms' AS DOUBLE) FROM runs"
        ).fetchall()
    assert configs == [(pytest.approx(delay_ms, abs=1e-4),)], (
        "the calibration is part of each run's configuration"
    )
