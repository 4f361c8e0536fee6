"""FCM / entropy FCM (``core/fuzzy/fcm.py``): the propositions of the constrained-fuzzy paper,
constraint handling to 1e-9, coincident records, truncation against full FCM."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from sdcflow.core.fuzzy.fcm import (
    Fuzziness,
    fcm_objective,
    fuzzy_c_means,
    memberships,
    sampled_dropped_mass,
    truncated_memberships,
)
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.errors import InputError, Reason


@pytest.fixture(scope="module")
def gauss() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((400, 3))


def _on_plane(n: int, seed: int) -> np.ndarray:
    X = np.random.default_rng(seed).standard_normal((n, 3)) * [10.0, 20.0, 1.0] + [50, 100, 0]
    X[:, 2] = 1.16 * X[:, 0] + 1.07 * X[:, 1]
    return X


# --- Props 2 and 3: very fuzzy clusterings collapse to the mean ---------------------------------


def test_prop2_large_m_collapses_centres_to_the_mean(gauss: np.ndarray) -> None:
    # m = 6 is "large" here: above the threshold where the grand mean becomes the stable fixed
    # point (about 1 + 2/d for isotropic data in d dimensions).
    fit = fuzzy_c_means(gauss, 5, m=6.0, restarts=2, tol=1e-10, max_iter=3000, random_state=1)
    np.testing.assert_allclose(fit.centers, np.broadcast_to(gauss.mean(0), (5, 3)), atol=1e-7)
    U = memberships(gauss, fit.centers, m=6.0)
    np.testing.assert_allclose(U, 0.2, atol=1e-7)


def test_prop3_small_lambda_collapses_centres_to_the_mean(gauss: np.ndarray) -> None:
    fit = fuzzy_c_means(gauss, 5, lam=1e-3, restarts=2, tol=1e-12, random_state=1)
    np.testing.assert_allclose(fit.centers, np.broadcast_to(gauss.mean(0), (5, 3)), atol=1e-9)
    np.testing.assert_allclose(memberships(gauss, fit.centers, lam=1e-3), 0.2, atol=1e-3)


def test_small_m_is_far_from_the_mean(gauss: np.ndarray) -> None:
    fit = fuzzy_c_means(gauss, 5, m=1.5, restarts=2, random_state=1)
    assert np.linalg.norm(fit.centers - gauss.mean(0), axis=1).min() > 0.3


# --- Props 5 and 7: data on the rules -> same result as unconstrained ---------------------------


@pytest.mark.parametrize("kw", [{"m": 1.5}, {"m": 2.0}, {"lam": 0.05}])
def test_prop5_prop7_data_satisfying_the_rules_gives_unconstrained_result(kw) -> None:
    X = _on_plane(300, 1)
    rules = LinearConstraints(
        ("a", "b", "c"),
        np.array([[1.16, 1.07, -1.0]]),
        np.zeros(1),
        np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]),  # a <= max a, b >= min b: all hold
        np.array([X[:, 0].max(), -X[:, 1].min()]),
    )
    plain = fuzzy_c_means(X, 6, restarts=3, random_state=3, tol=1e-8, **kw)
    constrained = fuzzy_c_means(X, 6, restarts=3, random_state=3, tol=1e-8, constraints=rules, **kw)
    np.testing.assert_allclose(constrained.centers, plain.centers, atol=1e-9)
    assert constrained.objective == pytest.approx(plain.objective, rel=1e-12)


# --- constraints to 1e-9 -------------------------------------------------------------------------


def test_equalities_and_inequalities_hold_to_1e9_on_violating_data() -> None:
    gen = np.random.default_rng(5)
    X = gen.standard_normal((250, 4)) * 3.0
    rules = LinearConstraints(
        ("a", "b", "c", "d"),
        np.array([[1.0, 1.0, -1.0, 0.0], [0.0, 2.0, 0.0, -1.0], [1.0, 3.0, -1.0, -1.0]]),  # rank 2
        np.array([0.5, 0.0, 0.5]),
        np.array([[-1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]]),
        np.array([-1.0, 2.0]),  # a >= 1, a + b <= 2
    )
    for kw in ({"m": 1.5}, {"lam": 1.0}):
        fit = fuzzy_c_means(X, 8, restarts=2, random_state=0, constraints=rules, **kw)
        eq, ineq = rules.residuals(fit.centers)
        assert np.abs(eq).max() < 1e-9
        assert ineq.max() < 1e-9
        assert np.isclose(ineq, 0.0, atol=1e-9).any()  # some centre sits on an inequality


def test_projection_matches_a_generic_qp_solver() -> None:
    gen = np.random.default_rng(11)
    A = np.array([[1.0, -1.0, 2.0, 0.0]])
    b = np.array([1.0])
    G = gen.standard_normal((5, 4))
    h = np.abs(gen.standard_normal(5))  # 0 is strictly feasible for G, so the set is not empty
    proj = PolyhedronProjector(A, b, G, h)
    Y = gen.standard_normal((20, 4)) * 3.0
    V = proj.project(Y)
    for y, v in zip(Y, V, strict=True):
        ref = minimize(
            lambda x, y=y: 0.5 * ((x - y) ** 2).sum(),
            np.zeros(4),
            jac=lambda x, y=y: x - y,
            constraints=[
                {"type": "eq", "fun": lambda x: A @ x - b, "jac": lambda x: A},
                {"type": "ineq", "fun": lambda x: h - G @ x, "jac": lambda x: -G},
            ],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        ).x
        assert np.linalg.norm(v - ref) < 1e-6
        assert np.abs(A @ v - b).max() < 1e-12 and (G @ v - h).max() < 1e-12


def test_infeasible_rules_are_an_input_error() -> None:
    with pytest.raises(InputError) as e:  # x >= 1 and x <= -1
        PolyhedronProjector(np.zeros((0, 2)), np.zeros(0), np.array([[1.0, 0], [-1.0, 0]]),
                            np.array([-1.0, -1.0]))  # fmt: skip
    assert e.value.code is Reason.RULES_INFEASIBLE and e.value.field is None
    with pytest.raises(InputError) as e:  # x == 1 and 2 x == 1: inconsistent equalities
        PolyhedronProjector(np.array([[1.0, 0], [2.0, 0]]), np.array([1.0, 1.0]),
                            np.zeros((0, 2)), np.zeros(0))  # fmt: skip
    assert e.value.code is Reason.RULES_INFEASIBLE and e.value.field is None


# --- memberships, coincidence, restarts, sizes ----------------------------------------------------


def test_record_on_a_centre_gets_membership_one_exactly() -> None:
    X = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    V = np.array([[1.0, 0.0], [5.0, 5.0], [5.0, 5.0]])
    U = memberships(X, V, m=2.0)
    np.testing.assert_array_equal(U[1], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(U[2], [0.0, 0.5, 0.5])  # two coinciding centres share it
    assert np.all(U[0] > 0) and U[0].sum() == pytest.approx(1.0)
    # m close to 1: far centres underflow to 0 without dividing 0 by 0
    assert np.all(np.isfinite(memberships(X * 1e3, V, m=1.01)))


def test_restarts_keep_the_lowest_objective_and_sizes_sum_to_n(gauss: np.ndarray) -> None:
    fit = fuzzy_c_means(gauss, 12, m=1.5, restarts=6, random_state=4)
    assert len(fit.objectives) == 6
    assert fit.objective == min(fit.objectives)
    assert fit.expected_sizes.sum() == pytest.approx(len(gauss), rel=1e-12)
    assert fit.objective == pytest.approx(fcm_objective(gauss, fit.centers, m=1.5), rel=1e-12)
    w = np.random.default_rng(0).uniform(0, 2, len(gauss))
    weighted = fuzzy_c_means(gauss, 12, m=1.5, restarts=1, sample_weight=w, random_state=4)
    assert weighted.expected_sizes.sum() == pytest.approx(w.sum(), rel=1e-12)


def test_same_generator_seed_same_result(gauss: np.ndarray) -> None:
    a = fuzzy_c_means(gauss, 7, m=1.5, restarts=2, random_state=np.random.default_rng(9))
    b = fuzzy_c_means(gauss, 7, m=1.5, restarts=2, random_state=np.random.default_rng(9))
    np.testing.assert_array_equal(a.centers, b.centers)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"m": 1.0}, "m"),
        ({"m": 2.0, "lam": 1.0}, "m"),  # exactly one of m and lam
        ({}, "m"),
        ({"lam": -1.0}, "lam"),
    ],
)
def test_bad_fuzziness_is_named(gauss: np.ndarray, kwargs, field: str) -> None:
    with pytest.raises(InputError) as e:
        fuzzy_c_means(gauss, 3, **kwargs)
    assert e.value.code is Reason.PARAMETER and e.value.field == field


def test_too_many_clusters_is_named(gauss: np.ndarray) -> None:
    with pytest.raises(InputError) as e:
        fuzzy_c_means(gauss, 401, m=1.5)
    assert e.value.code is Reason.PARAMETER and e.value.field == "n_clusters"


# --- truncation --------------------------------------------------------------------------------


def test_truncated_fcm_matches_full_fcm_on_small_data() -> None:
    # m = 1.1 in 2-D: memberships concentrate (m < 1 + 2/d), the regime truncation is for.
    X = np.random.default_rng(2).standard_normal((600, 2))
    init = X[np.random.default_rng(3).choice(600, 60, replace=False)] + 1e-3
    common = {"m": 1.1, "restarts": 1, "init": init, "tol": 1e-8, "max_iter": 500}
    full = fuzzy_c_means(X, 60, truncate=False, **common)
    trunc = fuzzy_c_means(X, 60, truncate=True, n_neighbors=16, **common)
    assert trunc.truncation is not None and full.truncation is None
    j_full = fcm_objective(X, full.centers, m=1.1)
    j_trunc = fcm_objective(X, trunc.centers, m=1.1)
    assert abs(j_trunc - j_full) / j_full < 1e-3
    assert np.abs(trunc.centers - full.centers).max() < 1e-2
    assert trunc.truncation["sampled_dropped_mass_max"] < 2e-3
    assert trunc.expected_sizes.sum() == pytest.approx(600, rel=1e-12)


def test_truncated_memberships_are_rows_of_the_full_ones_renormalized() -> None:
    X = np.random.default_rng(4).standard_normal((300, 2))
    V = X[:40] + 0.01
    idx, val = truncated_memberships(X, V, m=1.2, n_neighbors=10, mass=0.999)
    U = memberships(X, V, m=1.2)
    np.testing.assert_allclose(val.sum(axis=1), 1.0)
    kept = np.where(idx >= 0, np.take_along_axis(U, np.maximum(idx, 0), axis=1), 0.0)
    np.testing.assert_allclose(val, kept / kept.sum(axis=1, keepdims=True), atol=1e-12)
    nbr = np.argsort(((X[:, None] - V[None]) ** 2).sum(-1), axis=1)[:, :10]
    dropped = sampled_dropped_mass(X, V, nbr, fz=Fuzziness(m=1.2), mass=0.999)
    np.testing.assert_allclose(dropped, 1.0 - kept.sum(axis=1), atol=1e-12)


@pytest.mark.parametrize("m", [1.1, 1.3, 1.5, 2.0, 3.0])
def test_fused_pass_matches_dense_numpy(m: float) -> None:
    """The compiled pass (integer powers, ``u^m`` from the normalizer) against [1] Prop. 1
    and eq. 1 written out with numpy."""
    from sdcflow.core.fuzzy import _kernels as _fcm_kernels

    gen = np.random.default_rng(5)
    X, V, w = gen.standard_normal((300, 3)), gen.standard_normal((25, 3)), gen.random(300)
    D = ((X[:, None, :] - V[None]) ** 2).sum(-1)
    T = D ** (-1.0 / (m - 1.0))
    U = T / T.sum(axis=1, keepdims=True)
    W = w[:, None] * U**m
    sums, wsum, obj, expd = _fcm_kernels.full_pass(X, w, V, m, 1.0, False)
    np.testing.assert_allclose(wsum, W.sum(axis=0), rtol=1e-11)
    np.testing.assert_allclose(sums, W.T @ X, rtol=1e-10, atol=1e-12)
    assert obj == pytest.approx((W * D).sum(), rel=1e-11)
    np.testing.assert_allclose(expd, (w[:, None] * U).sum(axis=0), rtol=1e-11)


def test_auto_truncation_is_kept_only_where_memberships_concentrate() -> None:
    """n c = 1.05e6: 'auto' tries truncation and keeps it for m = 1.1 in 2-D, but refits in
    full for m = 3 in 6-D, where the 32 nearest centres hold a small part of the membership."""
    gen = np.random.default_rng(6)
    common = {"restarts": 1, "max_iter": 5, "random_state": 0}
    crisp = fuzzy_c_means(gen.standard_normal((1500, 2)), 700, m=1.1, **common)
    assert crisp.truncation is not None
    assert crisp.truncation["sampled_dropped_mass_mean"] <= 1e-2
    fuzzy = fuzzy_c_means(gen.standard_normal((1500, 6)), 700, m=3.0, **common)
    assert fuzzy.truncation is None
    assert "fitted in full" in fuzzy.message


def test_screened_restarts_continue_the_best_one(gauss: np.ndarray) -> None:
    """Each restart runs ``screen`` iterations; the best goes on, and since every
    alternate-optimization step lowers J it ends at or below every screened objective."""
    res = fuzzy_c_means(gauss, 12, m=1.5, restarts=4, screen=3, tol=1e-9, random_state=0)
    assert len(res.objectives) == 4
    assert res.objective <= min(res.objectives) + 1e-9
    assert res.n_iter > 3
    with pytest.raises(InputError) as e:
        fuzzy_c_means(gauss, 12, m=1.5, restarts=2, screen=0)
    assert e.value.code is Reason.PARAMETER and e.value.field == "screen"


@pytest.mark.parametrize("kw", [{"m": 1.5}, {"lam": 1.0}])
def test_compiled_constrained_loop_matches_the_python_loop(kw) -> None:
    """The compiled loop (face rule inside, least-distance solver in Python when it stalls)
    against the plain Python loop on data whose centres hit the inequalities."""
    gen = np.random.default_rng(8)
    X = gen.standard_normal((300, 4)) * 3.0
    rules = LinearConstraints(
        ("a", "b", "c", "d"),
        np.array([[1.0, 1.0, -1.0, 0.0]]),
        np.array([0.5]),
        np.array([[-1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, -1.0, 0.0, 1.0]]),
        np.array([-1.0, 2.0, 1.0]),  # a >= 1, a + b <= 2, d <= b + 1
    )
    proj = PolyhedronProjector(rules.A, rules.b, rules.G, rules.h)
    common = {"restarts": 2, "tol": 1e-10, "random_state": 0, "truncate": False, **kw}
    fast = fuzzy_c_means(X, 10, constraints=proj, **common)
    compiled = proj.compiled_args
    assert compiled is not None
    proj.compiled_args = (*compiled[:-1], -np.inf)  # the compiled rule never settles: stalls
    stalled = fuzzy_c_means(X, 10, constraints=proj, **common)
    proj.compiled_args = None  # the Python loop
    slow = fuzzy_c_means(X, 10, constraints=proj, **common)
    for other in (stalled, slow):
        np.testing.assert_allclose(fast.centers, other.centers, atol=1e-8)
        assert fast.objective == pytest.approx(other.objective, rel=1e-10)
        assert fast.n_iter == other.n_iter
    eq, ineq = rules.residuals(fast.centers)
    assert np.abs(eq).max() < 1e-9 and ineq.max() < 1e-9
    assert np.isclose(ineq, 0.0, atol=1e-9).any()
