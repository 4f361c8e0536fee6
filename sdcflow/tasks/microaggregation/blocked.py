"""MDAV for large files: exact MDAV within spatial cells, then local search across their borders.

Exact MDAV costs O(n^2 d / k): about 100 CPU s for a million records in 10 dimensions here,
growing fourfold with every doubling. :func:`blocked_mdav` splits the records by recursive
median cuts (:func:`~sdcflow.tasks.microaggregation.neighbours.spatial_cells`) into cells of at
most ``cell_size`` records, runs the exact MDAV kernel in each cell -- O(n cell_size d / k) in
all -- and then runs the local search of :mod:`~sdcflow.tasks.microaggregation.refine` over the
whole file (moves, swaps and dissolves between groups of neighbouring records, which now cross
the cells' borders) until no change lowers the SSE. The groups of a cell are MDAV's on that
cell; records near a border, which MDAV would have grouped across it, are regrouped by the
search. Every group has k..2k-1 records (``cell_size >= 2k`` makes every cell hold at least k).

Measured against exact MDAV on the same data: ``benchmarks/README.md``, section "MDAV and PS"
(``benchmarks/mdav.py --cell-size``).
"""

from __future__ import annotations

import itertools

import numpy as np

from sdcflow.errors import ParameterError
from sdcflow.tasks.microaggregation.mdav import mdav_groups
from sdcflow.tasks.microaggregation.neighbours import spatial_cells
from sdcflow.tasks.microaggregation.refine import refine_groups


def blocked_mdav(Z: np.ndarray, k: int, cell_size: int) -> np.ndarray:
    """MDAV within spatial cells of at most ``cell_size`` records, refined across borders.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        Records (standardized or centred), finite.
    k : int
        Minimum group size, 2 <= k <= n.
    cell_size : int
        Most records per cell, at least 2k. Larger cells: closer to exact MDAV, slower.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records, numbered 0..g-1. Deterministic: the local search uses a
        fixed seed for its neighbour lists and no perturbation.
    """
    if isinstance(cell_size, bool) or not isinstance(cell_size, (int, np.integer)):
        raise ParameterError(f"cell_size must be an integer >= 2k, got {cell_size!r}")
    if cell_size < 2 * k:
        raise ParameterError(
            f"cell_size = {cell_size} is below 2k = {2 * k}: a cell could hold fewer than k "
            "records; raise cell_size (thousands of records is typical)"
        )
    n = Z.shape[0]
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    order, bounds = spatial_cells(Z, int(cell_size))
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for lo, hi in itertools.pairwise(bounds):
        rows = order[lo:hi]
        part = mdav_groups(np.ascontiguousarray(Z[rows]), k)
        labels[rows] = part + offset
        offset += int(part.max()) + 1
    refined, _ = refine_groups(
        Z, labels, k, seconds=None, rounds=0, rng=np.random.default_rng(0), light=True
    )
    return refined
