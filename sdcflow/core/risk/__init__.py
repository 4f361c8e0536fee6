"""Disclosure-risk measures of the numerical core (issue 44): SUDA2 special uniques,
household risk, t-closeness, distance-based record linkage and magnitude dominance.

Each function takes plain numpy arrays and raises :class:`sdcflow.errors.ParameterError` or
:class:`sdcflow.errors.DataError` for bad input.
"""

from sdcflow.core.risk.household import HouseholdRisk, household_risk
from sdcflow.core.risk.suda import Suda2Result, suda2

__all__ = ["HouseholdRisk", "Suda2Result", "household_risk", "suda2"]
