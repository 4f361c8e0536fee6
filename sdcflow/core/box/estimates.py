"""Interval estimates of the target statistics from boxes ([1] eq. 7-9, 37-38).

For every record p only its box [lo_p, hi_p] is known; a statistic C then ranges over an
interval. Three intervals are reported for each target:

* ``linearized``: the paper's C(centres) +- Delta, Delta = sum_p sum_i |dC/dx_i| Delta_i(p)
  ([1] eq. 8-9, derivatives at the box centres, weights of eq. 37-38). An approximation: it is
  neither guaranteed to contain the range nor to lie inside it.
* ``guaranteed``: bounds proved to contain every value C can take for points in the boxes.
  Mean: exact (both ends attained). Variance: the lower end is the exact minimum, the upper end
  a guaranteed bound (std: their square roots). Covariance: linearization plus a proved bound
  on the second-order remainder. Correlation: the tighter of interval arithmetic and a
  second-order bound (below).
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
* correlation: the tighter of (a) interval arithmetic rho = C / (sx sy) with C, sx, sy in their
  guaranteed intervals and (b) the second-order bound of :func:`_correlation_quadratic_bounds`
  (keeps the cancellation between the two terms of [1] eq. 14), clipped to [-1, 1].

The exact maximum of a variance over boxes is NP-hard in general [2], hence the bounds.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
[2] H.T. Nguyen, V. Kreinovich, B. Wu, G. Xiang, *Computing Statistics under Interval and
    Fuzzy Uncertainty*, Springer, Berlin, 2012 (variance of interval data: the lower end is
    computable in polynomial time, the upper end is NP-hard in general).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from sdcflow.core.box.sensitivity import Target, b_coefficients, statistic

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


def _correlation_quadratic_bounds(
    xm: np.ndarray,
    ym: np.ndarray,
    hx: np.ndarray,
    hy: np.ndarray,
    w: np.ndarray,
    sx: tuple[float, float],
    sy: tuple[float, float],
    iterations: int = 60,
) -> tuple[float, float]:
    """Guaranteed correlation bounds that keep the first-order cancellations.

    rho >= r holds for every point in the boxes when f_r = C - r sx sy >= 0 everywhere. With
    lam > 0, 2 sx sy <= lam Vx + Vy / lam and 2 sx sy >= lam Vx + Vy / lam - D, where
    D = max (sqrt(lam) sx - sy / sqrt(lam))^2 over the ranges ``sx``, ``sy`` of the standard
    deviations. C, Vx, Vy are centre value + linear term + remainder, with |cov(dx, dy)| <=
    sqrt(Qx Qy) and 0 <= var(dx) <= Qx, Q = sum w half^2. So f_r is bounded by a constant plus
    a linear function of the displacements (its range over the boxes is exact) plus bounded
    remainders; the largest r proved by bisection is a lower bound (an upper bound likewise).

    Shapes: xm, ym, hx, hy, w (N,). Returns (lower, upper) in [-1, 1].
    """
    dx, dy = xm - w @ xm, ym - w @ ym
    vx, vy, c = float(w @ dx**2), float(w @ dy**2), float(w @ (dx * dy))
    if vx <= 0 or vy <= 0:
        return -1.0, 1.0
    lam = np.sqrt(vy / vx)
    qx, qy = float(w @ hx**2), float(w @ hy**2)
    quad = (lam * qx + qy / lam) / 2  # bounds (lam var(dx) + var(dy) / lam) / 2
    rc = np.sqrt(qx * qy)  # |cov(dx, dy)| <= rc
    root = np.sqrt(lam)
    big_d = max((root * sx[0] - sy[1] / root) ** 2, (root * sx[1] - sy[0] / root) ** 2)

    def parts(r: float) -> tuple[float, float]:
        g0 = c - r * (lam * vx + vy / lam) / 2
        gx, gy = w * (dy - r * lam * dx), w * (dx - r * dy / lam)
        return g0, float(np.abs(gx) @ hx + np.abs(gy) @ hy)

    def proves_lower(r: float) -> bool:  # a lower bound of f_r is >= 0 on all the boxes
        g0, lin = parts(r)
        return (g0 - lin - rc - r * quad if r >= 0 else g0 + r * big_d / 2 - lin - rc) >= 0

    def proves_upper(r: float) -> bool:  # an upper bound of f_r is <= 0 on all the boxes
        g0, lin = parts(r)
        return (g0 + r * big_d / 2 + lin + rc if r >= 0 else g0 + lin + rc - r * quad) <= 0

    centre = float(np.clip(c / np.sqrt(vx * vy), -1, 1))
    lower, upper = -1.0, 1.0
    if proves_lower(-1.0):
        a, b = -1.0, centre
        if proves_lower(b):
            a = b
        for _ in range(iterations):
            m = (a + b) / 2
            a, b = (m, b) if proves_lower(m) else (a, m)
        lower = a  # always a value that was proved
    if proves_upper(1.0):
        a, b = centre, 1.0
        if proves_upper(a):
            b = a
        for _ in range(iterations):
            m = (a + b) / 2
            a, b = (a, m) if proves_upper(m) else (m, b)
        upper = b
    return lower, upper


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
    vmin_i, vmin_j = variance_min(lo[:, i], hi[:, i], w), variance_min(lo[:, j], hi[:, j], w)
    s_lo = np.sqrt(vmin_i * vmin_j)
    s_hi = cs
    with np.errstate(divide="ignore", invalid="ignore"):
        r_lo = c_lo / s_hi if c_lo >= 0 else c_lo / s_lo
        r_hi = c_hi / s_lo if c_hi >= 0 else c_hi / s_hi
    r_lo = -1.0 if not np.isfinite(r_lo) else float(np.clip(r_lo, -1, 1))
    r_hi = 1.0 if not np.isfinite(r_hi) else float(np.clip(r_hi, -1, 1))
    sx = (float(np.sqrt(vmin_i)), float(np.sqrt(vmax_i)))
    sy = (float(np.sqrt(vmin_j)), float(np.sqrt(vmax_j)))
    q_lo, q_hi = _correlation_quadratic_bounds(
        mid[:, i], mid[:, j], half[:, i], half[:, j], w, sx, sy
    )
    r_lo, r_hi = max(r_lo, q_lo), min(r_hi, q_hi)  # both are proved: keep the tighter ends

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
