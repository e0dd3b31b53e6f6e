"""Holm's adjustment (edgestats/analysis/estimators/multiplicity.py) against statsmodels' multipletests,
the reference implementation, on random families with ties, zeros and ones."""

from __future__ import annotations

import gc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from edgestats.analysis.estimators.multiplicity import holm

p_value = st.one_of(st.sampled_from([0.0, 1.0, 0.01, 0.05]), st.floats(0.0, 1.0))


@settings(max_examples=300, deadline=None)
@given(st.lists(p_value, min_size=1, max_size=40), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_matches_statsmodels(p_values, alpha):
    gc.freeze()  # statsmodels' Holm runs gc.collect(): over frozen objects it is quick
    try:
        reject, adjusted, _, _ = multipletests(p_values, alpha=alpha, method="holm")
    finally:
        gc.unfreeze()
    ours = holm(p_values)
    np.testing.assert_allclose(ours, adjusted, rtol=1e-12, atol=0)
    assert ((ours <= alpha) == reject).all()
    assert ((ours >= np.asarray(p_values)) & (ours <= 1.0)).all(), (
        "an adjusted p-value never drops below its own or exceeds 1"
    )


def test_holm_by_hand_and_empty():
    # sorted 0.01, 0.02, 0.04 -> 3*0.01, 2*0.02, max(0.04, 1*0.04): given back in the input's order
    np.testing.assert_allclose(holm([0.04, 0.01, 0.02]), [0.04, 0.03, 0.04])
    assert holm([]).size == 0


def test_holm_adjusts_each_row_alone_and_leaves_untested_ones_out():
    """Many families at once (the answers' selection simulation): each row is its own family, and
    a NaN (a pair with no test) stays NaN and does not count towards m."""
    rows = np.array([[0.04, 0.01, 0.02, np.nan], [0.5, np.nan, 0.001, 0.03]])
    adjusted = holm(rows)
    np.testing.assert_allclose(adjusted[0, :3], holm([0.04, 0.01, 0.02]))
    np.testing.assert_allclose(adjusted[1, [0, 2, 3]], holm([0.5, 0.001, 0.03]))
    assert np.isnan(adjusted[0, 3]) and np.isnan(adjusted[1, 1])
