"""Linear edit constraints in matrix form, as masking methods consume them.

The edit-rule compiler (``sdcflow.expectations``) produces a :class:`LinearConstraints` over the
quasi-identifiers: the feasible set of [1]_ section 2.3, with several equalities and
inequalities. Methods that edit while they mask (constrained fuzzy microaggregation) and the
minimal-adjustment repair step read it, and project onto it with
:class:`~sdcflow.core.linear.projection.PolyhedronProjector`. Nothing here knows about rule
syntax.

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from sdcflow.core.tolerances import strict_bound

Row = tuple[Mapping[str, float], float]


@dataclass(frozen=True)
class LinearConstraints:
    """The feasible set ``{x : A x = b, G x <= h}`` over ``columns``.

    Attributes
    ----------
    columns : tuple of str, length d
        Variable order of the columns of ``A`` and ``G``.
    A : ndarray of shape (p, d), b : ndarray of shape (p,)
        Equalities.
    G : ndarray of shape (q, d), h : ndarray of shape (q,)
        Inequalities.
    eq_names, ineq_names : tuple of str
        The rule name behind each row, so that a violated row can be reported by rule.
    ineq_strict : tuple of bool
        Per inequality row, whether it is strict (``g . x < h``: its boundary is outside);
        empty when none is. Projections aim inside a strict row (:meth:`tightened`).
    """

    columns: tuple[str, ...]
    A: np.ndarray
    b: np.ndarray
    G: np.ndarray
    h: np.ndarray
    eq_names: tuple[str, ...] = field(default=())
    ineq_names: tuple[str, ...] = field(default=())
    ineq_strict: tuple[bool, ...] = field(default=())

    @classmethod
    def empty(cls, columns: tuple[str, ...] | list[str]) -> LinearConstraints:
        d = len(columns)
        return cls(tuple(columns), np.zeros((0, d)), np.zeros(0), np.zeros((0, d)), np.zeros(0))

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[tuple],
        columns: Sequence[str],
    ) -> LinearConstraints:
        """Assemble the matrices from sparse rows.

        Parameters
        ----------
        rows : sequence of ``(name, equalities, inequalities)`` or ``(name, equalities,
            inequalities, strict)``
            Per rule, equalities ``(coefficients, rhs)`` meaning ``a . x = rhs`` and
            inequalities meaning ``g . x <= rhs`` (``< rhs`` where ``strict``, one bool per
            inequality, says so); ``coefficients`` maps column -> number.
        columns : sequence of str, length d
            Variable order of the matrices.
        """
        columns = tuple(columns)
        index = {c: j for j, c in enumerate(columns)}
        d = len(columns)
        A, b, G, h, eq_names, ineq_names, strict = [], [], [], [], [], [], []
        for name, eqs, ineqs, *flags in rows:
            strict.extend(flags[0] if flags else [False] * len(ineqs))
            for coefs, rhs in eqs:
                row = np.zeros(d)
                for c, a in coefs.items():
                    row[index[c]] = a
                A.append(row)
                b.append(rhs)
                eq_names.append(name)
            for coefs, rhs in ineqs:
                row = np.zeros(d)
                for c, a in coefs.items():
                    row[index[c]] = a
                G.append(row)
                h.append(rhs)
                ineq_names.append(name)
        return cls(
            columns,
            np.array(A, dtype=float).reshape(len(A), d),
            np.array(b, dtype=float),
            np.array(G, dtype=float).reshape(len(G), d),
            np.array(h, dtype=float),
            tuple(eq_names),
            tuple(ineq_names),
            tuple(bool(f) for f in strict) if any(strict) else (),
        )

    @property
    def strict(self) -> np.ndarray:
        """(q,) bool: the strict inequality rows."""
        if not self.ineq_strict:
            return np.zeros(self.G.shape[0], dtype=bool)
        return np.array(self.ineq_strict, dtype=bool)

    def tightened(
        self,
        magnitude: np.ndarray | None = None,
        decimals: Sequence[int | None] | None = None,
    ) -> LinearConstraints:
        """The closed set a projection aims at: every strict row ``g . x < h`` becomes
        ``g . x <= h - margin`` (no strict flag left), the others unchanged.

        A projection onto a strict row's closure lands on its boundary, which the row
        excludes. ``margin`` is at least the allowance a non-strict row gets
        (:mod:`sdcflow.core.tolerances`) at the columns' typical ``magnitude`` (d,) >= 0,
        ``DEFAULT_TOLERANCE + 2 ROUNDING_SLACK (|h| + |g| magnitude)``, beyond what the
        projection's rounding leaves. Where the values are published on a grid it is exact:
        when every column the row reads has ``decimals`` (d,) and its coefficients are ratios
        of small integers (decimals as written, ``1/3``), ``g . x`` takes values on a grid of
        step ``u`` (the greatest common divisor of ``|g_j| 10^-dec_j``), and ``g . x < h`` is
        ``g . x <= u (ceil(h / u) - 1)`` on it (``wages < 1`` on integers is ``wages <= 0``).
        """
        if not any(self.ineq_strict):
            return self
        mag = np.zeros(len(self.columns)) if magnitude is None else np.abs(magnitude)
        h = self.h.copy()
        for i in np.flatnonzero(self.strict):
            g = self.G[i]
            h[i] = strict_bound(float(h[i]), g, decimals, float(np.abs(g) @ mag))
        return replace(self, h=h, ineq_strict=())

    @property
    def n_rows(self) -> int:
        """Equality and inequality rows."""
        return self.A.shape[0] + self.G.shape[0]

    @property
    def is_empty(self) -> bool:
        return self.A.shape[0] == 0 and self.G.shape[0] == 0

    def residuals(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(X A^T - b, X G^T - h)``: equality residuals (n, p) and inequality
        excesses (n, q); a record satisfies the set when the first is 0 and the second <= 0."""
        X = np.atleast_2d(X)
        return X @ self.A.T - self.b, X @ self.G.T - self.h

    def snap_bounds(self, X: np.ndarray, h: np.ndarray | None = None) -> np.ndarray:
        """``X`` (n, d) set to the single-variable equalities among ``A x = b`` (``x_j == c``)
        and clipped to the single-variable bounds among ``G x <= h`` (``x_j >= l``,
        ``x_j <= u``); ``h`` (n, q) gives each record its own bounds (default ``self.h``).
        Meant for values a projection already put on the rules: its rounding can leave
        -3e-15 under ``x >= 0``, or 4e-16 for ``wages == 0``, which a strict check
        downstream would reject or a reader would puzzle over."""
        X = np.array(X, dtype=np.float64, copy=True)
        for row, value in zip(self.A, self.b, strict=True):  # x_j == c: exactly c
            nz = np.flatnonzero(row)
            if nz.size == 1:
                X[:, nz[0]] = value / row[nz[0]] + 0.0  # + 0.0: 0 / -1 is -0.0
        limits = self.h if h is None else np.asarray(h, dtype=np.float64).T
        for row, limit in zip(self.G, limits, strict=True):
            nz = np.flatnonzero(row)
            if nz.size != 1:
                continue
            j, coef = nz[0], row[nz[0]]
            bound = limit / coef
            X[:, j] = np.minimum(X[:, j], bound) if coef > 0 else np.maximum(X[:, j], bound)
        return X + 0.0  # ``wages >= 0`` is -wages <= 0, whose bound 0 / -1 is -0.0

    def with_rows(self, *others: LinearConstraints) -> LinearConstraints:
        """The rows of this set and of ``others`` (over the same columns), e.g. the linear
        consequents of conditional rules where their condition holds."""
        if not others:
            return self
        every = [self, *others]
        for other in others:
            if tuple(other.columns) != tuple(self.columns):
                raise ValueError("constraint sets to stack must be over the same columns")
        return LinearConstraints(
            self.columns,
            np.vstack([c.A for c in every]),
            np.concatenate([c.b for c in every]),
            np.vstack([c.G for c in every]),
            np.concatenate([c.h for c in every]),
            tuple(name for c in every for name in c.eq_names),
            tuple(name for c in every for name in c.ineq_names),
            tuple(bool(f) for c in every for f in c.strict)
            if any(any(c.ineq_strict) for c in every)
            else (),
        )

    def restrict(self, columns: list[str] | tuple[str, ...]) -> LinearConstraints:
        """The rows that involve only ``columns`` (in that order), for block-wise methods."""
        idx = [self.columns.index(c) for c in columns]
        rest = np.setdiff1d(np.arange(len(self.columns)), idx)

        def keep(M: np.ndarray) -> np.ndarray:
            return np.all(M[:, rest] == 0, axis=1) if rest.size else np.ones(len(M), bool)

        ke, ki = keep(self.A), keep(self.G)
        return LinearConstraints(
            tuple(columns),
            self.A[ke][:, idx],
            self.b[ke],
            self.G[ki][:, idx],
            self.h[ki],
            tuple(n for n, k in zip(self.eq_names, ke, strict=False) if k),
            tuple(n for n, k in zip(self.ineq_names, ki, strict=False) if k),
            tuple(bool(f) for f in self.strict[ki]) if any(self.ineq_strict) else (),
        )
