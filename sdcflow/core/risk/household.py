"""Household (cluster) risk: the risk that at least one member of a household is re-identified.

Re-identifying one member of a household discloses the others, so a household's risk is the
probability that at least one of its members is re-identified; with the members' individual
risks r_i taken as independent [1]_ [2]_:

    R_h = 1 - prod_{i in h} (1 - r_i)                                              (1)

Every member carries R_h. The global figures are those of sdcMicro's ``measure_risk`` with
``hid`` (``fast_hier = TRUE``) [2]_: the expected number of re-identifications is the sum of
R_h over *records* (a household of size s counts s times), the global risk that sum over n,
and the percentage 100 times it.

References
----------
.. [1] L. Franconi, S. Polettini, "Individual risk estimation in mu-Argus: a review",
   Privacy in Statistical Databases, LNCS 3050 (2004) 262-272.
.. [2] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using
   the R package sdcMicro", Journal of Statistical Software 67(4) (2015); sdcMicro 5.8.1,
   ``R/measure_risk.R`` (``reshier <- by(risk, hid, function(x) 1 - prod(1 - x))``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdcflow.core.risk._checks import as_1d, group_codes
from sdcflow.errors import DataError

__all__ = ["HouseholdRisk", "household_risk"]


@dataclass(frozen=True)
class HouseholdRisk:
    """What :func:`household_risk` returns (n records, H households).

    Attributes
    ----------
    record_risk : ndarray, shape (n,)
        Each record's household risk R_h (sdcMicro ``Res[, "hier_risk"]``).
    households : ndarray, shape (H,)
        The distinct household ids, sorted.
    household_risk : ndarray, shape (H,)
        R_h per household, in the order of ``households``.
    expected : float
        Sum of ``record_risk`` (sdcMicro ``hier_risk_ER``).
    global_risk : float
        ``expected / n`` (``hier_risk``).
    global_risk_pct : float
        ``100 * global_risk`` (``hier_risk_pct``).
    """

    record_risk: np.ndarray
    households: np.ndarray
    household_risk: np.ndarray
    expected: float
    global_risk: float
    global_risk_pct: float


def household_risk(risk: np.ndarray, household: np.ndarray) -> HouseholdRisk:
    """Household risk from individual re-identification risks, eq. (1).

    Parameters
    ----------
    risk : array_like of float, shape (n,)
        Individual risks r_i in [0, 1] (e.g. sdcMicro's ``indivRisk``).
    household : array_like, shape (n,)
        Household id of each record (integers or strings).

    Returns
    -------
    HouseholdRisk

    Raises
    ------
    DataError
        Risks not finite or outside [0, 1], or the arrays of different lengths.

    Examples
    --------
    >>> r = household_risk([0.5, 0.5, 0.1], [1, 1, 2])
    >>> r.household_risk.tolist(), r.expected
    ([0.75, 0.1], 1.6)
    """
    r = np.asarray(risk, dtype=float)
    if r.ndim != 1 or r.size == 0:
        raise DataError("risk must be a non-empty 1-D array, one risk per record", field="risk")
    if not np.isfinite(r).all() or (r < 0).any() or (r > 1).any():
        raise DataError(
            "risk must hold probabilities in [0, 1]; compute individual risks first "
            "and drop or impute records without one",
            field="risk",
        )
    hid = as_1d(household, "household", r.size)
    code, n_h = group_codes(hid, "household")
    # prod (1 - r_i) as exp(sum log1p(-r_i)): exact for r_i = 1 (log 0 = -inf), stable for small r
    with np.errstate(divide="ignore"):
        log_safe = np.bincount(code, weights=np.log1p(-r), minlength=n_h)
    h_risk = -np.expm1(log_safe)  # eq. (1)
    rec = h_risk[code]
    expected = float(rec.sum())
    return HouseholdRisk(
        record_risk=rec,
        households=np.unique(hid),
        household_risk=h_risk,
        expected=expected,
        global_risk=expected / r.size,
        global_risk_pct=100.0 * expected / r.size,
    )
