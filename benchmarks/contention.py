"""Do two pieces of the mask cost more CPU when they run at once? (the 2-worker scale-out)

Usage::

    python benchmarks/contention.py                 # 5 rounds, 250k records x 10 keys, k = 5
    python benchmarks/contention.py --rounds 3 --n 125000

The pieces a Dask cluster runs for blocked MDAV (``benchmarks/scale.py``) are the grouping
of a spatial cell (MDAV, then the in-cell local search) and the local search of a part of
the border search. Each round times one piece in a process of its own, then the same piece
in two processes started together -- what two workers on two cores do -- and prints the CPU
seconds (``time.process_time`` of the piece alone, the processes' start-up and the data's
load excluded) and their ratio to the piece alone, measured in the same round. A ratio above
1 is CPU the second worker adds by sharing the machine (caches, memory bandwidth) rather than
by doing more work.

The pieces: ``mdav`` -- MDAV on a cell of ``n / 2`` records; ``refine`` -- the
deterministic local search of one border part (:func:`~sdcflow.core.microaggregation.
blocked.refine_part`) on ``n`` records grouped by MDAV in two cells. Standard normal keys,
seed 0. Figures: ``docs/benchmarks/``, section "Scale-out", "A million records".
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PIECES = ("mdav", "refine")


def prepare(folder: Path, n: int, d: int, k: int) -> None:
    """The records and the labels the border search starts from, written to ``folder``."""
    from sdcflow.core.microaggregation.mdav import mdav_groups
    from sdcflow.core.microaggregation.neighbours import spatial_cells

    Z = np.random.default_rng(0).standard_normal((n, d))
    order, bounds = spatial_cells(Z, (n + 1) // 2)
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for lo, hi in itertools.pairwise(bounds):
        part = mdav_groups(np.ascontiguousarray(Z[order[lo:hi]]), k)
        labels[order[lo:hi]] = part + offset
        offset += int(part.max()) + 1
    np.save(folder / "Z.npy", Z)
    np.save(folder / "labels.npy", labels)


def piece(folder: Path, which: str, k: int) -> float:
    """CPU seconds of one piece in this process (its kernels loaded first, untimed)."""
    from sdcflow.core.microaggregation.blocked import refine_part, warm_mask
    from sdcflow.core.microaggregation.mdav import mdav_groups

    warm_mask()
    Z = np.load(folder / "Z.npy")
    labels = np.load(folder / "labels.npy")
    cell = np.ascontiguousarray(Z[: len(Z) // 2])
    t0 = time.process_time()
    if which == "mdav":
        mdav_groups(cell, k)
    else:
        refine_part(Z, labels, k)
    return time.process_time() - t0


def _run(folder: Path, which: str, k: int, copies: int) -> list[float]:
    cmd = [sys.executable, __file__, "--piece", which, "--folder", str(folder), "--k", str(k)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    return [float(p.communicate()[0].strip()) for p in procs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=250_000)
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--piece", choices=PIECES, help=argparse.SUPPRESS)
    p.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.piece:  # one timed piece, in a process of its own
        print(f"{piece(args.folder, args.piece, args.k):.4f}")
        return 0
    print(
        f"n={args.n} d={args.d} k={args.k}, {args.rounds} rounds on {os.cpu_count()} CPUs; "
        f"load before {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder, args.n, args.d, args.k)
        print("piece   CPU s alone (mean)  CPU s two at once (mean, per piece)  ratio")
        for which in PIECES:
            alone: list[float] = []
            both: list[float] = []
            for _ in range(args.rounds):  # alternated, so that drifts of the machine cancel
                alone += _run(folder, which, args.k, 1)
                both += _run(folder, which, args.k, 2)
            a, b = statistics.mean(alone), statistics.mean(both)
            print(f"{which:7s} {a:18.2f}  {b:35.2f}  {b / a:5.3f}")
    print(f"load after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
