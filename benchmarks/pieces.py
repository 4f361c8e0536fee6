"""How far the mask's pieces alone could scale: MDAV in cells, every piece timed in this process.

Runs the release's MDAV method (``cell_size``) on standard normal records under a map that
times each piece (cell, border part) in CPU seconds, and the work between the pieces (cuts,
assembly, the loss's lower bound). It then list-schedules the pieces, in submission order,
on 1 and 2 workers, stage by stage (a stage ends when all its pieces are back), and prints
the mask step's bound of speed-up if nothing but the pieces and that work ran: the figure
against which the release's own mask step (``benchmarks/scale.py``) is compared.

    python benchmarks/pieces.py --n 1000000 --cell-size 125000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.parallel import part_map, serial_map
from sdcflow.methods import get_method


def schedule(stages: list[list[float]], between: float, workers: int) -> float:
    """Wall seconds of the stages on ``workers`` (each piece to the least loaded worker, in
    order; a stage waits for all its pieces) plus the work between them."""
    wall = between
    for pieces in stages:
        load = [0.0] * workers
        for seconds in pieces:
            load[load.index(min(load))] += seconds
        wall += max(load)
    return wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--cell-size", type=int, default=125_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    X = np.random.default_rng(args.seed).standard_normal((args.n, args.d))
    columns = [f"x{j}" for j in range(args.d)]
    method = get_method("mdav")
    params = method.params(name="mdav", k=args.k, cell_size=args.cell_size)
    stages: list[list[float]] = []
    labels: list[str] = []

    def timed(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], label: str) -> list:
        pieces: list[float] = []
        out = []
        for call in calls:
            t = time.process_time()
            out.append(serial_map(fn, [call], label)[0])
            pieces.append(time.process_time() - t)
        stages.append(pieces)
        labels.append(label)
        return out

    # load the compiled kernels first (numba's cache), as the release's warm-up does
    small = params.model_copy(update={"cell_size": 4 * args.k * 50})
    method.mask(X[:2000], columns, small, np.random.default_rng(0), None)
    t0 = time.process_time()
    with part_map(timed):
        result = method.mask(X, columns, params, np.random.default_rng(0), None)
    total = time.process_time() - t0
    in_pieces = sum(map(sum, stages))
    between = total - in_pieces
    one, two = schedule(stages, between, 1), schedule(stages, between, 2)
    print(f"n={args.n} d={args.d} k={args.k} cell_size={args.cell_size}")
    for label, pieces in zip(labels, stages, strict=True):
        print(f"  {label}: {len(pieces)} pieces, CPU s {', '.join(f'{s:.2f}' for s in pieces)}")
    print(f"method CPU s {total:.1f}: pieces {in_pieces:.1f}, between them {between:.1f}")
    print(f"list-scheduled: 1 worker {one:.1f} s, 2 workers {two:.1f} s, ratio {one / two:.3f}")
    print(f"IL {sse_sst_loss(X, result.points):.4f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
