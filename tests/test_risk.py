"""Individual and global re-identification risk against hand-computed figures.

The formulas are sdcMicro's ``indivRisk(method = "approx")`` (Benedetti-Franconi, as reviewed
by Franconi and Polettini 2004), with p = f / F.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.measures.anonymity import exact_parts, match_counts
from sdcflow.core.measures.risk import individual_risk, risk_summary
from sdcflow.errors import InputError


def test_individual_risk_by_hand():
    # f = 1, F = 10: p = 0.1, r = p/(1-p) ln(1/p) = 0.111111 * 2.302585 = 0.255843
    # f = 2, F = 10: p = 0.2, r = 0.25 - 0.0625 ln 5 = 0.25 - 0.100590 = 0.149410
    # f = 3, F = 30: p = 0.1, r = 0.1 / (3 - 0.9) = 0.047619
    # f = 4, F = 4 (weights of 1): the sample is the population there, r = 1/4
    r = individual_risk(np.array([1, 2, 3, 4]), np.array([10.0, 10.0, 30.0, 4.0]))
    assert r == pytest.approx([0.2558427881, 0.1494101305, 0.0476190476, 0.25], rel=1e-9)
    assert r[0] == pytest.approx(0.1 / 0.9 * math.log(10))
    assert r[1] == pytest.approx(0.25 - 0.0625 * math.log(5))


def test_weights_below_one_give_one_over_f_not_sdcmicros_figure_above_one():
    # f = 1, F = 0.1: sdcMicro's formula with p = 10 gives 10/(-9) ln(0.1) = 2.5584 (> 1);
    # sdcflow takes 1/f there, as where F = f (docs/concepts/missing-values.md, "Weights and risk").
    # f = 3, F = 2: sdcMicro gives 1.5 / (3 + 0.5) = 0.4286; sdcflow 1/3.
    # f = 2, F = 2.5 (weights 0.5 and 2): F > f, the formula: p = 0.8, 4 - 16 ln 1.25 = 0.4297
    r = individual_risk(np.array([1, 3, 2]), np.array([0.1, 2.0, 2.5]))
    assert r == pytest.approx([1.0, 1 / 3, 4 - 16 * math.log(1.25)], rel=1e-12)
    assert r[2] == pytest.approx(0.42971, abs=1e-5)


def test_f_two_with_F_barely_above_f_is_not_lost_to_cancellation():
    # Weights 1 and 1.000000002 (f = 2, F = 2.000000002): p/(1-p) - (p/(1-p))^2 ln(1/p)
    # subtracts two terms near 1e9 and gave 1.5, a "probability" above 1. By hand, with
    # q = 1 - p: r = p - p^2 (1/2 + q/3 + ...) -> 1/2 as q -> 0; q = 1e-9 here.
    F = np.array([2.000000002, 2.00000002, 2.0002])
    r = individual_risk(np.array([2, 2, 2]), F)
    q = (F - 2) / F
    p = 1 - q
    assert r == pytest.approx(p - p**2 * (1 / 2 + q / 3 + q**2 / 4), rel=1e-12)
    assert r[0] == pytest.approx(0.5, abs=1e-9)
    # f = 1 in the same place: p/(1-p) ln(1/p) -> 1
    assert individual_risk(np.array([1]), np.array([1.000000001]))[0] == pytest.approx(1.0)


def test_without_weights_risk_is_one_over_f():
    assert individual_risk(np.array([1, 2, 5])) == pytest.approx([1.0, 0.5, 0.2])


def test_risk_summary_counts_identical_rows_by_default():
    # A blank is a value of its own: record 2 (-, S) and record 3 (M, S) are each alone.
    keys = pd.DataFrame({"sex": ["F", "F", None, "M", "M"], "region": ["N", "N", "S", "S", "E"]})
    w = np.array([10.0, 10.0, 30.0, 40.0, 50.0])
    s = risk_summary(keys, w)
    assert s.fk.tolist() == [2, 2, 1, 1, 1]
    assert s.Fk.tolist() == [20, 20, 30, 40, 50]
    assert s.distribution()["sample_uniques"] == 3


def test_risk_summary_on_a_file_with_weights_and_missing_values():
    # sdcMicro's convention, for comparison. Record 2 has sex missing: it matches any sex,
    # but only region S. Frequencies by hand:
    #   0 (F, N): 0, 1          f = 2, F = 10 + 10 = 20
    #   1 (F, N): 0, 1          f = 2, F = 20
    #   2 (-, S): 2, 3          f = 2, F = 30 + 40 = 70
    #   3 (M, S): 2, 3          f = 2, F = 70
    #   4 (M, E): 4             f = 1, F = 50
    keys = pd.DataFrame({"sex": ["F", "F", None, "M", "M"], "region": ["N", "N", "S", "S", "E"]})
    w = np.array([10.0, 10.0, 30.0, 40.0, 50.0])
    s = risk_summary(keys, w, convention="missing_matches_any")
    assert s.fk.tolist() == [2, 2, 2, 2, 1]
    assert s.Fk.tolist() == [20, 20, 70, 70, 50]
    p = np.array([0.1, 0.1, 2 / 70, 2 / 70, 1 / 50])
    odds = p / (1 - p)
    expected = np.where(s.fk == 1, odds * np.log(1 / p), odds - odds**2 * np.log(1 / p))
    assert s.risk == pytest.approx(expected)
    # global risk: expected re-identifications and their share of the records
    assert s.expected_reidentifications == pytest.approx(expected.sum())
    assert s.global_risk_percent == pytest.approx(100 * expected.sum() / 5)
    assert s.distribution()["sample_uniques"] == 1


def test_bad_frequencies_are_refused():
    with pytest.raises(InputError):
        individual_risk(np.array([0, 1]))
    with pytest.raises(InputError):
        individual_risk(np.array([1, 2]), np.array([1.0]))


def test_sums_of_weights_are_exact_in_any_order():
    """F was the sum of the weights in the order of the records (bincount), so a shuffled
    file (the published one) could give another last digit; now the exact sum, rounded."""
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 50, 3000)
    for weights in (rng.uniform(1, 500, 3000).round(3), np.exp(rng.uniform(-30, 30, 3000))):
        parts = exact_parts(weights)
        assert parts.shape[1] <= 4 and np.array_equal(parts.sum(axis=1), weights)
        _, F = match_counts(pd.DataFrame({"g": groups}), weights)
        exact = [math.fsum(weights[groups == g]) for g in groups]
        np.testing.assert_allclose(F, exact, rtol=2**-52)  # 2 parts: the exact sum, rounded
        order = rng.permutation(3000)
        _, shuffled = match_counts(pd.DataFrame({"g": groups[order]}), weights[order])
        np.testing.assert_array_equal(shuffled, F[order])
    huge = np.array([1e308, 1e307, 5.0])  # no power-of-two boundary above them: as they come
    assert exact_parts(huge).shape == (3, 1)
    assert match_counts(pd.DataFrame({"g": [1, 1, 2]}), huge)[1][2] == 5.0
