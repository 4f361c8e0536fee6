"""Interval estimates from boxes: exact mean, exact variance minimum, guaranteed bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from sdcflow.core.box.estimates import (
    interval_estimates,
    variance_max_bound,
    variance_min,
)
from sdcflow.core.box.sensitivity import Target, statistic

# Three records, one variable, boxes [0, 2], [1, 1], [4, 6], equal weights.
LO = np.array([0.0, 1.0, 4.0])
HI = np.array([2.0, 1.0, 6.0])
W = np.full(3, 1 / 3)


def test_mean_is_exact_by_hand():
    # [ (0 + 1 + 4) / 3, (2 + 1 + 6) / 3 ] = [5/3, 3]; linearization: centre 7/3 +- 2/3
    (e,) = interval_estimates(LO[:, None], HI[:, None], W, [Target("mean", (0,))])
    assert e.guaranteed == pytest.approx((5 / 3, 3.0))
    assert e.linearized == pytest.approx(e.guaranteed)
    assert (e.lower_kind, e.upper_kind) == ("exact", "exact")


def test_variance_by_hand():
    # min: g(t) = sum dist(t, box)^2 / 3; on [2, 4]: ((t-2)^2 + (t-1)^2 + (4-t)^2) / 3,
    #   g' = 0 at t = 7/3 -> x = (2, 1, 4), V = (1/9 + 16/9 + 25/9) / 3 = 42/27
    # max: convex, so at a corner; the four corners (x1, x3) give
    #   (0, 4): 78/27, (0, 6): 186/27, (2, 4): 42/27, (2, 6): 126/27 -> max 186/27
    assert variance_min(LO, HI, W) == pytest.approx(42 / 27)
    bound, attained = variance_max_bound(LO, HI, W)
    assert attained == pytest.approx(186 / 27)
    # here the bound is tight: t = E = 3 of the far corner (0, 1, 6) gives sum w (x - t)^2 = V
    assert bound == pytest.approx(186 / 27)
    (e,) = interval_estimates(LO[:, None], HI[:, None], W, [Target("variance", (0,))])
    assert e.guaranteed[0] == pytest.approx(42 / 27)
    assert (e.lower_kind, e.upper_kind) == ("exact", "guaranteed")


def test_point_boxes_give_the_point_statistic():
    X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 3.0], [5.0, 3.0]])
    targets = [
        Target("variance", (0,)),
        Target("covariance", (0, 1)),
        Target("correlation", (0, 1)),
    ]
    for e in interval_estimates(X, X, np.full(4, 0.25), targets):
        value = statistic(X, e.target)
        assert e.guaranteed == pytest.approx((value, value))
        assert e.delta == 0.0


def _random_boxes(rng, N):
    X = rng.normal(size=(N, 2))
    X[:, 1] += 0.7 * X[:, 0]
    h = rng.exponential(size=(N, 2)) * rng.choice([0.05, 0.5])
    lo = X - h * rng.uniform(size=(N, 2))
    return lo, lo + h


@pytest.mark.parametrize("weighted", [False, True])
def test_bounds_contain_the_exact_range_on_corners(weighted):
    """Covariance is bilinear, so its exact range over the boxes is reached at corners; the
    variance is convex, so its maximum is. Enumerate all corners (N = 5: 2^10) and compare."""
    rng = np.random.default_rng(1 + weighted)
    targets = [Target("variance", (0,)), Target("covariance", (0, 1))]
    for _ in range(5):
        N = 5
        lo, hi = _random_boxes(rng, N)
        w = rng.dirichlet(np.ones(N)) if weighted else np.full(N, 1 / N)
        corners = np.array(list(itertools.product([0, 1], repeat=2 * N))).reshape(-1, N, 2)
        P = lo + (hi - lo) * corners
        for e in interval_estimates(lo, hi, w, targets):
            values = np.array([statistic(p, e.target, w) for p in P])
            g, att = e.guaranteed, e.attained
            assert g[0] <= values.min() + 1e-12 and values.max() <= g[1] + 1e-12
            assert att[1] <= values.max() + 1e-12
            if e.target.stat == "covariance":
                assert values.min() - 1e-12 <= att[0]
            else:  # exact minimum: at most the smallest corner value
                assert att[0] == g[0] <= values.min() + 1e-12


def test_guaranteed_intervals_hold_for_points_inside_the_boxes():
    rng = np.random.default_rng(4)
    targets = [
        Target("mean", (0,)),
        Target("std", (1,)),
        Target("covariance", (0, 1)),
        Target("correlation", (0, 1)),
    ]
    for _ in range(20):
        N = int(rng.integers(3, 40))
        lo, hi = _random_boxes(rng, N)
        w = rng.dirichlet(np.ones(N))
        for e in interval_estimates(lo, hi, w, targets):
            g, tol = e.guaranteed, 1e-12 * max(1.0, abs(e.guaranteed[1]))
            assert g[0] - tol <= e.attained[0] <= e.attained[1] <= g[1] + tol
            for _ in range(30):
                p = lo + (hi - lo) * rng.uniform(size=lo.shape)
                assert g[0] - 1e-12 <= statistic(p, e.target, w) <= g[1] + 1e-12


def test_variance_min_matches_a_numerical_minimization():
    """The exact minimum (convex piecewise quadratic in t) against L-BFGS-B over the boxes,
    with weights that are zero for some records (dismissed by crisp or fuzzy weights)."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        N = int(rng.integers(2, 12))
        lo = rng.normal(size=N) * rng.choice([0.1, 1.0, 5.0])
        hi = lo + rng.exponential(size=N) * rng.choice([0.0, 0.5, 3.0])
        w = rng.dirichlet(np.ones(N)) * (rng.uniform(size=N) > 0.3)
        w = w / w.sum() if w.sum() > 0 else np.full(N, 1 / N)
        exact = variance_min(lo, hi, w)
        numeric = minimize(
            lambda x, w=w: w @ (x - w @ x) ** 2,
            (lo + hi) / 2,
            bounds=list(zip(lo, hi, strict=True)),
            method="L-BFGS-B",
            options={"ftol": 1e-15, "gtol": 1e-12},
        ).fun
        assert exact <= numeric + 1e-12
        assert exact == pytest.approx(numeric, abs=1e-7)


def test_correlation_bounds_resist_an_adversarial_search():
    """Push the correlation up and down with L-BFGS-B over the boxes (x = lo + (hi - lo) s,
    s = (1 + tanh z) / 2): it never leaves the guaranteed interval."""
    rng = np.random.default_rng(9)
    target = Target("correlation", (0, 1))
    for trial in range(12):
        N = int(rng.integers(4, 15))
        X = rng.normal(size=(N, 2))
        X[:, 1] = rng.uniform(-1.5, 1.5) * X[:, 0] + X[:, 1] * rng.uniform(0.1, 1.0)
        h = rng.exponential(size=(N, 2)) * rng.choice([0.05, 0.3])
        lo = X - h * rng.uniform(size=(N, 2))
        hi = lo + h
        w = rng.dirichlet(np.ones(N)) if trial % 2 else np.full(N, 1 / N)
        (e,) = interval_estimates(lo, hi, w, [target])
        for sign in (1.0, -1.0):

            def f(z, sign=sign, lo=lo, hi=hi, w=w):
                s = (1 + np.tanh(z.reshape(lo.shape))) / 2
                return sign * statistic(lo + (hi - lo) * s, target, w)

            z0 = rng.normal(size=lo.size)
            value = sign * minimize(f, z0, method="L-BFGS-B").fun
            assert e.guaranteed[0] - 1e-9 <= value <= e.guaranteed[1] + 1e-9
