"""The compiled MDAV-generic gives, bit for bit, the groups and representatives of the same
steps written with numpy (``tests/numpy_mdav_generic.py``, independent of the kernels:
numpy's own sums, ``argsort`` and ``argmax``)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy_mdav_generic import numpy_group_means, numpy_mdav_generic

from sdcflow.core.microaggregation.generic_kernels import group_values, pairwise_sum, scaled_mean
from sdcflow.core.microaggregation.heterogeneous import (
    MixedKeys,
    _Distances,
    _groups,
)
from sdcflow.core.validation import safe_mean


def mixed_keys(rng: np.random.Generator, n: int, p: int, q: int, r: int, gap: float) -> MixedKeys:
    numeric = rng.standard_normal((n, p)) * 10.0 ** rng.integers(-3, 4, p)
    numeric[rng.random((n, p)) < gap] = np.nan
    levels = rng.integers(2, 6, q)
    ordinal = rng.integers(0, levels, (n, q)) if q else np.zeros((n, 0), np.int64)
    ordinal[rng.random((n, q)) < gap] = -1
    nominal = rng.integers(0, 4, (n, r))
    nominal[rng.random((n, r)) < gap] = -1
    return MixedKeys.build(numeric, ordinal, levels, nominal)


@pytest.mark.parametrize("n", [1, 5, 7, 8, 9, 10, 100, 127, 128, 129, 130, 300, 1000, 5003])
def test_pairwise_sum_is_numpys_sum_to_the_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(20):
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
        assert pairwise_sum(a, 0, n) == a.sum()
        assert scaled_mean(a.copy(), n) == safe_mean(a)


@pytest.mark.parametrize("exponent", [-1074, -1060, -1022, -300, 0, 300, 1020, 1023])
def test_scaled_mean_is_safe_means_at_the_float_limits(exponent: int) -> None:
    # values around 2**exponent: subnormal, near the smallest normal, near overflow (where
    # the plain mean overflows and the power-of-two scale keeps it finite)
    rng = np.random.default_rng(exponent + 2000)
    for m in (1, 3, 9, 200):
        a = np.ldexp(rng.uniform(-1, 1, m), exponent)
        assert scaled_mean(a.copy(), m) == safe_mean(a)


@pytest.mark.parametrize(
    ("n", "p", "q", "r", "gap", "k"),
    [
        (600, 10, 0, 0, 0.01, 5),  # a census stratum: ten numbers, some missing
        (400, 3, 0, 0, 0.3, 3),
        (300, 9, 0, 0, 0.0, 4),  # complete records
        (350, 2, 2, 2, 0.1, 3),  # every kind of key
        (200, 0, 1, 3, 0.2, 2),  # no numeric key
        (150, 0, 0, 2, 0.0, 5),  # nominal keys only
        (29, 12, 1, 1, 0.5, 3),
    ],
)
def test_compiled_mdav_generic_forms_numpys_groups_bit_for_bit(
    n: int, p: int, q: int, r: int, gap: float, k: int
) -> None:
    keys = mixed_keys(np.random.default_rng(n + p), n, p, q, r, gap)
    dist = _Distances.of(keys)
    labels = _groups(dist, k)
    np.testing.assert_array_equal(labels, numpy_mdav_generic(dist, k))
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1


def test_compiled_mdav_generic_sends_ties_to_the_lowest_row() -> None:
    # Nine identical records, k = 3: every distance ties, so the groups are the rows in
    # order: the first farthest is row 0 with rows 1, 2; then row 3 with 4, 5; then 6..8.
    keys = MixedKeys.build(np.ones((9, 2)))
    np.testing.assert_array_equal(_groups(_Distances.of(keys), 3), [0, 0, 0, 1, 1, 1, 2, 2, 2])


def test_compiled_group_values_are_the_groups_means_medians_and_modes() -> None:
    keys = mixed_keys(np.random.default_rng(3), 240, 4, 1, 1, 0.15)
    k = 4
    labels = _groups(_Distances.of(keys), k)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(labels.max() + 2))
    num, ordn, nom, short = group_values(keys.numeric, keys.ordinal, keys.nominal, order, bounds, k)
    np.testing.assert_array_equal(num, numpy_group_means(keys, labels))
    for g in np.unique(labels):
        rows = np.flatnonzero(labels == g)
        holders = (~np.isnan(keys.numeric[rows])).sum(axis=0)
        np.testing.assert_array_equal(
            short[rows], ~np.isnan(keys.numeric[rows]) & (holders < k)[None, :]
        )
        ranks = keys.ordinal[rows, 0]
        held = np.sort(ranks[ranks >= 0])
        np.testing.assert_array_equal(
            ordn[rows, 0], np.where(ranks >= 0, held[(held.size - 1) // 2] if held.size else -1, -1)
        )
        codes = keys.nominal[rows, 0]
        present = codes[codes >= 0]
        mode = np.bincount(present).argmax() if present.size else -1
        np.testing.assert_array_equal(nom[rows, 0], np.where(codes >= 0, mode, -1))
    assert short.any() and not short.all()  # both cases are exercised
