"""t-closeness: how far each class's sensitive distribution lies from the whole file's.

Classes are the records with identical key rows (a missing code is a value of its own, as
sdcflow's ``"identical"`` convention). With P the file's distribution and Q the class's over
the r distinct sensitive values v_1 < ... < v_r, the Earth Mover's Distance of [1]_ is

* ordered distance (numeric or ordinal sensitive; ground distance |i - j| / (r - 1)):
  ``EMD = 1 / (r - 1) * sum_{i=1}^{r-1} |sum_{j<=i} (p_j - q_j)|``          ([1] eq. 4)
* equal distance (nominal; every pair of values at distance 1):
  ``EMD = 1 / 2 * sum_i |p_i - q_i|``                                       ([1] eq. 3)

The file is t-close when the largest class distance is at most t.

Cost O(C r) for C classes, in blocks of classes holding at most ~4 million cells.

References
----------
.. [1] N. Li, T. Li, S. Venkatasubramanian, "t-Closeness: privacy beyond k-anonymity and
   l-diversity", Proc. IEEE 23rd International Conference on Data Engineering (ICDE 2007)
   106-115, section 4.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from sdcflow.core.risk._checks import as_1d, as_2d, finite
from sdcflow.errors import DataError, ParameterError

__all__ = ["TClosenessResult", "t_closeness"]

_BLOCK_CELLS = 1 << 22


@dataclass(frozen=True)
class TClosenessResult:
    """What :func:`t_closeness` returns (n records, C classes).

    Attributes
    ----------
    t : float
        The largest class distance: the file is t-close for every t at or above it.
    class_distance : ndarray, shape (C,)
        EMD of each class, classes in the order of their first record.
    record_distance : ndarray, shape (n,)
        Each record's class distance.
    class_size : ndarray of int, shape (C,)
    """

    t: float
    class_distance: np.ndarray
    record_distance: np.ndarray
    class_size: np.ndarray


def t_closeness(
    keys: np.ndarray,
    sensitive: np.ndarray,
    *,
    distance: Literal["ordered", "equal"] = "ordered",
) -> TClosenessResult:
    """Earth Mover's Distance between each key class's sensitive values and the file's.

    Parameters
    ----------
    keys : array_like, shape (n, m)
        Key codes (numeric; a missing code is a value of its own).
    sensitive : array_like, shape (n,)
        Sensitive values: numbers or ordinal codes for ``"ordered"``, any labels for
        ``"equal"``.
    distance : {"ordered", "equal"}, default "ordered"
        Ground distance: rank distance over the sorted distinct values, or 1 between any two
        distinct values (nominal).

    Returns
    -------
    TClosenessResult

    Raises
    ------
    DataError
        Arrays not of matching shape, keys not numeric, NaN in either.
    ParameterError
        ``distance`` not one of the two.

    Examples
    --------
    Li et al.'s salary example ([1] section 4.2): a class {3k, 4k, 5k} of a file 3k..11k.

    >>> keys = np.r_[np.zeros(3), np.ones(6)].astype(int)
    >>> r = t_closeness(keys, [3, 4, 5, 6, 7, 8, 9, 10, 11])
    >>> round(float(r.class_distance[0]), 4)
    0.375
    """
    if distance not in ("ordered", "equal"):
        raise ParameterError(
            f"distance must be 'ordered' (numeric or ordinal) or 'equal' (nominal), "
            f"not {distance!r}",
            field="distance",
        )
    k = finite(as_2d(keys, "keys"), "keys")
    s = as_1d(sensitive, "sensitive", k.shape[0])
    if distance == "ordered" and s.dtype.kind not in "biuf":
        raise DataError(
            "sensitive must be numeric or ordinal codes for the ordered distance; "
            "use distance='equal' for a nominal column",
            field="sensitive",
        )
    if s.dtype.kind == "f" and np.isnan(s).any():
        raise DataError("sensitive holds NaN; impute or drop those records", field="sensitive")
    n = k.shape[0]
    _, first, cls = np.unique(k, axis=0, return_index=True, return_inverse=True)
    cls = cls.reshape(-1)
    # classes numbered in the order of their first record
    order_cls = np.argsort(first, kind="stable")
    rank = np.empty_like(order_cls)
    rank[order_cls] = np.arange(order_cls.size)
    cls = rank[cls]
    n_cls = order_cls.size
    _, val = np.unique(s, return_inverse=True)
    val = val.reshape(-1)
    r = int(val.max()) + 1
    p = np.bincount(val, minlength=r) / n
    size = np.bincount(cls, minlength=n_cls)
    dist = np.zeros(n_cls)
    if r > 1:
        order = np.argsort(cls, kind="stable")
        start = np.r_[0, np.cumsum(size)]
        block = max(1, _BLOCK_CELLS // r)
        for a in range(0, n_cls, block):
            b = min(n_cls, a + block)
            rows = order[start[a] : start[b]]
            cnt = np.bincount((cls[rows] - a) * r + val[rows], minlength=(b - a) * r)
            q = cnt.reshape(b - a, r) / size[a:b, None]
            d = p[None, :] - q
            if distance == "ordered":  # [1] eq. 4
                dist[a:b] = np.abs(np.cumsum(d, axis=1)[:, :-1]).sum(axis=1) / (r - 1)
            else:  # [1] eq. 3
                dist[a:b] = 0.5 * np.abs(d).sum(axis=1)
    return TClosenessResult(
        t=float(dist.max()), class_distance=dist, record_distance=dist[cls], class_size=size
    )
