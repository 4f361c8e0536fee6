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

The cells are independent until the border search, so they can be grouped anywhere:
:func:`cell_map` hands them to a caller-supplied map (the Dask runner's Prefect tasks,
:mod:`sdcflow.tasks.steps.scale`); each call receives one cell's records only. The labels do
not depend on where, or in which order, the cells were grouped.

Measured against exact MDAV on the same data: ``benchmarks/README.md``, section "MDAV and PS"
(``benchmarks/mdav.py --cell-size``); on a Dask cluster: section "Scale-out".
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from sdcflow.errors import ParameterError
from sdcflow.tasks.microaggregation.mdav import mdav_groups
from sdcflow.tasks.microaggregation.neighbours import spatial_cells
from sdcflow.tasks.microaggregation.refine import refine_groups

Partition = Callable[[np.ndarray, int], np.ndarray]
#: ``map(partition, cells, k) -> labels per cell``: ``partition(cell, k)`` on every cell (an
#: (m, d) float64 array), results in the order of ``cells``.
CellMap = Callable[[Partition, Sequence[np.ndarray], int], list[np.ndarray]]


def serial_cells(partition: Partition, cells: Sequence[np.ndarray], k: int) -> list[np.ndarray]:
    """The default :data:`CellMap`: one cell after the other in this process."""
    return [partition(cell, k) for cell in cells]


_CELL_MAP: ContextVar[CellMap] = ContextVar("sdcflow_cell_map", default=serial_cells)


@contextmanager
def cell_map(mapper: CellMap) -> Iterator[None]:
    """Group the cells of :func:`blocked_groups` with ``mapper`` inside this block (this
    thread and context only), e.g. in parallel on a cluster; the labels are the same."""
    token = _CELL_MAP.set(mapper)
    try:
        yield
    finally:
        _CELL_MAP.reset(token)


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
    return blocked_groups(Z, k, cell_size, mdav_groups)


def blocked_groups(Z: np.ndarray, k: int, cell_size: int, partition: Partition) -> np.ndarray:
    """``partition`` within spatial cells of at most ``cell_size`` records, refined across
    their borders (:func:`blocked_mdav` with any fixed-size grouping, e.g. PS).

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        Records (standardized or centred), finite.
    k : int
        Minimum group size, 2 <= k <= n.
    cell_size : int
        Most records per cell, at least 2k.
    partition : callable
        ``partition(cell, k)`` -> labels of shape (m,) of groups of k..2k-1 records of an
        (m, d) cell, m >= k; a module-level function (a map may ship it to other processes).

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records, numbered 0..g-1, whatever map grouped the cells
        (:func:`cell_map`).
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
    cells = [np.ascontiguousarray(Z[order[lo:hi]]) for lo, hi in itertools.pairwise(bounds)]
    parts = _CELL_MAP.get()(partition, cells, k)
    del cells
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for (lo, hi), part in zip(itertools.pairwise(bounds), parts, strict=True):
        labels[order[lo:hi]] = np.asarray(part, dtype=np.int64) + offset
        offset += int(part.max()) + 1
    refined, _ = refine_groups(
        Z, labels, k, seconds=None, rounds=0, rng=np.random.default_rng(0), light=True
    )
    return refined
