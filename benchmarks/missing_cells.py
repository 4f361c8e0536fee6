"""Numeric keys with missing values in spatial cells (mdav's ``cell_size``): CPU s and IL.

Usage::

    python benchmarks/missing_cells.py                        # n 20k, 100k, 200k
    python benchmarks/missing_cells.py --n 20000 1000000 --cell-size 2000 5000

Every run is ``sdcflow.methods.mixed.mask_keys`` (what the release's mask step calls)
with ``method: {name: mdav, k, cell_size}`` on ``numpy.random.default_rng(seed)`` records of
``d`` keys (default 5): standard normal, each value missing with probability ``missing``
(default 0.05, independently). With missing numbers a release groups the records with
MDAV-generic under partial distances (``heterogeneous_cells``; one pass over the file
without ``cell_size``), one run after the other in this process. Figures: CPU seconds of the
call (``time.process_time``, this process: the core is single-threaded here), CPU seconds per
1000 records, IL = 100 SSE / SST over the values present (``sse_sst_loss_present``, what the
release gates), k over identical released rows (a missing value is a value of its own),
which must be at least k, and ``blanked``: the values present in the file that a group
released missing because some of its records miss the key (one row per group).

The baseline, measured in the same run: the whole file in one pass at ``--baseline-n``
(default 20000; one pass costs O(n^2)), so that every IL at that n is also given as its
excess over one pass (``IL over``, %), and every time as its ratio to the one-pass time.
Figures and commands: ``docs/benchmarks/``, section "Missing numbers at scale".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.core.measures.information_loss import sse_sst_loss_present
from sdcflow.methods.keys import Key
from sdcflow.methods.microaggregation import MdavParams
from sdcflow.methods.mixed import mask_keys


def records(n: int, d: int, missing: float, seed: int) -> np.ndarray:
    """(n, d) standard normal records, each value NaN with probability ``missing``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < missing] = np.nan
    return X


def run(X: np.ndarray, k: int, cell_size: int | None) -> dict:
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    keys = [Key(name, "numeric") for name in names]
    params = MdavParams(k=k, cell_size=cell_size)
    t0 = time.process_time()
    result = mask_keys(frame, keys, params, np.random.default_rng(0))
    cpu = time.process_time() - t0
    points = np.asarray(result.points, dtype=np.float64)
    t1 = time.process_time()
    k_found = k_anonymity(result.masked[names])
    return {
        "n": X.shape[0],
        "cell_size": cell_size,
        "cpu_seconds": round(cpu, 2),
        "cpu_seconds_per_1k": round(1000 * cpu / X.shape[0], 4),
        "il": round(sse_sst_loss_present(X, points), 4),
        "k": int(k_found),
        "k_count_cpu_seconds": round(time.process_time() - t1, 2),
        "missing_kept": bool(np.isnan(points)[np.isnan(X)].all()),
        # values a group blanked because some of its records miss the key (one row per group)
        "blanked": int((np.isnan(points) & ~np.isnan(X)).sum()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000, 200_000])
    p.add_argument("--d", type=int, default=5)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--missing", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cell-size", type=int, nargs="+", default=[2000, 5000])
    p.add_argument("--baseline-n", type=int, default=20_000, help="0: no baseline")
    p.add_argument("--json", type=Path, help="also write every figure here")
    args = p.parse_args(argv)

    rows = []
    base: dict | None = None
    print(
        f"{'n':>8} {'cell_size':>9} {'CPU s':>9} {'CPU s/1k':>9} {'IL %':>8} {'IL over':>9}"
        f" {'CPU/base':>9} {'k':>4} {'missing kept':>12} {'blanked':>8}"
    )
    for n in sorted(args.n):
        X = records(n, args.d, args.missing, args.seed)
        sizes: list[int | None] = list(args.cell_size)
        if args.baseline_n and n == args.baseline_n:
            sizes = [None, *sizes]
        for size in sizes:
            if size is not None and size >= n:
                continue
            row = run(X, args.k, size)
            if size is None:
                base = row
            if base is not None and base["n"] == n and size is not None:
                row["il_over_one_pass_pct"] = round(100 * (row["il"] / base["il"] - 1), 3)
                row["cpu_over_one_pass"] = round(row["cpu_seconds"] / base["cpu_seconds"], 4)
            rows.append(row)
            excess = row.get("il_over_one_pass_pct")
            ratio = row.get("cpu_over_one_pass")
            print(
                f"{n:>8} {size or 'one pass':>9} {row['cpu_seconds']:>9.2f} "
                f"{row['cpu_seconds_per_1k']:>9.4f} {row['il']:>8.4f} "
                f"{'' if excess is None else f'{excess:+.2f} %':>9} "
                f"{'' if ratio is None else f'{ratio:.3f}':>9} {row['k']:>4} "
                f"{row['missing_kept']!s:>12} {row['blanked']:>8}",
                flush=True,
            )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
