"""When a record meets an edit rule: the tolerances the validation and the repair share.

A non-strict comparison ``r <= 0`` or ``r == 0`` on a rule's residual ``r = a . x - b``
holds when ``|r|`` (or ``r``) is at most ``tol + ROUNDING_SLACK * (sum_j |a_j x_j| + |b|)``:
the rule's absolute ``tolerance`` (``DEFAULT_TOLERANCE`` unless it names its own, as
``lin.eq.eps`` in R's ``validate``) plus the binary rounding of the terms. A double carries
about 16 significant digits, so ``1783314616.29 + 295173159.14 - 2078487775.43`` is 2.4e-7 in
double arithmetic, not 0; an absolute tolerance meant for the data cannot absorb that at every
magnitude. 1e-14 of the terms is about 45 units in the last place: above what a double
evaluation of a rule, a mean or a projection leaves, and no more, so that a cent is still an
error while the terms' magnitudes sum to less than 1e12 (a unit to 1e14). Beyond that a
double cannot tell a cent anyway (its spacing at 1e13 is 0.002). Strict comparisons are
exact; a value moved to meet one is moved inside by :func:`strict_bound`. The rule-set check
before a run reads the same published grid (:func:`grid_bound`).

The SQL of :mod:`sdcflow.expectations.compile` and the record check of
:func:`sdcflow.core.linear.repair.violating_records` both apply it, so that repair moves
exactly the records the validation counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

__all__ = ["DEFAULT_TOLERANCE", "ROUNDING_SLACK", "grid_bound", "grid_step", "strict_bound"]

DEFAULT_TOLERANCE = 1e-8
ROUNDING_SLACK = 1e-14


def strict_bound(
    h: float,
    coefs: Sequence[float],
    decimals: Sequence[int | None] | None = None,
    magnitude: float | np.ndarray = 0.0,
) -> float | np.ndarray:
    """The closed bound ``g . x <= h'`` that values aiming at the strict row ``g . x < h``
    are moved to: ``DEFAULT_TOLERANCE + 2 ROUNDING_SLACK (|h| + magnitude)`` inside
    (``magnitude`` is ``sum_j |g_j| m_j`` at the columns' typical magnitudes ``m``, 0 when
    unknown). The validation counts a record within ``ROUNDING_SLACK`` of the row's terms
    as on the boundary; the second one keeps the aimed point clear of that by far more
    than the rounding of evaluating the row (beyond 1e8, the 1e-8 alone is under an ulp,
    and a point aimed there, rounded again, was published breaking the row). On the grid
    of :func:`grid_step`, when there is one, at least its last value below ``h``
    (``wages < 1`` on integers is ``wages <= 0``). ``coefs`` are the row's coefficients,
    ``decimals`` their columns' decimals (same order, None where a column has no
    precision). ``magnitude`` may be an array (one per record): the bounds (same shape) at
    each record's own magnitude.
    """
    inside = h - (DEFAULT_TOLERANCE + 2 * ROUNDING_SLACK * (abs(h) + magnitude))
    on_grid = grid_bound(h, coefs, decimals)
    if on_grid is None:
        return inside
    return np.minimum(inside, on_grid) if np.ndim(inside) else min(inside, on_grid)


def grid_bound(
    h: float, coefs: Sequence[float], decimals: Sequence[int | None] | None
) -> float | None:
    """The last value below ``h`` of the grid ``g . x`` takes (:func:`grid_step`), ``h``
    read as written (0.1, not the double above it); None when there is no grid."""
    step = grid_step(coefs, decimals)
    if step is None:
        return None
    return float(step * (math.ceil(Fraction(repr(float(h))) / step) - 1))


def grid_step(coefs: Sequence[float], decimals: Sequence[int | None] | None) -> Fraction | None:
    """The step of the grid ``g . x`` takes when every column it reads (``coefs`` their
    coefficients, ``decimals`` their decimals, same order) is a multiple of
    ``10^-decimals[j]``: the greatest common divisor of the ``|g_j| 10^-dec_j``; None when a
    column has no precision or a coefficient is no ratio of integers below 1e9."""
    if decimals is None:
        return None
    terms = []
    for g, dec in zip(coefs, decimals, strict=True):
        if g == 0:
            continue
        if dec is None:
            return None
        coef = Fraction(float(abs(g))).limit_denominator(10**9)
        if float(coef) != abs(g):
            return None
        terms.append(coef * Fraction(10) ** -int(dec))
    if not terms:
        return None
    lcm_den = math.lcm(*(t.denominator for t in terms))
    return Fraction(math.gcd(*(int(t * lcm_den) for t in terms)), lcm_den)
