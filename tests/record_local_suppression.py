"""Local suppression's greedy written record by record: the independent reference of the
count-weighted greedy (``sdcflow.core.suppression.local``). Every step here takes records
(``np.flatnonzero`` over the file, prefixes of records in row order), as the greedy did
before it took runs of records, so the runs' splits, donors and restoring moves are checked
against records, not against themselves. The candidates and the compiled level-by-level
assignment (class-level in both) are the package's."""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Any

import numpy as np

from sdcflow.core.distinct import row_ids
from sdcflow.core.suppression._kernels import assign_levels
from sdcflow.core.suppression.local import Suppression, _candidates, _check_codes


def frequencies(codes: np.ndarray) -> np.ndarray:
    """Size of every record's class of identical rows. Shapes: (n, d) -> (n,)."""
    ids = row_ids(_check_codes(codes) + 1)
    return np.bincount(ids)[ids].astype(np.int64)


def record_donors(out: np.ndarray, short: np.ndarray, k: int) -> np.ndarray:
    """Blank every key of the records ``short`` (the all-blank row short of k) and of
    donors from the classes of more than k, fewest values first, so that the all-blank row
    reaches k. ``out`` (n, d) is changed in place and returned."""
    out[short] = -1
    ids = row_ids(out + 1)
    sizes = np.bincount(ids)
    blank_id = ids[short[0]]
    need = k - int(sizes[blank_id])
    classes = [g for g in range(sizes.size) if g != blank_id]
    first = np.unique(ids, return_index=True)[1]
    present = (out[first] >= 0).sum(axis=1)  # per class, before any is given
    # surplus first (the class keeps k), then whole classes, each by values per record
    spare = sorted((present[g], g) for g in classes if sizes[g] > k)
    for _, g in spare:
        if need <= 0:
            break
        take = np.flatnonzero(ids == g)[: min(int(sizes[g]) - k, need)]
        out[take] = -1
        need -= take.size
    if need > 0:
        whole = sorted((present[g] * int(sizes[g]), g) for g in classes if present[g])
        for _, g in whole:
            if need <= 0:
                break
            members = np.flatnonzero((ids == g) & (out >= 0).any(axis=1))
            out[members] = -1
            need -= members.size
    assert need <= 0  # n >= k records: the whole file reaches k
    return out


def record_greedy(C: np.ndarray, k: int, rank: np.ndarray) -> Suppression:
    ids = row_ids(C + 1)
    sizes = np.bincount(ids)
    first = np.unique(ids, return_index=True)[1]
    unsafe = np.flatnonzero(sizes < k)
    safe = np.flatnonzero(sizes >= k)
    out = C.copy()
    details: dict[str, Any] = {}
    if unsafe.size:
        cand = _candidates(C[first[unsafe]], C[first[safe]], sizes[safe], k, rank)
        assigned, _, given = assign_levels(sizes[unsafe].astype(np.int64), *cand["args"])
        index = np.full(sizes.size, -1, dtype=np.int64)
        index[unsafe] = np.arange(unsafe.size)
        cls = index[ids]
        moved = cls >= 0
        target = assigned[cls[moved]]
        done = target >= 0
        rows = np.flatnonzero(moved)
        out[rows[done]] = cand["target_rows"][target[done]]
        # donors: the first records of their class not yet given
        members = np.argsort(ids, kind="stable")
        start = np.searchsorted(ids[members], safe)
        used = np.zeros(safe.size, dtype=np.int64)
        for e in np.flatnonzero(given):
            v = cand["donor_class"][e]
            take = members[start[v] + used[v] : start[v] + used[v] + given[e]]
            out[take] = cand["target_rows"][cand["donor_target"][e]]
            used[v] += given[e]
        details["donors"] = int(given.sum())
        if not done.all():
            out = record_donors(out, rows[~done], k)
    S = (C >= 0) & (out < 0)
    made = int(S.sum())
    out, S, f, restored = record_restore(out, C, S, k, rank)
    details.update({"suppressed_then_restored": int(restored), "greedy_suppressions": made})
    return Suppression(codes=out, suppressed=S, frequencies=f, algorithm="greedy", details=details)


def record_restore(
    codes: np.ndarray,
    original: np.ndarray,
    suppressed: np.ndarray,
    k: int,
    rank: np.ndarray,
    *,
    passes: int = 4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``restore`` record by record: each group of records moving on a key, and the first
    records of a group that can spare only some, found over the whole file."""
    C = _check_codes(codes).copy()
    orig = _check_codes(original)
    S = np.array(suppressed, dtype=bool, copy=True)
    n = C.shape[0]
    k = int(k)
    total = 0
    for _ in range(passes):
        before = total
        for a in np.argsort(-np.asarray(rank), kind="stable"):
            rows = np.flatnonzero(S[:, a])
            if not rows.size:
                continue
            dest = C[rows].copy()
            dest[:, a] = orig[rows, a]
            ids = row_ids(np.concatenate([C, dest]) + 1)
            size = np.bincount(ids[:n], minlength=int(ids.max()) + 1)
            src, dst = ids[rows], ids[n:]
            order = np.lexsort((src, dst))
            rows, src, dst = rows[order], src[order], dst[order]
            cut = np.flatnonzero((np.diff(src) != 0) | (np.diff(dst) != 0)) + 1
            groups = np.split(np.arange(rows.size), cut)
            by_dst: dict[int, list[np.ndarray]] = {}
            for g in groups:
                by_dst.setdefault(int(dst[g[0]]), []).append(g)
            # rows that already hold k first: any record may join them
            for t in sorted(by_dst, key=lambda t: (-int(size[t] >= k), -int(size[t]))):
                plan = []
                for g in by_dst[t]:
                    s = int(src[g[0]])
                    m = g.size
                    if size[s] - m == 0 or size[s] - m >= k:
                        plan.append((s, g))
                    elif size[s] - k > 0:
                        plan.append((s, g[: int(size[s]) - k]))
                movable = sum(g.size for _, g in plan)
                if not plan or size[t] + movable < k:
                    continue
                for s, g in plan:
                    moved = rows[g]
                    C[moved, a] = orig[moved, a]
                    S[moved, a] = False
                    size[s] -= g.size
                    size[t] += g.size
                    total += g.size
        if total == before:
            break
    return C, S, frequencies(C), total


def record_lower_bound(codes: np.ndarray, k: int, *, max_subsets: int = 64) -> tuple[int, int]:
    """``lower_bound`` over the records: every projection counts the file's records one by
    one, not distinct rows weighted by their counts."""
    C = _check_codes(codes)
    k = int(k)
    n, d = C.shape
    ids = row_ids(C + 1)
    sizes = np.bincount(ids)
    first = np.unique(ids, return_index=True)[1]
    small = np.flatnonzero(sizes < k)
    below = int(sizes[small].sum())
    if not small.size:
        return 0, 0
    reps = C[first[small]]
    s = sizes[small]
    present = reps >= 0
    counts = present.sum(axis=1)
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
            has = (C[:, cols] >= 0).all(axis=1)
            mine = np.flatnonzero(present[:, cols].all(axis=1))
            if not mine.size:
                continue
            proj = row_ids(np.concatenate([C[has][:, cols], reps[mine][:, cols]]) + 1)
            reach = np.bincount(proj[: int(has.sum())], minlength=int(proj.max()) + 1)
            ok = reach[proj[int(has.sum()) :]] >= k
            np.minimum.at(fewest, mine[ok], counts[mine[ok]] - size)
    floor = np.maximum(1, counts - smallest + 1)
    fewest = np.where(fewest <= d, fewest, floor)
    terms = s * np.maximum(fewest, 1)
    # rows that others can complete: the joiners' term
    unsafe = (sizes < k)[ids].astype(np.float64)
    pattern = row_ids((reps < 0).astype(np.int32))
    for p in np.flatnonzero(np.bincount(pattern[fewest == 0])):
        at = np.flatnonzero((pattern == p) & (fewest == 0))
        keep = reps[at[0]] >= 0
        proj = row_ids(np.concatenate([C[:, keep], reps[at][:, keep]]) + 1)
        own = proj[n:]
        q = np.rint(np.bincount(proj[:n], weights=unsafe, minlength=int(proj.max()) + 1))[own]
        terms[at] = np.minimum(s[at], np.maximum(0, k - s[at] - (q - s[at])))
    return below, int(terms.sum())
