"""Anonymity of a released file: crisp k-anonymity, l-diversity, probabilistic k-anonymity.

The released keys may be numeric or categorical and may hold missing values: a value the
file does not have, or one that local suppression removed. Two conventions count how many
released records share a record's keys:

``"identical"`` (the default, and what every gate of sdcflow counts)
    Record j counts for record i when their released rows are identical over every key, a
    missing or suppressed value being a value of its own (a blank equals only a blank). The
    frequency f_i is the size of record i's class of identical rows, and the file is
    k-anonymous when every class holds at least k records [1]. This is the count an intruder
    cannot get around: an intruder who knows a target's keys and finds the one released row
    that carries them exactly has found the target, however many blanked rows are also
    consistent with it -- a blanked row is consistent with many targets and unlikely to be
    any one of them.

``"missing_matches_any"`` (sdcMicro's ``freqCalc`` [4], reported beside for comparison)
    Record j *matches* record i when, on every key, their released values are equal or one
    of them is missing; f_i is the number of records matching i. Without missing values the
    two conventions agree. With them this count is never smaller, and it can be far larger
    than what protects a record: with a key unique per record, blanking it on k - 1 records
    makes every record "match" k records while every other record is published with its
    unique value.

Matching is not transitive once values are missing, so under ``"missing_matches_any"``
k-anonymity is a property of every record's f_i, not of a partition; counting it never
compares all pairs of records: records are grouped by their pattern of missing keys, and for
two patterns P, Q a record of P matches a record of Q exactly when they agree on the keys
missing in neither, which one hash-and-count pass over the two groups finds. The cost is
O(M^2 n) for M distinct missing patterns (M = 1 without missing values), after identical
rows are merged; a pair of patterns of very different sizes is joined through a sorted index
of the larger instead, at the cost of the smaller one's rows and their candidate matches.
Under ``"identical"`` counting is one integer sort of the rows.

Distinct l-diversity reads the "well-represented" values of [2] as at least l distinct
sensitive values per class; entropy l-diversity asks ``-sum_s p(q, s) log p(q, s) >= log l``
in every class q [2]. Probabilistic k-anonymity asks that no record be re-identified with
probability above 1/k [3].

References
----------
[1] L. Sweeney, "k-anonymity: a model for protecting privacy", International Journal of
    Uncertainty, Fuzziness and Knowledge-Based Systems 10(5) (2002) 557-570.
[2] A. Machanavajjhala, D. Kifer, J. Gehrke, M. Venkitasubramaniam, "l-Diversity: privacy
    beyond k-anonymity", ACM Transactions on Knowledge Discovery from Data 1(1) (2007),
    article 3.
[3] J. Soria-Comas, J. Domingo-Ferrer, "Probabilistic k-anonymity through microaggregation and
    data swapping", Proc. IEEE International Conference on Fuzzy Systems (FUZZ-IEEE 2012),
    2012.
[4] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using the
    R package sdcMicro", Journal of Statistical Software 67(4) (2015) 1-36,
    doi:10.18637/jss.v067.i04 (frequency counts in which a missing value stands for any
    category: ``freqCalc``, sdcMicro 5.8).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse

from sdcflow.core.distinct import distinct_rows, row_ids
from sdcflow.errors import ParameterError

Convention = Literal["identical", "missing_matches_any"]
#: The conventions, the default first (module docstring).
CONVENTIONS: tuple[Convention, ...] = ("identical", "missing_matches_any")


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ParameterError(
            f"convention must be one of {', '.join(CONVENTIONS)}, not {convention!r}",
            field="convention",
        )


def key_codes(released: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Integer code of every released key value; -1 where the value is missing.

    Equal values get equal codes within a column (``40`` and ``40.0`` too); ``None``, NaN and
    ``pd.NA`` are missing. Shapes: released (n, d) -> (n, d) int64.
    """
    frame = pd.DataFrame(released)
    if frame.shape[1] == 0:
        raise ParameterError("the released file has no quasi-identifier columns")
    codes = np.empty(frame.shape, dtype=np.int64)
    for j in range(frame.shape[1]):
        codes[:, j] = pd.factorize(frame.iloc[:, j], use_na_sentinel=True)[0]
    return codes


def _group_sum(ids: np.ndarray, values: np.ndarray | sparse.csr_matrix, groups: int):
    """Sum of ``values`` rows per id: (groups, m), dense or sparse like ``values``."""
    if sparse.issparse(values):
        ind = sparse.csr_matrix(
            (np.ones(ids.size), (ids, np.arange(ids.size))), shape=(groups, ids.size)
        )
        return (ind @ values).tocsr()
    out = np.empty((groups, values.shape[1]))
    for c in range(values.shape[1]):  # bincount: one pass per column, not np.add.at
        out[:, c] = np.bincount(ids, weights=values[:, c], minlength=groups)
    return out


#: The smallest patterns are pooled: the pool is matched against itself by direct comparison
#: (at most ``POOL_MAX`` rows) and against each other pattern by one join, instead of one
#: join per pair of patterns (M^2 of them). ``SMALL_PATTERN`` None pools the patterns that
#: minimize the estimated cost (``_pooled``); an int pools those of fewer rows.
SMALL_PATTERN: int | None = None
POOL_MAX = 20_000
#: Estimated seconds of one join of two patterns (Python and numpy overhead) and of one cell
#: of the direct comparison, for ``_pooled``: a join costs far more than a cell, and
#: only their ratio matters, not the machine's speed.
JOIN_SECONDS = 3.5e-4
CELL_SECONDS = 5e-9
#: An index join is used when it finds fewer candidate pairs than this share of the rows a
#: hash join of the same patterns would sort (0: never, every pair of patterns hashed).
INDEX_JOIN_SHARE = 0.5
#: Matched pairs from index joins held before they are added into the sums (at least n, so
#: that building the (n, n) match matrix stays amortized): without a bound they pile up over
#: all M^2 / 2 joins, as many as the matches themselves (n M when each record matches one
#: record of every pattern), where a hash join holds only its own group sums.
PAIR_BUFFER = 1 << 21


class _SortedIndex:
    """The rows of one pattern of missing keys sorted by each key, built on first use."""

    def __init__(self, codes: np.ndarray, rows: np.ndarray) -> None:
        self.codes, self.rows = codes, rows
        self.missing = codes[rows[0]] < 0  # the pattern (every row has it)
        self.by_key: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def sorted_by(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``rows`` sorted by the key's code, those codes sorted)."""
        if key not in self.by_key:
            col = self.codes[self.rows, key]
            order = np.argsort(col, kind="stable")
            self.by_key[key] = (order, col[order])
        return self.by_key[key]


def _matches(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise match of code rows (missing matches any). Shapes: (m, d), (m, d) -> (m,)."""
    return ((a == b) | (a < 0) | (b < 0)).all(axis=-1)


def _index_join(
    codes: np.ndarray, targets: np.ndarray, index: _SortedIndex
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every match between the rows ``targets`` (any patterns) and the indexed pattern's rows.

    Each target row looks up, in the index on one key that both have, the rows sharing its
    value there (the key where it has the fewest), and is compared with them on every key. A
    target row with no key in common with the pattern matches all of its rows.

    Returns ``(i, j, whole)``: matched pairs (i a target, j an indexed row) and the target
    rows that match every indexed row; None when the candidates would outnumber
    ``INDEX_JOIN_SHARE`` times the rows (a hash join is cheaper then).
    Shapes: targets (t,) -> (m,), (m,), (w,) row numbers.
    """
    rows = index.rows
    keys = np.flatnonzero(~index.missing)
    count = np.full((targets.size, max(keys.size, 1)), np.iinfo(np.int64).max)
    lows = np.zeros_like(count)
    for c, key in enumerate(keys):
        _, values = index.sorted_by(int(key))
        v = codes[targets, key]
        lo = np.searchsorted(values, v, side="left")
        n_c = np.searchsorted(values, v, side="right") - lo
        present = v >= 0
        count[present, c] = n_c[present]
        lows[:, c] = lo
    choice = count.argmin(axis=1)
    best = count[np.arange(targets.size), choice]
    whole = best == np.iinfo(np.int64).max  # no key in common with the pattern
    total = int(best[~whole].sum())
    if total > INDEX_JOIN_SHARE * (targets.size + rows.size):
        return None
    i_parts, j_parts = [], []
    for c, key in enumerate(keys):
        mine = np.flatnonzero(~whole & (choice == c))
        if not mine.size:
            continue
        order, _ = index.sorted_by(int(key))
        n_c, lo = count[mine, c], lows[mine, c]
        offset = np.arange(int(n_c.sum())) - np.repeat(np.cumsum(n_c) - n_c, n_c)
        i_parts.append(targets[np.repeat(mine, n_c)])
        j_parts.append(rows[order[np.repeat(lo, n_c) + offset]])
    empty = np.zeros(0, dtype=np.int64)
    i = np.concatenate(i_parts) if i_parts else empty
    j = np.concatenate(j_parts) if j_parts else empty
    keep = _matches(codes[i], codes[j])
    return i[keep], j[keep], targets[whole]


def _pool_sums(codes: np.ndarray, pool: np.ndarray, values: Any) -> Any:
    """For every row of ``pool``, the sum of ``values`` over the rows of ``pool`` matching it
    (itself included), by direct comparison in blocks of about a million cells; never a
    list of pairs, which a pool of rows with few, common values would make quadratic.
    Shapes: pool (p,), values (n, m) dense or sparse -> (p, m) of the same kind."""
    P = codes[pool]
    source = values[pool]
    step = max(1, 1_000_000 // max(pool.size * P.shape[1], 1))
    blocks = []
    for lo in range(0, pool.size, step):
        block = sparse.csr_matrix(_matches(P[lo : lo + step, None, :], P[None, :, :]))
        blocks.append(block.astype(np.float64) @ source)
    if sparse.issparse(source):
        return sparse.vstack(blocks).tocsr()
    return np.concatenate([np.asarray(b) for b in blocks])


def _add_all(out: np.ndarray | list, rows: np.ndarray, source: Any, n: int) -> None:
    """Add the column sums of ``source`` to every row of ``rows``: into ``out`` (n, m), or as
    one more sparse part when ``out`` is the list of parts (sparse values). Shapes: rows
    (r,), source (s, m)."""
    total = np.asarray(source.sum(axis=0)).reshape(-1)
    if isinstance(out, list):
        cols = np.flatnonzero(total)
        out.append(
            sparse.coo_matrix(
                (
                    np.tile(total[cols], rows.size),
                    (np.repeat(rows, cols.size), np.tile(cols, rows.size)),
                ),
                shape=(n, total.size),
            )
        )
    else:
        out[rows] += total


def _pooled(sizes: np.ndarray, d: int) -> list[int]:
    """The patterns to pool, given every pattern's number of rows ``sizes`` (M,) and the
    number of keys: with ``SMALL_PATTERN`` None, the smallest patterns whose pooling
    minimizes JOIN_SECONDS x (joins left: B^2 / 2 among the B others, B with the pool) +
    CELL_SECONDS x pool^2 x d, with at most ``POOL_MAX`` rows pooled."""
    if SMALL_PATTERN is not None:
        small = [p for p in range(sizes.size) if sizes[p] < SMALL_PATTERN]
        return small if sizes[small].sum() <= POOL_MAX else []
    order = np.argsort(sizes, kind="stable")  # smallest first
    pooled = np.concatenate([[0], np.cumsum(sizes[order])])  # rows pooled with the s smallest
    others = sizes.size - np.arange(sizes.size + 1)
    cost = JOIN_SECONDS * (others**2 / 2 + others * (pooled > 0))
    cost = cost + CELL_SECONDS * pooled.astype(np.float64) ** 2 * d
    cost[pooled > POOL_MAX] = np.inf
    s = int(np.argmin(cost))
    return sorted(order[:s].tolist()) if s > 1 else []


def _matching_sums_unique(
    codes: np.ndarray, values: np.ndarray | sparse.csr_matrix
) -> np.ndarray | sparse.csr_matrix:
    """``out[i] = sum of values[j] over the rows j matching row i`` (missing matches any).

    Rows are grouped by their pattern of missing keys. For two patterns P and Q, rows of P
    and of Q match exactly when they agree on the keys missing in neither: one hash-and-count
    pass over both (:func:`~sdcflow.core.distinct.row_ids`), or, when the common keys are
    selective (the group means of a microaggregation), a lookup of each row of one in a
    sorted index of the other (:func:`_index_join`), so that the largest pattern (the
    complete rows) is not sorted again for every other pattern. The smallest patterns (with
    many keys, most of them) are pooled (``_pooled``) and joined with each larger pattern
    at once, and with one another by direct comparison. Every pair of rows is found by
    exactly one join; sums of :func:`exact_parts` are exact in any order, so the result does
    not depend on which join found a pair.
    Shapes: codes (n, d) with -1 for missing, values (n, m) -> (n, m).
    """
    n = codes.shape[0]
    patterns, pid = distinct_rows((codes < 0).astype(np.int64))
    patterns = patterns.astype(bool)
    order = np.argsort(pid, kind="stable")
    bounds = np.searchsorted(pid[order], np.arange(patterns.shape[0] + 1))
    members = [order[bounds[p] : bounds[p + 1]] for p in range(patterns.shape[0])]
    small = _pooled(np.array([m.size for m in members]), codes.shape[1])
    pool = np.concatenate([members[p] for p in small]) if small else np.zeros(0, np.int64)
    pooled = set(small)
    large = [p for p in range(len(members)) if p not in pooled]
    indexes = {p: _SortedIndex(codes, members[p]) for p in large}
    is_sparse = sparse.issparse(values)
    if is_sparse:
        values = sparse.csr_matrix(values)
        parts: list[sparse.coo_matrix] = []
    else:
        out = np.zeros((n, values.shape[1]))
    both_ways: list[tuple[np.ndarray, np.ndarray]] = []  # pairs (i, j): i gets j's and back
    held = [0]  # pairs in both_ways
    hashed: list[tuple[int, int]] = []

    def add_rows(rows: np.ndarray, sums: Any) -> None:  # sums (r, m) into the rows' sums
        if is_sparse:
            block = sparse.coo_matrix(sums)
            parts.append(
                sparse.coo_matrix(
                    (block.data, (rows[block.row], block.col)), shape=(n, values.shape[1])
                )
            )
        else:
            out[rows] += sums

    def add_pairs() -> None:  # the pairs held so far, into the sums (in any order: exact)
        if not both_ways:
            return
        i = np.concatenate([p[0] for p in both_ways] + [p[1] for p in both_ways])
        j = np.concatenate([p[1] for p in both_ways] + [p[0] for p in both_ways])
        both_ways.clear()
        held[0] = 0
        match = sparse.csr_matrix((np.ones(i.size), (i, j)), shape=(n, n))
        if is_sparse:
            parts.append((match @ values).tocoo())
        else:
            out[:] += match @ values

    def joined(targets: np.ndarray, q: int) -> bool:
        if INDEX_JOIN_SHARE <= 0:  # index joins off: one hash join per pair of patterns
            return False
        found = _index_join(codes, targets, indexes[q])
        if found is None:
            return False
        both_ways.append(found[:2])
        held[0] += found[0].size
        if held[0] >= max(PAIR_BUFFER, n):
            add_pairs()
        if found[2].size:  # every row of found[2] matches every row of the pattern
            _add_all(parts if is_sparse else out, found[2], values[members[q]], n)
            _add_all(parts if is_sparse else out, members[q], values[found[2]], n)
        return True

    for x, a in enumerate(large):
        hashed.append((a, a))
        for b in large[x + 1 :]:
            lo_, hi_ = (a, b) if members[a].size <= members[b].size else (b, a)
            if not joined(members[lo_], hi_):
                hashed.append((a, b))
    if pool.size:
        add_rows(pool, _pool_sums(codes, pool, values))
        for q in large:
            if not joined(pool, q):
                hashed += [(p, q) for p in small]
    for a, b in hashed:
        both = ~(patterns[a] | patterns[b])  # keys present in both patterns
        ra, rb = members[a], members[b]
        rows = ra if a == b else np.concatenate([ra, rb])
        ids = row_ids(codes[rows][:, both])
        groups = int(ids.max()) + 1
        ia = ids[: ra.size]
        ib = ia if a == b else ids[ra.size :]
        pairs = [(ra, ia, rb, ib)] if a == b else [(ra, ia, rb, ib), (rb, ib, ra, ia)]
        for target, t_ids, source, s_ids in pairs:
            add_rows(target, _group_sum(s_ids, values[source], groups)[t_ids])
    add_pairs()
    if is_sparse:
        total = sparse.csr_matrix((n, values.shape[1]))
        for part in parts:
            total = total + part.tocsr()
        return total
    return out


def matching_sums(
    released: pd.DataFrame | np.ndarray,
    values: np.ndarray | sparse.spmatrix,
    *,
    convention: Convention = "identical",
) -> np.ndarray | sparse.csr_matrix:
    """For every record i, the sum of ``values`` over the records that count for it.

    Parameters
    ----------
    released : DataFrame or ndarray of shape (n, d)
        The released keys, a missing value read as ``convention`` says.
    values : ndarray of shape (n, m) or sparse matrix
        What to add up (ones give the frequency f_i, weights the population estimate F_i,
        one-hot sensitive values their counts among the records of i's class).
    convention : {"identical", "missing_matches_any"}
        ``"identical"``: the records whose released row is identical to i's (a missing value
        is a value of its own); ``"missing_matches_any"``: the records matching i, a missing
        value matching any value, as sdcMicro (module docstring).

    Returns
    -------
    ndarray or csr_matrix of shape (n, m)
    """
    return codes_matching_sums(key_codes(released), values, convention=convention)


def codes_matching_sums(
    codes: np.ndarray,
    values: np.ndarray | sparse.spmatrix,
    *,
    convention: Convention = "identical",
) -> np.ndarray | sparse.csr_matrix:
    """:func:`matching_sums` on key codes (:func:`key_codes`: -1 for a missing value).

    Shapes: codes (n, d), values (n, m) -> (n, m).
    """
    _check_convention(convention)
    if values.shape[0] != codes.shape[0]:
        raise ParameterError(
            f"values have {values.shape[0]} rows but the released file has {codes.shape[0]}; "
            "pass one row per released record, in the same order"
        )
    # Identical rows match the same records: count once per distinct row.
    distinct, inverse = distinct_rows(codes)
    if not sparse.issparse(values):
        values = np.asarray(values, dtype=np.float64)
    merged = _group_sum(inverse, values, distinct.shape[0])
    if convention == "identical":  # [1] a class is the records with one released row
        return merged[inverse]
    sums = _matching_sums_unique(distinct, merged)
    return sums[inverse]


def match_counts(
    released: pd.DataFrame | np.ndarray,
    weights: np.ndarray | None = None,
    *,
    convention: Convention = "identical",
) -> tuple[np.ndarray, np.ndarray]:
    """Sample frequency f_i and weighted frequency F_i of every record's key combination.

    ``f_i`` is the number of released records that count for record i (itself included):
    under ``"identical"`` (the default) those whose released row is identical to i's, a
    missing value being a value of its own; under ``"missing_matches_any"`` those matching
    i, a missing value matching any value (module docstring). ``F_i`` is the sum of their
    sampling ``weights`` (the estimated population frequency of sdcMicro's ``freqCalc`` [4]
    with alpha = 1); without weights ``F_i = f_i``. F does not depend on the order of the
    records: it adds up exact sums of parts of the weights (:func:`exact_parts`).

    Shapes: released (n, d), weights (n,) -> f (n,) int64, F (n,) float64.
    """
    _check_convention(convention)
    codes = key_codes(released)
    n = codes.shape[0]
    given = None
    if weights is not None:
        given = np.asarray(weights, dtype=np.float64).reshape(-1)
        if given.size != n or not np.all(np.isfinite(given)) or np.any(given <= 0):
            raise ParameterError("weights must be one finite positive number per released record")
    recent = _RECENT.get()
    known = recent.find(codes, given, convention) if recent is not None else None
    if known is not None:
        return known
    w = np.ones((n, 1)) if given is None else exact_parts(given)
    sums = codes_matching_sums(codes, np.column_stack([np.ones(n), w]), convention=convention)
    F = sums[:, 1]
    for j in range(2, sums.shape[1]):  # the parts' sums, exact, added in one fixed order
        F = F + sums[:, j]
    f = np.rint(sums[:, 0]).astype(np.int64)
    if recent is not None:
        recent.keep(codes, given, convention, f, F)
    return f, F


class _RecentCounts:
    """The results of :func:`match_counts` for the last few key codes, each with the weights
    it was counted with (:func:`counted_once`); the codes are kept once however many weights
    they were counted with (unweighted for k, weighted for risk)."""

    def __init__(self, codes: int = 2, weights: int = 4) -> None:
        self._codes, self._weights = codes, weights
        # [(codes, [(convention, weights or None, f, F), ...]), ...], most recent first
        self._entries: list[tuple[np.ndarray, list[tuple[Any, ...]]]] = []
        self._lock = threading.Lock()

    def _results(self, codes: np.ndarray) -> list[tuple[Any, ...]] | None:
        for kept, results in self._entries:
            if kept.shape == codes.shape and np.array_equal(kept, codes):
                return results
        return None

    def find(
        self, codes: np.ndarray, weights: np.ndarray | None, convention: str
    ) -> tuple[np.ndarray, np.ndarray] | None:
        with self._lock:
            for kept_convention, kept_weights, f, F in self._results(codes) or ():
                if (
                    kept_convention == convention
                    and (kept_weights is None) == (weights is None)
                    and (weights is None or np.array_equal(kept_weights, weights))
                ):
                    return f.copy(), F.copy()
        return None

    def keep(
        self,
        codes: np.ndarray,
        weights: np.ndarray | None,
        convention: str,
        f: np.ndarray,
        F: np.ndarray,
    ) -> None:
        result = (convention, None if weights is None else weights.copy(), f.copy(), F.copy())
        with self._lock:
            results = self._results(codes)
            if results is None:
                results = []
                self._entries = [(codes.copy(), results), *self._entries][: self._codes]
            results.insert(0, result)
            del results[self._weights :]


_RECENT: ContextVar[_RecentCounts | None] = ContextVar("sdcflow_recent_counts", default=None)


@contextmanager
def counted_once() -> Iterator[None]:
    """Inside this block, :func:`match_counts` of the same key codes and weights is computed
    once. A release counts its released keys several times (its disclosure figures, the
    k-anonymity and risk gates, the report), about a second each at a million records. The
    frequencies are a function of the key codes (which records hold equal values) and the
    weights alone, so a result is reused only when both are equal, element for element --
    exactly what counting again would give. The results are dropped at the block's end."""
    token = _RECENT.set(_RecentCounts())
    try:
        yield
    finally:
        _RECENT.reset(token)


def exact_parts(w: np.ndarray) -> np.ndarray:
    """``w`` split into columns whose sums over any records, in any order, are exact, so that
    a sum of weights (F_i) does not depend on the order of the records: the manifest's
    figures are then those recomputed on the published file, whose rows are shuffled.

    Each column holds the part of every weight above a power-of-two boundary chosen from the
    largest remainder and the number of records (the extraction of Rump, Ogita and Oishi,
    "Accurate floating-point summation", SIAM J. Sci. Comput. 31(1) (2008) 189-224): its
    values are multiples of one power of two and their total stays within 53 bits, so every
    partial sum is exact. The columns add up to ``w`` exactly. Each column takes at least
    52 - log2(2n) bits of the weights (31 at a million records); what 3 columns leave (weights
    spanning more than about 1e28 at a million records) is a last column summed as it comes,
    as are weights too large for the boundary (above about 1e300), left in one column.

    Shapes: (n,) finite -> (n, c), 1 <= c <= 4 (2 for weights with 3 decimals up to 1e3).
    """
    n = w.size
    bits = int(n).bit_length() + 1
    parts = []
    rest = w
    top = float(np.max(np.abs(rest), initial=0.0))
    while top > 0.0 and len(parts) < 3:
        exponent = math.frexp(top)[1] + bits
        if exponent > 1023:  # the boundary 2**exponent is beyond a float
            return w[:, None]
        sigma = math.ldexp(1.0, exponent)
        high = (sigma + rest) - sigma
        parts.append(high)
        rest = rest - high
        top = float(np.max(np.abs(rest), initial=0.0))
    if top > 0.0 or not parts:
        parts.append(rest)
    return np.column_stack(parts)


def equivalence_class_sizes(released: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Sizes of the classes of identical released rows (a missing value equals only a missing
    value), the classes k is counted on.

    Shapes: released (n, d) -> (g,) with sum n.
    """
    frame = pd.DataFrame(released)
    if frame.empty:
        return np.zeros(0, dtype=np.int64)
    return frame.groupby(list(frame.columns), dropna=False, sort=False).size().to_numpy()


def k_anonymity(
    released: pd.DataFrame | np.ndarray, *, convention: Convention = "identical"
) -> int:
    """The k the released file achieves: the smallest frequency f_i [1].

    Under ``"identical"`` (the default) the smallest class of identical released rows, a
    missing value being a value of its own; under ``"missing_matches_any"`` the smallest
    number of records matching a record, a missing value matching any value (sdcMicro's
    convention, module docstring). Without missing values the two agree.
    Shapes: released (n, d) -> int (0 for no record).
    """
    frame = pd.DataFrame(released)
    if frame.shape[0] == 0:
        return 0
    f, _ = match_counts(frame, convention=convention)
    return int(f.min())  # [1] every record shares its keys with at least k - 1 others


def _sensitive_frame(
    released: pd.DataFrame | np.ndarray, sensitive: pd.DataFrame | pd.Series | np.ndarray
) -> tuple[np.ndarray, pd.DataFrame]:
    codes = key_codes(released)
    sens = pd.DataFrame(sensitive).reset_index(drop=True)
    if sens.shape[0] != codes.shape[0]:
        raise ParameterError(
            f"sensitive columns have {sens.shape[0]} rows but the released file has "
            f"{codes.shape[0]}; pass the sensitive values of the released records, in the "
            "same order",
            field="sensitive",
        )
    if sens.shape[1] == 0:
        raise ParameterError("name at least one sensitive column for l-diversity")
    return codes, sens


def _value_counts_matching(
    codes: np.ndarray, values: pd.Series, convention: Convention
) -> sparse.csr_matrix:
    """Counts of every sensitive value (a missing one counts as one value) among the records
    of each record's class. Shapes: (n, d), (n,) -> (n, L) sparse."""
    v = pd.factorize(values, use_na_sentinel=False)[0]
    n = v.size
    onehot = sparse.csr_matrix((np.ones(n), (np.arange(n), v)), shape=(n, int(v.max()) + 1))
    return sparse.csr_matrix(codes_matching_sums(codes, onehot, convention=convention))


def l_diversity(
    released: pd.DataFrame | np.ndarray,
    sensitive: pd.DataFrame | pd.Series | np.ndarray,
    *,
    convention: Convention = "identical",
) -> int:
    """Distinct l-diversity: the fewest distinct values of a sensitive column in a record's
    class of identical released rows [2] (the records matching it under
    ``convention="missing_matches_any"``).

    Parameters
    ----------
    released : DataFrame or ndarray of shape (n, d)
        The released keys; a missing value is a value of its own (``"identical"``) or
        matches any value (``"missing_matches_any"``).
    sensitive : DataFrame, Series or ndarray of shape (n,) or (n, s)
        The sensitive column(s) of the same released records. With several columns the
        figure is the minimum over them (every sensitive column must be l-diverse).
    convention : {"identical", "missing_matches_any"}
        How a missing key value counts (module docstring).

    Returns
    -------
    int
        ``min over records i and sensitive columns s`` of the number of distinct values of s
        in i's class.
    """
    _check_convention(convention)
    codes, sens = _sensitive_frame(released, sensitive)
    smallest = []
    for c in sens.columns:
        counts = _value_counts_matching(codes, sens[c], convention)
        smallest.append(int(np.diff(counts.indptr).min()))  # [2] distinct values
    return min(smallest)


def entropy_l_diversity(
    released: pd.DataFrame | np.ndarray,
    sensitive: pd.DataFrame | pd.Series | np.ndarray,
    *,
    convention: Convention = "identical",
) -> float:
    """Entropy l-diversity: ``min_i exp(H_i)`` over records and sensitive columns [2].

    ``H_i = -sum_s p(i, s) ln p(i, s)`` over the distribution of the sensitive value in
    record i's class (as :func:`l_diversity`, under ``convention``); the file is entropy
    l-diverse for every ``l <= min_i exp(H_i)`` (a real number; the largest integer l it
    satisfies is its floor). Shapes as in :func:`l_diversity`.
    """
    _check_convention(convention)
    codes, sens = _sensitive_frame(released, sensitive)
    smallest = []
    for c in sens.columns:
        counts = _value_counts_matching(codes, sens[c], convention)
        totals = np.asarray(counts.sum(axis=1)).reshape(-1)
        rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
        p = counts.data / totals[rows]
        # [2] H_i = -sum_s p(i, s) ln p(i, s)
        H = np.bincount(rows, weights=-p * np.log(p), minlength=counts.shape[0])
        smallest.append(float(np.exp(H).min()))
    return min(smallest)


def probabilistic_k_anonymity(reidentification: np.ndarray | Sequence[float]) -> float:
    """The k of probabilistic k-anonymity [3]: ``1 / max_i P_i``.

    ``P_i`` is the probability that an intruder re-identifies record i (for instance from
    :func:`sdcflow.core.measures.disclosure_risk.reidentification_probabilities`). The file is
    probabilistically k-anonymous for every ``k <= 1 / max_i P_i``; for a crisp partition into
    groups this is the smallest group size, as for k-anonymity.

    Shapes: (n,) in (0, 1] -> float >= 1 (inf when every P_i is 0).
    """
    P = np.asarray(reidentification, dtype=np.float64)
    if P.ndim != 1 or P.size == 0:
        raise ParameterError("reidentification must be a non-empty 1-D array of probabilities")
    if np.any((P < 0) | (P > 1)) or not np.all(np.isfinite(P)):
        raise ParameterError("reidentification probabilities must lie in [0, 1]")
    top = float(P.max())
    return float("inf") if top == 0 else 1.0 / top  # [3] every P_i <= 1/k


def expected_cluster_sizes(memberships: np.ndarray) -> np.ndarray:
    """Expected number of records drawn to each centre: column sums of the memberships.

    The expected-size reading of probabilistic k-anonymity for fuzzy microaggregation (every
    expected size ``>= k``) gates on ``expected_cluster_sizes(U).min()``.

    Shapes: memberships (n, c), rows summing to 1 -> (c,) summing to n.
    """
    U = np.asarray(memberships, dtype=np.float64)
    if U.ndim != 2:
        raise ParameterError(f"memberships must be 2-dimensional (n, c), got {U.ndim}-D")
    return U.sum(axis=0)


#: Records x released tuples looked up at once by :func:`expected_tuple_sizes` (bounds its
#: temporary arrays to a few hundred MB).
TUPLE_CHUNK = 1 << 22


def expected_tuple_sizes(
    draws: Sequence[sparse.spmatrix], labels: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Expected number of records released as every distinct released tuple of groups.

    Blocks of keys masked separately, each record drawn independently in every block b with
    probabilities ``P_b`` (n, C_b; row i is record i's draw distribution over the block's
    groups): the record released is the tuple ``t = (t_1, ..., t_B)`` of its groups, and the
    expected number of records released as t is ``E(t) = sum_i prod_b P_b[i, t_b]`` (two
    blocks: ``(P_1^T P_2)[t_1, t_2]``). For one block this is the expected size of each
    released group (the column sums of ``P``). A deterministic block's ``P`` is the indicator
    of its groups, so with every block deterministic E(t) is the number of records released
    as t.

    Nothing dense of shape (n, C) is formed: per distinct released tuple the sum runs over
    the records that can be drawn to its group in a pivot block (the nonzeros of that
    column, the block whose released columns have the fewest), each term looked up in the
    other blocks' sparse rows; records that cannot be drawn to ``t_1`` contribute 0.

    Parameters
    ----------
    draws : sequence of B sparse matrices of shape (n, C_b)
    labels : sequence of B int arrays of shape (n,): the group each record was released as
        in every block (columns of ``draws[b]``).

    Returns
    -------
    (tuples, expected) : ndarray (m, B) int64 of the distinct released tuples and ndarray
        (m,) of their expected sizes.
    """
    if len(draws) != len(labels) or not draws:
        raise ParameterError("give one draw matrix and one label array per block")
    mats = [sparse.csr_matrix(P) for P in draws]
    n = mats[0].shape[0]
    if any(P.shape[0] != n for P in mats) or any(np.size(lab) != n for lab in labels):
        raise ParameterError("every block's draws and labels must cover the same records")
    released = np.stack([np.asarray(lab, dtype=np.int64) for lab in labels], axis=1)
    tuples = np.unique(released, axis=0)
    if len(mats) == 1:
        sizes = np.asarray(mats[0].sum(axis=0)).reshape(-1)
        return tuples, sizes[tuples[:, 0]]
    supports = [np.diff(P.tocsc().indptr) for P in mats]
    pivot = int(np.argmin([s[tuples[:, b]].sum() for b, s in enumerate(supports)]))
    Pc = mats[pivot].tocsc()
    others = [b for b in range(len(mats)) if b != pivot]
    counts = supports[pivot][tuples[:, pivot]]
    expected = np.zeros(tuples.shape[0])
    start = 0
    while start < tuples.shape[0]:
        # as many tuples as fit in TUPLE_CHUNK looked-up entries (at least one)
        stop = start + max(1, int(np.searchsorted(np.cumsum(counts[start:]), TUPLE_CHUNK)))
        cnt = counts[start:stop]
        total = int(cnt.sum())
        owner = np.repeat(np.arange(stop - start), cnt)  # tuple of every entry, chunk-local
        first = np.repeat(Pc.indptr[tuples[start:stop, pivot]] - (np.cumsum(cnt) - cnt), cnt)
        pos = first + np.arange(total)
        rows, vals = Pc.indices[pos], Pc.data[pos].astype(np.float64)
        for b in others:
            keep = vals > 0
            owner, rows, vals = owner[keep], rows[keep], vals[keep]
            cols = tuples[start:stop, b][owner]
            vals = vals * np.asarray(mats[b][rows, cols]).reshape(-1)
        expected[start:stop] = np.bincount(owner, weights=vals, minlength=stop - start)
        start = stop
    return tuples, expected
