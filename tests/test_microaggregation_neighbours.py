"""Neighbour lists and spatial cells: exact lists against brute force, duplicates, cells."""

from __future__ import annotations

import numpy as np

from sdcflow.core.microaggregation.neighbours import (
    exact_neighbours,
    neighbour_lists,
    reverse_lists,
    spatial_cells,
)


def test_exact_neighbours_against_brute_force() -> None:
    Z = np.random.default_rng(0).standard_normal((300, 4))
    idx, d2 = exact_neighbours(Z, 6)
    full = ((Z[:, None] - Z[None]) ** 2).sum(axis=2)
    np.fill_diagonal(full, np.inf)
    np.testing.assert_allclose(d2, np.sort(full, axis=1)[:, :6], rtol=1e-12)
    np.testing.assert_allclose(np.take_along_axis(full, idx, axis=1), d2, rtol=1e-12)


def test_duplicates_are_neighbours_but_not_oneself() -> None:
    # five copies of one record and one other: each copy's 3 nearest are 3 other copies at 0
    Z = np.vstack([np.ones((5, 2)), [[4.0, 5.0]]])
    idx, d2 = exact_neighbours(Z, 3)
    assert (idx[:5] != np.arange(5)[:, None]).all() and (idx[:5] < 5).all()
    np.testing.assert_array_equal(d2[:5], 0.0)
    assert d2[5, 0] == 25.0  # (4 - 1)^2 + (5 - 1)^2


def test_spatial_cells_partition_the_records() -> None:
    Z = np.random.default_rng(1).lognormal(size=(1000, 3))
    order, bounds = spatial_cells(Z, 100)
    assert sorted(order.tolist()) == list(range(1000))
    sizes = np.diff(bounds)
    assert sizes.max() <= 100 and sizes.min() >= 50  # halves of a cut differ by one at most


def test_approximate_lists_and_reverse_lists() -> None:
    # beyond EXACT_NEIGHBOURS records the lists come from cells: distinct, never oneself,
    # sorted by distance; the reverse lists invert them
    Z = np.random.default_rng(2).standard_normal((9000, 3))
    nbr = neighbour_lists(Z, 5)
    assert (nbr != np.arange(9000)[:, None]).all() and (nbr >= 0).all()
    assert all(len(set(row)) == 5 for row in nbr[:500])
    d2 = ((Z[:, None] - Z[nbr]) ** 2).sum(axis=2)
    assert (np.diff(d2, axis=1) >= -1e-6).all()  # nearest first (float32 ordering)
    rptr, ridx = reverse_lists(nbr)
    for y in (0, 17, 8999):
        listing = set(ridx[rptr[y] : rptr[y + 1]].tolist())
        assert listing == set(np.flatnonzero((nbr == y).any(axis=1)).tolist())
