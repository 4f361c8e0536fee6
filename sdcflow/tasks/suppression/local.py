"""Local suppression: k-anonymity on categorical keys by blanking the fewest values.

A suppressed value is published as missing, and a missing value matches any value
(the convention of :mod:`sdcflow.tasks.measures.anonymity`, as sdcMicro's ``freqCalc`` [1]):
a record is safe when at least k records match it. Finding the fewest suppressions that make
every record safe is NP-hard [2]; three procedures are offered.

* :func:`local_suppression` with ``algorithm="greedy"`` — records in order of increasing
  frequency; for each unsafe record one pass over the file gives, for every key, the
  frequency it would have with that key suppressed, and the least important key that makes it
  safe is suppressed (else the key that brings it closest, and again). Frequencies are kept
  exact after every step, so a record made safe by another's suppression is skipped. A second
  pass then gives back every suppressed value, most important keys first, whose return keeps
  every record safe: the result is *minimal* (no single value can be restored), not
  necessarily *minimum*. One pass over the file per decision: O(u n d) for u unsafe records,
  no pair table. sdcMicro's ``localSuppression`` [1] instead always suppresses the least
  important key on which the record differs from its candidates, whatever the frequency it
  reaches (on Adult, 13,251 of its 15,340 suppressions were ages; figures in
  ``benchmarks/README.md``).
* ``algorithm="exact"`` — the fewest suppressions, as a 0-1 program: one variable per
  record and set of its keys to suppress (2^d per record), one released pattern per record,
  and for every record and pattern, if chosen, k - 1 other chosen patterns that match it;
  minimizing the number of suppressions (ties broken by importance). Solved by HiGHS through
  :func:`scipy.optimize.milp` [3]; (n 2^d)^2 compatibility terms, so for small files. Under
  the convention the fewest may blank every key of k - 1 records (they then match every
  record), which the greedy never aims at.
* :func:`strata_suppression` — for files that also have numeric keys: a partition of the
  records into *strata* of at least k records that all match each other (each record keeps
  the stratum's value or is suppressed), so that the numeric keys can be microaggregated
  inside each stratum and every released record then matches at least k - 1 others on all
  keys. Built level by level: at level t, groups of at least k unsafe records that agree on
  all keys but t of them form new strata (keeping the most frequent value on those t keys),
  then unsafe records at t disagreements from a stratum join the nearest one.

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
from typing import Any, Literal

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from sdcflow.distinct import row_ids
from sdcflow.errors import DataError, ParameterError
from sdcflow.tasks.measures.anonymity import codes_matching_sums
from sdcflow.tasks.suppression._kernels import greedy_suppression, restore_values
from sdcflow.tasks.validation import check_k

Algorithm = Literal["greedy", "exact"]

#: The exact program has one variable per record and subset of its keys; beyond this many
#: its (variables^2) compatibility terms do not fit a small machine.
EXACT_MAX_VARIABLES = 20_000


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
        Records matching each record after suppression (>= k).
    algorithm : str
        ``greedy``, ``exact`` or ``strata``.
    optimal : bool
        True when the number of suppressions is proven the fewest (``exact`` solved to
        optimality).
    labels : ndarray of shape (n,) or None
        The stratum of every record (:func:`strata_suppression` only).
    details : dict
        Figures for the manifest (restored values, solver status).
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
            "build it with sdcflow.tasks.measures.anonymity.key_codes"
        )
    if C.size and C.min() < -1:
        raise DataError("codes must be >= 0, or -1 for a missing value")
    if C.size and C.max() > np.iinfo(np.int32).max:  # would wrap to a "missing" code
        raise DataError(
            "codes must be below 2**31; renumber them densely with "
            "sdcflow.tasks.measures.anonymity.key_codes"
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
    """Records matching each record (missing matches any value). (n, d) -> (n,) int64."""
    C = _check_codes(codes)
    n = C.shape[0]
    return np.rint(codes_matching_sums(C, np.ones((n, 1)))[:, 0]).astype(np.int64)


def restore(
    codes: np.ndarray,
    original: np.ndarray,
    suppressed: np.ndarray,
    k: int,
    rank: np.ndarray,
    *,
    passes: int = 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Give back suppressed values while every record keeps at least k matches.

    Cells are tried from the most important key to the least, and within a key from the
    records whose original value is most frequent. Returns ``(codes, suppressed, f,
    restored)``; the inputs are not modified.
    """
    C = _check_codes(codes).copy()
    orig = _check_codes(original)
    S = np.array(suppressed, dtype=bool, copy=True)
    f = frequencies(C)
    counts = np.zeros(orig.shape, dtype=np.int64)
    for a in range(orig.shape[1]):
        col = orig[:, a]
        present = col >= 0
        if present.any():
            counts[present, a] = np.bincount(col[present])[col[present]]
    total = 0
    for _ in range(passes):
        rows, keys = np.nonzero(S)
        if rows.size == 0:
            break
        order = np.lexsort((-counts[rows, keys], -rank[keys]))
        got = restore_values(
            C, orig, f, int(k), rows[order].astype(np.int64), keys[order].astype(np.int64), S
        )
        total += got
        if got == 0:
            break
    return C, S, f, total


def _greedy(C: np.ndarray, k: int, rank: np.ndarray) -> Suppression:
    original = C.copy()
    work = C.copy()
    f = frequencies(work)
    unsafe = np.flatnonzero(f < k)
    pattern = np.unique(work[unsafe], axis=0, return_inverse=True)[1].reshape(-1)
    order = unsafe[np.lexsort((pattern, f[unsafe]))].astype(np.int64)
    S = np.zeros(work.shape, dtype=bool)
    made = greedy_suppression(work, f, int(k), rank, order, S)
    work, S, f, restored = restore(work, original, S, k, rank)
    return Suppression(
        codes=work,
        suppressed=S,
        frequencies=f,
        algorithm="greedy",
        details={"suppressed_then_restored": int(restored), "greedy_suppressions": int(made)},
    )


def _exact(C: np.ndarray, k: int, rank: np.ndarray, time_limit: float) -> Suppression | None:
    """The fewest suppressions by 0-1 programming; None when not solved to optimality.

    One variable x_iT per record i and set T of its present keys to suppress (2^d per
    record): ``sum_T x_iT = 1`` and, for every (i, T), ``sum x_jU >= (k - 1) x_iT`` over the
    (j, U), j != i, whose released rows match. Minimizes the suppressions, importance
    breaking ties.
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
    # Objective: the number of suppressions, ties broken towards less important keys.
    eps = 1.0 / (d * (n * d + 1.0))
    cost = (bits * (1.0 + eps * (rank + 1.0))).sum(axis=1)
    rows, cols, vals = [], [], []
    for v in range(V):
        r = released[v]
        match = ((r < 0) | (released < 0) | (released == r)).all(axis=1) & (owner_a != owner_a[v])
        js = np.flatnonzero(match)
        rows += [np.full(js.size, v), np.array([v])]
        cols += [js, np.array([v])]
        vals += [np.ones(js.size), np.array([-(k - 1.0)])]
    A = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(V, V)
    )
    E = sparse.csr_matrix((np.ones(V), (owner_a, np.arange(V))), shape=(n, V))
    res = milp(
        cost,
        integrality=np.ones(V),
        bounds=Bounds(0, 1),
        constraints=[LinearConstraint(A, 0, np.inf), LinearConstraint(E, 1, 1)],
        options={"time_limit": float(time_limit), "disp": False},
    )
    if res.status != 0 or res.x is None:
        return None
    chosen = np.flatnonzero(res.x > 0.5)
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
    """Suppress categorical values so that every record matches at least k records.

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Key codes, -1 for a missing value (:func:`~sdcflow.tasks.measures.anonymity.key_codes`).
    k : int
        2 <= k <= n.
    importance : sequence of int, optional
        Key indices from the most important (suppressed last) to the least.
    algorithm : {"greedy", "exact"}
        See the module docstring. ``exact`` proves the fewest suppressions and is meant for
        small files (and as the reference the tests hold the greedy to); the fewest may blank
        every key of k - 1 records, which then match every record.
    time_limit : float
        Seconds the exact solver may take.

    Returns
    -------
    Suppression
    """
    C = _check_codes(codes)
    k = check_k(k, C.shape[0])
    if algorithm not in ("greedy", "exact"):
        raise ParameterError(f'algorithm must be "greedy" or "exact", got {algorithm!r}')
    rank = importance_rank(C, importance)
    if algorithm == "greedy":
        return _greedy(C, k, rank)
    f = frequencies(C)
    if (f >= k).all():
        return Suppression(C.copy(), np.zeros(C.shape, dtype=bool), f, "exact", optimal=True)
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
    return solved


# --- strata: a partition into groups of mutually matching records --------------------------


def _attach_costs(
    rows: np.ndarray, centers: np.ndarray, weight: np.ndarray, chunk: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the nearest center and its number of disagreements (a value present in the
    row that the center lacks or holds otherwise), nearest by weighted cost."""
    best = np.empty(rows.shape[0], dtype=np.int64)
    dist = np.empty(rows.shape[0], dtype=np.int64)
    for s in range(0, rows.shape[0], chunk):
        R = rows[s : s + chunk]
        bad = (R[:, None, :] >= 0) & ((centers[None, :, :] < 0) | (R[:, None, :] != centers))
        cost = bad.astype(np.float64) @ weight
        j = np.argmin(cost, axis=1)
        best[s : s + chunk] = j
        dist[s : s + chunk] = bad[np.arange(R.shape[0]), j].sum(axis=1)
    return best, dist


def strata_suppression(
    codes: np.ndarray,
    k: int,
    *,
    importance: Sequence[int] | None = None,
    max_subsets: int = 4096,
) -> Suppression:
    """Partition the records into strata of >= k mutually matching records, suppressing the
    values that disagree with the stratum's (see the module docstring).

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Categorical key codes, -1 for a missing value.
    k : int
        Minimum stratum size, 2 <= k <= n.
    importance : sequence of int, optional
        Key indices, most important first.
    max_subsets : int
        At most this many key subsets are tried per level for new strata (2^d in all).

    Returns
    -------
    Suppression
        With ``labels`` (n,): the stratum of every record. Every stratum has >= k records and
        every two of its records match, so the frequencies are >= k.
    """
    C = _check_codes(codes)
    k = check_k(k, C.shape[0])
    n, d = C.shape
    rank = importance_rank(C, importance)
    # Weighted cost of a disagreement: 1 per value, importance breaking ties.
    weight = 1.0 + (rank + 1.0) / (d * (n * d + 1.0))
    labels = -np.ones(n, dtype=np.int64)
    centers: list[np.ndarray] = []
    complete = (C >= 0).all(axis=1)
    ids = np.full(n, -1, dtype=np.int64)
    if complete.any():
        ids[complete] = row_ids(C[complete])
        sizes = np.bincount(ids[complete])
        for g in np.flatnonzero(sizes >= k):
            members = np.flatnonzero(ids == g)
            labels[members] = len(centers)
            centers.append(C[members[0]].copy())
    levels = 0
    for t in range(d + 1):
        pending = np.flatnonzero(labels < 0)
        if pending.size == 0:
            break
        levels = t
        subsets = sorted(combinations(range(d), t), key=lambda T: (weight[list(T)].sum(), T))
        for T in subsets[:max_subsets]:
            pending = np.flatnonzero(labels < 0)
            if pending.size < k:
                break
            keep = [a for a in range(d) if a not in T]
            gid = row_ids(C[pending][:, keep] + 1)  # -1 (missing) is a value here
            sizes = np.bincount(gid)
            for g in np.flatnonzero(sizes >= k):
                members = pending[gid == g]
                center = C[members[0]].copy()
                for a in T:
                    col = C[members, a]
                    col = col[col >= 0]
                    center[a] = np.bincount(col).argmax() if col.size else -1
                labels[members] = len(centers)
                centers.append(center)
        pending = np.flatnonzero(labels < 0)
        if pending.size and centers:
            nearest, dist = _attach_costs(C[pending], np.array(centers), weight)
            join = dist <= t
            labels[pending[join]] = nearest[join]
    if (labels < 0).any():  # fewer than k records left and no stratum: impossible for k <= n
        raise ParameterError("no stratum of k records could be formed; lower k")
    center_rows = np.array(centers)[labels]
    S = (C >= 0) & ((center_rows < 0) | (C != center_rows))
    out = C.copy()
    out[S] = -1
    return Suppression(
        codes=out,
        suppressed=S,
        frequencies=frequencies(out),
        algorithm="strata",
        labels=labels,
        details={"strata": len(centers), "levels": levels},
    )
