"""SUDA2: minimal sample uniques, SUDA and DIS-SUDA scores, key contributions.

A *sample unique* of record i on a set S of keys is a combination of i's values on S that no
other record shares; it is *minimal* (an MSU) when no proper subset of S is unique for i
[1]_. Records with small MSUs are the special uniques an intruder can single out.

Search
------
The MSUs are found level by level over the key subsets S of size 1..``max_size`` (the
lattice SUDA2 searches, [1]_ section 4), in compiled (numba) kernels, with the pruning that
makes the cost linear in the rows still at stake rather than in all records:

* identical rows share every class and every MSU, so the search runs on the D distinct rows,
  each weighted by its count (a row of two records or more is never unique, yet it counts in
  the classes of the others); the results are gathered back to the records at the end;
* record i's class on S is its class on S' = S minus its last key, split by that key (a
  dense table indexed by (class on S', code), or a sort when that table would outgrow 8 n
  entries). Uniqueness is monotone [1]_ (property 1): a row unique on some (k-1)-subset of
  S is unique on S and shares no class there, so only the rows shared on *every*
  (k-1)-subset are grouped on S;
* those rows that come out unique on S are exactly the candidates of [1]_ (property 2): they
  are MSUs unless they lack one of S's keys;
* the search stops at the first size where no class has two records left.

The cost is O(sum over S of D_S) with D_S the distinct rows shared on every subset of S,
at most ``sum_{k <= max_size} C(m, k)`` passes over the D rows; for the 5 to 10 keys of a
disclosure scenario that is far below SUDA2's worst case and below naive per-record
enumeration (O(n^2 2^m)). For many keys (m > 15), SUDA2's item-level recursion would prune
more.

Scores (sdcMicro ``suda2``, ``original_scores = TRUE`` [2]_)
---------------------------------------------------------------
An MSU of size k weighs ``w_k = prod_{j=k}^{M-1} (m - j)`` (m keys, M = ``max_size``; with
M = m, as sdcMicro, w_k = (m - k)!) [3]_; the SUDA score of a record is the sum of the
weights of its MSUs. A key's contribution to a record's score is the sum of the weights of
its MSUs that hold the key, divided by the score (sdcMicro's ``contributionPercent``), and
its contribution to the file ``100 * sum_i contrib_ij score_i / sum_i score_i``
(``attribute_contributions``).

DIS-SUDA [3]_ [4]_: with U the records unique on all keys, P the records in classes of
exactly two identical rows and f the sampling fraction, the probability that a sample unique
is a population unique is estimated by ``DIS = U f / (U f + P (1 - f))`` [4]_ (eq. 8), and
the DIS score of a record with SUDA score s_i > 0 is
``1 / (1 + (U / DIS - U) / (s_i^Q sum_{j: s_j > 0} s_j^{-Q}))``, ``Q = 1 + (8 - m) / 20``
(sdcMicro's C++ ``Suda2``); 0 when s_i = 0.

Missing values
--------------
As sdcMicro's ``missing`` argument: a value equal to ``missing`` (NaN too) is never part of
an MSU (a record has no MSU holding a key it lacks), but it is a value of its own when
other records' classes are counted, and when rows are compared whole for U and P.

Differences from sdcMicro 5.8.1 (found reading ``src/Suda2.h`` and comparing the two)
-------------------------------------------------------------------------------------
* sdcMicro counts U among full-key rows alone in their 16-bit hash bucket only (its test
  ``k == g_NbPerHash[i]`` never holds for a bucket of several rows). Since
  ``U / DIS - U = P (1 - f) / f``, U cancels from the DIS scores, which agree -- unless
  no unique row is alone in its bucket (large files, few keys of small codes): then
  sdcMicro's U is 0 and every DIS score it returns is NA
  (``benchmarks/risk_measures.py``, 100 000 records on 5 keys). Here U is every row
  unique on all keys, the quantity of [4]_.
* sdcMicro pads one or two keys with constant dummy columns (and warns); here m is the
  number of keys given.
* sdcMicro computes DIS and Q in single precision (DIS scores agree to ~1e-8); here double.

References
----------
.. [1] A. M. Manning, D. J. Haglin, J. A. Keane, "A recursive search algorithm for
   statistical disclosure assessment", Data Mining and Knowledge Discovery 16 (2008)
   165-196.
.. [2] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using
   the R package sdcMicro", Journal of Statistical Software 67(4) (2015); sdcMicro 5.8.1,
   ``R/suda2.R`` and ``src/Suda2.h``.
.. [3] M. J. Elliot, A. M. Manning, R. W. Ford, "A computational algorithm for handling the
   special uniques problem", International Journal of Uncertainty, Fuzziness and
   Knowledge-Based Systems 10(5) (2002) 493-509.
.. [4] C. J. Skinner, M. J. Elliot, "A measure of disclosure risk for microdata", Journal of
   the Royal Statistical Society B 64(4) (2002) 855-867.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from sdcflow.core.jit import cached_njit
from sdcflow.core.risk._checks import as_2d, in_range
from sdcflow.errors import DataError, ParameterError

__all__ = ["Suda2Result", "suda2"]


@dataclass(frozen=True)
class Suda2Result:
    """What :func:`suda2` returns (n records, m keys, M = ``max_size``).

    Attributes
    ----------
    msu_counts : ndarray of int, shape (n, M)
        ``msu_counts[i, k - 1]``: record i's number of MSUs of size k.
    score : ndarray of float, shape (n,)
        SUDA score (sdcMicro ``score``).
    dis_score : ndarray of float, shape (n,)
        DIS-SUDA score (sdcMicro ``disScore``).
    contribution : ndarray of float, shape (n, m)
        Share of each key in the record's score (sdcMicro ``contributionPercent``; 0 for a
        record without MSU). A row sums to the mean MSU size weighted by MSU weight, not 1.
    attribute_contribution : ndarray of float, shape (m,)
        Percent of the file's total score held by each key (sdcMicro
        ``attribute_contributions$contribution``); 0 when no record has an MSU.
    dis : float
        DIS, the estimated probability that a sample unique is a population unique.
    n_unique : int
        U, records unique on all keys.
    n_pair : int
        P, records in classes of exactly two identical rows.
    """

    msu_counts: np.ndarray
    score: np.ndarray
    dis_score: np.ndarray
    contribution: np.ndarray
    attribute_contribution: np.ndarray
    dis: float
    n_unique: int
    n_pair: int


_DENSE_CAP_MIN = 1 << 16  # scratch entries for the dense class counts, at least


@cached_njit(nogil=True)
def _dense_codes(
    vals: np.ndarray, miss: np.ndarray, complete: bool, cap: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense per-key codes of integer keys by a presence table of each key's range.

    ``vals`` (n, m) int64 and ``miss`` (n, m) bool (``complete``: no cell is missing, and
    the loops skip the mask); returns codes (m, n) int32 (0.. for the observed values in
    increasing order, then one code shared by every missing cell), cardinalities (m,) and
    ``ok`` (m,): False for a key whose range exceeds ``cap`` (its codes are left for
    ``np.unique``).
    """
    n, m = vals.shape
    codes = np.empty((m, n), np.int32)
    card = np.zeros(m, np.int64)
    ok = np.ones(m, np.bool_)
    lo = np.zeros(m, np.int64)
    hi = np.full(m, -1, np.int64)
    seen = np.zeros(m, np.bool_)
    any_missing = np.zeros(m, np.bool_)
    if complete:
        for j in range(m):
            lo[j] = vals[0, j]
            hi[j] = vals[0, j]
            seen[j] = True
        for i in range(n):  # row by row: vals is C-ordered
            for j in range(m):
                v = vals[i, j]
                if v < lo[j]:
                    lo[j] = v
                elif v > hi[j]:
                    hi[j] = v
    else:
        for i in range(n):
            for j in range(m):
                if miss[i, j]:
                    any_missing[j] = True
                    continue
                v = vals[i, j]
                if not seen[j]:
                    lo[j] = v
                    hi[j] = v
                    seen[j] = True
                elif v < lo[j]:
                    lo[j] = v
                elif v > hi[j]:
                    hi[j] = v
    offset = np.zeros(m + 1, np.int64)  # key j's presence table: offset[j]..offset[j + 1]
    for j in range(m):
        if seen[j] and float(hi[j]) - float(lo[j]) >= cap:  # float: hi - lo may overflow
            ok[j] = False
        span = hi[j] - lo[j] + 1 if seen[j] and ok[j] else 0
        offset[j + 1] = offset[j] + span
    rank = np.zeros(offset[m], np.int64)
    for j in range(m):
        if not ok[j]:
            continue
        base = offset[j] - lo[j]
        if complete:
            for i in range(n):
                rank[base + vals[i, j]] = 1
        else:
            for i in range(n):
                if not miss[i, j]:
                    rank[base + vals[i, j]] = 1
        c = 0
        for t in range(offset[j], offset[j + 1]):
            if rank[t]:
                rank[t] = c
                c += 1
        card[j] = c + 1 if any_missing[j] else c
        if complete:
            for i in range(n):
                codes[j, i] = rank[base + vals[i, j]]
        else:
            for i in range(n):
                codes[j, i] = c if miss[i, j] else rank[base + vals[i, j]]
    return codes, card, ok


def _codes(keys: np.ndarray, missing: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense per-key codes (m, n) int32, their cardinalities (m,) and the missing mask (n, m).

    Every missing cell of a key (NaN, or equal to ``missing``) gets one code of its own, as
    sdcMicro's NA -> missing; only equality of codes matters to the search.
    """
    is_float = np.issubdtype(keys.dtype, np.floating)
    nan = np.isnan(keys) if is_float else None
    miss = nan.copy() if is_float else np.zeros(keys.shape, bool)
    if missing is not None:
        miss |= keys == missing
    n, m = keys.shape
    cap = max(8 * n, _DENSE_CAP_MIN)
    # whole floats beyond 2^53 are not exact int64: np.unique takes those keys
    exact = not is_float or not (np.abs(np.where(miss, 0.0, keys)) > 2.0**53).any()
    if exact:
        vals = np.where(miss, 0, keys) if is_float else keys
        vals = np.ascontiguousarray(vals, dtype=np.int64)
        codes, card, ok = _dense_codes(vals, miss, not miss.any(), cap)
    else:
        codes, card, ok = np.empty((m, n), np.int32), np.zeros(m, np.int64), np.zeros(m, bool)
    for j in np.flatnonzero(~ok):
        col = np.where(miss[:, j], np.inf, keys[:, j].astype(np.float64))
        u, inv = np.unique(col, return_inverse=True)
        codes[j] = inv.reshape(-1)
        card[j] = u.shape[0]
    return codes, card, miss


@cached_njit(nogil=True)
def _first_level(
    codes: np.ndarray,
    weight: np.ndarray,
    card: np.ndarray,
    miss: np.ndarray,
    w1: float,
    msu: np.ndarray,
    contrib: np.ndarray,
    gid: np.ndarray,
    bits: np.ndarray,
) -> int:
    """Classes of each single key: ``gid[j, i]`` = row i's code on key j; bit i of
    ``bits[j]`` (zeros, (m, ceil(n / 64))) set when row i (of ``weight[i]`` records) shares
    its class. Counts the 1-MSUs (unique, not missing) into ``msu`` / ``contrib``. Returns
    the number of classes of two records or more."""
    m, n = codes.shape
    shared = 0
    for j in range(m):
        cnt = np.zeros(card[j], np.int64)
        for i in range(n):
            cnt[codes[j, i]] += weight[i]
        for c in range(card[j]):
            if cnt[c] >= 2:
                shared += 1
        for i in range(n):
            c = codes[j, i]
            gid[j, i] = c
            if cnt[c] >= 2:
                bits[j, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
            elif not miss[i, j]:
                msu[i, 0] += 1
                contrib[i, j] += w1
    return shared


@cached_njit(nogil=True)
def _msu(
    r: int, s: int, subs: np.ndarray, miss: np.ndarray, w: float, msu: np.ndarray, c: np.ndarray
) -> None:
    """Record r, unique on subset s and on none of its subsets: an MSU unless it lacks a key."""
    k = subs.shape[1]
    for t in range(k):
        if miss[r, subs[s, t]]:
            return
    msu[r, k - 1] += 1
    for t in range(k):
        c[r, subs[s, t]] += w


@cached_njit(nogil=True)
def _next_level(
    codes: np.ndarray,
    weight: np.ndarray,
    card: np.ndarray,
    miss: np.ndarray,
    prev: np.ndarray,
    prev_bits: np.ndarray,
    prev_groups: np.ndarray,
    subs: np.ndarray,
    drops: np.ndarray,
    w_k: float,
    msu: np.ndarray,
    contrib: np.ndarray,
    cur: np.ndarray,
    cur_bits: np.ndarray,
    cur_groups: np.ndarray,
    cnt: np.ndarray,
    ids: np.ndarray,
    lst: np.ndarray,
    kbuf: np.ndarray,
    compact: bool,
) -> int:
    """Classes and MSUs of the key subsets of one size k from those of size k - 1.

    ``prev`` (P, n): class ids on the (k-1)-subsets, valid where bit i of ``prev_bits[p]``
    (P, ceil(n / 64)) says row i shares its class; ``prev_groups`` (P,): a bound on each
    subset's ids. ``subs`` (S, k): the k-subsets' keys, ascending; ``drops[s, t]``: the row
    of ``prev`` holding ``subs[s]`` without its t-th key (t = k - 1: the parent). Writes
    ``cur``, ``cur_bits`` (zeros) and ``cur_groups`` as ``prev`` one size up. ``cnt``
    (zeros) and ``ids`` (-1) are scratch tables of equal size, left as found; ``lst`` and
    ``kbuf`` (n,). ``compact``: every key space (the product of all cardinalities) fits
    ``cnt``, so a class's key serves as its id and ``ids`` is not used. Returns a positive
    number when some class of some k-subset holds two records or more, else 0.
    """
    n_sub, k = subs.shape
    n_words = prev_bits.shape[1]
    one = np.uint64(1)
    total = 0
    for s in range(n_sub):
        j = subs[s, k - 1]
        par = drops[s, k - 1]
        cj = card[j]
        gp = prev[par]
        row = cur[s]
        bits = cur_bits[s]
        dense = prev_groups[par] * cj <= cnt.shape[0]
        # a record unique on some (k-1)-subset is unique on s and shares no class with any
        # other record: only records shared on every (k-1)-subset are grouped (the AND of
        # their bit sets, 64 rows a word), and those that come out unique are exactly the
        # candidates of [1] (property 2)
        a = 0
        for wi in range(n_words):
            word = prev_bits[drops[s, 0], wi]
            for t in range(1, k):
                word &= prev_bits[drops[s, t], wi]
            while word != 0:
                r = wi * 64 + np.int64(trailing_zeros(word))
                word &= word - one
                key = gp[r] * cj + codes[j, r]  # class on s = (class on parent, code on j)
                lst[a] = r
                kbuf[a] = key
                a += 1
                if dense:
                    cnt[key] += weight[r]
        nid = 0
        if a > 0 and compact:
            # every key space fits the table: a class keeps its key (code on the parent's
            # keys in mixed radix, then on j) as its id, no renumbering
            for t in range(a):
                key = kbuf[t]
                r = lst[t]
                if cnt[key] >= 2:
                    row[r] = key
                    bits[r >> 6] |= one << np.uint64(r & 63)
                    nid = 1
                else:
                    _msu(r, s, subs, miss, w_k, msu, contrib)
            for t in range(a):
                cnt[kbuf[t]] = 0
        elif a > 0 and dense:
            for t in range(a):
                key = kbuf[t]
                r = lst[t]
                if cnt[key] >= 2:
                    if ids[key] < 0:
                        ids[key] = nid
                        nid += 1
                    row[r] = ids[key]
                    bits[r >> 6] |= one << np.uint64(r & 63)
                else:
                    _msu(r, s, subs, miss, w_k, msu, contrib)
            for t in range(a):
                cnt[kbuf[t]] = 0
                ids[kbuf[t]] = -1
        elif a > 0:  # key space beyond the scratch tables: group by sorting
            order = np.argsort(kbuf[:a], kind="mergesort")
            t = 0
            while t < a:
                u = t + 1
                size = weight[lst[order[t]]]
                while u < a and kbuf[order[u]] == kbuf[order[t]]:
                    size += weight[lst[order[u]]]
                    u += 1
                if size >= 2:
                    for v in range(t, u):
                        r = lst[order[v]]
                        row[r] = nid
                        bits[r >> 6] |= one << np.uint64(r & 63)
                    nid += 1
                else:
                    _msu(lst[order[t]], s, subs, miss, w_k, msu, contrib)
                t = u
        cur_groups[s] = prev_groups[par] * cj if compact else nid
        total += nid
    return total


@cached_njit(nogil=True)
def _row_classes(
    codes: np.ndarray, card: np.ndarray, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Each record's class of identical rows, ids 0..D-1 in order of first appearance.

    Classes are refined one key at a time through the ``ids`` table (-1, left as found);
    returns (class ids (n,), first record of each class (D,), class sizes (D,), D), or
    (_, _, _, -1) when a key space outgrows the table."""
    m, n = codes.shape
    size = ids.shape[0]
    g = np.empty(n, np.int64)
    key = np.empty(n, np.int64)
    groups = 1
    j = 0
    first_pass = True
    while j < m:
        # the keys j..stop-1 join the class in one pass while their key space fits the table
        stop = j
        space = groups
        while stop < m and space * card[stop] <= size:
            space *= card[stop]
            stop += 1
        if stop == j:
            return g, g[:0], g[:0], -1
        for r in range(n):
            v = 0 if first_pass else g[r]
            for t in range(j, stop):
                v = v * card[t] + codes[t, r]
            key[r] = v
        nid = 0
        for r in range(n):
            if ids[key[r]] < 0:
                ids[key[r]] = nid
                nid += 1
            g[r] = ids[key[r]]
        for r in range(n):
            ids[key[r]] = -1
        groups = nid
        first_pass = False
        j = stop
    first = np.empty(groups, np.int64)
    count = np.zeros(groups, np.int64)
    c = 0
    for r in range(n):
        if g[r] == c:  # ids count up from 0 in order of first appearance
            first[c] = r
            c += 1
        count[g[r]] += 1
    return g, first, count, groups


def _weights(m: int, max_size: int) -> np.ndarray:
    """w_k = prod_{j=k}^{M-1} (m - j), k = 1..M  ([3] section 3; (m - k)! when M = m)."""
    return np.array(
        [math.prod(m - j for j in range(k, max_size)) for k in range(1, max_size + 1)], float
    )


def suda2(
    keys: np.ndarray,
    *,
    missing: float | None = -1,
    max_size: int | None = None,
    dis_fraction: float = 0.01,
) -> Suda2Result:
    """Minimal sample uniques, SUDA and DIS-SUDA scores and key contributions.

    Parameters
    ----------
    keys : array_like of int, shape (n, m)
        Key codes of n records on m categorical keys (any integer codes; floats must be
        whole numbers, NaN counts as missing).
    missing : int or None, default -1
        The code of a missing value (sdcflow's key codes use -1; sdcMicro's default is
        -999). None: no code is missing (NaN still is).
    max_size : int, optional
        Largest MSU size searched, 1 <= max_size <= m; default m (as sdcMicro).
    dis_fraction : float, default 0.01
        Sampling fraction f of DIS, 0 < f < 1 (sdcMicro ``DisFraction``).

    Returns
    -------
    Suda2Result

    Raises
    ------
    DataError
        ``keys`` not a 2-D array of whole numbers.
    ParameterError
        ``max_size`` or ``dis_fraction`` out of range.

    Notes
    -----
    See the module docstring for the search, the equations and the differences from
    sdcMicro. Memory: the class ids of two consecutive subset sizes,
    ``(C(m, k) + C(m, k + 1)) * D`` 32-bit integers at the widest size k (D distinct rows),
    and two tables of at most ``8 n`` 32-bit integers.

    Examples
    --------
    >>> r = suda2(np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0]]))
    >>> r.score.tolist()
    [2.0, 4.0, 2.0]
    """
    raw = np.asarray(keys)
    if raw.dtype.kind not in "biuf":
        raise DataError(
            "keys must hold integer codes; code categories first "
            "(np.unique(column, return_inverse=True))",
            field="keys",
        )
    keys = as_2d(raw, "keys", dtype=raw.dtype.type)
    if keys.dtype.kind == "f":
        fin = keys[~np.isnan(keys)]
        if not (np.isfinite(fin).all() and (fin == np.round(fin)).all()):
            raise DataError(
                "keys must hold whole-number codes (NaN allowed as missing); code categories "
                "with np.unique(column, return_inverse=True)",
                field="keys",
            )
    n, m = keys.shape
    if max_size is None:
        max_size = m
    if (
        isinstance(max_size, bool)
        or not isinstance(max_size, int | np.integer)
        or not (1 <= max_size <= m)
    ):
        raise ParameterError(
            f"max_size must be an integer between 1 and the number of keys ({m})",
            field="max_size",
        )
    max_size = int(max_size)
    f = in_range(dis_fraction, "dis_fraction", 0.0, 1.0, closed="none")
    if missing is not None:
        try:
            missing = float(missing)
        except (TypeError, ValueError):
            raise ParameterError("missing must be a number or None", field="missing") from None

    codes, card, miss = _codes(keys, missing)
    w = _weights(m, max_size)
    # the class tables index (class, code) pairs: no more entries than the key space, and
    # 8 n at most (beyond, the kernels sort)
    space = math.prod(int(c) for c in card)
    size = max(min(8 * n, space), 1)
    compact = space <= size
    cnt = np.zeros(size, np.int32)
    ids = np.full(size, -1, np.int32)

    # Identical rows share every class and every MSU: the search runs on the D distinct rows,
    # each weighted by its count f_k (a row of weight >= 2 is never unique, yet counts).
    row, first, fk_rows, n_rows = _row_classes(codes, card, ids)
    if n_rows < 0:
        _, first, row, fk_rows = np.unique(
            codes.T, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
        row = row.reshape(-1)
        n_rows = first.shape[0]
    dcodes = np.ascontiguousarray(codes[:, first])
    dmiss = miss[first]
    weight = fk_rows.astype(np.int64)
    msu_rows = np.zeros((n_rows, max_size), np.int64)
    contrib_rows = np.zeros((n_rows, m))
    lst = np.empty(n_rows, np.int64)
    kbuf = np.empty(n_rows, np.int64)

    # size 1: class ids, and a bit set of the rows that share their class
    n_words = (n_rows + 63) // 64
    prev = np.empty((m, n_rows), np.int32)
    prev_bits = np.zeros((m, n_words), np.uint64)
    shared = _first_level(
        dcodes, weight, card, dmiss, float(w[0]), msu_rows, contrib_rows, prev, prev_bits
    )
    prev_groups = card.copy()
    index = {(j,): j for j in range(m)}
    for k in range(2, max_size + 1):
        if shared == 0:
            break  # every record unique on every (k-1)-subset: no MSU of size >= k
        level = list(combinations(range(m), k))
        subs = np.array(level, np.int64)
        drops = np.array([[index[s[:t] + s[t + 1 :]] for t in range(k)] for s in level], np.int64)
        cur = np.empty((len(level), n_rows), np.int32)
        cur_bits = np.zeros((len(level), n_words), np.uint64)
        cur_groups = np.zeros(len(level), np.int64)
        shared = _next_level(
            dcodes, weight, card, dmiss, prev, prev_bits, prev_groups, subs, drops,
            float(w[k - 1]), msu_rows, contrib_rows, cur, cur_bits, cur_groups, cnt, ids, lst,
            kbuf, compact,
        )  # fmt: skip
        prev, prev_bits, prev_groups = cur, cur_bits, cur_groups
        index = {s: i for i, s in enumerate(level)}

    # scores on the distinct rows, then one gather per result (every record its row's)
    # sums of whole numbers, exact in any order; elementwise (a BLAS call for these small
    # products costs more than the product)
    score_rows = (msu_rows * w).sum(axis=1)  # s_i = sum_k (#MSU_k) w_k  [3]
    contribution_rows = np.divide(
        contrib_rows,
        score_rows[:, None],
        out=np.zeros_like(contrib_rows),
        where=score_rows[:, None] > 0,
    )
    total = (weight * score_rows).sum()
    attribute = (
        100.0 * (contrib_rows * weight[:, None]).sum(axis=0) / total if total > 0 else np.zeros(m)
    )

    # DIS [4] eq. 8 on whole rows, a missing code a value of its own
    n_unique = int((fk_rows == 1).sum())
    n_pair = 2 * int((fk_rows == 2).sum())
    den = n_unique * f + n_pair * (1.0 - f)
    dis = n_unique * f / den if den > 0 else 0.0
    q = 1.0 + (8.0 - m) / 20.0  # sdcMicro Suda2.h
    dis_rows = np.zeros(n_rows)
    pos = score_rows > 0  # rows of weight 1 only: a row of several records is never unique
    if pos.any() and dis > 0:
        sq = score_rows[pos] ** q
        adj = (1.0 / sq).sum()
        dis_rows[pos] = 1.0 / (1.0 + (n_unique / dis - n_unique) / (sq * adj))
    # every record takes its row's results; only the few records with an MSU hold nonzero ones
    score = np.take(score_rows, row)
    held = np.flatnonzero(score > 0)
    msu = np.zeros((n, max_size), np.int64)
    msu[held] = msu_rows[row[held]]
    contribution = np.zeros((n, m))
    contribution[held] = contribution_rows[row[held]]
    dis_score = np.zeros(n)
    dis_score[held] = dis_rows[row[held]]
    return Suda2Result(msu, score, dis_score, contribution, attribute, float(dis), n_unique, n_pair)
