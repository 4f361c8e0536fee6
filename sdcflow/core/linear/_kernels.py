"""Compiled kernels of the projection onto ``{y : A y = b, G y <= h}`` (see ``projection.py``).

Private module: callers validate first and pass C-contiguous float64 arrays. The projection
minimizes ``sum_a w_a (y_a - y0_a)^2``; the kernels take ``sw = sqrt(w)`` (d,), all ones for
the Euclidean projection. A face ``{A y = b, G_S y = h_S}`` is solved from ``y0`` on the
columns its rows read, so a variable no row of the face involves keeps its value exactly.

References
----------
.. [1] C. L. Lawson and R. J. Hanson, *Solving Least Squares Problems*, SIAM, Philadelphia,
   1995 (reprint of Prentice-Hall, 1974), ch. 23.
"""

from __future__ import annotations

import numpy as np

from sdcflow.core.jit import cached_njit

EPS = np.finfo(np.float64).eps


@cached_njit(inline="always")
def _rule_excess(M: np.ndarray, rhs: np.ndarray, j: int, y: np.ndarray) -> tuple[float, float]:
    """``(M_j y - rhs_j, 1 + |M_j| |y| + |rhs_j|)``: a rule's residual and its scale."""
    s = -rhs[j]
    mag = 1.0 + abs(rhs[j])
    for a in range(y.size):
        s += M[j, a] * y[a]
        mag += abs(M[j, a] * y[a])
    return s, mag


@cached_njit()
def feasible_rows(Y, A, b, G, h):
    """Which rows of ``Y`` (c, d) satisfy ``A y = b`` and ``G y <= h`` to 1e-12 relative
    (of ``1 + |A_j| |y| + |b_j|`` per rule): those a projection leaves unchanged. Returns (c,)
    bool."""
    c = Y.shape[0]
    out = np.ones(c, dtype=np.bool_)
    for i in range(c):
        for j in range(A.shape[0]):
            s, mag = _rule_excess(A, b, j, Y[i])
            if abs(s) > 1e-12 * mag:
                out[i] = False
                break
        for j in range(G.shape[0] if out[i] else 0):
            s, mag = _rule_excess(G, h, j, Y[i])
            if s > 1e-12 * mag:
                out[i] = False
                break
    return out


@cached_njit(inline="always")
def _face_residual(M, r, y, res):
    """``res = M y - r`` for the face rows ``M`` (k, d)."""
    for t in range(M.shape[0]):
        s = -r[t]
        for a in range(y.size):
            s += M[t, a] * y[a]
        res[t] = s


@cached_njit()
def face_projection(y0, A, b, G, h, sw, active):
    """Weighted projection of ``y0`` (d,) onto the face ``{A y = b, G_S y = h_S}``,
    ``S = flatnonzero(active)`` (q,) bool.

    With ``M = [A; G_S]``, ``r = [b; h_S]`` and ``D = diag(sw)``: ``y = y0 - D^-1 (M D^-1)^+
    (M y0 - r)`` and multipliers ``lam = (M D^-2 M^T)^+ (M y0 - r)`` (the KKT system of the
    face, [1]_ ch. 23), both from one SVD of ``M D^-1`` restricted to the columns ``M`` reads;
    singular values below ``max(k, d) eps s_max`` count as zero (any rank). One step of
    iterative refinement with the same SVD brings ``M y - r`` down to the rounding of
    evaluating it. Returns ``(y (d,), mult (|S|,))``, ``mult`` the multipliers of the ``G_S``
    rows: ``y`` is the projection onto the polyhedron when it satisfies every row and
    ``mult >= 0``.
    """
    d = y0.size
    p = A.shape[0]
    S = np.flatnonzero(active)
    k = p + S.size
    y = y0.copy()
    mult = np.zeros(S.size)
    M = np.empty((k, d))
    r = np.empty(k)
    M[:p] = A
    r[:p] = b
    for t in range(S.size):
        M[p + t] = G[S[t]]
        r[p + t] = h[S[t]]
    used = np.zeros(d, dtype=np.bool_)
    for t in range(k):
        for a in range(d):
            if M[t, a] != 0.0:
                used[a] = True
    cols = np.flatnonzero(used)
    if cols.size == 0:
        return y, mult
    Ms = np.empty((k, cols.size))
    for t in range(k):
        for e in range(cols.size):
            Ms[t, e] = M[t, cols[e]] / sw[cols[e]]
    U, sv, Vt = np.linalg.svd(Ms, full_matrices=False)
    cutoff = max(k, cols.size) * EPS * sv[0]
    res = np.empty(k)
    coef = np.zeros(sv.size)
    for rep in range(2):  # the solve, then one refinement step
        _face_residual(M, r, y, res)
        for f in range(sv.size):
            coef[f] = 0.0
            if sv[f] > cutoff:
                for t in range(k):
                    coef[f] += U[t, f] * res[t]
                if rep == 0:
                    for t in range(p, k):
                        mult[t - p] += U[t, f] * coef[f] / (sv[f] * sv[f])
                coef[f] /= sv[f]
        for e in range(cols.size):
            delta = 0.0
            for f in range(sv.size):
                delta += Vt[f, e] * coef[f]
            y[cols[e]] -= delta / sw[cols[e]]  # [1] ch. 23: y = y0 - D^-1 (M D^-1)^+ res
    return y, mult


@cached_njit()
def worst_violated(y, G, h, active, tol):
    """The inequality off the face ``active`` (q,) bool that ``y`` (d,) breaks most, relative
    to its scale (see :func:`_rule_excess`), or -1 when each holds to ``tol`` relative. Rows
    on the face are not checked: the face solve meets them to rounding."""
    worst = -1
    wval = -np.inf
    for j in range(G.shape[0]):
        if active[j]:
            continue
        s, mag = _rule_excess(G, h, j, y)
        if s > tol * mag and s / mag > wval:
            worst = j
            wval = s / mag
    return worst


@cached_njit()
def on_face(y, G, h, active):
    """Whether ``y`` (d,) meets every row of the face ``active`` (q,) bool as an equality to
    1e-9 of ``1 + |h_j| + |G_j|_1 max|y|``: rounding of the face solve stays far below, a
    face whose rows contradict each other (least-squares point) far above."""
    ymax = np.abs(y).max() if y.size else 0.0
    for j in np.flatnonzero(active):
        s, _ = _rule_excess(G, h, j, y)
        if abs(s) > 1e-9 * (1.0 + abs(h[j]) + np.abs(G[j]).sum() * ymax):
            return False
    return True


@cached_njit()
def active_set(y0, A, b, G, h, sw, active, tol):
    """Primal active-set steps from the face ``active`` (q,) bool (updated in place): drop the
    row with the most negative multiplier, else add the most violated row, until the face's
    projection of ``y0`` (d,) is feasible with multipliers >= 0 (KKT: then it is the exact
    projection) or ``2 q + 2`` steps have passed. Returns ``(y (d,), settled)``; where not
    ``settled`` (the rows of a face contradict each other, or a degenerate vertex makes the
    steps cycle) the caller needs the least-distance solver. ``tol`` is relative: a row
    holds when its excess is at most ``tol`` times its scale, a multiplier counts as negative
    below ``-tol (1 + max |mult|)``."""
    q = G.shape[0]
    y = y0.copy()
    for _ in range(2 * q + 2):
        y, mult = face_projection(y0, A, b, G, h, sw, active)
        if not on_face(y, G, h, active):
            return y, False
        if mult.size:
            jmin = np.argmin(mult)
            if mult[jmin] < -tol * (1.0 + np.abs(mult).max()):
                active[np.flatnonzero(active)[jmin]] = False
                continue
        worst = worst_violated(y, G, h, active, tol)
        if worst < 0:
            return y, True
        active[worst] = True
    return y, False


@cached_njit()
def project_rows(Y, inside, A, Apinv, b, G, h, sw, tol):
    """Project the rows of ``Y`` (c, d) not marked ``inside`` (c,) onto the polyhedron.

    Each row goes to its projection onto ``A y = b`` (with ``Apinv`` (d, p) ``= D^-1 (A
    D^-1)^+``, zero rows for variables no equality reads); if that breaks an inequality,
    :func:`active_set` starts from the broken rows. Returns ``(P (c, d), ok (c,))``: rows
    marked ``inside`` are copied unchanged; ``ok[i]`` is False where the active-set steps did
    not settle.
    """
    c, d = Y.shape
    p, q = A.shape[0], G.shape[0]
    P = Y.copy()
    ok = np.ones(c, dtype=np.bool_)
    res = np.empty(p)
    for i in range(c):
        if inside[i]:
            continue
        y0 = Y[i]
        for j in range(p):
            s = -b[j]
            for a in range(d):
                s += A[j, a] * y0[a]
            res[j] = s
        y = y0.copy()
        for a in range(d):
            delta = 0.0
            for j in range(p):
                delta += Apinv[a, j] * res[j]
            y[a] -= delta
        active = np.zeros(q, dtype=np.bool_)
        broken = False
        for j in range(q):
            s, _ = _rule_excess(G, h, j, y)
            if s > 0.0:
                active[j] = True
                broken = True
        if broken:
            y, settled = active_set(y0, A, b, G, h, sw, active, tol)
            ok[i] = settled
        P[i] = y
    return P, ok
