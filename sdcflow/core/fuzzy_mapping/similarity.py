"""How close the mapped values stay to the original ones ([1]_ section 3, eq. 1-4, after the
survey [2]_), and how much of their order the mapping gives away.

With ``P`` the original and ``Q`` the mapped values (n each), ``a = sum P Q``, ``b = sum P^2``,
``c = sum Q^2`` (the definitions [1]_ lists before eq. 1-4; the extracted text lost them, the
survey [2]_ it cites gives them):

* Pearson ``r`` (eq. 1);
* Jaccard ``a / (b + c - a)`` (eq. 2; [2]_ inner-product family, "Jaccard");
* Dice ``2 a / (b + c)`` (eq. 3; [2]_ "Dice");
* cosine ``a / sqrt(b c)`` (eq. 4; [2]_ "Cosine").

On raw values, with ages near 38 and mapped values near 2, ``b >> c`` and Jaccard and Dice are
close to ``mean(Q)/mean(P)`` and ``2 mean(Q)/mean(P)``: a ratio of scales (0.05 and 0.10 on
Adult), whatever the mapping. The intersection-family forms of [2]_, Ruzicka
``sum min / sum max`` and Czekanowski ``2 sum min / sum (P + Q)``, give the same two decimals
there; both are here so that the benchmark can show it. [1]_ Table 2 ("normalized values")
rescales both sides to [0, 1] over their ranges (the sets' domain for ``P``, ``[1, k + 1]``
for ``Q``; see :func:`rescale`).

What the figures do not say: a deterministic combiner is a function of the value, and on each
piece between set boundaries it is monotone for most combiners, so records keep (or exactly
reverse) their order inside a piece. :func:`rank_figures` measures it: Spearman's rho over all
records and the mean ``|Kendall tau|`` inside the groups of records that share a released set
number (the integer part of the mapped value).

References
----------
.. [1] "Fuzzy-based Methods for Privacy-Preserving Data Mining", Eighth International
   Conference on Information Technology: New Generations (ITNG), IEEE, 2011,
   doi:10.1109/ITNG.2011.68.
.. [2] S.-H. Cha, "Comprehensive Survey on Distance/Similarity Measures between Probability
   Density Functions", International Journal of Mathematical Models and Methods in Applied
   Sciences 1(4), 2007, pp. 300-307.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdcflow.errors import DataError

MEASURES: tuple[str, ...] = ("pearson", "jaccard", "dice", "cosine")


def _pair(p: object, q: object) -> tuple[np.ndarray, np.ndarray]:
    """Shapes: p (n,), q (n,) -> both float64 (n,), n >= 2, finite."""
    P, Q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if P.ndim != 1 or P.shape != Q.shape or P.size < 2:
        raise DataError("original and mapped values must be 1-D arrays of the same length (n >= 2)")
    if not (np.isfinite(P).all() and np.isfinite(Q).all()):
        raise DataError("original and mapped values must be finite; drop missing values first")
    return P, Q


def pearson(p: object, q: object) -> float:
    """Pearson's correlation coefficient ([1]_ eq. 1); NaN when a side is constant."""
    P, Q = _pair(p, q)
    dp, dq = P - P.mean(), Q - Q.mean()
    den = np.sqrt((dp @ dp) * (dq @ dq))
    return float(dp @ dq / den) if den > 0 else float("nan")


def jaccard(p: object, q: object) -> float:
    """``sum PQ / (sum P^2 + sum Q^2 - sum PQ)`` ([1]_ eq. 2, [2]_ inner-product family)."""
    P, Q = _pair(p, q)
    a, b, c = P @ Q, P @ P, Q @ Q
    return float(a / (b + c - a))


def dice(p: object, q: object) -> float:
    """``2 sum PQ / (sum P^2 + sum Q^2)`` ([1]_ eq. 3, [2]_)."""
    P, Q = _pair(p, q)
    return float(2 * (P @ Q) / (P @ P + Q @ Q))


def cosine(p: object, q: object) -> float:
    """``sum PQ / sqrt(sum P^2 sum Q^2)`` ([1]_ eq. 4, [2]_)."""
    P, Q = _pair(p, q)
    return float((P @ Q) / np.sqrt((P @ P) * (Q @ Q)))


def ruzicka(p: object, q: object) -> float:
    """``sum min(P, Q) / sum max(P, Q)`` ([2]_ intersection family; a "Jaccard" on sets)."""
    P, Q = _pair(p, q)
    return float(np.minimum(P, Q).sum() / np.maximum(P, Q).sum())


def czekanowski(p: object, q: object) -> float:
    """``2 sum min(P, Q) / sum (P + Q)`` ([2]_ intersection family; a "Dice" on sets)."""
    P, Q = _pair(p, q)
    return float(2 * np.minimum(P, Q).sum() / (P + Q).sum())


def rescale(v: object, bounds: Sequence[float] | None = None) -> np.ndarray:
    """``(v - lo) / (hi - lo)``: min-max normalization over ``bounds = (lo, hi)``, or over the
    data's own minimum and maximum when ``bounds`` is None.

    Shapes: v (n,) -> (n,).
    """
    arr = np.asarray(v, dtype=np.float64)
    lo, hi = (float(arr.min()), float(arr.max())) if bounds is None else map(float, bounds)
    if not hi > lo:
        raise DataError("cannot normalize: the range is empty (all values equal)")
    return (arr - lo) / (hi - lo)


def similarity_figures(
    p: object,
    q: object,
    p_bounds: Sequence[float] | None = None,
    q_bounds: Sequence[float] | None = None,
) -> dict[str, float]:
    """The four measures on raw values and on values rescaled to [0, 1] (prefix ``n_``).

    Shapes: p (n,), q (n,) -> dict of 8 floats.
    """
    P, Q = _pair(p, q)
    Pn, Qn = rescale(P, p_bounds), rescale(Q, q_bounds)
    funcs = {"pearson": pearson, "jaccard": jaccard, "dice": dice, "cosine": cosine}
    out = {name: f(P, Q) for name, f in funcs.items()}
    out |= {f"n_{name}": f(Pn, Qn) for name, f in funcs.items()}
    return out


def rank_figures(p: object, q: object) -> dict[str, float]:
    """What the order of the mapped values says about the order of the originals.

    Returns
    -------
    dict
        ``spearman``: Spearman's rho over all records (1 or -1: the order is released
        whole). ``within_set_kendall``: the mean of ``|Kendall tau_b|`` over the groups of
        records with the same integer part of the mapped value (the released set number),
        weighted by group size, groups with fewer than two distinct values left out (1: inside
        a set the order is kept or exactly reversed; NaN when no group qualifies).
    """
    # scipy.stats loads here, for a release that maps a sensitive column: imported with the
    # release flow, it delayed every run without edit rules (Great Expectations imports it)
    from scipy import stats

    P, Q = _pair(p, q)
    out = {"spearman": float(stats.spearmanr(P, Q).statistic)}
    groups = np.floor(Q)
    taus, sizes = [], []
    for g in np.unique(groups):
        sel = groups == g
        if np.unique(P[sel]).size < 2 or np.unique(Q[sel]).size < 2:
            continue
        taus.append(abs(float(stats.kendalltau(P[sel], Q[sel]).statistic)))
        sizes.append(int(sel.sum()))
    out["within_set_kendall"] = float(np.average(taus, weights=sizes)) if taus else float("nan")
    return out
