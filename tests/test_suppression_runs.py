"""The local suppression on runs of records against the same greedy written record by record
(``tests/record_local_suppression.py``): the same released rows, suppressions, class sizes
and figures for every record, on random files that reach every path (donors, the all-blank
row's donors, restoring moves that cut a run)."""

from __future__ import annotations

import numpy as np
import pytest
from record_local_suppression import (
    record_greedy,
    record_lower_bound,
    record_restore,
)

from sdcflow.core.distinct import row_ids
from sdcflow.core.suppression import local
from sdcflow.core.suppression.local import (
    importance_rank,
    local_suppression,
    lower_bound,
    restore,
    strata_runs,
    strata_suppression,
)
from sdcflow.core.suppression.runs import Runs, front
from sdcflow.errors import DataError, ParameterError


def _file(seed: int) -> tuple[np.ndarray, int]:
    """A small file of categorical codes, skewed or flat, with or without missing values."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 200))
    d = int(rng.integers(1, 5))
    k = int(rng.integers(2, min(n, 12) + 1))
    levels = rng.integers(1, 8, size=d)
    p = rng.dirichlet(np.full(8, rng.choice([0.2, 1.0, 5.0])))
    C = np.stack([rng.choice(8, size=n, p=p) % levels[j] for j in range(d)], axis=1)
    C = C.astype(np.int32)
    C[rng.random((n, d)) < rng.choice([0.0, 0.05, 0.3])] = -1
    return C, k


def _counted(C: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """The distinct rows of ``C``, every record's row, the rows' counts, and an order of
    the rows to give them in (not sorted)."""
    distinct, ids = np.unique(C, axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    shuffled = np.random.default_rng(seed).permutation(distinct.shape[0])
    return distinct, ids, np.bincount(ids), shuffled


def _by_row(C: np.ndarray) -> np.ndarray:
    """The records in the order the runs take them: by row, then record."""
    return np.argsort(row_ids(C + 1), kind="stable")


@pytest.mark.parametrize("batch", range(4))
def test_the_greedy_on_runs_releases_every_record_as_the_record_greedy(batch, monkeypatch):
    paths = {"all-blank donors": 0, "cut runs": 0, "donors": 0, "restored": 0}
    donors, split = local._donors, Runs.split

    def counted_donors(*args, **kwargs):
        paths["all-blank donors"] += 1
        return donors(*args, **kwargs)

    def counted_split(self, at, first):
        paths["cut runs"] += 1
        return split(self, at, first)

    monkeypatch.setattr(local, "_donors", counted_donors)
    monkeypatch.setattr(Runs, "split", counted_split)
    for seed in range(batch * 150, (batch + 1) * 150):
        C, k = _file(seed)
        order = _by_row(C)
        rank = importance_rank(C)
        expected = record_greedy(C[order], k, rank)
        done = local_suppression(C, k)
        assert np.array_equal(done.codes[order], expected.codes), seed
        assert np.array_equal(done.suppressed[order], expected.suppressed), seed
        assert np.array_equal(done.frequencies[order], expected.frequencies), seed
        assert {key: done.details[key] for key in expected.details} == expected.details, seed
        paths["donors"] += expected.details.get("donors", 0) > 0
        paths["restored"] += expected.details["suppressed_then_restored"] > 0
    assert all(paths.values()), paths  # every path was taken in this batch


@pytest.mark.parametrize("seed", range(40))
def test_the_bound_from_counts_is_the_bound_of_the_records(seed):
    C, k = _file(seed)
    distinct, _, counts, shuffled = _counted(C, seed)
    expected = record_lower_bound(C, k)
    assert lower_bound(C, k) == expected
    assert lower_bound(distinct[shuffled], k, counts=counts[shuffled]) == expected


@pytest.mark.parametrize("seed", range(60))
def test_strata_from_counts_are_the_strata_of_the_records(seed):
    C, k = _file(seed)
    distinct, ids, counts, shuffled = _counted(C, seed)
    done = strata_runs(distinct[shuffled], counts[shuffled], k)
    records = strata_suppression(C, k)
    # every record of the file, by row then record, is the run's (row, rank)
    runs = done.runs
    order = _by_row(C)
    row = ids[order]
    rank = np.arange(C.shape[0]) - np.searchsorted(row, row)
    offset = np.arange(C.shape[0]) - runs.per_record(np.cumsum(runs.count) - runs.count)
    assert np.array_equal(runs.per_record(shuffled[runs.source]), row)
    assert np.array_equal(runs.per_record(runs.ranks()) + offset, rank)
    assert np.array_equal(runs.per_record(runs.codes), records.codes[order])
    assert np.array_equal(runs.per_record(runs.suppressed), records.suppressed[order])
    assert np.array_equal(runs.per_record(done.labels), records.labels[order])
    assert done.details == records.details


def test_runs_of_one_row_are_consecutive_ranks_from_zero():
    C, k = _file(11)
    distinct, _, counts, _ = _counted(C, 11)
    runs = strata_runs(distinct, counts, k).runs
    for source in np.unique(runs.source):
        mine = np.flatnonzero(runs.source == source)
        assert np.array_equal(mine, np.arange(mine[0], mine[-1] + 1))  # consecutive
        lo = runs.ranks()[mine]
        assert lo[0] == 0
        assert np.array_equal(lo[1:], lo[:-1] + runs.count[mine][:-1])
        assert runs.count[mine].sum() == counts[source]


def test_the_in_memory_greedy_gives_a_record_the_release_of_its_rank_in_its_row():
    # a file in which the order of the records of different rows decides who gives: taken
    # in file order, the release differs from the runs'; taken as the runs take them
    # (by row, then record), it is the same, so the streamed strata are the in-memory ones
    C, k = _file(4)
    rank = importance_rank(C)
    in_file_order = record_greedy(C, k, rank)
    done = local_suppression(C, k)
    assert not np.array_equal(in_file_order.codes, done.codes)
    assert in_file_order.total == done.total
    order = _by_row(C)
    assert np.array_equal(done.codes[order], record_greedy(C[order], k, rank).codes)


@pytest.mark.parametrize("seed", range(40))
def test_restore_of_records_in_file_order_is_the_record_restore(seed):
    C, k = _file(seed)
    rng = np.random.default_rng(seed + 1000)
    S = (rng.random(C.shape) < 0.4) & (C >= 0)
    released = np.where(S, -1, C)
    rank = importance_rank(C)
    got = restore(released, C, S, k, rank)
    expected = record_restore(released, C, S, k, rank)
    for a, b in zip(got, expected, strict=True):
        assert np.array_equal(a, b)


def test_strata_of_a_billion_records_hold_a_row_per_run_not_per_record():
    rng = np.random.default_rng(7)
    distinct = np.unique(rng.integers(-1, 12, size=(2000, 3)), axis=0).astype(np.int32)
    counts = rng.integers(1, 3_000_000, size=distinct.shape[0])
    counts[:40] = rng.integers(1, 5, size=40)  # rows short of k
    done = strata_runs(distinct, counts, 5)
    assert done.runs.records == counts.sum() > 10**9
    assert done.runs.count.size < 4 * distinct.shape[0]
    _, sizes = done.runs.class_sizes()
    assert sizes.min() >= 5


def test_front_takes_whole_runs_then_cuts_one():
    assert front(np.array([3, 2, 4]), 5) == (2, -1, 0)
    assert front(np.array([3, 2, 4]), 6) == (2, 2, 1)
    assert front(np.array([3, 2, 4]), 1) == (0, 0, 1)
    assert front(np.array([3, 2, 4]), 9) == (3, -1, 0)


def test_counts_of_rows_that_repeat_are_refused():
    rows = np.array([[0, 1], [0, 1]], dtype=np.int32)
    with pytest.raises(DataError, match="distinct"):
        strata_runs(rows, np.array([3, 4]), 2)
    with pytest.raises(DataError, match=">= 1"):
        strata_runs(rows[:1], np.array([0]), 2)
    with pytest.raises(DataError, match="needs the rows' counts"):
        strata_runs(rows[:1], None, 2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "counts",
    [
        np.array([2**64 - 1, 5, 5], dtype=np.uint64),  # wraps to -1 as int64
        np.array([2**63, 5, 5], dtype=np.uint64),
        np.array([2**62] * 3, dtype=np.int64),  # the sum wraps
        np.array([2**53, 1, 1], dtype=np.int64),  # sums no longer exact in float64
    ],
)
def test_counts_beyond_exact_sums_are_refused_not_wrapped(counts):
    rows = np.array([[0, 1], [1, 1], [2, -1]], dtype=np.int32)
    with pytest.raises(DataError, match=r"2\*\*53"):
        strata_runs(rows, counts, 2)
    with pytest.raises(DataError, match=r"2\*\*53"):
        lower_bound(rows, 2, counts=counts)


def test_the_bound_refuses_a_k_the_file_cannot_reach():
    rows = np.array([[0, 1], [1, 1], [2, -1]], dtype=np.int32)
    counts = np.array([3, 2, 4])
    with pytest.raises(ParameterError, match="larger than the number of records"):
        lower_bound(rows, 10, counts=counts)
    with pytest.raises(ParameterError, match=">= 2"):
        lower_bound(rows, 1, counts=counts)
