"""Cells: the a-weighted median partition with k and l (eq. 19, 29), on hand-checkable data."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.box.partition import bounding_boxes, box_partition, distinct_counts
from sdcflow.errors import InputError, Reason

# x = 0..7; y a permutation of 0..7
XY = np.array([[0, 3], [1, 1], [2, 0], [3, 2], [4, 7], [5, 5], [6, 4], [7, 6]], dtype=float)


def _cells(labels):
    return sorted(sorted(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels))


def test_sensitivity_picks_the_side():
    # a = (1, 0) (mean of x): 8 records -> cut at rank 2 * (4 // 2) = 4 in x -> {0..3}, {4..7};
    # each 4 -> cut at rank 2 -> pairs of consecutive x.
    lab = box_partition(XY, np.tile([1.0, 0.0], (8, 1)), 2)
    assert _cells(lab) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    # a = (0, 1) (mean of y): pairs of consecutive y: y = 0,1 -> rows 2,1; 2,3 -> rows 3,0;
    # 4,5 -> rows 6,5; 6,7 -> rows 7,4.
    lab = box_partition(XY, np.tile([0.0, 1.0], (8, 1)), 2)
    assert _cells(lab) == [[0, 3], [1, 2], [4, 7], [5, 6]]


def test_largest_a_weighted_width_first():
    # Widths 7 and 7; a = (1, 3): A_y W_y = 24 * 7 > A_x W_x = 8 * 7 -> first cut in y
    # (rows with y <= 3 = {0, 1, 2, 3}); then in each half x has width 3, y width 3 ->
    # y again (3 * 3 * 4 > 1 * 3 * 4): the same pairs as the y-only partition.
    lab = box_partition(XY, np.tile([1.0, 3.0], (8, 1)), 2)
    assert _cells(lab) == [[0, 3], [1, 2], [4, 7], [5, 6]]


def test_multiple_of_k_cut_gives_exactly_k():
    # n = 9, k = 3: cut at rank 3 * (3 // 2) = 3 -> 3 | 6 -> 3 | 3 | 3
    X = np.arange(9.0)[:, None]
    lab = box_partition(X, np.ones_like(X), 3)
    np.testing.assert_array_equal(np.bincount(lab), [3, 3, 3])


def test_cuts_never_split_ties():
    # (0,0,0,1,1,1), k = 2: goal rank 2 lies inside the tie at 0; the only clean cut is rank 3
    X = np.array([0, 0, 0, 1, 1, 1], dtype=float)[:, None]
    lab = box_partition(X, np.ones_like(X), 2)
    assert _cells(lab) == [[0, 1, 2], [3, 4, 5]]


def test_l_diversity_blocks_splits():
    X = np.array([0.0, 0.0, 1.0, 1.0])[:, None]
    assert np.unique(box_partition(X, np.ones_like(X), 2)).size == 2
    # halves {0, 0} and {1, 1} have one value each: no split with l = 2
    assert np.unique(box_partition(X, np.ones_like(X), 2, ell=2)).size == 1
    # eps = 1 on (0, 0.5, 2, 2.5): gaps 0.5, 1.5, 0.5 -> 2 distinct values in the file, 1 per half
    Y = np.array([0.0, 0.5, 2.0, 2.5])[:, None]
    assert np.unique(box_partition(Y, np.ones_like(Y), 2, ell=2, eps=1.0)).size == 1
    assert np.unique(box_partition(Y, np.ones_like(Y), 2, ell=2, eps=0.4)).size == 2


def test_distinct_counts_eq29_by_hand():
    X = np.array([[0.0, 5.0], [0.4, 5.0], [0.8, 5.0], [3.0, 6.0]])
    labels = np.array([0, 0, 0, 1])
    # eps = (0.5, 0): cell 0 x gaps 0.4, 0.4 < 0.5 -> 1 value (chained); y: 1 value
    np.testing.assert_array_equal(distinct_counts(X, labels, [0.5, 0.0]), [[1, 1], [1, 1]])
    np.testing.assert_array_equal(distinct_counts(X, labels, [0.3, 0.0]), [[3, 1], [1, 1]])


def test_l_impossible_names_the_fix():
    X = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]])
    with pytest.raises(InputError) as e:
        box_partition(X, np.ones_like(X), 2, ell=2)
    assert e.value.code is Reason.PARAMETER and e.value.field == "ell"


@pytest.mark.parametrize("ell", [None, 2, 3])
def test_random_data_invariants(ell):
    rng = np.random.default_rng(0)
    X = np.round(rng.lognormal(size=(3000, 4)), 1)  # ties on purpose
    a = np.abs(X - X.mean(axis=0)) + rng.uniform(size=X.shape)
    lab = box_partition(X, a, 5, ell=ell)
    sizes = np.bincount(lab)
    assert sizes.min() >= 5
    if ell is not None:
        assert distinct_counts(X, lab).min() >= ell
    lo, hi = bounding_boxes(X, lab)
    assert ((X >= lo[lab]) & (X <= hi[lab])).all()  # every record inside its box
    # boxes are disjoint: no record lies inside another cell's box
    inside = ((X[:, None, :] >= lo[None]) & (X[:, None, :] <= hi[None])).all(axis=2)
    assert inside.sum(axis=1).max() == 1


def _reference_partition(X, a, k, ell=None):
    """Plain recursion, one cell at a time, with the rules of ``box_partition``: the clean cut
    nearest to rank k * ((m // k) // 2), sides tried by (feasible, A_j W_j, W_j / sd_j)."""
    sd = X.std(axis=0)
    cells, out = [np.arange(len(X))], []
    while cells:
        idx = cells.pop()
        m = idx.size
        if m < 2 * k:
            out.append(idx)
            continue
        width = X[idx].max(axis=0) - X[idx].min(axis=0)
        score = a[idx].sum(axis=0) * width
        cuts = {}
        for j in range(X.shape[1]):
            order = idx[np.argsort(X[idx, j], kind="stable")]
            v = X[order, j]
            goal = k * ((m // k) // 2)
            cand = [s for s in range(k, m - k + 1) if v[s] > v[s - 1]]
            if cand:
                s = min(cand, key=lambda s, goal=goal: (abs(s - goal), s))
                cuts[j] = (order[:s], order[s:])
        split = None
        for j in sorted(cuts, key=lambda j: (score[j], width[j] / sd[j]), reverse=True):
            left, right = cuts[j]
            if ell is None or all(
                (distinct_counts(X[part], np.zeros(part.size, int)) >= ell).all()
                for part in (left, right)
            ):
                split = (left, right)
                break
        if split is None:
            out.append(idx)
        else:
            cells.extend(split)
    return sorted(sorted(c.tolist()) for c in out)


@pytest.mark.parametrize("ell", [None, 2])
def test_vectorized_partition_matches_the_plain_recursion(ell):
    rng = np.random.default_rng(21)
    X = np.round(rng.lognormal(size=(600, 3)), 1)
    a = np.column_stack([np.abs(X[:, 0] - X[:, 0].mean()), np.ones(600), np.zeros(600)])
    lab = box_partition(X, a, 4, ell=ell)
    assert _cells(lab) == _reference_partition(X, a, 4, ell)
