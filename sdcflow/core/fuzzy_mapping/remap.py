"""Map intervals of the mapped attribute back to the original domain ([1]_ section 4.2, Fig. 1:
the data owner "remaps the mapped sensitive attributes in the association rules back to the
original domain").

The preimage of an interval ``(c0, c1]`` of mapped values is exact. Between two consecutive
breakpoints of the sets (every ``lo``, peak and ``hi``) each affinity is linear in ``x``, so a
candidate ``i + a_i(x)`` and the arithmetic average are linear, the weighted average is
quadratic over linear and the normalized average quadratic over quadratic; maximum, minimum and
highest affinity switch candidate only where two candidates (or two affinities) cross. The
roots of ``g(x) = c0``, ``g(x) = c1`` and of every crossing cut the piece into open gaps on
which membership of the preimage cannot change; one evaluation of the forward map at each cut
point and at each gap's midpoint decides it.

For ``random_pick`` the mapping of one record depends on the draw, so the preimage returned is
every ``x`` one of whose candidates lies in the interval (what the owner can say without the
records; with them and the seed, the mapped values themselves). The paper's Table 3 example:
uniform sets k = 3 on [17, 90] (modified), random pick, bin ``(1.77055, 2.5137]`` gives ages
in ``[17, 71.75)``, "17-71" on the integer ages.

Rules. :func:`remap_rule_text` rewrites the items of a rule written as Weka prints them
(``age='(1.77055-2.5137]'``, ``age='(-inf-35.25]'``, ``age='(71.75-inf)'``) or as
``age in (1.77, 2.51]``, for the mapped columns given, and leaves the rest of the line as it is.

References
----------
.. [1] "Fuzzy-based Methods for Privacy-Preserving Data Mining", Eighth International
   Conference on Information Technology: New Generations (ITNG), IEEE, 2011,
   doi:10.1109/ITNG.2011.68.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations, pairwise

import numpy as np
from numpy.polynomial import polynomial as P

from sdcflow.core.fuzzy_mapping.combiners import check_combiner, combine
from sdcflow.core.fuzzy_mapping.membership import FuzzySets, affinities, memberships
from sdcflow.errors import ParameterError

_TOL = 1e-9


@dataclass(frozen=True)
class Interval:
    """An interval of the original domain, with its end points open or closed."""

    lo: float
    hi: float
    lo_closed: bool = True
    hi_closed: bool = True

    def __str__(self) -> str:
        left = "[" if self.lo_closed else "("
        right = "]" if self.hi_closed else ")"
        if self.lo == self.hi:
            return f"{{{_fmt(self.lo)}}}"
        return f"{left}{_fmt(self.lo)}, {_fmt(self.hi)}{right}"


def _fmt(v: float) -> str:
    """A bound of a preimage, to 12 significant digits: six (as before) moved the bounds of an
    income of a million by up to 5 and showed `1.23457e+06` for 1234567.875."""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.12g}"


def _real_roots(coef: np.ndarray, p: float, q: float) -> list[float]:
    """Real roots in the open interval (p, q) of the polynomial with coefficients ``coef``
    (lowest degree first); an identically zero polynomial has none that matter.

    A double root (a combiner's curve touching a level: its minimum exactly at a bin's bound)
    comes back as a complex pair ``r +- i*e`` with ``e`` near the square root of the rounding
    error, so roots within 1e-6 of the real axis count: a cut point too many only splits a gap
    in two, a missing one loses the single value that touches the level."""
    coef = np.trim_zeros(np.asarray(coef, dtype=np.float64), "b")
    if coef.size <= 1:
        return []
    roots = P.polyroots(coef)
    real = roots[np.abs(roots.imag) <= 1e-6 * (1 + np.abs(roots.real))].real
    return [float(r) for r in real if p < r < q]


def _cuts(sets: FuzzySets, p: float, q: float, levels: tuple[float, ...]) -> list[float]:
    """Points in (p, q) where a combiner's value may cross a level or switch candidate."""
    x1, x2 = p + (q - p) / 3, p + 2 * (q - p) / 3
    a1, a2 = affinities(np.array([x1, x2]), sets)
    beta = (a2 - a1) / (x2 - x1)
    alpha = a1 - beta * x1
    active = np.flatnonzero((a1 > 0) | (a2 > 0))
    if active.size == 0:
        return []
    num = sets.numbers
    # Coefficient arrays of fixed length (numpy's polyadd / polymul drop trailing zeros, and a
    # flat affinity [1, 0] then came back as [1], which Python's sum broadcast against the
    # other sets' [a, b] into a slope: the averages' cut points were wrong on custom sets
    # whose flat outer part overlaps another set).
    aff = [np.array([alpha[i], beta[i]]) for i in active]  # a_i(x), linear
    cand = [a + np.array([num[i], 0.0]) for a, i in zip(aff, active, strict=True)]  # i + a_i
    D = np.sum(aff, axis=0)  # sum a_i
    S_i = np.sum([a * num[i] for a, i in zip(aff, active, strict=True)], axis=0)  # sum i a_i
    S_2 = np.sum([[a[0] * a[0], 2 * a[0] * a[1], a[1] * a[1]] for a in aff], axis=0)  # a_i^2
    mean = np.sum(cand, axis=0) / float(active.size)
    cuts: list[float] = []
    for c in levels:
        polys = [P.polysub(v, [c]) for v in cand]  # candidates (max, min, highest, random)
        polys.append(P.polysub(mean, [c]))  # [1] section 3 (i)
        polys.append(P.polysub(P.polyadd(S_i, S_2), P.polymul([c], D)))  # (iii): N - c D
        # (ii): sum w_i (i + w_i) = S_i / D + S_2 / D^2 = c  <=>  S_i D + S_2 - c D^2 = 0
        polys.append(P.polysub(P.polyadd(P.polymul(S_i, D), S_2), P.polymul([c], P.polymul(D, D))))
        for poly in polys:
            cuts += _real_roots(poly, p, q)
    for i, j in combinations(range(len(aff)), 2):
        cuts += _real_roots(P.polysub(cand[i], cand[j]), p, q)  # maximum / minimum switch
        cuts += _real_roots(P.polysub(aff[i], aff[j]), p, q)  # highest affinity switches
    return cuts


def _tolerance(lo: float, hi: float) -> float:
    """How far from a bound a mapped value still counts as on it (rounding in the bounds)."""
    return _TOL * max(
        1.0, abs(lo) if math.isfinite(lo) else 1.0, abs(hi) if math.isfinite(hi) else 1.0
    )


def _inside(values: np.ndarray, lo: float, hi: float, lo_closed: bool, hi_closed: bool):
    tol = _tolerance(lo, hi)
    above = values >= lo - tol if lo_closed else values > lo + tol
    below = values <= hi + tol if hi_closed else values < hi - tol
    return above & below


def preimage(
    interval: tuple[float, float],
    sets: FuzzySets,
    combiner: str,
    *,
    lo_closed: bool = False,
    hi_closed: bool = True,
) -> list[Interval]:
    """The original values whose mapped value lies in ``interval`` (module docstring).

    Parameters
    ----------
    interval : (c0, c1)
        Bounds of mapped values; ``-inf`` / ``inf`` allowed. Weka's bins are ``(c0, c1]``
        (the default closedness).
    sets : FuzzySets
    combiner : str
        One of :data:`~sdcflow.core.fuzzy_mapping.combiners.COMBINERS`; ``random_pick``
        gives every value that could have been mapped into the interval.
    lo_closed, hi_closed : bool

    Returns
    -------
    list of Interval
        Disjoint, increasing, inside ``sets.domain``; empty when no value maps there.
    """
    combiner = check_combiner(combiner)
    c0, c1 = _check_interval(interval)
    xs = _grid(sets, (c0, c1))
    return _merge(xs, _maps_into(xs, sets, combiner, (c0, c1), lo_closed, hi_closed))


def _check_interval(interval: tuple[float, float]) -> tuple[float, float]:
    c0, c1 = (float(v) for v in interval)
    if math.isnan(c0) or math.isnan(c1) or c0 > c1:
        raise ParameterError("an interval of mapped values needs two bounds lo <= hi")
    return c0, c1


def _grid(sets: FuzzySets, interval: tuple[float, float], *, band: bool = False) -> np.ndarray:
    """Every cut point (even index) and the midpoint of every gap between two (odd index).

    With ``band``, the levels are also the bounds moved by :func:`_inside`'s tolerance, where
    a value's membership changes too (the integers near them are then mapped one by one): a
    curve passing within the tolerance of a bound (its minimum 1e-10 below it), or a domain
    so wide that the tolerance spans many integers."""
    tol = _tolerance(*interval) if band else 0.0
    shifts = (-tol, 0.0, tol) if band else (0.0,)
    levels = tuple(c + e for c in interval if math.isfinite(c) for e in shifts)
    bps = sets.breakpoints()
    cut = list(bps)
    for p, q in pairwise(bps):
        cut += _cuts(sets, float(p), float(q), levels)
    pts = np.unique(np.asarray(cut))
    xs = np.empty(2 * pts.size - 1)
    xs[0::2], xs[1::2] = pts, (pts[:-1] + pts[1:]) / 2
    return xs


def _maps_into(
    xs: np.ndarray,
    sets: FuzzySets,
    combiner: str,
    interval: tuple[float, float],
    lo_closed: bool,
    hi_closed: bool,
) -> np.ndarray:
    """Whether each value of ``xs`` is mapped into the interval (``random_pick``: may be).

    Shapes: (n,) -> (n,) bool."""
    m = memberships(xs, sets, name="remap grid")
    c0, c1 = interval
    if combiner == "random_pick":
        return (_inside(m.values, c0, c1, lo_closed, hi_closed) & m.member).any(axis=1)
    return _inside(combine(m, combiner), c0, c1, lo_closed, hi_closed)


def integer_preimage(
    interval: tuple[float, float],
    sets: FuzzySets,
    combiner: str,
    *,
    lo_closed: bool = False,
    hi_closed: bool = True,
) -> list[tuple[int, int]]:
    """The integers whose mapped value lies in ``interval``, as disjoint increasing ranges
    ``(first, last)`` (what ``remap --integer`` prints).

    :func:`preimage`'s intervals decide the integers inside a gap between two cut points.
    An integer within one of a cut point is mapped itself: a cut point is a root computed in
    floating point, so an integer sitting on it (a tie of two affinities at age 35, or a bin
    whose bound is the mapped value of an age) could otherwise fall on the wrong side of it.
    """
    combiner = check_combiner(combiner)
    c0, c1 = _check_interval(interval)
    xs = _grid(sets, (c0, c1), band=True)
    ranges = integer_ranges(
        _merge(xs, _maps_into(xs, sets, combiner, (c0, c1), lo_closed, hi_closed))
    )
    pts = xs[0::2]
    near = np.unique(np.concatenate([np.floor(pts) + d for d in (-1.0, 0.0, 1.0, 2.0)]))
    lo, hi = sets.domain
    near = near[(near >= lo) & (near <= hi)]
    if near.size == 0:
        return ranges
    hit = _maps_into(near, sets, combiner, (c0, c1), lo_closed, hi_closed)
    return _with_points(ranges, [int(v) for v in near], hit.tolist())  # no int64 overflow


def _with_points(
    ranges: list[tuple[int, int]], points: list[int], hit: list[bool]
) -> list[tuple[int, int]]:
    """``ranges`` with each of ``points`` (increasing) put in (``hit``) or taken out."""
    out_points = [p for p, h in zip(points, hit, strict=True) if not h]
    pieces: list[tuple[int, int]] = []
    for a, b in ranges:
        start = a
        for p in out_points:
            if start <= p <= b:
                if p > start:
                    pieces.append((start, p - 1))
                start = p + 1
        if start <= b:
            pieces.append((start, b))
    pieces += [(p, p) for p, h in zip(points, hit, strict=True) if h]
    pieces.sort()
    merged: list[tuple[int, int]] = []
    for a, b in pieces:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _merge(xs: np.ndarray, hit: np.ndarray) -> list[Interval]:
    """Intervals from alternating points (even index) and gaps (odd index) marked in or out."""
    out: list[Interval] = []
    start: tuple[float, bool] | None = None
    for idx in range(xs.size):
        is_point = idx % 2 == 0
        if hit[idx] and start is None:
            # an interval opens: at this point (closed) or in this gap (open at the point before)
            start = (xs[idx], True) if is_point else (xs[idx - 1], False)
        if not hit[idx] and start is not None:
            hi, closed = (xs[idx], False) if is_point else (xs[idx - 1], True)
            out.append(Interval(float(start[0]), float(hi), start[1], closed))
            start = None
    if start is not None:
        out.append(Interval(float(start[0]), float(xs[-1]), start[1], True))
    return out


def hull(intervals: list[Interval]) -> Interval | None:
    """The smallest interval holding them all (the paper reports this: "17-71")."""
    if not intervals:
        return None
    a, b = intervals[0], intervals[-1]
    return Interval(a.lo, b.hi, a.lo_closed, b.hi_closed)


def integer_ranges(intervals: list[Interval]) -> list[tuple[int, int]]:
    """The integers in the intervals as disjoint increasing ranges ``(first, last)``, adjacent
    ones joined (integer attributes such as age)."""
    ints: list[tuple[int, int]] = []
    for iv in intervals:
        lo = math.ceil(iv.lo) if iv.lo_closed else math.floor(iv.lo) + 1
        hi = math.floor(iv.hi) if iv.hi_closed else math.ceil(iv.hi) - 1
        if lo > hi:
            continue
        if ints and lo <= ints[-1][1] + 1:
            ints[-1] = (ints[-1][0], max(hi, ints[-1][1]))
        else:
            ints.append((lo, hi))
    return ints


def integer_hull(intervals: list[Interval]) -> tuple[int, int] | None:
    """The smallest and largest integers in the intervals (the paper's Table 3 reports this,
    "17-71"; it may hold integers outside the intervals: :func:`integer_ranges` does not)."""
    ints = integer_ranges(intervals)
    return (ints[0][0], ints[-1][1]) if ints else None


# --- rules -----------------------------------------------------------------------------------

_NUM = r"-?inf|-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|-?\.\d+(?:[eE][-+]?\d+)?"
_BOUNDS = r"(?P<lb>[(\[])\s*(?P<a>" + _NUM + r")\s*{sep}\s*(?P<b>" + _NUM + r")\s*(?P<rb>[)\]])"


def _column(columns: set[str]) -> str:
    """A mapped column's name as a rule can write it: bare (not inside a longer name), in
    backticks as in the rule language, or in quotes as Weka quotes a name with a space
    (``'net income'='(1.5-2.5]'``). Built from the mapped names themselves, so names with
    spaces, hyphens or non-ASCII letters are found too."""
    alt = "|".join(re.escape(c) for c in sorted(columns, key=len, reverse=True))
    return (
        rf"(?:`(?P<c1>{alt})`|'(?P<c2>{alt})'|\"(?P<c3>{alt})\"|(?<![\w.`'\"-])(?P<c4>{alt})"
        r"(?![\w.`'\"-]))"
    )


def parse_intervals(
    text: str, columns: set[str]
) -> list[tuple[str, float, float, bool, bool, tuple[int, int]]]:
    """Interval items on ``columns`` in a rule: ``(column, lo, hi, lo_closed, hi_closed,
    span)`` with ``span`` the item's position in ``text``."""
    if not columns:
        return []
    col = _column(columns)
    weka = re.compile(col + r"\s*=\s*'?" + _BOUNDS.format(sep="-") + "'?")
    within = re.compile(col + r"\s+in\s+" + _BOUNDS.format(sep=","))
    found = []
    for pattern in (weka, within):
        for mt in pattern.finditer(text):
            name = next(mt.group(g) for g in ("c1", "c2", "c3", "c4") if mt.group(g) is not None)
            found.append(
                (
                    name,
                    float(mt.group("a")),
                    float(mt.group("b")),
                    mt.group("lb") == "[",
                    mt.group("rb") == "]",
                    mt.span(),
                )
            )
    found.sort(key=lambda t: t[-1])
    return found


def _shown(col: str) -> str:
    """The column as the rule language writes it: in backticks unless an identifier."""
    return col if col.isidentifier() else f"`{col}`"


def remap_rule_text(
    text: str, mappings: Mapping[str, tuple[FuzzySets, str]], *, integer: bool = False
) -> str:
    """``text`` with every interval item on a mapped column replaced by its preimage.

    ``mappings``: column -> (sets, combiner). An item becomes ``age in [17, 71.75)`` (pieces
    joined by `` or ``), or ``age in 17..44 or 63..71`` with ``integer=True`` (the integers of
    the pieces, never their hull, which may hold values mapped elsewhere); an interval no value maps
    into becomes ``age in {}``.
    """
    items = parse_intervals(text, set(mappings))
    out, last = [], 0
    for col, a, b, lc, rc, (s, e) in items:
        sets, combiner = mappings[col]
        if integer:
            ranges = integer_preimage((a, b), sets, combiner, lo_closed=lc, hi_closed=rc)
            joined = " or ".join(f"{a}..{b}" for a, b in ranges) if ranges else "{}"
            shown = f"{_shown(col)} in {joined}"
        else:
            pieces = preimage((a, b), sets, combiner, lo_closed=lc, hi_closed=rc)
            joined = " or ".join(str(p) for p in pieces) if pieces else "{}"
            shown = f"{_shown(col)} in {joined}"
        out += [text[last:s], shown]
        last = e
    out.append(text[last:])
    return "".join(out)
