"""Local suppression: k-anonymity of categorical keys by blanking the fewest values.

**k counts identical released rows** (``DESIGN.md``, "Measures and checks"): a missing or
suppressed value is a value of its own, equal only to another blank, and the file is
k-anonymous when every class of identical released rows has at least k records. A record's
blank then hides it among the records released with the same blanks, not among every record
its remaining values are consistent with: sdcMicro's convention (a blank matches any value
[1]) let a key unique per record pass with 80 of 3,000 codes blanked, the other 2,920 records
published with their code.

Every record of a class of fewer than k identical rows must change its row, by at least one
suppression, unless others join its row (possible only for a row with a blank): the number of
such records is the figure to beat, and :func:`lower_bound` gives it with a bound that holds
also when rows with blanks can be completed. Finding the fewest suppressions is NP-hard [2];
three procedures are offered.

* :func:`local_suppression` with ``algorithm="greedy"`` — the classes of fewer than k
  identical rows (*unsafe*) are moved whole. A class reaches a *target* row by suppressing a
  set of its present values (the cost); the records of classes of at least k stay as they
  are and count for the target equal to their row. Level L = 0, 1, ..., d allows the moves
  of cost at most L: targets are opened in order of decreasing potential (records already
  released with the target plus the unassigned classes that reach it within L), each opening
  taking every class that reaches it, and every class left that reaches an open target joins
  the cheapest; the rest go up a level (``_kernels.assign_levels``). When even the all-blank
  row is short of k, records of classes with more than k give it their values (*donors*). A
  last pass gives back suppressed values, most important keys first, by moving records
  between classes while every class keeps k (:func:`restore`): a target that took more
  records than it needed splits. The records of one row are alike but for their order,
  which decides only which of them a donor class gives and which a restoring move takes
  (the first, the records taken by row then by their order in the file): so the greedy
  works on runs of records (``sdcflow.core.suppression.runs``), a row per run, and
  :func:`strata_runs` takes the rows' counts alone.
* ``algorithm="exact"`` — the fewest suppressions, as a 0-1 program: one variable per record
  and set of its keys to suppress (2^d per record), one per released row that is used, each
  used row released with at least k records (ties broken by importance). Solved by HiGHS
  through :func:`scipy.optimize.milp` [3]; for small files.
* :func:`strata_suppression` — for files that also have numeric keys: the greedy's classes
  of identical released rows (each of at least k records) are the *strata* inside which the
  numeric keys are microaggregated, so that every released row over all keys is identical to
  at least k - 1 others when the groups inside each stratum have k records.

``importance`` lists the keys from the most important (suppressed last) to the least; the
default orders keys by their number of distinct values, most values least important, as
sdcMicro does. Importance breaks ties: the number of suppressed values comes first.

References
----------
[1] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using the
    R package sdcMicro", Journal of Statistical Software 67(4) (2015) 1-36,
    doi:10.18637/jss.v067.i04 (``localSuppression``, ``freqCalc``; sdcMicro 5.8).
[2] A. Meyerson, R. Williams, "On the complexity of optimal k-anonymity", Proc. 23rd ACM
    SIGMOD-SIGACT-SIGART Symposium on Principles of Database Systems (PODS 2004), 223-228,
    doi:10.1145/1055558.1055591.
[3] Q. Huangfu, J.A.J. Hall, "Parallelizing the dual revised simplex method", Mathematical
    Programming Computation 10(1) (2018) 119-142, doi:10.1007/s12532-017-0130-5 (HiGHS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from math import comb
from typing import Any, Literal

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from sdcflow.core.distinct import row_ids
from sdcflow.core.suppression._kernels import assign_levels
from sdcflow.core.suppression.runs import Runs, front, weighted_counts
from sdcflow.core.validation import check_k
from sdcflow.errors import DataError, ParameterError

Algorithm = Literal["greedy", "exact"]

#: The exact program has one variable per record and subset of its keys; beyond this many it
#: is not solved in reasonable time.
EXACT_MAX_VARIABLES = 20_000

#: Counts of records are summed exactly below this many (float64's integers).
MAX_RECORDS = 2**53

#: The greedy enumerates the subsets of a class's present keys level by level while the
#: candidate moves stay below this many (all 2^7 of them for seven keys and up to 46,000
#: unsafe classes; each move holds a row of codes); beyond, only the all-blank row is added.
MAX_PAIRS = 6_000_000


@dataclass
class Suppression:
    """The outcome of a local suppression.

    Attributes
    ----------
    codes : ndarray of shape (n, d), int32
        The released codes: -1 where the value is missing or suppressed.
    suppressed : ndarray of shape (n, d), bool
        The values suppressed here (missing values of the input are not counted).
    frequencies : ndarray of shape (n,), int64
        Size of every record's class of identical released rows (>= k).
    algorithm : str
        ``greedy``, ``exact`` or ``strata``.
    optimal : bool
        True when the number of suppressions is proven the fewest (``exact`` solved to
        optimality).
    labels : ndarray of shape (n,) or None
        The stratum of every record (:func:`strata_suppression` only).
    details : dict
        Figures for the manifest: ``records_in_classes_below_k`` and
        ``suppression_lower_bound`` (:func:`lower_bound`), restored values, solver status.
    """

    codes: np.ndarray
    suppressed: np.ndarray
    frequencies: np.ndarray
    algorithm: str
    optimal: bool = False
    labels: np.ndarray | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return int(self.suppressed.sum())

    def per_key(self, columns: Sequence[str]) -> dict[str, int]:
        """Suppressed values per key."""
        return {c: int(v) for c, v in zip(columns, self.suppressed.sum(axis=0), strict=True)}


def _check_codes(codes: object) -> np.ndarray:
    C = np.asarray(codes)
    if C.ndim != 2 or C.shape[1] == 0 or not np.issubdtype(C.dtype, np.integer):
        raise DataError(
            "codes must be a 2-D integer array (n records, d keys) with -1 for a missing value; "
            "build it with sdcflow.core.measures.anonymity.key_codes"
        )
    if C.size and C.min() < -1:
        raise DataError("codes must be >= 0, or -1 for a missing value")
    if C.size and C.max() > np.iinfo(np.int32).max:  # would wrap to a "missing" code
        raise DataError(
            "codes must be below 2**31; renumber them densely with "
            "sdcflow.core.measures.anonymity.key_codes"
        )
    return np.ascontiguousarray(C, dtype=np.int32)


def importance_rank(codes: np.ndarray, importance: Sequence[int] | None = None) -> np.ndarray:
    """Rank of every key for suppression: 0 = suppressed first (least important).

    ``importance`` lists key indices from the most important to the least; keys it leaves
    out come before all listed ones, in the default order. The default: more distinct values
    = less important (sdcMicro's default). Shapes: codes (n, d) -> (d,) int64 in 0..d-1.
    """
    d = codes.shape[1]
    levels = np.array([np.unique(codes[:, a][codes[:, a] >= 0]).size for a in range(d)])
    default = sorted(range(d), key=lambda a: (-levels[a], a))  # least important first
    if importance is None:
        order = default
    else:
        listed = [int(a) for a in importance]
        if len(set(listed)) != len(listed) or any(not 0 <= a < d for a in listed):
            raise ParameterError(
                f"importance must list distinct key indices in 0..{d - 1}, most important first"
            )
        order = [a for a in default if a not in listed] + listed[::-1]
    rank = np.empty(d, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(d)
    return rank


def frequencies(codes: np.ndarray) -> np.ndarray:
    """Size of every record's class of identical rows, a blank (-1) equal only to a blank.

    Shapes: codes (n, d) -> (n,) int64.
    """
    C = _check_codes(codes)
    ids = row_ids(C + 1)
    return np.bincount(ids)[ids].astype(np.int64)


def lower_bound(
    codes: np.ndarray, k: int, *, counts: np.ndarray | None = None, max_subsets: int = 64
) -> tuple[int, int]:
    """Records in classes of fewer than k identical rows, and a lower bound on the fewest
    suppressions that make every class reach k.

    A record of such a class C (s records, row r) is released with a row g that k records
    share, every one of them agreeing with g on g's present keys. Its cost is at least the
    fewest present values it must blank to reach a row that k records of the file agree
    with (:math:`L_C`, over the subsets K of its present keys kept: the records agreeing
    with it on K number at least k), so C's records pay ``s L_C``. When ``L_C = 0`` (r has
    a blank and others agree with r on its present values, P of them, q unsafe) C may keep
    r if others join it: with m of C's records staying, C's own records suppress s - m values
    and at least k - m - q joiners come from classes of k or more, which no other class's
    term counts; the smallest over m is ``min(s, max(0, k - s - q))``. The terms summed over
    the classes bound the total. The number of records in classes below k is the bound of a
    file whose rows cannot be completed and whose records can all reach k by one
    suppression.

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Key codes, -1 missing: a row per record, or distinct rows with ``counts``.
    k : int
    counts : ndarray of shape (n,), int, optional
        Records of each (distinct) row of ``codes``; the same bound as for those rows
        repeated by their counts.
    max_subsets : int
        At most this many subsets K are tried, the largest first; a class none of them
        serves counts one value more than the last size tried would give.

    Returns
    -------
    (records below k, bound) : (int, int)
    """
    rows, counts, _ = _distinct_counts(_check_codes(codes), counts)
    k = check_k(k, int(counts.sum()))
    d = rows.shape[1]
    small = np.flatnonzero(counts < k)
    below = int(counts[small].sum())
    if not small.size:
        return 0, 0
    reps = rows[small]
    s = counts[small]
    present = reps >= 0
    values = present.sum(axis=1)
    # L_C: the fewest values to blank, over the subsets K kept (largest first)
    fewest = np.full(small.size, d + 1, dtype=np.int64)
    tried = 0
    smallest = d + 1
    for size in range(d, -1, -1):
        if tried + comb(d, size) > max_subsets and tried:
            break
        tried += comb(d, size)
        smallest = size
        for K in combinations(range(d), size):
            cols = list(K)
            has = (rows[:, cols] >= 0).all(axis=1)
            mine = np.flatnonzero(present[:, cols].all(axis=1))
            if not mine.size:
                continue
            kept = int(has.sum())
            proj = row_ids(np.concatenate([rows[has][:, cols], reps[mine][:, cols]]) + 1)
            reach = weighted_counts(proj[:kept], counts[has], int(proj.max()) + 1)
            ok = reach[proj[kept:]] >= k
            np.minimum.at(fewest, mine[ok], values[mine[ok]] - size)
    floor = np.maximum(1, values - smallest + 1)
    fewest = np.where(fewest <= d, fewest, floor)
    terms = s * np.maximum(fewest, 1)
    # rows that others can complete: the joiners' term
    unsafe = np.where(counts < k, counts, 0)
    u = rows.shape[0]
    pattern = row_ids((reps < 0).astype(np.int32))
    for p in np.flatnonzero(np.bincount(pattern[fewest == 0])):
        at = np.flatnonzero((pattern == p) & (fewest == 0))
        keep = reps[at[0]] >= 0
        proj = row_ids(np.concatenate([rows[:, keep], reps[at][:, keep]]) + 1)
        own = proj[u:]
        q = weighted_counts(proj[:u], unsafe, int(proj.max()) + 1)[own]
        terms[at] = np.minimum(s[at], np.maximum(0, k - s[at] - (q - s[at])))
    return below, int(terms.sum())


def _distinct_counts(
    C: np.ndarray, counts: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``C`` in row order (``sdcflow.core.distinct.row_ids``),
    their records (of the records given, or of the distinct rows given with their counts)
    and the first row of ``C`` holding each. Shapes: (n, d), (n,) or None -> (u, d), (u,)
    int64, (u,) int64."""
    ids = row_ids(C + 1)
    if counts is None:
        sizes = np.bincount(ids).astype(np.int64)
    else:
        counts = np.asarray(counts)
        if counts.shape != (C.shape[0],) or not np.issubdtype(counts.dtype, np.integer):
            raise DataError("counts must be one integer count per row of codes")
        if counts.size and counts.min() < 1:
            raise DataError("counts must be >= 1: a row without records is left out")
        if counts.size and (
            counts.max() >= MAX_RECORDS or float(counts.sum(dtype=np.float64)) >= MAX_RECORDS
        ):
            raise DataError(
                f"counts must sum to fewer than 2**53 records (the sums of counts are exact "
                f"below), got {float(counts.sum(dtype=np.float64)):.4g}"
            )
        if ids.size and np.bincount(ids).max() > 1:
            raise DataError("rows given with counts must be distinct; count them with GROUP BY")
        sizes = np.zeros(ids.size, dtype=np.int64)
        sizes[ids] = counts
    first = np.unique(ids, return_index=True)[1]
    return C[first], sizes, first


def _subsets(d: int, present_counts: np.ndarray) -> list[tuple[int, ...]]:
    """The key subsets the greedy tries: every level while the moves stay within
    :data:`MAX_PAIRS` (counted as if every class had all its keys)."""
    u = present_counts.size
    out: list[tuple[int, ...]] = []
    total = 0
    for t in range(d + 1):
        total += comb(d, t) * u
        if t and total > MAX_PAIRS:
            break
        out.extend(combinations(range(d), t))
    return out


def _moves(rows: np.ndarray, subsets: list[tuple[int, ...]]) -> tuple[np.ndarray, ...]:
    """Every row of ``rows`` (u, d) with every subset of its present keys blanked, and the
    all-blank row where the subsets stop short of it: (row index, released row, cost)."""
    u, d = rows.shape
    if u == 0:
        return np.zeros(0, np.int64), np.zeros((0, d), np.int32), np.zeros(0, np.int64)
    present = rows >= 0
    counts = present.sum(axis=1)
    pc, pr, pk = [], [], []
    for T in subsets:
        sel = np.flatnonzero(present[:, list(T)].all(axis=1)) if T else np.arange(u)
        if not sel.size:
            continue
        r = rows[sel].copy()
        r[:, list(T)] = -1
        pc.append(sel)
        pr.append(r)
        pk.append(np.full(sel.size, len(T), dtype=np.int64))
    far = np.flatnonzero(counts > len(subsets[-1]))
    if far.size:
        pc.append(far)
        pr.append(np.full((far.size, d), -1, dtype=np.int32))
        pk.append(counts[far].astype(np.int64))
    return np.concatenate(pc).astype(np.int64), np.concatenate(pr), np.concatenate(pk)


def _csr(owner: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The entries of every owner, stably: (pointers (size + 1,), entry indices)."""
    order = np.argsort(owner, kind="stable").astype(np.int64)
    return np.searchsorted(owner[order], np.arange(size + 1)).astype(np.int64), order


def _candidates(
    rows: np.ndarray, safe_rows: np.ndarray, safe_sizes: np.ndarray, k: int, rank: np.ndarray
) -> dict[str, Any]:
    """Every move of every unsafe class and of every safe class with records to spare: the
    arguments of :func:`assign_levels` and the target rows. rows (u, d), safe_rows (v, d),
    safe_sizes (v,), rank (d,)."""
    u, d = rows.shape
    subsets = _subsets(d, (rows >= 0).sum(axis=1))
    pair_class, pair_rows, pair_cost = _moves(rows, subsets)
    spare = np.flatnonzero(safe_sizes > k)
    donor_class, donor_rows, donor_cost = _moves(safe_rows[spare], subsets)
    donor_class = spare[donor_class]
    P, v = pair_class.size, safe_rows.shape[0]
    released = np.concatenate([pair_rows, safe_rows, donor_rows])
    ids = row_ids(released + 1)
    # the targets are the unsafe classes' moves; donor moves elsewhere are dropped
    first_ids = np.unique(ids[:P])
    remap = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    remap[first_ids] = np.arange(first_ids.size)
    m = first_ids.size
    pair_target = remap[ids[:P]]
    own = remap[ids[P : P + v]]
    donor_target = remap[ids[P + v :]]
    keep = (donor_target >= 0) & (donor_cost > 0)
    donor_class, donor_target, donor_cost = donor_class[keep], donor_target[keep], donor_cost[keep]
    has = own >= 0
    locked = np.bincount(own[has], weights=safe_sizes[has], minlength=m).astype(np.int64)
    target_rows = np.empty((m, d), dtype=np.int32)
    target_rows[pair_target] = pair_rows
    tie = (target_rows < 0) @ (2.0 ** rank.astype(np.float64))
    class_ptr, order = _csr(pair_class, u)
    pair_class, pair_target, pair_cost = pair_class[order], pair_target[order], pair_cost[order]
    target_ptr, target_pairs = _csr(pair_target, m)
    donor_ptr, order = _csr(donor_class, v)
    donor_class, donor_target = donor_class[order], donor_target[order]
    donor_cost = donor_cost[order]
    target_donor_ptr, target_donors = _csr(donor_target, m)
    # fmt: off
    args = (
        class_ptr, pair_target, pair_cost, target_ptr, target_pairs, pair_class, locked, tie,
        int(k), int(pair_cost.max()), donor_ptr, donor_target, donor_cost, target_donor_ptr,
        target_donors, donor_class, np.maximum(safe_sizes - k, 0).astype(np.int64),
        np.where(has, own, 0),
    )
    # fmt: on
    return {
        "args": args,
        "target_rows": target_rows,
        "donor_class": donor_class,
        "donor_target": donor_target,
    }


def _donors(runs: Runs, short: np.ndarray, k: int) -> Runs:
    """Blank every key of the runs ``short`` (the all-blank row short of k) and of donors
    from the classes of more than k, fewest values first, so that the all-blank row
    reaches k; a class gives its first records. ``runs`` is changed and returned."""
    runs.codes[short] = -1
    ids, sizes = runs.class_sizes()
    blank_id = int(ids[np.flatnonzero(short)[0]])
    need = k - int(sizes[blank_id])
    some = np.zeros(sizes.size, dtype=np.int64)
    some[ids] = np.arange(ids.size)
    present = (runs.codes[some] >= 0).sum(axis=1)  # per class, before any is given
    classes = [g for g in range(sizes.size) if g != blank_id]
    # surplus first (the class keeps k), then whole classes, each by values per record
    spare = sorted((present[g], g) for g in classes if sizes[g] > k)
    for _, g in spare:
        if need <= 0:
            break
        take = min(int(sizes[g]) - k, need)
        members = np.flatnonzero(ids == g)
        whole, cut, part = front(runs.count[members], take)
        runs.codes[members[:whole]] = -1
        if cut >= 0:
            runs, position, index = runs.split(members[cut : cut + 1], np.array([part]))
            ids = ids[index]
            runs.codes[position[members[cut]]] = -1
        need -= take
    if need > 0:
        whole_classes = sorted((present[g] * int(sizes[g]), g) for g in classes if present[g])
        for _, g in whole_classes:
            if need <= 0:
                break
            members = np.flatnonzero((ids == g) & (runs.codes >= 0).any(axis=1))
            runs.codes[members] = -1
            need -= int(runs.count[members].sum())
    assert need <= 0  # n >= k records: the whole file reaches k
    return runs


def greedy_runs(
    rows: np.ndarray, counts: np.ndarray, k: int, rank: np.ndarray
) -> tuple[Runs, dict[str, Any]]:
    """The greedy (see the module docstring) on the records of ``rows`` repeated by
    ``counts``, taken in row order: the released rows as runs of records.

    The records of one row are alike but for their order, which decides only which of them
    a donor class gives and which a restoring move takes: the first. So the greedy holds a
    run per combination of original and released row, not a row per record.

    Parameters
    ----------
    rows : ndarray of shape (u, d), int32
        Distinct rows of key codes (-1 missing), sorted as
        ``sdcflow.core.distinct.row_ids`` numbers them (by code, first key first).
    counts : ndarray of shape (u,), int64
        Records of each row, >= 1.
    k : int
    rank : ndarray of shape (d,), int
        :func:`importance_rank`.

    Returns
    -------
    (runs, details) : (Runs, dict)
        The runs in record order (``source`` indexes ``rows``) and the greedy's figures.
    """
    u, d = rows.shape
    unsafe = np.flatnonzero(counts < k)
    safe = np.flatnonzero(counts >= k)
    released = rows.copy()
    short = np.zeros(u, dtype=bool)
    given_source = np.zeros(0, dtype=np.int64)
    given_count = np.zeros(0, dtype=np.int64)
    given_rows = np.zeros((0, d), dtype=np.int32)
    details: dict[str, Any] = {}
    if unsafe.size:
        cand = _candidates(rows[unsafe], rows[safe], counts[safe], k, rank)
        assigned, _, given = assign_levels(counts[unsafe].astype(np.int64), *cand["args"])
        done = assigned >= 0
        released[unsafe[done]] = cand["target_rows"][assigned[done]]
        short[unsafe[~done]] = True
        e = np.flatnonzero(given)  # a class gives its records in this order, first ones first
        given_source = safe[cand["donor_class"][e]].astype(np.int64)
        given_count = given[e].astype(np.int64)
        given_rows = cand["target_rows"][cand["donor_target"][e]]
        details["donors"] = int(given.sum())
    order = np.argsort(given_source, kind="stable")
    before = np.cumsum(given_count[order]) - given_count[order]
    first = np.concatenate([[True], given_source[order][1:] != given_source[order][:-1]])
    first = first[: order.size]
    given_lo = np.empty_like(given_count)
    given_lo[order] = before - before[first][np.cumsum(first) - 1]
    used = weighted_counts(given_source, given_count, u)
    rest = np.flatnonzero(counts > used)
    source = np.concatenate([given_source, rest])
    lo = np.concatenate([given_lo, used[rest]])
    by_record = np.lexsort((lo, source))
    runs = Runs(
        source=source[by_record],
        original=rows[source[by_record]],
        codes=np.concatenate([given_rows, released[rest]])[by_record],
        suppressed=np.zeros((source.size, d), dtype=bool),
        count=np.concatenate([given_count, counts[rest] - used[rest]])[by_record],
    )
    if short.any():
        runs = _donors(runs, short[runs.source], k)
    runs.suppressed = (runs.original >= 0) & (runs.codes < 0)
    made = int((runs.suppressed.sum(axis=1) * runs.count).sum())
    runs, restored = restore_runs(runs, k, rank)
    details.update({"suppressed_then_restored": int(restored), "greedy_suppressions": made})
    return runs.merged(), details


def _greedy(C: np.ndarray, k: int, rank: np.ndarray) -> Suppression:
    """:func:`greedy_runs` on the records of ``C`` (n, d), each record taking the release
    of its rank among the records of its row (in row order)."""
    rows, counts, _ = _distinct_counts(C, None)
    runs, details = greedy_runs(rows, counts, k, rank)
    order = np.argsort(row_ids(C + 1), kind="stable")  # the records as the runs take them
    ids, sizes = runs.class_sizes()
    out = np.empty_like(C)
    S = np.empty(C.shape, dtype=bool)
    f = np.empty(C.shape[0], dtype=np.int64)
    out[order] = runs.per_record(runs.codes)
    S[order] = runs.per_record(runs.suppressed)
    f[order] = runs.per_record(sizes[ids])
    return Suppression(codes=out, suppressed=S, frequencies=f, algorithm="greedy", details=details)


def restore(
    codes: np.ndarray,
    original: np.ndarray,
    suppressed: np.ndarray,
    k: int,
    rank: np.ndarray,
    *,
    passes: int = 4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Give back suppressed values while every class of identical rows keeps k records.

    Giving back key a of a record moves it to the row with its own value on a. The records
    of one class suppressed on a with one original value v move together, or as many of them
    as the class can spare (it keeps k, or empties): the row they move to must then hold k,
    with the records it has and those of other classes moving to it on the same key. Keys
    are taken from the most important; passes repeat while values come back.

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Released codes (-1 blank), every class of identical rows >= k.
    original : ndarray of shape (n, d), int
        The codes before suppression.
    suppressed : ndarray of shape (n, d), bool
        The values that may be given back.
    k : int
    rank : ndarray of shape (d,), int
        :func:`importance_rank`: higher is more important, given back first.
    passes : int
        At most this many passes over the keys.

    Returns
    -------
    (codes, suppressed, frequencies, restored)
        Updated copies (n, d), (n, d), (n,) and the number of values given back.
    """
    C = _check_codes(codes).copy()
    orig = _check_codes(original)
    S = np.array(suppressed, dtype=bool, copy=True)
    runs, total = restore_runs(Runs.of_records(orig, C, S), k, rank, passes=passes)
    return runs.codes, runs.suppressed, frequencies(runs.codes), total


def restore_runs(runs: Runs, k: int, rank: np.ndarray, *, passes: int = 4) -> tuple[Runs, int]:
    """:func:`restore` on runs of records: a move that takes part of a run cuts it.

    Returns the runs (changed in place, and cut) and the number of values given back."""
    k = int(k)
    total = 0
    for _ in range(passes):
        before = total
        for a in np.argsort(-np.asarray(rank), kind="stable"):
            runs, given = _restore_key(runs, int(a), k)
            total += given
        if total == before:
            break
    return runs, total


def _restore_key(runs: Runs, a: int, k: int) -> tuple[Runs, int]:
    """One key's moves of :func:`restore`: the runs suppressed on ``a``, grouped by their
    class and the row they would move to, each group giving its first records."""
    sel = np.flatnonzero(runs.suppressed[:, a])
    if not sel.size:
        return runs, 0
    R = runs.count.size
    dest = runs.codes[sel].copy()
    dest[:, a] = runs.original[sel, a]
    ids = row_ids(np.concatenate([runs.codes, dest]) + 1)
    size = weighted_counts(ids[:R], runs.count, int(ids.max()) + 1)
    src, dst = ids[sel], ids[R:]
    order = np.lexsort((src, dst))  # by row moved to, class, record
    sel, src, dst = sel[order], src[order], dst[order]
    start = np.flatnonzero(np.concatenate([[True], (np.diff(src) != 0) | (np.diff(dst) != 0)]))
    records = np.add.reduceat(runs.count[sel], start)
    group_src, group_dst = src[start], dst[start]
    t_first = np.flatnonzero(np.concatenate([[True], np.diff(group_dst) != 0]))
    t_end = np.concatenate([t_first[1:], [start.size]])
    moving = np.zeros(start.size, dtype=np.int64)
    total = 0

    def first_rows_holding_k(i: int) -> tuple[int, int]:
        t = group_dst[t_first[i]]
        return -int(size[t] >= k), -int(size[t])

    # rows that already hold k first: any record may join them
    for i in sorted(range(t_first.size), key=first_rows_holding_k):
        t = group_dst[t_first[i]]
        plan = []
        for g in range(t_first[i], t_end[i]):
            s, m = group_src[g], int(records[g])
            if size[s] - m == 0 or size[s] - m >= k:
                plan.append((s, g, m))
            elif size[s] - k > 0:
                plan.append((s, g, int(size[s]) - k))
        if not plan or size[t] + sum(m for _, _, m in plan) < k:
            continue
        for s, g, m in plan:
            moving[g] = m
            size[s] -= m
            size[t] += m
            total += m
    if not total:
        return runs, 0
    count = runs.count[sel]
    group = np.repeat(np.arange(start.size), np.diff(np.append(start, sel.size)))
    before = np.cumsum(count) - count
    before -= before[start][group]  # records of its group before the run
    take = moving[group]
    whole = sel[before + count <= take]
    runs.codes[whole, a] = runs.original[whole, a]
    runs.suppressed[whole, a] = False
    cut = (before < take) & (before + count > take)
    if cut.any():
        at, first = sel[cut], (take - before)[cut]
        runs, position, _ = runs.split(at, first)
        p = position[at]
        runs.codes[p, a] = runs.original[p, a]
        runs.suppressed[p, a] = False
    return runs, total


def _exact(C: np.ndarray, k: int, rank: np.ndarray, time_limit: float) -> Suppression | None:
    """The fewest suppressions by 0-1 programming; None when not solved to optimality.

    One variable x_iT per record i and set T of its present keys to suppress (2^d per
    record), one y_g per released row g that some x_iT gives: ``sum_T x_iT = 1`` for every
    record, ``x_iT <= y_g`` and ``sum x_iT >= k y_g`` over the (i, T) giving g. Minimizes
    the suppressions, importance breaking ties.
    """
    n, d = C.shape
    present = C >= 0
    owner, masks = [], []
    for i in range(n):
        avail = np.flatnonzero(present[i])
        for t in range(avail.size + 1):
            for T in combinations(avail.tolist(), t):
                owner.append(i)
                masks.append(sum(1 << a for a in T))
    owner_a = np.asarray(owner, dtype=np.int64)
    bits = ((np.asarray(masks, dtype=np.int64)[:, None] >> np.arange(d)) & 1).astype(bool)
    V = owner_a.size
    released = C[owner_a].copy()
    released[bits] = -1
    row = row_ids(released + 1)
    G = int(row.max()) + 1
    # Objective: the number of suppressions, ties broken towards less important keys.
    eps = 1.0 / (d * (n * d + 1.0))
    cost = np.concatenate([(bits * (1.0 + eps * (rank + 1.0))).sum(axis=1), np.zeros(G)])
    v = np.arange(V)
    used = sparse.csr_matrix(  # x_v - y_g(v) <= 0
        (np.concatenate([np.ones(V), -np.ones(V)]), (np.tile(v, 2), np.concatenate([v, V + row]))),
        shape=(V, V + G),
    )
    size = sparse.csr_matrix(  # sum_v x_v - k y_g >= 0
        (
            np.concatenate([np.ones(V), np.full(G, -float(k))]),
            (np.concatenate([row, np.arange(G)]), np.concatenate([v, V + np.arange(G)])),
        ),
        shape=(G, V + G),
    )
    one = sparse.csr_matrix((np.ones(V), (owner_a, v)), shape=(n, V + G))
    res = milp(
        cost,
        integrality=np.ones(V + G),
        bounds=Bounds(0, 1),
        constraints=[
            LinearConstraint(used, -np.inf, 0),
            LinearConstraint(size, 0, np.inf),
            LinearConstraint(one, 1, 1),
        ],
        options={"time_limit": float(time_limit), "disp": False},
    )
    if res.status != 0 or res.x is None:
        return None
    chosen = np.flatnonzero(res.x[:V] > 0.5)
    out = C.copy()
    out[owner_a[chosen]] = released[chosen]
    S = present & (out < 0)
    return Suppression(
        codes=out,
        suppressed=S,
        frequencies=frequencies(out),
        algorithm="exact",
        optimal=True,
        details={"solver": "HiGHS (scipy.optimize.milp)"},
    )


def local_suppression(
    codes: np.ndarray,
    k: int,
    *,
    importance: Sequence[int] | None = None,
    algorithm: Algorithm = "greedy",
    time_limit: float = 60.0,
) -> Suppression:
    """Suppress categorical values so that every class of identical released rows has at
    least k records (a blank equal only to a blank).

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Key codes, -1 for a missing value (:func:`~sdcflow.core.measures.anonymity.key_codes`).
    k : int
        2 <= k <= n.
    importance : sequence of int, optional
        Key indices from the most important (suppressed last) to the least.
    algorithm : {"greedy", "exact"}
        See the module docstring. ``exact`` proves the fewest suppressions and is meant for
        small files (and as the reference the tests hold the greedy to).
    time_limit : float
        Seconds the exact solver may take.

    Returns
    -------
    Suppression
        Its details give ``records_in_classes_below_k`` and ``suppression_lower_bound``
        (:func:`lower_bound`) beside the total.
    """
    C = _check_codes(codes)
    k = check_k(k, C.shape[0])
    if algorithm not in ("greedy", "exact"):
        raise ParameterError(f'algorithm must be "greedy" or "exact", got {algorithm!r}')
    rank = importance_rank(C, importance)
    below, bound = lower_bound(C, k)
    figures = {"records_in_classes_below_k": below, "suppression_lower_bound": bound}
    if algorithm == "greedy":
        done = _greedy(C, k, rank)
        done.details = {**figures, **done.details}
        return done
    f = frequencies(C)
    if (f >= k).all():
        return Suppression(
            C.copy(), np.zeros(C.shape, dtype=bool), f, "exact", optimal=True, details=figures
        )
    variables = int((2 ** (C >= 0).sum(axis=1)).sum())
    if variables > EXACT_MAX_VARIABLES:
        raise ParameterError(
            f"the exact local suppression would need {variables} variables (at most "
            f"{EXACT_MAX_VARIABLES}); use algorithm greedy for a file this size"
        )
    solved = _exact(C, k, rank, time_limit)
    if solved is None:
        raise ParameterError(
            f"the exact local suppression did not finish within {time_limit:g} s; use "
            'algorithm "greedy" or a larger time_limit'
        )
    solved.details = {**figures, **solved.details}
    return solved


def strata_suppression(
    codes: np.ndarray, k: int, *, importance: Sequence[int] | None = None
) -> Suppression:
    """Strata of at least k records with identical released categorical rows, for the
    numeric keys to be microaggregated inside (see the module docstring).

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Categorical key codes, -1 for a missing value.
    k : int
        Minimum stratum size, 2 <= k <= n.
    importance : sequence of int, optional
        Key indices, most important first.

    Returns
    -------
    Suppression
        The greedy's (:func:`local_suppression`), with ``labels`` (n,): the stratum of every
        record, its class of identical released rows (each of >= k records).
    """
    done = local_suppression(codes, k, importance=importance, algorithm="greedy")
    labels = row_ids(done.codes + 1).astype(np.int64)
    done.algorithm = "strata"
    done.labels = labels
    done.details = {**done.details, "strata": int(labels.max()) + 1}
    return done


@dataclass
class Strata:
    """The strata of :func:`strata_runs`.

    Attributes
    ----------
    runs : Runs
        The records in runs, in record order: ``source`` indexes the rows given, and run i
        holds the records of rank ``runs.ranks()[i]`` to ``runs.ranks()[i] + count[i] - 1``
        among its row's records.
    labels : ndarray of shape (R,), int64
        Every run's stratum: its class of identical released rows (each of >= k records).
    details : dict
        As :func:`strata_suppression`'s.
    """

    runs: Runs
    labels: np.ndarray
    details: dict[str, Any]


def strata_runs(
    rows: np.ndarray,
    counts: np.ndarray,
    k: int,
    *,
    importance: Sequence[int] | None = None,
) -> Strata:
    """:func:`strata_suppression` from the combinations' counts: the same strata for the
    records of every distinct row taken in turn, without a row per record.

    Parameters
    ----------
    rows : ndarray of shape (u, d), int
        Distinct rows of categorical key codes, -1 missing (e.g. a ``GROUP BY``'s).
    counts : ndarray of shape (u,), int
        Records of each row.
    k : int
        Minimum stratum size, 2 <= k <= counts.sum().
    importance : sequence of int, optional
        Key indices, most important first.

    Returns
    -------
    Strata
        The records of row i, ranked 0..counts[i]-1, are released as :func:`strata_suppression`
        releases the records of row i in a file whose records of one row keep that order.
    """
    C = _check_codes(rows)
    if counts is None:
        raise DataError("strata_runs needs the rows' counts; strata_suppression takes records")
    distinct, sizes, first = _distinct_counts(C, counts)
    k = check_k(k, int(sizes.sum()))
    rank = importance_rank(distinct, importance)
    below, bound = lower_bound(distinct, k, counts=sizes)
    runs, details = greedy_runs(distinct, sizes, k, rank)
    runs.source = first[runs.source]
    labels, _ = runs.class_sizes()
    details = {
        "records_in_classes_below_k": below,
        "suppression_lower_bound": bound,
        **details,
        "strata": int(labels.max()) + 1,
    }
    return Strata(runs, labels.astype(np.int64), details)
