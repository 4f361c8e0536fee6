"""Optimal univariate microaggregation (Hansen-Mukherjee): hand cases, brute force, the method."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import optimal_sse, partition_sse
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdcflow.core.microaggregation.univariate import univariate, univariate_groups
from sdcflow.errors import InputError, Reason
from sdcflow.methods import METHODS
from sdcflow.methods.blocks import mask_quasi_identifiers


def test_two_clusters_by_hand() -> None:
    # k = 3: 1 2 3 | 10 11 12; each group's SSE is 1 + 0 + 1 = 2, total 4.
    x = np.array([11.0, 1.0, 12.0, 3.0, 2.0, 10.0])
    labels = univariate_groups(x, 3)
    np.testing.assert_array_equal(labels, [1, 0, 1, 0, 0, 1])
    assert partition_sse(x[:, None], labels) == pytest.approx(4.0)


def test_uneven_sizes_beat_fixed_size_by_hand() -> None:
    # k = 2, values 0 0 0 0 10 (n = 5: sizes 2 + 3 or 3 + 2).
    # {0,0} {0,0,10}: 0 + (10-10/3)^2 + 2 (10/3)^2 = 66.67;  {0,0,0} {0,10}: 0 + 2 * 25 = 50.
    x = np.array([0.0, 10.0, 0.0, 0.0, 0.0])
    labels = univariate_groups(x, 2)
    np.testing.assert_array_equal(labels, [0, 1, 0, 0, 1])
    assert partition_sse(x[:, None], labels) == pytest.approx(50.0)


@settings(max_examples=60, deadline=None)
@given(
    x=arrays(
        np.float64,
        st.integers(2, 9),
        elements=st.sampled_from([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 7.0, 100.0]),
    ),
    k=st.integers(2, 4),
)
def test_equals_brute_force(x: np.ndarray, k: int) -> None:
    k = min(k, x.size)
    labels = univariate_groups(x, k)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    # groups are intervals of the sorted values: numbered in increasing order of value
    order = np.argsort(x, kind="stable")
    assert (np.diff(labels[order]) >= 0).all()
    best, _ = optimal_sse(x[:, None], k)
    assert partition_sse(x[:, None], labels) == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_small_groups_far_from_zero_keep_their_digits() -> None:
    # Values near 1e8 with spreads near 1: prefix sums of squares (1e16 * n) would lose every
    # digit of the group SSEs; the backward Welford sums keep them. Brute force on 9 values.
    rng = np.random.default_rng(5)
    x = 1e8 + rng.standard_normal(9)
    labels = univariate_groups(x, 3)
    best, _ = optimal_sse((x - 1e8)[:, None], 3)  # same partition problem, shifted
    assert partition_sse((x - 1e8)[:, None], labels) == pytest.approx(best, rel=1e-9)


def test_public_function_and_bad_input() -> None:
    x = np.random.default_rng(0).lognormal(size=(200, 1))
    labels = univariate(x, 5)
    assert np.bincount(labels).min() >= 5
    with pytest.raises(InputError) as e:
        univariate(np.ones((10, 2)), 3)
    assert e.value.code == Reason.PARAMETER
    with pytest.raises(InputError) as e:
        univariate(np.ones(4), 5)
    assert e.value.code == Reason.TOO_FEW_RECORDS


def test_method_univariate_and_one_variable_blocks() -> None:
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.lognormal(size=120), rng.standard_normal(120)])
    method = METHODS["univariate"]
    params = method.params.model_validate({"name": "univariate", "k": 4})
    res = method.mask(X[:, :1], ["a"], params, rng, None)
    np.testing.assert_array_equal(res.groups, univariate_groups(X[:, 0], 4))
    assert res.details["algorithm"] == "univariate (optimal)" and "refine" not in res.details
    refined = method.params.model_validate({"name": "univariate", "k": 4, "refine": True})
    res = method.mask(X[:, :1], ["a"], refined, rng, None)  # nothing to refine: recorded
    assert res.details["refine"].startswith("skipped")
    np.testing.assert_array_equal(res.groups, univariate_groups(X[:, 0], 4))
    with pytest.raises(InputError) as e:  # several variables: blocks of one, or mdav
        method.mask(X, ["a", "b"], params, rng, None)
    assert e.value.code == Reason.PARAMETER
    # a crisp method on blocks of one variable uses the optimum in each block
    mdav = METHODS["mdav"].params.model_validate({"name": "mdav", "k": 4})
    res = mask_quasi_identifiers(X, ["a", "b"], mdav, rng, blocks=[["a"], ["b"]])
    for j, part in enumerate(res.blocks):
        assert part.result.details["algorithm"] == "univariate (optimal)"
        np.testing.assert_array_equal(part.result.groups, univariate_groups(X[:, j], 4))
