"""The seven ways of [1]_ section 3 to turn a value's candidates ``set number + affinity``
into one mapped value.

For ``x = 15`` with the paper's five custom sets the candidates are 1.5 (affinity 0.5) and
2.33 (affinity 1/3), and ([1]_ section 3, (i)-(vii)):

==================== ============================================== =============
combiner             mapped value                                    x = 15
==================== ============================================== =============
arithmetic_average   mean of the candidates                          1.917
normalized_average   ``sum w_i (i + w_i)``, ``w = a / sum a``        1.92
weighted_average     ``sum a_i (i + a_i) / sum a_i``                 1.833
highest_affinity     the candidate of the largest affinity           1.5
random_pick          one candidate, uniformly at random              1.5 or 2.33
maximum              the largest candidate                           2.33
minimum              the smallest candidate                          1.5
==================== ============================================== =============

Two of the paper's figures are misprints, pinned down by its own derivation: (i) prints
"(1.5+2.33) or 1.915" (the sum without the division by 2; the mean is 1.917), and (ii) writes
"the weighted average (1.60*0.6+2.4*0.4) or 2.0", whose product sum is 1.92 (2.0 is the plain
mean of 1.6 and 2.4). sdcflow implements the formula (ii) states. When every affinity of a
value is 0 (see :mod:`.membership`) the averages weigh its sets equally. Ties of the highest
affinity go to the lowest set number.

The random pick draws from an explicit ``numpy.random.Generator`` (the seed is the data
owner's secret: with it and the original values the owner redoes the mapping).

References
----------
.. [1] "Fuzzy-based Methods for Privacy-Preserving Data Mining", Eighth International
   Conference on Information Technology: New Generations (ITNG), IEEE, 2011,
   doi:10.1109/ITNG.2011.68.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from sdcflow.core.fuzzy_mapping.membership import Memberships
from sdcflow.core.validation import check_random_state
from sdcflow.errors import ParameterError

Combiner = Literal[
    "arithmetic_average",
    "normalized_average",
    "weighted_average",
    "highest_affinity",
    "random_pick",
    "maximum",
    "minimum",
]
COMBINERS: tuple[str, ...] = get_args(Combiner)
#: The paper's labels M1..M7 (Tables 1-3), in the order of :data:`COMBINERS`.
PAPER_LABELS = dict(zip(COMBINERS, ("M1", "M2", "M3", "M4", "M5", "M6", "M7"), strict=True))
DETERMINISTIC = frozenset(COMBINERS) - {"random_pick"}


def check_combiner(combiner: object) -> str:
    if combiner not in COMBINERS:
        raise ParameterError(f"combiner must be one of {', '.join(COMBINERS)}, got {combiner!r}")
    return str(combiner)


def _weights(m: Memberships) -> np.ndarray:
    """Affinities of the member sets, rows summing to 1; equal weights on an all-zero row.

    Shapes: -> (n, k).
    """
    a = np.where(m.member, m.affinity, 0.0)
    total = a.sum(axis=1, keepdims=True)
    equal = m.member / m.member.sum(axis=1, keepdims=True)
    return np.where(total > 0, a / np.where(total > 0, total, 1.0), equal)


def combine(
    m: Memberships, combiner: str, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """One mapped value per record from its candidates ``set number + affinity``.

    Parameters
    ----------
    m : Memberships
        Affinities and memberships, shape (n, k).
    combiner : str
        One of :data:`COMBINERS`.
    rng : numpy.random.Generator or int, optional
        Used by ``random_pick`` only (required there).

    Returns
    -------
    ndarray of shape (n,)
    """
    combiner = check_combiner(combiner)
    values, member = m.values, m.member
    if combiner == "arithmetic_average":  # [1] section 3 (i)
        return np.where(member, values, 0.0).sum(axis=1) / member.sum(axis=1)
    if combiner == "normalized_average":  # [1] section 3 (ii)
        w = _weights(m)
        return np.where(member, w * (m.numbers[None, :] + w), 0.0).sum(axis=1)
    if combiner == "weighted_average":  # [1] section 3 (iii)
        w = _weights(m)
        return np.where(member, w * values, 0.0).sum(axis=1)
    if combiner == "highest_affinity":  # [1] section 3 (iv)
        best = np.argmax(np.where(member, m.affinity, -1.0), axis=1)
        return np.take_along_axis(values, best[:, None], axis=1)[:, 0]
    if combiner == "maximum":  # [1] section 3 (vi)
        return np.where(member, values, -np.inf).max(axis=1)
    if combiner == "minimum":  # [1] section 3 (vii)
        return np.where(member, values, np.inf).min(axis=1)
    # [1] section 3 (v): one of the candidates, each equally likely.
    if rng is None:
        raise ParameterError(
            "random_pick needs a random generator: pass rng (a numpy.random.Generator or seed)"
        )
    rng = check_random_state(rng)
    count = member.sum(axis=1)
    pick = np.minimum((rng.random(count.size) * count).astype(np.int64), count - 1)
    # column of the pick-th member set in each row
    rank = np.cumsum(member, axis=1) - 1
    col = np.argmax(member & (rank == pick[:, None]), axis=1)
    return np.take_along_axis(values, col[:, None], axis=1)[:, 0]
