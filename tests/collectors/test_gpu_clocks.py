"""GPU clocks and performance state: the sampler records them through NVML (a fake pynvml with
the real module's names and constants, tests/power_fakes.py), and the noise sentinel's clock rule
(collectors/telemetry/gpu_clocks.py) flags a GPU run whose SM clock was still rising, or fell,
during its steady phase, and not one whose clock held."""

from __future__ import annotations

import sys
import time
from array import array

import psutil
from power_fakes import fake_pynvml, with_clocks

from edgestats.collectors.runrows import noise_columns
from edgestats.collectors.telemetry.gpu_clocks import MIN_CLOCK_SAMPLES, clock_check, clock_figures
from edgestats.collectors.telemetry.sampler import SampleBatch, Sampler
from edgestats.collectors.telemetry.sentinel import MachineState, NoiseThresholds, noise_record

LIMITS = NoiseThresholds()
T0 = 10**12  # the steady phase starts here (monotonic ns)
TICK = 10**7  # 100 Hz


def values(batch: SampleBatch, metric: str) -> list[float]:
    return [v for _, v in batch.series(metric)]


def test_nvml_samples_carry_sm_and_memory_clocks_and_the_performance_state(monkeypatch):
    nvml = fake_pynvml(energy_mj=[[5000], None], power_mw=[[61500], [70250]])
    # gpu1 answers NVML_PSTATE_UNKNOWN (32): noted as unavailable, never stored as a state
    monkeypatch.setitem(
        sys.modules, "pynvml", with_clocks(nvml, [[1980], [345]], [[2619], [405]], [[0], [32]])
    )
    sampler = Sampler(psutil.Process().pid, 50, budget=1.0, uss_budget=0).start()
    time.sleep(0.3)
    batch = sampler.stop()
    assert set(values(batch, "gpu_sm_clock_mhz:gpu0")) == {1980.0}
    assert set(values(batch, "gpu_mem_clock_mhz:gpu0")) == {2619.0}
    assert set(values(batch, "gpu_pstate:gpu0")) == {0.0}
    assert set(values(batch, "gpu_sm_clock_mhz:gpu1")) == {345.0}
    assert set(values(batch, "gpu_mem_clock_mhz:gpu1")) == {405.0}
    assert values(batch, "gpu_pstate:gpu1") == []
    assert "performance state unknown (32)" in dict(batch.unavailable)["gpu_pstate:gpu1"]
    assert len(values(batch, "gpu_sm_clock_mhz:gpu0")) >= 5  # read every tick under a budget of a core


def test_a_costly_energy_counter_does_not_slow_the_clock_readings(monkeypatch):
    """On an H200 host one energy-counter query cost 4 ms of CPU and the other six microseconds;
    read together on the 0.5 % budget, the clocks came once in 0.7 s and the clock rule judged no
    run shorter than 7 s. The counter is now a group of its own: the clocks are read every tick."""
    nvml = with_clocks(fake_pynvml(energy_mj=[[5000]], power_mw=[[61500]]), [[1980]], [[2619]], [[0]])
    counter = nvml.nvmlDeviceGetTotalEnergyConsumption

    def costly_counter(handle):
        spent = time.thread_time_ns() + 4_000_000  # 4 ms of CPU, as measured
        while time.thread_time_ns() < spent:
            pass
        return counter(handle)

    nvml.nvmlDeviceGetTotalEnergyConsumption = costly_counter
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    sampler = Sampler(psutil.Process().pid, 50, uss_budget=0).start()  # the default budget
    time.sleep(0.6)
    batch = sampler.stop()
    assert len(values(batch, "gpu_sm_clock_mhz:gpu0")) >= 15  # about 30 ticks
    assert len(values(batch, "gpu_energy_j:gpu0")) <= 3  # 4 ms on a 0.5 % budget: once in 0.8 s


def batch_of(series: dict[str, list[float]], t0: int = T0) -> SampleBatch:
    """A sampler batch holding each metric's values at 100 Hz from t0 (as the sampler's arrays)."""
    names = list(series)
    t, codes, value = array("q"), array("i"), array("d")
    for code, name in enumerate(names):
        for i, v in enumerate(series[name]):
            t.append(t0 + i * TICK)
            codes.append(code)
            value.append(v)
    return SampleBatch(t, codes, names, value)


def steady_phases(n: int) -> list[dict]:
    return [
        {"phase": "warmup", "seq": 6, "start_ns": T0 - 10 * TICK, "end_ns": T0 - 1},
        {"phase": "steady", "seq": 7, "start_ns": T0, "end_ns": T0 + (n - 1) * TICK},
    ]


def judged(sm_mhz: list[float], **extra: list[float]):
    """(noisy, reason) as the run would be stored, from its steady phase's SM clock samples."""
    batch = batch_of({"gpu_sm_clock_mhz:gpu0": sm_mhz, **extra})
    clocks = clock_check(batch, steady_phases(len(sm_mhz)), LIMITS, uses_gpu=True)
    state = MachineState(t_s=0.0)
    record = noise_record(state, MachineState(t_s=1.0), LIMITS, gpu_clocks=clocks)
    return (*noise_columns(record), record)


def test_a_clock_still_rising_through_the_steady_phase_flags_the_run_and_a_steady_one_does_not():
    # the H200 case: 345 MHz idle, 1980 MHz under load; the steady phase began during the ramp
    rising = [345 + (1980 - 345) * min(i / 30, 1) for i in range(100)]  # 30 % of the phase ramping
    noisy, reason, record = judged(rising, **{"gpu_pstate:gpu0": [2] * 20 + [0] * 80})
    assert noisy is True
    assert reason.startswith(
        "GPU clock still rising: gpu0's SM clock was more than 10% off its steady median"
    )
    assert "(1980 MHz)" in reason and "345-1980 MHz, P0/P2" in reason
    figures = record["during"]["gpu_clocks"]["gpu0"]
    # the share off the median counted independently: samples below 0.9 x 1980 MHz
    assert figures["share_below"] == sum(v < 0.9 * 1980 for v in rising) / 100
    assert figures["median_mhz"] == 1980 and figures["judged"] is True

    # boost jitter of +-3 % around 1980 MHz all phase long: steady
    jitter = [1980 * (1 + 0.03 * ((i % 7) - 3) / 3) for i in range(100)]
    noisy, reason, record = judged(jitter)
    assert (noisy, reason) == (False, None)
    assert record["during"]["gpu_clocks"]["gpu0"]["share_below"] == 0


def test_a_clock_that_falls_or_dips_is_throttling_and_the_share_limit_is_strict():
    noisy, reason, _ = judged([1980] * 70 + [1410] * 30)
    assert (
        noisy
        and reason.startswith("GPU clock falling (throttled)")
        and "for 30% of the steady phase" in reason
    )
    # dips in the middle: the first and last quarters agree, so neither rising nor falling
    noisy, reason, _ = judged([1980] * 40 + [1200] * 20 + [1980] * 40)
    assert noisy and reason.startswith("GPU clock unsteady")
    # exactly the limit (10 % of the phase) is not more than it
    assert judged([1980] * 90 + [1000] * 10)[0] is False
    assert judged([1980] * 89 + [1000] * 11)[0] is True


def test_a_clock_that_rose_late_leaves_the_median_low_and_is_flagged_from_above():
    figures = clock_figures([345.0] * 60 + [1980.0] * 40, LIMITS.gpu_clock_margin)
    assert figures["median_mhz"] == 345 and figures["share_below"] == 0 and figures["share_above"] == 0.4
    noisy, reason, _ = judged([345] * 60 + [1980] * 40)
    assert noisy and "still rising" in reason and "for 40% of" in reason


def test_the_rule_leaves_cpu_runs_idle_gpus_and_short_phases_unjudged():
    rising = [345 + 50 * i for i in range(30)] + [1980] * 70
    batch = batch_of({"gpu_sm_clock_mhz:gpu0": rising})
    assert clock_check(batch, steady_phases(100), LIMITS, uses_gpu=False) is None  # a CPU run
    assert clock_check(batch, steady_phases(100)[:1], LIMITS, uses_gpu=True) is None  # no steady phase
    assert clock_check(None, steady_phases(100), LIMITS, uses_gpu=True) is None  # not sampled
    idle = batch_of({"gpu_sm_clock_mhz:gpu0": rising, "gpu_util_pct:gpu0": [0] * 100})
    assert clock_check(idle, steady_phases(100), LIMITS, uses_gpu=True) is None  # another GPU ran it
    short = batch_of({"gpu_sm_clock_mhz:gpu0": rising[: MIN_CLOCK_SAMPLES - 1]})
    clocks = clock_check(short, steady_phases(MIN_CLOCK_SAMPLES - 1), LIMITS, uses_gpu=True)
    assert clocks["reasons"] == [] and clocks["gpus"]["gpu0"]["judged"] is False
    # samples outside the steady phase (warm-up before it) do not count
    early = batch_of({"gpu_sm_clock_mhz:gpu0": [345] * 50 + [1980] * 100}, t0=T0 - 50 * TICK)
    assert clock_check(early, steady_phases(100), LIMITS, uses_gpu=True)["reasons"] == []


def test_sampled_clocks_that_rise_during_the_window_are_flagged_end_to_end(monkeypatch):
    """The real sampler reads a fake GPU whose clock ramps from idle for the first 40 % of the
    window; the rule then judges the window from the sampler's own batch."""
    nvml = with_clocks(fake_pynvml(energy_mj=[[0]], power_mw=[[61500]]), [[0]], [[2619]], [[0]])
    start = time.monotonic_ns()
    ramp_ns = 160_000_000

    def sm_clock(handle, kind):
        if kind == nvml.NVML_CLOCK_MEM:
            return 2619
        return round(345 + (1980 - 345) * min((time.monotonic_ns() - start) / ramp_ns, 1.0))

    nvml.nvmlDeviceGetClockInfo = sm_clock
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    sampler = Sampler(psutil.Process().pid, 100, budget=1.0, uss_budget=0).start()
    time.sleep(0.4)
    batch = sampler.stop()
    window = [{"phase": "steady", "start_ns": start, "end_ns": start + 400_000_000}]
    clocks = clock_check(batch, window, LIMITS, uses_gpu=True)
    assert clocks["gpus"]["gpu0"]["n"] >= 20, clocks
    assert len(clocks["reasons"]) == 1 and clocks["reasons"][0].startswith("GPU clock still rising"), clocks
    steady = [{"phase": "steady", "start_ns": start + 2 * ramp_ns, "end_ns": start + 400_000_000}]
    assert clock_check(batch, steady, LIMITS, uses_gpu=True)["reasons"] == []
