"""Target statistics and their sensitivities, eq. 2-15, 37-38, 57-63, on hand-checkable data."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.box.sensitivity import (
    Target,
    b_coefficients,
    check_targets,
    combined_influence_scale,
    combined_sensitivity,
    default_delta0,
    influence_scale,
    statistic,
)
from sdcflow.errors import InputError, Reason

# x = (0, 1, 2, 5): E_x = 2, x - E_x = (-2, -1, 0, 3), V_x = (4 + 1 + 0 + 9) / 4 = 3.5
# y = (1, 1, 3, 3): E_y = 2, y - E_y = (-1, -1, 1, 1), V_y = 1
# C_xy = (2 + 1 + 0 + 3) / 4 = 1.5, rho = 1.5 / sqrt(3.5)
X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 3.0], [5.0, 3.0]])


def test_statistics_by_hand():
    assert statistic(X, Target("mean", (0,))) == pytest.approx(2.0)
    assert statistic(X, Target("variance", (0,))) == pytest.approx(3.5)
    assert statistic(X, Target("std", (0,))) == pytest.approx(np.sqrt(3.5))
    assert statistic(X, Target("covariance", (0, 1))) == pytest.approx(1.5)
    assert statistic(X, Target("correlation", (0, 1))) == pytest.approx(1.5 / np.sqrt(3.5))


def test_weighted_statistics_eq37_38_by_hand():
    # w = (0.5, 0.5, 0, 0): E_x = 0.5, V_x = 0.5 * 0.25 + 0.5 * 0.25 = 0.25; y constant -> C = 0
    w = np.array([0.5, 0.5, 0.0, 0.0])
    assert statistic(X, Target("mean", (0,)), w) == pytest.approx(0.5)
    assert statistic(X, Target("variance", (0,)), w) == pytest.approx(0.25)
    assert statistic(X, Target("covariance", (0, 1)), w) == pytest.approx(0.0)
    assert np.isnan(statistic(X, Target("correlation", (0, 1)), w))


def test_b_coefficients_by_hand():
    # eq. 10: b = 1; eq. 11: b = 2 (x - E) = (-4, -2, 0, 6); eq. 13: b_x = y - E_y, b_y = x - E_x
    np.testing.assert_allclose(b_coefficients(X, Target("mean", (0,))), [[1, 0]] * 4)
    np.testing.assert_allclose(
        b_coefficients(X, Target("variance", (0,)))[:, 0], [-4.0, -2.0, 0.0, 6.0]
    )
    cov = b_coefficients(X, Target("covariance", (0, 1)))
    np.testing.assert_allclose(cov[:, 0], [-1, -1, 1, 1])
    np.testing.assert_allclose(cov[:, 1], [-2, -1, 0, 3])
    # eq. 14 at record 0: (y - E_y)/(sx sy) - C (x - E_x)/(sx^3 sy)
    #   = -1 / sqrt(3.5) - 1.5 * (-2) / 3.5^1.5 = -0.534522 + 0.458162 = -0.076360
    corr = b_coefficients(X, Target("correlation", (0, 1)))
    assert corr[0, 0] == pytest.approx(-0.0763604, abs=1e-6)
    # eq. 12: b = (x - E) / sigma
    np.testing.assert_allclose(
        b_coefficients(X, Target("std", (0,)))[:, 0], np.array([-2, -1, 0, 3]) / np.sqrt(3.5)
    )


@pytest.mark.parametrize("stat", ["mean", "variance", "std", "covariance", "correlation"])
@pytest.mark.parametrize("weighted", [False, True])
def test_b_is_the_derivative_over_w(stat, weighted):
    """dC/dx_i(p) = w_p b_i(x(p)) (eq. 15 with eq. 37-38), by central differences."""
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(7, 3))
    w = rng.dirichlet(np.ones(7)) if weighted else np.full(7, 1 / 7)
    t = Target(stat, (1,) if stat in ("mean", "variance", "std") else (0, 2))
    b = b_coefficients(Z, t, w)
    h = 1e-6
    num = np.zeros_like(Z)
    for p in range(7):
        for i in range(3):
            up, dn = Z.copy(), Z.copy()
            up[p, i] += h
            dn[p, i] -= h
            num[p, i] = (statistic(up, t, w) - statistic(dn, t, w)) / (2 * h)
    np.testing.assert_allclose(num, w[:, None] * b, atol=1e-7)


def test_combined_sensitivity_eq63():
    # a = p1/d1 |b_mean| + p2/d2 |b_var| = 0.5/2 * 1 + 0.5/4 * |2(x - E)| on column 0
    t1, t2 = Target("mean", (0,), 0.5, 2.0), Target("variance", (0,), 0.5, 4.0)
    a = combined_sensitivity(X, [t1, t2])
    np.testing.assert_allclose(a[:, 0], 0.25 + 0.125 * np.array([4, 2, 0, 6]))
    np.testing.assert_allclose(a[:, 1], 0.0)


def test_influence_scale():
    # mean: A = sigma = sqrt(3.5); variance: sd of (x - E)^2 - V = sd of (0.5, -2.5, -3.5, 5.5)
    assert influence_scale(X, Target("mean", (0,))) == pytest.approx(np.sqrt(3.5))
    dev = np.array([4, 1, 0, 9]) - 3.5
    assert influence_scale(X, Target("variance", (0,))) == pytest.approx(np.sqrt(np.mean(dev**2)))
    t = [Target("mean", (0,), 0.5, 2.0), Target("mean", (1,), 0.5, 1.0)]
    assert combined_influence_scale(X, t) == pytest.approx(0.25 * np.sqrt(3.5) + 0.5 * 1.0)


def test_default_delta0_uses_the_scale():
    assert default_delta0(X, "mean", (0,)) == pytest.approx(0.1 * np.sqrt(3.5))
    assert default_delta0(X, "variance", (0,)) == pytest.approx(0.35)
    assert default_delta0(X, "covariance", (0, 1)) == pytest.approx(0.1 * np.sqrt(3.5))
    assert default_delta0(X, "correlation", (0, 1)) == pytest.approx(0.1)


def test_check_targets_names_the_problem():
    for bad in ([Target("covariance", (0, 0))], [Target("mean", (5,))], []):
        # a covariance of one variable with itself, a column outside 0..1, no target
        with pytest.raises(InputError) as e:
            check_targets(bad, 2)
        assert e.value.code is Reason.PARAMETER and e.value.field == "targets"
