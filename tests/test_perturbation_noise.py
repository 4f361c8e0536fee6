"""Noise addition (sdcflow.core.perturbation.add_noise): the covariance each method promises,
means, missing values, sdcMicro's restricted constant."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.perturbation import add_noise
from sdcflow.errors import DataError, ParameterError

COV = np.array([[4.0, 1.2, -0.8], [1.2, 1.0, 0.3], [-0.8, 0.3, 2.25]])


@pytest.fixture(scope="module")
def data():
    return np.random.default_rng(0).multivariate_normal([10.0, -3.0, 100.0], COV, size=200_000)


def test_additive_adds_independent_noise_of_the_column_scale(data):
    Z = add_noise(data, method="additive", noise=150, rng=1)
    S = np.cov(data, rowvar=False)
    E = np.cov(Z - data, rowvar=False)
    # noise variance (noise/100 * s_j)^2 on the diagonal, none off it
    np.testing.assert_allclose(np.diag(E), 1.5**2 * np.diag(S), rtol=0.02)
    off = (
        E[~np.eye(3, dtype=bool)]
        / np.sqrt(np.outer(np.diag(E), np.diag(E)))[~np.eye(3, dtype=bool)]
    )
    assert np.abs(off).max() < 0.01
    np.testing.assert_allclose(Z.mean(axis=0), data.mean(axis=0), atol=4 * 1.5 * 2 / np.sqrt(2e5))


def test_correlated_output_covariance_is_one_plus_alpha_sigma(data):
    alpha = 0.5
    Z = add_noise(data, method="correlated", noise=100 * alpha, rng=2)
    S = np.cov(data, rowvar=False)
    # Brand (2002): cov(Z) = (1 + alpha) S; correlations unchanged
    np.testing.assert_allclose(np.cov(Z, rowvar=False), (1 + alpha) * S, rtol=0.02, atol=0.01)
    np.testing.assert_allclose(
        np.corrcoef(Z, rowvar=False), np.corrcoef(data, rowvar=False), atol=0.01
    )
    np.testing.assert_allclose(Z.mean(axis=0), data.mean(axis=0), atol=0.02)


@pytest.mark.parametrize("n", [100, 1000])
def test_restricted_is_sdcmicros_deterministic_shrinkage(n):
    X = np.random.default_rng(3).normal(size=(n, 2)) * [1.0, 5.0] + [2.0, 7.0]
    w = 1.5
    c = (
        np.sqrt((n - 1 - w) / ((n + 1) * (1 + w)))
        if n < 500
        else np.sqrt((n - 1) / (n + n * w - 1))
    )
    Z = add_noise(X, method="restricted", noise=150, rng=0)
    np.testing.assert_allclose(Z, c * X + (1 - c) * X.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(Z.mean(axis=0), X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(np.cov(Z, rowvar=False), c**2 * np.cov(X, rowvar=False), rtol=1e-12)


def test_restricted_matches_sdcmicro_column_by_column():
    # sdcMicro 5.8.1, one column per call (deterministic: no random draw):
    #   addNoise(data.frame(a=c(1,2,4,8,16)), noise=150, method="restr")$xm
    #   addNoise(data.frame(b=c(3,1,4,1,5)), noise=150, method="restr")$xm
    # With both columns in one call sdcMicro recycles the vector of column means down the
    # rows (cc * x + d, d of length 2), which mixes the columns' means when n is odd; sdcflow
    # gives each column its own mean, as the formula in sdcMicro's documentation does.
    X = np.array([[1, 3], [2, 1], [4, 4], [8, 1], [16, 5]], dtype=float)
    expected = np.array(
        [
            [4.0771088895879126, 2.8816496580927726],
            [4.4853571800517757, 2.0651530771650464],
            [5.3018537609795011, 3.2898979485566358],
            [6.9348469228349536, 2.0651530771650464],
            [10.2008332465458587, 3.6981462390204989],
        ]
    )
    np.testing.assert_allclose(add_noise(X, method="restricted", rng=0), expected, rtol=1e-14)


@pytest.mark.parametrize("method", ["additive", "correlated", "restricted"])
def test_missing_values_stay_missing(method):
    X = np.random.default_rng(4).normal(size=(500, 3))
    X[[3, 10, 10, 77], [0, 1, 2, 0]] = np.nan
    Z = add_noise(X, method=method, rng=5)
    np.testing.assert_array_equal(np.isnan(Z), np.isnan(X))
    assert np.isfinite(Z[~np.isnan(X)]).all()


def test_one_dimensional_input_is_a_column():
    Z = add_noise(np.arange(10.0), noise=10, rng=0)
    assert Z.shape == (10, 1)


def test_same_seed_same_noise():
    X = np.random.default_rng(4).normal(size=(50, 3))
    for method in ("additive", "correlated"):
        np.testing.assert_array_equal(
            add_noise(X, method=method, rng=9),
            add_noise(X, method=method, rng=np.random.default_rng(9)),
        )


@pytest.mark.parametrize(
    "X,kwargs,error,field",
    [
        (np.ones((5, 2)), {"method": "ROMM"}, ParameterError, "method"),
        (np.ones((5, 2)), {"noise": -1}, ParameterError, "noise"),
        (np.ones((5, 1)), {"method": "correlated"}, ParameterError, "method"),
        (
            np.array([[1.0, np.nan], [2.0, 1.0], [np.nan, 2.0]]),
            {"method": "correlated"},
            DataError,
            "X",
        ),
        (np.array([[1.0, np.nan], [2.0, np.nan], [3.0, 2.0]]), {}, DataError, "column 1"),
        (np.array([[1.0, np.inf], [2.0, 1.0]]), {}, DataError, "column 1"),
        (np.array([["a"], ["b"]]), {}, DataError, "X"),
        (np.ones((5, 2)), {"method": "restricted", "noise": 500}, ParameterError, "noise"),
    ],
)
def test_bad_input_names_the_argument(X, kwargs, error, field):
    with pytest.raises(error) as info:
        add_noise(X, rng=0, **kwargs)
    assert info.value.field == field


def test_additive_is_the_formula_on_the_seeds_draws():
    # z_ij = x_ij + e_ij noise/100 s_j, e the (d, n) standard-normal draw, column after column
    X = np.random.default_rng(6).normal(size=(300, 3)) * [1.0, 10.0, 0.1]
    X[[4, 9], [1, 2]] = np.nan
    kept = X.copy()
    Z = add_noise(X, method="additive", noise=40, rng=np.random.default_rng(8))
    E = np.random.default_rng(8).standard_normal((3, 300)).T
    np.testing.assert_allclose(Z, X + E * 0.4 * np.nanstd(X, axis=0, ddof=1), rtol=1e-14)
    np.testing.assert_array_equal(X, kept)  # X is read, never written


def test_correlated_is_numpys_multivariate_normal_of_the_seed():
    # mvrnorm(N, 0, noise/100 * cov(na.omit(x))): numpy's eigh factor of the same draws
    X = np.random.default_rng(7).multivariate_normal([0.0, 5.0, 1.0], COV, size=400)
    X[[3, 8], [0, 2]] = np.nan
    complete = X[~np.isnan(X).any(axis=1)]
    S = np.cov(complete, rowvar=False)
    Z = add_noise(np.asfortranarray(X), method="correlated", noise=80, rng=11)
    E = np.random.default_rng(11).multivariate_normal(np.zeros(3), 0.8 * S, size=400, method="eigh")
    np.testing.assert_allclose(Z, X + E, rtol=1e-12, atol=1e-12)


def test_integer_input_is_read_as_float():
    X = np.arange(20).reshape(10, 2)
    np.testing.assert_allclose(
        add_noise(X, method="restricted", rng=0),
        add_noise(X.astype(float), method="restricted", rng=0),
        rtol=0,
    )
