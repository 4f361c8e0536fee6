"""Information-loss measures: IL, generic loss on moments, probabilistic information loss.

Three families, all comparing an original file ``X`` (n, d) with the released point values
``X_masked`` (n, d), record by record in the same order:

* :func:`sse_sst_loss` — IL = 100 * SSE / SST on standardized attributes [1], [7] eq. 1-3.
* :func:`generic_loss` / :func:`generic_loss_table` — the generic measures of Domingo-Ferrer,
  Mateo-Sanz & Torra [2], [3]: mean absolute and mean relative ("mean variation") differences
  between the vectors of means and variances and the covariance and correlation matrices.
* :func:`probabilistic_loss` / :func:`probabilistic_loss_table` — probabilistic information loss
  (PIL) of Mateo-Sanz, Domingo-Ferrer & Sebé [4]: each discrepancy is standardized with the
  sampling standard error of the statistic and mapped through the standard normal CDF to
  ``[0, 100]`` percent, so that all statistics share one bounded scale.

References
----------
[1] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
    statistical disclosure control", IEEE Transactions on Knowledge and Data Engineering 14(1)
    (2002) 189-201: IL = 100 * SSE / SST.
[2] J. Domingo-Ferrer, V. Torra, "A quantitative comparison of disclosure control methods for
    microdata", in: P. Doyle, J.I. Lane, J.J.M. Theeuwes, L.V. Zayatz (eds.), Confidentiality,
    Disclosure and Data Access: Theory and Practical Applications for Statistical Agencies,
    North-Holland, Amsterdam, 2001, 111-133 (information loss on the means, variances,
    covariances and correlations: mean absolute error and mean variation).
[3] J. Domingo-Ferrer, J.M. Mateo-Sanz, V. Torra, "Comparing SDC methods for microdata on the
    basis of information loss and disclosure risk", Pre-proceedings of ETK-NTTS 2001, vol. 2,
    Eurostat, Luxembourg, 2001, 807-826.
[4] J.M. Mateo-Sanz, J. Domingo-Ferrer, F. Sebé, "Probabilistic information loss measures in
    confidentiality protection of continuous microdata", Data Mining and Knowledge Discovery
    11(2) (2005) 181-193: ``pil(θ) = 2 Φ(|θ̂' - θ̂| / sqrt(Var θ̂)) - 1``, with the sampling
    variances of the mean, the variance, the covariance and the correlation coefficient
    given there after [5].
[5] M.G. Kendall, A. Stuart, *The Advanced Theory of Statistics*, vol. 1, Charles Griffin,
    London (standard errors of sample moments, 10.5-10.9; of the correlation coefficient,
    10.17).
[6] V. Torra, S. Ladra, "Cluster-specific information loss measures in data privacy: a
    review", Proc. Third International Conference on Availability, Reliability and Security
    (ARES 2008), IEEE, 2008, doi:10.1109/ARES.2008.87 (aPIL, the average of the PIL measures).
[7] M.E. Kabir, H. Wang, Y. Zhang, "A pairwise systematic microaggregation for statistical
    disclosure control", Proc. 2010 IEEE International Conference on Data Mining (ICDM 2010),
    266-273, doi:10.1109/ICDM.2010.111: IL = SSE / SST in eq. 1-3.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.special import ndtr

from sdcflow.core.validation import check_pair, rescale_pair
from sdcflow.errors import ParameterError

Statistic = Literal["means", "variances", "covariances", "correlations"]
STATISTICS: tuple[Statistic, ...] = ("means", "variances", "covariances", "correlations")


def sse_sst_loss(X: np.ndarray, X_masked: np.ndarray) -> float:
    """IL = 100 * SSE / SST on attributes standardized to zero mean, unit population variance.

    ``SSE = sum_i ||z_i - z'_i||^2`` and ``SST = sum_i ||z_i - mean(z)||^2``, where the masked
    file is standardized with the *original* mean and scale so that both sums are in the same
    units ([1]; for microaggregation SSE is the within-group sum of squares). Constant
    columns contribute nothing to either sum.

    Shapes: X (n, d), X_masked (n, d) -> float in [0, inf) (0..100 for microaggregation).
    """
    X, Xm = rescale_pair(*check_pair(X, X_masked))  # exact; finite near the float limits
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    live = scale > 0
    if not live.any():
        return 0.0
    Z = (X[:, live] - mean[live]) / scale[live]
    Zm = (Xm[:, live] - mean[live]) / scale[live]
    sse = float(((Z - Zm) ** 2).sum())  # [7] eq. 2
    sst = float((Z**2).sum())  # [7] eq. 3; = n * d_live after standardization
    return 100.0 * sse / sst  # [1], [7] eq. 1 (in percent)


def sse_sst_loss_present(X: np.ndarray, X_masked: np.ndarray) -> float:
    """IL = 100 SSE / SST over the values present (NaN: missing), as a release gates it.

    Without missing values this is :func:`sse_sst_loss`. With them, each column's SSE and SST
    are taken on the records that have it in both files (standardized with that column's own
    mean and scale there) and summed over the columns; a record missing one key still counts
    with the others (dropping it lost their loss, and a file whose records each miss some key
    had no record left to measure). Constant columns contribute nothing.

    Shapes: X (n, d), X_masked (n, d), NaN where missing -> float.
    """
    X = np.asarray(X, dtype=np.float64)
    P = np.asarray(X_masked, dtype=np.float64)
    if not (np.isnan(X).any() or np.isnan(P).any()):
        return sse_sst_loss(X, P)
    sse = sst = 0.0
    for j in range(X.shape[1]):
        both = ~np.isnan(X[:, j]) & ~np.isnan(P[:, j])
        x = X[both, j]
        if x.size == 0 or np.all(x == x[0]):  # nothing to measure; constant: no SST
            continue
        sse += sse_sst_loss(x[:, None], P[both, j][:, None]) * x.size / 100.0
        sst += x.size  # standardized: SST of a column is its number of values
    return 100.0 * sse / sst if sst else 0.0


# --- moments -------------------------------------------------------------------------------


def _moments(X: np.ndarray) -> dict[str, np.ndarray]:
    """Means, covariance matrix (divisor n) and correlation matrix of ``X`` (n, d)."""
    mean = X.mean(axis=0)
    C = X - mean
    cov = C.T @ C / X.shape[0]
    sd = np.sqrt(np.diag(cov))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov / np.outer(sd, sd)
    return {"means": mean, "cov": cov, "corr": corr, "sd": sd}


def _entries(stat: Statistic, mom: dict[str, np.ndarray], live: np.ndarray) -> np.ndarray:
    """The entries of one statistic that the generic measures average over.

    means, variances: one per live variable; covariances: the upper triangle with the
    diagonal (p(p+1)/2 entries); correlations: the strict upper triangle (p(p-1)/2 entries,
    the diagonal is 1 by construction) [2], [3].
    """
    idx = np.flatnonzero(live)
    if stat == "means":
        return mom["means"][idx]
    if stat == "variances":
        return np.diag(mom["cov"])[idx]
    sub = mom["cov" if stat == "covariances" else "corr"][np.ix_(idx, idx)]
    iu = np.triu_indices(idx.size, k=0 if stat == "covariances" else 1)
    return sub[iu]


def _check_statistic(statistic: str) -> Statistic:
    if statistic not in STATISTICS:
        raise ParameterError(
            f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}",
            field="statistic",
        )
    return statistic  # type: ignore[return-value]


def generic_loss(
    X: np.ndarray,
    X_masked: np.ndarray,
    statistic: Statistic,
    *,
    kind: Literal["absolute", "relative"] = "relative",
) -> float:
    """Generic information loss on one statistic: mean absolute or mean relative difference.

    With ``θ_e`` the entries of the statistic on the original file and ``θ'_e`` on the masked
    file [2], [3]:

    * ``kind="absolute"``: ``mean_e |θ_e - θ'_e|`` computed on the variables standardized with
      the *original* mean and population standard deviation (so means differ in units of the
      original standard deviation, variances and covariances in units of it squared; the
      correlations are unaffected by standardizing).
    * ``kind="relative"`` ("mean variation" of [2]): ``100 * mean_e |θ_e - θ'_e| / |θ_e|`` in
      percent, on the original units. Entries whose original value is exactly 0 are left out
      of the average (the ratio is undefined); if every entry is 0 the result is NaN, which
      fails any gate.

    Entries: means and variances one per variable; covariances over the upper triangle with
    the diagonal, ``p(p+1)/2`` entries; correlations over the strict upper triangle,
    ``p(p-1)/2`` entries. Variables that are constant in the original file are left out
    (their correlations are undefined). A masked variable that became constant gets
    correlation 0 with every other variable (its covariances are 0).

    Parameters
    ----------
    X, X_masked : array-like of shape (n, d)
        Original and masked records, same order.
    statistic : {"means", "variances", "covariances", "correlations"}
    kind : {"absolute", "relative"}

    Returns
    -------
    float
        ``NaN`` when no entry is defined (one live variable and ``statistic="correlations"``,
        or all original entries 0 for ``kind="relative"``).
    """
    X, Xm = rescale_pair(*check_pair(X, X_masked))  # exact; every figure is scale-free
    statistic = _check_statistic(statistic)
    if kind not in ("absolute", "relative"):
        raise ParameterError(f"kind must be 'absolute' or 'relative', got {kind!r}")
    live = X.std(axis=0) > 0
    if kind == "absolute":
        mean = X.mean(axis=0)
        scale = np.where(live, X.std(axis=0), 1.0)
        X, Xm = (X - mean) / scale, (Xm - mean) / scale
    a = _entries(statistic, _moments(X), live)
    b = _entries(statistic, _moments(Xm), live)
    b = np.where(np.isnan(b), 0.0, b)  # masked variable made constant: correlation 0
    if a.size == 0:
        return float("nan")
    diff = np.abs(a - b)
    if kind == "absolute":
        return float(diff.mean())
    nz = a != 0
    if not nz.any():
        return float("nan")
    return float(100.0 * (diff[nz] / np.abs(a[nz])).mean())


def generic_loss_table(X: np.ndarray, X_masked: np.ndarray) -> dict[str, float]:
    """Every generic measure at once, keyed ``"<statistic>_absolute"`` / ``"<statistic>_relative"``.

    Shapes: X (n, d), X_masked (n, d) -> dict of 8 floats.
    """
    return {
        f"{s}_{kind}": generic_loss(X, X_masked, s, kind=kind)
        for s in STATISTICS
        for kind in ("absolute", "relative")
    }


# --- probabilistic information loss [4] -----------------------------------------------------


def _sampling_sd(statistic: Statistic, X: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Standard errors of the original-file estimates, in the entry order of :func:`_entries`.

    All moments are sample central moments of the original file (divisor n) [4]:

    * mean: ``Var(x̄_j) = μ_2 / n``;
    * covariance (divisor n, ``i <= j``; variances are the case ``i = j``) [4], [5] 10.9:
      ``Var(m_ij) = ((n-1)/n^3) ((n-1) μ_22 - (n-2) μ_11^2 + μ_20 μ_02)``, which
      for ``i = j`` is ``((n-1)/n^3) ((n-1) μ_4 - (n-3) μ_2^2)``;
    * correlation (delta method, [4], [5] 10.17):
      ``Var(r) = (ρ^2/n) [μ_22/μ_11^2 + (μ_40/μ_20^2 + μ_04/μ_02^2 + 2 μ_22/(μ_20 μ_02))/4
      - (μ_31/(μ_11 μ_20) + μ_13/(μ_11 μ_02))]``, implemented after multiplying out ``ρ^2``
      so that it stays finite at ``ρ = 0``; for a bivariate normal it is ``(1 - ρ^2)^2 / n``.
    """
    n = X.shape[0]
    C = X - X.mean(axis=0)
    idx = np.flatnonzero(live)
    m2 = (C**2).mean(axis=0)  # per variable: μ_2 and μ_4
    m4 = (C**4).mean(axis=0)
    if statistic == "means":
        return np.sqrt(m2[idx] / n)
    if statistic == "variances":
        i = j = idx
    else:
        iu = np.triu_indices(idx.size, k=0 if statistic == "covariances" else 1)
        i, j = idx[iu[0]], idx[iu[1]]
    mixed = _mixed_moments(C, i, j)
    m11, m22 = mixed["11"], mixed["22"]
    m20, m02 = m2[i], m2[j]
    if statistic in ("variances", "covariances"):
        var = (n - 1) / n**3 * ((n - 1) * m22 - (n - 2) * m11**2 + m20 * m02)  # [4]
        return np.sqrt(np.maximum(var, 0.0))
    m40, m04, m31, m13 = m4[i], m4[j], mixed["31"], mixed["13"]
    s20, s02 = np.sqrt(m20), np.sqrt(m02)
    rho = m11 / (s20 * s02)
    var = (
        m22 / (m20 * m02)  # ρ² μ22/μ11²
        + rho**2 / 4 * (m40 / m20**2 + m04 / m02**2 + 2 * m22 / (m20 * m02))
        - rho * (m31 / (m20 * s20 * s02) + m13 / (m02 * s20 * s02))  # ρ² μ31/(μ11 μ20) ...
    ) / n  # [4], [5] 10.17
    return np.sqrt(np.maximum(var, 0.0))


def _mixed_moments(
    C: np.ndarray, i: np.ndarray, j: np.ndarray, *, block: int = 64
) -> dict[str, np.ndarray]:
    """Mixed central moments μ_11, μ_22, μ_31, μ_13 of the variable pairs (i, j).

    Computed ``block`` pairs at a time, so memory stays O(n * block) for any number of pairs.

    Shapes: C (n, d) centred data, i (e,), j (e,) -> four arrays (e,).
    """
    out = {key: np.empty(i.size) for key in ("11", "22", "31", "13")}
    for start in range(0, i.size, block):
        bi, bj = i[start : start + block], j[start : start + block]
        ci, cj = C[:, bi], C[:, bj]
        prod = ci * cj
        sl = slice(start, start + bi.size)
        out["11"][sl] = prod.mean(axis=0)
        out["22"][sl] = (prod * prod).mean(axis=0)
        out["31"][sl] = (prod * ci * ci).mean(axis=0)
        out["13"][sl] = (prod * cj * cj).mean(axis=0)
    return out


def probabilistic_loss_entries(
    X: np.ndarray, X_masked: np.ndarray, statistic: Statistic
) -> np.ndarray:
    """Per-entry probabilistic information loss, in percent.

    ``pil(θ) = 100 * (2 Φ(|θ̂' - θ̂| / sd(θ̂)) - 1)`` [4], where ``θ̂`` is the
    statistic on the original file, ``θ̂'`` on the masked file and ``sd(θ̂)`` its sampling
    standard error (see ``_sampling_sd``). A zero standard error (a degenerate
    distribution) gives 0 when the statistic is unchanged and 100 otherwise.

    Shapes: X (n, d), X_masked (n, d) -> (e,) with e = d, d, d(d+1)/2, d(d-1)/2 live
    variables for means, variances, covariances, correlations.
    """
    X, Xm = rescale_pair(*check_pair(X, X_masked))  # exact; fourth powers stay finite
    statistic = _check_statistic(statistic)
    if X.shape[0] < 2:
        raise ParameterError("probabilistic information loss needs at least 2 records")
    live = X.std(axis=0) > 0
    a = _entries(statistic, _moments(X), live)
    b = _entries(statistic, _moments(Xm), live)
    b = np.where(np.isnan(b), 0.0, b)
    sd = _sampling_sd(statistic, X, live)
    diff = np.abs(b - a)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, diff / np.where(sd > 0, sd, 1.0), np.where(diff > 0, np.inf, 0.0))
    return 100.0 * (2.0 * ndtr(z) - 1.0)  # [4] pil = 2 P(0 <= Z <= z)


def probabilistic_loss(X: np.ndarray, X_masked: np.ndarray, statistic: Statistic) -> float:
    """PIL of one statistic: the mean of :func:`probabilistic_loss_entries`, percent in [0, 100].

    NaN when the statistic has no entry (correlations of fewer than two live variables).
    """
    entries = probabilistic_loss_entries(X, X_masked, statistic)
    return float(entries.mean()) if entries.size else float("nan")


def probabilistic_loss_table(X: np.ndarray, X_masked: np.ndarray) -> dict[str, float]:
    """PIL for means, variances, covariances, correlations and their average ``"average"``.

    The average is over the statistics that are defined (the aPIL of [6] averages the PIL
    measures of [4] the same way; quantiles are not included here).
    """
    table = {s: probabilistic_loss(X, X_masked, s) for s in STATISTICS}
    defined = [v for v in table.values() if np.isfinite(v)]
    table["average"] = float(np.mean(defined)) if defined else float("nan")
    return table
