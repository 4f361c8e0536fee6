"""Interval estimates of the target statistics from boxes (eq. 7-9, 37-38).

For every record p only its box [lo_p, hi_p] is known; a statistic C then ranges over an
interval. Three intervals are reported for each target:

* ``linearized``: the paper's C(centres) +- Delta, Delta = sum_p sum_i |dC/dx_i| Delta_i(p)
  (eq. 8-9, derivatives at the box centres, weights of eq. 37-38). An approximation: it is
  neither guaranteed to contain the range nor to lie inside it.
* ``guaranteed``: bounds proved to contain every value C can take for points in the boxes.
  Mean: exact (both ends attained). Variance: the lower end is the exact minimum, the upper end
  a guaranteed bound. Covariance: linearization plus a proved bound on the second-order
  remainder. Correlation: interval arithmetic on the covariance and variance bounds.
* ``attained``: values C actually takes at particular points inside the boxes (so the true
  range contains this interval); the gap to ``guaranteed`` shows how tight the bound is.

Proofs (x = centre + delta, |delta_p| <= Delta_p, sum w = 1):

* mean: E is increasing in every x_p, so its range is [sum w lo, sum w hi].
* variance minimum: min_x sum w (x - E)^2 = min_t min_x sum w (x - t)^2 = min_t sum_p w_p
  dist(t, [lo_p, hi_p])^2, a convex piecewise quadratic in t minimized exactly.
* variance maximum: for every t, V = sum w (x - t)^2 - (E - t)^2 <= sum_p w_p max((lo_p - t)^2,
  (hi_p - t)^2); the smallest such bound over t is taken.
* covariance: C(x) = C(centres) + sum w [(x~ - E~x) delta_y + (y~ - E~y) delta_x]
  + cov_w(delta_x, delta_y), and |cov_w(delta_x, delta_y)| <= sqrt(sum w Dx^2 sum w Dy^2)
  (Cauchy-Schwarz); also |C| <= sqrt(Vx_max Vy_max).
* correlation: rho = C / (sx sy) with C, sx, sy in their guaranteed intervals, clipped to
  [-1, 1].

References
----------
[1] G. Xiang et al., "Data anonymization that leads to the most accurate estimates of
    statistical characteristics: fuzzy-motivated approach", IFSA-NAFIPS 2013.
[2] H. T. Nguyen, V. Kreinovich, B. Wu, G. Xiang, Computing Statistics under Interval and
    Fuzzy Uncertainty, Springer 2012 (variance of interval data: lower end polynomial, upper
    end NP-hard in general - hence a guaranteed bound rather than the exact maximum).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from .box_sensitivity import Target, b_coefficients, statistic

LINEARIZED_NOTE = "paper eq. 8-9 linearization at the box centres: approximate, not guaranteed"


@dataclass(frozen=True)
class IntervalEstimate:
    """Interval estimate of one target statistic.

    Attributes
    ----------
    target : Target
    centre_value : float
        The statistic at the box centres, weights w.
    delta : float
        Half-width Delta of eq. 9 (with weights: sum_p w_p sum_i |b_i| Delta_i).
    linearized : tuple of float
        (centre_value - delta, centre_value + delta).
    guaranteed : tuple of float
        Contains every value of the statistic over the boxes.
    lower_kind, upper_kind : {"exact", "guaranteed"}
        "exact": the end is attained by some points in the boxes; "guaranteed": a proved bound.
    attained : tuple of float
        Two values the statistic takes inside the boxes (inner bounds of the true range).
    """

    target: Target
    centre_value: float
    delta: float
    linearized: tuple[float, float]
    guaranteed: tuple[float, float]
    lower_kind: str
    upper_kind: str
    attained: tuple[float, float]


def _wvar(x: np.ndarray, w: np.ndarray) -> float:
    e = w @ x
    return float(w @ ((x - e) ** 2))


def _wcov(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(w @ ((x - w @ x) * (y - w @ y)))


def variance_min(lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> float:
    """Exact minimum of the weighted variance over x_p in [lo_p, hi_p]; shapes (N,)."""
    b = np.sort(np.concatenate([lo, hi]))
    oh, ol = np.argsort(hi), np.argsort(lo)
    hs, ls = hi[oh], lo[ol]
    wh, wl = w[oh], w[ol]
    cw_h, cs_h = np.concatenate(([0], np.cumsum(wh))), np.concatenate(([0], np.cumsum(wh * hs)))
    rw_l = np.concatenate((np.cumsum(wl[::-1])[::-1], [0]))
    rs_l = np.concatenate((np.cumsum((wl * ls)[::-1])[::-1], [0]))

    def sets(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        il = np.searchsorted(hs, t, side="left")  # boxes entirely left of t: hi < t
        ir = np.searchsorted(ls, t, side="right")  # boxes entirely right of t: lo > t
        return cw_h[il] + rw_l[ir], cs_h[il] + rs_l[ir]

    weight, moment = sets(b)
    slope = weight * b - moment  # g'(t)/2, non-decreasing
    j = int(np.searchsorted(slope, 0.0, side="left"))
    if j == 0:
        t = b[0]
    else:
        left, right = b[j - 1], b[min(j, b.size - 1)]
        ww, mm = sets(np.array([(left + right) / 2]))
        t = float(np.clip(mm[0] / ww[0], left, right)) if ww[0] > 0 else (left + right) / 2
    dist = np.maximum(lo - t, 0) + np.maximum(t - hi, 0)
    return float(w @ dist**2)


def variance_max_bound(lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Guaranteed upper bound on the weighted variance over the boxes, and an attained value.

    Returns (bound, attained): bound = min_t sum w max((lo - t)^2, (hi - t)^2) >= max V, and
    the variance of the box corners farthest from the minimizing t (<= max V).
    """
    mid, half = (lo + hi) / 2, (hi - lo) / 2

    def h(t: float) -> float:
        return float(w @ (np.abs(t - mid) + half) ** 2)

    if mid.min() == mid.max():
        t = float(mid[0])
    else:
        t = float(minimize_scalar(h, bounds=(mid.min(), mid.max()), method="bounded").x)
    far = np.where(np.abs(lo - t) >= np.abs(hi - t), lo, hi)
    return h(t), _wvar(far, w)


def _interval(target: Target, lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> IntervalEstimate:
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    value = statistic(mid, target, w)
    b = b_coefficients(mid, target, w)
    delta = float(np.sum(w[:, None] * np.abs(b) * half))  # [1] eq. 9 with dC/dx = w b
    lin = (value - delta, value + delta)
    i = target.vars[0]
    if target.stat == "mean":
        g = (float(w @ lo[:, i]), float(w @ hi[:, i]))  # exact: E is monotone in each x_p
        return IntervalEstimate(target, value, delta, lin, g, "exact", "exact", g)
    if target.stat in ("variance", "std"):
        vmin = variance_min(lo[:, i], hi[:, i], w)
        vmax, vatt = variance_max_bound(lo[:, i], hi[:, i], w)
        g, att = (vmin, vmax), (vmin, vatt)
        if target.stat == "std":
            g, att = (np.sqrt(vmin), np.sqrt(vmax)), (np.sqrt(vmin), np.sqrt(vatt))
        return IntervalEstimate(
            target, value, delta, lin, (float(g[0]), float(g[1])), "exact", "guaranteed",
            (float(att[0]), float(att[1])),
        )  # fmt: skip
    j = target.vars[1]
    # Corners chosen by the sign of the first-order term: values the statistic really takes.
    sign = np.sign(b[:, [i, j]])
    up = mid[:, [i, j]] + sign * half[:, [i, j]]
    down = mid[:, [i, j]] - sign * half[:, [i, j]]
    cov_c = _wcov(mid[:, i], mid[:, j], w)
    wi, wj = w @ half[:, i] ** 2, w @ half[:, j] ** 2
    dcov = float(
        np.sum(
            w
            * (np.abs(mid[:, j] - w @ mid[:, j]) * half[:, i]
               + np.abs(mid[:, i] - w @ mid[:, i]) * half[:, j])
        )
    )  # fmt: skip
    vmax_i, _ = variance_max_bound(lo[:, i], hi[:, i], w)
    vmax_j, _ = variance_max_bound(lo[:, j], hi[:, j], w)
    cs = np.sqrt(vmax_i * vmax_j)
    remainder = np.sqrt(wi * wj)
    c_lo = max(cov_c - dcov - remainder, -cs)
    c_hi = min(cov_c + dcov + remainder, cs)
    if target.stat == "covariance":
        att = (_wcov(down[:, 0], down[:, 1], w), _wcov(up[:, 0], up[:, 1], w))
        return IntervalEstimate(
            target, value, delta, lin, (float(c_lo), float(c_hi)), "guaranteed", "guaranteed",
            (float(min(att)), float(max(att))),
        )  # fmt: skip
    s_lo = np.sqrt(variance_min(lo[:, i], hi[:, i], w) * variance_min(lo[:, j], hi[:, j], w))
    s_hi = cs
    with np.errstate(divide="ignore", invalid="ignore"):
        r_lo = c_lo / s_hi if c_lo >= 0 else c_lo / s_lo
        r_hi = c_hi / s_lo if c_hi >= 0 else c_hi / s_hi
    r_lo = -1.0 if not np.isfinite(r_lo) else float(np.clip(r_lo, -1, 1))
    r_hi = 1.0 if not np.isfinite(r_hi) else float(np.clip(r_hi, -1, 1))

    def corr(p: np.ndarray) -> float:
        return _wcov(p[:, 0], p[:, 1], w) / np.sqrt(_wvar(p[:, 0], w) * _wvar(p[:, 1], w))

    att = (corr(down), corr(up))
    return IntervalEstimate(
        target, value, delta, lin, (r_lo, r_hi), "guaranteed", "guaranteed",
        (float(min(att)), float(max(att))),
    )  # fmt: skip


def interval_estimates(
    lo: np.ndarray, hi: np.ndarray, w: np.ndarray, targets: Sequence[Target]
) -> list[IntervalEstimate]:
    """Interval estimates of every target from per-record boxes.

    Parameters
    ----------
    lo, hi : ndarray of shape (N, d)
        The box of every record (lo <= hi).
    w : ndarray of shape (N,)
        Weights of eq. 37-38, non-negative, summing to 1.
    targets : sequence of Target

    Returns
    -------
    list of IntervalEstimate, one per target, in order.
    """
    lo, hi, w = np.asarray(lo, float), np.asarray(hi, float), np.asarray(w, float)
    return [_interval(t, lo, hi, w) for t in targets]
