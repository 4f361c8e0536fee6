"""Household risk (sdcflow.core.risk.household) against sdcMicro's measure_risk with hid."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.risk import household_risk
from sdcflow.errors import DataError

HID = [1, 1, 1, 2, 2, 3, 4, 4, 4, 4, 5, 6, 6, 7, 8, 8, 8, 9, 10, 10]

# Produced by R 4.2, sdcMicro 5.8.1:
#   d <- data.frame(
#     a = c(1,1,2,2,1,3,1,2,2,1,3,3,1,2,1,1,2,3,1,2),
#     b = c(1,2,1,1,1,2,2,1,2,1,1,2,1,1,2,1,1,2,2,1),
#     w = c(10,12,8,30,15,9,11,20,7,14,25,6,18,13,9,16,22,5,10,12),
#     hid = <HID above>)
#   r <- measure_risk(d, keyVars = c("a", "b"), w = "w", hid = "hid")
#   sprintf("%.17g", r$Res[, "risk"]); sprintf("%.17g", r$Res[, "hier_risk"])
#   sprintf("%.17g", c(r$hier_risk_ER, r$hier_risk, r$hier_risk_pct))
# fmt: off
R_RISK = [
    0.016835016835016835, 0.030769230769230767, 0.011299435028248588, 0.011299435028248588,
    0.016835016835016835, 0.069767441860465115, 0.030769230769230767, 0.011299435028248588,
    0.3243183581758855, 0.016835016835016835, 0.13411982603617503, 0.069767441860465115,
    0.016835016835016835, 0.011299435028248588, 0.030769230769230767, 0.016835016835016835,
    0.011299435028248588, 0.069767441860465115, 0.030769230769230767, 0.011299435028248588,
]
R_HIER_RISK = [
    0.057853634124820585, 0.057853634124820585, 0.057853634124820585, 0.027944225684338742,
    0.027944225684338742, 0.069767441860465129, 0.3634089966668359, 0.3634089966668359,
    0.3634089966668359, 0.3634089966668359, 0.134119826036175, 0.085427922637224984,
    0.085427922637224984, 0.011299435028248594, 0.057853634124820585, 0.057853634124820585,
    0.057853634124820585, 0.069767441860465129, 0.041720990873533204, 0.041720990873533204,
]
R_HIER_ER, R_HIER, R_HIER_PCT = 2.3958982145918148, 0.11979491072959074, 11.979491072959075
# fmt: on


def test_matches_sdcmicro_measure_risk_hid() -> None:
    r = household_risk(R_RISK, HID)
    np.testing.assert_allclose(r.record_risk, R_HIER_RISK, rtol=1e-13)
    assert r.expected == pytest.approx(R_HIER_ER, rel=1e-13)
    assert r.global_risk == pytest.approx(R_HIER, rel=1e-13)
    assert r.global_risk_pct == pytest.approx(R_HIER_PCT, rel=1e-13)
    assert r.households.tolist() == list(range(1, 11))


def test_string_ids_certain_member_and_order() -> None:
    r = household_risk([1.0, 0.2, 0.0, 0.0], ["b", "b", "a", "a"])
    assert r.households.tolist() == ["a", "b"]
    assert r.household_risk.tolist() == [0.0, 1.0]
    assert r.record_risk.tolist() == [1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("risk", "hid", "field"),
    [([0.1, 1.2], [1, 1], "risk"), ([0.1, np.nan], [1, 1], "risk"), ([0.1, 0.2], [1], "household")],
)
def test_validation(risk: list, hid: list, field: str) -> None:
    with pytest.raises(DataError) as info:
        household_risk(risk, hid)
    assert info.value.field == field
