"""The optimal microaggregation of a small file by enumeration: the independent reference.

Every partition of the records into groups of k..2k-1 records is enumerated (the record with
the lowest index still unassigned, with every choice of companions); the least SSE wins. A
partition into groups of k or more never needs a group of 2k or more (it splits into two groups
of at least k without raising the SSE), so this is also the optimum over groups of at least k.
Feasible up to about 10 records.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np


def group_sse(Z: np.ndarray, rows: tuple[int, ...]) -> float:
    """SSE of one group: squared distances to its centroid. Shapes: Z (n, d)."""
    P = Z[list(rows)]
    return float(((P - P.mean(axis=0)) ** 2).sum())


def optimal_sse(Z: np.ndarray, k: int) -> tuple[float, list[tuple[int, ...]]]:
    """Least SSE over all partitions of the rows of Z (n, d) into groups of k..2k-1.

    Returns the SSE and one optimal partition (a list of row tuples).
    """
    n = Z.shape[0]
    best: list = [np.inf, []]

    def extend(left: tuple[int, ...], groups: list[tuple[int, ...]], cost: float) -> None:
        if cost >= best[0]:
            return
        if not left:
            best[0], best[1] = cost, list(groups)
            return
        first, rest = left[0], left[1:]
        for size in range(k, 2 * k):
            if size > len(left) or 0 < len(left) - size < k:
                continue
            for others in combinations(rest, size - 1):
                group = (first, *others)
                remaining = tuple(r for r in rest if r not in others)
                extend(remaining, [*groups, group], cost + group_sse(Z, group))

    extend(tuple(range(n)), [], 0.0)
    return best[0], best[1]


def partition_sse(Z: np.ndarray, labels: np.ndarray) -> float:
    """SSE of a labelled partition, group by group (independent of the package's code)."""
    return sum(group_sse(Z, tuple(np.flatnonzero(labels == g))) for g in np.unique(labels))
