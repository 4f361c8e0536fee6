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
  they cannot be selected. Timings: ``docs/benchmarks/``, section "MDAV and PS".

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

from sdcflow.core.jit import cached_njit, uncached_njit
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.validation import check_k, check_matrix
from sdcflow.errors import ParameterError

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
# Passes over fewer remaining records than this run in one thread (a parallel region's start
# costs more than it saves).
_PARALLEL_MIN = 4096


@cached_njit(nogil=True, inline="always")
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


@cached_njit(nogil=True, inline="always")
def _sq_dist(R: np.ndarray, p: int, q: np.ndarray) -> float:
    """Squared distance of row ``p`` of ``R`` (n, d) to ``q`` (d,), columns left to right."""
    acc = 0.0
    for j in range(q.shape[0]):
        t = R[p, j] - q[j]
        acc += t * t
    return acc


@cached_njit(nogil=True)
def _sq_dist_to(R: np.ndarray, p: int, Q: np.ndarray, b: int) -> float:
    """:func:`_sq_dist` of row ``p`` of ``R`` to row ``b`` of ``Q``: the same operations in the
    same order, without the view ``Q[b]`` (every array view costs two atomic updates of a
    reference count, a sixth of the run time when they were taken in the sweeps)."""
    acc = 0.0
    for j in range(Q.shape[1]):
        t = R[p, j] - Q[b, j]
        acc += t * t
    return acc


@cached_njit(nogil=True)
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


_SEED = 128  # records of a sweep's first block whose filter bounds seed its thresholds


@cached_njit(nogil=True, inline="always")
def _round_down(ft: type, v: float) -> float:
    """The largest value of type ``ft`` (the filter's) that is <= ``v``."""
    t = ft(v)
    if np.float64(t) > v:
        t = np.nextafter(t, ft(-np.inf))
    return t


@cached_njit(nogil=True, inline="always")
def _round_up(ft: type, v: float) -> float:
    """The smallest value of type ``ft`` (the filter's) that is >= ``v``."""
    t = ft(v)
    if np.float64(t) < v:
        t = np.nextafter(t, ft(np.inf))
    return t


@cached_njit(nogil=True)
def _seed(
    acc: np.ndarray, w2: np.ndarray, n_seed: int, k: int, far: bool, buf: np.ndarray
) -> float:
    """The k-th largest of ``acc[i] - w2[i]`` (``far``: the k-th smallest of ``acc[i]``).

    Over ``i < n_seed`` (k <= n_seed <= the first block's records), in float64. With it a
    sweep starts from thresholds that k records are proven to meet (:func:`_multi_sweep`)
    instead of from infinity.
    """
    cnt = 0
    for i in range(n_seed):
        v = -np.float64(acc[i]) if far else np.float64(acc[i]) - np.float64(w2[i])
        if cnt == k:
            if v <= buf[k - 1]:
                continue
            t = k - 1
        else:
            t = cnt
            cnt += 1
        while t > 0 and buf[t - 1] < v:
            buf[t] = buf[t - 1]
            t -= 1
        buf[t] = v
    return -buf[k - 1] if far else buf[k - 1]


@cached_njit(nogil=True)
def _multi_sweep(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    Qf: np.ndarray,
    Q: np.ndarray,
    qn: np.ndarray,
    dq: np.ndarray,
    lo: int,
    hi: int,
    near_rows: np.ndarray,
    near_d: np.ndarray,
    near_cnt: np.ndarray,
    far_rows: np.ndarray,
    far_negd: np.ndarray,
    far_cnt: np.ndarray,
) -> None:
    """One pass over the m remaining records for the queries ``lo .. hi-1``: K nearest, K2 furthest.

    ``F`` (blocks, d + 2, ``_BLOCK``) is the filter copy (float32, or float64) in blocks of
    ``_BLOCK`` records, position p at ``F[p // _BLOCK, :, p % _BLOCK]``: rows ``0..d-1`` the
    record minus the centre o, row ``d`` the value ``-||x'||^2/2 + delta_x`` and row ``d + 1``
    the allowance ``w2 >= 2 delta_x`` of each record x' = x - o; ``R`` (n, d) holds the
    float64 records at the same positions, ``rows`` their row numbers. Query b is ``Q[b]``
    (float64, as the records), ``Qf[b]`` its centred copy in the filter's precision,
    ``qn[b] = ||q'||^2`` and ``dq[b] = delta_q`` its allowance.

    The filter value of x is ``s = x'.q' - ||x'||^2/2 + delta_x`` (:func:`_filter`); the exact
    squared distance is ``||q'||^2 - 2 (x'.q' - ||x'||^2/2)``, and ``s`` is within
    ``delta_x + delta_q`` of ``x'.q' - ||x'||^2/2 + delta_x`` with room for the rounding of the
    float64 distance (``mdav_groups``, Notes). So x can be among the nearest (squared distance
    at most ``thr``) only if ``s >= (||q'||^2 - thr)/2 - delta_q``, and among the furthest (at
    least ``thr_f``) only if ``s - w2 <= (||q'||^2 - thr_f)/2 + delta_q``. A block is tested
    in the filter's precision with the thresholds rounded outward; only the records it marks
    are re-tested with the current thresholds and, if still candidates, measured exactly
    (``R``, the reference's arithmetic) and inserted.

    Each block of records is read once and scanned for every query while it sits in L1. The
    thresholds start from the first records: the K-th largest ``s - w2`` among them proves
    that K records are within ``||q'||^2 - 2 (s - w2) + 2 delta_q`` (:func:`_seed`), and the
    K2-th smallest ``s`` that K2 are beyond ``||q'||^2 - 2 s - 2 delta_q``.

    For query b, ``near_rows[b]``/``near_d[b]`` (K = ``near_rows.shape[1]``) receive the K
    smallest ``(d2, row)`` and ``far_rows[b]``/``far_negd[b]`` (K2 = ``far_rows.shape[1]``,
    0 <= K2 <= K) the K2 smallest ``(-d2, row)``; ``near_cnt[b]``/``far_cnt[b]`` their lengths
    (< K only when fewer records remain): exactly the lists a full exact sweep gives.
    """
    d = R.shape[1]
    k_near = near_rows.shape[1]
    k_far = far_rows.shape[1]
    ft = F.dtype.type
    acc = np.empty(_BLOCK, dtype=F.dtype)
    hit = np.zeros(_BLOCK, dtype=np.uint8)
    words = hit.view(np.uint64)
    buf = np.empty(max(k_near, 1))
    nq = hi - lo
    thr_n = np.full(nq, np.inf)  # the K-th nearest is at most this far
    thr_f = np.full(nq, -np.inf)  # the K2-th furthest is at least this far
    for b in range(lo, hi):
        near_cnt[b] = 0
        far_cnt[b] = 0
    c = d - 5 * ((d - 1) // 5)  # columns of the first pass (1..5), then five at a time
    # the seed reads the first block's filter values only, and needs at least K of them
    # (with k above _SEED, a fixed 128 would read past them: garbage thresholds, a crash)
    n_seed = min(max(_SEED, k_near), m, _BLOCK)
    if n_seed < k_near:
        n_seed = 0
    for blk in range((m + _BLOCK - 1) // _BLOCK):
        b0 = blk * _BLOCK
        nb = min(_BLOCK, m - b0)
        Fb = F[blk]
        for t in range(nq):
            b = lo + t
            tn = ft(np.inf)  # block 0: thresholds after the seed, below
            tf = ft(-np.inf)
            if blk > 0 or n_seed == 0:
                tn = _round_down(ft, (qn[b] - thr_n[t]) * 0.5 - dq[b])  # near: s >= tn
                if k_far > 0:
                    tf = _round_up(ft, (qn[b] - thr_f[t]) * 0.5 + dq[b])  # far: s - w2 <= tf
            # the filter values acc[i] = Fb[d, i] + sum_j Fb[j, i] q_j, vectorized across
            # records, in passes over at most five columns: written out here, since a
            # function call per block and query, or numba's inlining (reference counts of
            # its array arguments), costs about as much as the arithmetic
            q0 = Qf[b, 0]
            if c == 1:
                for i in range(nb):
                    acc[i] = Fb[d, i] + Fb[0, i] * q0
            elif c == 2:
                q1 = Qf[b, 1]
                for i in range(nb):
                    acc[i] = Fb[d, i] + Fb[0, i] * q0 + Fb[1, i] * q1
            elif c == 3:
                q1, q2 = Qf[b, 1], Qf[b, 2]
                for i in range(nb):
                    acc[i] = Fb[d, i] + Fb[0, i] * q0 + Fb[1, i] * q1 + Fb[2, i] * q2
            elif c == 4:
                q1, q2, q3 = Qf[b, 1], Qf[b, 2], Qf[b, 3]
                for i in range(nb):
                    v = Fb[d, i] + Fb[0, i] * q0 + Fb[1, i] * q1 + Fb[2, i] * q2
                    acc[i] = v + Fb[3, i] * q3
            else:
                q1, q2, q3, q4 = Qf[b, 1], Qf[b, 2], Qf[b, 3], Qf[b, 4]
                for i in range(nb):
                    v = Fb[d, i] + Fb[0, i] * q0 + Fb[1, i] * q1 + Fb[2, i] * q2
                    acc[i] = v + Fb[3, i] * q3 + Fb[4, i] * q4
            hits = 0
            if c == d:  # the test alone
                for i in range(nb):
                    h = (acc[i] >= tn) | (acc[i] - Fb[d + 1, i] <= tf)
                    hit[i] = h
                    hits += h
            else:
                for j in range(c, d - 5, 5):
                    q0, q1, q2, q3, q4 = (
                        Qf[b, j],
                        Qf[b, j + 1],
                        Qf[b, j + 2],
                        Qf[b, j + 3],
                        Qf[b, j + 4],
                    )
                    for i in range(nb):
                        v = acc[i] + Fb[j, i] * q0 + Fb[j + 1, i] * q1 + Fb[j + 2, i] * q2
                        acc[i] = v + Fb[j + 3, i] * q3 + Fb[j + 4, i] * q4
                j = d - 5  # the last five columns, and the test
                q0, q1, q2, q3, q4 = (
                    Qf[b, j],
                    Qf[b, j + 1],
                    Qf[b, j + 2],
                    Qf[b, j + 3],
                    Qf[b, j + 4],
                )
                for i in range(nb):
                    v = acc[i] + Fb[j, i] * q0 + Fb[j + 1, i] * q1 + Fb[j + 2, i] * q2
                    v = v + Fb[j + 3, i] * q3 + Fb[j + 4, i] * q4
                    acc[i] = v
                    h = (v >= tn) | (v - Fb[d + 1, i] <= tf)
                    hit[i] = h
                    hits += h
            if blk == 0 and n_seed > 0:
                # seed the thresholds from the first records, then test the block with them
                w2 = Fb[d + 1]
                thr_n[t] = qn[b] - 2.0 * _seed(acc, w2, n_seed, k_near, False, buf) + 2.0 * dq[b]
                tn = _round_down(ft, (qn[b] - thr_n[t]) * 0.5 - dq[b])
                if k_far > 0:
                    thr_f[t] = qn[b] - 2.0 * _seed(acc, w2, n_seed, k_far, True, buf) - 2.0 * dq[b]
                    tf = _round_up(ft, (qn[b] - thr_f[t]) * 0.5 + dq[b])
                hits = 0
                for i in range(nb):
                    h = (acc[i] >= tn) | (acc[i] - Fb[d + 1, i] <= tf)
                    hit[i] = h
                    hits += h
            if hits == 0:
                continue
            # the marked records: re-tested with the current thresholds, measured exactly
            tn64 = (qn[b] - thr_n[t]) * 0.5 - dq[b]
            tf64 = (qn[b] - thr_f[t]) * 0.5 + dq[b] if k_far > 0 else -np.inf
            left = hits  # marks not yet seen: the scan stops at the last one
            wi = -1
            while left > 0:
                wi += 1
                if words[wi] == 0:  # eight flags at a time
                    continue
                for i in range(8 * wi, min(8 * wi + 8, nb)):
                    if hit[i] == 0:
                        continue
                    left -= 1
                    a = np.float64(acc[i])
                    near = a >= tn64
                    further = a - np.float64(Fb[d + 1, i]) <= tf64
                    if not (near or further):
                        continue
                    p = b0 + i
                    row = rows[p]
                    d2 = _sq_dist_to(R, p, Q, b)
                    # insertions into the sorted lists, written out: a function taking
                    # the lists would update their reference counts (atomically) per call
                    if near and d2 <= thr_n[t]:  # (d2, row) into the K smallest
                        u = near_cnt[b]
                        if u == k_near:
                            u = k_near - 1
                            last = near_d[b, u]
                            if d2 > last or (d2 == last and row > near_rows[b, u]):
                                u = -1
                        else:
                            near_cnt[b] = u + 1
                        if u >= 0:
                            while u > 0 and (
                                near_d[b, u - 1] > d2
                                or (near_d[b, u - 1] == d2 and near_rows[b, u - 1] > row)
                            ):
                                near_d[b, u] = near_d[b, u - 1]
                                near_rows[b, u] = near_rows[b, u - 1]
                                u -= 1
                            near_d[b, u] = d2
                            near_rows[b, u] = row
                        if near_cnt[b] == k_near and near_d[b, k_near - 1] < thr_n[t]:
                            thr_n[t] = near_d[b, k_near - 1]
                            tn64 = (qn[b] - thr_n[t]) * 0.5 - dq[b]
                    if further and d2 >= thr_f[t]:  # (-d2, row) into the K2 smallest
                        u = far_cnt[b]
                        if u == k_far:
                            u = k_far - 1
                            last = far_negd[b, u]
                            if -d2 > last or (-d2 == last and row > far_rows[b, u]):
                                u = -1
                        else:
                            far_cnt[b] = u + 1
                        if u >= 0:
                            while u > 0 and (
                                far_negd[b, u - 1] > -d2
                                or (far_negd[b, u - 1] == -d2 and far_rows[b, u - 1] > row)
                            ):
                                far_negd[b, u] = far_negd[b, u - 1]
                                far_rows[b, u] = far_rows[b, u - 1]
                                u -= 1
                            far_negd[b, u] = -d2
                            far_rows[b, u] = row
                        if far_cnt[b] == k_far and -far_negd[b, k_far - 1] > thr_f[t]:
                            thr_f[t] = -far_negd[b, k_far - 1]
                            tf64 = (qn[b] - thr_f[t]) * 0.5 + dq[b]


@uncached_njit(nogil=True, parallel=True)
def _multi_sweep_threads(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    Qf: np.ndarray,
    Q: np.ndarray,
    qn: np.ndarray,
    dq: np.ndarray,
    nq: int,
    parts: int,
    near_rows: np.ndarray,
    near_d: np.ndarray,
    near_cnt: np.ndarray,
    far_rows: np.ndarray,
    far_negd: np.ndarray,
    far_cnt: np.ndarray,
) -> None:
    """:func:`_multi_sweep` for queries ``0 .. nq-1`` split into ``parts`` threads' shares.

    The queries' lists are independent, so each thread sweeps all records for its share of
    the queries; the result is that of one sweep for all.
    """
    for t in numba.prange(parts):
        _multi_sweep(
            F, R, m, rows, Qf, Q, qn, dq, t * nq // parts, (t + 1) * nq // parts,
            near_rows, near_d, near_cnt, far_rows, far_negd, far_cnt,
        )  # fmt: skip


@cached_njit(nogil=True)
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


@cached_njit(nogil=True)
def _sweep(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    Z: np.ndarray,
    row: int,
    centre: np.ndarray,
    err_coef: float,
    err_abs: float,
    k: int,
    out_rows: np.ndarray,
    want_far: bool,
) -> int:
    """One exact sweep for the record ``row`` of ``Z``: its k nearest into ``out_rows``.

    Nearest first, ties to the lowest row; returns the row of the furthest record (largest
    ``(d2, -row)``) when ``want_far``, else -1. :func:`_multi_sweep` with one query.
    """
    Qf = np.empty((1, Z.shape[1]), dtype=F.dtype)
    qn = np.empty(1)
    dq = np.empty(1)
    _query(Z, row, centre, err_coef, err_abs, Qf, qn, dq, 0)
    near_rows = np.empty((1, k), dtype=np.int64)
    near_d = np.empty((1, k))
    near_cnt = np.zeros(1, dtype=np.int64)
    k_far = 1 if want_far else 0
    far_rows = np.empty((1, k_far), dtype=np.int64)
    far_negd = np.empty((1, k_far))
    far_cnt = np.zeros(1, dtype=np.int64)
    _multi_sweep(
        F, R, m, rows, Qf, Z[row : row + 1], qn, dq, 0, 1,
        near_rows, near_d, near_cnt, far_rows, far_negd, far_cnt,
    )  # fmt: skip
    out_rows[:] = near_rows[0, : out_rows.shape[0]]
    return far_rows[0, 0] if want_far else -1


@cached_njit(nogil=True)
def _query(
    Z: np.ndarray,
    row: int,
    centre: np.ndarray,
    err_coef: float,
    err_abs: float,
    Qf: np.ndarray,
    qn: np.ndarray,
    dq: np.ndarray,
    t: int,
) -> None:
    """Query slot ``t`` for the record ``row``: centred copy ``Qf[t]``, ``qn[t]``, ``dq[t]``."""
    s = 0.0
    for j in range(Z.shape[1]):
        v = Z[row, j] - centre[j]
        Qf[t, j] = v
        s += v * v
    qn[t] = s
    dq[t] = err_coef * s + err_abs


@cached_njit(nogil=True)
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
            pb, pi = divmod(p, _BLOCK)
            lb, li = divmod(last, _BLOCK)
            for j in range(F.shape[1]):
                F[pb, j, pi] = F[lb, j, li]
            moved = rows[last]
            rows[p] = moved
            pos_of[moved] = p
        m -= 1
    return m


@uncached_njit(nogil=True)  # calls the parfor of _multi_sweep_threads
def _pass(
    F: np.ndarray,
    R: np.ndarray,
    m: int,
    rows: np.ndarray,
    Qf: np.ndarray,
    Q: np.ndarray,
    qn: np.ndarray,
    dq: np.ndarray,
    nq: int,
    parts: int,
    near_rows: np.ndarray,
    near_d: np.ndarray,
    near_cnt: np.ndarray,
    far_rows: np.ndarray,
    far_negd: np.ndarray,
    far_cnt: np.ndarray,
) -> None:
    """A speculative pass for queries ``0 .. nq-1``: in this thread, or shared by ``parts``."""
    if parts > 1 and nq > 1:
        _multi_sweep_threads(
            F, R, m, rows, Qf, Q, qn, dq, nq, min(parts, nq),
            near_rows, near_d, near_cnt, far_rows, far_negd, far_cnt,
        )  # fmt: skip
    else:
        _multi_sweep(
            F, R, m, rows, Qf, Q, qn, dq, 0, nq,
            near_rows, near_d, near_cnt, far_rows, far_negd, far_cnt,
        )  # fmt: skip


@cached_njit(nogil=True)
def _mdav_kernel(
    Z: np.ndarray,
    F: np.ndarray,
    centre: np.ndarray,
    err_coef: float,
    err_abs: float,
    k: int,
    batch: int,
    threads: int,
    stats: np.ndarray,
) -> np.ndarray:
    """Compiled MDAV-generic; see :func:`mdav_groups`.

    ``Z`` (n, d) float64 C-contiguous; ``F`` (blocks, d + 2, ``_BLOCK``) its filter copy,
    centred on ``centre``, with each record's filter offset and allowance (consumed, see
    :func:`_multi_sweep`); a query q's allowance is ``err_coef * ||q - centre||^2 + err_abs``.
    ``batch``: queries per speculative pass (0: one sweep per search); ``threads``: threads
    that share a speculative pass's queries (1: no parallel region). ``stats`` (4,) receives
    the number of batch passes, of single sweeps, and of r and s answered from a batch.
    """
    n, d = Z.shape
    labels = np.full(n, -1, dtype=np.int64)
    R = Z.copy()  # float64 records, compacted by swap-removal together with F
    rows = np.arange(n)  # position -> row
    pos_of = np.arange(n)  # row -> position

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
    Qf = np.empty((nb_q, d), dtype=F.dtype)
    qn = np.empty(nb_q)
    dq = np.empty(nb_q)

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
                    _query(Z, q_rows[t], centre, err_coef, err_abs, Qf, qn, dq, t)
                    slot[q_rows[t]] = t
                    slot_row[t] = q_rows[t]
                parts = threads if m >= _PARALLEL_MIN else 1
                _pass(
                    F, R, m, rows, Qf, Q, qn, dq, nq, parts,
                    near_rows[:nq], near_d[:nq], near_cnt[:nq],
                    far_rows[:nq], far_negd[:nq], far_cnt[:nq],
                )  # fmt: skip
                ns = 0
                for t in range(nq):
                    s_row = far_rows[t, 0]
                    if slot[s_row] < 0:
                        Q[ns] = Z[s_row]
                        _query(Z, s_row, centre, err_coef, err_abs, Qf, qn, dq, ns)
                        slot[s_row] = batch + ns
                        slot_row[batch + ns] = s_row
                        ns += 1
                _pass(
                    F, R, m, rows, Qf, Q, qn, dq, ns, parts,
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
            s = _sweep(F, R, m, rows, Z, r, centre, err_coef, err_abs, k, grp, two)
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
            _sweep(F, R, m, rows, Z, s, centre, err_coef, err_abs, k, grp, False)
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
    threads: int = 1,
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
        traffic and doubles the records per vector instruction; a record whose float32 filter
        value is within the proven rounding bound of a decision is measured in float64, so
        the labels do not depend on this choice. Centred values beyond 1e15 in magnitude
        always use ``"float64"``.
    batch : int, default 32
        Number of predicted queries answered per speculative pass (see Notes); 0 turns the
        speculation off (two sweeps per pair of groups). The labels do not depend on it.
    threads : int, default 1
        Threads that share the queries of a speculative pass (numba's thread pool: at most
        ``NUMBA_NUM_THREADS``, and the pool's current size, ``numba.get_num_threads()``,
        unless this is larger). 1 runs everything in the calling thread. The labels do not
        depend on it.
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

    Speculation shares the reads of the records between steps: the next r's are, with few
    exceptions, among the records now furthest from the centroid, and the next s's among the
    records furthest from those. One pass computes, for the B records furthest from the
    centroid, their ``k + 2`` nearest and 4 furthest records, and a second pass the ``k + 2``
    nearest of each one's furthest record. A later step whose r (or s) has such a list takes
    its k nearest (and s) from the list's entries still unassigned: a list of the K nearest,
    built when more records remained, still starts with the nearest of those that remain (no
    record was added since), so this is exact whenever k entries are left; otherwise the step
    falls back to a sweep, and a miss for r starts a new batch.

    The filter. Records and queries are centred on the column means o (x' = x - o, in
    float64, then rounded to the filter's precision with unit roundoff u). A sweep computes,
    in that precision, ``s = -||x'||^2/2 + delta_x + sum_j x'_j q'_j`` (one multiply-add per
    column and record, vectorized), which approximates ``A + delta_x`` with
    ``A = x'.q' - ||x'||^2/2 = (||q'||^2 - ||x - q||^2) / 2``. Rounding x', q' and the stored
    offset, the products and d additions (fused or not) make
    ``|s - (A + delta_x)| <= (1.01 d + 3.1) u (||x'||^2 + ||q'||^2)`` (each partial sum is at
    most ``||x'||^2/2 + ||x'|| ||q'|| <= ||x'||^2 + ||q'||^2``). The float64 distance that
    decides is within ``(2 d + 4.1) u64 (||x'||^2 + ||q'||^2)`` of ``||x - q||^2``, plus
    ``4 u64 (...)`` for the centring. The allowances ``delta_x = e ||x'||^2 + a`` and
    ``delta_q = e ||q'||^2 + a``, ``e = (4 d + 16) u``, exceed the sum of these errors and the
    rounding of the tests for either precision (``a``, ``1e-30 (d + 1)`` in float32, covers
    underflow), so that the tests of :func:`_multi_sweep` can only let through records that
    an exact sweep could select, never hold one back. Each record's offset and its share
    ``w2 >= 2 delta_x`` are stored beside its coordinates.
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if precision not in ("float32", "float64"):
        raise ParameterError(
            f'precision must be "float32" or "float64", got {precision!r}', field="precision"
        )
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 0:
        raise ParameterError(f"batch must be an integer >= 0, got {batch!r}", field="batch")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ParameterError(f"threads must be an integer >= 1, got {threads!r}", field="threads")
    n, d = Z.shape
    centre = Z.mean(axis=0)
    X = Z - centre  # x' = x - o, the filter's coordinates
    if precision == "float32" and np.abs(X).max() <= 1e15:  # float32 squares cannot overflow
        dtype, err_abs = np.float32, 1e-30 * (d + 1)
    else:
        dtype, err_abs = np.float64, 1e-290 * (d + 1)
    err_coef = (4 * d + 16) * float(np.finfo(dtype).eps / 2)
    sq = np.einsum("ij,ij->i", X, X)
    delta = err_coef * sq + err_abs
    F = np.zeros((-(-n // _BLOCK) * _BLOCK, d + 2), dtype=dtype)  # records in blocks
    F[:n, :d] = X
    F[:n, d] = delta - 0.5 * sq
    F[:n, d + 1] = 2.02 * delta  # >= 2 delta_x after rounding
    F = np.ascontiguousarray(F.reshape(-1, _BLOCK, d + 2).transpose(0, 2, 1))
    if stats is None:
        stats = np.zeros(4, dtype=np.int64)
    if threads > 1:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return _mdav_kernel(Z, F, centre, err_coef, err_abs, int(k), batch, threads, stats)


def group_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Replace every record by the mean of its group.

    Each group's column is summed on an exact power-of-two scale that puts its largest
    magnitude in [0.5, 1) (as :func:`~sdcflow.core.validation.pow2_exponents`), then scaled
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
        (:mod:`~sdcflow.core.microaggregation.scaling`).

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
