"""Rank swapping of continuous variables (Moore 1996), as sdcMicro's ``rankSwap`` with ``P``
(sdcMicro 5.8.1, ``RankSwapping.h``, the OECD implementation).

References
----------
.. [1] Moore, R. A. (1996). Controlled data-swapping techniques for masking public use
   microdata sets. Research report RR96-04, U.S. Bureau of the Census.
.. [2] Domingo-Ferrer, J. and Mateo-Sanz, J. M. (2001). Comparing SDC methods for microdata
   on the basis of information loss and disclosure risk. ETK-NTTS 2001.
"""

from __future__ import annotations

import numpy as np

from sdcflow.core.jit import cached_njit
from sdcflow.errors import ParameterError

from ._checks import as_generator, check_float_matrix, check_percent

__all__ = ["rank_swap"]


@cached_njit(nogil=True)
def _swap_partners(n: int, window: int, u: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Partner of each rank 0..n-1 (an involution), as the loop of sdcMicro's ``RankSwap``.

    Ranks are visited in order; an unswapped rank ``j`` picks uniformly (``u[j]``) one of the
    unswapped ranks ``k`` with ``j < k < min(n, j + window)``, and both become swapped; with no
    such ``k`` it keeps its value. A Fenwick tree over the unswapped ranks makes the pick
    O(log n) (sdcMicro lists the candidates, O(window) per rank).
    """
    partner = np.arange(n)
    free = np.ones(n, dtype=np.bool_)
    tree = np.zeros(n + 1, dtype=np.int64)  # Fenwick tree of `free`, 1-based
    for i in range(1, n + 1):
        tree[i] += 1
        parent = i + (i & -i)
        if parent <= n:
            tree[parent] += tree[i]
    top_bit = 1
    while top_bit * 2 <= n:
        top_bit *= 2
    for j in range(n):
        if not free[j]:
            continue
        r = min(n, j + window)  # r = Min(NbNotSwapped, (int) (j + NbNotSwapped * P))
        # free ranks among positions j+1 .. r-1: prefix(r) - prefix(j + 1)
        below = 0
        i = j + 1
        while i > 0:
            below += tree[i]
            i -= i & -i
        upto = 0
        i = r
        while i > 0:
            upto += tree[i]
            i -= i & -i
        count = upto - below
        if count <= 0:
            free[j] = False
            continue
        target = below + min(int(u[j] * count), count - 1) + 1  # the target-th free rank
        pos = 0  # Fenwick descent: largest pos with prefix(pos) < target
        step = top_bit
        while step > 0:
            if pos + step <= n and tree[pos + step] < target:
                pos += step
                target -= tree[pos]
            step //= 2
        k = pos  # 0-based rank of the partner
        partner[j] = k
        partner[k] = j
        free[j] = False
        free[k] = False
        for jj in (j, k):  # both leave the tree
            i = jj + 1
            while i <= n:
                tree[i] -= 1
                i += i & -i
    return partner


def rank_swap(
    X: object,
    *,
    p: float = 15.0,
    top_percent: float = 0.0,
    bottom_percent: float = 0.0,
    rng: int | np.random.Generator,
) -> np.ndarray:
    """Swap each column's values between records of close rank, as sdcMicro's ``rankSwap``.

    Each column is handled on its own [1]_: its observed values are sorted from highest to
    lowest; going down the ranks, a value not yet swapped is exchanged with one drawn
    uniformly among the values not yet swapped whose rank is below it by less than
    ``floor(m p / 100)`` (``m``: the column's values taking part), if there is one.

    Parameters
    ----------
    X : array_like of shape (n, d) or (n,)
        The variables, one per column. NaN marks a missing value: it stays where it is and
        takes no part (sdcMicro flags missing values as already swapped).
    p : float in [0, 100], default 15
        The rank range in percent of the number of values: two swapped values' ranks differ
        by less than ``m p / 100``. sdcMicro's ``P`` is this as a fraction (its documentation
        says percent, its code multiplies ``P`` by the count as is): ``p = 15`` here is
        ``P = 0.15`` there.
    top_percent, bottom_percent : float in [0, 100], default 0
        sdcMicro's ``TopPercent`` and ``BottomPercent``: the largest (smallest) that percent of
        the values are replaced by their mean and take no part in swapping. sdcMicro's
        defaults are 5 and 5; here they are 0, so that by default every column's values are
        only permuted.
    rng : int or numpy.random.Generator
        Draws ``m`` uniforms per column, column after column.

    Returns
    -------
    Z : ndarray of shape (n, d), float64
        The swapped variables (a 1-D ``X`` gives shape (n, 1)). With ``top_percent`` and
        ``bottom_percent`` 0, each column of ``Z`` is a permutation of the column of ``X``.

    Raises
    ------
    DataError
        ``X`` not numeric or with infinities.
    ParameterError
        A percentage outside [0, 100], or ``top_percent + bottom_percent > 100``.

    Notes
    -----
    sdcMicro computes the sizes of the coded blocks in single precision, so where
    ``m * percent / 100`` is a whole number it may code one value fewer (10 % of 20 values:
    1 there, 2 here). Ties are ranked in record order (sdcMicro: by its hash sort).
    sdcMicro's ways of deriving ``P`` from the data, ``R0`` (its default) and ``K0``, are not
    implemented.

    References
    ----------
    .. [1] Moore (1996), Controlled data-swapping techniques for masking public use microdata.
    .. [2] sdcMicro 5.8.1, ``rankSwap`` / ``RankSwapping.h``.

    Examples
    --------
    >>> import numpy as np
    >>> Z = rank_swap(np.arange(100.0), p=5, rng=0)
    >>> bool((np.sort(Z[:, 0]) == np.arange(100.0)).all())
    True
    """
    p = check_percent(p, "p")
    top_percent = check_percent(top_percent, "top_percent")
    bottom_percent = check_percent(bottom_percent, "bottom_percent")
    if top_percent + bottom_percent > 100.0:
        raise ParameterError(
            "top_percent + bottom_percent must not exceed 100; lower one of them",
            field="top_percent",
        )
    rng = as_generator(rng)
    X = check_float_matrix(X, "X")
    Z = X.copy()
    for col in range(X.shape[1]):
        rows = np.flatnonzero(~np.isnan(X[:, col]))
        m = rows.size
        if m == 0:
            continue
        values = X[rows, col]
        order = np.argsort(-values, kind="stable")  # highest to lowest, as sdcMicro
        ranked = values[order]
        # Top = (int) (NbNonMissing * g_TopRatio); NbNonMissing - Bottom, the bottom's size
        n_top = int(np.floor(m * top_percent / 100.0 + 1e-9))
        n_bottom = int(np.floor(m * bottom_percent / 100.0 + 1e-9))
        if n_top:
            ranked[:n_top] = ranked[:n_top].mean()  # top coding to the block's mean
        if n_bottom:
            ranked[m - n_bottom :] = ranked[m - n_bottom :].mean()
        middle = ranked[n_top : m - n_bottom]  # a view: the values that take part
        n_swap = middle.size
        # (int) (j + NbNotSwapped * P); the tolerance keeps m p / 100 integral when it is
        window = int(np.floor(n_swap * p / 100.0 + 1e-9))
        u = rng.random(n_swap)
        partner = _swap_partners(n_swap, window, u)
        middle[:] = middle[partner]
        Z[rows[order], col] = ranked
    return Z
