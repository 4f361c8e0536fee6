"""Fuzzy sets over the range of a sensitive numeric attribute, and the affinity of a value
to each set ([1]_ section 2 and 3).

A :class:`FuzzySets` is a list of ranges ``[lo_i, hi_i]`` with peaks ``m_i = (lo_i + hi_i)/2``,
numbered 1..k in the order given; ranges of the domain that no set covers get extra sets,
numbered after the given ones ([1]_ section 3: the ranges 0-20, 10-40, 20-60, 80-100 leave
60-80 uncovered, "so we define a fifth fuzzy function f5: [60, 80] with m5 = 70").
:func:`uniform_sets` places k sets over ``[min, max]`` with peaks ``m_i = min + i h``,
``h = (max - min)/(k + 1)``, so set i spans ``[m_{i-1}, m_{i+1}]`` (``m_0 = min``,
``m_{k+1} = max``): k = 3 on [0, 100] gives 0-50, 25-75, 50-100 with peaks 25, 50, 75 ([1]_
section 2).

Three shapes of the affinity ``f_i(x)``, differing at the outer sets (the set starting at the
domain's minimum, "first", and the one ending at its maximum, "last"):

* ``earlier`` (the definition of [2]_ as quoted in [1]_ section 2): the first set falls
  linearly from 0.99 at ``x = min`` to 0 at its upper end, ``(hi - x)/(hi - min)``; the last
  rises from its lower end to 0.99 at ``x = max``, ``(x - lo)/(max - lo)``; interior sets are
  triangles with 0.99 exactly at the peak. With k = 3 on [0, 100]: ``f1(5) = 45/50 = 0.9``,
  ``f1(45) = 5/50 = 0.1``, ``f2(45) = 20/25 = 0.8`` ([1]_ section 2).
* ``modified`` ([1]_ section 3, the paper's contribution): affinity 1 between the domain's end
  and the first (last) peak, ``f1 = 1`` on ``[min, m1)``, ``(m2 - x)/(m2 - m1)`` on
  ``[m1, m2)``; interior sets are triangles with 1 at the peak. Uniform sets then sum to 1
  everywhere.
* ``triangular``: every set, outer ones included, a triangle over its range,
  ``(x - lo)/(m - lo)`` on ``[lo, m)`` and ``(hi - x)/(hi - m)`` on ``[m, hi)``: the functions
  [1]_ writes out for its custom ranges (``f1 = x/10`` on [0, 10), ``f2 = (x - 10)/15`` on
  [10, 25), ...; ``f1(15) = 0.5``, ``f2(15) = 0.33``).

Zero affinity everywhere. The triangular shape gives 0 at the domain's ends and at the shared
foot of two abutting sets (60 and 80 in the paper's custom example); the paper leaves such a
value unmapped. sdcflow's convention: the value belongs, with affinity 0, to every set whose
closed range holds it (``Memberships.member``); the combiners then weigh those sets equally.

References
----------
.. [1] "Fuzzy-based Methods for Privacy-Preserving Data Mining", Eighth International
   Conference on Information Technology: New Generations (ITNG), IEEE, 2011,
   doi:10.1109/ITNG.2011.68 (the authors' names are not in the text supplied with sdcflow,
   ``shared/papers/fuzzy-mapping-ppdm.txt``).
.. [2] E. Poovammal and M. Ponnavaikko, "Preserving Micro data Release: categorical and
   Numerical Data", 5th International Conference on Sciences of Electronic, Technologies of
   Information and Telecommunications (SETIT), 2009.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from sdcflow.errors import DataError, ParameterError

Definition = Literal["earlier", "modified", "triangular"]
DEFINITIONS: tuple[str, ...] = get_args(Definition)
EARLIER_PEAK = 0.99  # [2] as quoted in [1] section 2: "0.99 if x = min", "0.99 if x = mi"


@dataclass(frozen=True)
class FuzzySets:
    """Fuzzy sets over a domain ``[dmin, dmax]``.

    Attributes
    ----------
    lo, peak, hi : ndarray of shape (k,)
        Range and peak of each set; set number ``i + 1`` is row ``i``.
    domain : (float, float)
        The attribute's range; every value to map must lie in it.
    definition : {"earlier", "modified", "triangular"}
        The shape of the outer sets (module docstring).
    n_given : int
        Sets given by the caller; rows ``n_given..k-1`` fill uncovered ranges.
    """

    lo: np.ndarray
    peak: np.ndarray
    hi: np.ndarray
    domain: tuple[float, float]
    definition: Definition = "modified"
    n_given: int = 0

    @property
    def k(self) -> int:
        return int(self.lo.size)

    @property
    def numbers(self) -> np.ndarray:
        """Set numbers 1..k, shape (k,), float (they are added to affinities)."""
        return np.arange(1, self.k + 1, dtype=np.float64)

    @property
    def first(self) -> int:
        """Row of the set that starts at the domain's minimum (ties: the lowest peak)."""
        return int(np.lexsort((self.peak, self.lo))[0])

    @property
    def last(self) -> int:
        """Row of the set that ends at the domain's maximum (ties: the highest peak)."""
        return int(np.lexsort((-self.peak, -self.hi))[0])

    def breakpoints(self) -> np.ndarray:
        """Sorted distinct points where some affinity changes formula: every lo, peak, hi and
        the domain's ends. Between two consecutive ones every affinity is linear in x."""
        pts = np.concatenate([self.lo, self.peak, self.hi, np.asarray(self.domain)])
        return np.unique(np.clip(pts, *self.domain))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description (the data owner's secret: never publish it)."""
        return {
            "ranges": [[float(a), float(b)] for a, b in zip(self.lo, self.hi, strict=True)],
            "domain": [float(self.domain[0]), float(self.domain[1])],
            "definition": self.definition,
            "n_given": self.n_given,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FuzzySets:
        """The inverse of :meth:`to_dict` (fillers included, so none is added again)."""
        ranges = np.asarray(data["ranges"], dtype=np.float64).reshape(-1, 2)
        return cls(
            lo=ranges[:, 0].copy(),
            peak=ranges.mean(axis=1),
            hi=ranges[:, 1].copy(),
            domain=(float(data["domain"][0]), float(data["domain"][1])),
            definition=_check_definition(data["definition"]),
            n_given=int(data.get("n_given", len(ranges))),
        )


@dataclass(frozen=True)
class Memberships:
    """Affinities of n values to k sets.

    Attributes
    ----------
    affinity : ndarray of shape (n, k), in [0, 1]
    member : ndarray of shape (n, k), bool
        The sets a value belongs to: positive affinity, or (when every affinity of the value
        is 0) the sets whose closed range holds it. Every row has at least one.
    numbers : ndarray of shape (k,)
        The set numbers added to the affinities (1..k).
    """

    affinity: np.ndarray
    member: np.ndarray
    numbers: np.ndarray

    @property
    def values(self) -> np.ndarray:
        """Candidate mapped values ``set number + affinity`` ([1]_ section 2), shape (n, k);
        meaningful where ``member``."""
        return self.numbers[None, :] + self.affinity


def _check_definition(definition: object) -> Definition:
    if definition not in DEFINITIONS:
        raise ParameterError(
            f"membership definition must be one of {', '.join(DEFINITIONS)}, got {definition!r}"
        )
    return definition  # type: ignore[return-value]


def _check_domain(domain: Sequence[float]) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in domain)
    except (TypeError, ValueError) as e:
        raise ParameterError("domain must be two numbers [min, max]") from e
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ParameterError("domain must be two finite numbers [min, max] with min < max")
    return lo, hi


def uniform_sets(k: int, domain: Sequence[float], definition: Definition = "modified") -> FuzzySets:
    """k equally spaced fuzzy sets over ``domain = (min, max)`` ([1]_ section 2).

    Peaks ``m_i = min + i h`` with ``h = (max - min)/(k + 1)``; set i spans
    ``[m_i - h, m_i + h]``. Shapes: -> arrays of shape (k,).
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ParameterError(f"the number of fuzzy sets must be an integer >= 2, got {k!r}")
    dmin, dmax = _check_domain(domain)
    h = (dmax - dmin) / (k + 1)
    peak = dmin + h * np.arange(1, k + 1)
    # Each set spans from the peak before it to the peak after it, the first from min and the
    # last to max, exactly: ``peak - h`` rounds (min = 10, max = 90, k = 2 gives a first set
    # starting at 10.000000000000004), and the file's minimum then belonged to no set and
    # was published as 0, NaN or -inf.
    return FuzzySets(
        lo=np.concatenate([[dmin], peak[:-1]]),
        peak=peak,
        hi=np.concatenate([peak[1:], [dmax]]),
        domain=(dmin, dmax),
        definition=_check_definition(definition),
        n_given=int(k),
    )


def custom_sets(
    ranges: Sequence[Sequence[float]],
    domain: Sequence[float],
    definition: Definition = "modified",
) -> FuzzySets:
    """Fuzzy sets on the given ranges, plus one set per range of ``domain`` none covers.

    Parameters
    ----------
    ranges : sequence of (lo, hi), length p
        Set i + 1 spans ``ranges[i]`` with its peak at the midpoint ([1]_ section 3).
    domain : (min, max)
        The attribute's range; it must hold every given range.
    definition : {"earlier", "modified", "triangular"}

    Returns
    -------
    FuzzySets
        k = p + (number of uncovered gaps) sets; the fillers, in increasing order, are
        numbered p + 1, ... ([1]_ section 3: [60, 80] becomes f5).
    """
    dmin, dmax = _check_domain(domain)
    arr = np.asarray(ranges, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        raise ParameterError("ranges must be a list of [lo, hi] pairs, at least one")
    if not np.isfinite(arr).all() or (arr[:, 0] >= arr[:, 1]).any():
        raise ParameterError("every range must be two finite numbers [lo, hi] with lo < hi")
    if arr.min() < dmin or arr.max() > dmax:
        raise ParameterError(
            "every range must lie inside the domain [min, max]; widen the domain or narrow "
            "the ranges"
        )
    # The uncovered parts of the domain: walk the ranges in order of their start.
    order = np.argsort(arr[:, 0], kind="stable")
    gaps, reach = [], dmin
    for lo, hi in arr[order]:
        if lo > reach:
            gaps.append((reach, lo))
        reach = max(reach, hi)
    if reach < dmax:
        gaps.append((reach, dmax))
    every = np.vstack([arr, np.asarray(gaps, dtype=np.float64).reshape(-1, 2)])
    return FuzzySets(
        lo=every[:, 0].copy(),
        peak=every.mean(axis=1),
        hi=every[:, 1].copy(),
        domain=(dmin, dmax),
        definition=_check_definition(definition),
        n_given=int(arr.shape[0]),
    )


def affinities(x: np.ndarray, sets: FuzzySets) -> np.ndarray:
    """Affinity of each value to each set (no validation; see :func:`memberships`).

    Shapes: x (n,) -> (n, k).
    """
    x = np.asarray(x, dtype=np.float64)[:, None]
    lo, m, hi = sets.lo[None, :], sets.peak[None, :], sets.hi[None, :]
    rising = (x - lo) / (m - lo)  # [1] section 3, f_i on [m_{i-1}, m_i)
    falling = (hi - x) / (hi - m)  # [1] section 3, f_i on [m_i, m_{i+1})
    # The triangle, as [1] section 3 writes the custom sets: rising on [lo, m), falling on
    # [m, hi), 0 elsewhere.
    out = np.where((x >= lo) & (x < m), rising, np.where((x >= m) & (x < hi), falling, 0.0))
    first, last = sets.first, sets.last
    xf = x[:, 0]
    if sets.definition == "modified":
        # [1] section 3: f1 = 1.0 if min <= x < m1; fk = 1.0 if mk <= x <= max.
        out[:, first] = np.where(
            (xf >= sets.lo[first]) & (xf < sets.peak[first]), 1.0, out[:, first]
        )
        out[:, last] = np.where((xf >= sets.peak[last]) & (xf <= sets.hi[last]), 1.0, out[:, last])
    elif sets.definition == "earlier":
        # [2] via [1] section 2: 0.99 at the peaks of interior sets, at min for f1, at max for
        # fk; f1 = (m2 - x)/(m2 - min) and fk = (x - m_{k-1})/(max - m_{k-1}) between.
        at_peak = x == m
        out = np.where(at_peak, EARLIER_PEAK, out)
        lo1, hi1 = sets.lo[first], sets.hi[first]
        out[:, first] = np.where(
            xf == lo1,
            EARLIER_PEAK,
            np.where((xf > lo1) & (xf < hi1), (hi1 - xf) / (hi1 - lo1), 0.0),
        )
        lok, hik = sets.lo[last], sets.hi[last]
        out[:, last] = np.where(
            xf == hik,
            EARLIER_PEAK,
            np.where((xf > lok) & (xf < hik), (xf - lok) / (hik - lok), 0.0),
        )
    return out


def memberships(x: object, sets: FuzzySets, *, name: str = "x") -> Memberships:
    """Affinities and set memberships of the values ``x`` (module docstring).

    Parameters
    ----------
    x : array_like of shape (n,)
        Finite values inside ``sets.domain``.
    sets : FuzzySets
    name : str
        How error messages call ``x``.

    Returns
    -------
    Memberships
        ``affinity`` and ``member`` of shape (n, k).

    Raises
    ------
    DataError
        ``x`` is not a finite 1-D numeric array, or some values lie outside the domain (the
        message gives their count, never a value).
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DataError(f"{name} must be numeric") from e
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-dimensional (one value per record)")
    if not np.isfinite(arr).all():
        raise DataError(
            f"{name} has {int((~np.isfinite(arr)).sum())} missing or infinite value(s); drop or "
            "impute them before mapping"
        )
    dmin, dmax = sets.domain
    outside = int(((arr < dmin) | (arr > dmax)).sum())
    if outside:
        raise DataError(
            f"{name}: {outside} value(s) lie outside the fuzzy sets' domain; widen the domain "
            "so that it holds every value"
        )
    aff = affinities(arr, sets)
    member = aff > 0
    none = ~member.any(axis=1)
    if none.any():
        xs = arr[none][:, None]
        member[none] = (xs >= sets.lo[None, :]) & (xs <= sets.hi[None, :])
    return Memberships(affinity=aff, member=member, numbers=sets.numbers)
