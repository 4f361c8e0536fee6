"""Minimal adjustment: move each record that violates linear edit rules onto the feasible set.

For a record ``x0`` the repaired record is the weighted least-squares projection

    x* = argmin_x  sum_j w_j (x_j - x0_j)^2   s.t.  A x = b,  G x <= h,

as R's ``rspa`` package computes it [1]_ (by successive projections there; exactly here, with
:class:`~sdcflow.core.linear.projection.PolyhedronProjector`). Records that already satisfy
every row (within ``tol``, or its rule's own tolerance) are returned unchanged. The feasible
set is the one of section 2.3 of [2]_; because it is convex, any average of repaired records
(the group centroid MDAV publishes) satisfies it too: equalities because they are linear,
inequalities because a convex set contains the convex combinations of its points.

Conditional rules ``if C then D`` with a linear consequent enter per record: the flow passes
``D``'s rows with the mask of records on which ``C`` holds (``conditional=``), and records are
projected group by group onto the common rows plus the ones that bind them. For the common
pattern ``if employees == 0 then wages == 0`` (with ``employees >= 0``) a group mean keeps the
rule too: the mean has ``employees == 0`` only when every record of the group has.

References
----------
.. [1] M. van der Loo, "rspa: Adapt Numerical Records to Fit (in)Equality Restrictions", R
   package version 0.2.8, CRAN, 2022, doi:10.32614/CRAN.package.rspa.
.. [2] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sdcflow.core.distinct import distinct_rows
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.core.tolerances import DEFAULT_TOLERANCE, ROUNDING_SLACK
from sdcflow.core.validation import check_matrix
from sdcflow.errors import ParameterError

__all__ = ["merge_magnitudes", "minimal_adjustment", "repair_magnitudes", "violating_records"]


def violating_records(
    X: np.ndarray,
    constraints: LinearConstraints,
    *,
    tol: float = DEFAULT_TOLERANCE,
    row_tol: Mapping[str, float] | None = None,
) -> np.ndarray:
    """Boolean mask (n,) of records violating some row: ``|A x - b| > t`` or ``G x - h > t``.

    ``t`` is the validation's allowance on the same residual: ``tol`` (or, for a row whose
    rule is named in ``row_tol``, that rule's tolerance) plus ``ROUNDING_SLACK`` times the
    row's terms' magnitude ``|A_j| |x| + |b_j|``, the binary rounding a double evaluation
    carries (:mod:`sdcflow.core.tolerances`). A strict row (``<``, ``>``) is broken on its
    boundary, and within that rounding slack of it: the validation's SQL, summing the terms
    in another order, can find such a record on either side. A record the validation passes
    is not moved (but for one that close to a strict boundary, moved just inside it)."""
    row_tol = row_tol or {}
    absX = np.abs(np.atleast_2d(X))
    eq, ineq = constraints.residuals(X)
    bad = np.zeros(X.shape[0], dtype=bool)
    for res, M, rhs, names, two_sided in (
        (eq, constraints.A, constraints.b, constraints.eq_names, True),
        (ineq, constraints.G, constraints.h, constraints.ineq_names, False),
    ):
        if not res.size:
            continue
        slack = ROUNDING_SLACK * (absX @ np.abs(M).T + np.abs(rhs))
        t = np.array([row_tol.get(n, tol) for n in names], dtype=np.float64) + slack
        off = (np.abs(res) if two_sided else res) > t
        if not two_sided and any(constraints.ineq_strict):
            # `<`, `>`: broken on the boundary. The SQL sums the rule's terms in its own
            # order, which can put a record exactly on it a bit to either side, so a record
            # within the rounding slack of the boundary counts as on it
            strict = constraints.strict
            off[:, strict] = res[:, strict] >= -slack[:, strict]
        bad |= off.any(axis=1)
    return bad


def minimal_adjustment(
    X: np.ndarray,
    constraints: LinearConstraints,
    *,
    weights: np.ndarray | None = None,
    tol: float = DEFAULT_TOLERANCE,
    row_tol: Mapping[str, float] | None = None,
    conditional: Sequence[tuple[np.ndarray, LinearConstraints]] = (),
    magnitudes: Mapping[int, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Project every violating record onto ``{A x = b, G x <= h}`` by weighted least squares.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Records in the column order of ``constraints.columns``.
    constraints : LinearConstraints
        The linear edit rules (:func:`sdcflow.preflight.plan.linear_constraints`).
    weights : array-like of shape (d,), optional
        Positive cost of moving each variable (``rspa``'s weights); default all ones.
    tol : float
        A record whose equality residuals are within ``tol`` and inequality excesses at most
        ``tol`` is left unchanged (the validation tolerance, 1e-8 by default).
    row_tol : mapping str -> float, optional
        Per rule name, the tolerance of that rule's rows instead of ``tol`` (a rule's own
        ``tolerance:``), so that a record its validation passes is not moved.
    conditional : sequence of (mask, LinearConstraints)
        Rows that bind only the records where ``mask`` (n,) is True: the linear consequent
        ``D`` of a rule ``if C then D`` for the records on which ``C`` holds. Records are
        grouped by the set of such rows that apply to them and each group is projected onto
        the common rows plus its own. (The repaired record keeps the rule: either ``C`` still
        holds and ``D`` was enforced, or the move made ``C`` false.)
    magnitudes : mapping int -> ndarray of shape (d,), optional
        The magnitudes the strict rows' margins are taken at, per decade of the records'
        largest value (:func:`repair_magnitudes`); default: those of the violating records
        of ``X``. A file repaired in pieces passes the whole file's
        (:func:`merge_magnitudes` of the pieces'), so that every piece is repaired as the
        whole file would be, bit for bit. Not with ``conditional``.

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
            f"({', '.join(constraints.columns)}); pass the columns in that order",
            field="X",
        )
    if weights is None:
        w = np.ones(d)
    else:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape != (d,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ParameterError(
                f"weights must be {d} positive finite numbers, one per column", field="weights"
            )
    if not np.isfinite(tol) or tol < 0:
        raise ParameterError(f"tol must be a number >= 0, got {tol!r}", field="tol")
    if magnitudes is not None and conditional:
        raise ParameterError(
            "magnitudes are taken over one constraint set: repair the records with "
            "conditional rows without them",
            field="magnitudes",
        )
    n = X.shape[0]
    masks = np.zeros((n, len(conditional)), dtype=bool)
    for i, (mask, extra) in enumerate(conditional):
        mask = np.asarray(mask)
        if mask.shape != (n,) or mask.dtype != bool:
            raise ParameterError(
                f"conditional mask {i} must be a boolean array of shape ({n},)",
                field=f"conditional[{i}]",
            )
        if tuple(extra.columns) != tuple(constraints.columns):
            raise ParameterError(
                f"conditional rows {i} must be over {', '.join(constraints.columns)}",
                field=f"conditional[{i}]",
            )
        masks[:, i] = mask
    # One projection problem per pattern of binding conditional rows.
    patterns, group = distinct_rows(masks.view(np.int8))
    patterns = patterns.astype(bool)
    out = X.copy()
    moved = np.zeros(n, dtype=bool)
    for g, pattern in enumerate(patterns):
        rows = np.flatnonzero(group == g)
        parts = [extra for (_, extra), on in zip(conditional, pattern, strict=True) if on]
        block, block_moved = _repair(
            X[rows], constraints.with_rows(*parts), w, tol, row_tol, magnitudes
        )
        out[rows] = block
        moved[rows] = block_moved
    return out, moved


def repair_magnitudes(
    X: np.ndarray,
    constraints: LinearConstraints,
    *,
    tol: float = DEFAULT_TOLERANCE,
    row_tol: Mapping[str, float] | None = None,
) -> dict[int, np.ndarray]:
    """The magnitudes :func:`minimal_adjustment` takes the strict rows' margins at: per
    decade of a violating record's largest value, each column's largest ``|x|`` over the
    violating records of that decade (empty without strict rows, where no margin is taken).
    Shapes: X (n, d) -> {decade: (d,)}.

    A maximum of maxima is the maximum: the pieces' magnitudes, merged by
    :func:`merge_magnitudes`, are the whole file's."""
    X = check_matrix(X, name="X", columns=constraints.columns)
    if not any(constraints.ineq_strict):
        return {}
    rows = np.flatnonzero(violating_records(X, constraints, tol=tol, row_tol=row_tol))
    classes = _decades(X[rows])
    return {
        int(d): np.nanmax(np.abs(X[rows[classes == d]]), axis=0, initial=0.0)
        for d in np.unique(classes)
    }


def merge_magnitudes(
    into: dict[int, np.ndarray], more: Mapping[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """``into`` updated with ``more`` (:func:`repair_magnitudes` of another piece): per
    decade, the larger magnitude of each column. Returns ``into``."""
    for decade, m in more.items():
        into[decade] = m.copy() if decade not in into else np.maximum(into[decade], m)
    return into


def _decades(X: np.ndarray) -> np.ndarray:
    """The decade of each record's largest ``|x|``: floor(log10), (m, d) -> (m,)."""
    largest = np.nanmax(np.abs(X), axis=1, initial=0.0)
    return np.floor(np.log10(np.maximum(largest, 1e-300))).astype(np.int64)


def _repair(
    X: np.ndarray,
    constraints: LinearConstraints,
    w: np.ndarray,
    tol: float,
    row_tol: Mapping[str, float] | None,
    magnitudes: Mapping[int, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The violating records of ``X`` projected onto one constraint set (module docstring)."""
    out = X.copy()
    moved = violating_records(X, constraints, tol=tol, row_tol=row_tol)
    if not moved.any():
        return out, moved
    rows = np.flatnonzero(moved)
    # Strict rows are aimed inside their boundary by the rounding allowance at the magnitude
    # of the records moved, taken per decade of their largest value: at the file's largest,
    # one turnover of 1e40 sent a record with turnover 0 under `turnover > 0` to 1e26.
    strict = any(constraints.ineq_strict)
    classes = _decades(X[rows]) if strict else np.zeros(len(rows), dtype=np.int64)
    for decade in np.unique(classes):
        some = rows[classes == decade]
        if magnitudes is None:
            magnitude = np.nanmax(np.abs(X[some]), axis=0, initial=0.0)
        elif strict:
            if int(decade) not in magnitudes:
                raise ParameterError(
                    f"magnitudes lack decade {int(decade)} of the violating records: pass "
                    "repair_magnitudes merged over every piece of the file",
                    field="magnitudes",
                )
            magnitude = magnitudes[int(decade)]
        else:
            magnitude = None  # no strict row: no margin
        inside = constraints.tightened(magnitude)
        proj = PolyhedronProjector.from_constraints(inside, weights=w)
        # every violating record is projected, also one within the projector's own 1e-12
        # relative: the tolerance here is the caller's
        out[some] = inside.snap_bounds(proj.project(X[some], skip_feasible=False))
    return out, moved
