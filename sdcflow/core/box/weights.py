"""Weights for the estimates: equal, crisp dismissal of rare points, fuzzy weights.

Every point x carries a privacy contribution c(x) (its box term, eq. 16-22: n c(x) =
sum_i a_i(x) Delta_i(x)) and the estimate has a sampling error A sqrt(sum w^2) (eq. 39-42).
The total uncertainty of weights w (sum w = 1, w >= 0) is

    U(w) = n sum_x w(x) c(x) + A sqrt(sum_x w(x)^2)                          ([1] eq. 43)

* equal weights 1/N (eq. 40);
* crisp dismissal (eq. 25-26): equal weights on the points with c(x) <= c0, c0 minimizing U;
* fuzzy weights (section III): w(x) = K (lambda - n c(x)) where n c(x) < lambda, else 0, with
  lambda from the iteration of eq. 51-52 and K from eq. 55. They minimize U over all weights, so
  U(fuzzy) <= U(crisp) <= U(equal) on the same boxes.

The paper prints eq. 53-56 as ``K (lambda - c(x))`` and ``K = 1 / (Ñ lambda - sum c(x))``; the
derivation it comes from (eq. 46, 51: dismissal when n c(x) >= lambda) pins the n down:
w(x) = K (lambda - n c(x)) and K = 1 / (Ñ lambda - n sum c(x)). Both are used that way here.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from sdcflow.errors import ParameterError


@dataclass(frozen=True)
class Weights:
    """Weights of the points and how they were found.

    Attributes
    ----------
    w : ndarray of shape (N,)
        Non-negative weights summing to 1.
    scheme : {"equal", "crisp", "fuzzy"}
    uncertainty : float
        U(w) of eq. 43.
    kept : int
        Points with w > 0 (#S of eq. 23, Ñ of eq. 51).
    status : int
        0 success; 1 the eq. 51-52 iteration did not settle in ``max_iter`` steps and the
        exact sorted solution was used instead (the message says so).
    message : str
    info : dict
        lambda, K, the number of iterations (fuzzy) or the threshold c0 (crisp).
    """

    w: np.ndarray
    scheme: Literal["equal", "crisp", "fuzzy"]
    uncertainty: float
    kept: int
    status: int = 0
    message: str = "ok"
    info: dict[str, float] = field(default_factory=dict)


def _check(c: np.ndarray, A: float, n: int) -> np.ndarray:
    c = np.asarray(c, dtype=float).ravel()
    if c.size == 0 or not np.isfinite(c).all() or (c < 0).any():
        raise ParameterError("c must be a non-empty array of finite values >= 0", field="c")
    if not (np.isfinite(A) and A >= 0) or int(n) < 1:
        raise ParameterError(
            f"A must be finite and >= 0 and n >= 1, got A={A!r}, n={n!r}",
            field="A" if not (np.isfinite(A) and A >= 0) else "n",
        )
    return c


def total_uncertainty(w: np.ndarray, c: np.ndarray, A: float, n: int) -> float:
    """U(w) = n sum w c + A sqrt(sum w^2) ([1] eq. 43)."""
    return float(n * (w @ c) + A * np.sqrt(w @ w))  # [1] eq. 43


def equal_weights(c: np.ndarray, A: float, n: int) -> Weights:
    """w = 1/N for every point (eq. 40)."""
    c = _check(c, A, n)
    w = np.full(c.size, 1.0 / c.size)  # [1] eq. 40
    return Weights(w, "equal", total_uncertainty(w, c, A, n), c.size)


def crisp_weights(c: np.ndarray, A: float, n: int) -> Weights:
    """Dismiss the points with c(x) > c0; equal weights on the rest (eq. 25-26).

    c0 minimizes n / #S sum_{c <= c0} c + A / sqrt(#S) (eq. 26) over all thresholds; ties in c
    are kept or dismissed together.
    """
    c = _check(c, A, n)
    order = np.argsort(c, kind="stable")
    cs = c[order]
    m = np.arange(1, c.size + 1)
    objective = n * np.cumsum(cs) / m + A / np.sqrt(m)  # [1] eq. 26
    last_of_tie = np.append(cs[1:] != cs[:-1], True)  # a threshold keeps whole ties
    objective = np.where(last_of_tie, objective, np.inf)
    best = int(np.argmin(objective))
    w = np.zeros(c.size)
    w[order[: best + 1]] = 1.0 / (best + 1)
    return Weights(
        w,
        "crisp",
        total_uncertainty(w, c, A, n),
        best + 1,
        info={"c0": float(cs[best])},
    )


def _larger_root(count: int, s1: float, s2: float, A: float) -> float:
    """Larger root of count lambda^2 - 2 lambda s1 + s2 - A^2 = 0 (eq. 51; s1 = n sum c,
    s2 = n^2 sum c^2); the vertex s1 / count when the roots are complex."""
    disc = s1 * s1 - count * (s2 - A * A)
    return (s1 + np.sqrt(max(disc, 0.0))) / count


def fuzzy_lambda_exact(u: np.ndarray, A: float) -> float:
    """The lambda with sum (lambda - u)_+^2 = A^2, by sorting (reference for eq. 51-52).

    ``u`` is n c(x). The left side increases with lambda above min u, so the root is unique
    when A > 0; it lies on the piece where exactly the m smallest u are below lambda.
    """
    us = np.sort(u)
    m = np.arange(1, us.size + 1)
    s1, s2 = np.cumsum(us), np.cumsum(us * us)
    disc = s1 * s1 - m * (s2 - A * A)
    lam = (s1 + np.sqrt(np.maximum(disc, 0.0))) / m
    upper = np.append(us[1:], np.inf)
    ok = (disc >= 0) & (lam > us) & (lam <= upper)
    return float(lam[np.flatnonzero(ok)[0]])


def fuzzy_weights(c: np.ndarray, A: float, n: int, *, max_iter: int = 100) -> Weights:
    """Fuzzy weights w(x) = K (lambda - n c(x))_+ minimizing eq. 43 (eq. 44-56).

    Parameters
    ----------
    c : ndarray of shape (N,)
        Privacy contribution c(x) >= 0 of every point (n c(x) = sum_i a_i Delta_i).
    A : float
        Scale of the sampling error (eq. 42), >= 0. A = 0 puts all weight on the points with
        the smallest c (the privacy term alone is minimized there).
    n : int
        Number of variables.
    max_iter : int
        Cap on the iteration of eq. 51-52.

    Returns
    -------
    Weights
        ``info`` holds lambda, K and the number of iterations.
    """
    c = _check(c, A, n)
    u = n * c
    if A == 0:
        keep = u == u.min()
        w = keep / keep.sum()
        return Weights(w, "fuzzy", total_uncertainty(w, c, A, n), int(keep.sum()))
    lam = np.inf  # [1] "in the beginning we do not have any reason to dismiss any values"
    status, message, it = 1, "", 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        kept = u < lam
        count = int(kept.sum())
        s1 = float(u[kept].sum())  # n sum c(x)
        s2 = float((u[kept] ** 2).sum())  # n^2 sum c^2(x)
        new = _larger_root(count, s1, s2, A)  # [1] eq. 51
        if new == lam or (np.isfinite(lam) and np.array_equal(u < new, kept)):
            lam, status, message = new, 0, "ok"  # [1] eq. 52: lambda_k = lambda_{k-1}
            break
        lam = new
    if status != 0:
        lam = fuzzy_lambda_exact(u, A)
        message = f"eq. 51-52 did not settle in {max_iter} iterations; exact sorted solution used"
    kept = u < lam
    K = 1.0 / (kept.sum() * lam - u[kept].sum())  # [1] eq. 55 (with n c(x), see module doc)
    w = np.where(kept, K * (lam - u), 0.0)  # [1] eq. 56
    w /= w.sum()  # exact sum 1 against rounding
    return Weights(
        w,
        "fuzzy",
        total_uncertainty(w, c, A, n),
        int(kept.sum()),
        status,
        message,
        {"lambda": float(lam), "K": float(K), "iterations": it},
    )


def make_weights(
    scheme: Literal["equal", "crisp", "fuzzy"], c: np.ndarray, A: float, n: int
) -> Weights:
    """Dispatch on the scheme name."""
    if scheme == "equal":
        return equal_weights(c, A, n)
    if scheme == "crisp":
        return crisp_weights(c, A, n)
    if scheme == "fuzzy":
        return fuzzy_weights(c, A, n)
    raise ParameterError(f"weights must be 'equal', 'crisp' or 'fuzzy', got {scheme!r}")
