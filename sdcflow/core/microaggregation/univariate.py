"""Optimal univariate microaggregation: a shortest path over the sorted values [1].

For one variable, some partition of least SSE into groups of at least k records consists of
groups of consecutive values in sorted order [1], each of k..2k-1 records [3] (a group of
2k or more splits into two groups, each of at least k, without raising its SSE; two groups
that overlap in sorted order can exchange values without raising SSE). So the optimum is a
shortest path in the graph whose nodes are the positions 0..n of the sorted file and whose
arcs ``i -> j`` (k <= j - i <= 2k - 1) cost the SSE of the values ``i..j-1`` [1]: dynamic
programming in O(n k) time.

Each arc's cost is the group's sum of squared deviations, accumulated by Welford's update [2]
while the group grows backwards from its last value: the prefix-sum form
``sum v^2 - (sum v)^2 / m`` loses every digit of a small group's SSE once the prefix sums are
large (a million standardized values: prefix sums near 1e6, group SSEs near 1e-10).

References
----------
[1] S.L. Hansen, S. Mukherjee, "A polynomial algorithm for optimal univariate
    microaggregation", IEEE Transactions on Knowledge and Data Engineering 15(4) (2003)
    1043-1044, doi:10.1109/TKDE.2003.1209020.
[2] B.P. Welford, "Note on a method for calculating corrected sums of squares and products",
    Technometrics 4(3) (1962) 419-420, doi:10.1080/00401706.1962.10490022.
[3] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
    statistical disclosure control", IEEE Transactions on Knowledge and Data Engineering
    14(1) (2002) 189-201, doi:10.1109/69.979982: optimal groups have fewer than 2k records.
"""

from __future__ import annotations

import numpy as np

from sdcflow.core.jit import cached_njit
from sdcflow.core.validation import check_k, check_matrix
from sdcflow.errors import ParameterError


@cached_njit(nogil=True)
def _shortest_path(v: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Group sizes of the optimal partition of the sorted values ``v`` (n,), and its SSE.

    ``cost[j]`` is the least SSE of the first j values split into groups of k..2k-1
    consecutive values [1]; ``size[j]`` the size of the last group on that path.
    """
    n = v.shape[0]
    cost = np.full(n + 1, np.inf)
    size = np.zeros(n + 1, dtype=np.int64)
    cost[0] = 0.0
    for j in range(k, n + 1):
        # the group v[i..j-1] grows backwards from v[j-1]; Welford's running mean and SSE [2]
        mean = 0.0
        sse = 0.0
        for m in range(1, min(2 * k - 1, j) + 1):
            x = v[j - m]
            delta = x - mean
            mean += delta / m
            sse += delta * (x - mean)  # [2] M2_m = M2_{m-1} + (x - mean_{m-1})(x - mean_m)
            if m >= k:
                c = cost[j - m] + sse  # [1] arc (j - m) -> j
                if c < cost[j]:  # strict: on ties the smaller group wins (deterministic)
                    cost[j] = c
                    size[j] = m
    # walk the path back from n: the group sizes, last group first
    sizes = np.empty(n // k, dtype=np.int64)
    g = 0
    j = n
    while j > 0:
        sizes[g] = size[j]
        j -= size[j]
        g += 1
    return sizes[:g][::-1].copy(), cost[n]


def univariate_groups(z: np.ndarray, k: int) -> np.ndarray:
    """Optimal univariate microaggregation of already-validated values.

    Parameters
    ----------
    z : ndarray of shape (n,) or (n, 1), float64
        Finite values.
    k : int
        Minimum group size, 2 <= k <= n.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Group of every value, groups numbered in increasing order of their values; every
        group has k..2k-1 values and the SSE is the least of any partition into groups of at
        least k [1].

    Notes
    -----
    O(n log n) for the sort plus O(n k) for the shortest path; O(n) memory. Equal values are
    ordered by row (stable sort), so the labels are deterministic.
    """
    z = np.asarray(z, dtype=np.float64).reshape(-1)
    order = np.argsort(z, kind="stable")
    sizes, _ = _shortest_path(np.ascontiguousarray(z[order]), int(k))
    labels = np.empty(z.size, dtype=np.int64)
    labels[order] = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    return labels


def optimal_sse(z: np.ndarray, k: int) -> float:
    """The least SSE of any partition of the values ``z`` (n,) into groups of at least k [1]
    (2 <= k <= n; finite values)."""
    v = np.sort(np.asarray(z, dtype=np.float64).reshape(-1), kind="stable")
    return float(_shortest_path(np.ascontiguousarray(v), int(k))[1])


def univariate(X: np.ndarray, k: int, *, columns: list[str] | None = None) -> np.ndarray:
    """Optimal microaggregation of one variable (Hansen and Mukherjee [1]).

    Parameters
    ----------
    X : array-like of shape (n,) or (n, 1)
        One numeric variable, no missing values.
    k : int
        Minimum group size (2 <= k <= n). Every group has between k and 2k-1 records.
    columns : list of str, optional
        Column name, used in error messages only.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        The group of every record; ``group_means(X, labels)`` is the masked file.

    Raises
    ------
    InputError
        Non-numeric or non-finite values, k not an integer in 2..n, or more than one column
        (``ParameterError``: optimal microaggregation is polynomial for one variable only).
    """
    X = check_matrix(X, columns=columns)
    if X.shape[1] != 1:
        raise ParameterError(
            f"univariate microaggregation takes one variable, got {X.shape[1]}; mask each "
            "variable as its own block (blocks: [[a], [b], ...]) or use mdav for several"
        )
    k = check_k(k, X.shape[0])
    return univariate_groups(X[:, 0], k)
