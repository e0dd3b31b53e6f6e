"""What summary says of its runs' steady state (edgestats.analysis.summary.steadiness): the counts per
configuration and the note, from the verdicts collect stored (runs.steady_from, no_steady_state)."""

from __future__ import annotations

import polars as pl
from builders import make_results_db

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.summary.steadiness import steadiness_counts, steadiness_note
from edgestats.store.results import Store


def test_counts_leave_unjudged_runs_out():
    runs = pl.DataFrame(
        {
            "steady_from": [0, 40, None, None, 3],
            "no_steady_state": [False, False, True, None, False],
            "warmup": [5, 5, 5, None, 5],
        }
    )
    assert steadiness_counts(runs) == {"n_runs_judged": 4, "n_no_steady_state": 1, "n_steady_after_warmup": 1}
    assert steadiness_counts(runs.filter(pl.col("no_steady_state").is_null())) is None
    assert steadiness_counts(runs.drop("steady_from")) is None, "an older view without the columns"
    assert steadiness_note({"n_runs_judged": 3, "n_no_steady_state": 0, "n_steady_after_warmup": 0}) is None
    note = steadiness_note({"n_runs_judged": 5, "n_no_steady_state": 2, "n_steady_after_warmup": 0})
    assert note.startswith("2 of 5 runs reached no steady state")


def test_summary_counts_the_runs_that_never_settled(tmp_path):
    """On a DB whose runs carry verdicts: each configuration's entry counts them and the summary's
    notes say it once; the estimates are those of the same DB without verdicts."""
    db = make_results_db(tmp_path / "r.duckdb", n_runs=4)
    before = run_analyses(db, AnalysisOptions(only="summary", seed=1))["summary"]
    assert all("steady_state" not in e for e in before.entries), "no verdicts stored: nothing said"
    with Store.open(db) as store:
        store.con.execute(
            "UPDATE runs SET steady_from = CASE WHEN framework = 'pytorch' THEN NULL ELSE 2 END, "
            "no_steady_state = framework = 'pytorch' WHERE kind = 'inference'"
        )
    result = run_analyses(db, AnalysisOptions(only="summary", seed=1))["summary"]
    by_framework = {e["group"]["framework"]: e["steady_state"] for e in result.entries}
    assert by_framework["pytorch"]["n_no_steady_state"] == by_framework["pytorch"]["n_runs_judged"] == 2
    assert by_framework["onnxruntime"] == {
        "n_runs_judged": 2,
        "n_no_steady_state": 0,
        "n_steady_after_warmup": 0,
        "note": None,
    }
    assert any(n.startswith("2 of 4 runs reached no steady state") for n in result.notes), result.notes
    assert [e["metrics"] for e in result.entries] == [e["metrics"] for e in before.entries]
