"""PRAM (sdcflow.core.perturbation.pram): invariance, frequencies, a hand-computed matrix and
sdcMicro's matrix."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.perturbation import invariant_transition, pram, pram_transition
from sdcflow.core.perturbation.pram import _transition_from_pds
from sdcflow.errors import DataError, ParameterError


def test_hand_computed_two_categories():
    # P = [[.8, .2], [.4, .6]], t = (3, 1)/4: t P = (.7, .3);
    # Q = [[.6/.7, .1/.7], [.15/.3, .15/.3]] = [[6/7, 1/7], [1/2, 1/2]];
    # R = P Q = [[11/14, 3/14], [9/14, 5/14]]; alpha = 1/2: Rs = (R + I) / 2
    R = invariant_transition(np.array([[0.8, 0.2], [0.4, 0.6]]), np.array([3.0, 1.0]))
    np.testing.assert_allclose(R, np.array([[11, 3], [9, 5]]) / 14, rtol=1e-14)
    Rs = _transition_from_pds(np.array([0.8, 0.6]), np.array([3.0, 1.0]), 0.5)
    np.testing.assert_allclose(Rs, np.array([[25, 3], [9, 19]]) / 28, rtol=1e-14)


def test_matches_sdcmicro_matrix():
    # sdcMicro 5.8.1, R 4.2:
    #   x <- factor(c(rep("a",5), rep("b",3), rep("c",2), NA), levels=c("a","b","c"))
    #   set.seed(42); pds <- runif(3, 0.8, 1)   # the first draw pram makes
    #   set.seed(42); r <- pram(x, pd=0.8, alpha=0.5); attr(r, "pram_params")$x$Rs
    pds = np.array([0.98296120869927106, 0.98741508265957234, 0.85722790695726880])
    expected = np.array(
        [
            [0.9759902163872250513, 0.0058817411859301699, 0.018128042426844779],
            [0.0098029019765502826, 0.9646772957485441058, 0.025519802274905565],
            [0.0453201060671119330, 0.0382797034123583541, 0.916400190520529789],
        ]
    )
    Rs = _transition_from_pds(pds, np.array([5.0, 3.0, 2.0]), 0.5)
    np.testing.assert_allclose(Rs, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("pd,alpha", [(0.8, 0.5), (0.0, 1.0), (0.5, 0.0), (1.0, 0.5)])
def test_default_matrix_is_invariant(pd, alpha):
    t = np.array([500.0, 300.0, 0.0, 150.0, 50.0])
    R = pram_transition(t, pd=pd, alpha=alpha, rng=7)
    assert (R >= 0).all()
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(t @ R, t, rtol=1e-12, atol=1e-10)


def test_empirical_frequencies_kept():
    rng = np.random.default_rng(0)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    codes = rng.choice(4, size=20_000, p=p)
    t = np.bincount(codes, minlength=4)
    _, R = pram(codes, rng=1)
    draws = np.array(
        [np.bincount(pram(codes, transition=R, rng=s)[0], minlength=4) for s in range(200)]
    )
    # each draw's count is a sum of independent multinomials with mean t R = t
    mean = draws.mean(axis=0)
    se = draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs(mean - t) < 5 * se + 1e-9)
    # and something did change: PRAM is not the identity
    assert (pram(codes, transition=R, rng=2)[0] != codes).mean() > 0.01


def test_missing_stays_missing_and_dtype_kept():
    codes = np.array([0, 1, -1, 2, -1, 1, 0], dtype=np.int32)
    new, R = pram(codes, pd=0.0, alpha=1.0, rng=3)
    assert new.dtype == np.int32
    np.testing.assert_array_equal(new == -1, codes == -1)
    assert R.shape == (3, 3) and new.max() < 3


def test_given_transition_used_as_is():
    codes = np.zeros(1000, dtype=np.int64)
    swap_all = np.array([[0.0, 1.0], [1.0, 0.0]])
    new, R = pram(codes, transition=swap_all, rng=0)
    np.testing.assert_array_equal(new, 1)
    np.testing.assert_array_equal(R, swap_all)


def test_unobserved_categories_get_rows():
    codes = np.array([0, 0, 2, 2, 2])
    _, R = pram(codes, n_categories=4, rng=0)
    assert R.shape == (4, 4)
    np.testing.assert_allclose(R.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.bincount(codes, minlength=4) @ R, [2, 0, 3, 0], atol=1e-12)


def test_same_seed_same_result():
    codes = np.random.default_rng(0).integers(0, 5, 300)
    a, Ra = pram(codes, rng=11)
    b, Rb = pram(codes, rng=np.random.default_rng(11))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(Ra, Rb)


@pytest.mark.parametrize(
    "kwargs,error,field",
    [
        ({"codes": [0.5, 1.0]}, DataError, "codes"),
        ({"codes": [[0, 1]]}, DataError, "codes"),
        ({"codes": [0, -2]}, DataError, "codes"),
        ({"codes": [0, 1], "pd": 1.5}, ParameterError, "pd"),
        ({"codes": [0, 1], "alpha": -0.1}, ParameterError, "alpha"),
        ({"codes": [0, 1], "transition": [[1.0, 0.0], [0.5, 0.4]]}, ParameterError, "transition"),
        ({"codes": [0, 2], "transition": np.eye(2)}, DataError, "codes"),
        ({"codes": [0, 1], "rng": None}, ParameterError, "rng"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, field):
    kwargs = {"rng": 0, **kwargs}
    codes = kwargs.pop("codes")
    with pytest.raises(error) as info:
        pram(np.asarray(codes), **kwargs)
    assert info.value.field == field
