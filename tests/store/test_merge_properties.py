"""Merge invariants over generated inputs (hypothesis): order does not matter, repeats are no-ops."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import make_results_db
from edgestats.merge import merge
from edgestats.store import Store

# Each input: (device name index, number of inference runs, seed offset).
inputs = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(0, 1000)), min_size=1, max_size=3)


def content(path: Path) -> dict[str, list]:
    with Store.open(path, read_only=True) as store:
        return {
            "runs": sorted(store.frame("SELECT run_id::VARCHAR AS r FROM runs")["r"].to_list()),
            "latencies": sorted(store.frame("SELECT run_id::VARCHAR || ':' || iteration || ':' || latency_ns AS k FROM latencies")["k"].to_list()),
            "devices": sorted(store.frame("SELECT device_id::VARCHAR AS d FROM devices")["d"].to_list()),
        }


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs)
def test_merge_is_order_independent_and_idempotent(specs):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = [make_results_db(tmp / f"in{i}.duckdb", device_name=f"dev{d}", n_runs=n, seed0=seed)
                 for i, (d, n, seed) in enumerate(specs)]
        results = []
        for k, order in enumerate(itertools.islice(itertools.permutations(files), 2)):
            out = tmp / f"out{k}.duckdb"
            merge(out, list(order))
            results.append(content(out))
            merge(out, list(order))  # again: nothing changes
            assert content(out) == results[-1]
        assert all(r == results[0] for r in results)
        expected_runs = sum(n + 1 for _, n, _ in specs)  # n inference + 1 training run per input
        assert len(results[0]["runs"]) == expected_runs
