"""The scale a microaggregation partition is formed on: standardized columns, or centred only.

Standardizing (zero mean, unit population variance) makes the partition independent of the
units and gives every variable the same weight; it is the scale of the information loss the
literature and the ``max_information_loss`` gate report. Centring only keeps the units, so
variables with large values dominate the distances -- the scale on which the PS paper's own
figures are reproduced (``docs/benchmarks/``, section "MDAV and PS").
"""

from __future__ import annotations

import numpy as np

from sdcflow.core.validation import standardize as _standardize


def working_scale(X: np.ndarray, standardize: bool = True) -> np.ndarray:
    """The records on the scale the partition is formed on.

    Shapes: X (n, d) validated float64 -> (n, d): standardized columns (``standardize``) or
    the columns minus their means; the same values for any memory layout of ``X``.
    """
    # numpy sums a column of a row-major array in another order than a column-major one, so
    # the means and sds, and with them the partition's ties, would follow the layout: the
    # records in row order, whichever layout the caller holds them in
    X = np.ascontiguousarray(X, dtype=np.float64)
    if standardize:
        return _standardize(X)[0]
    return X - X.mean(axis=0)
