"""Fuzzy microaggregation (Algorithm 1 of [1]_) with exact anonymity guarantees, and its
constrained variant that edits and masks in one step ([1]_ section 3.3).

Algorithm 1 of [1]_: cluster with FCM (``m1``) or entropy FCM (``lambda1``); recompute every
record's memberships to the centres with ``m2`` (``lambda2``); replace the record by a centre
drawn from that membership distribution. With the constrained clustering of ``fcm.py`` every
centre, hence every released record, satisfies the linear edit rules, whether or not the input
did. Clustering runs on standardized columns; the rules are carried over to standardized
coordinates, so the centre projection is Euclidean there (``fcm.py`` derives why that is the
constrained optimum), and released centres are mapped back to original units.

Anonymity ([1]_ Prop. 8 only gives it "for large m2"), made exact:

``probabilistic_k_anonymity``
    Every published centre's *expected size* (the column sum of the draw probabilities) is at
    least ``k``. Reached as Domingo-Ferrer and Torra's FCM microaggregation does ([2]_,
    surveyed in [3]_ section IV): start with ``c = floor(n/k)`` and small ``m``; while some
    cluster is below ``k``, first raise the fuzziness of the draw (``m2 - 1`` doubled, or
    ``lambda2`` halved, up to ``escalations`` times), then lower ``c`` — keep the centres that
    hold ``>= k``, at most half of them (the largest), and re-run FCM warm-started from them
    for at most ``WARM_MAX_ITER`` iterations; ``c = 1`` always succeeds. Once at most half the
    clusters are under-filled, they are merged into their nearest clusters instead
    (memberships add; see ``_merge_underfilled``): refitting would give isolated records a
    centre of their own again at every ``c``. Then recurse into every cluster whose expected
    size is ``>= 2k``: its records, weighted by their membership to it, are clustered again
    with the same rule, and a record drawn to the parent draws again among the children. The
    draw probability of a leaf is the product along the path, so leaf expected sizes sum to
    the parent's and every leaf holds ``>= k`` in expectation; all of them sum to ``n``.
``k_anonymity``
    Every published centre actually used is used by ``>= k`` records. The draw is constrained:
    after a free draw, the used centre with the fewest (``< k``) records is closed and those
    records are redrawn from their memberships restricted to the still-open centres
    (renormalized); repeat until every open used centre holds ``>= k`` (terminates: each round
    closes a centre, and one centre holds all ``n >= k``). A record with no membership left on
    open centres goes to its nearest open centre (counted in ``details``). Released values
    stay the drawn centres (Algorithm 1): with very few records everyone can end on one FCM
    centre that is not their mean, and IL can exceed 100 although the guarantee holds.
    A record whose distribution ``u`` is restricted to the open set ``O`` is drawn from
    ``u|O``; the total-variation distance ``TV(u, u|O) = 1 - sum_{i in O} u_i`` is reported per
    run (mean over records, ``assignment_tv_mean``); at ``c = n/k`` it moves a noticeable share
    of the assignment probability to neighbouring centres (Monte Carlo figures in
    ``docs/benchmarks/``).
``both``
    The tree of ``probabilistic_k_anonymity`` followed by the constrained draw. The expected
    sizes reported (all >= k) are those of the membership distribution; the constrained draw
    then moves the probability it reports as ``assignment_tv_mean``, less than under
    ``k_anonymity`` because the expected sizes are already >= k.

The draw distribution. Each record keeps the smallest set of its largest draw memberships
holding ``mass`` (default 0.999) of its total, renormalized (``mass = 1`` keeps all of them);
above ``n c = 4e6`` they are moreover taken over its ``n_neighbors`` nearest centres only, with
the same rule (``fcm.py``). The expected sizes are computed from, and the guarantee holds
exactly for, this distribution that is actually drawn from; a child of the recursion sees only
the records that can be drawn to its parent, which keeps the search fast. Truncation is
faithful to FCM only for ``m1`` and ``m2`` up to about ``1 + 2/d`` (``fcm.py``); the
recommended setting at scale is ``m1 = 1.1`` with ``m2`` just above it, or fewer
quasi-identifiers per block. Each round of the c search is a warm-started FCM run plus one
KD-tree query of the records.

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074.
.. [2] J. Domingo-Ferrer and V. Torra, "Fuzzy microaggregation for microdata protection",
   Journal of Advanced Computational Intelligence and Intelligent Informatics 7(2),
   pp. 153-159, 2003.
.. [3] M. E. Kabir, H. Wang and Y. Zhang, "A pairwise systematic microaggregation for
   statistical disclosure control", Proc. 10th IEEE Int. Conf. on Data Mining (ICDM 2010),
   pp. 266-273, 2010, doi:10.1109/ICDM.2010.111.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np
from scipy import sparse

from sdcflow.core.fuzzy import _kernels as _k
from sdcflow.core.fuzzy.fcm import Fuzziness, check_fuzziness, fuzzy_c_means
from sdcflow.core.jit import cached_njit
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.own_units import aimed_bounds, polish_onto_rules
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.core.parallel import threads
from sdcflow.core.validation import (
    check_k,
    check_matrix,
    check_random_state,
    check_resolution,
    destandardize,
    standardize,
)
from sdcflow.errors import ParameterError

Guarantee = Literal["probabilistic_k_anonymity", "k_anonymity", "both"]
DENSE_MEMBERSHIPS = 4e6  # n * c up to which draw memberships are stored densely
# Search over c: each round keeps at most C_SHRINK of the centres and warm-started fits run at
# most WARM_MAX_ITER iterations: keeping half halves the rounds at little cost in IL, longer
# warm fits let centres drift back to outlying records (sweeps in docs/benchmarks/).
C_SHRINK = 0.5
WARM_MAX_ITER = 10
SCREEN_ITER = 20  # screening keeps the best of cheap restarts; see docs/benchmarks/
# A failed round with at most this share of its clusters under-filled merges them (see
# _merge_underfilled) instead of lowering c again, so that a few outliers cannot pull the
# search down to one centre (sweep in docs/benchmarks/). At c = n/k about half the
# clusters are under-filled, so c is usually lowered once first.
MERGE_SHARE = 0.5


@dataclass
class FuzzyMicroaggregationResult:
    """Released file and its bookkeeping.

    Attributes
    ----------
    masked : ndarray of shape (n, d)
        Every record replaced by its drawn centre, original units.
    labels : ndarray of shape (n,), int
        Index of the published centre each record was drawn to.
    centers : ndarray of shape (C, d)
        Published centres (original units).
    expected_sizes : ndarray of shape (C,)
        Sum over records of the probability of being drawn to each centre (sums to n).
    realized_sizes : ndarray of shape (C,)
        Records actually drawn to each centre.
    details : dict
        Summaries for the manifest (never raw values).
    draw_probabilities : sparse CSR matrix of shape (n, C) or None
        Every record's draw distribution over the centres (the partition's own arrays, rows
        summing to 1; column sums ``expected_sizes``). Under ``k_anonymity`` / ``both`` it is
        the free draw, before under-filled centres were closed and their records redrawn.
    """

    masked: np.ndarray
    labels: np.ndarray
    centers: np.ndarray
    expected_sizes: np.ndarray
    realized_sizes: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)
    draw_probabilities: sparse.csr_matrix | None = None


@dataclass
class _Node:
    """One fuzzy clustering in the recursion: records ``rows`` (global indices) with weights
    ``w``, centres ``V`` (standardized units) and draw memberships in COO form."""

    rows: np.ndarray
    w: np.ndarray
    V: np.ndarray
    coo_r: np.ndarray  # position in ``rows``
    coo_c: np.ndarray  # centre index
    coo_u: np.ndarray  # draw membership (not multiplied by w)
    expected: np.ndarray
    draw: Fuzziness
    children: dict[int, _Node] = field(default_factory=dict)
    # for a child: the parent's row positions of its rows, and their parent memberships
    parent_pos: np.ndarray | None = None
    factor: np.ndarray | None = None


def _draw_memberships(
    Z: np.ndarray, V: np.ndarray, fz: Fuzziness, s: _Search
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw memberships ([1]_ Algorithm 1 step 2) as COO ``(row, centre, u)``.

    Each record keeps the smallest set of its largest memberships holding ``s.mass`` of its
    total (``mass = 1``: all of them), renormalized: the distribution actually drawn from, on
    which the expected sizes are computed. Dense for ``n c <= 4e6``, else over each record's
    ``n_neighbors`` nearest centres (KD-tree).
    """
    m, lam, ent = fz.kernel_args()
    n, c = len(Z), len(V)
    if n * c <= DENSE_MEMBERSHIPS:
        U = _k.dense_memberships(Z, V, m, lam, ent)
        if s.mass >= 1.0:
            r, i = np.nonzero(U > 0.0)
            return r, i, U[r, i]
        return _k.truncate_rows(U, float(s.mass))
    from scipy.spatial import cKDTree

    Q = min(s.n_neighbors, c)
    _, nbr = cKDTree(V).query(Z, k=Q, workers=threads())
    nbr = np.ascontiguousarray(np.asarray(nbr).reshape(n, Q), dtype=np.int64)
    idx, val = _k.candidate_memberships(Z, V, nbr, m, lam, ent, s.mass)
    r, j = np.nonzero(idx >= 0)
    return r, idx[r, j], val[r, j]


def _merge_underfilled(
    X: np.ndarray,
    w: np.ndarray,
    V: np.ndarray,
    r: np.ndarray,
    i: np.ndarray,
    u: np.ndarray,
    expected: np.ndarray,
    s: _Search,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merge under-filled clusters, smallest first, into the cluster of the nearest centre
    until every expected size is >= k.

    Memberships of merged clusters add, so the expected sizes add and still sum to the node's
    weight: the guarantee is exact for the merged distribution, which is the one drawn from.
    A cluster that absorbed others is published at the mean of its records weighted by their
    draw probability (the value minimizing the expected squared error of its records; on the
    edit rules by projection), the others keep their FCM centre. Terminates: every merge
    removes a cluster, and one cluster holds the whole node (>= 2k, or the root's n >= k).
    """
    c = len(V)
    E = expected.astype(np.float64).copy()
    alive = np.ones(c, dtype=bool)
    into = np.arange(c)
    while True:
        small = np.flatnonzero(alive & (E < s.k))
        if small.size == 0 or alive.sum() == 1:
            break
        a = small[np.argmin(E[small])]
        others = np.flatnonzero(alive)
        others = others[others != a]
        b = others[np.argmin(((V[others] - V[a]) ** 2).sum(axis=1))]
        E[b] += E[a]
        E[a] = 0.0
        alive[a] = False
        into[into == a] = b
    new_id = np.cumsum(alive) - 1
    grown = np.zeros(c, dtype=bool)
    grown[into[~alive]] = True
    j = new_id[into[i]]
    # a record may hold memberships of two merged clusters: add them up
    key, inverse = np.unique(r * c + j, return_inverse=True)
    u2 = np.bincount(inverse.ravel(), weights=u)
    r2, i2 = key // c, key % c
    C = int(alive.sum())
    expected2 = np.bincount(i2, weights=w[r2] * u2, minlength=C)
    V2 = V[alive].copy()
    regrown = np.flatnonzero(grown[alive])
    if regrown.size:
        mass = w[r2] * u2
        sums = np.zeros((C, X.shape[1]))
        np.add.at(sums, i2, mass[:, None] * X[r2])
        V2[regrown] = sums[regrown] / expected2[regrown, None]
        if s.proj is not None:
            V2[regrown] = s.proj.project(V2[regrown])
    return V2, r2, i2, u2, expected2


def _escalate(fz: Fuzziness, step: int) -> Fuzziness:
    """Fuzzier draw: ``m2 - 1`` doubled or ``lambda2`` halved ``step`` times."""
    if fz.entropy:
        return Fuzziness(lam=fz.lam / 2.0**step)  # type: ignore[operator]
    return Fuzziness(m=1.0 + (fz.m - 1.0) * 2.0**step)  # type: ignore[operator]


def _build(Z: np.ndarray, rows: np.ndarray, w: np.ndarray, s: _Search, depth: int) -> _Node:
    """Cluster ``Z[rows]`` (weights ``w``) and, if asked, search c and m2 until every expected
    size is >= k ([2]_ via [3]_ section IV), then recurse into clusters of >= 2k."""
    X = np.ascontiguousarray(Z[rows])
    n_eff = float(w.sum())
    c = max(1, min(int(np.floor(n_eff / s.k + 1e-9)), int(np.count_nonzero(w))))
    init = None
    while True:
        fit = fuzzy_c_means(
            X,
            c,
            m=s.fz1.m,
            lam=s.fz1.lam,
            constraints=s.proj,
            sample_weight=w,
            restarts=1 if init is not None else s.restarts,
            # A warm start only adjusts centres that already fit: the search rounds need far
            # fewer iterations than a cold fit (m1 near 1 converges slowly to tol).
            max_iter=s.max_iter if init is None else min(s.max_iter, WARM_MAX_ITER),
            tol=s.tol,
            truncate=s.truncate,
            n_neighbors=s.n_neighbors,
            mass=s.mass,
            init=init,
            screen=s.screen,
            random_state=s.rng,
        )
        s.log["fcm_runs"] += 1
        if depth == 0:
            s.log["top_fit"] = fit
        V = fit.centers
        for step in range(s.escalations + 1 if s.probabilistic else 1):
            fz2 = _escalate(s.fz2, step)
            r, i, u = _draw_memberships(X, V, fz2, s)
            expected = np.bincount(i, weights=w[r] * u, minlength=c)
            if not s.probabilistic or expected.min() >= s.k or c == 1:
                break
        else:
            under = int(np.count_nonzero(expected < s.k))
            if under <= MERGE_SHARE * c:
                # A few under-filled clusters (isolated records FCM gives a centre of their
                # own at every c): merge them into their nearest clusters instead.
                V, r, i, u, expected = _merge_underfilled(X, w, V, r, i, u, expected, s)
                c = len(V)
                s.log["merged_clusters"] += under
                break
            # [3] section IV: lower c; keep the centres that hold >= k, warm start from them.
            # Sort keys are rounded so that sizes equal to rounding keep their index order.
            order = np.argsort(-np.round(expected, 9), kind="stable")
            keep = max(1, min(int(np.count_nonzero(expected >= s.k)), c - 1, int(c * C_SHRINK)))
            c = keep
            init = V[np.sort(order[:keep])]
            continue
        break
    if depth == 0:
        s.log["c_top"] = c
        s.log["draw_top"] = fz2.describe()
    s.log["draw_used"].append(fz2.lam if fz2.entropy else fz2.m)
    node = _Node(rows, w, V, r, i, u, expected, fz2)
    if s.probabilistic and depth < s.max_depth and c > 1:
        for ci in np.flatnonzero(expected >= 2 * s.k):
            sel = i == ci
            sub_rows, sub_u = r[sel], u[sel]
            child = _build(Z, rows[sub_rows], w[sub_rows] * sub_u, s, depth + 1)
            if len(child.V) > 1:
                child.parent_pos, child.factor = sub_rows, sub_u
                node.children[int(ci)] = child
    return node


def _flatten(
    node: _Node, leaves: list[np.ndarray], expected: list[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leaf distribution of every record of ``node`` as COO ``(row position, leaf, prob)``;
    appends the node's leaf centres and expected sizes to ``leaves`` / ``expected``."""
    c = len(node.V)
    leaf_id = np.full(c, -1, dtype=np.int64)
    parts_r, parts_l, parts_p = [], [], []
    for ci in range(c):
        if ci in node.children:
            continue
        leaf_id[ci] = len(leaves)
        leaves.append(node.V[ci])
        expected.append(float(node.expected[ci]))
    direct = leaf_id[node.coo_c] >= 0
    parts_r.append(node.coo_r[direct])
    parts_l.append(leaf_id[node.coo_c[direct]])
    parts_p.append(node.coo_u[direct])
    for _, child in node.children.items():
        cr, cl, cp = _flatten(child, leaves, expected)
        assert child.parent_pos is not None and child.factor is not None
        parts_r.append(child.parent_pos[cr])
        parts_l.append(cl)
        parts_p.append(cp * child.factor[cr])
    return np.concatenate(parts_r), np.concatenate(parts_l), np.concatenate(parts_p)


@cached_njit()
def _draw_csr(indptr, prob, rand):
    """Inverse-CDF draw of one entry per CSR row; returns the chosen entry positions."""
    n = indptr.size - 1
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        a, b = indptr[k], indptr[k + 1]
        total = 0.0
        for j in range(a, b):
            total += prob[j]
        target = rand[k] * total
        acc = 0.0
        pick = b - 1
        for j in range(a, b):
            acc += prob[j]
            if acc > target:
                pick = j
                break
        out[k] = pick
    return out


def _constrained_draw(
    indptr: np.ndarray,
    leaf: np.ndarray,
    prob: np.ndarray,
    labels: np.ndarray,
    centres: np.ndarray,
    Z: np.ndarray,
    k: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Close under-filled centres and redraw their records (module docstring)."""
    C = len(centres)
    counts = np.bincount(labels, minlength=C)
    # a centre's members in record order: those drawn first (a slice of the records sorted
    # by centre), then those redrawn to it; read only when the centre closes
    by_centre = np.argsort(labels, kind="stable")
    first = np.concatenate([[0], np.cumsum(counts)])
    joined: dict[int, list[int]] = {}
    open_ = np.ones(C, dtype=bool)
    still_open = C  # open_.sum(), kept as a count: summing at every pop is O(C^2)
    heap = [(int(counts[i]), int(i)) for i in np.flatnonzero((counts > 0) & (counts < k))]
    heapq.heapify(heap)
    closed = redrawn = fallback = 0
    tree: Any = None  # a cKDTree over the centres, built at the first fallback
    while heap:
        cnt, i = heapq.heappop(heap)
        if not open_[i] or cnt != counts[i] or not 0 < counts[i] < k:
            continue
        if still_open == 1:
            break
        open_[i] = False
        still_open -= 1
        closed += 1
        recs = by_centre[first[i] : first[i + 1]].tolist() + joined.pop(i, [])
        counts[i] = 0
        for rec in recs:
            a, b = indptr[rec], indptr[rec + 1]
            lv, pv = leaf[a:b], prob[a:b] * open_[leaf[a:b]]
            total = pv.sum()
            if total > 0.0:
                j = int(np.searchsorted(np.cumsum(pv), rng.random() * total, side="right"))
                new = int(lv[min(j, b - a - 1)])
                while not open_[new]:  # guard against rounding at the end of the cdf
                    j -= 1
                    new = int(lv[j])
            else:
                if tree is None:
                    from scipy.spatial import cKDTree

                    tree = cKDTree(centres)
                new = _nearest_open(tree, centres, open_, Z[rec])
                fallback += 1
            labels[rec] = new
            joined.setdefault(new, []).append(rec)
            counts[new] += 1
            redrawn += 1
            if 0 < counts[new] < k:
                heapq.heappush(heap, (int(counts[new]), new))
    # TV distance between each record's intended distribution and its restriction to the open
    # centres: the mass its distribution put on closed centres.
    on_closed = np.add.reduceat(prob * ~open_[leaf], indptr[:-1]) if len(prob) else np.zeros(0)
    return labels, {
        "closed_centres": int(closed),
        "redrawn_records": int(redrawn),
        "nearest_open_fallbacks": int(fallback),
        "assignment_tv_mean": float(on_closed.mean()) if on_closed.size else 0.0,
        "assignment_tv_max": float(on_closed.max()) if on_closed.size else 0.0,
    }


def _nearest_open(tree: Any, centres: np.ndarray, open_: np.ndarray, z: np.ndarray) -> int:
    """The open centre nearest to ``z`` (d,), the lowest index among equals: what a scan of
    every open centre gives, from the nearest centres the tree returns (``centres`` (C, d),
    ``open_`` (C,) with at least one True). A scan costs O(C) per redrawn record, and at ten
    million records C is two million."""
    C = len(centres)
    m = min(16, C)
    while True:
        dist, idx = tree.query(z, k=m)
        dist, idx = np.atleast_1d(dist), np.atleast_1d(idx)
        ok = open_[idx]
        if ok.any():
            # every centre as near as the nearest open one, up to the tree's rounding
            reach = dist[ok].min() * (1 + 1e-9) + 1e-300
            if m == C or dist[-1] > reach:
                cand = np.sort(idx[ok & (dist <= reach)])
                return int(cand[np.argmin(((centres[cand] - z) ** 2).sum(axis=1))])
        m = min(4 * m, C)


def _polish(V: np.ndarray, constraints: LinearConstraints, scale: np.ndarray) -> np.ndarray:
    """Centres ``V`` (C, d) moved once more in original units, with the metric of the
    standardized coordinates (weights ``1 / scale^2``), onto the equalities and the
    inequalities they break there, to remove the rounding of the back-transformation
    (:func:`~sdcflow.core.linear.own_units.polish_onto_rules`). A strict row is aimed
    inside at each centre's own magnitude: at the largest centre's and the scale, one
    giant firm moved centres of 11 to 40."""
    H = aimed_bounds(constraints, V)
    W = np.repeat((1.0 / scale**2)[None, :], len(V), axis=0)
    return constraints.snap_bounds(polish_onto_rules(V, W, constraints, H).values, H)


def _summary(a: np.ndarray) -> dict[str, Any]:
    """Distribution of centre sizes for the manifest: extremes, mean, quantiles and count."""
    levels = (1, 5, 25, 50, 75, 95, 99)
    q = np.quantile(a, [p / 100 for p in levels])
    return {
        "min": float(a.min()),
        "mean": float(a.mean()),
        "max": float(a.max()),
        "quantiles": {f"p{p}": float(v) for p, v in zip(levels, q, strict=True)},
        "centres": int(a.size),
    }


@dataclass
class FuzzyPartition:
    """A fitted fuzzy partition, ready for the random draw ([1]_ Algorithm 1, steps 1-2).

    Attributes
    ----------
    indptr : ndarray of shape (n + 1,)
        CSR row pointers: record ``j``'s draw distribution is ``leaf[indptr[j]:indptr[j+1]]``
        with probabilities ``prob[...]`` (summing to one).
    leaf, prob : ndarray of shape (nnz,)
    centers : ndarray of shape (C, d)
        Published centres, original units (on the edit rules when constrained).
    centers_std : ndarray of shape (C, d)
        The same in standardized units.
    Z : ndarray of shape (n, d)
        Standardized records (for the nearest-open-centre fallback of the constrained draw).
    expected_sizes : ndarray of shape (C,)
    k : int
    guarantee : str
    details : dict
        Summaries of the fit for the manifest.
    """

    indptr: np.ndarray
    leaf: np.ndarray
    prob: np.ndarray
    centers: np.ndarray
    centers_std: np.ndarray
    Z: np.ndarray
    expected_sizes: np.ndarray
    k: int
    guarantee: str
    details: dict[str, Any]


def draw_centres(
    partition: FuzzyPartition, random_state: int | np.random.Generator | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Draw every record's centre from its membership distribution ([1]_ Algorithm 1 step 3);
    under ``k_anonymity`` / ``both`` the constrained draw of the module docstring.

    Returns ``(labels (n,), info)`` where ``info`` summarizes the constrained draw (empty for
    the free draw).
    """
    rng = check_random_state(random_state)
    p = partition
    n = p.indptr.size - 1
    pick = _draw_csr(p.indptr, p.prob, rng.random(n))  # [1] Algorithm 1 step 3
    labels = p.leaf[pick].astype(np.int64)
    if p.guarantee in ("k_anonymity", "both"):
        return _constrained_draw(p.indptr, p.leaf, p.prob, labels, p.centers_std, p.Z, p.k, rng)
    return labels, {}


def fuzzy_microaggregation(
    X: np.ndarray,
    k: int,
    **kwargs: Any,
) -> FuzzyMicroaggregationResult:
    """Fuzzy (optionally constrained) microaggregation with an exact anonymity guarantee:
    :func:`fuzzy_partition` then :func:`draw_centres` with the same generator.

    Takes the parameters of :func:`fuzzy_partition`; returns a
    :class:`FuzzyMicroaggregationResult` whose ``details`` add the realized sizes and the
    constrained-draw figures to the partition's.
    """
    rng = check_random_state(kwargs.pop("random_state", None))
    part = fuzzy_partition(X, k, random_state=rng, **kwargs)
    labels, draw_info = draw_centres(part, rng)
    realized = np.bincount(labels, minlength=len(part.centers))
    used = realized[realized > 0]
    details = dict(part.details)
    details.update(
        {
            "realized_size": _summary(used),
            "published_centres": int(used.size),  # distinct centres some record was drawn to
            "published_centres_below_k": int(np.count_nonzero(used < part.k)),
            **draw_info,
        }
    )
    return FuzzyMicroaggregationResult(
        masked=part.centers[labels],
        labels=labels,
        centers=part.centers,
        expected_sizes=part.expected_sizes,
        realized_sizes=realized,
        details=details,
        # the partition's own CSR arrays: the probabilities are shared, not copied (scipy
        # narrows the indices to int32 when they fit, halving them)
        draw_probabilities=sparse.csr_matrix(
            (part.prob, part.leaf, part.indptr), shape=(labels.size, len(part.centers))
        ),
    )


def fuzzy_partition(
    X: np.ndarray,
    k: int,
    *,
    m1: float | None = None,
    m2: float | None = None,
    lambda1: float | None = None,
    lambda2: float | None = None,
    guarantee: Guarantee = "probabilistic_k_anonymity",
    constraints: LinearConstraints | None = None,
    columns: list[str] | None = None,
    restarts: int = 5,
    max_iter: int = 300,
    tol: float = 1e-4,
    truncate: bool | Literal["auto"] = "auto",
    n_neighbors: int = 32,
    mass: float = 0.999,
    escalations: int = 0,
    max_depth: int = 3,
    screen: int | None = SCREEN_ITER,
    fit: Fit | None = None,
    random_state: int | np.random.Generator | None = None,
) -> FuzzyPartition:
    """Fit the fuzzy partition of fuzzy (optionally constrained) microaggregation.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Quasi-identifiers, original units.
    k : int
        Anonymity parameter, 2 <= k <= n.
    m1, m2 : float, optional
        FCM fuzzifiers (> 1) for clustering and for the draw ([1]_ Algorithm 1).
    lambda1, lambda2 : float, optional
        Entropy-FCM parameters (> 0) instead of ``m1``, ``m2``.
    guarantee : {'probabilistic_k_anonymity', 'k_anonymity', 'both'}
        Which anonymity to make exact (module docstring).
    constraints : LinearConstraints, optional
        Edit rules over the columns of ``X``; released centres satisfy them ([1]_ section 3).
    columns : list of str, optional
        Names of the columns (for error messages).
    restarts, max_iter, tol, truncate, n_neighbors, mass
        Passed to :func:`sdcflow.core.fuzzy.fcm.fuzzy_c_means`.
    escalations : int
        How many times the draw fuzziness may be raised before ``c`` is lowered (default
        never: on heavy-tailed data a fuzzier draw sends ordinary records to outlying
        centres; ``methods.FuzzyParams`` has the figures).
    max_depth : int
        Recursion depth into clusters of expected size >= 2k.
    screen : int or None
        Restarts of a cold FCM fit are screened after this many iterations and only the
        best runs on (``fcm.fuzzy_c_means``); None runs every restart to convergence.
        Screening about halves the time of the whole method at a similar IL
        (``docs/benchmarks/``).
    fit : callable, optional
        ``fit(Z, settings, proj, rng) -> StandardizedFit``: how the standardized records are
        fitted; default :func:`fit_standardized` on the whole file. The fit within spatial
        cells of ``sdcflow.methods.fuzzy`` (``cell_size``) passes its own, which runs
        :func:`fit_standardized` cell by cell.
    random_state : None, int or numpy.random.Generator
        Randomness of the initializations and of the draw.

    Returns
    -------
    FuzzyPartition
    """
    X = check_matrix(X, columns=columns)
    n, d = X.shape
    k = check_k(k, n)
    fz1 = check_fuzziness(m1, lambda1, suffix="1")
    fz2 = check_fuzziness(m2, lambda2, suffix="2")
    if fz1.entropy != fz2.entropy:
        raise ParameterError(
            "use m1 with m2 (fuzzy c-means) or lambda1 with lambda2 (entropy fuzzy c-means), "
            "not a mix"
        )
    if guarantee not in ("probabilistic_k_anonymity", "k_anonymity", "both"):
        raise ParameterError(
            f"guarantee must be 'probabilistic_k_anonymity', 'k_anonymity' or 'both', got "
            f"{guarantee!r}"
        )
    rng = check_random_state(random_state)
    check_resolution(X, columns, what="fuzzy microaggregation")
    Z, mean, scale = standardize(X)
    cons = None if constraints is None or constraints.is_empty else constraints
    if cons is not None and (cons.A.shape[1] != d or cons.G.shape[1] != d):
        raise ParameterError(
            f"the edit rules are over {len(cons.columns)} columns but {d} are masked; restrict "
            "them to the masked columns"
        )
    proj = None
    if cons is not None:  # the rules in standardized coordinates x = mean + scale * z
        proj = PolyhedronProjector.from_constraints(cons, shift=mean, scale=scale)
    settings = FitSettings(
        k,
        fz1,
        fz2,
        int(restarts),
        int(max_iter),
        float(tol),
        truncate,
        int(n_neighbors),
        float(mass),
        int(escalations),
        int(max_depth),
        None if screen is None else int(screen),
        guarantee in ("probabilistic_k_anonymity", "both"),
    )
    fitted = (fit or fit_standardized)(Z, settings, proj, rng)
    part = finish_partition(Z, mean, scale, cons, fitted, settings, guarantee, restarts)
    if fitted.cells > 1 or fit is not None:
        part.details["cells"] = fitted.cells
    return part


Fit = Callable[
    [np.ndarray, "FitSettings", PolyhedronProjector | None, np.random.Generator],
    "StandardizedFit",
]


@dataclass(frozen=True)
class FitSettings:
    """The validated settings of one fit (:func:`fuzzy_partition`'s parameters), shared by
    every node of the recursion and by every spatial cell of ``sdcflow.methods.fuzzy``."""

    k: int
    fz1: Fuzziness
    fz2: Fuzziness
    restarts: int
    max_iter: int
    tol: float
    truncate: bool | Literal["auto"]
    n_neighbors: int
    mass: float
    escalations: int
    max_depth: int
    screen: int | None
    probabilistic: bool


@dataclass(frozen=True)
class _Search(FitSettings):
    """A fit's settings plus what every node of its recursion shares: the rules' projector,
    the generator and the log the nodes add to."""

    proj: PolyhedronProjector | None
    rng: np.random.Generator
    log: dict[str, Any]


@dataclass
class StandardizedFit:
    """A fitted partition in standardized units, before the back-transformation.

    Attributes
    ----------
    indptr : ndarray of shape (n + 1,)
        CSR rows: record ``j`` may be drawn to ``leaf[indptr[j]:indptr[j+1]]`` with
        probabilities ``prob[...]``.
    leaf, prob : ndarray of shape (nnz,)
    centers_std : ndarray of shape (C, d)
    expected : ndarray of shape (C,)
    log : dict
        ``fcm_runs``, ``merged_clusters``, ``c_top``, ``draw_top``, ``draw_used``,
        ``objective_top``, ``converged_top``, ``fcm_status_top``, ``truncation_top``.
    cells : int
        Spatial cells fitted separately (1: the whole file).
    """

    indptr: np.ndarray
    leaf: np.ndarray
    prob: np.ndarray
    centers_std: np.ndarray
    expected: np.ndarray
    log: dict[str, Any]
    cells: int = 1


def fit_standardized(
    Z: np.ndarray,
    settings: FitSettings,
    proj: PolyhedronProjector | None,
    random_state: int | np.random.Generator | None,
) -> StandardizedFit:
    """The fuzzy partition of standardized records ``Z`` (n, d): the search and recursion of
    the module docstring, with the rules (if any) as the projector ``proj`` in the same
    coordinates. The numerical heart of :func:`fuzzy_partition`, also run on one spatial cell
    by ``sdcflow.methods.fuzzy`` (``cell_size``)."""
    n = Z.shape[0]
    s = _Search(
        **{f.name: getattr(settings, f.name) for f in fields(FitSettings)},
        proj=proj,
        rng=check_random_state(random_state),
        log={"fcm_runs": 0, "draw_used": [], "merged_clusters": 0},
    )
    root = _build(Z, np.arange(n), np.ones(n), s, 0)
    leaves: list[np.ndarray] = []
    expected_l: list[float] = []
    r, leaf, prob = _flatten(root, leaves, expected_l)
    order = np.lexsort((leaf, r))
    r, leaf, prob = r[order], leaf[order], prob[order]
    fit = s.log.pop("top_fit")
    log = dict(s.log)
    log.update(
        c_initial=max(1, n // settings.k),
        objective_top=float(fit.objective),
        converged_top=bool(fit.converged),
        fcm_status_top=fit.message,
        truncation_top=fit.truncation,
    )
    return StandardizedFit(
        indptr=np.searchsorted(r, np.arange(n + 1)),
        leaf=leaf,
        prob=prob,
        centers_std=np.asarray(leaves).reshape(len(leaves), Z.shape[1]),
        expected=np.asarray(expected_l),
        log=log,
    )


def finish_partition(
    Z: np.ndarray,
    mean: np.ndarray,
    scale: np.ndarray,
    cons: LinearConstraints | None,
    fitted: StandardizedFit,
    settings: FitSettings,
    guarantee: str,
    restarts: int,
) -> FuzzyPartition:
    """Centres back in original units (on the edit rules, polished there), and the
    manifest's figures over every record and centre of ``fitted``."""
    n = Z.shape[0]
    k, fz1, fz2 = settings.k, settings.fz1, settings.fz2
    VZ = fitted.centers_std
    expected = fitted.expected
    centres = destandardize(VZ, mean, scale)  # mean + VZ * scale, overflow-safe
    if cons is not None:
        centres = cons.snap_bounds(_polish(centres, cons, scale))

    log = fitted.log
    details: dict[str, Any] = {
        "guarantee": guarantee,
        "k": k,
        "records": n,
        "clustering": ("entropy fcm" if fz1.entropy else "fcm")
        + (" constrained" if cons is not None else ""),
        "fuzziness_clustering": fz1.describe(),
        "fuzziness_draw_requested": fz2.describe(),
        "fuzziness_draw_top": log["draw_top"],
        "clusters_initial": int(log["c_initial"]),
        "clusters_top": int(log["c_top"]),
        # Centres a record can be drawn to; how many the release uses is known after the draw
        # (``published_centres`` in :func:`fuzzy_microaggregation`).
        "candidate_centres": len(centres),
        "fcm_runs": int(log["fcm_runs"]),
        "merged_clusters": int(log["merged_clusters"]),
        "restarts": int(restarts),
        "objective_top": float(log["objective_top"]),
        "converged_top": bool(log["converged_top"]),
        "fcm_status_top": log["fcm_status_top"],
        "expected_size": _summary(expected),
        "expected_size_definition": "expected records per centre under the draw the release "
        "used (memberships with the draw fuzziness, under-filled clusters merged, products "
        "along the recursion), not the sums of the clustering's memberships",
        "expected_size_sum": float(expected.sum()),
        "centres_expected_below_k": int(np.count_nonzero(expected < k)),
    }
    if log.get("truncation_top") is not None:
        details["truncation_top"] = log["truncation_top"]
    used_draw = np.asarray(log["draw_used"])
    details["fuzziness_draw_range"] = {"min": float(used_draw.min()), "max": float(used_draw.max())}
    if cons is None:
        details["constraints"] = "none given: behaves as plain fuzzy microaggregation"
    else:
        eq, ineq = cons.residuals(centres)
        details["constraints"] = {
            "equalities": int(cons.A.shape[0]),
            "inequalities": int(cons.G.shape[0]),
            "max_equality_residual": float(np.abs(eq).max(initial=0.0)),
            "max_inequality_excess": float(np.maximum(ineq, 0.0).max(initial=0.0)),
        }
    return FuzzyPartition(
        indptr=fitted.indptr,
        leaf=fitted.leaf,
        prob=fitted.prob,
        centers=centres,
        centers_std=VZ,
        Z=Z,
        expected_sizes=expected,
        k=k,
        guarantee=guarantee,
        details=details,
    )
