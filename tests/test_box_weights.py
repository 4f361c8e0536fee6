"""Equal, crisp (eq. 25-26) and fuzzy (eq. 43-56) weights."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from sdcflow.core.box.weights import (
    crisp_weights,
    equal_weights,
    fuzzy_lambda_exact,
    fuzzy_weights,
    total_uncertainty,
)
from sdcflow.errors import InputError, Reason

# c = (0, 1, 3), n = 1, A = 2 (so n c = c):
# iteration (eq. 51): all 3 points: 3 l^2 - 8 l + (10 - 4) = 0 has no real root (64 < 72): the
#   vertex l = 8/6 = 4/3 is taken; points with c < 4/3: {0, 1}
#   2 l^2 - 2 l + (1 - 4) = 0 -> l = (2 + sqrt(4 + 24)) / 4 = 1.822876; same points -> stop (eq. 52)
# K = 1 / (2 l - 1) = 0.377964 (eq. 55); w = K (l - c) = (0.688982, 0.311018, 0) (eq. 56)
# U = 0.311018 + 2 sqrt(0.688982^2 + 0.311018^2) = 1.822876 (= lambda, see below)
# crisp: #S = 1: 0 + 2 = 2; #S = 2: 1/2 + 2/sqrt(2) = 1.914214; #S = 3: 4/3 + 2/sqrt(3) = 2.488034
C = np.array([0.0, 1.0, 3.0])
LAM = (2 + np.sqrt(28)) / 4


def test_fuzzy_by_hand():
    f = fuzzy_weights(C, 2.0, 1)
    assert f.info["lambda"] == pytest.approx(LAM)
    assert f.info["K"] == pytest.approx(1 / (2 * LAM - 1))
    np.testing.assert_allclose(f.w, [0.688982, 0.311018, 0.0], atol=1e-6)
    assert f.kept == 2 and f.status == 0
    assert f.uncertainty == pytest.approx(1.822876, abs=1e-6)


def test_crisp_and_equal_by_hand():
    cr = crisp_weights(C, 2.0, 1)
    np.testing.assert_allclose(cr.w, [0.5, 0.5, 0.0])
    assert cr.uncertainty == pytest.approx(0.5 + np.sqrt(2))
    assert cr.info["c0"] == 1.0
    eq = equal_weights(C, 2.0, 1)
    assert eq.uncertainty == pytest.approx(4 / 3 + 2 / np.sqrt(3))


def test_n_multiplies_c():
    # n = 2 with c / 2 is the same problem as n = 1 with c (only n c enters eq. 43-56)
    np.testing.assert_allclose(fuzzy_weights(C / 2, 2.0, 2).w, fuzzy_weights(C, 2.0, 1).w)


def test_crisp_keeps_ties_together():
    # c = (0, 0, 1), A = 1: #S = 1 would split the tie at 0; #S = 2: U = 1/sqrt(2)
    cr = crisp_weights(np.array([0.0, 0.0, 1.0]), 1.0, 1)
    np.testing.assert_allclose(cr.w, [0.5, 0.5, 0.0])


def test_iteration_matches_exact_root_and_is_optimal():
    """U(fuzzy) = lambda at the optimum (sum w u = lambda - K A^2, A ||w|| = K A^2), and no
    weight vector on the simplex does better (SLSQP from the equal weights)."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        N = int(rng.integers(2, 9))
        c = rng.exponential(size=N)
        A = float(rng.exponential())
        n = int(rng.integers(1, 4))
        f = fuzzy_weights(c, A, n)
        assert f.status == 0
        assert f.info["lambda"] == pytest.approx(fuzzy_lambda_exact(n * c, A))
        assert f.uncertainty == pytest.approx(f.info["lambda"])
        res = minimize(
            total_uncertainty,
            np.full(N, 1 / N),
            args=(c, A, n),
            method="SLSQP",
            bounds=[(0, 1)] * N,
            constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
        )
        assert f.uncertainty <= res.fun + 1e-9


def test_fuzzy_never_worse_than_crisp_or_equal():
    rng = np.random.default_rng(5)
    strict = 0
    for _ in range(200):
        N = int(rng.integers(1, 60))
        c = rng.lognormal(0, 1.5, size=N)
        A = float(rng.lognormal(0, 2))
        f, cr, eq = fuzzy_weights(c, A, 3), crisp_weights(c, A, 3), equal_weights(c, A, 3)
        assert f.uncertainty <= cr.uncertainty * (1 + 1e-12)
        assert cr.uncertainty <= eq.uncertainty * (1 + 1e-12)
        strict += f.uncertainty < cr.uncertainty * (1 - 1e-6)
        for wt in (f, cr, eq):
            assert wt.w.sum() == pytest.approx(1.0) and (wt.w >= 0).all()
    assert strict > 100


def test_a_zero_keeps_the_cheapest_points():
    f = fuzzy_weights(np.array([2.0, 1.0, 1.0]), 0.0, 1)
    np.testing.assert_allclose(f.w, [0.0, 0.5, 0.5])


def test_bad_input():
    with pytest.raises(InputError) as e:
        fuzzy_weights(np.array([-1.0]), 1.0, 1)
    assert e.value.code is Reason.PARAMETER and e.value.field == "c"
    with pytest.raises(InputError) as e:
        crisp_weights(np.array([1.0]), -1.0, 1)
    assert e.value.code is Reason.PARAMETER and e.value.field == "A"
