"""SUDA2: minimal sample uniques, SUDA and DIS-SUDA scores, key contributions.

A *sample unique* of record i on a set S of keys is a combination of i's values on S that no
other record shares; it is *minimal* (an MSU) when no proper subset of S is unique for i
[1]_. Records with small MSUs are the special uniques an intruder can single out.

Search
------
The MSUs are found level by level over the key subsets S of size 1..``max_size`` (the
lattice SUDA2 searches, [1]_ section 4), with the pruning that makes the cost linear in the
records still at stake rather than in all records:

* record i's class on S is the class on S' = S minus its last key, split by that key. A
  record unique on S' stays unique on S, so only the records in non-unique classes of S' are
  re-grouped (one integer sort of those records per S); uniqueness is monotone [1]_
  (property 1), so the non-unique records shrink as S grows;
* only records that *become* unique on S (unique on S, not on S') are candidates, and a
  candidate is an MSU on S when it is unique on none of the |S| subsets S minus one key
  ([1]_ property 2: checking the subsets one size down suffices);
* the search stops at the first size where no class has two records left.

The cost is O(sum over S of n_S log n_S) with n_S the records not unique on S', at most
``sum_{k <= max_size} C(m, k)`` sorts; for the 5 to 10 keys of a disclosure scenario that
is far below SUDA2's worst case and below naive per-record enumeration (O(n^2 2^m)). For
many keys (m > 15), SUDA2's item-level recursion would prune more.

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


def _codes(keys: np.ndarray, missing: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense per-key codes (n, m), their cardinalities (m,) and the missing mask (n, m)."""
    nan = np.isnan(keys) if np.issubdtype(keys.dtype, np.floating) else np.zeros(keys.shape, bool)
    miss = nan.copy()
    if missing is not None:
        miss |= keys == missing
    vals = np.where(nan, np.inf, keys)  # every NaN one value, as sdcMicro's NA -> missing
    if missing is not None:
        vals = np.where(miss, np.inf, vals)
    n, m = keys.shape
    codes = np.empty((n, m), np.int64)
    card = np.empty(m, np.int64)
    for j in range(m):
        u, inv = np.unique(vals[:, j], return_inverse=True)
        codes[:, j] = inv.reshape(-1)
        card[j] = u.shape[0]
    return codes, card, miss


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
    sdcMicro. Memory: the class codes of two consecutive subset sizes,
    ``(C(m, k) + C(m, k + 1)) * n`` integers at the widest size k.

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
    msu = np.zeros((n, max_size), np.int64)
    raw_contrib = np.zeros((n, m))

    # level 1: class ids, -1 for a record alone in its class
    prev: dict[tuple[int, ...], np.ndarray] = {}
    for j in range(m):
        cnt = np.bincount(codes[:, j], minlength=card[j])
        gid = np.where(cnt[codes[:, j]] >= 2, codes[:, j], -1)
        prev[(j,)] = gid
        new = np.flatnonzero((gid < 0) & ~miss[:, j])  # 1-MSUs
        msu[new, 0] += 1
        raw_contrib[new, j] += w[0]

    for k in range(2, max_size + 1):
        if all((g < 0).all() for g in prev.values()):
            break  # every record unique on every (k-1)-subset: no MSU of size >= k
        cur: dict[tuple[int, ...], np.ndarray] = {}
        for s in combinations(range(m), k):
            parent, j = s[:-1], s[-1]
            gp = prev[parent]
            idx = np.flatnonzero(gp >= 0)
            gid = np.full(n, -1, np.int64)
            if idx.size:
                comb = gp[idx] * card[j] + codes[idx, j]
                _, inv, cnt = np.unique(comb, return_inverse=True, return_counts=True)
                inv = inv.reshape(-1)
                keep = cnt[inv] >= 2
                gid[idx[keep]] = inv[keep]
                cand = idx[~keep]  # unique on s, not on its parent
                # an MSU holds no missing value and is unique on no (k-1)-subset [1] (prop. 2)
                ok = ~miss[cand][:, list(s)].any(axis=1)
                for drop in range(k - 1):
                    sub = s[:drop] + s[drop + 1 :]
                    ok &= prev[sub][cand] >= 0
                new = cand[ok]
                if new.size:
                    msu[new, k - 1] += 1
                    raw_contrib[np.ix_(new, list(s))] += w[k - 1]
            cur[s] = gid
        prev = cur

    score = msu @ w  # s_i = sum_k (#MSU_k) w_k  [3]
    contribution = np.divide(
        raw_contrib, score[:, None], out=np.zeros_like(raw_contrib), where=score[:, None] > 0
    )
    total = score.sum()
    attribute = 100.0 * raw_contrib.sum(axis=0) / total if total > 0 else np.zeros(m)

    # DIS [4] eq. 8 on whole rows, a missing code a value of its own
    _, row_inv, row_cnt = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    fk = row_cnt[row_inv.reshape(-1)]
    n_unique = int((fk == 1).sum())
    n_pair = int((fk == 2).sum())
    den = n_unique * f + n_pair * (1.0 - f)
    dis = n_unique * f / den if den > 0 else 0.0
    q = 1.0 + (8.0 - m) / 20.0  # sdcMicro Suda2.h
    dis_score = np.zeros(n)
    pos = score > 0
    if pos.any() and dis > 0:
        sq = score[pos] ** q
        adj = (1.0 / sq).sum()
        dis_score[pos] = 1.0 / (1.0 + (n_unique / dis - n_unique) / (sq * adj))
    return Suda2Result(msu, score, dis_score, contribution, attribute, float(dis), n_unique, n_pair)
