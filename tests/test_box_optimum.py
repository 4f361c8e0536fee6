"""Optimal half-widths: eq. 19-21 by hand, and the l-diversity algorithm of eq. 33-36 against a
brute-force minimization of eq. 30-32."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.box.anonymize import optimum_ratios
from sdcflow.core.box.optimum import optimal_half_widths
from sdcflow.errors import InputError, Reason


def test_eq21_by_hand():
    # n = 2, a = (1, 4), rho = 1, k = 4: c = 1/2 (4/1)^(1/2) (1*4)^(1/2) = 2 (eq. 20),
    # Delta = c / a = (2, 0.5) (eq. 19); rho 2^2 Delta1 Delta2 = 4 = k (eq. 18); cost = 2 c = 4.
    out = optimal_half_widths(np.array([[1.0, 4.0]]), np.array([1.0]), 4)
    np.testing.assert_allclose(out.half_widths, [[2.0, 0.5]])
    assert out.c[0] == pytest.approx(2.0)
    assert out.cost[0] == pytest.approx(4.0)
    assert out.t[0] == 0


def test_eq33_36_by_hand():
    # l = 2, eps = (0.1, 1): bounds l eps / 2 = (0.1, 1). Eq. 21 gives Delta_2 = 0.5 < 1, so the
    # side with the largest a_i eps_i (side 2: 4 > 0.1) is fixed at 1 (t = 1). Eq. 35:
    # c_1 = 1/2 (k a_1 / (rho l eps_2)) = 1/2 * 4 * 1 / (1 * 2 * 1) = 1 -> Delta_1 = c_1 / a_1 = 1.
    # Eq. 36: Delta(1) = 1/2 l a_2 eps_2 + (n - 1) c_1 = 4 + 1 = 5.
    out = optimal_half_widths(np.array([[1.0, 4.0]]), np.array([1.0]), 4, ell=2, eps=[0.1, 1.0])
    np.testing.assert_allclose(out.half_widths, [[1.0, 1.0]])
    assert out.t[0] == 1
    assert out.c[0] == pytest.approx(1.0)
    assert out.cost[0] == pytest.approx(5.0)


def test_all_sides_on_their_bounds():
    # l eps / 2 = (2, 2): the box 4 x 4 at rho = 1 holds 16 >= k = 4 records: t = n = 2.
    out = optimal_half_widths(np.array([[1.0, 3.0]]), np.array([1.0]), 4, ell=2, eps=[2.0, 2.0])
    np.testing.assert_allclose(out.half_widths, [[2.0, 2.0]])
    assert out.t[0] == 2
    assert out.cost[0] == pytest.approx(8.0)


def _brute_force(a, rho, k, lower):
    """min sum a_i Delta_i s.t. prod Delta_i >= k / (2^n rho), Delta_i >= lower_i (eq. 30-32).

    A dense log grid over all sides but the last; the last side takes the smallest feasible
    value max(lower_n, P / prod others). The kinks (a side on its bound, the last side's bound
    becoming active) are added to the grids, so the grid minimum is accurate to second order.
    """
    n = a.size
    P = k / (2**n * rho)
    span = np.logspace(-3, 3, 1201) * P ** (1 / n)
    if n == 2:
        d1 = np.unique(np.concatenate([span, [lower[0], P / lower[1]]]))
        d1 = d1[d1 >= lower[0]]
        d2 = np.maximum(lower[1], P / d1)
        return float((a[0] * d1 + a[1] * d2).min())
    assert n == 3
    d1 = np.unique(np.concatenate([span, [lower[0]]]))
    d1 = d1[d1 >= lower[0]][:, None]
    d2 = np.concatenate(
        [
            np.broadcast_to(span, (d1.size, span.size)),
            np.full_like(d1, lower[1]),
            P / (lower[2] * d1),
        ],
        axis=1,
    )
    d2 = np.maximum(d2, lower[1])
    d3 = np.maximum(lower[2], P / (d1 * d2))
    return float((a[0] * d1 + a[1] * d2 + a[2] * d3).min())


@pytest.mark.parametrize("n", [2, 3])
def test_l_diversity_algorithm_matches_brute_force(n):
    rng = np.random.default_rng(7 + n)
    fixed_counts = np.zeros(n + 1, dtype=int)
    for _ in range(40):
        a = rng.lognormal(0, 1.0, size=n)
        rho = rng.lognormal(0, 1.0)
        k = int(rng.integers(2, 20))
        ell = int(rng.integers(2, 5))
        eps = rng.lognormal(-0.5, 1.0, size=n)
        out = optimal_half_widths(a[None, :], np.array([rho]), k, ell=ell, eps=eps)
        hw = out.half_widths[0]
        # the result is feasible for eq. 31-32 ...
        assert np.prod(hw) >= k / (2**n * rho) * (1 - 1e-9)
        assert (2 * hw >= ell * eps * (1 - 1e-12)).all()
        assert out.cost[0] == pytest.approx(a @ hw)
        # ... and no worse than the brute-force minimum, which it matches
        brute = _brute_force(a, rho, k, ell * eps / 2)
        assert out.cost[0] <= brute * (1 + 1e-9)
        assert brute <= out.cost[0] * (1 + 1e-4)
        fixed_counts[out.t[0]] += 1
    assert fixed_counts[0] > 0 and fixed_counts[1:].sum() > 0  # both regimes were exercised


def test_vectorized_over_points():
    a = np.array([[1.0, 4.0], [1.0, 4.0], [2.0, 2.0]])
    out = optimal_half_widths(a, np.array([1.0, 1.0, 4.0]), 4, ell=2, eps=[0.1, 1.0])
    np.testing.assert_allclose(out.half_widths[0], [1.0, 1.0])
    np.testing.assert_allclose(out.half_widths[1], [1.0, 1.0])
    # point 3: c = 1/2 (4/4)^(1/2) (2*2)^(1/2) = 1, Delta = (0.5, 0.5) >= (0.1, 1)? no: side 2
    # is fixed at 1 -> c_1 = 1/2 (4 * 2 / (4 * 2 * 1)) = 0.5, Delta_1 = 0.25 >= 0.1.
    np.testing.assert_allclose(out.half_widths[2], [0.25, 1.0])


def test_rejects_zero_sensitivity():
    with pytest.raises(InputError) as e:
        optimal_half_widths(np.array([[1.0, 0.0]]), np.array([1.0]), 4)
    assert e.value.code is Reason.PARAMETER and e.value.field == "a"


def test_optimum_ratio_on_a_grid_by_hand():
    # x = 0..99, boxes of 4 consecutive values: Delta = 1.5. Around an inner point the cube
    # holding k = 4 records (itself included) has half-width 2 (distances 0, 1, 1, 2), so
    # rho = 4 / (2 * 2) = 1 and eq. 21 in one dimension gives Delta* = k / (2 rho) = 2:
    # ratio 1.5 / 2 = 0.75. At x = 0 the radius is 3: rho = 2/3, Delta* = 3, ratio 0.5.
    X = np.arange(100.0)[:, None]
    labels = np.arange(100) // 4
    ratio, balance = optimum_ratios(
        X, labels, np.ones((100, 1)), np.full((100, 1), 1.5), 4, None, np.zeros(1)
    )
    np.testing.assert_allclose(ratio[1:99], 0.75)
    assert ratio[0] == pytest.approx(0.5)
    np.testing.assert_allclose(balance, 1.0)  # one active side: a_i Delta_i trivially equal
