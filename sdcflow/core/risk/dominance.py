"""Magnitude dominance of microdata groups: the (n, k)-dominance rule and the p % rule.

A group (a cell, or a microaggregation group released as its mean) is sensitive when a few
contributors dominate its total T [1]_ (ch. 4, sensitivity rules). With the group's values on
a column sorted x_1 >= x_2 >= ...:

* (n, k)-dominance: sensitive when the n largest hold more than k % of the total,
  ``sum_{i<=n} x_i > k / 100 * T``                                          ([1] eq. 4.1)
* p % rule: sensitive when the second largest contributor can estimate the largest within
  p %, ``T - x_1 - x_2 < p / 100 * x_1``                                    ([1] eq. 4.3)

A group of total 0 is never sensitive. Values must be non-negative (contributions).

References
----------
.. [1] A. Hundepool, J. Domingo-Ferrer, L. Franconi, S. Giessing, E. Schulte Nordholt,
   K. Spicer, P.-P. de Wolf, Statistical Disclosure Control, Wiley (2012), ch. 4,
   section 4.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdcflow.core.risk._checks import as_1d, as_2d, finite, group_codes, in_range
from sdcflow.errors import DataError, ParameterError

__all__ = ["DominanceResult", "dominance"]


@dataclass(frozen=True)
class DominanceResult:
    """What :func:`dominance` returns (G groups, p columns).

    Attributes
    ----------
    groups : ndarray, shape (G,)
        The distinct group labels, sorted; rows of the arrays below.
    total : ndarray, shape (G, p)
    top_share : ndarray, shape (G, p)
        Share of the total held by the n largest contributors (0 for a zero total).
    nk_fail, p_fail : ndarray of bool, shape (G, p)
        Sensitive under (n, k)-dominance, under the p % rule.
    n_nk_fail, n_p_fail : ndarray of int, shape (p,)
        Failing groups per column.
    n_groups_p_fail : int
        Groups failing the p % rule on at least one column.
    """

    groups: np.ndarray
    total: np.ndarray
    top_share: np.ndarray
    nk_fail: np.ndarray
    p_fail: np.ndarray
    n_nk_fail: np.ndarray
    n_p_fail: np.ndarray
    n_groups_p_fail: int


def dominance(
    groups: np.ndarray, X: np.ndarray, *, n: int = 2, k: float = 85.0, p: float = 10.0
) -> DominanceResult:
    """(n, k)-dominance and p % rule for every group and column.

    Parameters
    ----------
    groups : array_like, shape (N,)
        Group label of each record.
    X : array_like, shape (N, p_cols)
        Non-negative contributions.
    n : int, default 2
        Number of largest contributors of the dominance rule, n >= 1.
    k : float, default 85
        Dominance threshold in percent, 0 < k <= 100.
    p : float, default 10
        Precision of the p % rule in percent, p > 0.

    Returns
    -------
    DominanceResult

    Raises
    ------
    DataError
        Negative, non-finite or mismatched values.
    ParameterError
        ``n``, ``k`` or ``p`` out of range.

    Examples
    --------
    >>> r = dominance([0, 0, 0, 1, 1, 1], [[100], [5], [1], [10], [9], [8]])
    >>> r.p_fail[:, 0].tolist(), r.top_share[:, 0].round(3).tolist()
    ([True, False], [0.991, 0.704])
    """
    x = finite(as_2d(X, "X"), "X")
    if (x < 0).any():
        raise DataError(
            "X must hold non-negative contributions; shift or split signed variables "
            "before applying magnitude rules",
            field="X",
        )
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError("n must be an integer >= 1 (the largest contributors)", field="n")
    kk = in_range(k, "k", 0.0, 100.0, closed="right")
    pp = in_range(p, "p", 0.0, np.inf, closed="none")
    g = as_1d(groups, "groups", x.shape[0])
    code, n_g = group_codes(g, "groups")
    cols = x.shape[1]
    total = np.empty((n_g, cols))
    top = np.empty((n_g, cols))
    x1 = np.empty((n_g, cols))
    x2 = np.empty((n_g, cols))
    start = np.r_[0, np.cumsum(np.bincount(code, minlength=n_g))]
    for j in range(cols):
        order = np.lexsort((-x[:, j], code))  # by group, largest first
        v = x[order, j]
        gc = code[order]
        rank = np.arange(v.size) - start[gc]
        total[:, j] = np.bincount(gc, weights=v, minlength=n_g)
        top[:, j] = np.bincount(gc, weights=np.where(rank < n, v, 0.0), minlength=n_g)
        x1[:, j] = np.bincount(gc, weights=np.where(rank == 0, v, 0.0), minlength=n_g)
        x2[:, j] = np.bincount(gc, weights=np.where(rank == 1, v, 0.0), minlength=n_g)
    pos = total > 0
    share = np.divide(top, total, out=np.zeros_like(top), where=pos)
    nk_fail = pos & (top > kk / 100.0 * total)  # [1] eq. 4.1
    p_fail = pos & (total - x1 - x2 < pp / 100.0 * x1)  # [1] eq. 4.3
    return DominanceResult(
        groups=np.unique(g),
        total=total,
        top_share=share,
        nk_fail=nk_fail,
        p_fail=p_fail,
        n_nk_fail=nk_fail.sum(axis=0),
        n_p_fail=p_fail.sum(axis=0),
        n_groups_p_fail=int(p_fail.any(axis=1).sum()),
    )
