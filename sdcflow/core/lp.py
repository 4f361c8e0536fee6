"""Linear feasibility at any coefficient magnitude: is ``{x : A x = b, G x <= h}`` empty?

Shared by the rule-set check before a run (``sdcflow.expectations.feasibility``) and the
polyhedron projector of repair and constrained fuzzy microaggregation
(``sdcflow.core.linear.projection``), so that both reach the same verdict: HiGHS (behind
``scipy.optimize.linprog``) treats coefficients of 1e15 and more as too large and drops those
of 1e-9 and less, so a rule such as ``a >= 1e15 * b`` read raw is "infeasible". The LP is
homogenized (the right-hand side becomes the column of a variable ``t`` fixed at 1) and
equilibrated by powers of two before HiGHS sees it, which is exact.

References
----------
.. [1] A.R. Curtis, J.K. Reid, "On the automatic scaling of matrices for Gaussian
   elimination", IMA Journal of Applied Mathematics 10(1) (1972) 118-124 (geometric scaling
   of rows and columns by powers of the base).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

__all__ = ["equilibrate", "feasibility_status", "open_room"]

_EPS = float(np.finfo(np.float64).eps)


def equilibrate(
    K: np.ndarray, passes: int = 8, max_shift: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """Power-of-two row and column exponents ``r``, ``c`` that bring the nonzero entries of
    ``2**r_i K_ij 2**c_j`` near 1: alternating geometric-mean scaling of the rows and the
    columns [1]_ (Curtis and Reid's objective, by the iteration of Fourer's survey), rounded to
    powers of two so that scaling is exact. The last column's exponent (the right-hand side
    variable of a homogenized system) is kept within ``±max_shift``.

    Shapes: K (m, n) -> r (m,), c (n,) int.
    """
    m, n = K.shape
    r, c = np.zeros(m, dtype=int), np.zeros(n, dtype=int)
    nz = K != 0
    if not nz.any():
        return r, c
    logs = np.where(nz, np.log2(np.abs(np.where(nz, K, 1.0))), 0.0)
    rows, cols = nz.any(axis=1), nz.any(axis=0)

    def middle(scaled: np.ndarray, axis: int, has: np.ndarray) -> np.ndarray:
        lo = np.where(nz, scaled, np.inf).min(axis=axis)
        hi = np.where(nz, scaled, -np.inf).max(axis=axis)
        return np.where(has, np.rint((np.where(has, lo, 0) + np.where(has, hi, 0)) / 2), 0)

    for _ in range(passes):
        r = r - middle(logs + r[:, None] + c[None, :], 1, rows).astype(int)
        c = c - middle(logs + r[:, None] + c[None, :], 0, cols).astype(int)
        c[-1] = int(np.clip(c[-1], -max_shift, max_shift))
    return r, c


def feasibility_status(
    A: np.ndarray, b: np.ndarray, G: np.ndarray, h: np.ndarray
) -> tuple[int, str]:
    """HiGHS's status and message for ``min 0 s.t. A x = b, G x <= h`` (x free), solved
    homogenized and equilibrated: 0 or 3 feasible, 2 infeasible, anything else unfinished.

    Shapes: A (p, d), b (p,), G (q, d), h (q,); p + q >= 1.
    """
    status, message, _ = _solve(A, b, G, h)
    return status, message


def open_room(
    A: np.ndarray, b: np.ndarray, G: np.ndarray, h: np.ndarray, open_rows: np.ndarray
) -> bool | None:
    """Whether some ``x`` with ``A x = b, G x <= h`` meets the ``open_rows`` (q,) bool
    strictly, ``g . x < h``; None when the closed set is empty.

    Each open row needs some point of the closed set strictly inside it: then their mean is
    strictly inside all of them (the set is convex). A row's inset ``s`` is the largest with
    ``g . x + s ||g||_inf <= h``, and counts when ``s ||g||_inf`` passes the rounding of the
    row's evaluation there, ``(terms + 1) eps max(|h|, |g_j x_j|)``: ``x > 5`` with
    ``x <= 5`` has ``s = 0``, a window of 1e-9 at 1e-6 has ``s = 5e-10``, each row judged at
    its own magnitude (a window of 1e-3 in a rate beside a turnover of 1e12). One LP first asks
    for a common inset; only when that does not settle it is each row asked alone.

    The inset can be far below HiGHS's feasibility tolerance (1e-7, absolute), so the LPs are
    solved in ``y = x - x0`` around a point ``x0`` of the closed set: their right-hand sides
    are then the rows' slacks at ``x0``, not the rules' magnitudes, their optimum is a vertex
    where the rows that bound ``s`` hold exactly, and a closed set empty by less than that
    tolerance (``x >= 1e12 + 0.01`` with ``x <= 1e12 + 0.005``) is seen to be. When HiGHS
    cannot tell (no optimum either way) a row counts as inside: undecided, the caller's later
    checks count every record.

    Shapes: A (p, d), b (p,), G (q, d), h (q,), open_rows (q,); q >= 1.
    """
    status, message, x0 = _solve(A, b, G, h)
    if status == 2:
        return None
    if status not in (0, 3) or x0 is None:
        raise RuntimeError(f"the feasibility LP did not finish: {message}")
    norms = np.abs(G).max(axis=1, initial=0.0)
    live = np.asarray(open_rows, dtype=bool) & (norms > 0)
    terms = (G != 0).sum(axis=1)
    cap = max(1.0, float(np.abs(h).max(initial=0.0)), float(np.abs(x0).max(initial=0.0)))

    def inside(rows: np.ndarray) -> tuple[bool | None, np.ndarray]:
        """Whether every row of ``rows`` (q,) bool gets an inset past its rounding from one
        LP (None when the closed set shows empty at the slacks' scale), and each row's
        inset less its rounding there (q,), NaN when undecided."""
        for shift in (x0, np.zeros_like(x0)):
            status, _, y = _solve(
                A, b - A @ shift, G, h - G @ shift, np.where(rows, norms, 0.0), cap
            )
            if status == 2 and shift is x0:
                return None, np.full(len(h), np.nan)
            if status == 0 and y is not None:
                x, inset = shift + y[:-1], float(y[-1])
                terms_x = np.abs(G) * np.abs(x)
                noise = (terms + 1) * _EPS * np.maximum(np.abs(h), terms_x.max(axis=1, initial=0.0))
                excess = inset * norms - noise
                return bool(inset >= cap or (excess[rows] > 0).all()), excess
        return True, np.full(len(h), np.nan)  # HiGHS could not tell: undecided

    together, excess = inside(live)
    if together is None or together:
        return together
    # each row alone, those the common inset left furthest short first: in a deletion
    # filter the row that has no room is then asked first, not after every other one
    for i in sorted(np.flatnonzero(live), key=lambda i: np.nan_to_num(excess[i], nan=np.inf)):
        alone = np.zeros_like(live)
        alone[i] = True
        if inside(alone)[0] is not True:
            return False
    return True


def _solve(
    A: np.ndarray,
    b: np.ndarray,
    G: np.ndarray,
    h: np.ndarray,
    margin: np.ndarray | None = None,
    cap: float = 1.0,
) -> tuple[int, str, np.ndarray | None]:
    """``min 0`` (or, given ``margin``, ``max s`` in ``[0, cap]`` with ``G x <= h - s margin``)
    over ``A x = b, G x <= h``, homogenized (the right-hand side becomes the column of a
    variable ``t`` fixed at 1) and equilibrated by powers of two [1]_, which is exact.
    Returns HiGHS's status and message and the solution ``x`` (``(x, s)`` with ``margin``),
    unscaled, or None."""
    d = A.shape[1]
    p, q = A.shape[0], G.shape[0]
    extra = [] if margin is None else [np.zeros((p, 1)), margin[:, None]]
    K = np.vstack(
        [
            np.hstack([A, *extra[:1], -b[:, None]]),
            np.hstack([G, *extra[1:], -h[:, None]]),
        ]
    )
    n = K.shape[1]  # the variables, then s (with margin), then t
    row_e, col_e = equilibrate(K)
    Ks = np.ldexp(np.ldexp(K, row_e[:, None]), col_e[None, :])  # [1] Sec. 2: exact
    t = float(np.ldexp(1.0, -int(col_e[-1])))  # t = 2**col_e[-1] * t' = 1
    bounds = [(None, None)] * d + [(t, t)]
    objective = np.zeros(n)
    if margin is not None:
        bounds.insert(d, (0.0, float(np.ldexp(cap, -int(col_e[d])))))  # s <= cap
        objective[d] = -1.0
    res = linprog(
        objective,
        A_ub=Ks[p:] if q else None,
        b_ub=np.zeros(q) if q else None,
        A_eq=Ks[:p] if p else None,
        b_eq=np.zeros(p) if p else None,
        bounds=bounds,
        method="highs",
        # HiGHS's presolve can call a thin, satisfiable set of rules of mixed magnitudes
        # infeasible (one a known point meets exactly); these LPs are small
        options={"presolve": False},
    )
    x = None if res.x is None else np.ldexp(res.x[:-1], col_e[:-1])
    return res.status, res.message, x
