"""Compiled kernels of MDAV-generic under the heterogeneous partial distance.

Private module of :mod:`~sdcflow.core.microaggregation.heterogeneous`, which documents the
method [1]_ [2]_. These kernels give that module's groups and representatives bit for bit:
every sum is taken in numpy's own order (:func:`pairwise_sum`), every mean on the
power-of-two scale of :func:`~sdcflow.core.validation.safe_mean`, and every tie goes where
numpy's stable sort and ``argmax`` send it (the lowest row). What they save is numpy's
per-call overhead: a cell of 5,000 records takes some 1,500 steps, each of a handful of
array operations over the remaining records.

References
----------
.. [1] J. Domingo-Ferrer, V. Torra, "Ordinal, continuous and heterogeneous k-anonymity
   through microaggregation", Data Mining and Knowledge Discovery 11(2) (2005) 195-212.
.. [2] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
   statistical disclosure control", IEEE TKDE 14(1) (2002) 189-201 (MDAV).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from sdcflow.core.jit import cached_njit


@cached_njit(nogil=True)
def _block_sum(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's sum of a run of at most 128 terms: plainly under 8, else in 8 interleaved
    partial sums joined pairwise, the remainder added last."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@cached_njit(nogil=True)
def pairwise_sum(a: np.ndarray, lo: int, n: int) -> float:
    """The sum of ``a[lo:lo + n]`` (1-D float64) in the order numpy's ``add.reduce`` takes
    for a contiguous run, so that the result is numpy's to the bit: runs of at most 128 by
    :func:`_block_sum`, longer ones cut in halves at a multiple of 8, left sum plus right.
    The halving is walked with an explicit stack (numba's cache does not reload recursive
    functions safely)."""
    if n <= 128:
        return _block_sum(a, lo, n)
    run_lo = np.empty(128, dtype=np.int64)  # the path from the root: at most log2(n) deep
    run_n = np.empty(128, dtype=np.int64)
    stage = np.zeros(128, dtype=np.int64)  # 0: go left, 1: go right, 2: join
    sums = np.empty(128)
    run_lo[0], run_n[0] = lo, n
    top, held = 0, 0
    while top >= 0:
        at, m = run_lo[top], run_n[top]
        if m <= 128:
            sums[held] = _block_sum(a, at, m)
            held += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if stage[top] == 0:
            stage[top] = 1
            top += 1
            run_lo[top], run_n[top], stage[top] = at, half, 0
        elif stage[top] == 1:
            stage[top] = 2
            top += 1
            run_lo[top], run_n[top], stage[top] = at + half, m - half, 0
        else:
            held -= 1
            sums[held - 1] = sums[held - 1] + sums[held]
            top -= 1
    return sums[0]


@cached_njit(nogil=True)
def scaled_mean(values: np.ndarray, m: int) -> float:
    """:func:`~sdcflow.core.validation.safe_mean` of ``values[:m]`` (finite, m >= 1), bit for
    bit; ``values[:m]`` is overwritten by the rescaled values."""
    biggest = 0.0
    for i in range(m):
        biggest = max(biggest, abs(values[i]))
    e = math.frexp(biggest)[1]
    if -1022 <= e <= 1022:  # 2**-e a normal number: the product is ldexp's, correctly rounded
        scale = math.ldexp(1.0, -e)
        for i in range(m):
            values[i] = values[i] * scale
    else:
        for i in range(m):
            values[i] = math.ldexp(values[i], -e)
    return math.ldexp(pairwise_sum(values, 0, m) / m, e)


@cached_njit(nogil=True)
def _lower_median(values: np.ndarray, m: int) -> float:
    """The ((m - 1) // 2)-th smallest of ``values[:m]`` (sorted in place)."""
    values[:m].sort()
    return values[(m - 1) // 2]


@cached_njit(nogil=True)
def _mode(codes: np.ndarray, rows: np.ndarray, m: int, j: int, tally: np.ndarray) -> int:
    """The most frequent code >= 0 of column j over ``rows[:m]``, the lowest on a tie; -1
    when none is present. ``tally`` (levels,) is scratch, left zeroed."""
    best, most = -1, 0
    for i in range(m):
        c = codes[rows[i], j]
        if c >= 0:
            tally[c] += 1
    for i in range(m):
        c = codes[rows[i], j]
        if c >= 0:
            if tally[c] > most or (tally[c] == most and c < best):
                best, most = c, tally[c]
    for i in range(m):
        c = codes[rows[i], j]
        if c >= 0:
            tally[c] = 0
    return best


@cached_njit(nogil=True)
def _centroid(
    cont: np.ndarray,
    numeric: int,
    nom: np.ndarray,
    rows: np.ndarray,
    m: int,
    point: np.ndarray,
    point_nom: np.ndarray,
    scratch: np.ndarray,
    tally: np.ndarray,
) -> None:
    """The centroid [1]_ of ``rows[:m]`` into ``point`` / ``point_nom``: means of the
    numeric z-scores, lower medians of the scaled ranks, modes of the codes, over the
    values present (NaN / -1 where none)."""
    for c in range(cont.shape[1]):
        held = 0
        for i in range(m):
            v = cont[rows[i], c]
            if not math.isnan(v):
                scratch[held] = v
                held += 1
        if held == 0:
            point[c] = np.nan
        elif c < numeric:
            point[c] = scaled_mean(scratch, held)  # [1] continuous keys: the mean
        else:
            point[c] = _lower_median(scratch, held)  # [1] ordinal keys: the (lower) median
    for j in range(nom.shape[1]):
        point_nom[j] = _mode(nom, rows, m, j, tally)  # [1] nominal keys: the mode


@cached_njit(nogil=True)
def _distances(
    cont: np.ndarray,
    nom: np.ndarray,
    rows: np.ndarray,
    m: int,
    point: np.ndarray,
    point_nom: np.ndarray,
    out: np.ndarray,
    terms: np.ndarray,
) -> None:
    """``_Distances.to`` (``apart`` 0) of ``rows[:m]`` into ``out[:m]``: the squared terms of
    the keys present in both, summed in numpy's order and scaled by keys / keys in common."""
    p = cont.shape[1]
    total = p + nom.shape[1]
    for i in range(m):
        row = rows[i]
        common = 0
        for c in range(p):
            diff = cont[row, c] - point[c]
            if math.isnan(diff):
                terms[c] = 0.0
            else:
                terms[c] = diff * diff  # [1] numeric and ordinal terms
                common += 1
        sq = pairwise_sum(terms, 0, p)
        if nom.shape[1]:
            unequal = 0
            for j in range(nom.shape[1]):
                a, b = nom[row, j], point_nom[j]
                if a >= 0 and b >= 0:
                    common += 1
                    if a != b:
                        unequal += 1  # [1] nominal: 0 or 1
            sq += unequal
        out[i] = sq * total / max(common, 1) if common > 0 else 0.0


@cached_njit(nogil=True)
def _farthest(d: np.ndarray, m: int) -> int:
    """The first position of the largest of ``d[:m]`` (``np.argmax``)."""
    at = 0
    for i in range(1, m):
        if d[i] > d[at]:
            at = i
    return at


@cached_njit(nogil=True)
def _take(d: np.ndarray, rows: np.ndarray, m: int, k: int, labels: np.ndarray, group: int) -> int:
    """Label the k records of ``rows[:m]`` nearest by ``d[:m]`` (ties to the lower position,
    as the first k of a stable argsort) and drop them from ``rows`` and ``d``, keeping their
    order; returns the records left."""
    best_d = np.empty(k)
    best_at = np.empty(k, dtype=np.int64)
    held = 0
    for i in range(m):
        v = d[i]
        if held == k and not v < best_d[k - 1]:
            continue
        j = held if held < k else k - 1
        while j > 0 and best_d[j - 1] > v:
            best_d[j] = best_d[j - 1]
            best_at[j] = best_at[j - 1]
            j -= 1
        best_d[j] = v
        best_at[j] = i
        if held < k:
            held += 1
    for j in range(k):
        labels[rows[best_at[j]]] = group
    kept = 0
    for i in range(m):
        if labels[rows[i]] != group:
            rows[kept] = rows[i]
            d[kept] = d[i]
            kept += 1
    return kept


class _Scratch(NamedTuple):
    """The buffers one grouping reuses at every step."""

    values: np.ndarray  # (n,) a column's values present
    terms: np.ndarray  # (p + q,) one record's squared terms
    point: np.ndarray  # (p + q,) the centroid's continuous keys
    point_nom: np.ndarray  # (r,) the centroid's codes
    record_nom: np.ndarray  # (r,) a record's codes
    tally: np.ndarray  # (levels,) code counts, left zeroed


@cached_njit(nogil=True)
def _around_farthest(
    cont: np.ndarray,
    numeric: int,
    nom: np.ndarray,
    rows: np.ndarray,
    m: int,
    k: int,
    labels: np.ndarray,
    group: int,
    d: np.ndarray,
    work: _Scratch,
) -> int:
    """Label ``group`` the record of ``rows[:m]`` farthest from their centroid and its k - 1
    nearest, leaving in ``d`` the distances to it of the records left; returns how many
    are left."""
    _centroid(cont, numeric, nom, rows, m, work.point, work.point_nom, work.values, work.tally)
    _distances(cont, nom, rows, m, work.point, work.point_nom, d, work.terms)
    r = rows[_farthest(d, m)]
    work.record_nom[:] = nom[r]
    _distances(cont, nom, rows, m, cont[r], work.record_nom, d, work.terms)
    return _take(d, rows, m, k, labels, group)


@cached_njit(nogil=True)
def generic_groups(cont: np.ndarray, numeric: int, nom: np.ndarray, k: int) -> np.ndarray:
    """MDAV-generic [2]_ under the partial distance [1]_ (``heterogeneous._groups``).

    Parameters
    ----------
    cont : ndarray of shape (n, p + q), float64
        The numeric z-scores, then the scaled ordinal ranks; NaN where missing.
    numeric : int
        p, the numeric columns of ``cont``.
    nom : ndarray of shape (n, r), int64
        Nominal codes, -1 where missing (r may be 0).
    k : int
        Minimum group size, 2 <= k <= n.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups in the order they are formed, each of k..2k-1 records.
    """
    n = cont.shape[0] if cont.shape[1] else nom.shape[0]
    labels = -np.ones(n, dtype=np.int64)
    rows = np.arange(n)
    d = np.empty(n)
    levels = 1
    for j in range(nom.shape[1]):
        for i in range(n):
            levels = max(levels, nom[i, j] + 1)
    work = _Scratch(
        np.empty(n),
        np.empty(cont.shape[1]),
        np.empty(cont.shape[1]),
        np.empty(nom.shape[1], dtype=np.int64),
        np.empty(nom.shape[1], dtype=np.int64),
        np.zeros(levels, dtype=np.int64),
    )
    m, group = n, 0
    while m >= 3 * k:
        # [2] the record r farthest from the centroid and its k - 1 nearest
        m = _around_farthest(cont, numeric, nom, rows, m, k, labels, group, d, work)
        group += 1
        s = rows[_farthest(d, m)]  # [2] d: the distances to r of the records left
        work.record_nom[:] = nom[s]
        _distances(cont, nom, rows, m, cont[s], work.record_nom, d, work.terms)
        m = _take(d, rows, m, k, labels, group)  # [2] the farthest from r, its k nearest
        group += 1
    if m >= 2 * k:
        m = _around_farthest(cont, numeric, nom, rows, m, k, labels, group, d, work)
        group += 1
    for i in range(m):
        labels[rows[i]] = group
    return labels


@cached_njit(nogil=True)
def group_values(
    numeric: np.ndarray,
    ordinal: np.ndarray,
    nominal: np.ndarray,
    order: np.ndarray,
    bounds: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every group's mean, lower median and mode over its present values [1]_, released on
    the records holding the key (``heterogeneous.group_representatives`` before any group
    is joined).

    Shapes: numeric (n, p) float64 NaN missing; ordinal (n, q), nominal (n, r) int64 -1
    missing; ``order`` (n,) the records group by group in row order, group g at
    ``order[bounds[g]:bounds[g + 1]]`` -> numeric (n, p), ordinal (n, q), nominal (n, r),
    short (n, p): a holder of a key its group holds on fewer than k records.
    """
    n = order.shape[0]
    num = np.full(numeric.shape, np.nan)
    ordn = -np.ones(ordinal.shape, dtype=np.int64)
    nom = -np.ones(nominal.shape, dtype=np.int64)
    short = np.zeros(numeric.shape, dtype=np.bool_)
    scratch = np.empty(n)
    levels = 1
    for j in range(nominal.shape[1]):
        for i in range(n):
            levels = max(levels, nominal[i, j] + 1)
    tally = np.zeros(levels, dtype=np.int64)
    for g in range(bounds.shape[0] - 1):
        lo, hi = bounds[g], bounds[g + 1]
        rows = order[lo:hi]
        for j in range(numeric.shape[1]):
            held = 0
            for i in range(hi - lo):
                v = numeric[rows[i], j]
                if not math.isnan(v):
                    scratch[held] = v
                    held += 1
            if held:
                mean = scaled_mean(scratch, held)  # [1] mean
                for i in range(hi - lo):
                    if not math.isnan(numeric[rows[i], j]):
                        num[rows[i], j] = mean
                        short[rows[i], j] = held < k
        for j in range(ordinal.shape[1]):
            held = 0
            for i in range(hi - lo):
                if ordinal[rows[i], j] >= 0:
                    scratch[held] = ordinal[rows[i], j]
                    held += 1
            if held:
                median = int(_lower_median(scratch, held))  # [1] median
                for i in range(hi - lo):
                    if ordinal[rows[i], j] >= 0:
                        ordn[rows[i], j] = median
        for j in range(nominal.shape[1]):
            mode = _mode(nominal, rows, hi - lo, j, tally)  # [1] mode
            for i in range(hi - lo):
                if nominal[rows[i], j] >= 0:
                    nom[rows[i], j] = mode
    return num, ordn, nom, short
