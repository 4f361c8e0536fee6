"""Group values that keep the linear edit rules when some values are missing.

Microaggregation releases each group's mean. On complete records that satisfy
``A x = b, G x <= h`` the mean does too: the set is convex. With missing values each column's
mean is taken over the records that have it, so the columns of one group are means over
different records and ``net + tax == gross`` no longer holds between them: on the business
survey with 5 % of each value missing, 2 304 of 3 000 released records broke a rule.

Here each group's values ``r`` (d,) are moved onto the rules its records can be checked
against, by the least change of the group's own sum of squares in standardized units:

    r* = argmin_r  sum_j n_j ((r_j - m_j) / s_j)^2   s.t.  A r = b,  G r <= h,

where ``m_j`` is the group's mean of column ``j`` over its ``n_j`` records that have it and
``s_j`` the column's standard deviation over the file. The group's within-group sum of
squares is ``sum_j sum_i ((x_ij - r_j) / s_j)^2 = const + sum_j n_j ((r_j - m_j) / s_j)^2``
(the mean minimizes it, [1]_ section 2), so ``r*`` is the constrained least-squares
representative of the group: the weighted projection of its means onto the rules
(:class:`PolyhedronProjector`, as constrained centres are projected in [2]_ section 3).
A group whose column ``j`` is missing on every record releases no value there, so only the
rules that do not read ``j`` bind it. Groups whose means already satisfy their rules (every
group without a missing value) keep them bit for bit.

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

from collections.abc import Sequence

import numpy as np

from sdcflow.errors import ParameterError
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.linear.projection import PolyhedronProjector

__all__ = ["group_values_on_rules"]


def group_values_on_rules(
    X: np.ndarray,
    released: np.ndarray,
    labels: np.ndarray,
    columns: Sequence[str],
    constraints: LinearConstraints | None,
) -> tuple[np.ndarray, int]:
    """Move each group's released values onto the linear rules (module docstring).

    Parameters
    ----------
    X : ndarray of shape (m, d)
        Records (NaN = missing) whose means and standard deviations standardize the columns:
        the whole file, so that every stratum is moved in the same units.
    released : ndarray of shape (n, d)
        Each record's group values on the columns it has, NaN where it has none.
    labels : ndarray of shape (n,)
        The group of each record, 0..g-1.
    columns : sequence of str, length d
        The names of the columns; rules that read any other column are not applied.
    constraints : LinearConstraints or None

    Returns
    -------
    released : ndarray of shape (n, d)
        A new array; missing stays missing.
    moved : int
        How many groups were moved.
    """
    out = np.array(released, dtype=np.float64, copy=True)
    if constraints is None or constraints.is_empty:
        return out, 0
    cols = list(columns)
    # rows reading a column not released as a number here (a key binned by `recode:`)
    constraints = constraints.restrict([c for c in constraints.columns if c in cols])
    if constraints.is_empty:
        return out, 0
    labels = np.asarray(labels, dtype=np.int64)
    n, d = out.shape
    if X.ndim != 2 or X.shape[1] != d or labels.shape != (n,):
        raise ParameterError("X, released and labels must describe the same d columns, n records")
    if n == 0:
        return out, 0
    idx = np.array([cols.index(c) for c in constraints.columns])
    g = int(labels.max()) + 1
    values = np.full((g, idx.size), np.nan)  # each group's value per rule column
    counts = np.zeros((g, idx.size), dtype=np.int64)  # its records that have the column
    for t, j in enumerate(idx):
        has = ~np.isnan(out[:, j])
        values[labels[has], t] = out[has, j]
        counts[:, t] = np.bincount(labels[has], minlength=g)
    filled = np.where(np.isnan(X[:, idx]).all(axis=0), 0.0, X[:, idx])  # a column of gaps
    shift = np.nanmean(filled, axis=0) if len(X) else np.zeros(idx.size)
    scale = np.nanstd(filled, axis=0) if len(X) > 1 else np.ones(idx.size)
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    patterns, which = np.unique(counts > 0, axis=0, return_inverse=True)
    which = which.ravel()
    moved = 0
    for p, present in enumerate(patterns):
        rules = constraints.restrict([constraints.columns[t] for t in np.flatnonzero(present)])
        if rules.is_empty:
            continue
        sub = np.flatnonzero(present)
        base = PolyhedronProjector.from_constraints(rules, shift=shift[sub], scale=scale[sub])
        groups = np.flatnonzero(which == p)
        Z = (values[np.ix_(groups, sub)] - shift[sub]) / scale[sub]
        off = ~base.feasible(Z)
        if not off.any():
            continue
        groups, Z = groups[off], Z[off]
        # the weights n_gj make the change the group's own added sum of squares
        weights, by_weight = np.unique(counts[np.ix_(groups, sub)], axis=0, return_inverse=True)
        by_weight = by_weight.ravel()
        P = np.empty_like(Z)
        for w, weight in enumerate(weights):
            rows = by_weight == w
            P[rows] = base.reweighted(weight.astype(np.float64)).project(
                Z[rows], skip_feasible=False
            )
        moved += groups.size
        values[np.ix_(groups, sub)] = rules.snap_bounds(shift[sub] + scale[sub] * P)
    if moved:
        for t, j in enumerate(idx):
            has_j = ~np.isnan(out[:, j])
            out[has_j, j] = values[labels[has_j], t]
    return out, moved
