"""MDAV for large files: exact MDAV within spatial cells, then local search across their borders.

Exact MDAV costs O(n^2 d / k), growing fourfold with every doubling of the records (timings
in ``docs/benchmarks/``). :func:`blocked_mdav` splits the records by recursive
median cuts (:func:`~sdcflow.core.microaggregation.neighbours.spatial_cells`) into cells of at
most ``cell_size`` records, runs the exact MDAV kernel in each cell -- O(n cell_size d / k) in
all -- and refines each cell's groups inside the cell with the local search of
:mod:`~sdcflow.core.microaggregation.refine` (moves, swaps and dissolves between groups of
neighbouring records). Then :func:`border_search` runs the same search across the cells'
borders, in parts of whole groups cut along rotated directions, so that records which MDAV
grouped inside their cell are regrouped with their neighbours across its border. Every group
has k..2k-1 records (``cell_size >= 2k`` makes every cell hold at least k).

Cells and parts are independent pieces of :func:`~sdcflow.core.parallel.map_parts`: by
default they run one after the other in the calling process; the Dask runner runs them as
Prefect tasks on its workers (:mod:`sdcflow.tasks.scale`), each receiving one piece's
records only. The labels do not depend on where, or in which order, the pieces ran.

Measured against exact MDAV on the same data: ``docs/benchmarks/``, section "MDAV and PS"
(``benchmarks/mdav.py --cell-size``); on a Dask cluster: section "Scale-out".
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from sdcflow.core.microaggregation.generic_kernels import generic_groups, group_values
from sdcflow.core.microaggregation.mdav import mdav_groups
from sdcflow.core.microaggregation.neighbours import spatial_cells
from sdcflow.core.microaggregation.refine import refine_groups
from sdcflow.core.parallel import map_parts
from sdcflow.core.validation import check_cell_size

Partition = Callable[[np.ndarray, int], np.ndarray]

#: Records per part of the border search, at least (parts are also at least 2 cells).
BORDER_PART = 50_000
#: Passes of the border search, each over parts cut along other (rotated) directions.
BORDER_PHASES = 2


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
        Groups of k..2k-1 records, numbered 0..g-1, whatever map ran the pieces
        (:func:`~sdcflow.core.parallel.part_map`).
    """
    cell_size = check_cell_size(cell_size, k)
    n = Z.shape[0]
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    order, bounds = spatial_cells(Z, int(cell_size))
    calls = [
        (partition, np.ascontiguousarray(Z[order[lo:hi]]), k)
        for lo, hi in itertools.pairwise(bounds)
    ]
    parts = map_parts(group_cell, calls, "cell")
    del calls
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for (lo, hi), part in zip(itertools.pairwise(bounds), parts, strict=True):
        labels[order[lo:hi]] = np.asarray(part, dtype=np.int64) + offset
        offset += int(part.max()) + 1
    return border_search(Z, labels, k, max(BORDER_PART, 2 * int(cell_size)))


def group_cell(partition: Partition, cell: np.ndarray, k: int) -> np.ndarray:
    """One cell grouped by ``partition``, then refined inside the cell (phase 0 of the border
    search: the local search of :func:`refine_part` on the cell alone).

    Shapes: cell (m, d) -> labels (m,), groups of k..2k-1 numbered 0..g-1.
    """
    return refine_part(cell, partition(cell, k), k)


def refine_part(Z: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """The deterministic local search of :func:`~sdcflow.core.microaggregation.refine.
    refine_groups` (light, no perturbation, fixed seed for its neighbour lists) on one part.

    Shapes: Z (m, d), labels (m,) -> labels (m,), groups of k..2k-1 numbered 0..g-1, SSE
    never above the input's.
    """
    refined, _ = refine_groups(
        Z, labels, k, seconds=None, rounds=0, rng=np.random.default_rng(0), light=True
    )
    return refined


def border_search(Z: np.ndarray, labels: np.ndarray, k: int, part_size: int) -> np.ndarray:
    """Local search across the cells' borders, in parts that can run in parallel.

    A file of at most ``part_size`` records is searched whole (:func:`refine_part`). A larger
    one is searched in ``BORDER_PHASES`` phases: phase p cuts the groups into parts of at most
    ``part_size`` records by recursive median cuts of their centroids in coordinates turned by
    a fixed random rotation (seed p), so that each phase's borders lie across the previous
    ones; each part -- whole groups, the records of no other part -- is refined alone, and
    the parts are independent pieces of :func:`~sdcflow.core.parallel.map_parts`. Every
    change the search keeps lowers the SSE and keeps every group within k..2k-1, so each
    phase can only lower the SSE; records near a cell's border, which MDAV grouped inside the
    cell, are regrouped with their neighbours across it. The result depends on the data
    alone, not on the map that ran the parts.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records.
    k : int
    part_size : int
        Most records per part, at least 2k.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records, numbered 0..g-1.
    """
    n, d = Z.shape
    if n <= part_size:
        return refine_part(Z, labels, k)
    for phase in range(1, BORDER_PHASES + 1):
        _, labels = np.unique(labels, return_inverse=True)
        labels = labels.reshape(-1).astype(np.int64)
        g = int(labels.max()) + 1
        size = np.bincount(labels, minlength=g).astype(np.float64)
        centroids = np.stack([np.bincount(labels, Z[:, j], g) for j in range(d)], axis=1)
        centroids /= size[:, None]
        turn = np.linalg.qr(np.random.default_rng(phase).standard_normal((d, d)))[0]
        per_part = max(1, int(part_size / size.mean()))
        order, bounds = spatial_cells(centroids @ turn, per_part)
        part_of_group = np.empty(g, dtype=np.int64)
        for p, (lo, hi) in enumerate(itertools.pairwise(bounds)):
            part_of_group[order[lo:hi]] = p
        part_of_record = part_of_group[labels]
        by_part = np.argsort(part_of_record, kind="stable")
        cuts = np.searchsorted(part_of_record[by_part], np.arange(len(bounds)))
        rows = [by_part[lo:hi] for lo, hi in itertools.pairwise(cuts)]
        calls = [
            (np.ascontiguousarray(Z[r]), np.unique(labels[r], return_inverse=True)[1], k)
            for r in rows
        ]
        parts = map_parts(refine_part, calls, "border")
        del calls
        offset = 0
        for r, part in zip(rows, parts, strict=True):
            labels[r] = np.asarray(part, dtype=np.int64) + offset
            offset += int(part.max()) + 1
    _, labels = np.unique(labels, return_inverse=True)
    return labels.reshape(-1).astype(np.int64)


def warm_mask() -> None:
    """Load the compiled kernels of the grouping (of complete records, and of records with
    gaps) and of the local search (numba's cache) in this process, on 64 records; a worker
    that will group cells calls it first."""
    Z = np.random.default_rng(0).standard_normal((64, 3))
    group_cell(mdav_groups, Z, 3)
    Z[::7, 1] = np.nan  # records with gaps: MDAV-generic under the partial distance
    none = np.zeros((64, 0), dtype=np.int64)
    labels = generic_groups(Z, 3, none, 3)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(labels.max() + 2))
    group_values(Z, none, none, order, bounds, 3)
