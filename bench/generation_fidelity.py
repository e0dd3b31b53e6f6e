"""bench/generation_fidelity: does edgestats' decode rate for llama.cpp agree with llama.cpp's own
performance counters for the same runs?

    python bench/generation_fidelity.py [--model llama15m] [--threads 1] [--runs 5]
        [--prompt-tokens 32] [--new-tokens 128] [--precision fp32]

One `edgestats collect --kind generation -f llamacpp` (fresh worker per run, as a user runs it),
then, per run, side by side from the same DB:
  A. edgestats: decode_tokens_per_s of the generation_summary view, from the stored per-token
     latencies (decode steps / the sum of their latencies; each step timed around the engine's
     forward + greedy pick, the token id on the host).
  B. llama.cpp: n_eval / t_eval_ms of llama_perf_context for the same generation, which the engine
     stores in runs.environment.runtime_detail.llamacpp_perf (t_eval: from llama_decode's start to
     llama_synchronize, single-token batches only).
Target: A/B within 0.95-1.05 for every run (exit status 0 when met). A/B below 1 is the harness's
own cost per step: filling the llama_batch, copying the logits, the argmax and the clock reads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgestats.store.results import Store  # noqa: E402

LOW, HIGH = 0.95, 1.05


def collect(db: Path, cache: Path, args: argparse.Namespace) -> float:
    command = [sys.executable, "-m", "edgestats", "collect", "--kind", "generation", "-f", "llamacpp"]
    command += ["-m", args.model, "--threads", str(args.threads), "--repeat", str(args.runs)]
    command += ["--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens)]
    command += ["--precision", args.precision, "--sample-hz", "0", "--power", "none"]
    command += ["--db", str(db), "--cache-dir", str(cache)]
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"edgestats collect failed:\n{proc.stdout}\n{proc.stderr}")
    return time.monotonic() - started


def side_by_side(db: Path) -> list[dict]:
    """Per run: edgestats' decode tokens/s (the view) and llama.cpp's (its counters)."""
    with Store.open(db, read_only=True) as store:
        rows = store.frame(
            "SELECT s.run_id, s.repeat_index, s.decode_tokens_per_s, s.decode_s, s.new_tokens, "
            "r.environment FROM generation_summary s JOIN runs r USING (run_id) "
            "WHERE s.status = 'ok' ORDER BY s.repeat_index"
        ).to_dicts()
    out = []
    for row in rows:
        perf = json.loads(row["environment"])["runtime_detail"]["llamacpp_perf"]
        if perf["n_eval"] != row["new_tokens"] - 1:
            raise SystemExit(
                f"run {row['repeat_index']}: llama.cpp counted {perf['n_eval']} decode steps, "
                f"edgestats {row['new_tokens'] - 1}: not the same work"
            )
        theirs = perf["n_eval"] / (perf["t_eval_ms"] / 1e3)
        mine = row["decode_tokens_per_s"]
        out.append(
            {
                "run": row["repeat_index"],
                "edgestats_decode_tokens_per_s": mine,
                "llamacpp_decode_tokens_per_s": theirs,
                "ratio": mine / theirs,
                "edgestats_decode_s": row["decode_s"],
                "llamacpp_t_eval_s": perf["t_eval_ms"] / 1e3,
            }
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llama15m")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db, cache = Path(scratch) / "fidelity.duckdb", Path(scratch) / "cache"
        wall_s = collect(db, cache, args)
        runs = side_by_side(db)
    if not runs:
        raise SystemExit("no ok run to compare")
    print(
        f"{args.model} {args.precision}, {args.threads} thread(s), prompt {args.prompt_tokens}, "
        f"{args.new_tokens} new tokens, {len(runs)} runs (collect {wall_s:.1f} s), "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print("run  edgestats tok/s  llama.cpp tok/s  A/B")
    for r in runs:
        print(
            f"{r['run']:>3}  {r['edgestats_decode_tokens_per_s']:>15.1f}  "
            f"{r['llamacpp_decode_tokens_per_s']:>15.1f}  {r['ratio']:.4f}"
        )
    ratios = [r["ratio"] for r in runs]
    met = all(LOW <= x <= HIGH for x in ratios)
    print(
        f"A/B median {statistics.median(ratios):.4f}, min {min(ratios):.4f}, max {max(ratios):.4f}: "
        f"{'met' if met else 'NOT met'} (target {LOW}-{HIGH})"
    )
    if args.out:
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": runs}, indent=1))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
