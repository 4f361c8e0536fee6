"""Cells for box anonymization: a recursive median partition shaped by the sensitivities.

Every cell is split at the clean cut (two different consecutive values) closest to its median
rounded to a multiple of k (so that cells end with exactly k records where the values allow, as
[1] asks), along the side with the largest a-weighted width A_j * W_j, where A_j is the sum of
the sensitivities a_j(x) of the cell's records ([1] eq. 63) and W_j its width. The cell's
contribution to the interval width of [1] eq. 9 is sum_j A_j W_j / 2, so the greedy rule always
cuts the largest term and drives the cells towards the balance a_i(x) Delta_i(x) = const of
[1] eq. 19; with a = 1 / sd it is a Mondrian-style median partition [2]. A split is kept only
when both halves hold at least k records and at least l distinct values ([1] eq. 29) of every
variable; otherwise the next side is tried. All cells of one level are split at once
(vectorized: one sort per variable and level, O(d n log n) per level, about log2(n / k)
levels).

Because cuts fall strictly between two different values, the cells are disjoint slabs of space
and every box (the bounding box of a cell's records) holds all of its records and no other.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
[2] K. LeFevre, D.J. DeWitt, R. Ramakrishnan, "Mondrian multidimensional k-anonymity",
    Proc. 22nd International Conference on Data Engineering (ICDE 2006), IEEE, 2006.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdcflow.core.validation import check_k, check_matrix
from sdcflow.errors import ParameterError


def _segments(labels: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.bincount(labels, minlength=n_cells)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return sizes, starts


def _cell_major_order(x: np.ndarray, labels: np.ndarray, ranks: np.ndarray | None) -> np.ndarray:
    """Order by cell, then by value; with dense value ranks one integer sort does it."""
    if ranks is None:
        return np.lexsort((x, labels))
    return np.argsort(labels * np.int64(ranks.max() + 1) + ranks)


def _distinct_counts(
    X: np.ndarray,
    labels: np.ndarray,
    n_cells: int,
    eps: np.ndarray,
    ranks: np.ndarray | None = None,
) -> np.ndarray:
    """Kernel of :func:`distinct_counts` on validated arrays; shape (n_cells, d).

    ``ranks`` (n, d), optional: dense ranks of the values per column (a faster sort key).
    """
    n, d = X.shape
    counts = np.zeros((n_cells, d), dtype=np.int64)
    for j in range(d):
        order = _cell_major_order(X[:, j], labels, None if ranks is None else ranks[:, j])
        v, lab = X[order, j], labels[order]
        new = np.ones(n, dtype=bool)
        gap = np.diff(v)
        sep = gap >= eps[j] if eps[j] > 0 else gap > 0  # [1] eq. 29
        new[1:] = (lab[1:] != lab[:-1]) | sep
        counts[:, j] = np.bincount(lab[new], minlength=n_cells)
    return counts


def distinct_counts(
    X: np.ndarray, labels: np.ndarray, eps: np.ndarray | float | None = None
) -> np.ndarray:
    """Number of distinct values of every variable in every cell, values closer than eps equal.

    "Closer than eps_j count as equal" (eq. 29) is taken transitively: sorted values whose
    consecutive gaps are all < eps_j form one value (single linkage). The count is therefore
    never larger than the largest subset of pairwise eps-separated values; eps_j = 0 counts
    exactly different values.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    labels : ndarray of shape (n,), int
        Cell of every record, 0..n_cells-1.
    eps : float or ndarray of shape (d,) or None
        Resolution per variable (None: 0).

    Returns
    -------
    counts : ndarray of shape (n_cells, d), int
    """
    X = check_matrix(X)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (X.shape[0],) or (labels.size and labels.min() < 0):
        raise ParameterError("labels must have one non-negative cell index per record")
    eps_arr = np.broadcast_to(np.asarray(0.0 if eps is None else eps, float), (X.shape[1],))
    n_cells = int(labels.max()) + 1 if labels.size else 0
    return _distinct_counts(X, labels, n_cells, eps_arr)


def _best_cuts(
    Xs: np.ndarray,
    Rs: np.ndarray,
    labs: np.ndarray,
    n_cells: int,
    sizes: np.ndarray,
    starts: np.ndarray,
    k: int,
):
    """Per variable: widths, the clean median cut and its threshold for every cell.

    Returns widths (C, d), feasible (C, d) bool, thresholds (C, d): left = x_j <= threshold.
    """
    m, d = Xs.shape
    widths = np.zeros((n_cells, d))
    feasible = np.zeros((n_cells, d), dtype=bool)
    thresholds = np.zeros((n_cells, d))
    cell_at = np.repeat(np.arange(n_cells), sizes)  # cell of each position, cell-major order
    rank = np.arange(m) - starts[cell_at]
    size_of = sizes[cell_at]
    # Target cut: half of the cell's k-blocks on the left (the median, rounded to a multiple of
    # k), so that recursion ends in cells of exactly k records where the values allow it.
    goal = k * ((size_of // k) // 2)
    big = np.int64(m + 1)
    invalid = np.iinfo(np.int64).max
    for j in range(d):
        order = _cell_major_order(Xs[:, j], labs, Rs[:, j])
        v = Xs[order, j]
        widths[:, j] = v[starts + sizes - 1] - v[starts]
        clean = np.zeros(m, dtype=bool)
        clean[1:] = v[1:] > v[:-1]  # a cut before this position separates different values
        ok = clean & (rank >= k) & (rank <= size_of - k)
        key = np.where(ok, np.abs(rank - goal) * big + rank, invalid)
        best = np.minimum.reduceat(key, starts)
        feasible[:, j] = best < invalid
        r = np.where(feasible[:, j], best % big, 1)
        thresholds[:, j] = v[starts + r - 1]  # largest value kept on the left
    return widths, feasible, thresholds


def _partition(
    X: np.ndarray, a: np.ndarray, k: int, ell: int | None, eps: np.ndarray, tiebreak: np.ndarray
) -> np.ndarray:
    """Kernel of :func:`box_partition` on validated float arrays."""
    n, d = X.shape
    ranks = np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(d)])
    labels = np.zeros(n, dtype=np.int64)
    n_cells = 1
    done = np.zeros(1, dtype=bool)
    while True:
        sizes_all = np.bincount(labels, minlength=n_cells)
        active = (sizes_all >= 2 * k) & ~done
        if not active.any():
            return labels
        done[~active] = True
        cell_ids = np.flatnonzero(active)
        remap = np.full(n_cells, -1, dtype=np.int64)
        remap[cell_ids] = np.arange(cell_ids.size)
        idx = np.flatnonzero(active[labels])
        Xs, Rs, labs = X[idx], ranks[idx], remap[labels[idx]]
        C = cell_ids.size
        sizes, starts = _segments(labs, C)
        widths, feasible, thr = _best_cuts(Xs, Rs, labs, C, sizes, starts, k)
        A = np.stack([np.bincount(labs, weights=a[idx, j], minlength=C) for j in range(d)], 1)
        score = A * widths  # the cell's share of [1] eq. 9 along each side
        # Order the sides: feasible first, then largest a-weighted width, then largest
        # normalized width (sides the targets do not involve are still split, never hurting).
        ranking = np.lexsort((widths * tiebreak, score, feasible), axis=-1)[:, ::-1]
        pending = np.ones(C, dtype=bool)
        split_done = np.zeros(C, dtype=bool)
        for r in range(d):
            dim = ranking[:, r]
            ok = pending & feasible[np.arange(C), dim]
            pending &= ok
            if not ok.any():
                break
            rec = ok[labs]
            side = np.zeros(labs.size, dtype=bool)
            side[rec] = Xs[rec, dim[labs[rec]]] > thr[labs[rec], dim[labs[rec]]]
            if ell is not None:
                child = 2 * labs[rec] + side[rec]
                counts = _distinct_counts(Xs[rec], child, 2 * C, eps, Rs[rec])
                good = (counts.reshape(C, 2, d) >= ell).all(axis=(1, 2))
                accept = ok & good
            else:
                accept = ok
            move = accept[labs] & side
            new_ids = np.full(C, -1, dtype=np.int64)
            new_ids[accept] = n_cells + np.arange(int(accept.sum()))
            labels[idx[move]] = new_ids[labs[move]]
            n_cells += int(accept.sum())
            split_done |= accept
            pending &= ~accept
            if not pending.any():
                break
        done[cell_ids[~split_done]] = True
        done = np.concatenate([done, np.zeros(n_cells - done.size, dtype=bool)])


def box_partition(
    X: np.ndarray,
    a: np.ndarray,
    k: int,
    *,
    ell: int | None = None,
    eps: np.ndarray | float | None = None,
    tiebreak: np.ndarray | None = None,
    columns: Sequence[str] | None = None,
) -> np.ndarray:
    """Partition records into cells of >= k records and >= l distinct values per variable.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Quasi-identifiers, original units.
    a : ndarray of shape (n, d)
        Non-negative sensitivities a_i(x) (eq. 63). Equal columns (``a = 1 / sd``) give the
        unweighted, Mondrian-style partition on normalized widths.
    k : int
        Minimum records per cell, 2 <= k <= n.
    ell : int or None
        Minimum number of distinct values (eq. 29) of every variable per cell.
    eps : float or ndarray of shape (d,) or None
        Resolution of "distinct" per variable (eq. 29); None: exact equality.
    tiebreak : ndarray of shape (d,) or None
        Multiplies the widths to order sides of equal a-weighted width (default 1 / sd).

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Cell of every record, 0..n_cells-1, in order of creation.

    Raises
    ------
    InputError
        Bad shapes, negative or non-finite ``a``, or when the whole file has fewer than l
        distinct values of some variable (then no cell can satisfy l-diversity).
    """
    X = check_matrix(X)
    n, d = X.shape
    k = check_k(k, n)
    a = check_matrix(a, name="a")
    if a.shape != X.shape or (a < 0).any():
        raise ParameterError(f"a must be non-negative with the shape of X {X.shape}, got {a.shape}")
    eps_arr = np.broadcast_to(np.asarray(0.0 if eps is None else eps, float), (d,)).copy()
    if (eps_arr < 0).any() or not np.isfinite(eps_arr).all():
        raise ParameterError("eps must be finite and >= 0 for every variable")
    if ell is not None:
        if int(ell) < 1:
            raise ParameterError(f"l must be >= 1, got {ell}")
        total = _distinct_counts(X, np.zeros(n, dtype=np.int64), 1, eps_arr)[0]
        if (total < ell).any():
            j = int(np.flatnonzero(total < ell)[0])
            label = columns[j] if columns is not None else f"variable {j}"
            raise ParameterError(
                f"{label} has only {int(total[j])} distinct value(s) in the whole file, "
                f"fewer than l = {ell}; lower l or that variable's epsilon",
                field="ell",
            )
    if tiebreak is None:
        sd = X.std(axis=0)
        tiebreak = np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 1.0)
    return _partition(X, a, k, None if ell is None else int(ell), eps_arr, np.asarray(tiebreak))


def bounding_boxes(X: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners of every cell's bounding box, each of shape (n_cells, d)."""
    n_cells = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    _, starts = _segments(labels, n_cells)
    Xo = X[order]
    return np.minimum.reduceat(Xo, starts, axis=0), np.maximum.reduceat(Xo, starts, axis=0)


def round_outward(
    lo: np.ndarray, hi: np.ndarray, grid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move box bounds strictly outward onto a grid, so that no bound is a record's value.

    The bounding box of a cell has the cell's extreme records on its faces; published as is,
    every bound discloses one respondent's exact value (and the file's overall minimum and
    maximum). Each bound moves to the next grid point strictly outside it, so the box still
    holds every record of its cell (containment and the guaranteed intervals survive) and
    widens by less than one grid step per side.

    Shapes: lo, hi (g, d); grid (d,) positive -> (g, d), (g, d).
    """
    grid = np.asarray(grid, dtype=np.float64)
    new_lo = (np.ceil(lo / grid) - 1.0) * grid
    new_hi = (np.floor(hi / grid) + 1.0) * grid
    # Division rounding can land a grid point on (or 1 ulp inside) the bound: step once more.
    new_lo = np.where(new_lo < lo, new_lo, new_lo - grid)
    new_hi = np.where(new_hi > hi, new_hi, new_hi + grid)
    return new_lo, new_hi


def default_grid(X: np.ndarray) -> np.ndarray:
    """A power of ten near 1/100 of each variable's standard deviation (1 when constant).

    Shapes: X (n, d) -> (d,).
    """
    sd = X.std(axis=0)
    safe = np.where(sd > 0, sd, 100.0)
    return 10.0 ** np.floor(np.log10(safe / 100.0))
