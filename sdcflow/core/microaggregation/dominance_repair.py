"""Groups formed so that no record dominates: merge the groups failing the p % rule.

A microaggregation group released as its mean is a magnitude cell: its total is the mean
times the size, and the second largest contributor, who knows its own value, estimates the
largest within p % when the others add little, ``T - x_1 - x_2 < p / 100 * x_1`` (the p %
rule, [1]_ ch. 4, section 4.2, eq. 4.3; :func:`sdcflow.core.risk.dominance`). Merging such a
group with another adds contributors to the remainder ``T - x_1 - x_2`` (it never lowers it
on a non-negative column, unless the new group's largest is larger still), so
:func:`repair_dominance` repeats, until no group fails or one group is left:

1. find the groups failing the p % rule on some checked column (non-negative ones);
2. merge each with its nearest group: the nearest centroid on the working scale
   (standardized columns, or the scale given), by a :class:`scipy.spatial.cKDTree` over the
   centroids of all current groups; a failing group and the group it joins, and any other
   group joining either, become one group (connected components of the "joins" edges).

Only the groups merged are checked again in the next round: a group untouched passed already.
Groups only grow, so a partition into groups of at least k keeps that property. Cost per
round: one sort per column of the rows checked, and a tree over the centroids.

References
----------
.. [1] A. Hundepool, J. Domingo-Ferrer, L. Franconi, S. Giessing, E. Schulte Nordholt,
   K. Spicer, P.-P. de Wolf, Statistical Disclosure Control, Wiley (2012), ch. 4,
   section 4.2 (sensitivity rules: the p % rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from sdcflow.core.risk.dominance import dominance
from sdcflow.core.validation import standardize
from sdcflow.errors import DataError, ParameterError

__all__ = ["DominanceRepair", "repair_dominance"]


@dataclass(frozen=True)
class DominanceRepair:
    """What :func:`repair_dominance` returns.

    Attributes
    ----------
    labels : ndarray of int, shape (n,)
        The group of every record, numbered 0..g-1 (as the input's order of first groups).
    columns : ndarray of bool, shape (d,)
        The columns checked (non-negative ones).
    groups_before, groups_after : int
    failing_before, failing_after : int
        Groups failing the p % rule on some checked column, before and after; after is 0
        unless a single group is left (the whole file fails).
    merged : int
        Groups of the input absorbed by merging, ``groups_before - groups_after``.
    rounds : int
        Rounds of merging.
    """

    labels: np.ndarray
    columns: np.ndarray
    groups_before: int
    groups_after: int
    failing_before: int
    failing_after: int
    merged: int
    rounds: int


def _failing(codes: np.ndarray, X: np.ndarray, rows: np.ndarray, p: float) -> np.ndarray:
    """The group codes among ``codes[rows]`` failing the p % rule on some column of X."""
    if rows.size == 0:
        return np.empty(0, dtype=np.intp)
    r = dominance(codes[rows], X[rows], n=2, k=100.0, p=p)
    return r.groups[r.p_fail.any(axis=1)].astype(np.intp)


def repair_dominance(
    labels: np.ndarray,
    X: np.ndarray,
    p: float = 10.0,
    *,
    Z: np.ndarray | None = None,
) -> DominanceRepair:
    """Merge groups failing the p % rule with their nearest groups until none fails.

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        The partition (any integer labels).
    X : array_like, shape (n, d)
        The records' values, finite. Columns with a negative value are not contributions
        and are not checked (they still place the centroids).
    p : float, default 10
        Precision of the p % rule in percent, p > 0.
    Z : array_like, shape (n, d'), optional
        The scale distances between centroids are measured on; default: X standardized
        (zero mean, unit variance per column).

    Returns
    -------
    DominanceRepair

    Raises
    ------
    DataError
        Mismatched shapes, non-finite values.
    ParameterError
        ``p`` not positive.

    Examples
    --------
    The first group's 100 is estimated within 10 % by its 10 (the rest, 9, is below 10); it
    joins the nearest group (centroid 41 against 11), and the rule then holds:

    >>> X = [[100.0], [10.0], [9.0], [11.0], [12.0], [10.0], [40.0], [41.0], [42.0]]
    >>> r = repair_dominance([0, 0, 0, 1, 1, 1, 2, 2, 2], X, p=10)
    >>> r.labels.tolist(), r.failing_before, r.failing_after
    ([0, 0, 0, 1, 1, 1, 0, 0, 0], 1, 0)
    """
    x = np.asarray(X, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    lab = np.asarray(labels)
    if x.ndim != 2 or lab.shape != (x.shape[0],) or x.shape[0] == 0:
        raise DataError("labels must give one group per record of X (n,) and X be (n, d)")
    if not np.isfinite(x).all():
        raise DataError("X holds NaN or infinite values; the p % rule needs every value")
    if not np.isfinite(p) or p <= 0:
        raise ParameterError("p must be a positive percentage", field="p")
    z = standardize(x)[0] if Z is None else np.asarray(Z, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] != x.shape[0]:
        raise DataError("Z must have one row per record of X")
    _, first, codes = np.unique(lab, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # number groups in order of first appearance
    codes = order[codes.ravel()]
    g0 = int(codes.max()) + 1
    magnitudes = (x >= 0).all(axis=0)
    xm = x[:, magnitudes]
    if xm.shape[1] == 0:
        return DominanceRepair(codes, magnitudes, g0, g0, 0, 0, 0, 0)
    failing = _failing(codes, xm, np.arange(x.shape[0]), p)
    before = int(failing.size)
    rounds = 0
    g = g0
    while failing.size and g > 1:
        rounds += 1
        counts = np.bincount(codes, minlength=g).astype(np.float64)
        sums = np.zeros((g, z.shape[1]))
        np.add.at(sums, codes, z)
        centroids = sums / counts[:, None]
        _, near = cKDTree(centroids).query(centroids[failing], k=2)
        # the nearest other group: the first neighbour that is not the group itself
        other = np.where(near[:, 0] == failing, near[:, 1], near[:, 0])
        graph = coo_matrix((np.ones(failing.size), (failing, other)), shape=(g, g))
        g, component = connected_components(graph, directed=False)
        # renumber the components in order of their smallest old group: untouched groups
        # keep their relative order
        smallest = np.full(g, g0, dtype=np.intp)
        np.minimum.at(smallest, component, np.arange(component.size))
        rank = np.argsort(np.argsort(smallest))
        component = rank[component]
        codes = component[codes]
        sizes = np.bincount(component, minlength=g)
        grown = np.flatnonzero(sizes > 1)
        failing = _failing(codes, xm, np.flatnonzero(np.isin(codes, grown)), p)
    return DominanceRepair(
        labels=codes,
        columns=magnitudes,
        groups_before=g0,
        groups_after=g,
        failing_before=before,
        failing_after=int(failing.size),
        merged=g0 - g,
        rounds=rounds,
    )
