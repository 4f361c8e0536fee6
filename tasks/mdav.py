"""MDAV-generic microaggregation (Domingo-Ferrer & Torra 2005), as surveyed in the PS paper.

References
----------
[1] J. Domingo-Ferrer, V. Torra, "Ordinal, continuous and heterogeneous k-anonymity through
    microaggregation", Data Min. Knowl. Disc. 11 (2005) 195-212 (MDAV-generic).
[2] Pairwise systematic microaggregation paper (``../shared/papers``), section IV: "MDAV-generic
    ... the threshold 2k is altered to 3k".
"""

from __future__ import annotations

import numpy as np

from ._validation import check_k, check_matrix, standardize


def mdav_groups_reference(Z: np.ndarray, k: int) -> np.ndarray:
    """Straightforward numpy MDAV-generic on already-validated data.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        Records (usually standardized).
    k : int
        Minimum group size, 2 <= k <= n.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Group index of every record, groups numbered in order of creation.

    Memory is O(n d): distances are computed to one point at a time, never all pairs.
    Ties (equal distances) go to the lowest remaining row index, as ``argmax`` / a stable
    partial sort would give.
    """
    n = Z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)
    group = 0

    def take_group(center_row: int) -> None:
        nonlocal remaining, group
        pts = Z[remaining]
        d2 = ((pts - Z[center_row]) ** 2).sum(axis=1)
        # k nearest (the centre itself has distance 0); stable order for ties.
        nearest = np.argsort(d2, kind="stable")[:k]
        labels[remaining[nearest]] = group
        group += 1
        keep = np.ones(remaining.size, dtype=bool)
        keep[nearest] = False
        remaining = remaining[keep]

    def furthest_from(point: np.ndarray) -> int:
        pts = Z[remaining]
        return int(remaining[np.argmax(((pts - point) ** 2).sum(axis=1))])

    while remaining.size >= 3 * k:  # [2] two groups per step while >= 3k remain
        centroid = Z[remaining].mean(axis=0)
        r = furthest_from(centroid)
        s = furthest_from(Z[r])
        take_group(r)
        take_group(s)
    if remaining.size >= 2 * k:  # [2] between 2k and 3k-1: one group around r, rest together
        r = furthest_from(Z[remaining].mean(axis=0))
        take_group(r)
    labels[remaining] = group  # fewer than 2k left: one last group of size k..2k-1
    return labels


def group_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Replace every record by the mean of its group.

    Shapes: X (n, d), labels (n,) with values 0..g-1 -> (n, d).
    """
    counts = np.bincount(labels)
    sums = np.zeros((counts.size, X.shape[1]))
    np.add.at(sums, labels, X)
    return (sums / counts[:, None])[labels]


def mdav(X: np.ndarray, k: int, *, columns: list[str] | None = None) -> np.ndarray:
    """MDAV-generic microaggregation of ``X`` on standardized data.

    Groups are formed on the columns standardized to zero mean and unit population variance;
    the released values are the group centroids in the original units.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Numeric records, no missing values.
    k : int
        Minimum group size (2 <= k <= n). Every group has between k and 2k-1 records.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        The group of every record; ``group_means(X, labels)`` is the masked file.
    """
    X = check_matrix(X, columns=columns)
    k = check_k(k, X.shape[0])
    Z, _, _ = standardize(X)
    return mdav_groups_reference(Z, k)
