"""Re-identification risk per record from key frequencies and sampling weights.

The released file is a sample of a population. A record whose combination of key values is
rare in the sample (frequency f_k) and estimated rare in the population (F_k, the sum of the
sampling weights of the sample records sharing it) can be re-identified by an intruder who
knows those keys. The *individual risk* r_k is the probability of a correct match given
f_k and F_k under a negative-binomial superpopulation model [1]; sdcMicro's
``measure_risk`` [2] computes it with the approximation of Benedetti and Franconi as reviewed
by Franconi and Polettini [3], with ``p_k = f_k / F_k``::

    r_k = p_k / (1 - p_k) * ln(1 / p_k)                               f_k = 1
    r_k = p_k / (1 - p_k) - (p_k / (1 - p_k))^2 * ln(1 / p_k)         f_k = 2
    r_k = p_k / (f_k - (1 - p_k))                                     f_k > 2

and ``r_k = 1 / f_k`` where ``f_k = F_k`` (the sample is the population there; also the whole
formula without sampling weights). The *global risk* is the expected number of
re-identifications, ``ER = sum_i r_i``, reported also as a share of the records.

Frequencies count identical released rows by default, a missing or suppressed value being a
value of its own (:mod:`sdcflow.core.measures.anonymity`): an intruder who finds the one row
carrying a target's exact keys has found the target. ``convention="missing_matches_any"``
counts as sdcMicro's ``freqCalc`` with alpha = 1 (a missing value matches any value), for
comparison.

References
----------
[1] C.J. Skinner, D.J. Holmes, "Estimating the re-identification risk per record in
    microdata", Journal of Official Statistics 14(4) (1998) 361-372.
[2] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using the
    R package sdcMicro", Journal of Statistical Software 67(4) (2015) 1-36,
    doi:10.18637/jss.v067.i04 (``indivRisk`` with ``method = "approx"``, ``measure_risk``;
    sdcMicro 5.8).
[3] L. Franconi, S. Polettini, "Individual risk estimation in mu-Argus: a review", in:
    J. Domingo-Ferrer, V. Torra (eds.), Privacy in Statistical Databases (PSD 2004), Lecture
    Notes in Computer Science 3050, Springer, Berlin, 2004, 262-272,
    doi:10.1007/978-3-540-25955-8_20 (the approximation of R. Benedetti, L. Franconi,
    "Statistical and technological solutions for controlled data dissemination", Pre-proceedings
    of New Techniques and Technologies for Statistics, Sorrento, 1998, 225-232).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdcflow.core.measures.anonymity import Convention, match_counts
from sdcflow.errors import ParameterError


def individual_risk(fk: np.ndarray, Fk: np.ndarray | None = None) -> np.ndarray:
    """Individual re-identification risk from sample and population frequencies [2], [3].

    Parameters
    ----------
    fk : ndarray of shape (n,), int >= 1
        Sample frequency of every record's key combination.
    Fk : ndarray of shape (n,) or None
        Its estimated population frequency (sum of sampling weights, ``Fk >= fk`` when every
        weight is at least 1). None: the file is the population, ``r = 1 / fk``.

    Returns
    -------
    ndarray of shape (n,) in (0, 1]

    Notes
    -----
    Where ``Fk <= fk`` (weights of 1, or below 1) the record is treated as in a population,
    ``r = 1 / fk``, as sdcMicro does where ``fk == Fk``; where ``Fk < fk`` sdcMicro applies the
    formula with ``p_k > 1`` and reports values above 1 (docs/concepts/missing-values.md,
    "Weights and risk").
    """
    f = np.asarray(fk, dtype=np.float64).reshape(-1)
    if f.size == 0 or np.any(f < 1) or not np.all(np.isfinite(f)):
        raise ParameterError("fk must be a non-empty array of frequencies >= 1")
    if Fk is None:
        return 1.0 / f  # [2] survey = FALSE
    F = np.asarray(Fk, dtype=np.float64).reshape(-1)
    if F.shape != f.shape or not np.all(np.isfinite(F)) or np.any(F <= 0):
        raise ParameterError("Fk must be one positive finite number per record, like fk")
    population = F <= f * (1 + 1e-12)
    # [3] p_k = f_k / F_k and q = 1 - p_k (0.5: placeholder, replaced), q from F - f so that
    # it keeps its digits where F is barely above f; ln(1/p_k) from the smaller of the two.
    p = np.where(population, 0.5, f / F)
    q = np.where(population, 0.5, (F - f) / F)
    log_inv = np.where(q < 0.5, -np.log1p(-q), -np.log(p))
    # f_k = 2 as written, p/q - (p/q)^2 ln(1/p), subtracts two terms of order 1/q: where F
    # exceeds f by a part in 1e9 it gave 1.5 instead of about 1/2. The same value without the
    # cancellation: p - p^2 S, S = (ln(1/p) - q) / q^2 = sum_{j>=2} q^(j-2) / j.
    small = q < 1e-3
    series = sum(q**j / (j + 2) for j in range(8))
    S = np.where(small, series, (log_inv - q) / np.where(small, 1.0, q) ** 2)
    r = np.where(
        f == 1,
        p * log_inv / q,  # [3] f_k = 1: p/(1-p) ln(1/p)
        np.where(
            f == 2,
            p - p**2 * S,  # [3] f_k = 2: p/(1-p) - (p/(1-p))^2 ln(1/p)
            p / (f - q),  # [3] f_k > 2: p / (f_k - (1 - p))
        ),
    )
    return np.where(population, 1.0 / f, r)  # [2] r_k = 1/f_k where f_k = F_k


@dataclass(frozen=True)
class RiskSummary:
    """Individual and global risk of a released file.

    Attributes
    ----------
    risk : ndarray of shape (n,)
        Individual risk of every record.
    fk, Fk : ndarray of shape (n,)
        Sample frequency and estimated population frequency (``Fk = fk`` without weights).
    weighted : bool
        Whether sampling weights were given.
    """

    risk: np.ndarray
    fk: np.ndarray
    Fk: np.ndarray
    weighted: bool

    @property
    def expected_reidentifications(self) -> float:
        """Global risk: ``ER = sum_i r_i`` [2], correctly rounded (``math.fsum``,
        cheap next to the risks themselves), so that it does not depend on the order of the
        records. numpy's pairwise sum does: the figure recomputed on the published file,
        whose rows are shuffled, could differ from the manifest's in its last digit."""
        return math.fsum(self.risk)

    @property
    def global_risk_percent(self) -> float:
        """``100 ER / n``: the expected re-identifications as a share of the records [2]."""
        return 100.0 * self.expected_reidentifications / self.risk.size

    @property
    def max_risk(self) -> float:
        return float(self.risk.max())

    def distribution(self) -> dict[str, float]:
        """Figures of the risk distribution for reports (no record value)."""
        r = self.risk
        return {
            "records": int(r.size),
            "max": float(r.max()),
            "p99": float(np.quantile(r, 0.99)),
            "p95": float(np.quantile(r, 0.95)),
            "median": float(np.median(r)),
            "mean": float(r.mean()),
            "records_over_0.5": int((r > 0.5).sum()),
            "records_over_0.1": int((r > 0.1).sum()),
            "records_over_0.01": int((r > 0.01).sum()),
            "sample_uniques": int((self.fk == 1).sum()),
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk_percent": self.global_risk_percent,
        }


def risk_summary(
    released: pd.DataFrame | np.ndarray,
    weights: np.ndarray | None = None,
    *,
    convention: Convention = "identical",
) -> RiskSummary:
    """Individual and global risk of the released keys, frequencies counted under
    ``convention`` (identical released rows by default; module docstring).

    Shapes: released (n, d), weights (n,) positive or None -> :class:`RiskSummary`.
    """
    fk, Fk = match_counts(released, weights, convention=convention)
    risk = individual_risk(fk, Fk if weights is not None else None)
    return RiskSummary(risk=risk, fk=fk, Fk=Fk, weighted=weights is not None)
