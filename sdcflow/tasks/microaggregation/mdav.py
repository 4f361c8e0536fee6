"""MDAV-generic microaggregation: groups of k records built from the outside of the file in.

While at least 3k records remain, MDAV-generic [1] takes the record r furthest from the
centroid of the remaining records, the record s furthest from r, and forms two groups: r with
its k-1 nearest records and s with its k-1 nearest among the rest. With 2k..3k-1 records left
it forms one group around r and puts the rest in the last group; with fewer than 2k left, they
form the last group [2] Sec. IV. Every group has k..2k-1 records.

Two implementations of the same algorithm:

* :func:`mdav_groups_reference` -- straightforward numpy, one sweep over the remaining records
  per distance search: the executable specification (tests, benchmark baseline).
* :func:`mdav_groups` -- a numba kernel that returns *identical* labels: every distance that
  decides anything is computed with the same floating-point operations in the same order and
  the same tie-breaking; records are skipped only when a proven bound (a float32 filter with
  its rounding error, the triangle inequality [3], an exact neighbour list built earlier) shows
  they cannot be selected. Timings: ``benchmarks/README.md``, section "MDAV and PS".

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
    microaggregation", Data Mining and Knowledge Discovery 11(2) (2005) 195-212,
    doi:10.1007/s10618-005-0007-5 (MDAV-generic).
[2] M.E. Kabir, H. Wang, Y. Zhang, "A pairwise systematic microaggregation for statistical
    disclosure control", Proc. 2010 IEEE International Conference on Data Mining (ICDM 2010),
    266-273, doi:10.1109/ICDM.2010.111. Sec. IV: in MDAV-generic "the threshold 2k is altered
    to 3k".
[3] K. Fukunaga, P.M. Narendra, "A branch and bound algorithm for computing k-nearest
    neighbors", IEEE Transactions on Computers C-24(7) (1975) 750-753: pruning by the triangle
    inequality with distances to a fixed pivot o, ``| ||x-o|| - ||q-o|| | <= ||x-q|| <=
    ||x-o|| + ||q-o||``.
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np

from sdcflow.errors import ParameterError
from sdcflow.tasks.microaggregation.scaling import working_scale
from sdcflow.tasks.validation import check_k, check_matrix

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

    while remaining.size >= 3 * k:  # [2] Sec. IV: two groups per step while >= 3k remain
        r = furthest_from(centroid())  # [1] r: furthest from the centroid
        s = furthest_from(Z[r])  # [1] s: furthest from r (r's group not yet removed)
        take(nearest(Z[r]))  # [1] group of r and its k-1 nearest
        take(nearest(Z[s]))  # [1] group of s and its k-1 nearest among the rest
    if remaining.size >= 2 * k:  # [2] Sec. IV: 2k..3k-1 left: one group around r, rest together
        r = furthest_from(centroid())
        take(nearest(Z[r]))
    labels[remaining] = group  # fewer than 2k left: one last group of size k..2k-1
    return labels


# ---------------------------------------------------------------------------------------------
# Compiled kernel: the same algorithm, fused sweeps over a float32 filter copy
# ---------------------------------------------------------------------------------------------

_BLOCK = 512  # records per block of a sweep: the block's distances stay in L1 for every query
# Re-sort by distance to the centroid once it is this far from the pivot (times the largest
# remaining norm): the bound ||x-o|| + ||c-o|| [3] loosens by ||c-o||.
_REPIVOT = 0.02


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
    out_rows: np.ndarray,
    out_negd: np.ndarray,
) -> int:
    """The ``B = len(out_rows)`` remaining records furthest from ``q``; returns how many found.

    ``P`` (n, d) holds the records sorted by decreasing distance ``pn`` to the pivot ``o``,
    ``srt`` their rows; entries ``top..stop-1`` hold every remaining record. The result is
    sorted by ``(-d2, row)``: furthest first, ties to the lowest row. The walk stops when the
    upper bound ``||x-o|| + ||q-o||`` [3] of every record left is below the B-th distance by
    more than ``tol``, so no skipped record can enter or tie.
    """
    b = out_rows.shape[0]
    cnt = 0
    for p in range(top, stop):
        if cnt == b and pn[p] + q_norm + tol < np.sqrt(-out_negd[b - 1]):  # [3] upper bound
            break
        row = srt[p]
        if labels[row] >= 0:
            continue
        cnt = _insert(out_rows, out_negd, cnt, b, -_sq_dist(P, p, q), row)
    return cnt


@numba.njit(cache=True, nogil=True)
def _multi_sweep(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    Q: np.ndarray,
    err_q: np.ndarray,
    u_f: float,
    near_rows: np.ndarray,
    near_d: np.ndarray,
    near_cnt: np.ndarray,
    far_rows: np.ndarray,
    far_negd: np.ndarray,
    far_cnt: np.ndarray,
) -> None:
    """:func:`_sweep` for B queries ``Q`` (B, d) at once, keeping K nearest and K2 furthest.

    Each block of records is read from memory once and scanned for every query while it sits
    in L1, so a batch of B queries costs one pass of memory traffic instead of B. For query b,
    ``near_rows[b]``/``near_d[b]`` (K = ``near_rows.shape[1]``) receive the K smallest
    ``(d2, row)`` and ``far_rows[b]``/``far_negd[b]`` (K2 = ``far_rows.shape[1]``, may be 0)
    the K2 smallest ``(-d2, row)``; ``near_cnt[b]``/``far_cnt[b]`` their lengths (< K only when
    fewer records remain). Exactness as in :func:`_sweep`.
    """
    nq = Q.shape[0]
    d = F.shape[0] - 1
    k_near = near_rows.shape[1]
    k_far = far_rows.shape[1]
    ft = F.dtype.type
    Qf = Q.astype(F.dtype)
    acc = np.empty(_BLOCK, dtype=F.dtype)
    zero = ft(0)
    kth = np.full(nq, np.inf)
    far = np.full(nq, -np.inf)
    for b in range(nq):
        near_cnt[b] = 0
        far_cnt[b] = 0
    for b0 in range(0, m, _BLOCK):
        nb = min(_BLOCK, m - b0)
        w = F[d, b0 : b0 + nb]
        for b in range(nq):
            for i in range(nb):
                acc[i] = zero
            for j in range(d):
                qj = Qf[b, j]
                col = F[j, b0 : b0 + nb]
                for i in range(nb):
                    t = col[i] - qj
                    acc[i] += t * t
            e = err_q[b]
            lo = ft((kth[b] + e) * (1.0 + 2.0 * u_f))
            if np.float64(lo) < (kth[b] + e) * (1.0 + 2.0 * u_f):
                lo = np.nextafter(lo, ft(np.inf))
            hi = ft(-np.inf) if k_far > 0 else ft(np.inf)
            if k_far > 0 and far[b] - e > 0.0:
                hi = ft((far[b] - e) * (1.0 - 2.0 * u_f))
                if np.float64(hi) > (far[b] - e) * (1.0 - 2.0 * u_f):
                    hi = np.nextafter(hi, ft(-np.inf))
            hits = 0
            for i in range(nb):
                hits += (acc[i] <= lo + w[i]) | (acc[i] >= hi - w[i])
            if hits == 0:
                continue
            q = Q[b]
            for i in range(nb):
                a = np.float64(acc[i])
                err = e + np.float64(w[i])
                near = a <= kth[b] + err
                further = k_far > 0 and a >= far[b] - err
                if near or further:
                    p = b0 + i
                    row = rows[p]
                    d2 = _sq_dist(R, p, q)
                    if near and d2 <= kth[b]:
                        near_cnt[b] = _insert(near_rows[b], near_d[b], near_cnt[b], k_near, d2, row)
                        if near_cnt[b] == k_near:
                            kth[b] = near_d[b, k_near - 1]
                    if further and d2 >= far[b]:
                        far_cnt[b] = _insert(far_rows[b], far_negd[b], far_cnt[b], k_far, -d2, row)
                        if far_cnt[b] == k_far:
                            far[b] = -far_negd[b, k_far - 1]


@numba.njit(cache=True, nogil=True)
def _first_alive(lst: np.ndarray, cnt: int, labels: np.ndarray, k: int, out: np.ndarray) -> bool:
    """Copy the first ``k`` still unassigned rows of ``lst[:cnt]`` into ``out``; False if fewer.

    A list of the K nearest (or furthest) records when it was built stays exact for the records
    still unassigned: none were added since, so its unassigned entries, in order, are the
    nearest of all unassigned records -- as long as k of them are left in it.
    """
    got = 0
    for i in range(cnt):
        row = lst[i]
        if labels[row] < 0:
            out[got] = row
            got += 1
            if got == k:
                return True
    return False


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
    Z: np.ndarray,
    F: np.ndarray,
    err_coef: float,
    err_abs: float,
    u_f: float,
    k: int,
    batch: int,
    stats: np.ndarray,
) -> np.ndarray:
    """Compiled MDAV-generic; see :func:`mdav_groups`.

    ``Z`` (n, d) float64 C-contiguous; ``F`` (d + 1, n) its filter copy and error allowances
    (consumed, see :func:`_sweep`), ``u_f`` the filter's unit roundoff. The filter distance of
    record x to query q is within ``err_coef * (||x||^2 + ||q||^2) + err_abs`` of the exact one.
    ``batch``: queries per speculative pass (0: one sweep per search). ``stats`` (4,) receives
    the number of batch passes, of single sweeps, and of r and s answered from a batch.
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
    r_buf = np.empty(1, dtype=np.int64)
    r_negd = np.empty(1)
    s_buf = np.empty(1, dtype=np.int64)

    # Speculative neighbour lists (see mdav_groups, Notes): slots 0..B-1 for predicted r's
    # (K nearest, K2 furthest), slots B..2B-1 for their predicted s's (K nearest).
    nb_q = max(batch, 1)
    k_near = k + 2  # longer lists rarely add hits but slow the pass (more insertions)
    k_far = 4
    slot = np.full(n, -1, dtype=np.int64)  # row -> slot, -1: no list
    slot_row = np.full(2 * nb_q, -1, dtype=np.int64)
    near_rows = np.empty((2 * nb_q, k_near), dtype=np.int64)
    near_d = np.empty((2 * nb_q, k_near))
    near_cnt = np.zeros(2 * nb_q, dtype=np.int64)
    far_rows = np.empty((nb_q, k_far), dtype=np.int64)
    far_negd = np.empty((nb_q, k_far))
    far_cnt = np.zeros(nb_q, dtype=np.int64)
    no_far = np.zeros(nb_q, dtype=np.int64)
    q_rows = np.empty(nb_q, dtype=np.int64)
    q_negd = np.empty(nb_q)
    Q = np.empty((nb_q, d))
    err_q = np.empty(nb_q)

    m = n
    group = 0
    while m >= 2 * k:
        for j in range(d):
            c[j] = total[j] / m  # [1] centroid of the remaining records
        c_norm = np.sqrt(_sq_dist(c.reshape(1, d), 0, o))
        while labels[srt[top]] >= 0:
            top += 1
        if c_norm > _REPIVOT * pn[top] + tol:
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
        # [1] r: the record furthest from the centroid
        _furthest_sorted(P, pn, srt, labels, top, stop, c, c_norm, tol, r_buf, r_negd)
        r = r_buf[0]
        two = m >= 3 * k  # [2] Sec. IV: two groups while >= 3k remain, else one and the rest

        # [1] group of r: r and its k-1 nearest; s: the record furthest from r
        hit = False
        if batch > 0 and two:
            b = slot[r]
            hit = (
                0 <= b < batch
                and _first_alive(near_rows[b], near_cnt[b], labels, k, grp)
                and _first_alive(far_rows[b], far_cnt[b], labels, 1, s_buf)
            )
            if not hit:
                # New batch: the B records now furthest from the centroid (r first) are the
                # likely next r's; one pass gives their K nearest and K2 furthest; the
                # furthest of each is its likely s; a second pass gives those K nearest.
                stats[0] += 1
                for t in range(2 * batch):
                    if slot_row[t] >= 0:
                        slot[slot_row[t]] = -1
                        slot_row[t] = -1
                nq = _furthest_sorted(
                    P, pn, srt, labels, top, stop, c, c_norm, tol, q_rows[:batch], q_negd
                )
                for t in range(nq):
                    Q[t] = Z[q_rows[t]]
                    err_q[t] = err_coef * _sq_dist(Z, q_rows[t], origin) + err_abs
                    slot[q_rows[t]] = t
                    slot_row[t] = q_rows[t]
                _multi_sweep(
                    F, R, m, rows, Q[:nq], err_q[:nq], u_f,
                    near_rows[:nq], near_d[:nq], near_cnt[:nq],
                    far_rows[:nq], far_negd[:nq], far_cnt[:nq],
                )  # fmt: skip
                ns = 0
                for t in range(nq):
                    s_row = far_rows[t, 0]
                    if slot[s_row] < 0:
                        Q[ns] = Z[s_row]
                        err_q[ns] = err_coef * _sq_dist(Z, s_row, origin) + err_abs
                        slot[s_row] = batch + ns
                        slot_row[batch + ns] = s_row
                        ns += 1
                _multi_sweep(
                    F, R, m, rows, Q[:ns], err_q[:ns], u_f,
                    near_rows[batch : batch + ns], near_d[batch : batch + ns],
                    near_cnt[batch : batch + ns],
                    far_rows[:ns, :0], far_negd[:ns, :0], no_far[:ns],
                )  # fmt: skip
                b = slot[r]  # fresh lists of r: k nearest and the furthest are in them
                hit = _first_alive(near_rows[b], near_cnt[b], labels, k, grp) and _first_alive(
                    far_rows[b], far_cnt[b], labels, 1, s_buf
                )
        if hit:
            stats[2] += 1
            s = s_buf[0]
        else:
            stats[1] += 1
            err = err_coef * _sq_dist(Z, r, origin) + err_abs
            s = _sweep(F, R, m, rows, Z[r], err, u_f, k, grp, grp_d, two)
        m = _take(F, R, m, rows, pos_of, labels, total, grp, group)
        group += 1
        if not two:
            break

        # [1] group of s: s and its k-1 nearest among the rest
        b = slot[s] if batch > 0 else -1
        if b >= 0 and _first_alive(near_rows[b], near_cnt[b], labels, k, grp):
            stats[3] += 1
        else:
            stats[1] += 1
            err = err_coef * _sq_dist(Z, s, origin) + err_abs
            _sweep(F, R, m, rows, Z[s], err, u_f, k, grp, grp_d, False)
        m = _take(F, R, m, rows, pos_of, labels, total, grp, group)
        group += 1
    for p in range(m):  # fewer than 2k left (or the rest after the 2k..3k-1 step): one group
        labels[rows[p]] = group
    return labels


def mdav_groups(
    Z: np.ndarray,
    k: int,
    *,
    precision: Literal["float32", "float64"] = "float32",
    batch: int = 32,
    stats: np.ndarray | None = None,
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
    batch : int, default 32
        Number of predicted queries answered per speculative pass (see Notes); 0 turns the
        speculation off (two sweeps per pair of groups). The labels do not depend on it.
    stats : ndarray of shape (4,), int64, optional
        If given, receives the number of speculative passes, of single sweeps, and of r's and
        s's answered from speculative lists.

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

    A sweep is memory-bound once the file outgrows the cache (about ``n^2 d / 2k`` element
    reads in all). Speculation shares the reads between steps: the next r's are, with few
    exceptions, among the records now furthest from the centroid, and the next s's among the
    records furthest from those. One pass computes, for the B records furthest from the
    centroid, their ``k + 2`` nearest and 4 furthest records, and a second pass the ``k + 2``
    nearest of each one's furthest record. A later step whose r (or s) has such a list takes its k
    nearest (and s) from the list's entries still unassigned: a list of the K nearest, built
    when more records remained, still starts with the nearest of those that remain (no record
    was added since), so this is exact whenever k entries are left; otherwise the step falls
    back to a sweep, and a miss for r starts a new batch.

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
        raise ParameterError(
            f'precision must be "float32" or "float64", got {precision!r}', field="precision"
        )
    n, d = Z.shape
    if precision == "float32" and np.abs(Z).max() <= 1e15:  # float32 squares cannot overflow
        dtype, err_coef, err_abs = np.float32, (4 * d + 32) * 2.0**-24, 1e-20 * d
    else:  # float64 filter: bit-identical to the exact distance, no margin needed
        dtype, err_coef, err_abs = np.float64, 0.0, 0.0
    F = np.empty((d + 1, n), dtype=dtype)
    F[:d] = Z.T
    # per-record allowance w >= 2 err_coef ||x||^2 (the 1.01 absorbs the rounding of w itself)
    F[d] = 2.01 * err_coef * np.einsum("ij,ij->i", Z, Z)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 0:
        raise ParameterError(f"batch must be an integer >= 0, got {batch!r}", field="batch")
    if stats is None:
        stats = np.zeros(4, dtype=np.int64)
    u_f = float(np.finfo(dtype).eps / 2)
    return _mdav_kernel(Z, F, err_coef, err_abs, u_f, int(k), batch, stats)


def group_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Replace every record by the mean of its group.

    Each group's column is summed on an exact power-of-two scale that puts its largest
    magnitude in [0.5, 1) (as :func:`~sdcflow.tasks.validation.pow2_exponents`), then scaled
    back: the means are bit for bit the plain ``sum / count`` whenever that does not overflow,
    and finite when it would (two values of 1e308 in a group).

    Shapes: X (n, d), labels (n,) with values 0..g-1 -> (n, d).
    """
    counts = np.bincount(labels)
    biggest = np.zeros((counts.size, X.shape[1]))
    np.maximum.at(biggest, labels, np.abs(X))
    _, e = np.frexp(biggest)  # the exponents of pow2_exponents, per group and column
    sums = np.zeros((counts.size, X.shape[1]))
    np.add.at(sums, labels, np.ldexp(X, -e[labels]))
    return np.ldexp(sums / counts[:, None], e)[labels]


def mdav(
    X: np.ndarray,
    k: int,
    *,
    columns: list[str] | None = None,
    kernel: Literal["numba", "numpy"] = "numba",
    standardize: bool = True,
) -> np.ndarray:
    """MDAV-generic microaggregation of ``X`` on standardized data.

    Groups are formed on the columns standardized to zero mean and unit population variance
    (or only centred, ``standardize=False``); the released values are the group centroids in
    the original units.

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
    standardize : bool, default True
        False: form the groups on the centred values, in their units
        (:mod:`~sdcflow.tasks.microaggregation.scaling`).

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
        raise ParameterError(f'kernel must be "numba" or "numpy", got {kernel!r}', field="kernel")
    X = check_matrix(X, columns=columns)
    k = check_k(k, X.shape[0])
    Z = working_scale(X, standardize)
    if kernel == "numpy":
        return mdav_groups_reference(Z, k)
    return mdav_groups(Z, k)
