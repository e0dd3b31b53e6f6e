"""Merge invariants over generated inputs (hypothesis): order does not matter, repeats are no-ops."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import pytest
from builders import make_results_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgestats.exports.merge import merge
from edgestats.store.results import Store

# Each input: (device name index, number of inference runs, seed offset). Seeds come from a small
# pool so that inputs recur across examples: each distinct input is built once (BUILT) and copied.
inputs = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(0, 7)), min_size=1, max_size=3)
BUILT = Path(tempfile.mkdtemp(prefix="edgestats-merge-inputs-"))
atexit.register(shutil.rmtree, BUILT, ignore_errors=True)  # every run used to leave its inputs in /tmp


def built_input(dest: Path, device: int, n_runs: int, seed: int) -> Path:
    source = BUILT / f"dev{device}-{n_runs}-{seed}.duckdb"
    if not source.exists():
        make_results_db(source, device_name=f"dev{device}", n_runs=n_runs, seed0=seed * 100)
    shutil.copyfile(source, dest)
    return dest


def content(path: Path) -> dict[str, list]:
    with Store.open(path, read_only=True) as store:
        return {
            "runs": sorted(store.frame("SELECT run_id::VARCHAR AS r FROM runs")["r"].to_list()),
            "latencies": sorted(
                store.frame(
                    "SELECT run_id::VARCHAR || ':' || iteration || ':' || latency_ns AS k FROM latencies"
                )["k"].to_list()
            ),
            "devices": sorted(store.frame("SELECT device_id::VARCHAR AS d FROM devices")["d"].to_list()),
        }


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs)
def test_merge_is_order_independent_and_idempotent(specs):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = [built_input(tmp / f"in{i}.duckdb", d, n, seed) for i, (d, n, seed) in enumerate(specs)]
        forward, backward = tmp / "forward.duckdb", tmp / "backward.duckdb"
        merge(forward, files)
        merged = content(forward)
        merge(forward, files)  # again: nothing changes
        assert content(forward) == merged
        merge(backward, files[::-1])  # the other order: the same content
        assert content(backward) == merged
        distinct = {(d, n, seed) for d, n, seed in specs}  # the same input twice adds its runs once
        expected_runs = sum(n + 1 for _, n, _ in distinct)  # n inference + 1 training run per input
        assert len(merged["runs"]) == expected_runs
