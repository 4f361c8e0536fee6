"""Records in runs: the local suppression's working form, so that it holds a row per run of
records, not per record.

The greedy treats the records of one combination of key values alike except for their
order: whole classes move together, and donors and restoring moves take the first records
of a set in record order. With the records sorted by combination (and by row id inside
one), every set it takes is then a run of consecutive records, and a file of ten million
records over a few thousand combinations is a few thousand runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdcflow.core.distinct import row_ids


@dataclass
class Runs:
    """Consecutive records that share their original and their released row.

    Run i stands for ``count[i]`` consecutive records; the runs are in record order.

    Attributes
    ----------
    source : ndarray of shape (R,), int64
        The combination (index into the distinct rows given) the run's records come from.
    original : ndarray of shape (R, d), int32
        The records' codes before suppression, -1 missing.
    codes : ndarray of shape (R, d), int32
        The released codes, -1 missing or suppressed.
    suppressed : ndarray of shape (R, d), bool
        The values suppressed (and not given back).
    count : ndarray of shape (R,), int64
        Records in the run, >= 1.
    """

    source: np.ndarray
    original: np.ndarray
    codes: np.ndarray
    suppressed: np.ndarray
    count: np.ndarray

    @classmethod
    def of_records(cls, original: np.ndarray, codes: np.ndarray, suppressed: np.ndarray) -> Runs:
        """Every record its own run. Shapes: (n, d) each -> n runs."""
        n = original.shape[0]
        return cls(
            np.arange(n, dtype=np.int64),
            original,
            codes,
            np.asarray(suppressed, dtype=bool),
            np.ones(n, dtype=np.int64),
        )

    @property
    def records(self) -> int:
        return int(self.count.sum())

    def take(self, index: np.ndarray) -> Runs:
        return Runs(
            self.source[index],
            self.original[index],
            self.codes[index],
            self.suppressed[index],
            self.count[index],
        )

    def split(self, at: np.ndarray, first: np.ndarray) -> tuple[Runs, np.ndarray, np.ndarray]:
        """Cut each run ``at[i]`` after its first ``first[i]`` records (0 < first < count).

        Returns the new runs, for every old run the index of its (first) part, and for
        every new run the old run it comes from.
        Shapes: at (m,) distinct, first (m,) -> (R + m runs, (R,), (R + m,))."""
        reps = np.ones(self.count.size, dtype=np.int64)
        reps[at] = 2
        index = np.repeat(np.arange(self.count.size), reps)
        out = self.take(index)
        position = np.cumsum(reps) - reps
        out.count[position[at]] = first
        out.count[position[at] + 1] = self.count[at] - first
        return out, position, index

    def class_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """Every run's class of identical released rows (dense ids in row order) and the
        classes' sizes in records. Shapes: -> (R,), (classes,)."""
        ids = row_ids(self.codes + 1)
        return ids, weighted_counts(ids, self.count)

    def merged(self) -> Runs:
        """Adjacent runs of one source with equal released rows and suppressions as one."""
        if self.count.size < 2:
            return self
        same = (
            (self.source[1:] == self.source[:-1])
            & (self.codes[1:] == self.codes[:-1]).all(axis=1)
            & (self.suppressed[1:] == self.suppressed[:-1]).all(axis=1)
        )
        start = np.flatnonzero(np.concatenate([[True], ~same]))
        out = self.take(start)
        out.count = np.add.reduceat(self.count, start)
        return out

    def ranks(self) -> np.ndarray:
        """Every run's first record's rank among its source's records (the runs of a
        source being consecutive). Shapes: -> (R,)."""
        before = np.cumsum(self.count) - self.count
        first = np.concatenate([[True], self.source[1:] != self.source[:-1]])
        return before - before[first][np.cumsum(first) - 1]

    def per_record(self, values: np.ndarray) -> np.ndarray:
        """A value per run repeated for each of its records. Shapes: (R, ...) -> (n, ...)."""
        return np.repeat(values, self.count, axis=0)


def weighted_counts(ids: np.ndarray, count: np.ndarray, size: int = 0) -> np.ndarray:
    """Records per id, each run counting its records: exact integers (bincount's float sums
    are exact below 2**53 records). Shapes: (R,), (R,) -> (max(ids) + 1 or size,)."""
    return np.rint(np.bincount(ids, weights=count, minlength=size)).astype(np.int64)


def front(count: np.ndarray, take: int) -> tuple[int, int, int]:
    """The first ``take`` records of consecutive runs of ``count`` records: how many runs
    are taken whole, and the run cut (-1 if none) with the records it gives.
    Shapes: (m,) -> (whole runs, cut run, records of the cut run)."""
    ends = np.cumsum(count)
    whole = int(np.searchsorted(ends, take, side="right"))
    if whole < count.size and (ends[whole - 1] if whole else 0) < take:
        return whole, whole, take - int(ends[whole - 1] if whole else 0)
    return whole, -1, 0
