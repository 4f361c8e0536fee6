"""MDAV-generic under the partial distance, compiled, against the same steps written with numpy.

Usage::

    python benchmarks/partial_grouping.py                      # one census stratum, 29,000
    python benchmarks/partial_grouping.py --n 5000 29000 --repeats 3

A census-like stratum (what one piece of the streamed mask holds: ``benchmarks/scale.py
--census`` at ten million records gives 342 pieces of about 29,000 records): ``d`` standard
normal numeric keys (default 10), each value missing with probability ``--missing`` (default
0.01, so about one record in ten lacks a number), grouped with k = 5 in spatial cells of
``--cell-size`` records (default 5000), as ``mdav`` with ``cell_size`` groups a stratum with
missing numbers. Figures, the median of ``--repeats`` runs, wall seconds in this process:

* ``grouping``: every cell's MDAV-generic, the kernel (``heterogeneous._groups``) and the
  anchor, the previous implementation (numpy steps over the remaining rows,
  ``tests/numpy_mdav_generic.py``), on the same cells; the labels must be equal;
* ``means``: every group's means over its holders, the kernel (``group_values``) and the
  anchor (a loop of ``safe_mean``); the values must be equal;
* ``piece``: the whole piece as the streamed mask runs it (``sdcflow.methods.pieces.mask_piece``),
  with the kernels.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from numpy_mdav_generic import numpy_group_means, numpy_mdav_generic

from sdcflow.core.microaggregation.blocked import warm_mask
from sdcflow.core.microaggregation.generic_kernels import group_values
from sdcflow.core.microaggregation.heterogeneous import (
    MixedKeys,
    _Distances,
    _groups,
)
from sdcflow.core.microaggregation.neighbours import spatial_cells
from sdcflow.methods.keys import Key
from sdcflow.methods.microaggregation import MdavParams
from sdcflow.methods.pieces import mask_piece


def timed(fn, repeats: int):
    """The median wall seconds of ``repeats`` calls and the last call's result."""
    seconds, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), out


def run(n: int, d: int, missing: float, k: int, cell_size: int, repeats: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < missing] = np.nan
    keys = MixedKeys.build(X)
    dist = _Distances.of(keys)
    order, bounds = spatial_cells(np.nan_to_num(dist.cont), cell_size)
    cells = [np.sort(order[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
    parts = [_Distances(dist.cont[rows], dist.numeric, dist.nom[rows]) for rows in cells]

    def compiled() -> list[np.ndarray]:
        return [_groups(part, k) for part in parts]

    def previous() -> list[np.ndarray]:
        return [numpy_mdav_generic(part, k) for part in parts]

    t_new, labels_new = timed(compiled, repeats)
    t_old, labels_old = timed(previous, 1 if repeats == 1 else max(1, repeats // 2))
    for a, b in zip(labels_new, labels_old, strict=True):
        np.testing.assert_array_equal(a, b)
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for rows, part in zip(cells, labels_new, strict=True):
        labels[rows] = part + offset
        offset += int(part.max()) + 1
    by_group = np.argsort(labels, kind="stable")
    edges = np.searchsorted(labels[by_group], np.arange(labels.max() + 2))
    none = np.zeros((n, 0), dtype=np.int64)
    m_new, out = timed(lambda: group_values(X, none, none, by_group, edges, k), repeats)
    m_old, reference = timed(lambda: numpy_group_means(keys, labels), 1)
    np.testing.assert_array_equal(out[0], reference)
    codes = np.zeros((n, 3), dtype=np.int64)
    numeric = [Key(f"x{j}", "numeric") for j in range(d)]
    params = MdavParams(k=k, cell_size=cell_size)
    p_new, _ = timed(
        lambda: mask_piece(X, codes, codes, numeric, params, None, np.arange(3), stratified=True),
        repeats,
    )
    return {
        "n": n,
        "cells": len(cells),
        "grouping": (t_new, t_old),
        "means": (m_new, m_old),
        "piece": p_new,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[29000])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--missing", type=float, default=0.01)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--cell-size", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warm_mask()
    print(
        f"d {args.d}, each value missing with p {args.missing}, k {args.k}, "
        f"cell_size {args.cell_size}; wall s, median of {args.repeats}"
    )
    print(
        f"{'n':>8} {'cells':>5} | {'grouping':>8} {'previous':>8} {'ratio':>6} | "
        f"{'means':>7} {'previous':>8} {'ratio':>6} | {'piece':>6}"
    )
    for n in args.n:
        r = run(n, args.d, args.missing, args.k, args.cell_size, args.repeats, args.seed)
        (g, g0), (m, m0) = r["grouping"], r["means"]
        print(
            f"{n:>8} {r['cells']:>5} | {g:>8.3f} {g0:>8.3f} {g0 / g:>5.1f}x | "
            f"{m:>7.3f} {m0:>8.3f} {m0 / m:>5.1f}x | {r['piece']:>6.3f}"
        )
    print("labels and means equal to the previous implementation's: yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
