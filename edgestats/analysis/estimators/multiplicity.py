"""Multiple-comparison adjustment: Holm's step-down procedure (Holm 1979).

For m p-values sorted ascending, p(1) <= ... <= p(m), the adjusted value of the i-th is
max over j <= i of min(1, (m - j + 1) p(j)); a test is rejected at level alpha when its
adjusted p-value is at most alpha, which is Holm's sequential rule (reject while
p(j) <= alpha / (m - j + 1), stop at the first that is not). It controls the family-wise
error rate under any dependence between the tests.

Written here rather than called from statsmodels (`multipletests(method="holm")`, which the
tests check it against): that function runs a full `gc.collect()` on every call, 0.1-0.2 s in
a process holding a report's worth of objects, for an adjustment of a few dozen values. It also
adjusts many families at once (one per row, as the answers' selection simulation calls it), and
a NaN is a test that was not made: it stays NaN and does not count towards m.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values over the last axis, in the order given (leading axes: families
    adjusted separately; NaN: no test, left NaN and not counted; an empty input gives an empty array)."""
    p = np.asarray(p_values, dtype=float)
    m = np.sum(~np.isnan(p), axis=-1, keepdims=True)
    order = np.argsort(p, axis=-1, kind="stable")  # NaN sorts last, so it never raises a step
    steps = np.minimum((m - np.arange(p.shape[-1])) * np.take_along_axis(p, order, axis=-1), 1.0)
    adjusted = np.empty(p.shape)
    np.put_along_axis(adjusted, order, np.maximum.accumulate(steps, axis=-1), axis=-1)
    return adjusted
