"""Rank swapping (sdcflow.core.perturbation.rank_swap): marginals kept, the rank range, the
distribution of rank distances against sdcMicro's, top/bottom coding, missing values."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.perturbation import rank_swap
from sdcflow.errors import DataError, ParameterError


@pytest.mark.parametrize("p", [0, 1, 5, 15, 100])
def test_each_column_is_permuted_within_the_rank_range(p):
    n = 2003
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.permutation(n), rng.normal(size=n), rng.integers(0, 50, n)])
    Z = rank_swap(X, p=p, rng=1)
    for j in range(X.shape[1]):
        np.testing.assert_array_equal(np.sort(Z[:, j]), np.sort(X[:, j]))  # marginals exact
    # column 0 holds the ranks themselves: every move is below p % of n
    moved = np.abs(Z[:, 0] - X[:, 0])
    assert moved.max() < max(1, n * p / 100)
    if p >= 1:
        assert (moved > 0).mean() > 0.9


def test_swaps_are_pairs():
    x = np.arange(500.0)
    z = rank_swap(x, p=10, rng=2)[:, 0].astype(int)
    np.testing.assert_array_equal(z[z], np.arange(500))  # an involution: exchanges only


def test_rank_distances_distributed_as_sdcmicro():
    # sdcMicro 5.8.1: d <- data.frame(a = as.numeric(1:1000)); over seeds 1..50,
    #   rankSwap(d, "a", P = 0.05, TopPercent = 0, BottomPercent = 0, R0 = NULL, K0 = NULL,
    #            seed = s); the share of |swapped - original| in bins of 5 ranks (0-4, ..., 45-49):
    sdcmicro = np.array(
        [0.06160, 0.07948, 0.08600, 0.09160, 0.09504, 0.10960, 0.10584, 0.11904, 0.11792, 0.13388]
    )  # mean distance 27.40, max 49, no value kept
    x = np.arange(1000.0)
    d = np.concatenate([np.abs(rank_swap(x, p=5, rng=s)[:, 0] - x) for s in range(50)])
    assert d.max() == 49
    share = np.bincount((d // 5).astype(int), minlength=10) / d.size
    np.testing.assert_allclose(share, sdcmicro, atol=0.01)
    assert abs(d.mean() - 27.40) < 0.5


def test_top_and_bottom_coding_as_sdcmicro():
    # sdcMicro 5.8.1 (the window, 10 % of 18 or 17 values, is 1 rank: no swap, so the result
    # is deterministic):
    #   d <- data.frame(a = as.numeric(c(5, 1:20, 7)), b = c(NA, 21:1))
    #   rankSwap(d, P = 0.1, TopPercent = 10, BottomPercent = 10, R0 = NULL, K0 = NULL, seed = 3)
    a = np.array([5.0, *range(1, 21), 7.0])
    b = np.array([np.nan, *range(21, 0, -1)])
    expected_a = [5, 1.5, 1.5, *range(3, 19), 19.5, 19.5, 7]
    expected_b = [np.nan, 20.5, 20.5, *range(19, 2, -1), 1.5, 1.5]
    Z = rank_swap(np.column_stack([a, b]), p=10, top_percent=10, bottom_percent=10, rng=3)
    np.testing.assert_array_equal(Z[:, 0], expected_a)
    np.testing.assert_array_equal(Z[:, 1], expected_b)


def test_top_coding_with_swaps_keeps_the_middle_permuted():
    x = np.random.default_rng(6).permutation(1000).astype(float)
    z = rank_swap(x, p=10, top_percent=5, bottom_percent=5, rng=7)[:, 0]
    np.testing.assert_array_equal(z[x >= 950], np.arange(950, 1000).mean())
    np.testing.assert_array_equal(z[x < 50], np.arange(50).mean())
    middle = (x >= 50) & (x < 950)
    np.testing.assert_array_equal(np.sort(z[middle]), np.arange(50, 950))
    assert np.abs(z[middle] - x[middle]).max() < 90  # 10 % of the 900 swapped values


def test_missing_values_stay_and_take_no_part():
    x = np.arange(100.0)
    x[::7] = np.nan
    z = rank_swap(x, p=20, rng=4)[:, 0]
    np.testing.assert_array_equal(np.isnan(z), np.isnan(x))
    np.testing.assert_array_equal(np.sort(z[~np.isnan(z)]), np.sort(x[~np.isnan(x)]))


def test_same_seed_same_swap():
    X = np.random.default_rng(0).normal(size=(300, 3))
    np.testing.assert_array_equal(rank_swap(X, rng=5), rank_swap(X, rng=np.random.default_rng(5)))


@pytest.mark.parametrize(
    "X,kwargs,error,field",
    [
        (np.ones(5), {"p": 101}, ParameterError, "p"),
        (np.ones(5), {"p": -1}, ParameterError, "p"),
        (np.ones(5), {"top_percent": 60, "bottom_percent": 50}, ParameterError, "top_percent"),
        (np.array([1.0, np.inf]), {}, DataError, "column 0"),
        (np.ones((2, 2, 2)), {}, DataError, "X"),
        (np.ones(5), {"rng": 1.5}, ParameterError, "rng"),
    ],
)
def test_bad_input_names_the_argument(X, kwargs, error, field):
    kwargs = {"rng": 0, **kwargs}
    with pytest.raises(error) as info:
        rank_swap(X, **kwargs)
    assert info.value.field == field
