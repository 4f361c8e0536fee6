"""Time MDAV-generic microaggregation; print one JSON line.

Usage::

    python benchmarks/mdav.py --csv ../shared/data/census.csv --k 5 --baseline
    python benchmarks/mdav.py --n 100000 --d 10 --seed 0 --k 5 [--baseline]

Input is either every numeric column of a CSV file or synthetic standard-normal data
(``numpy.random.default_rng(seed).standard_normal((n, d))``). The timed call is the masking
call alone, ``sdcflow.tasks.microaggregation.mdav.mdav(X, k)`` (validation, standardization,
grouping); reading the input, computing the loss and the numba compilation are outside the
clock (the kernel is compiled, or loaded from numba's on-disk cache, on a small warm-up file
first, and that time is reported as ``warmup_seconds``). ``il`` is IL = 100 SSE / SST.

Output keys: ``n, d, k, seconds, il`` (``seconds``: CPU seconds of this process, the unit of
``benchmarks/README.md``; ``wall_seconds`` beside it). With ``--baseline`` the straightforward
numpy MDAV (``mdav_groups_reference``, the executable specification the kernel must match) is
timed too: ``baseline_seconds``, ``baseline_il``, ``ratio`` (baseline / kernel CPU seconds)
and ``identical`` (same label of every record).

The figures and the commands that produced them: ``benchmarks/README.md``, "MDAV and PS".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.tasks.measures.information_loss import sse_sst_loss
from sdcflow.tasks.microaggregation.mdav import group_means, mdav


def load(args: argparse.Namespace) -> np.ndarray:
    """The (n, d) float64 input: a CSV's numeric columns, or synthetic normal data."""
    if args.csv is not None:
        frame = pd.read_csv(args.csv)
        numeric = frame.select_dtypes("number")
        if numeric.shape[1] == 0:
            sys.exit(f"{args.csv}: no numeric column")
        return numeric.to_numpy(dtype=np.float64)
    return np.random.default_rng(args.seed).standard_normal((args.n, args.d))


def timed(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, float, float]:
    """Run ``fn``; return its result, CPU seconds and wall seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--csv", type=Path, help="CSV file; all numeric columns are used")
    source.add_argument("--n", type=int, help="synthetic: number of records")
    parser.add_argument("--d", type=int, default=10, help="synthetic: number of columns")
    parser.add_argument("--seed", type=int, default=0, help="synthetic: random seed")
    parser.add_argument("--k", type=int, required=True, help="minimum group size")
    parser.add_argument(
        "--baseline", action="store_true", help="also time the straightforward numpy MDAV"
    )
    args = parser.parse_args(argv)
    X = load(args)

    warm = np.random.default_rng(1).standard_normal((200, X.shape[1]))
    _, _, warm_wall = timed(lambda: mdav(warm, 3))  # compile or load the numba cache

    labels, cpu, wall = timed(lambda: mdav(X, args.k))
    out = {
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "k": args.k,
        "seconds": round(cpu, 4),
        "il": round(sse_sst_loss(X, group_means(X, labels)), 4),
        "wall_seconds": round(wall, 4),
        "warmup_seconds": round(warm_wall, 4),
    }
    if args.baseline:
        base, bcpu, bwall = timed(lambda: mdav(X, args.k, kernel="numpy"))
        out["baseline_seconds"] = round(bcpu, 4)
        out["baseline_il"] = round(sse_sst_loss(X, group_means(X, base)), 4)
        out["baseline_wall_seconds"] = round(bwall, 4)
        out["ratio"] = round(bcpu / cpu, 1) if cpu > 0 else None
        out["identical"] = bool(np.array_equal(labels, base))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
