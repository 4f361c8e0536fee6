"""Figures that verify a box release: what the box gates (``sdcflow.gates.box``) compare
with their limits.

* ``min_distinct``: the smallest number of distinct values ([1] eq. 29) of any quasi-identifier in
  any box (l-diversity of the boxes; must be >= l).
* ``records_outside``: original records not inside their released box (must be 0).
* ``targets_outside``: target statistics whose original value (with the released weights, and
  with equal weights when those intervals are published too) lies outside the guaranteed
  interval published in the manifest (must be 0).

The k of the boxes is the generic ``k_anonymity`` check: the identifying columns of a box
release are the lo/hi columns and ``box_id``, so identical released rows are exactly a box.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sdcflow.core.box.partition import distinct_counts
from sdcflow.core.box.sensitivity import Target, statistic


def min_distinct(original: np.ndarray, groups: np.ndarray, eps: np.ndarray) -> int:
    """Smallest count of eps-distinct values of any variable in any box; shapes (n, d), (n,)."""
    _, labels = np.unique(groups, return_inverse=True)
    return int(distinct_counts(original, labels, eps).min())


def records_outside(original: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> int:
    """Records with some value outside its box; all arrays of shape (n, d)."""
    return int((~((original >= lo) & (original <= hi)).all(axis=1)).sum())


def targets_outside(
    original: np.ndarray,
    columns: Sequence[str],
    weights: np.ndarray,
    estimates: Sequence[Mapping[str, Any]],
    rtol: float = 1e-9,
) -> int:
    """Targets whose original weighted value lies outside its ``guaranteed`` interval.

    The tolerance ``rtol`` times the interval's magnitude absorbs rounding in the bounds
    (an exact lower end equals the original value when the boxes are points).
    """
    cols = list(columns)
    bad = 0
    for row in estimates:
        target = Target(row["stat"], tuple(cols.index(v) for v in row["vars"]))
        value = statistic(original, target, weights)
        lo, hi = row["guaranteed"]
        tol = rtol * max(abs(lo), abs(hi), 1e-300)
        if not (lo - tol <= value <= hi + tol):
            bad += 1
    return bad
