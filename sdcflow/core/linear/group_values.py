"""Group values that keep the linear edit rules when some values are missing.

Microaggregation releases each group's mean. On complete records that satisfy
``A x = b, G x <= h`` the mean does too: the set is convex. With missing values each column's
mean is taken over the records that have it, so the columns of one group are means over
different records and ``net + tax == gross`` no longer holds between them: on the business
survey with 5 % of each value missing, 2 304 of 3 000 released records broke a rule.

Here each group's values ``r`` (d,) are moved onto the rules its records can be checked
against, by the least change of the group's own sum of squares in standardized units:

    r* = argmin_r  sum_j n_j ((r_j - m_j) / s_j)^2   s.t.  A r = b,  G r <= h,

where ``m_j`` is the group's mean of column ``j`` over its ``n_j`` records that have it (a
set of groups joined because fewer than k records of one had some column is one group here,
its labels those of :meth:`~sdcflow.core.microaggregation.heterogeneous.Representatives.
sets`: moved group by group, with each group's own counts, a set would publish one point per
group, and two points solve for the set's means) and
``s_j`` the column's standard deviation over the file. The group's within-group sum of
squares is ``sum_j sum_i ((x_ij - r_j) / s_j)^2 = const + sum_j n_j ((r_j - m_j) / s_j)^2``
(the mean minimizes it, [1]_ section 2), so ``r*`` is the constrained least-squares
representative of the group: the weighted projection of its means onto the rules
(:class:`PolyhedronProjector`, as constrained centres are projected in [2]_ section 3).
A group whose column ``j`` is missing on every record releases no value there, so only the
rules that do not read ``j`` bind it. Groups whose means already satisfy their rules (every
group without a missing value) keep them bit for bit.

Two more kinds of rule break the same way and are kept here, at the group level, so that the
records of a group keep showing one set of values (k counts on that):

* ``if C then D`` with ``D`` linear: where ``C`` holds on a group's values, ``D``'s rows join
  the rules it is projected onto, as minimal-adjustment repair does for a record. The
  conditions are read again on the values moved and rounded, until no other one holds: a
  consequent's move or the rounding (``employees`` 1.4 to 1) can make another true.
* precision: each group's values are rounded keeping the equalities among its columns
  (:func:`~sdcflow.core.linear.rounding.round_keeping_equalities`). Rounded record by
  record, a record missing a value of one equality rounds the columns of the others on their
  own and breaks them by a unit.

Numerically, standardized units carry each column's shift and scale, which one very large
firm sets: which groups break a rule, and how far inside a strict one each is aimed, is
asked in the columns' own units at each group's magnitude, and a projected group is moved,
in its own units, onto the face it reached (:mod:`sdcflow.core.linear.own_units`). A
column whose values standardized units cannot keep apart (a turnover of 1e40 among
thousands) is refused where a group must move, naming the column.

References
----------
.. [1] J. Domingo-Ferrer and J. M. Mateo-Sanz, "Practical data-oriented microaggregation for
   statistical disclosure control", IEEE Transactions on Knowledge and Data Engineering
   14(1), 2002, section 2 (the group centroid minimizes SSE).
.. [2] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074, section 3 (centres projected onto the constraints).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.file_units import FileUnits, file_units
from sdcflow.core.linear.own_units import (
    aimed_bounds,
    off_rules,
    onto_equalities,
    polish_onto_rules,
)
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.core.linear.repair import violating_records
from sdcflow.core.linear.rounding import round_keeping_equalities
from sdcflow.core.validation import lost_resolution, resolution_error
from sdcflow.errors import ParameterError

__all__ = [
    "Condition",
    "GroupValues",
    "breaking_conditions",
    "group_values_on_rules",
    "read_columns",
]

# Groups are projected onto the equalities all at once (False: one projector per pattern of
# weights, the route before; benchmarks/missing_rules.py times both)
BATCHED = True


Condition = Callable[[Mapping[str, np.ndarray]], np.ndarray]


class GroupValues(NamedTuple):
    """What :func:`group_values_on_rules` returns.

    Attributes
    ----------
    values : ndarray of shape (n, d)
        The released values; missing stays missing.
    moved : int
        How many groups were moved onto the rules.
    rounded : tuple of str
        The columns rounded here, per group, keeping the equalities (with ``decimals``):
        their values are final and must not be rounded again record by record.
    derived : tuple of str
        Among them, the columns solved from the equalities instead of rounded on their own.
    """

    values: np.ndarray
    moved: int
    rounded: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()


def group_values_on_rules(
    X: np.ndarray,
    released: np.ndarray,
    labels: np.ndarray,
    columns: Sequence[str],
    constraints: LinearConstraints | None,
    decimals: Sequence[int | None] | None = None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
    units: FileUnits | None = None,
) -> GroupValues:
    """Move each group's released values onto the linear rules (module docstring).

    Parameters
    ----------
    X : ndarray of shape (m, d)
        Records (NaN = missing) whose means and standard deviations standardize the columns:
        the whole file, so that every stratum is moved in the same units (or a part of it,
        with ``units``).
    released : ndarray of shape (n, d)
        Each record's group values on the columns it has, NaN where it has none.
    labels : ndarray of shape (n,)
        The group of each record, 0..g-1.
    columns : sequence of str, length d
        The names of the columns; rules that read any other column are not applied.
    constraints : LinearConstraints or None
    decimals : sequence of int or None, length d, optional
        The columns' precision (0: integers). The group values are rounded to it here,
        keeping the equalities among the columns each group has
        (:func:`~sdcflow.core.linear.rounding.round_keeping_equalities`): rounded record
        by record, a record missing a value of one equality would round the columns of
        another independently and break it by a unit.
    conditional : sequence of (condition, LinearConstraints)
        Rules ``if C then D`` with a linear consequent: ``condition`` maps column name ->
        group values (c,) (NaN = missing) to a (c,) bool array, True where ``C`` holds (False
        where it does not or is undetermined); ``D``'s rows are over ``constraints``'
        columns. Where ``C`` holds on a group's values once they are on the rules, the group
        is moved from its means onto the rules and ``D`` (as repair does for a record). A
        group mean keeps ``if employees == 0 then wages == 0`` on complete records (its
        employees are 0 only when every record's are), but not when a record missing
        employees brings its wages into the mean.
    units : FileUnits, optional
        The whole file's units of (at least) the rules' columns, when ``X`` is a part of it
        (:func:`~sdcflow.core.linear.file_units.file_units`: the same figures from the file
        or from its chunks). Default: those of ``X``.

    Returns
    -------
    GroupValues
    """
    out = np.array(released, dtype=np.float64, copy=True)
    if constraints is None and conditional:
        constraints = LinearConstraints.empty(conditional[0][1].columns)
    if constraints is None or (constraints.is_empty and not conditional):
        return GroupValues(out, 0)
    cols = list(columns)
    # rows reading a column not released as a number here (a key binned by `recode:`)
    kept = [c for c in constraints.columns if c in cols]
    constraints = constraints.restrict(kept)
    conditional = [(holds, rows.restrict(kept)) for holds, rows in conditional]
    conditional = [(holds, rows) for holds, rows in conditional if not rows.is_empty]
    if constraints.is_empty and not conditional:
        return GroupValues(out, 0)
    labels = np.asarray(labels, dtype=np.int64)
    n, d = out.shape
    if X.ndim != 2 or X.shape[1] != d or labels.shape != (n,):
        raise ParameterError("X, released and labels must describe the same d columns, n records")
    if n == 0:
        return GroupValues(out, 0)
    idx = np.array([cols.index(c) for c in constraints.columns], dtype=np.int64)
    g = int(labels.max()) + 1
    values = np.full((g, idx.size), np.nan)  # each group's value per rule column
    counts = np.zeros((g, idx.size), dtype=np.int64)  # its records that have the column
    for t, j in enumerate(idx):
        has = ~np.isnan(out[:, j])
        values[labels[has], t] = out[has, j]
        counts[:, t] = np.bincount(labels[has], minlength=g)
    means = values.copy()
    read = read_columns(constraints, conditional)
    units = _read_units(X, idx, read, constraints.columns, units)
    shift, scale = units.shift, units.scale
    # a column of one value across the file moves last: a tiny unit makes moving it dear (and
    # one whose sd passes the float range moves in a unit of its mean)
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1e-6 * np.maximum(1.0, np.abs(shift)))
    moves = _Units(values, counts, shift, scale, X, idx, constraints.columns, units.lost, read)
    patterns, which = np.unique(counts > 0, axis=0, return_inverse=True)
    which = which.ravel()
    dec = None if decimals is None else [decimals[j] for j in idx]
    rounding = dec is not None and any(x is not None for x in dec)
    derived: set[str] = set()
    for p, present in enumerate(patterns):
        sub = np.flatnonzero(present)
        if not sub.size:  # groups with none of the rule columns
            continue
        names = [constraints.columns[t] for t in sub]
        rules = constraints.restrict(names)
        # a consequent reading a column the group lacks is undetermined on its records
        extra = []
        for holds, rows in conditional:
            kept_rows = rows.restrict(names)
            if kept_rows.n_rows == rows.n_rows:
                extra.append((holds, kept_rows))
        if rules.is_empty and not extra and not rounding:
            continue
        groups = np.flatnonzero(which == p)
        binding = np.zeros((groups.size, len(extra)), dtype=bool)
        redo = np.ones(groups.size, dtype=bool)
        # Until no condition newly holds: a consequent's move can make another condition
        # true, and so can rounding (employees 1.4 -> 1 under `if employees <= 1 then ...`).
        # A consequent, once binding, stays (each round adds one or stops).
        for _ in range(len(extra) + 1):
            for bound in np.unique(binding[redo], axis=0):
                these = groups[redo & (binding == bound).all(axis=1)]
                on = [r for (_, r), b in zip(extra, bound, strict=True) if b]
                values[np.ix_(these, sub)] = means[np.ix_(these, sub)]
                grid = None if dec is None else [dec[t] for t in sub]
                try:
                    stacked = rules.with_rows(*on)
                    moves.onto(these, sub, stacked, grid)
                except ParameterError:  # consequents that together admit no value: the
                    stacked = rules  # rules alone; the validation then counts the rule
                    moves.onto(these, sub, stacked, grid)
                if rounding:  # every group of the pattern, bound by rules or not
                    assert dec is not None
                    done = round_keeping_equalities(
                        values[np.ix_(these, sub)], names, [dec[t] for t in sub], stacked
                    )
                    values[np.ix_(these, sub)] = done.values
                    derived.update(done.derived)
            if not extra:
                break
            at = {c: values[groups, t] for t, c in enumerate(constraints.columns)}
            now = binding.copy()
            for i, (holds, _) in enumerate(extra):
                now[:, i] |= np.asarray(holds(at), dtype=bool)
            redo = (now != binding).any(axis=1)
            if not redo.any():
                break
            binding = now
    for t, j in enumerate(idx):
        has_j = ~np.isnan(out[:, j])
        out[has_j, j] = values[labels[has_j], t]
    rounded = tuple(constraints.columns) if rounding else ()
    return GroupValues(out, int(moves.moved.sum()), rounded, tuple(sorted(derived)))


def read_columns(
    constraints: LinearConstraints,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
) -> np.ndarray:
    """Which of ``constraints.columns`` (r,) some rule reads, its consequents' included (each
    restricted to the same columns)."""
    read = np.zeros(len(constraints.columns), dtype=bool)
    for rows in [constraints, *(r for _, r in conditional)]:
        read |= (rows.A != 0).any(axis=0) | (rows.G != 0).any(axis=0)
    return read


def _read_units(
    X: np.ndarray,
    idx: np.ndarray,
    read: np.ndarray,
    columns: Sequence[str],
    units: FileUnits | None,
) -> FileUnits:
    """The units of ``columns`` (``X[:, idx]``): the file's (``units``, or measured on
    ``X``) for those ``read`` (r,) by some rule, 0 and 1 for the others, which no
    projection moves (a column without a coefficient keeps its value bit for bit) and whose
    measure would cost a pass over the file each."""
    names = [c for c, r in zip(columns, read, strict=True) if r]
    found = file_units(X[:, idx[read]], names) if units is None else units.take(names)
    shift, scale = np.zeros(read.size), np.ones(read.size)
    shift[read], scale[read] = found.shift, found.scale
    lost = None
    if found.lost is not None:
        lost = np.zeros(read.size, dtype=bool)
        lost[read] = found.lost
    return FileUnits(tuple(columns), shift, scale, lost)


class _Units:
    """Each group's values ``values`` (g, r), its counts per column, and the columns' shift
    and scale: projects groups onto rules in standardized units, weighted by the counts.
    ``X[:, idx]`` (m, r) are the file's values of the columns, ``names`` their names: a
    column whose values standardized units cannot keep apart (``lost`` (r,), the file's
    verdicts, or None to measure them on ``X`` for the columns ``read`` (r,) by some rule) is
    refused where a group must move."""

    def __init__(self, values, counts, shift, scale, X, idx, names, lost, read) -> None:
        self.values, self.counts, self.shift, self.scale = values, counts, shift, scale
        self.moved = np.zeros(len(values), dtype=bool)
        self._X, self._idx, self._names, self._read = X, idx, names, read
        self._lost: np.ndarray | None = lost  # the file's, or measured on X when needed

    def onto(
        self,
        groups: np.ndarray,
        sub: np.ndarray,
        rules: LinearConstraints,
        grid: list[int | None] | None = None,
    ) -> None:
        """Project, in place, the values of ``groups`` on the columns ``sub`` that break
        ``rules`` (the module docstring's problem). Strict rows are aimed inside by the
        allowance at each group's own magnitude, or on the ``grid`` of the columns' decimals
        (:func:`~sdcflow.core.tolerances.strict_bound`).

        Raises ``DataError`` (``VALUES_RANGE``) when a group must move and a column of
        ``sub`` has no usable weight (its scale past 1e154, or not finite), or has values
        so far from its others (a turnover of 1e40 among thousands) that standardized units
        cannot keep them apart (:func:`~sdcflow.core.validation.lost_resolution`) and
        they moved it, or an equality or an inequality of the group's face ties it to the
        move."""
        if rules.is_empty:
            return
        shift, scale = self.shift[sub], self.scale[sub]
        V = np.ascontiguousarray(self.values[np.ix_(groups, sub)])
        # which groups break the rules is asked in the columns' own units, at each group's
        # magnitude: in standardized units, where the rules' terms carry the columns' shift
        # and scale, a group of 1e4 breaking a sum by 0.1 beside a scale of 1e11 passed, and
        # a strict row's margin at the columns' scale moved groups that kept it by hundreds
        off = off_rules(V, rules, aimed_bounds(rules, V, grid), exact=True) > 0
        if not off.any():
            return  # nothing to move: no projector (and no standardized units) needed
        lost = self._lost_columns(sub)
        with np.errstate(over="ignore"):  # a scale past 1e154 has no weight 1 / scale^2
            unusable = ~np.isfinite(shift) | ~(np.isfinite(scale**2) & (scale > 0))
        self._refuse(sub, unusable)  # no metric to move in (values past 1e154, or not finite)
        # aimed at the least margin there (the grid's, or the allowance at magnitude 0); the
        # polish below takes each group to its own
        closed = rules.tightened(None, grid)
        base = PolyhedronProjector.from_constraints(closed, shift=shift, scale=scale)
        groups, V = groups[off], V[off]
        Z = (V - shift) / scale
        # the weights n_gj make the change the group's own added sum of squares
        counts = self.counts[np.ix_(groups, sub)].astype(np.float64)
        P = np.empty_like(Z)
        rest = np.ones(len(Z), dtype=bool)
        if base.n_eq and BATCHED:
            # every group at once onto the equalities (the closed form with its own weights);
            # those that then meet the inequalities too are projected
            P = onto_equalities(Z, counts, base.A, base.b)
            rest = ~base.feasible(P)
        if rest.any():  # the active set, one projector per pattern of weights
            weights, by_weight = np.unique(counts[rest], axis=0, return_inverse=True)
            by_weight = by_weight.ravel()
            Zr, Pr = Z[rest], np.empty_like(Z[rest])
            for w, weight in enumerate(weights):
                rows = by_weight == w
                Pr[rows] = base.reweighted(weight).project(Zr[rows], skip_feasible=False)
            P[rest] = Pr
        # back in own units; a value the projection did not move is the group's own, bit for
        # bit (the projections keep a column no row of the face reads exactly in place)
        still = P == Z
        X = np.where(still, V, shift + scale * P)
        H = aimed_bounds(rules, np.maximum(np.abs(V), np.abs(X)), grid)  # before and after the move
        # Two candidates. The polish from X onto the rows X breaks (near X: exact on the
        # rules, but along the face only to the rounding of the giants' scale). And the
        # group's means projected in own units onto the face X holds (read within the
        # rounding a moved value came back with): the projection itself when that face is
        # the right one, but the whole move is computed there, which can lose the equalities
        # when the columns' weights lie 1e10 apart, and a face read too wide (a row held to
        # rounding) is a worse point. The second is taken only where its face settles (no
        # row pulling the wrong way), it holds every rule exactly and within half the
        # validation's allowance, and it is no farther from the means.
        W = counts / scale**2
        near = polish_onto_rules(X, W, rules, H)
        carried = np.where(still, 0.0, 64 * np.finfo(float).eps * (np.abs(shift) + scale))
        slack = 1e-12 * (1.0 + np.abs(X) @ np.abs(rules.G).T + np.abs(H))
        face = X @ rules.G.T - H >= -(carried @ np.abs(rules.G).T + slack)
        exact = polish_onto_rules(X, W, rules, H, start=V, face=face)
        a, b = rules.snap_bounds(near.values, H), rules.snap_bounds(exact.values, H)
        cost_a, cost_b = (W * (a - V) ** 2).sum(axis=1), (W * (b - V) ** 2).sum(axis=1)
        # on every rule exactly, and well inside the validation's allowance (looser than the
        # exact test above terms of 1e4), on a face whose rows all pull the right way
        holds = (off_rules(b, rules, H, exact=True) == 0) & (off_rules(b, rules, H) <= 0.5)
        holds &= exact.settled & ~exact.kept
        take = holds & ((cost_b <= cost_a * (1 + 1e-6)) | (off_rules(a, rules, H) > 1.0))
        if lost.any():
            # a column standardized units cannot keep apart is refused where they moved it,
            # or where a row that ties it to other columns (an equality, or an inequality on
            # a group's face) carried its rounding into their move; one left in place, that
            # such rows do not read, keeps the group's own value bit for bit (a bound of its
            # own, interest >= 0 held at 0, ties it to nothing)
            ties = (rules.G != 0).sum(axis=1) > 1
            on = (face | np.where(take[:, None], exact.face, near.face)) & ties
            read = (on @ (rules.G != 0)) | (rules.A != 0).any(axis=0) | ~still
            self._refuse(sub, lost & read.any(axis=0))
        self.values[np.ix_(groups, sub)] = np.where(take[:, None], b, a)
        self.moved[groups] = True

    def _refuse(self, sub: np.ndarray, lost: np.ndarray) -> None:
        """Refuse (``DataError``, ``VALUES_RANGE``) the first of the columns ``sub`` marked
        ``lost`` (r,) bool, if any."""
        if lost.any():
            name = self._names[int(sub[np.flatnonzero(lost)[0]])]
            raise resolution_error(name, "moving group values onto the edit rules")

    def _lost_columns(self, sub: np.ndarray) -> np.ndarray:
        """:func:`lost_resolution` of the columns ``sub`` (r,): measured over the file's
        columns the first time a group must move, once per call of
        :func:`group_values_on_rules`."""
        if self._lost is None:  # the columns no rule reads never move: not measured
            self._lost = np.zeros(self._idx.size, dtype=bool)
            self._lost[self._read] = lost_resolution(self._X[:, self._idx[self._read]])
        return self._lost[sub]


def breaking_conditions(
    values: np.ndarray,
    columns: Sequence[str],
    conditional: Sequence[tuple[Condition, LinearConstraints]],
    tolerances: Mapping[str, float] | None = None,
) -> np.ndarray:
    """Records (n,) bool whose ``values`` (n, d) meet a condition ``C`` of ``conditional``
    and break its consequent ``D`` as the validation counts it
    (:func:`~sdcflow.core.linear.repair.violating_records`: the default tolerance, or the
    one ``tolerances`` gives ``D``'s rule by name, plus the rounding slack; a strict ``D``
    exactly). A consequent reading a column not among ``columns`` (a key
    binned by ``recode:``) is not checked here."""
    cols = list(columns)
    bad = np.zeros(values.shape[0], dtype=bool)
    at = {c: values[:, j] for j, c in enumerate(cols)}
    for holds, rows in conditional:
        kept = rows.restrict([c for c in rows.columns if c in cols])
        if kept.n_rows != rows.n_rows or kept.is_empty:
            continue
        met = np.asarray(holds(at), dtype=bool)
        if met.any():
            idx = [cols.index(c) for c in kept.columns]
            bad[met] |= violating_records(values[np.ix_(met, idx)], kept, row_tol=tolerances)
    return bad
