"""Multiple-comparison adjustment: Holm's step-down procedure (Holm 1979).

For m p-values sorted ascending, p(1) <= ... <= p(m), the adjusted value of the i-th is
max over j <= i of min(1, (m - j + 1) p(j)); a test is rejected at level alpha when its
adjusted p-value is at most alpha, which is Holm's sequential rule (reject while
p(j) <= alpha / (m - j + 1), stop at the first that is not). It controls the family-wise
error rate under any dependence between the tests.

Written here rather than called from statsmodels (`multipletests(method="holm")`, which the
tests check it against): that function runs a full `gc.collect()` on every call, 0.1-0.2 s in
a process holding a report's worth of objects, for an adjustment of a few dozen values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the order given (an empty input gives an empty array)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    steps = np.minimum((p.size - np.arange(p.size)) * p[order], 1.0)
    adjusted = np.empty(p.size)
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted
