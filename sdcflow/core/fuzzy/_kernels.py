"""Compiled kernels of fuzzy c-means: one pass over the records, no n x c matrix.

Private module: callers (``fcm.py``) validate first and pass C-contiguous float64 arrays.
Every kernel walks the records once, computes one record's squared distances and memberships
in a small buffer and adds its weights to the centre sums ("fused": memberships are never
stored). The kernels are serial: a numba parallel region costs more per call than the small
fits of the recursive search take, and gave no speed-up on large passes either
(``docs/benchmarks/``). The constrained loop projects with the kernels of
``sdcflow.core.linear._kernels``.

Memberships ([1]_ Prop. 1 and eq. 3) are computed relative to the nearest centre, which makes
them overflow-free and exact when a record coincides with a centre:

* FCM, ``p = 1/(m-1)``: ``u_i = (D_min/D_i)^p / sum_j (D_min/D_j)^p``; when ``D_min = 0`` the
  coinciding centres share the membership equally and all others get 0 (the limit of the
  formula, which is 0/0 there).
* EFCM: ``u_i = exp(-lam (D_i - D_min)) / sum_j exp(-lam (D_j - D_min))``.

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from sdcflow.core.jit import cached_njit
from sdcflow.core.linear._kernels import feasible_rows, project_rows


@cached_njit(inline="always")
def _sq_dist(X: np.ndarray, k: int, V: np.ndarray, i: int) -> float:
    """Squared Euclidean distance between record ``X[k]`` and centre ``V[i]``."""
    s = 0.0
    for a in range(X.shape[1]):
        diff = X[k, a] - V[i, a]
        s += diff * diff
    return s


@cached_njit(inline="always")
def _ratio_power(r: float, p: float, ip: int) -> float:
    """``r ** p`` for ``0 < r <= 1``; by repeated squaring when ``p`` is the integer ``ip``
    (``m = 1.1, 1.2, 1.25, 1.5, 2`` give p = 10, 5, 4, 2, 1), which is several times
    cheaper than ``pow``."""
    if ip <= 0:
        return r**p
    out = 1.0
    base = r
    e = ip
    while e > 0:
        if e & 1:
            out *= base
        base *= base
        e >>= 1
    return out


@cached_njit()
def _integer_exponent(m: float) -> int:
    """``p = 1/(m-1)`` as an int when it is one to rounding (and <= 64), else 0."""
    p = 1.0 / (m - 1.0)
    ip = int(np.round(p))
    if 1 <= ip <= 64 and abs(p - ip) <= 1e-9 * p:
        return ip
    return 0


@cached_njit(inline="always")
def _memberships(
    D: np.ndarray, nv: int, p: float, ip: int, lam: float, entropy: bool, u: np.ndarray
) -> tuple[float, float]:
    """Fill ``u[:nv]`` with the memberships of one record given squared distances ``D[:nv]``.

    Returns ``(dmin, S)``: the smallest distance and the normalizer ``S = sum_j t_j`` of the
    unnormalized terms ``t_j = (dmin/D_j)^p`` (FCM; ``u_j = t_j / S``), which give the FCM
    weights without another power: ``u_j^m = u_j (dmin/D_j) S^(1-m)`` because
    ``t_j^(m-1) = dmin/D_j``.
    """
    dmin = D[0]
    for j in range(1, nv):
        if D[j] < dmin:
            dmin = D[j]
    total = 0.0
    if entropy:
        for j in range(nv):
            u[j] = np.exp(-lam * (D[j] - dmin))  # [1] eq. 3
            total += u[j]
    elif dmin == 0.0:
        for j in range(nv):
            u[j] = 1.0 if D[j] == 0.0 else 0.0
            total += u[j]
    else:
        for j in range(nv):
            u[j] = _ratio_power(dmin / D[j], p, ip)  # [1] Prop. 1 (memberships)
            total += u[j]
    for j in range(nv):
        u[j] /= total
    return dmin, total


@cached_njit()
def _order_desc(u: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Indices of ``u`` by decreasing value, by insertion sort: candidates arrive sorted by
    distance from the last query, so ``u`` is nearly sorted and this is about linear."""
    for j in range(u.size):
        order[j] = j
    _sort_desc(u, order, u.size)
    return order


@cached_njit(inline="always")
def _sort_desc(values: np.ndarray, idx: np.ndarray, count: int) -> None:
    """Stable insertion sort of ``idx[:count]`` by decreasing ``values[idx]``, in place."""
    for j in range(1, count):
        cur = idx[j]
        val = values[cur]
        t = j - 1
        while t >= 0 and values[idx[t]] < val:
            idx[t + 1] = idx[t]
            t -= 1
        idx[t + 1] = cur


@cached_njit(inline="always")
def _record_terms(u: float, D: float, dmin: float, g: float, m: float, lam: float, entropy: bool):
    """(centre weight, objective term) of one membership ([1]_ eq. 1 / eq. 2, 4).

    FCM: ``u^m`` is ``u (dmin/D) g`` with ``g = S'^(1-m)`` (see :func:`_memberships`; ``S'``
    the normalizer of the memberships as used); ``g < 0`` marks a record on a centre, where
    the power is taken directly.
    """
    if entropy:
        ent = u * np.log(u) / lam if u > 0.0 else 0.0
        return u, u * D + ent  # [1] eq. 2
    if g < 0.0:
        um = u**m
        return um, um * D
    um = u * (dmin / D) * g
    return um, u * dmin * g


@cached_njit()
def full_pass(X, w, V, m, lam, entropy):
    """One alternate-optimization step against all ``c`` centres.

    Returns ``(sums (c, d), wsum (c,), objective, expected (c,))``: the weighted sums of
    records per centre with weights ``w_k u_ki^m`` (EFCM: ``w_k u_ki``), their totals, the
    objective ``J(u, V)`` at the optimal memberships, and the column sums of ``w_k u_ki``.
    """
    n, d = X.shape
    c = V.shape[0]
    p = 1.0 / (m - 1.0) if not entropy else 0.0
    ip = _integer_exponent(m) if not entropy else 0
    sums = np.zeros((c, d))
    wsum = np.zeros(c)
    expd = np.zeros(c)
    obj = 0.0
    D = np.empty(c)
    u = np.empty(c)
    for k in range(n):
        for i in range(c):
            D[i] = _sq_dist(X, k, V, i)
        dmin, S = _memberships(D, c, p, ip, lam, entropy, u)
        g = S ** (1.0 - m) if not entropy and dmin > 0.0 else -1.0
        for i in range(c):
            if u[i] == 0.0:
                continue
            wt, term = _record_terms(u[i], D[i], dmin, g, m, lam, entropy)
            wt *= w[k]
            obj += w[k] * term
            wsum[i] += wt
            expd[i] += w[k] * u[i]
            for a in range(d):
                sums[i, a] += wt * X[k, a]
    return sums, wsum, obj, expd


@cached_njit()
def truncated_pass(X, w, V, nbr, m, lam, entropy, mass):
    """One step restricted to each record's candidate centres ``nbr[k]`` (its nearest ones).

    For record ``k`` the memberships over its ``Q`` candidates are computed, sorted, and the
    smallest number ``q_k`` of largest ones holding at least ``mass`` of the candidates' total
    is kept and renormalized to sum to one (a Ruspini partition again). Only those ``q_k``
    enter the centre sums and the objective: the cost is O(n Q d).

    Returns ``(sums, wsum, objective, expected, q, tail)`` where ``q`` (n,) is ``q_k`` and
    ``tail`` (n,) is the certified bound ``(c - Q) u_Q / u_1``-type ratio described in
    ``fcm.py``: an upper bound on the membership the centres beyond the candidates can hold,
    relative to the candidates' total.
    """
    n, d = X.shape
    c = V.shape[0]
    Q = nbr.shape[1]
    p = 1.0 / (m - 1.0) if not entropy else 0.0
    ip = _integer_exponent(m) if not entropy else 0
    sums = np.zeros((c, d))
    wsum = np.zeros(c)
    expd = np.zeros(c)
    obj = 0.0
    qk = np.zeros(n, dtype=np.int32)
    tail = np.zeros(n)
    D = np.empty(Q)
    u = np.empty(Q)
    order = np.empty(Q, dtype=np.int64)
    for k in range(n):
        for j in range(Q):
            i = nbr[k, j]
            D[j] = _sq_dist(X, k, V, i)
        dmin0, S = _memberships(D, Q, p, ip, lam, entropy, u)
        order = _order_desc(u, order)
        # beyond the candidates every centre is at least as far as the farthest candidate
        dmax = D[order[Q - 1]]
        dmin = D[order[0]]
        if entropy:
            far = np.exp(-lam * (dmax - dmin))
        elif dmin == 0.0:
            far = 0.0
        else:
            far = (dmin / dmax) ** p
        # u[order[0]] = 1 / sum_j (dmin/D_j)^p, so (far * u_first) is a far centre's share
        tail[k] = (c - Q) * far * u[order[0]]
        acc = 0.0
        q = 0
        while q < Q and acc < mass:
            acc += u[order[q]]
            q += 1
        qk[k] = q
        g = (S * acc) ** (1.0 - m) if not entropy and dmin0 > 0.0 else -1.0
        for jj in range(q):
            j = order[jj]
            uu = u[j] / acc
            if uu == 0.0:
                continue
            i = nbr[k, j]
            wt, term = _record_terms(uu, D[j], dmin0, g, m, lam, entropy)
            wt *= w[k]
            obj += w[k] * term
            wsum[i] += wt
            expd[i] += w[k] * uu
            for a in range(d):
                sums[i, a] += wt * X[k, a]
    return sums, wsum, obj, expd, qk, tail


@cached_njit()
def dense_memberships(X, V, m, lam, entropy):
    """The full (n, c) membership matrix; for small problems and tests only."""
    n = X.shape[0]
    c = V.shape[0]
    p = 1.0 / (m - 1.0) if not entropy else 0.0
    ip = _integer_exponent(m) if not entropy else 0
    U = np.empty((n, c))
    for k in range(n):
        D = np.empty(c)
        for i in range(c):
            D[i] = _sq_dist(X, k, V, i)
        _memberships(D, c, p, ip, lam, entropy, U[k])
    return U


@cached_njit()
def _kept_in_row(row, thr, mass, cand, out_i, out_u):
    """The draw's truncation of one dense membership row, exactly as the sort of every entry
    (:func:`truncate_rows`) would give it: writes the kept centres and their (not yet
    renormalized) memberships to ``out_i``, ``out_u`` in decreasing order; returns how many.

    Only entries above ``thr`` are sorted: every kept entry holds more than (1 - mass) / c of
    its row (the entries from it on hold more than 1 - mass, and none is larger), so with
    ``thr`` half that bound the others cannot be kept -- checked on the row (the candidates'
    sum must pass ``mass + thr``); a row that fails the check is sorted whole.
    """
    c = row.size
    nc = 0
    for j in range(c):
        if row[j] > thr:
            cand[nc] = j
            nc += 1
    if nc > 32:  # many candidates: a stable merge sort of them
        sub = cand[:nc].copy()
        order = np.argsort(-row[sub], kind="mergesort")
        for j in range(nc):
            cand[j] = sub[order[j]]
    else:  # few: a stable insertion sort
        _sort_desc(row, cand, nc)
    cs = 0.0
    for j in range(nc):
        cs += row[cand[j]]
    if cs < mass + thr + 1e-12 and nc < c:  # not provably enough: sort the whole row
        order = np.argsort(-row, kind="mergesort")
        for j in range(c):
            cand[j] = order[j]
        nc = c
    # keep = (cumsum - u < mass) & (u > 0) over the sorted row, as numpy computes it
    cs = 0.0
    q = 0
    for j in range(nc):
        uj = row[cand[j]]
        cs += uj
        if cs - uj < mass and uj > 0.0:
            out_i[q] = cand[j]
            out_u[q] = uj
            q += 1
    return q


@cached_njit()
def truncate_rows(U, mass):
    """The draw memberships as COO ``(row, centre, u)``: in each row of the dense ``U`` (n, c)
    the smallest set of largest memberships holding ``mass`` (0 < mass < 1) of the row's
    total, renormalized to sum to one, rows in order and each by decreasing membership (ties
    by centre). Equal, entry for entry, to a stable argsort of every row, a cumulative sum and
    ``nonzero`` (the reference in the tests) at O(n c) instead of O(n c log c).
    """
    n, c = U.shape
    thr = 0.5 * (1.0 - mass) / c if 1.0 - mass >= 1e-6 else 0.0
    cand = np.empty(c, dtype=np.int64)
    row_i = np.empty(c, dtype=np.int64)
    row_u = np.empty(c)
    cap = max(16, 8 * n)
    r = np.empty(cap, dtype=np.int64)
    i = np.empty(cap, dtype=np.int64)
    u = np.empty(cap)
    nnz = 0
    for k in range(n):
        q = _kept_in_row(U[k], thr, mass, cand, row_i, row_u)
        if nnz + q > cap:
            cap = max(2 * cap, nnz + q)
            r2 = np.empty(cap, dtype=np.int64)
            i2 = np.empty(cap, dtype=np.int64)
            u2 = np.empty(cap)
            r2[:nnz] = r[:nnz]
            i2[:nnz] = i[:nnz]
            u2[:nnz] = u[:nnz]
            r, i, u = r2, i2, u2
        total = 0.0
        for j in range(q):
            total += row_u[j]
        for j in range(q):
            r[nnz + j] = k
            i[nnz + j] = row_i[j]
            u[nnz + j] = row_u[j] / total
        nnz += q
    return r[:nnz].copy(), i[:nnz].copy(), u[:nnz].copy()


@cached_njit()
def candidate_memberships(X, V, nbr, m, lam, entropy, mass):
    """Truncated memberships as fixed-width sparse rows ``(idx (n, Q), val (n, Q))``.

    The same truncation as :func:`truncated_pass`: the smallest set of largest candidate
    memberships holding ``mass`` of the candidates' total, renormalized; unused slots have
    ``idx = -1`` and ``val = 0``. Rows are ordered by decreasing membership.
    """
    n = X.shape[0]
    Q = nbr.shape[1]
    p = 1.0 / (m - 1.0) if not entropy else 0.0
    ip = _integer_exponent(m) if not entropy else 0
    idx = np.full((n, Q), -1, dtype=np.int64)
    val = np.zeros((n, Q))
    D = np.empty(Q)
    u = np.empty(Q)
    order = np.empty(Q, dtype=np.int64)
    for k in range(n):
        for j in range(Q):
            i = nbr[k, j]
            D[j] = _sq_dist(X, k, V, i)
        _memberships(D, Q, p, ip, lam, entropy, u)
        order = _order_desc(u, order)
        acc = 0.0
        q = 0
        while q < Q and acc < mass:
            acc += u[order[q]]
            q += 1
        for jj in range(q):
            idx[k, jj] = nbr[k, order[jj]]
            val[k, jj] = u[order[jj]] / acc
    return idx, val


@cached_njit()
def refine_candidates(X, V, nbr, graph, expand):
    """Cheap candidate refresh between exact KD-tree queries.

    For record ``k`` the pool is its current candidates ``nbr[k]`` plus the ``graph``
    neighbours (the nearest centres of a centre) of its ``expand`` nearest candidates; the
    ``Q`` nearest of the pool, in increasing distance, become the new candidates. Exact when
    every true neighbour is a neighbour of a neighbour (the usual case when centres move
    little); O(n (Q + expand L) d).
    """
    n = X.shape[0]
    c = V.shape[0]
    Q = nbr.shape[1]
    L = graph.shape[1]
    out = np.empty_like(nbr)
    stamp = np.full(c, -1, dtype=np.int64)
    pool = np.empty(Q + expand * L, dtype=np.int64)
    dist = np.empty(Q + expand * L)
    for k in range(n):
        size = 0
        for j in range(Q):
            i = nbr[k, j]
            if stamp[i] != k:
                stamp[i] = k
                pool[size] = i
                size += 1
        for e in range(min(expand, Q)):
            for j in range(L):
                i = graph[nbr[k, e], j]
                if stamp[i] != k:
                    stamp[i] = k
                    pool[size] = i
                    size += 1
        for j in range(size):
            i = pool[j]
            dist[j] = _sq_dist(X, k, V, i)
        order = np.argsort(dist[:size])
        for j in range(Q):
            out[k, j] = pool[order[j]]
    return out


@cached_njit()
def dense_fit(X, w, V, m, lam, entropy, max_iter, tol_abs):
    """Unconstrained, untruncated alternate optimization in one compiled call: the loop of
    ``fcm._fcm_restart`` without its Python overhead, which dominates the thousands of tiny
    fits of the recursive search (a few records, two or three centres).

    Returns ``(V, objective, expected, iterations, converged)`` with the objective and
    expected sizes of a final pass at the returned centres.
    """
    V = V.copy()
    c, d = V.shape
    it = 0
    converged = False
    for it in range(1, max_iter + 1):  # noqa: B007
        sums, wsum, _, _ = full_pass(X, w, V, m, lam, entropy)
        shift = 0.0
        for i in range(c):
            if wsum[i] <= 0.0:
                continue
            s = 0.0
            for a in range(d):
                new = sums[i, a] / wsum[i]  # [1] eq. 1 (FCM) / eq. 4 (EFCM)
                diff = new - V[i, a]
                s += diff * diff
                V[i, a] = new
            if s > shift:
                shift = s
        if np.sqrt(shift) <= tol_abs:
            converged = True
            break
    _, _, obj, expd = full_pass(X, w, V, m, lam, entropy)
    return V, obj, expd, it, converged


# Not cached: numba's cache is keyed on this file only and would keep stale copies of the
# projection kernels it links in from linear/_kernels.py after that file changes (the cost
# is one compilation per process instead).
@nb.njit(cache=False)
def constrained_dense_fit(X, w, V, m, lam, entropy, max_iter, tol_abs, A, Apinv, b, G, h, sw, tol):
    """:func:`dense_fit` with the centres projected onto the polyhedron every iteration
    ([1]_ eq. 5 / eq. 11, generalized in ``fcm.py``), as long as the compiled active-set
    steps settle every projection.

    ``X`` (n, d), ``w`` (n,), ``V`` (c, d); ``A, Apinv, b, G, h, sw, tol`` are
    ``PolyhedronProjector.compiled_args``. Returns ``(V (c, d), Vn (c, d), iterations,
    converged, stalled)``: when ``stalled``, the iteration after ``iterations`` produced the
    unprojected centres ``Vn`` whose projection needs the least-distance solver, and the
    caller goes on from there. Otherwise ``Vn`` is unused and the objective comes from a
    final pass by the caller."""
    V = V.copy()
    c, d = V.shape
    for it in range(max_iter):
        sums, wsum, _, _ = full_pass(X, w, V, m, lam, entropy)
        Vn = V.copy()
        for i in range(c):
            if wsum[i] > 0.0:
                for a in range(d):
                    Vn[i, a] = sums[i, a] / wsum[i]  # [1] eq. 1 (FCM) / eq. 4 (EFCM)
        # centres already on the rules stay unchanged, as in PolyhedronProjector.project
        inside = feasible_rows(Vn, A, b, G, h)
        P, ok = project_rows(Vn, inside, A, Apinv, b, G, h, sw, tol)  # [1] eq. 5 / eq. 11
        if not ok.all():
            return V, Vn, it, False, True
        shift = 0.0
        for i in range(c):
            s = 0.0
            for a in range(d):
                diff = P[i, a] - V[i, a]
                s += diff * diff
            if s > shift:
                shift = s
        V = P
        if np.sqrt(shift) <= tol_abs:
            return V, Vn, it + 1, True, False
    return V, V, max_iter, False, False
