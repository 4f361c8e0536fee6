"""The asymptotically optimal box half-widths around a point (eq. 17-22 and 30-36).

Around a point x with data density rho(x), a box holding k records minimizes
sum_i a_i(x) Delta_i(x) (eq. 17, 30) subject to prod_i Delta_i >= k / (2^n rho) (eq. 18, 31)
and, for l-diversity, 2 Delta_i >= l eps_i (eq. 32). Without the last constraint the optimum is
Delta_i = c / a_i (eq. 19) with c from eq. 20 (half-widths eq. 21); with it, the algorithm of
eq. 33-36 fixes the t sides with the largest a_i eps_i at l eps_i / 2 and balances the rest.

Here n is the number of variables (the paper's n) and N the number of points.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdcflow.errors import ParameterError


@dataclass(frozen=True)
class OptimalBoxes:
    """Result of :func:`optimal_half_widths`.

    Attributes
    ----------
    half_widths : ndarray of shape (N, n)
        Optimal Delta_i(x).
    cost : ndarray of shape (N,)
        sum_i a_i(x) Delta_i(x) at the optimum; n c(x) without the l constraint (eq. 22).
    c : ndarray of shape (N,)
        The common value a_i Delta_i of the free sides (eq. 20, or c_t of eq. 35; for t = n,
        when every side sits on its l eps bound, the mean of a_i Delta_i).
    t : ndarray of shape (N,), int
        Number of sides fixed at l eps_i / 2 (eq. 35-36); 0 is the unconstrained eq. 21.
    """

    half_widths: np.ndarray
    cost: np.ndarray
    c: np.ndarray
    t: np.ndarray


def optimal_half_widths(
    a: np.ndarray,
    rho: np.ndarray,
    k: float,
    *,
    ell: float | None = None,
    eps: np.ndarray | float | None = None,
) -> OptimalBoxes:
    """Optimal half-widths of the box around each point (eq. 21; with l-diversity eq. 33-36).

    Parameters
    ----------
    a : ndarray of shape (N, n)
        Sensitivities a_i(x) > 0 of every point. A variable with a_i = 0 costs nothing and its
        side can grow without bound: drop it and pass the marginal density of the others.
    rho : ndarray of shape (N,)
        Data density rho(x) > 0 (records per unit volume of the n variables).
    k : float
        Records per box, > 0.
    ell : float or None
        Distinct values per variable; None (or eps = 0) drops the constraint of eq. 32.
    eps : float or ndarray of shape (n,) or None
        Resolution eps_i of eq. 29.

    Returns
    -------
    OptimalBoxes
    """
    a = np.atleast_2d(np.asarray(a, dtype=float))
    rho = np.broadcast_to(np.asarray(rho, dtype=float), (a.shape[0],))
    if not (np.isfinite(a).all() and (a > 0).all()):
        raise ParameterError(
            "a must be finite and > 0; drop variables with zero sensitivity (their side is "
            "free) and pass the density of the remaining ones",
            field="a",
        )
    if not (np.isfinite(rho).all() and (rho > 0).all()) or not k > 0:
        raise ParameterError("rho must be finite and > 0 for every point, and k > 0")
    n = a.shape[1]
    eps_arr = np.broadcast_to(np.asarray(0.0 if eps is None else eps, dtype=float), (n,))
    if (eps_arr < 0).any():
        raise ParameterError("eps must be >= 0")
    lower = (0.0 if ell is None else float(ell)) * eps_arr / 2  # [1] eq. 32: Delta_i >= l eps_i / 2
    return _optimal_half_widths(a, rho, float(k), np.broadcast_to(lower, a.shape))


def _optimal_half_widths(
    a: np.ndarray, rho: np.ndarray, k: float, lower: np.ndarray
) -> OptimalBoxes:
    N, n = a.shape
    log_p = np.log(k) - n * np.log(2.0) - np.log(rho)  # [1] eq. 31: prod Delta >= k/(2^n rho)
    order = np.argsort(-(a * lower), axis=1, kind="stable")  # [1] eq. 34, descending a_i eps_i
    a_s = np.take_along_axis(a, order, axis=1)
    low_s = np.take_along_axis(lower, order, axis=1)
    fixed_cost = np.concatenate([np.zeros((N, 1)), np.cumsum(a_s * low_s, axis=1)], axis=1)
    with np.errstate(divide="ignore"):
        log_low = np.log(low_s)
    log_low_cum = np.concatenate([np.zeros((N, 1)), np.cumsum(log_low, axis=1)], axis=1)
    log_a = np.log(a_s)
    log_a_tail = np.concatenate(
        [np.cumsum(log_a[:, ::-1], axis=1)[:, ::-1], np.zeros((N, 1))], axis=1
    )  # sum_{i > t} log a_i, t = 0..n
    cost = np.full((N, n + 1), np.inf)
    c_t = np.full((N, n + 1), np.nan)
    for t in range(n):
        # [1] eq. 35: c_t = (1/2) (k prod_{i>t} a_i / (rho l^t prod_{i<=t} eps_i))^(1/(n-t))
        with np.errstate(invalid="ignore"):
            log_c = (log_p + log_a_tail[:, t] - log_low_cum[:, t]) / (n - t)
        c = np.exp(log_c)
        feasible = np.isfinite(c) & (c >= a_s[:, t] * low_s[:, t])  # 2 c_t/a_{t+1} >= l eps_{t+1}
        c_t[:, t] = c
        cost[:, t] = np.where(feasible, fixed_cost[:, t] + (n - t) * c, np.inf)  # [1] eq. 36
    all_fixed = log_low_cum[:, n] >= log_p  # every side on its l-bound already holds k records
    cost[:, n] = np.where(all_fixed, fixed_cost[:, n], np.inf)
    c_t[:, n] = fixed_cost[:, n] / n
    t_best = np.argmin(cost, axis=1)  # [1] "select t for which Delta(t) is the smallest"
    rows = np.arange(N)
    c_best = c_t[rows, t_best]
    fixed = np.arange(n)[None, :] < t_best[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        hw_s = np.where(fixed, low_s, c_best[:, None] / a_s)  # Delta_i = c_t / a_i for i > t
    half_widths = np.empty_like(hw_s)
    np.put_along_axis(half_widths, order, hw_s, axis=1)
    return OptimalBoxes(half_widths, cost[rows, t_best], c_best, t_best)
