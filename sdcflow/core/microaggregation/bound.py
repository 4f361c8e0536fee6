"""A provable lower bound on the SSE of every microaggregation partition with groups >= k.

Notation: Z the n records (the scale the loss is measured on), ``d(x, y) = ||x - y||^2``,
``S_m(x)`` the sum of d(x, y) over the m nearest other records y of x (duplicates count; x
itself does not), P any partition of the records into groups of at least k.

**The pair identity.** A group G of g records with centroid c has
``SSE_G = sum_{x in G} ||x - c||^2 = (1/g) sum_{pairs {x, y} in G} d(x, y)
= (1/(2g)) sum_{x in G} sum_{y in G} d(x, y)`` [1].

**Bound 1 (nearest neighbours).** ``SSE(P) >= (1/(2k)) sum_x S_{k-1}(x)``.
Proof. In ``(1/(2g)) sum_{x in G} sum_{y in G, y != x} d(x, y)`` the g - 1 partners of x are
g - 1 distinct other records, so their sum is at least ``S_{g-1}(x)``: SSE_G >= sum_{x in G}
S_{g-1}(x) / (2g). The factor 1/(2g) is smaller than 1/(2k) when g > k, so a second step is
needed (the issue's sketch omits it): ``m -> S_m(x) / (m + 1)`` is non-decreasing, since the
(m+1)-th nearest distance ``d_{m+1}`` is at least each of the first m, so
``(m + 1) S_{m+1} = (m + 1) S_m + (m + 1) d_{m+1} >= (m + 1) S_m + S_m = (m + 2) S_m``.
Hence ``S_{g-1}(x) / g >= S_{k-1}(x) / k`` for g >= k, and summing over groups gives the
bound. The same monotonicity shows that the suggested tightening ``min over g in [k, 2k-1]
of S_{g-1}(x) / (2g)`` is attained at g = k: it equals bound 1 and gains nothing.

**Bound 2 (fractional (k-1)-cover, a Lagrangian dual).** For every real vector u (n,),
``SSE(P) >= (1/k) [ (k - 1) sum_x u_x - sum_{pairs {x, y}} max(0, u_x + u_y - d(x, y)) ]``.
Proof. Give every pair inside a group G of g records the weight ``w = (k-1)/(g-1)`` (in
(0, 1] as g >= k) and every other pair 0. Then every record has weights summing to k - 1,
and ``(1/g) >= (1/k) (k-1)/(g-1)`` (equivalent to g >= k) gives
``SSE(P) = sum_G (1/g) sum_{pairs in G} d >= (1/k) sum_pairs w d``. Now
``sum_pairs w d = sum_pairs w (d - u_x - u_y) + sum_x u_x (sum of x's weights)
= sum_pairs w (d - u_x - u_y) + (k - 1) sum_x u_x``, and with 0 <= w <= 1 each term
``w (d - u_x - u_y) >= -max(0, u_x + u_y - d)``. This is weak duality for the linear
relaxation "weights in [0, 1], k - 1 per record" [2]; u = 0 gives 0, a good u gives a
bound above bound 1 (on Census and EIA, k = 3 to 10: 13-21 % above).

*Computing it from K nearest neighbours only.* With ``r_K(x)`` the squared distance to x's
K-th nearest neighbour, cap ``u_x <= r_K(x) / 2``. A pair {x, y} where neither is among the
other's K nearest has ``d(x, y) >= max(r_K(x), r_K(y)) >= u_x + u_y``: its term is 0, so the
sum runs over the pairs of the K-nearest-neighbour graph E alone, exactly. u is found by
coordinate ascent: for fixed other coordinates the bound is concave and piecewise linear in
``u_x`` with slope ``(k - 1) - #{y : u_x > d(x, y) - u_y}``, maximal at the (k-1)-th smallest
``d(x, y) - u_y`` over x's neighbours in E (clipped to [0, r_K(x)/2]); a few sweeps. Any u
is valid, so the ascent need not converge.

**Bound 3 (one variable: the optimum).** With d = 1 the least SSE of any partition into
groups of at least k is computed exactly, by the shortest path of Hansen and Mukherjee [3]
(:mod:`~sdcflow.core.microaggregation.univariate`: some optimal partition has groups of
consecutive sorted values of k..2k-1 records, and the path runs over all of those), so the
optimum itself is the bound: a release of the univariate method has ``IL / bound`` 1 up to
rounding, instead of bound 1's and 2's looser figure (Census AFNLWGT, k = 4: 1.54).

:func:`sse_lower_bound` returns the largest of the bounds, times ``1 - 1e-9`` to cover the
rounding of the sums (far smaller than that, relative to them). It holds for every
partition into groups of at least k -- MDAV's, PS's, refined, and the optimum -- so the
information loss of the optimum lies in ``[bound, IL]``: ``IL / bound`` is how far, at most,
a release is from optimal.
Exact nearest neighbours cost a KD-tree query; in high dimension on large files that can take
longer than the masking itself (``docs/benchmarks/``, section "MDAV and PS"), hence the
CPU budget.

References
----------
[1] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
    statistical disclosure control", IEEE Transactions on Knowledge and Data Engineering
    14(1) (2002) 189-201, doi:10.1109/69.979982 (within-group SSE, groups of k..2k-1).
[2] A. Schrijver, "Combinatorial Optimization: Polyhedra and Efficiency", Springer (2003),
    Vol. A, Part III, nonbipartite matching and covering (b-edge covers and the linear
    relaxations of such problems).
[3] S.L. Hansen, S. Mukherjee, "A polynomial algorithm for optimal univariate
    microaggregation", IEEE Transactions on Knowledge and Data Engineering 15(4) (2003)
    1043-1044, doi:10.1109/TKDE.2003.1209020.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sdcflow.core.jit import cached_njit
from sdcflow.core.microaggregation.neighbours import BudgetExceeded, exact_neighbours
from sdcflow.core.microaggregation.univariate import optimal_sse

SWEEPS = 10  # coordinate-ascent sweeps for bound 2 (it changes little after five)
SAFETY = 1.0 - 1e-9  # absorbs the rounding of the sums


@dataclass(frozen=True)
class LowerBound:
    """A lower bound on the SSE of any partition into groups of at least k.

    Attributes
    ----------
    sse : float or None
        The bound (the larger of the two, times ``SAFETY``); None when not computed.
    nearest_neighbour, dual : float or None
        Bound 1 and bound 2 of the module docstring.
    neighbours : int
        K, nearest neighbours used by bound 2.
    seconds : float
        CPU seconds spent.
    status : str
        ``"ok"``, or why there is no bound (CPU budget exceeded).
    """

    sse: float | None
    nearest_neighbour: float | None
    dual: float | None
    neighbours: int
    seconds: float
    status: str


@cached_njit(nogil=True)
def _ascent(adj_ptr, adj_idx, adj_d2, cap, k, sweeps):
    """Coordinate ascent on bound 2: u_x <- (k-1)-th smallest d(x,y) - u_y, in [0, cap_x]."""
    n = cap.shape[0]
    u = np.zeros(n)
    width = 0
    for x in range(n):
        width = max(width, adj_ptr[x + 1] - adj_ptr[x])
    buf = np.empty(width)
    for _ in range(sweeps):
        for x in range(n):
            m = 0
            for p in range(adj_ptr[x], adj_ptr[x + 1]):
                buf[m] = adj_d2[p] - u[adj_idx[p]]
                m += 1
            v = np.sort(buf[:m])[k - 2]  # the (k-1)-th smallest: slope changes sign there
            u[x] = min(max(v, 0.0), cap[x])
    return u


def _dual_bound(idx: np.ndarray, d2: np.ndarray, k: int, sweeps: int) -> float:
    """Bound 2 from exact K-nearest-neighbour lists ``idx``/``d2`` (n, K); see the docstring."""
    n, K = idx.shape
    src = np.repeat(np.arange(n, dtype=np.int64), K)
    a, b = np.minimum(src, idx.ravel()), np.maximum(src, idx.ravel())
    pairs, first = np.unique(a * np.int64(n) + b, return_index=True)  # the graph E, each once
    ea, eb, ed = pairs // n, pairs % n, d2.ravel()[first]
    # both directions, grouped by record (CSR)
    tail = np.concatenate([ea, eb])
    head = np.concatenate([eb, ea])
    dist = np.concatenate([ed, ed])
    order = np.argsort(tail, kind="stable")
    ptr = np.searchsorted(tail[order], np.arange(n + 1)).astype(np.int64)
    cap = d2[:, K - 1] / 2.0  # u_x <= r_K(x) / 2: pairs outside E contribute nothing
    u = _ascent(ptr, head[order], dist[order], cap, k, sweeps)
    penalty = np.maximum(0.0, u[ea] + u[eb] - ed).sum()
    return float(((k - 1) * u.sum() - penalty) / k)


def sse_lower_bound(
    Z: np.ndarray, k: int, *, seconds: float | None = None, neighbours: int | None = None
) -> LowerBound:
    """Lower bound on the SSE of every partition of ``Z`` into groups of at least k.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        The records on the scale the SSE is measured on (standardized for IL), finite.
    k : int
        Minimum group size, 2 <= k <= n.
    seconds : float, optional
        CPU budget of the nearest-neighbour search; beyond it the result has ``sse=None`` and
        a ``status`` saying so.
    neighbours : int, optional
        K for bound 2 (default 2k, at most n - 1).

    Returns
    -------
    LowerBound
        Valid for any partition into groups of at least k (module docstring). With n < 2k
        the only such partition is one group, and the bound is its SSE; with one variable
        (d = 1) it is the optimum (bound 3).
    """
    t0 = time.process_time()
    n = Z.shape[0]
    if n < 2 * k:  # one group is the only partition
        sse = float(((Z - Z.mean(axis=0)) ** 2).sum()) * SAFETY
        return LowerBound(sse, sse, sse, 0, time.process_time() - t0, "ok")
    K = min(neighbours if neighbours is not None else 2 * k, n - 1)
    K = max(K, k - 1)
    try:
        idx, d2 = exact_neighbours(Z, K, seconds=seconds)
    except BudgetExceeded as e:
        return LowerBound(None, None, None, K, time.process_time() - t0, f"not computed: {e}")
    nn = float(np.sort(d2, axis=1)[:, : k - 1].sum() / (2 * k))  # bound 1
    dual = _dual_bound(idx, d2, k, SWEEPS)  # bound 2
    best = max(nn, dual)
    if Z.shape[1] == 1:  # bound 3: the optimum itself
        best = max(best, optimal_sse(Z[:, 0], k))
    return LowerBound(
        sse=best * SAFETY,
        nearest_neighbour=nn,
        dual=dual,
        neighbours=K,
        seconds=time.process_time() - t0,
        status="ok",
    )
