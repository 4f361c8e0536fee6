"""Projection onto the polyhedron of linear edit rules ``{y : A y = b, G y <= h}``.

For a point ``y0`` (d,) the projection is

    y* = argmin_y  sum_a w_a (y_a - y0_a)^2   s.t.  A y = b,  G y <= h,

Euclidean (``w = 1``) for the centres of constrained fuzzy c-means [1]_ and weighted (the
cost of moving each variable, as in R's ``rspa`` [2]_) for the minimal-adjustment repair. The
set is convex, so the point is unique; it is computed exactly up to rounding:

1. *Equalities*: ``y_p = y0 - D^-1 (A D^-1)^+ (A y0 - b)``, ``D = diag(sqrt(w))``, with the
   pseudo-inverse of the columns the equalities read (any rank; the others stay in place).
   When ``y_p`` meets the inequalities it is the answer.
2. *Active set* (compiled, ``_kernels.active_set``): starting from the inequalities ``y_p``
   breaks, project ``y0`` onto the face ``{A y = b, G_S y = h_S}`` and drop the row with the
   most negative multiplier or add the most violated one, until the face's point is feasible
   with multipliers ``>= 0``. Those are the KKT conditions of the problem, so that point is
   the projection ([3]_ ch. 23). A face is solved from ``y0`` on the columns its rows read:
   variables none of them involves keep their value bit for bit.
3. *Least distance* (the rare point step 2 does not settle in ``2 q + 2`` steps): in the
   null-space coordinates ``t = D y = D y_p + N z`` of the equalities the problem is the
   least-distance program ``min ||z|| s.t. E z >= f``, ``E = -G D^-1 N``, ``f = G y_p - h``,
   solved by Lawson and Hanson's LDP through NNLS ([3]_ ch. 23, a finite method). The
   projection is also the projection onto the face of the rows active at the LDP point, so
   that face is solved exactly from ``y0`` (as in step 2) to polish away the LDP's rounding.

Points that already satisfy every row to 1e-12 relative are returned unchanged, bit for bit,
unless the caller asks for every row to be projected.

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074. Section 2.3 (linear edit constraints), section 3 (Prop. 4, 6).
.. [2] M. van der Loo, "rspa: Adapt Numerical Records to Fit (in)Equality Restrictions", R
   package version 0.2.8, CRAN, 2022, doi:10.32614/CRAN.package.rspa.
.. [3] C. L. Lawson and R. J. Hanson, *Solving Least Squares Problems*, SIAM, Philadelphia,
   1995 (reprint of Prentice-Hall, 1974), ch. 23.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import nnls

from sdcflow.core.linear import _kernels as _k
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.lp import feasibility_status
from sdcflow.core.tolerances import ROUNDING_SLACK
from sdcflow.errors import ParameterError, Reason

__all__ = ["PROJECTION_TOL", "PolyhedronProjector"]

PROJECTION_TOL = 1e-12  # relative: a rule holds when its excess is at most this times its scale

_INFEASIBLE = (
    "the linear edit rules admit no record (equalities and inequalities together are "
    "infeasible); run the feasibility check and fix the rules"
)


class PolyhedronProjector:
    """Weighted projection onto ``{y : A y = b, G y <= h}`` (the algorithm is in the module
    docstring).

    Parameters
    ----------
    A : array-like of shape (p, d)
    b : array-like of shape (p,)
    G : array-like of shape (q, d)
    h : array-like of shape (q,)
    weights : array-like of shape (d,), optional
        Positive cost of moving each variable; default all ones (Euclidean).
    b_terms : array-like of shape (p,), optional
        The magnitude of the terms each ``b_i`` was computed from, ``|b0_i| + |A_i| |shift|``
        when the rules were shifted (:meth:`from_constraints`); default ``|b|``. Equalities
        are consistent when they agree within the binary rounding of those terms
        (``sdcflow.core.tolerances.ROUNDING_SLACK``): redundant rules with inexact decimal
        coefficients (``tax == 0.16 * net``, ``gross == net + tax``, ``gross == 1.16 * net``)
        disagree by a few units in the last place of the centred amounts, not by a rule.

    Attributes
    ----------
    d, n_eq, n_ineq : int
        Variables, equalities, inequalities.
    compiled_args : tuple or None
        ``(A, Apinv, b, G, h, sw, tol)`` for compiled callers (``fuzzy._kernels``) that run
        :func:`_kernels.project_rows` inside their own loop; ``tol`` comes last. None makes
        such callers use :meth:`project` instead.

    Raises
    ------
    InputError
        When the equalities are inconsistent or the polyhedron is empty
        (``Reason.RULES_INFEASIBLE``).
    """

    def __init__(
        self,
        A: np.ndarray,
        b: np.ndarray,
        G: np.ndarray,
        h: np.ndarray,
        *,
        weights: np.ndarray | None = None,
        b_terms: np.ndarray | None = None,
        _known_nonempty: bool = False,
    ) -> None:
        A = np.atleast_2d(np.asarray(A, dtype=np.float64))
        G = np.atleast_2d(np.asarray(G, dtype=np.float64))
        b = np.asarray(b, dtype=np.float64).ravel()
        h = np.asarray(h, dtype=np.float64).ravel()
        d = max(A.shape[1], G.shape[1])
        A, G = A.reshape(-1, d), G.reshape(-1, d)
        if A.shape[0] != b.size or G.shape[0] != h.size:
            raise ParameterError(
                f"constraint shapes disagree: A {A.shape} with b {b.shape}, G {G.shape} with "
                f"h {h.shape}"
            )
        b_terms = np.abs(b) if b_terms is None else np.asarray(b_terms, dtype=np.float64).ravel()
        if b_terms.shape != b.shape:
            raise ParameterError(f"b_terms has shape {b_terms.shape}, b {b.shape}")
        w = np.ones(d) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
        if w.shape != (d,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ParameterError(
                f"weights must be {d} positive finite numbers, one per column", field="weights"
            )
        self.d, self.n_eq, self.n_ineq = d, A.shape[0], G.shape[0]
        self.A, self.b = np.ascontiguousarray(A), np.ascontiguousarray(b)
        self.G, self.h = np.ascontiguousarray(G), np.ascontiguousarray(h)
        self.b_terms = b_terms
        self.sw = np.sqrt(w)
        At, Gt = A / self.sw, G / self.sw  # the rules in t = D y, where the metric is Euclidean
        Apinv = np.zeros((d, self.n_eq))
        if self.n_eq:
            v0 = np.linalg.pinv(At) @ b
            allowed = 1e-9 * (1.0 + np.abs(b).max()) + ROUNDING_SLACK * b_terms
            if np.any(np.abs(At @ v0 - b) > allowed):
                raise ParameterError(
                    "the linear equality rules are inconsistent (no record can satisfy all of "
                    "them); run the feasibility check and fix the rules",
                    code=Reason.RULES_INFEASIBLE,
                )
            self.N = null_space(At)  # (d, r), orthonormal columns
            used = np.any(A != 0, axis=0)  # variables no equality reads stay exactly in place
            Apinv[used] = np.linalg.pinv(At[:, used]) / self.sw[used, None]
        else:
            v0 = np.zeros(d)
            self.N = np.eye(d)
        self.E = np.ascontiguousarray(-(Gt @ self.N))  # (q, r): LDP rows, module step 3
        if self.n_ineq and not _known_nonempty and not self._nonempty(At, b, Gt, h):
            raise ParameterError(_INFEASIBLE, code=Reason.RULES_INFEASIBLE)
        self._args = (self.A, Apinv, self.b, self.G, self.h, self.sw, PROJECTION_TOL)
        self.compiled_args: tuple | None = self._args

    @classmethod
    def from_constraints(
        cls,
        constraints: LinearConstraints,
        *,
        shift: np.ndarray | None = None,
        scale: np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> PolyhedronProjector:
        """The projector of ``constraints`` in the coordinates ``z`` with ``x = shift + scale z``
        (e.g. standardized columns): ``(A diag(scale)) z = b - A shift`` and
        ``(G diag(scale)) z <= h - G shift``. ``shift`` and ``scale`` are (d,), default 0
        and 1; ``weights`` (d,) as in the constructor, in ``z`` coordinates. Strict rows
        are replaced by :meth:`LinearConstraints.tightened` at the magnitude
        ``|shift| + scale`` (a caller that knows the published grid tightens them first)."""
        if any(constraints.ineq_strict):  # aimed inside strict rows, at the data's magnitude
            typical = np.zeros(len(constraints.columns))
            for part in (shift, scale):
                typical = typical if part is None else typical + np.abs(part)
            constraints = constraints.tightened(typical)
        A, b, G, h = constraints.A, constraints.b, constraints.G, constraints.h
        # x = shift + scale z is one-to-one when no scale is 0, so the set is empty in z
        # exactly when it is as written: asked there, as the check before the run asked it.
        # Asked in z, a value of 1e80 among thousands (h - G shift rounded away, a scale of
        # 1e78 beside 1e4) made rules that hold "admit no record".
        one_to_one = scale is None or bool(np.all(np.asarray(scale) > 0))
        if one_to_one and G.shape[0] and not cls._nonempty(A, b, G, h):
            raise ParameterError(_INFEASIBLE, code=Reason.RULES_INFEASIBLE)
        b_terms = np.abs(b)
        if shift is not None:
            b_terms = b_terms + np.abs(A) @ np.abs(shift)
            b, h = b - A @ shift, h - G @ shift
        if scale is not None:
            A, G = A * scale, G * scale
        return cls(A, b, G, h, weights=weights, b_terms=b_terms, _known_nonempty=one_to_one)

    def reweighted(self, weights: np.ndarray) -> PolyhedronProjector:
        """The projector onto the same set with other ``weights`` (d,): the set does not
        depend on them, so the LP that found it non-empty is not solved again."""
        return PolyhedronProjector(
            self.A,
            self.b,
            self.G,
            self.h,
            weights=weights,
            b_terms=self.b_terms,
            _known_nonempty=True,
        )

    @staticmethod
    def _nonempty(A: np.ndarray, b: np.ndarray, G: np.ndarray, h: np.ndarray) -> bool:
        """Whether some ``y`` has ``A y = b, G y <= h``: the equilibrated LP of ``sdcflow.core.lp``
        on the rules as written, the one the rule-set check before a run solves, so that
        coefficients of 1e15 and more (which HiGHS refuses raw, and which the null-space
        coordinates of the equalities blur) do not make a feasible set "empty"."""
        status, _ = feasibility_status(A, b, G, h)
        return status in (0, 3)

    def feasible(self, Y: np.ndarray) -> np.ndarray:
        """Whether each row of ``Y`` (c, d) satisfies every rule to 1e-12 relative: (c,) bool,
        the rows :meth:`project` returns unchanged."""
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        A, _, b, G, h, _, _ = self._args
        return _k.feasible_rows(Y, A, b, G, h)

    def project(self, Y: np.ndarray, *, skip_feasible: bool = True) -> np.ndarray:
        """Project every row of ``Y`` (c, d) onto the polyhedron; returns (c, d).

        With ``skip_feasible`` (default), rows that already satisfy every rule to 1e-12
        relative are returned unchanged, bit for bit, so that on data satisfying the rules
        constrained fuzzy c-means is the unconstrained one exactly ([1]_ Prop. 5 / 7), not
        to rounding. ``skip_feasible=False`` projects every row (a caller with its own
        tolerance, or polishing rounding away).
        """
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        A, _, b, G, h, _, _ = self._args
        if skip_feasible:
            inside = _k.feasible_rows(Y, A, b, G, h)
            if inside.all():
                return Y.copy()
        else:
            inside = np.zeros(len(Y), dtype=bool)
        P, ok = _k.project_rows(Y, inside, *self._args)
        for i in np.flatnonzero(~ok):
            P[i] = self._least_distance(Y[i])
        return P

    def _least_distance(self, y0: np.ndarray) -> np.ndarray:
        """Module step 3 for one point ``y0`` (d,): LDP through NNLS, then the exact solve of
        the face it lands on. Returns (d,)."""
        A, Apinv, b, G, h, sw, tol = self._args
        yp = y0 - Apinv @ (A @ y0 - b)  # step 1
        E, f = self.E, G @ yp - h
        q, r = E.shape
        if r == 0 or not (f > 0).any():
            return yp
        # Rows scaled to unit norm and f to unit size (the same set, the same z up to the
        # factor s): the LDP's residual res[r] = 1 / (1 + ||z||^2) must not vanish below its
        # 1e-12 test because z is long (x >= 1, y == 1e8 * x projected from 0 has ||z|| = 1e8
        # and was called infeasible).
        norms = np.linalg.norm(E, axis=1)
        live = norms > 0
        if (f[~live] > 1e-12 * (1.0 + np.abs(h[~live]))).any():
            raise ParameterError(_INFEASIBLE, code=Reason.RULES_INFEASIBLE)
        E, f = E[live] / norms[live, None], f[live] / norms[live]
        s = float(np.abs(f).max())
        if s == 0.0:
            return yp
        f = f / s
        q = E.shape[0]
        # Lawson-Hanson LDP: NNLS on [E^T; f^T] u ~ e_{r+1}; z = -res[:r] / res[r]
        M = np.vstack([E.T, f[None, :]])  # (r + 1, q)
        e = np.zeros(r + 1)
        e[r] = 1.0
        u, _ = nnls(M, e, maxiter=50 * max(q, 10))  # [3] ch. 23, LDP
        res = M @ u - e
        if abs(res[r]) <= 1e-12 or np.linalg.norm(res) <= 1e-12:
            raise ParameterError(_INFEASIBLE, code=Reason.RULES_INFEASIBLE)
        y = yp + (self.N @ (s * (-res[:r] / res[r]))) / sw
        # Polish: the projection lies on the face of the rows active at the LDP point, and is
        # the projection of y0 onto that face's affine hull whatever the multipliers (which
        # degenerate vertices make ambiguous); solve it exactly and keep it if it is feasible
        # and where the LDP point is.
        mag = 1.0 + np.abs(G) @ np.abs(y) + np.abs(h)
        face = G @ y - h >= -1e-9 * mag
        cand, _ = _k.face_projection(y0, A, b, G, h, sw, face)
        near = np.linalg.norm(cand - y) <= 1e-6 * (1.0 + np.abs(y).max())
        if near and _k.on_face(cand, G, h, face) and _k.worst_violated(cand, G, h, face, tol) < 0:
            return cand
        return y
