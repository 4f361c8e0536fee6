"""Rounding released values to their precision without breaking linear equalities.

Integer columns are published as integers and declared precisions are respected, but rounding
every column of ``total == a + b`` separately can break it (0.4 + 0.4 rounds to 0 + 0 while
0.8 rounds to 1). Controlled rounding [1] keeps such identities: here every equality gets one
*derived* column, the others are rounded and the derived ones are solved from them,
``x_P = A_P^{-1} (b - A_F x_F)``. Pivots are chosen by Gaussian elimination, preferring a
column without a precision (nothing to keep), then the finest precision (a whole combination
of values on hundreds and on units lands on units, not on hundreds: solving the column asked
for hundreds would publish it off its precision though the others could carry the rule),
then one whose reduced coefficient is +-1, then the column of largest typical magnitude (the
total rather than its parts);
with integer coefficients and right-hand sides and unit pivots (the usual sums and
differences), ``A_P^{-1}`` is integral and the derived values are integers too. Whether every
derived value lands on its column's precision is checked and reported, never assumed.

Records with a missing value in an equality's columns are left as they are for that equality
(the rule is undetermined on them).

Rounding keeps zero and non-zero apart (a value that is not 0 rounds to one unit of
precision at least): conditions such as ``if employees == 0 then wages == 0`` then hold on the
published records exactly as on the unrounded ones.

Inequalities ``G x <= h`` can flip at a rounding boundary, and a repaired record or a
constrained centre lies *on* the boundary of the rules it was moved onto (on Census, integer
throughout, ``FICA <= 0.1 * WSALVAL + 100`` under ``constrained_fuzzy`` left 5 of 1080 records
violating it, and the release was refused). So a record whose unrounded values satisfy a row
that its rounded values break is rounded again *towards* that row: with the derived columns
substituted (``x_P = A_P^{-1} (b - A_F x_F)``) the row reads ``g_eff . x_F <= h'``, and
rounding each free column down where its ``g_eff`` is positive and up where it is negative
cannot raise ``g_eff . x_F``, so the row then holds. Only as many columns are pulled as it
takes (those adding the least rounding error first), so a solved total moves by one unit
where one does. The directed values are kept only when
they leave the record fewer violated rows (rows can pull a column both ways); the decision
depends on the record's values alone, so records released with equal values stay equal (one
with a missing value follows a complete record equal to it on the values it has). What
still fails (no integer point nearby, e.g. ``tax == 0.2 * net`` with ``net`` odd) is left to
the validation of what is published, where a violated error rule blocks publication.

References
----------
[1] L.H. Cox, "A constructive procedure for unbiased controlled rounding", Journal of the
    American Statistical Association 82(398) (1987) 520-524, doi:10.1080/01621459.1987.10478456.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.tolerances import ROUNDING_SLACK
from sdcflow.errors import ParameterError


@dataclass(frozen=True)
class Rounded:
    """Values rounded to their precision, equalities kept.

    Attributes
    ----------
    values : ndarray of shape (n, d)
    derived : list of str
        Columns solved from the equalities instead of rounded on their own.
    off_precision : dict str -> int
        Derived columns with values that are not on the column's precision, and how many.
    """

    values: np.ndarray
    derived: list[str] = field(default_factory=list)
    off_precision: dict[str, int] = field(default_factory=dict)


# A solved value is snapped onto its precision within this share of its record's magnitude in
# the equalities (about 4.5 units in the last place): the rounding a solve leaves, and far
# below what the validation allows (sdcflow.core.tolerances: 1e-14 of the terms).
SNAP_TOL = 1e-15


def _round(x: np.ndarray, decimals: int) -> np.ndarray:
    """Round half to even at ``decimals``, keeping zero and non-zero apart: a value that is
    not 0 never rounds to 0 (0.3 employees rounds to 1, -0.2 to -1), so rules that test
    ``x == 0`` or ``x > 0`` read the same before and after rounding."""
    unit = 10.0**-decimals
    out = np.round(x, decimals) if decimals >= 0 else np.round(x / unit) * unit
    # (below 1e-9 of a unit counts as zero: a repaired 0 may carry 1e-13 of rounding noise)
    lost = (out == 0) & (np.abs(x) > 1e-9 * unit) & ~np.isnan(x)
    out[lost] = np.sign(x[lost]) * unit
    return out + 0.0  # no negative zero


def _pivots(A: np.ndarray, preference: np.ndarray, size: np.ndarray) -> list[int]:
    """One pivot column per independent row of ``A`` (p, d), by Gaussian elimination,
    choosing at each step the highest ``preference``; ties: |coefficient| closest to 1, then
    the largest typical ``size`` (a total absorbs the rounding of its parts with the smallest
    relative change), then the lowest column."""
    M = np.array(A, dtype=np.float64, copy=True)
    pivots: list[int] = []
    row = 0
    for _ in range(M.shape[0]):
        if row >= M.shape[0]:
            break
        best, best_key = None, None
        for r in range(row, M.shape[0]):
            for j in np.flatnonzero(np.abs(M[r]) > 1e-12):
                if j in pivots:
                    continue
                key = (preference[j], -abs(abs(M[r, j]) - 1.0), size[j], -j)
                if best_key is None or key > best_key:
                    best, best_key = (r, j), key
        if best is None:
            break
        r, j = best
        M[[row, r]] = M[[r, row]]
        M[row] /= M[row, j]
        for other in range(M.shape[0]):
            if other != row:
                M[other] -= M[other, j] * M[row]
        pivots.append(int(j))
        row += 1
    return pivots


def _borrowed(
    U: np.ndarray, complete: np.ndarray, used: list[int], P: list[int], derived: np.ndarray
) -> np.ndarray:
    """For each incomplete record, the solved pivot values (``derived``'s columns) of a
    complete record equal to it, before rounding, on every ``used`` column it has; NaN
    where none is. ``U`` (n, d) unrounded values; ``complete`` (n,) bool."""
    out = np.full((U.shape[0], len(P)), np.nan)
    rows = np.flatnonzero(~complete)
    if rows.size == 0 or not complete.any():
        return out
    present = ~np.isnan(U[:, used])
    full = np.flatnonzero(complete)
    for pattern in np.unique(present[rows], axis=0):
        cols = [used[j] for j in np.flatnonzero(pattern)]
        mine = rows[(present[rows] == pattern).all(axis=1)]
        if not cols:
            continue
        keys = np.concatenate([U[np.ix_(full, cols)], U[np.ix_(mine, cols)]])
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        first = np.full(int(inverse.max()) + 1, -1)
        first[inverse[: full.size][::-1]] = full[::-1]  # a complete record of each value
        hit = first[inverse[full.size :]]
        found = hit >= 0
        out[mine[found]] = derived[hit[found]]
    return out


def round_keeping_equalities(
    X: np.ndarray,
    columns: Sequence[str],
    decimals: Sequence[int | None],
    constraints: LinearConstraints | None = None,
    *,
    tol: float = SNAP_TOL,
) -> Rounded:
    """Round ``X`` to ``decimals`` per column, keeping the equalities of ``constraints``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Released values (NaN = missing, left as is).
    columns : sequence of str, length d
    decimals : sequence of int or None, length d
        Decimal places per column (0: integers; negative: tens, hundreds...); None: no
        rounding.
    constraints : LinearConstraints or None
        Equalities ``A x = b`` over (some of) ``columns``, kept; inequalities ``G x <= h``
        that rounding would break are rounded towards (module docstring).

    Returns
    -------
    Rounded
    """
    X = np.array(X, dtype=np.float64, copy=True)
    cols = list(columns)
    if X.ndim != 2 or X.shape[1] != len(cols) or len(decimals) != len(cols):
        raise ParameterError("X, columns and decimals must describe the same d columns")
    unrounded = X.copy()
    for j, dec in enumerate(decimals):
        if dec is not None:
            X[:, j] = _round(X[:, j], int(dec))
    if constraints is None:
        return Rounded(X)
    sub = [c for c in constraints.columns if c in cols]
    eq = constraints.restrict(sub) if len(sub) < len(constraints.columns) else constraints
    if eq.A.shape[0] == 0:
        _towards_inequalities(X, unrounded, cols, decimals, eq, None)
        return Rounded(X)
    idx = [cols.index(c) for c in eq.columns]
    A, b = eq.A, eq.b
    used = np.flatnonzero(np.abs(A).sum(axis=0) > 0)
    # no precision first, then the finest (most decimals): see the module docstring
    preference = np.array(
        [np.inf if decimals[idx[j]] is None else float(decimals[idx[j]]) for j in range(len(idx))]
    )
    magnitude = np.abs(unrounded[:, idx])
    present = ~np.isnan(magnitude)
    size = np.where(present, magnitude, 0.0).sum(axis=0) / np.maximum(present.sum(axis=0), 1)
    P = _pivots(A[:, used], preference[used], size[used])
    if not P:
        _towards_inequalities(X, unrounded, cols, decimals, eq, None)
        return Rounded(X)
    P = [int(used[j]) for j in P]
    # Free columns: only those the equalities involve. A column with zero coefficients
    # (``age`` beside ``net + tax == gross``) neither enters the solve nor makes a record
    # incomplete: a missing age must not leave ``gross`` unsolved on that record alone.
    F = [int(j) for j in used if j not in P]
    A_P, A_F = A[:, P], A[:, F]
    # A_P (p, |P|) has full column rank; with dependent rows its pseudo-inverse solves the
    # consistent system exactly.
    sol = _exact_integers(np.linalg.pinv(A_P))  # (|P|, p)
    sub_X = X[:, idx]
    complete = ~np.isnan(sub_X[:, np.concatenate([P, F]).astype(int)]).any(axis=1)
    derived = _solve(sub_X, A_F, b, F, sol)
    off: dict[str, int] = {}
    # A record missing a value of an equality cannot be solved, but it shares its group's
    # values: one that agrees, before rounding, with a complete record on every value it
    # has takes that record's solved values, so that it still matches its group.
    borrowed = _borrowed(unrounded[:, idx], complete, [int(j) for j in used], P, derived)
    for t, j in enumerate(P):
        col = idx[j]
        X[complete, col] = derived[complete, t]
        take = ~complete & ~np.isnan(borrowed[:, t]) & ~np.isnan(X[:, col])
        X[take, col] = borrowed[take, t]
        # a borrowed value is snapped as its complete record's is, so the two stay equal
        solved = complete | take
        dec = decimals[col]
        if dec is not None:
            scale = _magnitude(sub_X[np.ix_(solved, used)])
            X[solved, col] = _snap(X[solved, col], dec, tol, scale)
    pcols, fcols = [idx[j] for j in P], [idx[j] for j in F]
    _towards_inequalities(X, unrounded, cols, decimals, eq, (pcols, fcols, A_F, b, sol, tol))
    for j in P:
        col, dec = idx[j], decimals[idx[j]]
        if dec is not None:
            x = X[~np.isnan(X[:, col]), col]
            bad = _round(x, int(dec)) != x  # what is published off its precision
            if bad.any():
                off[cols[col]] = int(bad.sum())
    return Rounded(X, [cols[idx[j]] for j in P], off)


def off_precision(
    X: np.ndarray, columns: Sequence[str], decimals: Sequence[int | None]
) -> dict[str, int]:
    """Per column with a precision, how many present values of ``X`` (n, d) are not on it,
    when any are: solved values a rule keeps off it (a solved value within rounding of its
    precision was snapped onto it exactly)."""
    out: dict[str, int] = {}
    for j, (name, dec) in enumerate(zip(columns, decimals, strict=True)):
        if dec is None:
            continue
        x = X[~np.isnan(X[:, j]), j]
        bad = int((_round(x, int(dec)) != x).sum())
        if bad:
            out[name] = bad
    return out


def _exact_integers(M: np.ndarray) -> np.ndarray:
    """``M`` with entries within 1e-9 of an integer set to it. With unit pivots (sums and
    differences) ``A_P^{-1}`` is integral, but the pseudo-inverse carries rounding noise that
    depends on the BLAS: on an AVX-512 machine 3 + 3 was solved as 5.999999999999998, which a
    column without a precision then published."""
    nearest = np.rint(M)
    return np.where(np.abs(M - nearest) <= 1e-9, nearest, M) + 0.0


def _solve(sub_X: np.ndarray, A_F: np.ndarray, b: np.ndarray, F: list[int], sol: np.ndarray):
    """Derived values ``x_P = A_P^{-1} (b - A_F x_F)`` of every row of ``sub_X``: (n, |P|)."""
    rhs = b[None, :] - sub_X[:, F] @ A_F.T  # (n, p)
    return rhs @ sol.T


def _snap(x: np.ndarray, dec: int, tol: float, scale: np.ndarray) -> np.ndarray:
    """A solved value (n,) onto its precision when it is there up to ``tol`` of ``scale``
    (n,), the sum of the magnitudes of its record's values in the equalities: the rounding
    a solve leaves is relative to the terms, not to the result (``profit = turnover -
    costs`` at 1e9 with cents is off by 1e-7), and a move beyond it would break the rule
    (``share == net / 3`` at 1e9: 333333335.333 was snapped to 333333335, 1e-9 of it)."""
    snapped = _round(x, int(dec))
    bad = np.abs(snapped - x) > tol * np.maximum(1.0, scale)
    return np.where(bad, x, snapped)


def _magnitude(V: np.ndarray) -> np.ndarray:
    """Per row of ``V`` (n, m), the sum of its present values' magnitudes: (n,)."""
    return np.where(np.isnan(V), 0.0, np.abs(V)).sum(axis=1)


def _towards_inequalities(
    X: np.ndarray,
    unrounded: np.ndarray,
    cols: list[str],
    decimals: Sequence[int | None],
    constraints: LinearConstraints,
    solved: tuple | None,
) -> None:
    """Round again, towards the row, the records whose rounding broke an inequality that
    their unrounded values meet (module docstring); ``X`` (n, d) is changed in place.
    ``solved``: ``(pivot columns, free columns, A_F, b, A_P^+, tol)`` of the equalities in
    ``X``'s column indices, or None without them.

    Vectorized over the records (200k records on a rule's boundary would take seconds in a
    loop). A record missing a value the decision reads but otherwise equal, before rounding,
    to a complete record that was rounded towards its rows takes that record's values on the
    columns it has, so records that shared their values still do."""
    G, h = constraints.G, constraints.h
    if G.shape[0] == 0:
        return
    idx = [cols.index(c) for c in constraints.columns]
    Gx = np.zeros((G.shape[0], X.shape[1]))
    Gx[:, idx] = G

    strict = constraints.strict

    def broken(V: np.ndarray) -> np.ndarray:
        """(n, q) whether each row is broken: by more than 1e-12 of its scale, a strict row
        on its boundary too (within the rounding slack); never where a value it reads is
        missing."""
        W = np.nan_to_num(V, nan=0.0)
        raw = W @ Gx.T - h
        terms = np.abs(W) @ np.abs(Gx).T + np.abs(h)
        out = raw / (1.0 + terms) > 1e-12
        # a strict row: on its boundary, to the rounding slack the validation's own sum
        # order may differ by (repair.violating_records)
        out[:, strict] = raw[:, strict] >= -ROUNDING_SLACK * terms[:, strict]
        missing = np.isnan(V).astype(np.float64) @ (Gx != 0).T > 0
        return out & ~missing

    after = broken(X)
    rows = after & ~broken(unrounded)
    hit_rows = np.flatnonzero(rows.any(axis=1))
    if hit_rows.size == 0:
        return
    G_eff = Gx.copy()
    if solved is not None:
        pcols, fcols, A_F, _, sol, _ = solved
        G_eff[:, fcols] -= Gx[:, pcols] @ sol @ A_F  # x_P substituted
        G_eff[:, pcols] = 0.0
    R = rows[hit_rows].astype(np.float64)  # (m, q) the rows each record broke
    down = R @ (G_eff > 0).astype(np.float64) > 0  # (m, d) pulled down by one of them
    up = R @ (G_eff < 0).astype(np.float64) > 0
    U = unrounded[hit_rows]
    trial = X[hit_rows].copy()
    for j, dec in enumerate(decimals):
        if dec is None:
            continue
        unit = 10.0 ** -int(dec)
        scaled = np.round(U[:, j] / unit, 9)
        steps = np.where(down[:, j], np.floor(scaled), np.ceil(scaled))
        # divided by 10^dec, not times 0.01: 23172108 * 0.01 is 231721.08000000002
        value = (steps / 10.0 ** int(dec) if dec >= 0 else steps * unit) + 0.0
        move = (down[:, j] != up[:, j]) & ~np.isnan(U[:, j])
        move &= ~((value == 0) & (np.abs(U[:, j]) > 1e-9 * unit))  # zero and non-zero apart
        trial[move, j] = value[move]
    base = X[hit_rows]
    before_count = after[hit_rows].sum(axis=1)

    def settle(V: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``V`` with its derived columns solved from the free ones, whether that is
        acceptable, and the rows it breaks: (m, d), (m,), (m,)."""
        V = V.copy()
        ok = np.ones(V.shape[0], dtype=bool)
        if solved is not None:
            pcols, fcols, A_F, b, sol, tol = solved
            ok = ~np.isnan(V[:, pcols + fcols]).any(axis=1)
            P = np.array(pcols, dtype=int)
            V[np.ix_(ok, P)] = _solve(V[ok], A_F, b, fcols, sol)
            for j in pcols:
                if decimals[j] is not None:
                    scale = _magnitude(V[np.ix_(ok, [*pcols, *fcols])])
                    V[ok, j] = _snap(V[ok, j], decimals[j], tol, scale)
                    # a solved total must not lose the sign (zero or not) of its unrounded
                    # value where rounding to nearest kept it: 1.6 + -0.7 = 0.9 rounded
                    # towards `a <= 1.6` gave 1 + -1 = 0, and `if total == 0` rules then
                    # read otherwise
                    unit = 10.0 ** -int(decimals[j])
                    u = U[:, j]
                    sign = np.sign(np.where(np.abs(u) > 1e-9 * unit, u, 0.0))
                    ok &= ~((np.sign(V[:, j]) != sign) & (np.sign(base[:, j]) == sign))
                    # nor leave its precision where rounding to nearest had it on it (tax =
                    # 0.2 * net: net 100.4 rounded up to 101 gives tax 20.2 in an integer
                    # column)
                    on = _round(V[:, j], int(decimals[j])) == V[:, j]
                    was = _round(base[:, j], int(decimals[j])) == base[:, j]
                    ok &= on | ~was
        return V, ok, broken(V).sum(axis=1)

    # Pull as few columns as it takes: the pulled columns in order of the rounding error
    # each adds (in units of its precision; ties by column), the shortest prefix that leaves
    # the fewest broken rows. Pulling them all moved a solved total by more than one unit
    # (10.3 + 10.2 >= 20.5 rounded to 11 + 11 = 22 where 11 + 10 = 21 holds).
    pulled = (trial != base) & ~np.isnan(trial)
    units = np.array([10.0 ** -int(d) if d is not None else 1.0 for d in decimals])
    extra = (np.abs(trial - U) - np.abs(base - U)) / units
    order = np.argsort(np.where(pulled, extra, np.inf), axis=1, kind="stable")
    best, best_count = base.copy(), before_count.copy()
    take = np.zeros_like(pulled)
    records = np.arange(hit_rows.size)
    for t in range(int(pulled.sum(axis=1).max(initial=0))):
        take[records, order[:, t]] = True
        V, ok, count = settle(np.where(take & pulled, trial, base))
        better = ok & (count < best_count)
        best[better], best_count[better] = V[better], count[better]
    moved = hit_rows[best_count < before_count]
    X[moved] = best[best_count < before_count]
    _follow(X, unrounded, hit_rows)


def _follow(X: np.ndarray, unrounded: np.ndarray, moved: np.ndarray) -> None:
    """A record with a missing value, equal before rounding on every value it has to a
    complete record of ``moved`` (those whose rounding broke an inequality, rounded towards
    it or not), takes that record's rounded values on those columns (the first such record
    by position), as before the directed rounding, when rounding was by value alone, it had
    them; ``X`` is changed in place. (Its rows are those of the complete record that it can
    be checked on, so it breaks none that record meets.)"""
    if moved.size == 0:
        return
    missing = np.isnan(unrounded)
    rows = np.flatnonzero(missing.any(axis=1))
    full = moved[~missing[moved].any(axis=1)]
    if rows.size == 0 or full.size == 0:
        return
    for pattern in np.unique(~missing[rows], axis=0):
        present = np.flatnonzero(pattern)
        mine = rows[(~missing[rows] == pattern).all(axis=1)]
        if present.size == 0:
            continue
        keys = np.concatenate([unrounded[np.ix_(full, present)], unrounded[np.ix_(mine, present)]])
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        first = np.full(int(inverse.max()) + 1, -1)
        first[inverse[: full.size][::-1]] = full[::-1]
        hit = first[inverse[full.size :]]
        found = hit >= 0
        X[np.ix_(mine[found], present)] = X[np.ix_(hit[found], present)]
