"""Minimal adjustment: move each record that violates linear edit rules onto the feasible set.

For a record ``x0`` the repaired record is the weighted least-squares projection

    x* = argmin_x  sum_j w_j (x_j - x0_j)^2   s.t.  A x = b,  G x <= h,

as R's ``rspa`` package does [1]_ (successive projections there; an exact active-set solve
here). Records that already satisfy every row (within ``tol``) are returned unchanged. The
feasible set is the one of section 2.3 of [2]_ (``alpha . v = A`` and inequalities); because it
is convex, any average of repaired records (the group centroid MDAV publishes) satisfies it
too: equalities because they are linear, inequalities because a convex set contains the
convex combinations of its points.

Algorithm
---------
With ``D = diag(sqrt(w))`` and ``y = D x`` the problem is the Euclidean projection of
``y0 = D x0`` onto ``{A~ y = b, G~ y <= h}``, ``A~ = A D^-1``, ``G~ = G D^-1``.

1. *Equalities, vectorized over records*: ``y_p = y0 - A~^+ (A~ y0 - b)`` (with the
   pseudo-inverse; for full row rank this is the closed form
   ``y0 - A~^T (A~ A~^T)^-1 (A~ y0 - b)``). ``y_p`` is the projection onto the affine set; when it
   meets the inequalities it is the answer.
2. *Inequalities, one small problem per remaining record*: write ``y = y_p + N z`` with ``N`` an
   orthonormal basis of the null space of ``A~``. Since ``y_p - y0`` is orthogonal to ``N z``,
   the problem becomes the least-distance program ``min ||z|| s.t. E z >= f`` with
   ``E = -G~ N``, ``f = G~ y_p - h``, solved exactly by Lawson and Hanson's LDP algorithm
   [3]_ (Ch. 23): NNLS on ``[E^T; f^T] u ~ e_{k+1}``, residual ``r``, ``z = -r[:k] / r[k]``
   (``r = 0`` means the constraints are inconsistent). NNLS is a finite active-set method.
3. *Polish*: the rows active at the LDP solution, with the equalities, are solved as equalities
   from ``y0`` (the KKT system of the active set); the polished point is kept when it satisfies
   every row, so the result meets the constraints to rounding (~1e-12 relative), well inside
   the 1e-8 tolerance of the validation.

Conditional rules ``if C then D`` with a linear consequent enter per record: the flow passes
``D``'s rows with the mask of records on which ``C`` holds (``conditional=``), and records are
projected group by group onto the common rows plus the ones that bind them. For the common
pattern ``if employees == 0 then wages == 0`` (with ``employees >= 0``) a group mean keeps the
rule too: the mean has ``employees == 0`` only when every record of the group has.

References
----------
.. [1] M. van der Loo, "rspa: Adapt Numerical Records to Fit (in)Equality Restrictions", R
   package (successive projection algorithm).
.. [2] "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity for data
   with constraints", section 2.3 (``../shared/papers/constrained-fuzzy-microaggregation.txt``).
.. [3] C. L. Lawson and R. J. Hanson, *Solving Least Squares Problems*, Prentice-Hall, 1974,
   Ch. 23 (least distance programming via NNLS).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import nnls

from sdcflow.errors import ParameterError, Reason
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.validation import check_matrix

__all__ = ["minimal_adjustment", "violating_records"]


def violating_records(
    X: np.ndarray, constraints: LinearConstraints, *, tol: float = 1e-8
) -> np.ndarray:
    """Boolean mask (n,) of records violating some row: ``|A x - b| > tol`` or ``G x - h > tol``."""
    eq, ineq = constraints.residuals(X)
    bad = np.zeros(X.shape[0], dtype=bool)
    if eq.size:
        bad |= (np.abs(eq) > tol).any(axis=1)
    if ineq.size:
        bad |= (ineq > tol).any(axis=1)
    return bad


def _ldp(E: np.ndarray, f: np.ndarray) -> np.ndarray | None:
    """``argmin ||z|| s.t. E z >= f`` (Lawson-Hanson LDP), or None when infeasible."""
    q, k = E.shape
    if not (f > 0).any():
        return np.zeros(k)
    M = np.vstack([E.T, f[None, :]])  # (k+1, q)
    e = np.zeros(k + 1)
    e[k] = 1.0
    u, _ = nnls(M, e, maxiter=50 * max(q, 10))
    r = M @ u - e
    if abs(r[k]) <= 1e-12 or np.linalg.norm(r) <= 1e-12:
        return None
    return -r[:k] / r[k]


def _project_affine(
    Y: np.ndarray, A: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of ``Y`` projected onto ``{A y = b}`` and the pseudo-inverse used (None: no rows)."""
    if A.shape[0] == 0:
        return Y.copy(), None
    used = np.any(A != 0, axis=0)  # variables no equality reads stay exactly in place
    P = np.zeros((A.shape[1], A.shape[0]))
    P[used] = np.linalg.pinv(A[:, used])  # (d, p)
    return Y - (Y @ A.T - b) @ P.T, P


def minimal_adjustment(
    X: np.ndarray,
    constraints: LinearConstraints,
    *,
    weights: np.ndarray | None = None,
    tol: float = 1e-8,
    conditional: Sequence[tuple[np.ndarray, LinearConstraints]] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Project every violating record onto ``{A x = b, G x <= h}`` by weighted least squares.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Records in the column order of ``constraints.columns``.
    constraints : LinearConstraints
        The linear edit rules (:func:`sdcflow.tasks.steps.plan.linear_constraints`).
    weights : array-like of shape (d,), optional
        Positive cost of moving each variable (``rspa``'s weights); default all ones.
    tol : float
        A record whose equality residuals are within ``tol`` and inequality excesses at most
        ``tol`` is left unchanged (the validation tolerance, 1e-8 by default).
    conditional : sequence of (mask, LinearConstraints)
        Rows that bind only the records where ``mask`` (n,) is True: the linear consequent
        ``D`` of a rule ``if C then D`` for the records on which ``C`` holds. Records are
        grouped by the set of such rows that apply to them and each group is projected onto
        the common rows plus its own. (The repaired record keeps the rule: either ``C`` still
        holds and ``D`` was enforced, or the move made ``C`` false.)

    Returns
    -------
    X_repaired : ndarray of shape (n, d)
        Violating records replaced by their projection; the others bit-for-bit unchanged.
    moved : ndarray of shape (n,), bool
        The records that were adjusted.

    Raises
    ------
    InputError
        When ``X`` or ``weights`` is invalid, or the constraints admit no record at all.
    """
    X = check_matrix(X, name="X", columns=constraints.columns)
    d = X.shape[1]
    if d != len(constraints.columns):
        raise ParameterError(
            f"X has {d} columns but the constraints are over {len(constraints.columns)} "
            f"({', '.join(constraints.columns)}); pass the columns in that order"
        )
    if weights is None:
        w = np.ones(d)
    else:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape != (d,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ParameterError(f"weights must be {d} positive finite numbers, one per column")
    if not np.isfinite(tol) or tol < 0:
        raise ParameterError(f"tol must be a number >= 0, got {tol!r}")
    n = X.shape[0]
    masks = np.zeros((n, len(conditional)), dtype=bool)
    for i, (mask, extra) in enumerate(conditional):
        mask = np.asarray(mask)
        if mask.shape != (n,) or mask.dtype != bool:
            raise ParameterError(f"conditional mask {i} must be a boolean array of shape ({n},)")
        if tuple(extra.columns) != tuple(constraints.columns):
            raise ParameterError(
                f"conditional rows {i} must be over {', '.join(constraints.columns)}"
            )
        masks[:, i] = mask
    # One projection problem per pattern of binding conditional rows.
    patterns, group = np.unique(masks, axis=0, return_inverse=True)
    group = group.reshape(-1)
    out = X.copy()
    moved = np.zeros(n, dtype=bool)
    for g, pattern in enumerate(patterns):
        rows = np.flatnonzero(group == g)
        parts = [extra for (_, extra), on in zip(conditional, pattern, strict=True) if on]
        block, block_moved = _repair(X[rows], _stack(constraints, parts), w, tol)
        out[rows] = block
        moved[rows] = block_moved
    return out, moved


def _stack(base: LinearConstraints, extra: Sequence[LinearConstraints]) -> LinearConstraints:
    """The rows of ``base`` and of every constraint set in ``extra`` (same columns)."""
    if not extra:
        return base
    every = [base, *extra]
    return LinearConstraints(
        base.columns,
        np.vstack([c.A for c in every]),
        np.concatenate([c.b for c in every]),
        np.vstack([c.G for c in every]),
        np.concatenate([c.h for c in every]),
        tuple(name for c in every for name in c.eq_names),
        tuple(name for c in every for name in c.ineq_names),
    )


def _repair(
    X: np.ndarray, constraints: LinearConstraints, w: np.ndarray, tol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-3 for records that share one constraint set."""
    out = X.copy()
    moved = violating_records(X, constraints, tol=tol)
    if not moved.any():
        return out, moved
    scale = np.sqrt(w)
    A = constraints.A / scale  # A~ = A D^-1
    G = constraints.G / scale
    b, h = constraints.b, constraints.h
    Y0 = X[moved] * scale
    Yp, _ = _project_affine(Y0, A, b)  # step 1, all records at once
    if A.shape[0]:
        eq_res = np.abs(Yp @ A.T - b).max()
        if eq_res > 1e-6 * max(1.0, np.abs(b).max(), np.abs(Y0).max()):
            raise ParameterError(
                "the linear equality rules are inconsistent (no record satisfies them all); "
                "run the feasibility check and fix the rules",
                code=Reason.RULES_INFEASIBLE,
            )
    if G.shape[0]:
        Yp = _project_inequalities(Y0, Yp, A, b, G, h)
    out[moved] = constraints.snap_bounds(Yp / scale)
    return out, moved


def _project_inequalities(
    Y0: np.ndarray,
    Yp: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    G: np.ndarray,
    h: np.ndarray,
) -> np.ndarray:
    """Step 2 and 3 for the records whose affine projection breaks an inequality."""
    d = Y0.shape[1]
    N = null_space(A) if A.shape[0] else np.eye(d)  # (d, k), orthonormal columns
    E = -G @ N  # (q, k)
    Y = Yp.copy()
    excess = Yp @ G.T - h  # (m, q)
    todo = np.flatnonzero((excess > 0).any(axis=1))
    for i in todo:
        z = _ldp(E, excess[i])
        if z is None:
            raise ParameterError(
                "the linear edit rules admit no record (the inequalities contradict each other "
                "or the equalities); run the feasibility check and fix the rules",
                code=Reason.RULES_INFEASIBLE,
            )
        y = Yp[i] + N @ z
        Y[i] = _polish(Y0[i], y, A, b, G, h)
    return Y


def _polish(
    y0: np.ndarray,
    y: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    G: np.ndarray,
    h: np.ndarray,
) -> np.ndarray:
    """Re-solve the active set exactly from ``y0``; keep it when it is feasible."""
    g = G @ y - h
    size = max(1.0, np.abs(y).max(), np.abs(h).max() if h.size else 1.0)
    active = g >= -1e-9 * size
    if not active.any():
        return y
    M = np.vstack([A, G[active]])
    rhs = np.concatenate([b, h[active]])
    y_act = y0 - np.linalg.pinv(M) @ (M @ y0 - rhs)
    if np.linalg.norm(y_act - y) > 1e-6 * size:
        return y
    # Coordinates the projection leaves in place come back as y0 +- rounding: restore them
    # exactly (a variable no violated rule involves must not move at all).
    snapped = np.where(np.abs(y_act - y0) <= 1e-13 * size, y0, y_act)
    for candidate in (snapped, y_act):
        ok_eq = not A.shape[0] or np.abs(A @ candidate - b).max() <= 1e-10 * size
        if ok_eq and (G @ candidate - h).max() <= 1e-10 * size:
            return candidate
    return y
