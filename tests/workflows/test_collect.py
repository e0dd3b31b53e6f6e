"""edgestats.workflows.collect from Python: the options as keywords build the sweep the command's
flags would, each step is told to the listener in order, a noisy run with on_noise fail stops the
sweep, and the terminal's listener (reports/terminal/collect.py) hears every event there is.
The orchestrator, the plan and the runs are stand-ins: no framework, no DB."""

from __future__ import annotations

import inspect
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

import edgestats.workflows.collect as workflow
from edgestats.collectors.collect import Plan
from edgestats.collectors.record import RunOutcome
from edgestats.reports.terminal.collect import CollectReport
from edgestats.workflows.collect_events import CollectEvents, NoisyRun


class Recorder(CollectEvents):
    """Every event, by name, with its positional arguments."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []


for _name, _ in inspect.getmembers(CollectEvents, inspect.isfunction):
    setattr(Recorder, _name, lambda self, *args, _name=_name, **kwargs: self.seen.append((_name, *args)))


@pytest.fixture
def stand_ins(monkeypatch):
    """The orchestrator, plan and execute of collectors/collect.py as stand-ins: each planned run
    ends ok (noisy where the test says); `sweeps` holds the sweep each collect planned."""
    sweeps, noisy = [], set()
    telemetry = SimpleNamespace(close=lambda: None)
    orchestrator = SimpleNamespace(telemetry=telemetry, noise=SimpleNamespace(wait_s=60.0), warnings=[])

    @contextmanager
    def open_orchestrator(db, sweep, *, cache_dir=None):
        yield orchestrator

    def plan(db, sweep, orchestrator_):
        sweeps.append(sweep)
        configs = sweep.configs()
        return Plan(uuid.uuid4(), 7, configs, [], 0, len(configs))

    def execute(the_plan, orchestrator_, sweep, *, on_start, on_done, on_other):
        for index, config in enumerate(the_plan.to_run):
            on_start(index, config)
            bad = config.batch_size in noisy
            on_done(
                index, RunOutcome(uuid.uuid4(), config, "ok", None, 10, 0.1, noisy=bad, noise_reason="busy")
            )

    monkeypatch.setattr(workflow, "open_orchestrator", open_orchestrator)
    monkeypatch.setattr(workflow, "plan", plan)
    monkeypatch.setattr(workflow, "execute", execute)
    return SimpleNamespace(sweeps=sweeps, noisy=noisy)


def test_python_keywords_build_the_sweep_and_each_step_is_told_in_order(tmp_path, stand_ins):
    events = Recorder()
    result = workflow.collect(
        tmp_path / "r.duckdb",
        {"framework": "onnxruntime", "repeat": 3},
        model="cnn9",
        batch_size=[1, 2],
        option={"xnnpack": False},
        retry_failed=True,
        events=events,
    )
    [sweep] = stand_ins.sweeps
    assert sweep.axes == {"framework": ["onnxruntime"], "model": ["cnn9"], "batch_size": [1, 2]}
    assert sweep.settings == {"repeat": 3, "retry_failed": True} and sweep.options == {"xnnpack": False}
    names = [event[0] for event in events.seen]
    assert names == ["planned", "runs_starting", *["run_starting", "run_done"] * 6, "runs_ended", "finished"]
    assert events.seen[-1][1] is result and result.counts == Counter(ok=6) and not result.nothing_could_run


def test_a_noisy_run_with_on_noise_fail_stops_the_sweep_after_telling_it(tmp_path, stand_ins):
    stand_ins.noisy.add(2)
    events = Recorder()
    with pytest.raises(NoisyRun) as stopped:
        workflow.collect(
            tmp_path / "r.duckdb",
            framework="onnxruntime",
            model="cnn9",
            batch_size=[2],
            on_noise="fail",
            events=events,
        )
    assert stopped.value.outcome.config.batch_size == 2
    names = [event[0] for event in events.seen]
    assert names == [
        "planned",
        "runs_starting",
        "run_starting",
        "run_done",
        "noisy",
        "runs_ended",
        "stopped_noisy",
    ]


def test_an_unknown_keyword_names_the_valid_ones(tmp_path, stand_ins):
    with pytest.raises(TypeError, match="unexpected keyword argument.*batchsize.*batch_size"):
        workflow.collect(tmp_path / "r.duckdb", framework="onnxruntime", model="cnn9", batchsize=2)
    assert not stand_ins.sweeps


def test_the_terminal_report_hears_every_event_and_prints_them(tmp_path, stand_ins, capsys, monkeypatch):
    """CollectReport imports nothing of workflows: it has every method of CollectEvents, by the same
    parameters, and prints a collect's lines (the stand-ins' plan, runs and summary)."""
    for name, method in inspect.getmembers(CollectEvents, inspect.isfunction):
        assert list(inspect.signature(getattr(CollectReport, name)).parameters) == list(
            inspect.signature(method).parameters
        ), name
    telemetry = SimpleNamespace(sample_hz=0, power=None, not_used={}, close=lambda: None)
    stand_ins_orchestrator = SimpleNamespace(telemetry=telemetry, noise=None, warnings=[], device_line=None)

    @contextmanager
    def open_orchestrator(db, sweep, *, cache_dir=None):
        yield stand_ins_orchestrator

    monkeypatch.setattr(workflow, "open_orchestrator", open_orchestrator)
    db = tmp_path / "r.duckdb"
    workflow.collect(db, framework="onnxruntime", model="cnn9", iterations=50, events=CollectReport())
    out, err = capsys.readouterr()
    assert "1 run planned: 1 to run, 0 already stored, 0 cannot run here (shuffle seed 7)" in err
    assert "ok onnxruntime cnn9 b1 fp32 #0 — 10 latencies, 0.1 s" in err
    assert "telemetry: sampler off; energy off (--power none)" in err
    assert "warning: --iterations 50: a run needs 100 steady latencies for p99" in err
    assert out == f"{Path(db)}: 1 ok; 0 already stored, 0 cannot run here\n"
