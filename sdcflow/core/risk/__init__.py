"""Disclosure-risk measures of the numerical core (issue 44): SUDA2 special uniques,
household risk, t-closeness, distance-based record linkage and magnitude dominance.

Each function takes plain numpy arrays and raises :class:`sdcflow.errors.ParameterError` or
:class:`sdcflow.errors.DataError` for bad input.
"""

from sdcflow.core.risk.dominance import DominanceResult, dominance
from sdcflow.core.risk.household import HouseholdRisk, household_risk
from sdcflow.core.risk.linkage import LinkageResult, distance_linkage, interval_disclosure
from sdcflow.core.risk.suda import Suda2Result, suda2
from sdcflow.core.risk.tcloseness import TClosenessResult, t_closeness

__all__ = [
    "DominanceResult",
    "HouseholdRisk",
    "LinkageResult",
    "Suda2Result",
    "TClosenessResult",
    "distance_linkage",
    "dominance",
    "household_risk",
    "interval_disclosure",
    "suda2",
    "t_closeness",
]
