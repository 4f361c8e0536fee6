"""Record-linkage risk of a perturbed file: distance-based linkage and interval disclosure.

Distance-based record linkage (DBRL) [1]_ [2]_: both files are standardized with the
original's column means and standard deviations; each masked record is linked to its
nearest original record (Euclidean, scipy's cKDTree). The link is correct when that is the
record's own original. When t original records tie at the nearest distance, the intruder
picks one at random and the link is correct with probability 1/t:

    share = (1 / n) * sum_i [d(x'_i, x_i) = min_j d(x'_i, x_j)] / t_i            (1)

Rank-interval disclosure [2]_: for each column the original values are ranked; the masked
value x'_ij defines the interval of original values whose rank is within ``p`` percent of n
of the rank x'_ij would take among them; record i is disclosed when x_ij lies in that
interval for every column j.

References
----------
.. [1] J. Domingo-Ferrer, V. Torra, "Disclosure risk assessment in statistical data
   protection", Journal of Computational and Applied Mathematics 164 (2004) 285-293.
.. [2] J. Domingo-Ferrer, J. M. Mateo-Sanz, V. Torra, "Comparing SDC methods for microdata
   on the basis of information loss and disclosure risk", Pre-proceedings of ETK-NTTS 2001,
   807-826 (DLD: distance linkage; ID: interval disclosure).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from sdcflow.core.risk._checks import as_2d, finite, in_range
from sdcflow.errors import DataError

__all__ = ["LinkageResult", "distance_linkage", "interval_disclosure"]


@dataclass(frozen=True)
class LinkageResult:
    """What :func:`distance_linkage` and :func:`interval_disclosure` return.

    Attributes
    ----------
    share : float
        Expected share of records correctly linked (eq. (1)) or disclosed.
    n_linked : int
        Records whose own original is the unique nearest (DBRL), or disclosed (interval).
    n_tied : int
        Records whose own original ties with others at the nearest distance (0 for
        interval disclosure).
    n : int
    linked : ndarray, shape (n,)
        Per record, the probability of a correct link (1, 1/t or 0), or disclosed (0/1).
    """

    share: float
    n_linked: int
    n_tied: int
    n: int
    linked: np.ndarray


def _pair(original: np.ndarray, masked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = finite(as_2d(original, "original"), "original")
    y = finite(as_2d(masked, "masked"), "masked")
    if x.shape != y.shape:
        raise DataError(
            f"masked must have the shape of original {x.shape}, not {y.shape}: "
            "row i of masked is the masked version of row i of original",
            field="masked",
        )
    return x, y


def distance_linkage(
    original: np.ndarray, masked: np.ndarray, *, standardize: bool = True
) -> LinkageResult:
    """Share of masked records whose nearest original record is their own, eq. (1).

    Parameters
    ----------
    original, masked : array_like, shape (n, p)
        Row i of ``masked`` is the masked version of row i of ``original``.
    standardize : bool, default True
        Scale both by the original's column means and standard deviations (ddof 0; a
        constant column is only centred).

    Returns
    -------
    LinkageResult

    Raises
    ------
    DataError
        Non-numeric, non-finite or mismatched arrays.

    Examples
    --------
    >>> x = np.array([[0.0], [1.0], [2.0]])
    >>> distance_linkage(x, x + [[0.1], [0.6], [0.0]]).n_linked
    2
    """
    x, y = _pair(original, masked)
    if standardize:
        mu, sd = x.mean(axis=0), x.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        x, y = (x - mu) / sd, (y - mu) / sd
    tree = cKDTree(x)
    d_nn, _ = tree.query(y, k=1)
    d_own = np.sqrt(((y - x) ** 2).sum(axis=1))
    tol = 1e-12 * np.maximum(1.0, d_own)
    at_nearest = d_own <= d_nn + tol
    linked = np.zeros(x.shape[0])
    idx = np.flatnonzero(at_nearest)
    if idx.size:
        # t_i: originals within the own distance (the own record included)
        t = tree.query_ball_point(y[idx], r=d_own[idx] + tol[idx], return_length=True)
        linked[idx] = 1.0 / np.maximum(t, 1)
    n_linked = int((linked == 1.0).sum())
    n_tied = int(((linked > 0) & (linked < 1)).sum())
    return LinkageResult(float(linked.mean()), n_linked, n_tied, x.shape[0], linked)


def interval_disclosure(
    original: np.ndarray, masked: np.ndarray, *, p: float = 1.0
) -> LinkageResult:
    """Rank-interval disclosure: original values within p % of ranks of the masked value.

    Parameters
    ----------
    original, masked : array_like, shape (n, p_cols)
    p : float, default 1.0
        Half-width of the rank interval in percent of n, 0 <= p <= 100.

    Returns
    -------
    LinkageResult
        ``n_linked``: records disclosed on every column; ``n_tied`` 0.

    Examples
    --------
    >>> x = np.arange(100.0)[:, None]
    >>> interval_disclosure(x, x + 0.5, p=1).share
    1.0
    """
    x, y = _pair(original, masked)
    pct = in_range(p, "p", 0.0, 100.0)
    n = x.shape[0]
    w = int(np.ceil(pct / 100.0 * n))
    ok = np.ones(n, bool)
    for j in range(x.shape[1]):
        srt = np.sort(x[:, j])
        pos = np.clip(np.searchsorted(srt, y[:, j]), 0, n - 1)  # rank of x'_ij among originals
        lo = srt[np.maximum(pos - w, 0)]
        hi = srt[np.minimum(pos + w, n - 1)]
        ok &= (x[:, j] >= lo) & (x[:, j] <= hi)
    return LinkageResult(float(ok.mean()), int(ok.sum()), 0, n, ok.astype(float))
