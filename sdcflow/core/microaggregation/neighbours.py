"""Nearest-neighbour lists for refinement and the lower bound, and spatial cells.

* :func:`exact_neighbours` -- the K nearest neighbours of every record and their squared
  distances, exact (a KD-tree [1]); the lower bound needs them exact.
* :func:`neighbour_lists` -- the K nearest for refinement: exact up to ``EXACT_NEIGHBOURS``
  records, beyond that the K nearest within cells of two spatial splits. Refinement only draws
  candidates from them, so they need not be exact; an exact KD-tree query is slow in 10
  dimensions (``docs/benchmarks/``, section "MDAV and PS").
* :func:`spatial_cells` -- recursive median cuts into cells of at most a given size, also the
  cells of :func:`~sdcflow.core.microaggregation.blocked.blocked_mdav`.

References
----------
[1] J.L. Bentley, "Multidimensional binary search trees used for associative searching",
    Communications of the ACM 18(9) (1975) 509-517, doi:10.1145/361002.361007
    (``scipy.spatial.cKDTree``).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
from scipy.spatial import cKDTree

from sdcflow.core.jit import cached_njit
from sdcflow.core.parallel import map_parts, parallel

EXACT_NEIGHBOURS = 8192  # files up to this size get exact neighbour lists for refinement
CELL = 1024  # records per cell of the approximate neighbour lists
_CHUNK = 8192  # queries per KD-tree call, between two looks at the clock
PROJECTION = 1.5  # give up once the queries so far project the search beyond 1.5 x budget
PROBE = 256  # queries timed before the exact search starts
PIECES = 4  # pieces of the exact search when the work is spread over a cluster


class BudgetExceeded(Exception):
    """The exact neighbour search did not finish within its CPU budget."""


def exact_neighbours(
    Z: np.ndarray, K: int, *, seconds: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The K nearest neighbours of every record, itself excluded, nearest first, exact.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
    K : int, 1 <= K <= n - 1
    seconds : float, optional
        CPU budget. On more than ``_CHUNK`` records the search first builds its tree and
        times ``PROBE`` evenly spaced queries, and raises :class:`BudgetExceeded` at once when
        they project the whole search beyond ``PROJECTION`` times the budget: a search that
        cannot finish gives up early instead of spending its budget first. Otherwise it runs
        to its end -- in ``PIECES`` pieces of :func:`~sdcflow.core.parallel.map_parts` when
        the work is spread (:func:`~sdcflow.core.parallel.parallel`) -- so the answer,
        computed or not, does not depend on the map.

    Returns
    -------
    idx : ndarray of shape (n, K), int64
        Rows of the neighbours. With duplicates, other rows at distance 0 count as
        neighbours; only the record's own row is left out.
    d2 : ndarray of shape (n, K), float64
        Squared distances, recomputed from the coordinates (not squared from the tree's
        square roots), non-decreasing along each row up to rounding.
    """
    n = Z.shape[0]
    tree = None
    t0 = time.process_time()
    if seconds is not None and n > _CHUNK:
        # probe: time PROBE evenly spaced queries first, and give up at once when they project
        # the search beyond the budget (in 10 dimensions the exact search of a million
        # records takes tens of minutes; finding that out costs the tree and the probe)
        tree = cKDTree(Z)
        built = time.process_time()
        tree.query(Z[np.linspace(0, n - 1, PROBE).astype(np.int64)], K + 1)
        projected = (built - t0) + (time.process_time() - built) * n / PROBE
        if projected > PROJECTION * seconds:
            raise BudgetExceeded(
                f"exact neighbour search projected to {projected:.3g} CPU s, over the budget "
                f"of {seconds:g} CPU s"
            )
    # the probe decided: the search runs to its end, in pieces (each building its own tree)
    # when the work is spread, so that the answer does not depend on the map
    pieces = PIECES if parallel() and n >= PIECES * _CHUNK else 1
    if pieces == 1:
        return neighbour_rows(Z, K, 0, n, tree)
    cuts = np.linspace(0, n, pieces + 1).astype(np.int64)
    found = map_parts(
        neighbour_rows, [(Z, K, int(lo), int(hi)) for lo, hi in itertools.pairwise(cuts)], "bound"
    )
    return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])


def neighbour_rows(
    Z: np.ndarray, K: int, lo: int, hi: int, tree: cKDTree | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The exact K nearest neighbours of records ``lo:hi`` among all of ``Z`` (one piece of
    :func:`exact_neighbours`; ``tree``: a KD-tree of ``Z`` already built, else built here).

    Shapes: Z (n, d) -> idx (hi - lo, K) int64, d2 (hi - lo, K) float64.
    """
    m = hi - lo
    tree = cKDTree(Z) if tree is None else tree
    idx = np.empty((m, K), dtype=np.int64)
    for a in range(lo, hi, _CHUNK):
        b = min(a + _CHUNK, hi)
        _, got = tree.query(Z[a:b], K + 1)
        got = np.asarray(got, dtype=np.int64)
        rows = np.arange(a, b)[:, None]
        is_self = got == rows
        # the record itself is first unless duplicates tie with it: drop it wherever it is;
        # if a tie pushed it out of the K + 1, drop the last
        drop = np.where(is_self.any(axis=1), np.argmax(is_self, axis=1), K)
        keep = np.ones_like(got, dtype=bool)
        keep[np.arange(b - a), drop] = False
        idx[a - lo : b - lo] = got[keep].reshape(b - a, K)
    Zq = Z[lo:hi]
    d2 = np.empty((m, K))
    for a in range(0, m, _CHUNK):  # row blocks, to bound the temporary
        b = min(a + _CHUNK, m)
        d2[a:b] = ((Zq[a:b, None, :] - Z[idx[a:b]]) ** 2).sum(axis=2)
    return idx, d2


@cached_njit(nogil=True)
def _cell_nearest(Z, order, bounds, nbr, nd):
    """Merge into ``nbr``/``nd`` (n, K; sorted, distinct) the K nearest within each cell.

    Cell c holds the records ``order[bounds[c]:bounds[c + 1]]``. Brute force inside a cell
    on a float32 column copy: the distances of one record to the whole cell accumulate column
    by column (a loop that vectorizes); float32 rounding only reorders near-equal candidates.
    """
    K = nbr.shape[1]
    d = Z.shape[1]
    width = 0
    for c in range(bounds.shape[0] - 1):
        width = max(width, bounds[c + 1] - bounds[c])
    cols = np.empty((d, width), dtype=np.float32)
    acc = np.empty(width, dtype=np.float32)
    for c in range(bounds.shape[0] - 1):
        lo, hi = bounds[c], bounds[c + 1]
        m = hi - lo
        for i in range(m):
            for j in range(d):
                cols[j, i] = Z[order[lo + i], j]
        for i in range(m):
            x = order[lo + i]
            for q in range(m):
                acc[q] = 0.0
            for j in range(d):
                xj = cols[j, i]
                col = cols[j, :m]
                for q in range(m):
                    t = col[q] - xj
                    acc[q] += t * t
            acc[i] = np.inf
            for q in range(m):
                dxy = np.float64(acc[q])
                if dxy >= nd[x, K - 1]:
                    continue
                y = order[lo + q]
                dup = False
                for t in range(K):
                    if nbr[x, t] == y:
                        dup = True
                        break
                if dup:
                    continue
                p = K - 1
                while p > 0 and nd[x, p - 1] > dxy:
                    nd[x, p] = nd[x, p - 1]
                    nbr[x, p] = nbr[x, p - 1]
                    p -= 1
                nd[x, p] = dxy
                nbr[x, p] = y


def spatial_cells(Z: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Split the records into cells of at most ``size`` records by recursive median cuts.

    Every cell is cut at its median rank along its coordinate of largest variance until it
    holds at most ``size`` records (a k-d tree's leaves [1]); cells are disjoint and the two
    halves of a cut differ by at most one record.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    size : int, >= 1

    Returns
    -------
    order : ndarray of shape (n,), int64
        The records, cell by cell.
    bounds : ndarray of shape (c + 1,), int64
        Cell i holds ``order[bounds[i]:bounds[i + 1]]``; cells in the order of the tree.
    """
    n = Z.shape[0]
    order = np.arange(n, dtype=np.int64)
    todo = [(0, n)]
    done: list[tuple[int, int]] = []
    while todo:
        lo, hi = todo.pop()
        if hi - lo <= size:
            done.append((lo, hi))
            continue
        idx = order[lo:hi]
        j = int(np.argmax(Z[idx].var(axis=0)))  # [1] cut the widest coordinate
        mid = (hi - lo) // 2
        order[lo:hi] = idx[np.argpartition(Z[idx, j], mid)]
        todo += [(lo + mid, hi), (lo, lo + mid)]
    done.sort()
    bounds = np.array([lo for lo, _ in done] + [n], dtype=np.int64)
    return order, bounds


def neighbour_lists(Z: np.ndarray, K: int, *, seed: int = 0) -> np.ndarray:
    """Candidate neighbours of every record for refinement, nearest first.

    Exact (:func:`exact_neighbours`) for up to ``EXACT_NEIGHBOURS`` records. Beyond, the K
    nearest within the cells of ``CELL`` records of two spatial splits (:func:`spatial_cells`),
    the second on randomly rotated coordinates (``seed``), merged: near neighbours across one
    split's borders are usually inside a cell of the other. O(n CELL d) time.

    Shapes: Z (n, d) -> (n, K) int64 (K < n).
    """
    n = Z.shape[0]
    if n <= EXACT_NEIGHBOURS:
        return exact_neighbours(Z, K)[0]
    nbr = np.full((n, K), -1, dtype=np.int64)
    nd = np.full((n, K), np.inf)
    d = Z.shape[1]
    rotation = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0]
    for coords in (Z, Z @ rotation):
        order, bounds = spatial_cells(coords, CELL)
        _cell_nearest(Z, order, bounds, nbr, nd)
    return nbr


def reverse_lists(nbr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The records that list each record: ``ridx[rptr[y]:rptr[y + 1]]`` list y.

    Shapes: nbr (n, K) -> rptr (n + 1,), ridx (n K,), int64.
    """
    n, K = nbr.shape
    flat = nbr.ravel()
    order = np.argsort(flat, kind="stable")
    src = np.repeat(np.arange(n, dtype=np.int64), K)[order]
    rptr = np.searchsorted(flat[order], np.arange(n + 1)).astype(np.int64)
    return rptr, src
