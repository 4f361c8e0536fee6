"""Pairwise systematic (PS) microaggregation.

PS sorts the records once by a sorting function, the sum of their deviations from the column
means [1] eq. 4, and then, while at least 3k records remain, forms two groups at a time: the
first record of the order with its k-1 nearest records, and the last remaining record with its
k-1 nearest among the rest. Between 2k and 3k-1 remaining records: one group around the first
record, the rest together; fewer than 2k: one group [1] Fig. 2.

Definitions where the paper is silent (they matter only for ties):

* records are standardized to zero mean and unit population variance first (as for MDAV, so
  that the sorting function and the distances do not depend on units), unless
  ``standardize=False``, which only centres them; re-sorting the remaining records by eq. 4
  with their own centroid gives the same order (the centroid shifts every record's sum by the
  same amount), so the order is computed once;
* ties in the sorting function go to the lower row (stable sort); ties in distance go to the
  lower row, as in :mod:`sdcflow.core.microaggregation.mdav`;
* the second seed is the last record of the order that is still unassigned after the first
  group is formed.

**The paper's PS figures are on another scale than its MDAV figures.** On standardized data
(the scale of the literature's information loss, on which the paper's MDAV column is
reproduced exactly) PS loses about as much as MDAV, and the paper's PS column (Census 1.78 /
2.55 / 2.70 / 4.97 for k = 3 / 4 / 5 / 10) lies below the provable lower bound of *any*
partition (:mod:`~sdcflow.core.microaggregation.bound`; 3.92 for Census, k = 3). Run on the
centred, unstandardized values (``standardize=False``) and measured on that scale, PS gives
1.78 / 2.22 / 2.94 / 4.71, close to the paper's PS column (k = 3: 1.782 against 1.783). On
that scale MDAV loses less than PS (1.52 for k = 3). The table with both protocols side by side:
``benchmarks/microaggregation.py``; figures in ``docs/benchmarks/``, "MDAV and PS".

References
----------
[1] M.E. Kabir, H. Wang, Y. Zhang, "A pairwise systematic microaggregation for statistical
    disclosure control", Proc. 2010 IEEE International Conference on Data Mining (ICDM 2010),
    266-273, doi:10.1109/ICDM.2010.111: sorting function eq. 4, algorithm Fig. 2, information
    loss eq. 1-3, Tables II-III.
"""

from __future__ import annotations

import numpy as np

from sdcflow.core.microaggregation.mdav import _sq_dist_rows
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.validation import check_k, check_matrix


def ps_groups(Z: np.ndarray, k: int) -> np.ndarray:
    """PS microaggregation of already-validated (usually standardized) records.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        Records.
    k : int
        Minimum group size, 2 <= k <= n.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Group of every record, groups numbered in order of creation; every group has k
        records except the last, which has k..2k-1.

    Notes
    -----
    Memory O(n d); time O(n^2 d / k): one distance sweep over the remaining records per group.
    """
    n = Z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    order = np.argsort(Z.sum(axis=1), kind="stable")  # [1] eq. 4, ascending
    lo, hi = 0, n - 1  # first and last position of ``order`` that may still be unassigned
    remaining = np.arange(n)  # unassigned rows, ascending: a stable sort breaks ties by row
    group = 0

    def take_group(seed: int) -> None:
        nonlocal remaining, group
        nearest = np.argsort(_sq_dist_rows(Z[remaining], Z[seed]), kind="stable")[:k]
        labels[remaining[nearest]] = group
        group += 1
        keep = np.ones(remaining.size, dtype=bool)
        keep[nearest] = False
        remaining = remaining[keep]

    def first() -> int:
        nonlocal lo
        while labels[order[lo]] >= 0:
            lo += 1
        return int(order[lo])

    def last() -> int:
        nonlocal hi
        while labels[order[hi]] >= 0:
            hi -= 1
        return int(order[hi])

    while remaining.size >= 3 * k:  # [1] Fig. 2, steps 2-6: two groups per step
        take_group(first())
        take_group(last())
    if remaining.size >= 2 * k:  # [1] Fig. 2, step 7: one group around the first record
        take_group(first())
    labels[remaining] = group  # [1] Fig. 2, steps 7 and 9: the rest is the last group
    return labels


def ps(
    X: np.ndarray, k: int, *, columns: list[str] | None = None, standardize: bool = True
) -> np.ndarray:
    """Pairwise systematic microaggregation of ``X`` on standardized data.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Numeric records, no missing values.
    k : int
        Minimum group size (2 <= k <= n).
    columns : list of str, optional
        Column names, used in error messages only.
    standardize : bool, default True
        False: sort and group the centred values, in their units -- the scale on which the
        paper's PS figures are reproduced (module docstring).

    Returns
    -------
    labels : ndarray of shape (n,), int64
        The group of every record; ``group_means(X, labels)`` is the masked file.

    Raises
    ------
    InputError
        Non-numeric or non-finite values, k not an integer in 2..n.
    """
    X = check_matrix(X, columns=columns)
    k = check_k(k, X.shape[0])
    return ps_groups(working_scale(X, standardize), k)
