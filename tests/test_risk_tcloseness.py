"""t-closeness (sdcflow.core.risk.tcloseness): Li et al.'s worked examples, properties."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.risk import t_closeness
from sdcflow.errors import DataError, ParameterError

SALARY = [3, 4, 5, 6, 8, 11, 7, 9, 10]  # Li, Li, Venkatasubramanian (2007), table 3 (k$)


def test_li_et_al_salary_classes() -> None:
    # section 4.2: EMD({3k,4k,5k}) = 0.375, EMD({6k,8k,11k}) = 0.167
    keys = np.repeat([0, 1, 2], 3)
    r = t_closeness(keys, SALARY)
    assert r.class_distance[:2] == pytest.approx([0.375, 1 / 6])
    assert r.t == pytest.approx(0.375)
    assert r.record_distance.tolist() == np.repeat(r.class_distance, 3).tolist()


def test_equal_distance_is_half_l1() -> None:
    keys = np.repeat([0, 1, 2], 3)
    disease = np.array(
        ["ulcer", "gastritis", "cancer", "flu", "bronchitis", "pneumonia"] + ["x"] * 3
    )
    r = t_closeness(keys, disease, distance="equal")
    # class 1 holds 3 of 9 equally frequent values (p = 1/9 each... x is 3/9)
    p = np.array([1, 1, 1, 1, 1, 1, 3]) / 9
    q = np.array([1, 1, 1, 0, 0, 0, 0]) / 3
    assert r.class_distance[0] == pytest.approx(0.5 * np.abs(p - q).sum())


def test_one_class_or_one_value_is_zero() -> None:
    assert t_closeness(np.zeros(5), np.arange(5)).t == 0
    assert t_closeness(np.arange(5), np.ones(5)).t == 0


def test_missing_key_is_a_class_of_its_own_and_blocks_agree() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(-1, 4, size=(500, 2))
    s = rng.integers(0, 7, size=500)
    r = t_closeness(keys, s)
    # brute force per class
    for c in np.unique(keys, axis=0)[:5]:
        mask = (keys == c).all(axis=1)
        p = np.bincount(s, minlength=7) / 500
        q = np.bincount(s[mask], minlength=7) / mask.sum()
        emd = np.abs(np.cumsum(p - q)[:-1]).sum() / 6
        assert r.record_distance[mask][0] == pytest.approx(emd)


def test_validation() -> None:
    with pytest.raises(ParameterError) as info:
        t_closeness(np.zeros(3), [1, 2, 3], distance="hierarchical")
    assert info.value.field == "distance"
    with pytest.raises(DataError) as info:
        t_closeness(np.zeros(3), ["a", "b", "c"])
    assert info.value.field == "sensitive"
    with pytest.raises(DataError):
        t_closeness(np.zeros(3), [1, 2])
