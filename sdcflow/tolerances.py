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
exact.

The SQL of :mod:`sdcflow.expectations.compile` and the record check of
:func:`sdcflow.tasks.linear.repair.violating_records` both apply it, so that repair moves
exactly the records the validation counts.
"""

from __future__ import annotations

__all__ = ["DEFAULT_TOLERANCE", "ROUNDING_SLACK"]

DEFAULT_TOLERANCE = 1e-8
ROUNDING_SLACK = 1e-14
