"""Time MDAV-generic microaggregation; print one JSON line.

Usage::

    python benchmarks/mdav.py --csv ../shared/data/census.csv --k 5 --baseline
    python benchmarks/mdav.py --n 100000 --d 10 --seed 0 --k 5 [--baseline]
    python benchmarks/mdav.py --n 1000000 --d 10 --seed 0 --k 5 --cell-size 16384 --exact [--bound]

Input is either every numeric column of a CSV file or synthetic standard-normal data
(``numpy.random.default_rng(seed).standard_normal((n, d))``). The timed call is the masking
call alone, ``sdcflow.core.microaggregation.mdav.mdav(X, k)`` (validation, standardization,
grouping); reading the input, computing the loss and the numba compilation are outside the
clock (the kernel is compiled, or loaded from numba's on-disk cache, on a small warm-up file
first, and that time is reported as ``warmup_seconds``). ``il`` is IL = 100 SSE / SST.

Output keys: ``n, d, k, seconds, il`` (``seconds``: CPU seconds of this process, the unit of
``docs/benchmarks/``; ``wall_seconds`` beside it). With ``--baseline`` the straightforward
numpy MDAV (``mdav_groups_reference``, the executable specification the kernel must match) is
timed too: ``baseline_seconds``, ``baseline_il``, ``ratio`` (baseline / kernel CPU seconds)
and ``identical`` (same label of every record).

With ``--cell-size C`` the timed call is MDAV within spatial cells of at most C records, refined
across their borders (``blocked_mdav``, the method's ``cell_size``; standardization included);
``--exact`` also times exact MDAV on the same data (``exact_seconds``, ``exact_il`` and
``il_over_exact``, the ratio of the two losses); ``--bound`` computes the lower bound of any
partition (``bound_il``, ``il_over_bound``, ``bound_seconds``; ``bound_status`` says when its
exact nearest-neighbour search exceeded ``--bound-seconds``).

The figures and the commands that produced them: ``docs/benchmarks/``, "MDAV and PS".
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

from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation.blocked import blocked_mdav
from sdcflow.core.microaggregation.bound import sse_lower_bound
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.validation import check_matrix


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
    parser.add_argument("--cell-size", type=int, help="MDAV in spatial cells of this size")
    parser.add_argument("--exact", action="store_true", help="with --cell-size: exact MDAV too")
    parser.add_argument("--bound", action="store_true", help="the lower bound and the ratio")
    parser.add_argument("--bound-seconds", type=float, default=600.0, help="bound's budget")
    args = parser.parse_args(argv)
    X = load(args)

    warm = np.random.default_rng(1).standard_normal((12000, X.shape[1]))
    _, _, warm_wall = timed(lambda: mdav(warm[:200], 3))  # compile or load the numba cache
    if args.cell_size is not None:  # the refinement kernels too (neighbour lists beyond 8192)
        blocked_mdav(working_scale(warm), 3, 4096)

    def masking() -> np.ndarray:
        if args.cell_size is None:
            return mdav(X, args.k)
        return blocked_mdav(working_scale(check_matrix(X)), args.k, args.cell_size)

    labels, cpu, wall = timed(masking)
    il = sse_sst_loss(X, group_means(X, labels))
    out = {
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "k": args.k,
        "cell_size": args.cell_size,
        "seconds": round(cpu, 4),
        "il": round(il, 4),
        "wall_seconds": round(wall, 4),
        "warmup_seconds": round(warm_wall, 4),
    }
    if args.cell_size is not None and args.exact:
        exact, ecpu, _ = timed(lambda: mdav(X, args.k))
        out["exact_seconds"] = round(ecpu, 4)
        out["exact_il"] = round(sse_sst_loss(X, group_means(X, exact)), 4)
        out["il_over_exact"] = round(il / out["exact_il"], 4)
    if args.bound:
        Z = working_scale(check_matrix(X))
        bound = sse_lower_bound(Z, args.k, seconds=args.bound_seconds)
        out["bound_seconds"] = round(bound.seconds, 2)
        out["bound_status"] = bound.status
        if bound.sse is not None:
            out["bound_il"] = round(100 * bound.sse / float((Z**2).sum()), 4)
            out["il_over_bound"] = round(il / out["bound_il"], 4)
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
