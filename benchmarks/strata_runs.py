"""The streamed mask's local suppression from the combinations' counts, against the record
greedy it replaced: time, peak memory and the same strata.

Usage::

    python benchmarks/strata_runs.py                       # n 1M and 10M, both files
    python benchmarks/strata_runs.py --n 3000000 --file skewed

Files (categorical codes only; what ``GROUP BY`` gives the streamed mask):

* ``census``: the categorical keys of ``benchmarks/scale.py --census`` (sex 2, region 12,
  activity 8 levels, uniform, each value missing with probability 0.002);
* ``skewed``: four keys of 2, 60, 400 and 20 levels, the third Zipf-distributed (exponent
  1.5), each value missing with probability 0.01: many combinations below k, so the greedy,
  its donors and its restoring pass do real work.

Each run, in this process, one after the other, measures with ``tracemalloc`` (numpy's
arrays are traced) the peak of the Python heap above its start and the wall seconds of:

* ``records`` (the anchor, the code before): the combinations repeated by their counts, a
  row per record, then the greedy written record by record (``tests/record_local_suppression.py``,
  the previous implementation kept as the tests' reference), its lower bound and the strata's
  labels;
* ``runs``: :func:`sdcflow.core.suppression.local.strata_runs` on the combinations and their
  counts.

It then checks that both give every record (by combination, then rank) the same released
row, suppressions and stratum. k = 5. Figures: ``docs/benchmarks/2026-11-29-census-streamed.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sdcflow.core.distinct import row_ids
from sdcflow.core.suppression.local import importance_rank, strata_runs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from record_local_suppression import record_greedy, record_lower_bound


def combinations(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows (sorted) and their counts of a file of ``n`` records."""
    rng = np.random.default_rng(seed)
    if kind == "census":
        levels, missing = (2, 12, 8), 0.002
        C = np.stack([rng.integers(0, m, n) for m in levels], axis=1)
    else:
        levels, missing = (2, 60, 400, 20), 0.01
        C = np.stack(
            [
                rng.integers(0, 2, n),
                rng.integers(0, 60, n),
                np.minimum(rng.zipf(1.5, n) - 1, 399),
                rng.integers(0, 20, n),
            ],
            axis=1,
        )
    C[rng.random(C.shape) < missing] = -1
    rows, counts = np.unique(C.astype(np.int32), axis=0, return_counts=True)
    return rows, counts.astype(np.int64)


def measured(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """``fn(*args)``, its wall seconds and the peak of the traced heap above its start (MB)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    out = fn(*args)
    wall = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    return out, wall, peak / 2**20


def by_records(rows: np.ndarray, counts: np.ndarray, k: int) -> dict[str, np.ndarray]:
    records = np.repeat(rows, counts, axis=0)
    rank = importance_rank(rows)
    record_lower_bound(records, k)
    done = record_greedy(records, k, rank)
    return {
        "codes": done.codes,
        "suppressed": done.suppressed,
        "labels": row_ids(done.codes + 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--file", choices=["census", "skewed"], nargs="+", default=["census", "skewed"])
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    strata_runs(np.array([[0], [1]], dtype=np.int32), np.array([3, 1]), 2)  # compiles
    print(
        f"{'file':>7} {'n':>9} {'rows':>6} {'runs':>6} {'records s':>10} {'runs s':>8}"
        f" {'records MB':>11} {'runs MB':>8} {'same':>5}"
    )
    out = []
    for kind in args.file:
        for n in args.n:
            rows, counts = combinations(kind, n, args.seed)
            old, old_s, old_mb = measured(by_records, rows, counts, args.k)
            new, new_s, new_mb = measured(strata_runs, rows, counts, args.k)
            runs = new.runs
            same = (
                np.array_equal(runs.per_record(runs.codes), old["codes"])
                and np.array_equal(runs.per_record(runs.suppressed), old["suppressed"])
                and np.array_equal(runs.per_record(new.labels), old["labels"])
            )
            del old
            row = {
                "file": kind,
                "n": n,
                "combinations": int(rows.shape[0]),
                "runs": int(runs.count.size),
                "records_seconds": round(old_s, 3),
                "runs_seconds": round(new_s, 3),
                "records_peak_mb": round(old_mb, 1),
                "runs_peak_mb": round(new_mb, 3),
                "same_strata": bool(same),
                "suppressed": int((runs.suppressed.sum(axis=1) * runs.count).sum()),
            }
            out.append(row)
            print(
                f"{kind:>7} {n:>9} {row['combinations']:>6} {row['runs']:>6} "
                f"{old_s:>10.2f} {new_s:>8.3f} {old_mb:>11.1f} {new_mb:>8.3f} {same!s:>5}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
