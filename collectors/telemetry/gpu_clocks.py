"""The noise sentinel's GPU clock rule: was the GPU's SM clock steady while the run's latencies
were measured (docs/cli/collect.md, "Noise sentinel")?

An idle NVIDIA GPU sits at a low clock (345 MHz on an H200) and raises it only once work arrives;
under heat or a power cap it lowers it again. A run whose steady phase began before the clocks
rose, or that was throttled during it, measured a GPU that was not the same GPU throughout.

The rule, per GPU the run kept busy (mean utilisation at least BUSY_UTIL_PCT over the window, or
every GPU where utilisation was not read): take the SM clock samples (gpu_sm_clock_mhz:gpuN,
read by the sampler through NVML) inside the run's `steady` phase, the window of the latencies
every analysis uses; their median is the run's own steady clock. The share of those samples more
than `gpu_clock_margin` (default 10 %) away from that median is the share of the steady phase
spent at another clock (the sampler reads at even intervals, so a share of samples is a share of
time). Above `gpu_clock_share` (default 10 %) the run is noisy. Both sides count: a clock that
rose after most of the phase leaves the median low and the rest above it. The reason says which
way the clock went, from the median of the window's first and last quarters: still rising (the
last quarter faster), falling (the last quarter slower: throttled), or unsteady (back and forth).
Fewer than MIN_CLOCK_SAMPLES samples in the window are too few to judge (the figures say so).

CPU-only runs are not judged: their latencies do not depend on the GPU's clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SM_CLOCK = "gpu_sm_clock_mhz:"
MEM_CLOCK = "gpu_mem_clock_mhz:"
PSTATE = "gpu_pstate:"
UTIL = "gpu_util_pct:"
MIN_CLOCK_SAMPLES = 10  # fewer clock readings in the steady phase: not judged
BUSY_UTIL_PCT = 1.0  # a GPU below this mean utilisation over the window did not run the model


def steady_window(phases: Sequence[dict[str, Any]]) -> tuple[int, int] | None:
    """(start_ns, end_ns) of the run's `steady` phase, or None if it has none (it failed before)."""
    for phase in phases:
        if phase.get("phase") == "steady" and phase.get("start_ns") is not None and phase.get("end_ns"):
            return int(phase["start_ns"]), int(phase["end_ns"])
    return None


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def clock_figures(clocks_mhz: Sequence[float], margin: float) -> dict[str, Any]:
    """The steady phase's SM clock in figures: its median, the shares of samples more than
    `margin` below and above it, the range, and the trend from the first to the last quarter."""
    centre = median(clocks_mhz)
    n = len(clocks_mhz)
    below = sum(1 for v in clocks_mhz if v < centre * (1 - margin)) / n
    above = sum(1 for v in clocks_mhz if v > centre * (1 + margin)) / n
    quarter = max(n // 4, 1)
    first, last = median(clocks_mhz[:quarter]), median(clocks_mhz[-quarter:])
    if last > first * (1 + margin):
        trend = "still rising"
    elif last < first * (1 - margin):
        trend = "falling (throttled)"
    else:
        trend = "unsteady (throttled or boosting)"
    return {
        "n": n,
        "median_mhz": centre,
        "min_mhz": min(clocks_mhz),
        "max_mhz": max(clocks_mhz),
        "share_below": round(below, 4),
        "share_above": round(above, 4),
        "trend": trend,
    }


def _in_window(batch: Any, metric: str, window: tuple[int, int]) -> list[float]:
    start, end = window
    return [v for t, v in batch.series(metric) if start <= t <= end]


def _busy(batch: Any, gpu: str, window: tuple[int, int]) -> bool:
    util = _in_window(batch, UTIL + gpu, window)
    return not util or sum(util) / len(util) >= BUSY_UTIL_PCT


def _gpu_figures(batch: Any, gpu: str, window: tuple[int, int], margin: float) -> dict[str, Any]:
    clocks = _in_window(batch, SM_CLOCK + gpu, window)
    if len(clocks) < MIN_CLOCK_SAMPLES:
        return {"n": len(clocks), "judged": False, "why": f"fewer than {MIN_CLOCK_SAMPLES} clock samples"}
    figures = {**clock_figures(clocks, margin), "judged": True}
    memory = _in_window(batch, MEM_CLOCK + gpu, window)
    if memory:
        figures["mem_median_mhz"] = median(memory)
    states = _in_window(batch, PSTATE + gpu, window)
    if states:
        figures["pstates"] = sorted({f"P{int(s)}" for s in states}, key=lambda p: int(p[1:]))
    return figures


def clock_reason(gpu: str, figures: dict[str, Any], share_limit: float, margin: float) -> str | None:
    """The run's noise reason for one GPU's figures, or None when its clock was steady enough."""
    if not figures.get("judged"):
        return None
    off = figures["share_below"] + figures["share_above"]
    if off <= share_limit:
        return None
    states = f", {'/'.join(figures['pstates'])}" if len(figures.get("pstates", ())) > 1 else ""
    return (
        f"GPU clock {figures['trend']}: {gpu}'s SM clock was more than {margin:.0%} off its steady "
        f"median ({figures['median_mhz']:.0f} MHz) for {off:.0%} of the steady phase (> {share_limit:.0%}; "
        f"{figures['min_mhz']:.0f}-{figures['max_mhz']:.0f} MHz{states})"
    )


def clock_check(
    batch: Any, phases: Sequence[dict[str, Any]], limits: Any, *, uses_gpu: bool
) -> dict[str, Any] | None:
    """{"gpus": {gpuN: figures}, "reasons": [...]} for a GPU run whose sampler read SM clocks;
    None where the rule does not apply (a CPU run, no steady phase, no clock series).
    `limits` is the sentinel's NoiseThresholds (gpu_clock_share, gpu_clock_margin)."""
    window = steady_window(phases) if uses_gpu and batch is not None else None
    if window is None:
        return None
    gpus = [name[len(SM_CLOCK) :] for name in batch.names if name.startswith(SM_CLOCK)]
    figures = {
        gpu: _gpu_figures(batch, gpu, window, limits.gpu_clock_margin)
        for gpu in gpus
        if _busy(batch, gpu, window)
    }
    if not figures:
        return None
    reasons = [
        clock_reason(gpu, f, limits.gpu_clock_share, limits.gpu_clock_margin) for gpu, f in figures.items()
    ]
    return {"gpus": figures, "reasons": [r for r in reasons if r]}
