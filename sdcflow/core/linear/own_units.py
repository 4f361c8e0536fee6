"""Values moved onto linear edit rules in the columns' own units.

A projection computed in standardized units, ``x = shift + scale z``, comes back carrying the
rounding of the columns' shift and scale, which one very large firm sets: with turnover's
standard deviation at 7e9, a group of turnover 1e4 breaks ``profit == turnover -
total_costs`` by 1e-6, past the validation's allowance of 1e-8 at that magnitude. This
module reads the rules at each point's own magnitude: which points break them (:func:`off_rules`),
how far inside a strict row each is aimed (:func:`aimed_bounds`), and the last move onto
the rows a point holds with equality (:func:`polish_onto_rules`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.tolerances import DEFAULT_TOLERANCE, ROUNDING_SLACK, strict_bound

__all__ = ["Polished", "aimed_bounds", "off_rules", "onto_equalities", "polish_onto_rules"]


def onto_equalities(
    Z: np.ndarray, W: np.ndarray, A: np.ndarray, b: np.ndarray, *, multipliers: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Each row of ``Z`` (m, r) projected onto ``A z = b`` (A (p, r)) with its own weights
    ``W`` (m, r) > 0: ``z - W^-1 A' lam``, ``lam = (A W^-1 A')^+ (A z - b)``, the weighted
    least-squares point, batched over the rows (dependent rows of ``A``: the
    pseudo-inverse). ``A W^-1 A'`` is equilibrated by its diagonal first: rows of very
    different magnitudes (one reading a column of scale 1e10, another columns of scale 1e3)
    keep their own precision. With ``multipliers``, also ``lam`` (m, p): a row ``g x <= h``
    held as an equality belongs to the projection's face only where its ``lam >= 0`` (the
    KKT conditions)."""
    inv = 1.0 / W
    M = np.einsum("pi,mi,qi->mpq", A, inv, A)  # (m, p, p)
    dia = np.sqrt(np.einsum("mpp->mp", M))
    dia = np.where(dia > 0, dia, 1.0)
    residual = Z @ A.T - b  # (m, p)
    unit = np.linalg.pinv(M / dia[:, :, None] / dia[:, None, :])
    lam = np.einsum("mpq,mq->mp", unit, residual / dia) / dia
    out = Z - inv * (lam @ A)
    return (out, lam) if multipliers else out


def aimed_bounds(
    rules: LinearConstraints, V: np.ndarray, grid: list[int | None] | None = None
) -> np.ndarray:
    """The inequalities' bounds (m, q) each point of ``V`` (m, r) is held to: ``h``, and for
    a strict row the closed bound inside it at that point's own magnitude ``|g| |v|``
    (:func:`~sdcflow.core.tolerances.strict_bound`; on the ``grid`` of the columns' decimals
    when there is one)."""
    H = np.repeat(rules.h[None, :], len(V), axis=0)
    for i in np.flatnonzero(rules.strict):
        g = rules.G[i]
        H[:, i] = strict_bound(float(rules.h[i]), g, grid, np.abs(V) @ np.abs(g))
    return H


class Polished(NamedTuple):
    """What :func:`polish_onto_rules` returns."""

    values: np.ndarray  # (m, r) the points moved onto the rules
    face: np.ndarray  # (m, q) bool: the inequalities each point was moved onto
    kept: np.ndarray  # (m,) bool: points left at ``X`` (the move would leave them further off)
    settled: np.ndarray  # (m,) bool: no row broken off the face, none on it pulling wrong


def polish_onto_rules(
    X: np.ndarray,
    W: np.ndarray,
    rules: LinearConstraints,
    H: np.ndarray,
    *,
    start: np.ndarray | None = None,
    face: np.ndarray | None = None,
) -> Polished:
    """The projected points ``X`` (m, r), back in the columns' own units, moved onto the
    equalities and the inequalities they break there (each point's bounds ``H`` (m, q),
    :func:`aimed_bounds`), by the least change in the metric ``W`` (m, r)
    (:func:`onto_equalities`); a point the move would leave further off the rules than it
    was keeps its place.

    The residuals are read at each point's own magnitude (the module docstring's fault).
    An inequality joins a point's face only where
    the point breaks it (the rows broken after each move join, until none is): read from
    the standardized units, a face would take rows a group of 1.5 is a unit away from,
    beside a shift of 1e9. Of parallel rows on one face only the tightest is kept (``turnover > 0``,
    aimed inside, beside ``turnover >= 0``).

    Given the points ``start`` (m, r) that ``X`` was projected from and the ``face`` (m, q)
    bool of the inequalities active at ``X``, each ``start`` is projected onto its face
    instead, in own units: the face's least-squares point is the projection itself ([3]_ of
    :mod:`sdcflow.core.linear.projection`, ch. 23), exact to the rounding of the point's
    own magnitude, where ``X`` came back from standardized units carrying their scale's
    rounding along the face, and the columns no row of the face reads keep ``start`` bit
    for bit. The whole move is computed there, so each face's point is projected once more
    from itself (with weights 1e10 apart, the move's rounding left an equality 1e-7 off).
    From ``start`` the face is an active set: a row whose KKT multiplier is negative
    leaves it and a row broken joins it, until neither happens (``settled``); a caller
    still compares the point with the polish from ``X``."""
    m, q = len(X), rules.G.shape[0]
    on = np.zeros((m, q), dtype=bool) if face is None else np.array(face, dtype=bool)
    if not m:
        return Polished(X, on, np.zeros(0, dtype=bool), np.zeros(0, dtype=bool))
    S = X if start is None else start
    out = X.copy()
    settled = np.ones(m, dtype=bool)
    for _ in range(2 * q + 2):
        drop = np.zeros_like(on)
        faces, which = np.unique(on, axis=0, return_inverse=True)
        which = which.ravel()
        for f, face_f in enumerate(faces):
            rows = which == f
            kept = _tightest(rules, np.flatnonzero(face_f), H[rows].mean(axis=0))
            A = np.vstack([rules.A, rules.G[kept]])
            if not len(A):
                out[rows] = S[rows]
                continue
            b = np.hstack([np.repeat(rules.b[None, :], rows.sum(), axis=0), H[rows][:, kept]])
            if start is None:
                out[rows] = onto_equalities(S[rows], W[rows], A, b)
                continue
            # from the means, a row whose multiplier is negative pulls the point the wrong
            # way: it leaves the face (a primal active set; from X, already near the face,
            # the multipliers say nothing)
            point, lam = onto_equalities(S[rows], W[rows], A, b, multipliers=True)
            # once more from there: the whole move's rounding
            out[rows] = onto_equalities(point, W[rows], A, b)
            row_lam = lam[:, rules.A.shape[0] :]
            wrong = row_lam < -1e-9 * np.abs(lam).max(axis=1, initial=0.0)[:, None]
            sub = np.zeros((rows.sum(), q), dtype=bool)
            sub[:, kept] = wrong
            drop[rows] = sub
        broken = (out @ rules.G.T - H > 0) & ~on
        settled = ~(broken | drop).any(axis=1)
        if settled.all():
            break
        on = (on & ~drop) | broken
    worse = off_rules(out, rules, H) > np.maximum(off_rules(X, rules, H), 1.0)
    out[worse] = X[worse]
    return Polished(out, on, worse, settled)


def _tightest(rules: LinearConstraints, rows: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Of the inequality ``rows`` (indices), one per direction: the tightest of parallel
    rows under the bounds ``h`` (q,) (as two equalities they would contradict each
    other)."""
    if rows.size < 2:
        return rows
    norm = np.linalg.norm(rules.G[rows], axis=1)
    direction = np.round(rules.G[rows] / norm[:, None], 12)
    bound = h[rows] / norm
    _, group = np.unique(direction, axis=0, return_inverse=True)
    group = group.ravel()
    order = np.lexsort((bound, group))  # by direction, tightest first
    first = np.ones(order.size, dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    return np.sort(rows[order[first]])


def off_rules(
    X: np.ndarray, rules: LinearConstraints, H: np.ndarray, *, exact: bool = False
) -> np.ndarray:
    """Each point's (m,) largest residual over the validation's allowance at its own
    magnitude (1e-8 plus the rounding slack of the row's terms; at most 1 passes), the
    inequalities read against each point's bounds ``H`` (m, q). With ``exact``, over 1e-12
    of the row's terms instead (at most half the validation's allowance: above terms of 1e4
    a group off by 1.4e-6 at 2.5e6 was left unmoved, and the validation counted it), and a
    strict row past its aimed bound at all (> 0: the point is off, and a projection would
    move it): a group mean on ``turnover > wages``'s
    boundary is 1e-14 of its terms from the aimed bound, under the 1e-12."""
    worst = np.zeros(len(X))
    absX = np.abs(X)
    for M, rhs, two_sided in ((rules.A, rules.b, True), (rules.G, H, False)):
        if not M.shape[0]:
            continue
        res = X @ M.T - rhs
        res = np.abs(res) if two_sided else np.maximum(res, 0.0)
        terms = absX @ np.abs(M).T + np.abs(rhs)
        allowed = DEFAULT_TOLERANCE + ROUNDING_SLACK * terms  # the validation's
        if exact:  # and at most half of it: above terms of 1e4, 1e-12 of them is more
            allowed = np.minimum(1e-12 * (1.0 + terms), 0.5 * allowed)
        ratio = res / allowed
        if exact and not two_sided:
            ratio[:, rules.strict] = np.where(res[:, rules.strict] > 0, np.inf, 0.0)
        worst = np.maximum(worst, ratio.max(axis=1))
    return np.where(worst > 1.0, worst, 0.0) if exact else worst
