"""Target statistics of box anonymization and their sensitivities ([1] eq. 2-15, 37-38, 57-63).

A *target* is a statistic the users of the release need: the mean, variance, standard deviation
of one variable, or the covariance or correlation of two. Each has a probability ``p`` that users
ask for it and a desired accuracy ``delta0`` ([1] eq. 57). Boxes are shaped so that the combined
sensitivity a_i(x) = sum_C p_C / delta0_C * |b_i^C(x)| ([1] eq. 63) times the half-width is
balanced.

All statistics are the weighted, N-denominator estimates of [1] eq. 37-38; equal weights 1/N
give eq. 2-6 (the paper's convention, see its comment after eq. 6).

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
[2] D.J. Sheskin, *Handbook of Parametric and Nonparametric Statistical Procedures*, 4th ed.,
    Chapman & Hall/CRC, Boca Raton, 2007 (reference [5] of [1], for the sampling variance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sdcflow.errors import ParameterError

Stat = Literal["mean", "variance", "std", "covariance", "correlation"]
STAT_ARITY: dict[str, int] = {"mean": 1, "variance": 1, "std": 1, "covariance": 2, "correlation": 2}


@dataclass(frozen=True)
class Target:
    """One target statistic C with its probability p_C and desired accuracy delta0_C.

    Attributes
    ----------
    stat : {"mean", "variance", "std", "covariance", "correlation"}
    vars : tuple of int
        Column indices: one for mean/variance/std, two distinct for covariance/correlation.
    p : float
        Probability that users ask for this statistic, p_C > 0 (eq. 58).
    delta0 : float
        Desired accuracy Delta0_C > 0, in the units of the statistic (eq. 57).
    """

    stat: Stat
    vars: tuple[int, ...]
    p: float = 1.0
    delta0: float = 1.0


def check_targets(targets: Sequence[Target], d: int) -> list[Target]:
    """Validate targets against a data set with ``d`` columns; raise ``InputError``."""
    out = list(targets)
    if not out:
        raise ParameterError(
            "targets is empty; name at least one target statistic", field="targets"
        )
    for t in out:
        if t.stat not in STAT_ARITY:
            raise ParameterError(
                f"target stat {t.stat!r} is unknown; use one of {sorted(STAT_ARITY)}",
                field="targets",
            )
        if len(t.vars) != STAT_ARITY[t.stat] or len(set(t.vars)) != len(t.vars):
            raise ParameterError(
                f"target {t.stat} needs {STAT_ARITY[t.stat]} distinct variable(s), got {t.vars}",
                field="targets",
            )
        if any(not 0 <= v < d for v in t.vars):
            raise ParameterError(
                f"target {t.stat} refers to column {t.vars} outside 0..{d - 1}", field="targets"
            )
        if not (t.p > 0 and np.isfinite(t.p)) or not (t.delta0 > 0 and np.isfinite(t.delta0)):
            raise ParameterError(
                f"target {t.stat}{t.vars}: p and delta0 must be finite and > 0", field="targets"
            )
    return out


def _uniform(n: int) -> np.ndarray:
    return np.full(n, 1.0 / n)


def _moments(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted means E (d,), deviations X - E (n, d) and standard deviations (d,) (eq. 37)."""
    E = w @ X
    D = X - E
    sd = np.sqrt(w @ (D * D))
    return E, D, sd


def statistic(X: np.ndarray, target: Target, w: np.ndarray | None = None) -> float:
    """The value of ``target`` on points ``X`` (n, d) with weights ``w`` (n,), sum 1.

    Eq. 2-6 with w = 1/N, eq. 37-38 otherwise. Correlation of a constant variable is NaN.
    """
    w = _uniform(X.shape[0]) if w is None else w
    _, D, sd = _moments(X, w)
    i = target.vars[0]
    if target.stat == "mean":
        return float(w @ X[:, i])  # [1] eq. 37
    if target.stat == "variance":
        return float(sd[i] ** 2)  # [1] eq. 37
    if target.stat == "std":
        return float(sd[i])
    j = target.vars[1]
    cov = float(w @ (D[:, i] * D[:, j]))  # [1] eq. 38
    if target.stat == "covariance":
        return cov
    denom = sd[i] * sd[j]
    return cov / denom if denom > 0 else float("nan")  # [1] eq. 38, rho = C / (sigma sigma)


def b_coefficients(X: np.ndarray, target: Target, w: np.ndarray | None = None) -> np.ndarray:
    """The b_i(x) of eq. 15: dC/dx_i(p) = w_p * b_i(x(p)) (w_p = 1/N: eq. 10-14).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Points at which the derivatives are taken (original records, or box centres for the
        linearization of eq. 8).
    target : Target
    w : ndarray of shape (n,) or None
        Weights summing to 1 (eq. 37-38); None means 1/n.

    Returns
    -------
    b : ndarray of shape (n, d)
        Signed b_i(x); zero for the columns the target does not involve. Columns with zero
        spread give zero for std and correlation (the statistic is then not differentiable).
    """
    n, d = X.shape
    w = _uniform(n) if w is None else w
    _, D, sd = _moments(X, w)
    b = np.zeros((n, d))
    i = target.vars[0]
    if target.stat == "mean":
        b[:, i] = 1.0  # [1] eq. 10
    elif target.stat == "variance":
        b[:, i] = 2.0 * D[:, i]  # [1] eq. 11
    elif target.stat == "std":
        b[:, i] = D[:, i] / sd[i] if sd[i] > 0 else 0.0  # [1] eq. 12
    else:
        j = target.vars[1]
        if target.stat == "covariance":
            b[:, i] = D[:, j]  # [1] eq. 13
            b[:, j] = D[:, i]
        elif sd[i] > 0 and sd[j] > 0:
            cov = w @ (D[:, i] * D[:, j])
            s = sd[i] * sd[j]
            b[:, i] = D[:, j] / s - cov * D[:, i] / (sd[i] ** 2 * s)  # [1] eq. 14
            b[:, j] = D[:, i] / s - cov * D[:, j] / (sd[j] ** 2 * s)
    return b


def influence_scale(X: np.ndarray, target: Target) -> float:
    """A_C: the standard deviation of the influence function of C on ``X`` (n, d).

    The sampling standard error of an estimate with weights w is A_C * sqrt(sum w^2) ([1]
    eq. 24, 39-42, after [2]); for the mean A_C is the standard deviation itself.
    """
    _, D, sd = _moments(X, _uniform(X.shape[0]))
    i = target.vars[0]
    if target.stat == "mean":
        return float(sd[i])
    if target.stat in ("variance", "std"):
        infl = D[:, i] ** 2 - sd[i] ** 2
        if target.stat == "std":
            infl = infl / (2 * sd[i]) if sd[i] > 0 else infl * 0
    else:
        j = target.vars[1]
        prod = D[:, i] * D[:, j]
        if target.stat == "covariance":
            infl = prod - prod.mean()
        elif sd[i] > 0 and sd[j] > 0:
            zi, zj = D[:, i] / sd[i], D[:, j] / sd[j]
            rho = (zi * zj).mean()
            infl = zi * zj - rho * (zi**2 + zj**2) / 2
        else:
            infl = np.zeros(X.shape[0])
    return float(np.sqrt(np.mean(infl**2)))


def default_delta0(X: np.ndarray, stat: str, vars: tuple[int, ...], rel: float = 0.1) -> float:
    """Default desired accuracy: ``rel`` times the natural scale of the statistic.

    The paper suggests 10 % of the value (text after eq. 56); the value of a covariance or
    correlation can be near zero, so the scale is used instead: sigma_i for mean and std,
    sigma_i^2 for a variance, sigma_i sigma_j for a covariance, 1 for a correlation.
    Returns 1.0 times ``rel`` when the scale is zero (a constant variable).
    """
    sd = X[:, list(vars)].std(axis=0)
    scale = {
        "mean": sd[0],
        "std": sd[0],
        "variance": sd[0] ** 2,
        "covariance": sd[0] * sd[-1],
        "correlation": 1.0,
    }[stat]
    return float(rel * scale) if scale > 0 else rel


def combined_sensitivity(
    X: np.ndarray, targets: Sequence[Target], w: np.ndarray | None = None
) -> np.ndarray:
    """a_i(x) = sum_C p_C / delta0_C * |b_i^C(x)| (eq. 63), shape (n, d), non-negative."""
    a = np.zeros(X.shape)
    for t in targets:
        a += (t.p / t.delta0) * np.abs(b_coefficients(X, t, w))  # [1] eq. 63
    return a


def combined_influence_scale(X: np.ndarray, targets: Sequence[Target]) -> float:
    """A = sum_C p_C / delta0_C * A_C: the statistical term of eq. 43 for the combined q."""
    return float(sum((t.p / t.delta0) * influence_scale(X, t) for t in targets))  # [1] eq. 59
