"""Box bounds move outward onto a grid: no published bound is a respondent's exact value."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.box.partition import default_grid, round_outward
from sdcflow.methods import METHODS


def test_round_outward_by_hand():
    # grid 10: [23, 40] -> [20, 50] (40 sits on the grid, so it moves a whole step out);
    # grid 0.1: [0.3, 0.31] -> [0.2, 0.4] (0.3 sits on the grid up to division rounding).
    lo, hi = round_outward(np.array([[23.0, 0.3]]), np.array([[40.0, 0.31]]), np.array([10, 0.1]))
    np.testing.assert_allclose(lo, [[20.0, 0.2]])
    np.testing.assert_allclose(hi, [[50.0, 0.4]])
    assert (lo < [[23.0, 0.3]]).all() and (hi > [[40.0, 0.31]]).all()


def test_default_grid_is_a_power_of_ten_near_a_hundredth_of_the_sd():
    X = np.column_stack([np.arange(1000.0) * 10, np.full(1000, 7.0)])  # sd ~ 2887, constant
    np.testing.assert_allclose(default_grid(X), [10.0, 1.0])


def _release(X, **params):
    spec = METHODS["box"].params.model_validate({"name": "box", "k": 5, **params})
    cols = [f"v{j}" for j in range(X.shape[1])]
    return METHODS["box"].mask(X, cols, spec, np.random.default_rng(0), None), cols


@pytest.mark.parametrize("seed", [0, 1])
def test_published_bounds_are_never_values_of_their_cells(seed):
    rng = np.random.default_rng(seed)
    X = np.round(rng.lognormal(5, 1, size=(400, 3)))  # integers with many ties
    result, cols = _release(X)
    m = result.masked
    for j, c in enumerate(cols):
        # Every record lies strictly inside its box, so no bound is the value of a record of
        # its cell (it may coincide with an unrelated record's value, which says nothing);
        # the file's extremes are not published either.
        assert ((m[f"{c}_lo"] < X[:, j]) & (X[:, j] < m[f"{c}_hi"])).all()
        assert m[f"{c}_lo"].min() < X[:, j].min() and m[f"{c}_hi"].max() > X[:, j].max()


def test_exact_bounds_on_request():
    X = np.random.default_rng(3).normal(size=(100, 2))
    result, cols = _release(X, exact_bounds=True)
    lo = result.masked.groupby(result.groups)[f"{cols[0]}_lo"].first()
    mins = np.array([X[result.groups == g, 0].min() for g in lo.index])
    np.testing.assert_array_equal(lo.to_numpy(), mins)
