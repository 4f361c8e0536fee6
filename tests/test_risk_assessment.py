"""The raw file's risk (core.risk.assessment): figures counted by hand on a small table."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.risk.assessment import assess
from sdcflow.errors import ParameterError

# sex, region, age band: six records
#   0: F N 1    1: F N 1    2: F S 1    3: M S 2    4: M S 2    5: M N -1 (age missing)
CODES = np.array([[0, 0, 1], [0, 0, 1], [0, 1, 1], [1, 1, 2], [1, 1, 2], [1, 0, -1]])
KEYS = ("sex", "region", "age")


def test_classes_of_identical_rows_give_records_below_k_and_uniques():
    # classes {0,1}, {2}, {3,4}, {5}: the missing age is a value of its own
    a = assess(CODES, KEYS, ks=(2, 3))
    assert a.below_k == {2: 2, 3: 6}
    assert a.sample_uniques == 2
    # no weights: the file is the population, r = 1/f: 1/2 + 1/2 + 1 + 1/2 + 1/2 + 1
    assert a.expected_reidentifications == pytest.approx(4.0)
    assert a.max_risk == 1.0
    assert a.global_risk_percent == pytest.approx(100 * 4 / 6)


def test_the_smallest_key_sets_that_single_records_out():
    # alone: age -1 is unique (record 5); sex, region: none.
    # pairs: (sex, region): F S (record 2) and M N (record 5) unique; record 5 already counted,
    # so the pair is new for record 2 only. (sex, age): F1 x3, M2 x2, M-1 x1 -> record 5 only,
    # not new. (region, age): N1 x2, S1 x1 (record 2), S2 x2, N-1 x1 -> record 2 new.
    a = assess(CODES, KEYS, max_combination=2)
    assert a.combinations == [(("age",), 1), (("sex", "region"), 1), (("region", "age"), 1)]


def test_uniques_without_each_key():
    # without sex: N1 x2, S1, S2 x2, N-1 -> 2 uniques; without region: F1 x3, M2 x2, M-1 -> 1;
    # without age: FN x2, FS, MS x2, MN -> 2
    a = assess(CODES, KEYS)
    assert a.uniques_without == {"sex": 2, "region": 1, "age": 2}
    assert set(a.key_contributions) == set(KEYS)


def test_weights_estimate_the_population_frequency():
    w = np.array([10.0, 10.0, 5.0, 2.0, 2.0, 1.0])
    a = assess(CODES, KEYS, weights=w)
    assert a.weighted
    # record 5: f = 1, F = 1: r = 1 (sdcMicro treats F <= f as a population)
    assert a.max_risk == pytest.approx(1.0)


def test_bad_input_names_the_problem():
    with pytest.raises(ParameterError, match="2-D integer"):
        assess(np.zeros((3, 2)), ("a", "b"))
    with pytest.raises(ParameterError, match="key names"):
        assess(CODES, ("a",))
    with pytest.raises(ParameterError, match="weights"):
        assess(CODES, KEYS, weights=np.zeros(6))
