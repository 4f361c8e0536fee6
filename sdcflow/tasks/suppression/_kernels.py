"""Compiled kernels of local suppression: one pass over the records per decision.

Private module: callers (``local.py``) validate first and pass C-contiguous int32 code
matrices (-1 = missing or suppressed) and int64 frequency arrays. A missing value matches any
value (:mod:`sdcflow.tasks.measures.anonymity`); ``f[i]`` is the number of records matching
record i, itself included, and is kept exact after every suppression and every restoration:
suppressing key a of record i adds 1 to the records whose only disagreement with i was on a,
restoring it takes 1 from the records that agree with i everywhere but on a.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _scan(
    C: np.ndarray,
    i: int,
    cand: np.ndarray,
    single: np.ndarray,
    f: np.ndarray,
    k: int,
    helped: np.ndarray,
) -> int:
    """Records matching record ``i`` now (returned), and per key a the records that would
    match it once a is suppressed in ``i`` and match it nowhere else (``cand[a]``).

    ``single[j]`` receives the key of record j's only disagreement with i, -1 when they agree
    everywhere, -2 for two or more disagreements; ``helped[a]`` counts, among the records of
    ``cand[a]``, those still below k (whom suppressing a in i brings one match closer).
    """
    n, d = C.shape
    for a in range(d):
        cand[a] = 0
        helped[a] = 0
    base = 0
    for j in range(n):
        miss = 0
        key = -1
        for a in range(d):
            x = C[i, a]
            y = C[j, a]
            if x >= 0 and y >= 0 and x != y:
                miss += 1
                if miss == 2:
                    break
                key = a
        if miss == 0:
            base += 1
            single[j] = -1
        elif miss == 1:
            cand[key] += 1
            single[j] = key
            if f[j] < k:
                helped[key] += 1
        else:
            single[j] = -2
    return base


@nb.njit(cache=True, nogil=True)
def greedy_suppression(
    C: np.ndarray,
    f: np.ndarray,
    k: int,
    rank: np.ndarray,
    order: np.ndarray,
    suppressed: np.ndarray,
) -> int:
    """Suppress values of the records in ``order`` until each has ``f >= k``.

    For record i (while ``f[i] < k``): one scan gives, for every key a, the frequency i would
    have with a suppressed and how many records still below k it would then match. Among the
    keys that make i safe, the one that brings the most of those others closer is suppressed
    (they may then need no suppression of their own), ties to the least important (lowest
    ``rank``), then to the higher frequency; when no key makes i safe, the key giving the
    highest frequency (ties: most others helped, least important), and i is scanned again.
    Suppressing never lowers any frequency, so a record made safe stays safe.

    ``C`` (n, d) int32 and ``f`` (n,) int64 are updated in place, ``suppressed`` (n, d) bool
    marks the cells suppressed here. Returns the number of suppressions.
    """
    n, d = C.shape
    cand = np.zeros(d, dtype=np.int64)
    helped = np.zeros(d, dtype=np.int64)
    single = np.empty(n, dtype=np.int64)
    count = 0
    for t in range(order.size):
        i = order[t]
        while f[i] < k:
            base = _scan(C, i, cand, single, f, k, helped)
            best = -1
            best_safe = False
            best_freq = -1
            best_help = -1
            for a in range(d):
                if C[i, a] < 0:
                    continue
                freq = base + cand[a]
                safe = freq >= k
                take = False
                if best == -1 or (safe and not best_safe):
                    take = True
                elif safe == best_safe:
                    if safe:
                        key_new = (helped[a], -rank[a], freq)
                        key_old = (best_help, -rank[best], best_freq)
                    else:
                        key_new = (freq, helped[a], -rank[a])
                        key_old = (best_freq, best_help, -rank[best])
                    take = key_new > key_old
                if take:
                    best = a
                    best_safe = safe
                    best_freq = freq
                    best_help = helped[a]
            if best == -1:  # every key missing: i matches every record
                break
            for j in range(n):
                if single[j] == best:
                    f[j] += 1
            f[i] = best_freq
            C[i, best] = -1
            suppressed[i, best] = True
            count += 1
    return count


@nb.njit(cache=True, nogil=True, inline="always")
def _agree_except(C: np.ndarray, i: int, j: int, a: int) -> bool:
    """Whether records i and j match on every key but a (missing matches any value)."""
    for b in range(C.shape[1]):
        if b == a:
            continue
        x = C[i, b]
        y = C[j, b]
        if x >= 0 and y >= 0 and x != y:
            return False
    return True


@nb.njit(cache=True, nogil=True)
def restore_values(
    C: np.ndarray,
    original: np.ndarray,
    f: np.ndarray,
    k: int,
    cells_i: np.ndarray,
    cells_a: np.ndarray,
    suppressed: np.ndarray,
) -> int:
    """Give back suppressed values, in the order of the cells given, whenever every record
    keeps ``f >= k``.

    Restoring value v on key a of record i leaves i with the records that agree with it on
    the other keys and have v or a missing value on a; the records agreeing on the other keys
    with another value on a lose one match each, so each must have ``f > k``. Returns the
    number of values restored; ``C``, ``f`` and ``suppressed`` are updated in place.
    """
    n = C.shape[0]
    restored = 0
    for t in range(cells_i.size):
        i = cells_i[t]
        a = cells_a[t]
        if not suppressed[i, a]:
            continue
        v = original[i, a]
        count = 0
        ok = True
        for j in range(n):
            if not _agree_except(C, i, j, a):
                continue
            y = C[j, a]
            if y < 0 or y == v:
                count += 1
            elif f[j] - 1 < k:
                ok = False
                break
        if not ok or count < k:
            continue
        for j in range(n):
            if C[j, a] >= 0 and C[j, a] != v and _agree_except(C, i, j, a):
                f[j] -= 1
        C[i, a] = v
        f[i] = count
        suppressed[i, a] = False
        restored += 1
    return restored
