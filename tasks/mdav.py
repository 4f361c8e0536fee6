"""MDAV-generic microaggregation (Domingo-Ferrer & Torra 2005), as surveyed in the PS paper.

Two implementations of one precisely defined algorithm:

* :func:`mdav_groups_reference` -- straightforward numpy, one sweep over the remaining records
  per distance search. Kept as the executable specification (tests, benchmark baseline).
* :func:`mdav_groups` -- a numba kernel that returns the *identical* labels: it computes every
  distance with the same floating-point operations in the same order, applies the same
  tie-breaking, and only skips records that a triangle-inequality bound (with a safety margin
  far above rounding error) proves cannot be selected.

The arithmetic both follow, so that equal inputs give bit-equal distances:

* squared distance ``d2(x, q) = (...((x_0 - q_0)^2 + (x_1 - q_1)^2) + ...) + (x_{d-1} - q_{d-1})^2``
  summed column by column, left to right, no fused multiply-add;
* the centroid of the remaining records is ``S / m``: ``S`` is the running sum, first the
  sequential sum of all rows in row order, then, group by group, minus each member in the order
  the group was selected (nearest first);
* ties: on equal distances the record with the lowest original row index wins, both for the
  furthest record (``argmax`` over rows in index order) and for the k nearest (the k smallest
  ``(d2, row)`` pairs, as a stable sort gives).

References
----------
[1] J. Domingo-Ferrer, V. Torra, "Ordinal, continuous and heterogeneous k-anonymity through
    microaggregation", Data Min. Knowl. Disc. 11 (2005) 195-212 (MDAV-generic).
[2] Pairwise systematic microaggregation paper (``../shared/papers``), section IV: "MDAV-generic
    ... the threshold 2k is altered to 3k".
[3] K. Fukunaga, P.M. Narendra, "A branch and bound algorithm for computing k-nearest
    neighbors", IEEE Trans. Computers C-24(7) (1975) 750-753: pruning by the triangle inequality
    with distances to a fixed pivot, ``| ||x-o|| - ||q-o|| | <= ||x-q|| <= ||x-o|| + ||q-o||``.
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np

from ._validation import InputError, check_k, check_matrix, standardize

# ---------------------------------------------------------------------------------------------
# Reference: plain numpy, one sweep per search
# ---------------------------------------------------------------------------------------------


def _sq_dist_rows(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Squared distances of every row of ``P`` (m, d) to ``q`` (d,), summed column by column.

    The summation order is fixed (left to right over columns) so that the compiled kernel can
    reproduce every value bit for bit; ``((P - q) ** 2).sum(axis=1)`` would use numpy's pairwise
    order instead.
    """
    d2 = np.zeros(P.shape[0])
    for j in range(P.shape[1]):
        t = P[:, j] - q[j]
        d2 += t * t
    return d2


def mdav_groups_reference(Z: np.ndarray, k: int) -> np.ndarray:
    """Straightforward numpy MDAV-generic on already-validated data.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        Records (usually standardized).
    k : int
        Minimum group size, 2 <= k <= n.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Group index of every record, groups numbered in order of creation.

    Notes
    -----
    Memory is O(n d): distances are computed to one point at a time, never all pairs. Time is
    O(n^2 d / k). Arithmetic and tie-breaking are those of the module docstring, which
    :func:`mdav_groups` reproduces exactly.
    """
    n = Z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)  # always in ascending row order: argmax / stable sort -> lowest row
    total = np.cumsum(Z, axis=0)[-1].copy()  # sequential row sum (cumsum is sequential)
    group = 0

    def centroid() -> np.ndarray:
        return total / remaining.size  # [1] centroid of the remaining records

    def furthest_from(point: np.ndarray) -> int:
        return int(remaining[np.argmax(_sq_dist_rows(Z[remaining], point))])

    def nearest(point: np.ndarray) -> np.ndarray:
        """Positions in ``remaining`` of the k records nearest ``point``, nearest first."""
        return np.argsort(_sq_dist_rows(Z[remaining], point), kind="stable")[:k]

    def take(pos: np.ndarray) -> None:
        nonlocal remaining, group, total
        rows = remaining[pos]
        labels[rows] = group
        group += 1
        # total - z_a - z_b - ... one member at a time, in selection order
        total = np.cumsum(np.vstack([total, -Z[rows]]), axis=0)[-1].copy()
        keep = np.ones(remaining.size, dtype=bool)
        keep[pos] = False
        remaining = remaining[keep]

    while remaining.size >= 3 * k:  # [2] two groups per step while >= 3k remain
        r = furthest_from(centroid())  # [1] r: furthest from the centroid
        s = furthest_from(Z[r])  # [1] s: furthest from r (r's group not yet removed)
        take(nearest(Z[r]))  # [1] group of r and its k-1 nearest
        take(nearest(Z[s]))  # [1] group of s and its k-1 nearest among the rest
    if remaining.size >= 2 * k:  # [2] between 2k and 3k-1: one group around r, rest together
        r = furthest_from(centroid())
        take(nearest(Z[r]))
    labels[remaining] = group  # fewer than 2k left: one last group of size k..2k-1
    return labels


# ---------------------------------------------------------------------------------------------
# Compiled kernel: the same algorithm, fused sweeps over a float32 filter copy
# ---------------------------------------------------------------------------------------------

_BLOCK = 512  # records per block of a sweep (the block's distances stay in L1)
_REPIVOT = 0.02  # re-sort when the centroid is this far from the pivot (x the largest norm)


@numba.njit(cache=True, nogil=True, inline="always")
def _insert(out_rows: np.ndarray, out_d: np.ndarray, cnt: int, k: int, d2: float, row: int) -> int:
    """Insert ``(d2, row)`` into the sorted list of the k smallest pairs; return its new length.

    Pairs compare lexicographically, so equal distances are ordered by row (a stable sort).
    """
    if cnt == k:
        if d2 > out_d[k - 1] or (d2 == out_d[k - 1] and row > out_rows[k - 1]):
            return cnt
        i = k - 1
    else:
        i = cnt
        cnt += 1
    while i > 0 and (out_d[i - 1] > d2 or (out_d[i - 1] == d2 and out_rows[i - 1] > row)):
        out_d[i] = out_d[i - 1]
        out_rows[i] = out_rows[i - 1]
        i -= 1
    out_d[i] = d2
    out_rows[i] = row
    return cnt


@numba.njit(cache=True, nogil=True, inline="always")
def _sq_dist(R: np.ndarray, p: int, q: np.ndarray) -> float:
    """Squared distance of row ``p`` of ``R`` (n, d) to ``q`` (d,), columns left to right."""
    acc = 0.0
    for j in range(q.shape[0]):
        t = R[p, j] - q[j]
        acc += t * t
    return acc


@numba.njit(cache=True, nogil=True)
def _furthest_sorted(
    P: np.ndarray,
    pn: np.ndarray,
    srt: np.ndarray,
    labels: np.ndarray,
    top: int,
    stop: int,
    q: np.ndarray,
    q_norm: float,
    tol: float,
) -> int:
    """Row of the remaining record furthest from ``q`` (ties: lowest row).

    ``P`` (n, d) holds the records sorted by decreasing distance ``pn`` to the pivot ``o``,
    ``srt`` their rows; entries ``top..stop-1`` hold every remaining record. The walk stops
    when the upper bound ``||x-o|| + ||q-o||`` [3] of every record left is below the best
    distance by more than ``tol``, so no skipped record can win or tie.
    """
    best = -1.0
    best_row = -1
    for p in range(top, stop):
        if best_row >= 0 and pn[p] + q_norm + tol < np.sqrt(best):  # [3] upper bound
            break
        row = srt[p]
        if labels[row] >= 0:
            continue
        d2 = _sq_dist(P, p, q)
        if d2 > best or (d2 == best and row < best_row):
            best = d2
            best_row = row
    return best_row


@numba.njit(cache=True, nogil=True)
def _sweep(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    q: np.ndarray,
    err_q: float,
    u_f: float,
    k: int,
    out_rows: np.ndarray,
    out_d: np.ndarray,
    want_far: bool,
) -> int:
    """One fused pass over the ``m`` remaining records: the k nearest of ``q`` and the furthest.

    ``F`` (d + 1, n) is the filter copy (float32, or float64 itself) in column layout: rows
    ``0..d-1`` the coordinates, row ``d`` a per-record error allowance ``w``; ``R`` (n, d) holds
    the float64 records in the same order. The filter distance of record x differs from its
    exact one by at most ``err_q + w_x / 2`` (``mdav_groups``, Notes); ``u_f`` is the filter's
    unit roundoff. Filter distances of a block are accumulated column by column, vectorized
    across records; a record is measured exactly (``R``, the reference's arithmetic) only when
    its filter distance could reach the current k nearest or the furthest. So the result is that
    of an exact sweep: the k smallest ``(d2, row)`` sorted into ``out_rows``/``out_d``, and the
    row of the largest ``(d2, -row)`` returned when ``want_far``.
    """
    d = F.shape[0] - 1
    ft = F.dtype.type
    qf = q.astype(F.dtype)
    acc = np.empty(_BLOCK, dtype=F.dtype)
    zero = ft(0)
    cnt = 0
    kth = np.inf
    far = -np.inf
    far_row = -1
    for b0 in range(0, m, _BLOCK):
        nb = min(_BLOCK, m - b0)
        for i in range(nb):
            acc[i] = zero
        for j in range(d):
            qj = qf[j]
            col = F[j, b0 : b0 + nb]  # a 1-D view: unit stride, so the loop vectorizes
            for i in range(nb):
                t = col[i] - qj
                acc[i] += t * t
        # Block test in the filter's precision, thresholds widened by 2 u_f so that the
        # rounding of lo + w and hi - w cannot make it stricter than the float64 test below.
        lo = ft((kth + err_q) * (1.0 + 2.0 * u_f))
        if np.float64(lo) < (kth + err_q) * (1.0 + 2.0 * u_f):
            lo = np.nextafter(lo, ft(np.inf))
        hi = ft(-np.inf) if want_far else ft(np.inf)  # -inf: every record may be further
        if want_far and far - err_q > 0.0:
            hi = ft((far - err_q) * (1.0 - 2.0 * u_f))
            if np.float64(hi) > (far - err_q) * (1.0 - 2.0 * u_f):
                hi = np.nextafter(hi, ft(-np.inf))
        w = F[d, b0 : b0 + nb]
        hits = 0
        for i in range(nb):  # vectorized: does this block hold any candidate?
            hits += (acc[i] <= lo + w[i]) | (acc[i] >= hi - w[i])
        if hits == 0:
            continue
        for i in range(nb):
            a = np.float64(acc[i])
            err = err_q + np.float64(w[i])
            near = a <= kth + err
            further = want_far and a >= far - err
            if near or further:
                p = b0 + i
                row = rows[p]
                d2 = _sq_dist(R, p, q)
                if near and d2 <= kth:
                    cnt = _insert(out_rows, out_d, cnt, k, d2, row)
                    if cnt == k:
                        kth = out_d[k - 1]
                if further and (d2 > far or (d2 == far and row < far_row)):
                    far = d2
                    far_row = row
    return far_row


@numba.njit(cache=True, nogil=True)
def _take(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    pos_of: np.ndarray,
    labels: np.ndarray,
    total: np.ndarray,
    grp: np.ndarray,
    group: int,
) -> int:
    """Label the rows ``grp`` as ``group``, subtract them from ``total`` in that order and
    swap-remove them from the stores (the last record fills the hole). Returns the new m."""
    d = R.shape[1]
    for i in range(grp.shape[0]):
        row = grp[i]
        labels[row] = group
        p = pos_of[row]
        for j in range(d):
            total[j] -= R[p, j]  # selection order, as the reference
        last = m - 1
        if p != last:
            for j in range(d):
                R[p, j] = R[last, j]
            for j in range(F.shape[0]):
                F[j, p] = F[j, last]
            moved = rows[last]
            rows[p] = moved
            pos_of[moved] = p
        m -= 1
    return m


@numba.njit(cache=True, nogil=True)
def _mdav_kernel(
    Z: np.ndarray, F: np.ndarray, err_coef: float, err_abs: float, u_f: float, k: int
) -> np.ndarray:
    """Compiled MDAV-generic; see :func:`mdav_groups`.

    ``Z`` (n, d) float64 C-contiguous; ``F`` (d + 1, n) its filter copy and error allowances
    (consumed, see :func:`_sweep`), ``u_f`` the filter's unit roundoff. The filter distance of
    record x to query q is within ``err_coef * (||x||^2 + ||q||^2) + err_abs`` of the exact one.
    """
    n, d = Z.shape
    labels = np.full(n, -1, dtype=np.int64)
    R = Z.copy()  # float64 records, compacted by swap-removal together with F
    rows = np.arange(n)  # position -> row
    pos_of = np.arange(n)  # row -> position
    origin = np.zeros(d)

    # records sorted by decreasing distance to the pivot o (column means), for the
    # furthest-from-centroid search
    o = np.zeros(d)
    for i in range(n):
        for j in range(d):
            o[j] += Z[i, j]
    o /= n
    norm = np.empty(n)
    for i in range(n):
        norm[i] = np.sqrt(_sq_dist(Z, i, o))
    srt = np.argsort(-norm)
    P = np.empty((n, d))
    pn = np.empty(n)
    for p in range(n):
        pn[p] = norm[srt[p]]
        for j in range(d):
            P[p, j] = Z[srt[p], j]
    top = 0
    stop = n
    # margin far above the rounding error of norms and distances (relative ~1e-15)
    tol = 1e-9 * (1.0 + pn[0])

    total = np.zeros(d)  # running sum of the remaining records, sequential in row order
    for i in range(n):
        for j in range(d):
            total[j] += Z[i, j]
    grp = np.empty(k, dtype=np.int64)
    grp_d = np.empty(k)
    c = np.empty(d)
    m = n
    group = 0
    while m >= 2 * k:
        for j in range(d):
            c[j] = total[j] / m  # [1] centroid of the remaining records
        c_norm = np.sqrt(_sq_dist(c.reshape(1, d), 0, o))
        while labels[srt[top]] >= 0:
            top += 1
        if c_norm > _REPIVOT * pn[top]:
            # the centroid drifted from the pivot and the bound loosened: re-sort the
            # remaining records by distance to the centroid, the new pivot
            o[:] = c
            c_norm = 0.0
            for p in range(m):
                norm[p] = np.sqrt(_sq_dist(R, p, o))
            order = np.argsort(-norm[:m])
            for t in range(m):
                p = order[t]
                pn[t] = norm[p]
                srt[t] = rows[p]
                for j in range(d):
                    P[t, j] = R[p, j]
            top = 0
            stop = m
        r = _furthest_sorted(P, pn, srt, labels, top, stop, c, c_norm, tol)  # [1] r: furthest
        two = m >= 3 * k  # [2] two groups while >= 3k remain, else one and the rest
        # [1] group of r: r and its k-1 nearest; s = furthest from r, found in the same pass
        err = err_coef * _sq_dist(Z, r, origin) + err_abs
        s = _sweep(F, R, m, rows, Z[r], err, u_f, k, grp, grp_d, two)
        m = _take(F, R, m, rows, pos_of, labels, total, grp, group)
        group += 1
        if not two:
            break
        # [1] group of s: s and its k-1 nearest among the rest
        err = err_coef * _sq_dist(Z, s, origin) + err_abs
        _sweep(F, R, m, rows, Z[s], err, u_f, k, grp, grp_d, False)
        m = _take(F, R, m, rows, pos_of, labels, total, grp, group)
        group += 1
    for p in range(m):  # fewer than 2k left (or the rest after the 2k..3k-1 step): one group
        labels[rows[p]] = group
    return labels


def mdav_groups(
    Z: np.ndarray, k: int, *, precision: Literal["float32", "float64"] = "float32"
) -> np.ndarray:
    """Compiled MDAV-generic on already-validated data: the labels of the reference, faster.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        Records (usually standardized), finite.
    k : int
        Minimum group size, 2 <= k <= n.
    precision : {"float32", "float64"}, default "float32"
        Precision of the copy that the sweeps stream through. ``"float32"`` halves the memory
        traffic; a record whose float32 distance is within the proven rounding bound of a
        decision is re-measured in float64, so the labels do not depend on this choice.
        Values beyond 1e15 in magnitude always use ``"float64"``.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Identical to ``mdav_groups_reference(Z, k)``: same groups, same numbering.

    Notes
    -----
    Per pair of groups: the centroid comes from a running sum (O(d)); r, the record furthest
    from it, from a walk over the records presorted by distance to the column means that stops
    by the triangle inequality [3] after a few records (MDAV peels the file from the outside
    in); then one fused sweep finds r's k-1 nearest and s, the record furthest from r, and a
    second sweep s's k-1 nearest. Selected records leave the column store by swap-removal, so
    a sweep reads exactly the m remaining records: O(n^2 d / k) in all, O(n d) memory, no
    n x n matrix. Every distance that decides anything is computed in float64 with the
    reference's operations in the reference's order, and ties go to the lowest row.

    The float32 filter bound: with ``u = 2**-24``, ``a_j = x_j - q_j``, ``b_j = |x_j| + |q_j|``,
    rounding x, q and the difference gives ``|t_j - a_j| <= 3.1 u b_j``, hence
    ``|t_j^2 - a_j^2| <= 6.6 u b_j^2``; squaring and d additions add ``<= 1.2 (d + 1) u sum b_j^2``,
    and ``sum b_j^2 <= 2 (||x||^2 + ||q||^2)``: the filter distance is within
    ``(15.6 + 2.4 d) u (||x||^2 + ||q||^2)`` of the float64 one. The kernel uses twice that
    coefficient, ``(4 d + 32) u``, plus ``1e-20 d`` for underflow; each record's share is
    stored beside its coordinates, so the vectorized block test needs no extra pass.
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if precision not in ("float32", "float64"):
        raise InputError(f'precision must be "float32" or "float64", got {precision!r}')
    n, d = Z.shape
    if precision == "float32" and np.abs(Z).max() <= 1e15:  # float32 squares cannot overflow
        dtype, err_coef, err_abs = np.float32, (4 * d + 32) * 2.0**-24, 1e-20 * d
    else:  # float64 filter: bit-identical to the exact distance, no margin needed
        dtype, err_coef, err_abs = np.float64, 0.0, 0.0
    F = np.empty((d + 1, n), dtype=dtype)
    F[:d] = Z.T
    # per-record allowance w >= 2 err_coef ||x||^2 (the 1.01 absorbs the rounding of w itself)
    F[d] = 2.01 * err_coef * np.einsum("ij,ij->i", Z, Z)
    return _mdav_kernel(Z, F, err_coef, err_abs, float(np.finfo(dtype).eps / 2), int(k))


def group_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Replace every record by the mean of its group.

    Shapes: X (n, d), labels (n,) with values 0..g-1 -> (n, d).
    """
    counts = np.bincount(labels)
    sums = np.zeros((counts.size, X.shape[1]))
    np.add.at(sums, labels, X)
    return (sums / counts[:, None])[labels]


def mdav(
    X: np.ndarray,
    k: int,
    *,
    columns: list[str] | None = None,
    kernel: Literal["numba", "numpy"] = "numba",
) -> np.ndarray:
    """MDAV-generic microaggregation of ``X`` on standardized data.

    Groups are formed on the columns standardized to zero mean and unit population variance;
    the released values are the group centroids in the original units.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Numeric records, no missing values.
    k : int
        Minimum group size (2 <= k <= n). Every group has between k and 2k-1 records.
    columns : list of str, optional
        Column names, used in error messages only.
    kernel : {"numba", "numpy"}, default "numba"
        ``"numba"``: the compiled :func:`mdav_groups`; ``"numpy"``: the straightforward
        :func:`mdav_groups_reference`. Both give identical labels.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        The group of every record; ``group_means(X, labels)`` is the masked file.

    Raises
    ------
    InputError
        Non-numeric or non-finite values, k not an integer in 2..n, unknown ``kernel``.
    """
    if kernel not in ("numba", "numpy"):
        raise InputError(f'kernel must be "numba" or "numpy", got {kernel!r}')
    X = check_matrix(X, columns=columns)
    k = check_k(k, X.shape[0])
    Z, _, _ = standardize(X)
    if kernel == "numpy":
        return mdav_groups_reference(Z, k)
    return mdav_groups(Z, k)
