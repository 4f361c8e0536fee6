"""Fuzzy microaggregation within spatial cells (``cell_size``): CPU seconds and IL in process.

Usage::

    python benchmarks/fuzzy_cells.py                                 # n 20k, 100k, 200k
    python benchmarks/fuzzy_cells.py --n 20000 --cell-size 5000 10000 20000 --restarts 1 5

Every run is ``sdcflow.methods.mixed.mask_keys`` (what the release's mask step calls)
with ``constrained_fuzzy``, ``guarantee: both``, ``k`` (5), the edit rule ``x0 >= -1000``
(true of every record) and ``seed``, on ``numpy.random.default_rng(seed).standard_normal((n,
d))`` (10 keys), one run after the other in this process. Figures: CPU seconds of the call
(``time.process_time``, this process; the numerical core is single-threaded here, so they do
not depend on the load of the machine), CPU seconds per 1000 records, IL = 100 SSE / SST on
the standardized keys, and the guarantees checked on the release (fewest records sharing a
released row; smallest expected centre size).

The baseline, measured in the same run: the whole file without cells at the smallest n
(``--baseline-n``, default 20000; without cells the cost grows as n^2), so that every IL at
that n is also given as its excess over the unpartitioned fit. A first small call compiles
the numba kernels before anything is timed. Figures and commands: ``docs/benchmarks/``,
section "Fuzzy microaggregation in cells".

``--processes P`` runs the cells on P worker processes (a ``ProcessPoolExecutor`` installed
as the map of :func:`sdcflow.core.parallel.map_parts`, the pieces the Dask runner would
send to its workers), for files too large to wait for on one core (ten million records).
Each run then also gives its wall seconds; ``cells_wall_seconds``, the span of the cells'
map; ``rest_wall_seconds``, the call's wall seconds outside it (the cuts, the assembly of the
cells' partitions, the draw and the projection, all in this process); the CPU seconds of the
workers (``RUSAGE_CHILDREN`` once the pool is shut down, less its value before); the peak
resident set size of this process (``ru_maxrss``); and the largest resident set size any
worker had and the largest sum of them all, sampled every 0.5 s (``psutil``; a child's own
``ru_maxrss`` would count the pages it shared with this process before it loaded Python).
The baseline is skipped then.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psutil

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.parallel import part_map
from sdcflow.methods.fuzzy import ConstrainedFuzzyParams
from sdcflow.methods.keys import Key
from sdcflow.methods.mixed import mask_keys


@contextmanager
def sampled_children(peaks: dict[str, float]) -> Iterator[None]:
    """Inside this block, ``peaks`` gets the largest RSS of any child process and the largest
    sum of them (MB), sampled every 0.5 s."""
    me, done = psutil.Process(), threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            sizes = []
            for child in me.children(recursive=True):
                try:
                    sizes.append(child.memory_info().rss / 2**20)
                except psutil.Error:
                    pass
            if sizes:
                peaks["worker"] = max(peaks.get("worker", 0.0), max(sizes))
                peaks["workers"] = max(peaks.get("workers", 0.0), sum(sizes))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextmanager
def pool_map(processes: int, spans: dict[str, float]) -> Iterator[None]:
    """Run the pieces of ``map_parts`` on ``processes`` worker processes inside this block;
    ``spans`` gets each kind of piece's wall seconds."""
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:

        def mapper(fn: Callable[..., Any], calls: Sequence[tuple], label: str) -> list[Any]:
            t0 = time.perf_counter()
            chunk = max(1, len(calls) // (8 * processes))
            out = list(pool.map(fn, *zip(*calls, strict=True), chunksize=chunk))
            spans[label] = spans.get(label, 0.0) + time.perf_counter() - t0
            return out

        with part_map(mapper):
            yield


def run(
    X: np.ndarray, k: int, cell_size: int | None, restarts: int, seed: int, processes: int = 0
) -> dict:
    d = X.shape[1]
    names = [f"x{j}" for j in range(d)]
    frame = pd.DataFrame(X, columns=names)
    keys = [Key(name, "numeric") for name in names]
    g = np.zeros((1, d))
    g[0, 0] = -1.0
    rules = LinearConstraints(
        tuple(names), np.zeros((0, d)), np.zeros(0), g, np.array([1000.0]), ineq_names=("x0",)
    )
    params = ConstrainedFuzzyParams(k=k, guarantee="both", cell_size=cell_size, restarts=restarts)
    spans: dict[str, float] = {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, wall = time.process_time(), time.perf_counter()
    peaks: dict[str, float] = {}
    if processes:
        with sampled_children(peaks), pool_map(processes, spans):
            result = mask_keys(frame, keys, params, np.random.default_rng(seed), rules)
    else:
        result = mask_keys(frame, keys, params, np.random.default_rng(seed), rules)
    cpu, wall = time.process_time() - t0, time.perf_counter() - wall
    points = np.asarray(result.points, dtype=np.float64)
    counts = pd.DataFrame(points).value_counts(sort=False).to_numpy()
    figures: dict[str, Any] = {}
    if processes:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures = {
            "processes": processes,
            "wall_seconds": round(wall, 2),
            "cells_wall_seconds": round(spans.get("cell", 0.0), 2),
            "rest_wall_seconds": round(wall - sum(spans.values()), 2),
            "workers_cpu_seconds": round(
                children.ru_utime + children.ru_stime - before.ru_utime - before.ru_stime, 2
            ),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "worker_peak_rss_mb": round(peaks.get("worker", 0.0), 1),
            "workers_peak_rss_mb": round(peaks.get("workers", 0.0), 1),
        }
    return figures | {
        "n": X.shape[0],
        "cell_size": cell_size,
        "restarts": restarts,
        "cpu_seconds": round(cpu, 2),
        "cpu_seconds_per_1k": round(1000 * cpu / X.shape[0], 4),
        "il": round(sse_sst_loss(X, points), 4),
        "crisp_k": int(counts.min()),
        "expected_size_min": round(float(np.min(result.expected_sizes)), 4),
        "centres": int(counts.size),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000, 200_000])
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cell-size", type=int, nargs="+", default=[5000, 10000, 20000])
    p.add_argument("--restarts", type=int, nargs="+", default=[1])
    p.add_argument("--baseline-n", type=int, default=20_000, help="0: no baseline")
    p.add_argument("--json", type=Path, help="also write every figure here")
    p.add_argument("--processes", type=int, default=0, help="run the cells on P processes")
    args = p.parse_args(argv)
    if args.processes:
        args.baseline_n = 0

    warm = np.random.default_rng(1).standard_normal((200, args.d))
    run(warm, args.k, None, 1, 0)  # compiles the numba kernels (cached on disk after)
    rows = []
    base: dict[int, dict] = {}
    print(
        f"{'n':>8} {'cell_size':>9} {'restarts':>8} {'CPU s':>9} {'CPU s/1k':>9} {'IL %':>8}"
        f" {'IL/base':>8} {'crisp k':>7} {'E min':>7}"
    )
    for n in sorted(args.n):
        X = np.random.default_rng(args.seed).standard_normal((n, args.d))
        sizes: list[int | None] = list(args.cell_size)
        if args.baseline_n and n == args.baseline_n:
            sizes = [None, *sizes]
        for restarts in args.restarts:
            for size in sizes:
                if size is not None and size >= n:
                    continue
                row = run(X, args.k, size, restarts, args.seed, args.processes)
                if size is None:
                    base[restarts] = row
                ref = base.get(restarts)
                if ref is not None and ref["n"] == n:
                    row["il_over_unpartitioned_pct"] = round(100 * (row["il"] / ref["il"] - 1), 3)
                rows.append(row)
                excess = row.get("il_over_unpartitioned_pct")
                print(
                    f"{n:>8} {size or 'whole':>9} {restarts:>8} {row['cpu_seconds']:>9.2f} "
                    f"{row['cpu_seconds_per_1k']:>9.4f} {row['il']:>8.4f} "
                    f"{'' if excess is None else f'{excess:+.2f} %':>8} {row['crisp_k']:>7} "
                    f"{row['expected_size_min']:>7.3f}",
                    flush=True,
                )
                if args.processes:
                    print(
                        "    "
                        + ", ".join(
                            f"{key} {row[key]}" for key in row if key.endswith(("seconds", "mb"))
                        ),
                        flush=True,
                    )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
