"""The constrained draw's closing of under-filled centres against the same loop with a list of
members per centre, the open centres counted by a sum at every step and the nearest open
centre found by a scan of them all (the code before the count and the tree): the same
labels, the same figures and the same draws from the generator, ties included."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
import pytest

from sdcflow.core.fuzzy.microaggregation import _constrained_draw


def listed_constrained_draw(
    indptr: np.ndarray,
    leaf: np.ndarray,
    prob: np.ndarray,
    labels: np.ndarray,
    centres: np.ndarray,
    Z: np.ndarray,
    k: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Close under-filled centres and redraw their records (module docstring)."""
    C = len(centres)
    counts = np.bincount(labels, minlength=C)
    members: list[list[int]] = [[] for _ in range(C)]
    for rec, lab in enumerate(labels):
        members[lab].append(rec)
    open_ = np.ones(C, dtype=bool)
    heap = [(int(counts[i]), i) for i in range(C) if 0 < counts[i] < k]
    heapq.heapify(heap)
    closed = redrawn = fallback = 0
    while heap:
        cnt, i = heapq.heappop(heap)
        if not open_[i] or cnt != counts[i] or not 0 < counts[i] < k:
            continue
        if open_.sum() == 1:
            break
        open_[i] = False
        closed += 1
        recs, members[i], counts[i] = members[i], [], 0
        for rec in recs:
            a, b = indptr[rec], indptr[rec + 1]
            lv, pv = leaf[a:b], prob[a:b] * open_[leaf[a:b]]
            total = pv.sum()
            if total > 0.0:
                j = int(np.searchsorted(np.cumsum(pv), rng.random() * total, side="right"))
                new = int(lv[min(j, b - a - 1)])
                while not open_[new]:  # guard against rounding at the end of the cdf
                    j -= 1
                    new = int(lv[j])
            else:
                cand = np.flatnonzero(open_)
                new = int(cand[np.argmin(((centres[cand] - Z[rec]) ** 2).sum(axis=1))])
                fallback += 1
            labels[rec] = new
            members[new].append(rec)
            counts[new] += 1
            redrawn += 1
            if 0 < counts[new] < k:
                heapq.heappush(heap, (int(counts[new]), new))
    # TV distance between each record's intended distribution and its restriction to the open
    # centres: the mass its distribution put on closed centres.
    on_closed = np.add.reduceat(prob * ~open_[leaf], indptr[:-1]) if len(prob) else np.zeros(0)
    return labels, {
        "closed_centres": int(closed),
        "redrawn_records": int(redrawn),
        "nearest_open_fallbacks": int(fallback),
        "assignment_tv_mean": float(on_closed.mean()) if on_closed.size else 0.0,
        "assignment_tv_max": float(on_closed.max()) if on_closed.size else 0.0,
    }


def _partition(seed: int) -> tuple[Any, ...]:
    """A CSR draw distribution of n records over C centres (1..5 entries a record, some of
    them zero), the first draw's labels, centres and records; many centres below k."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(20, 400)), 3
    C = int(rng.integers(2, max(3, n // 2)))
    entries = rng.integers(1, 6, size=n)
    indptr = np.concatenate([[0], np.cumsum(entries)])
    leaf = np.concatenate(
        [rng.choice(C, size=e, replace=False) if e <= C else rng.integers(0, C, e) for e in entries]
    )
    prob = rng.random(leaf.size) * (rng.random(leaf.size) > 0.2)
    sums = np.add.reduceat(prob, indptr[:-1])
    prob = np.where(
        sums[np.repeat(np.arange(n), entries)] > 0,
        prob / np.maximum(sums, 1e-300)[np.repeat(np.arange(n), entries)],
        0.0,
    )
    labels = np.array([leaf[a] for a in indptr[:-1]], dtype=np.int64)
    return indptr, leaf, prob, labels, rng.standard_normal((C, d)), rng.standard_normal((n, d))


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(60))
def test_the_draw_closes_and_redraws_as_the_listed_members_did(seed, ties):
    indptr, leaf, prob, labels, centres, Z = _partition(seed)
    if ties:  # centres on a coarse grid: equal centres, and records equally far from several
        centres, Z = np.round(centres), np.round(Z)
    k = int(np.random.default_rng(seed).integers(2, 8))
    got = _constrained_draw(
        indptr, leaf, prob, labels.copy(), centres, Z, k, np.random.default_rng(seed)
    )
    expected = listed_constrained_draw(
        indptr, leaf, prob, labels.copy(), centres, Z, k, np.random.default_rng(seed)
    )
    assert np.array_equal(got[0], expected[0])
    assert got[1] == expected[1]
