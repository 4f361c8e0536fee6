"""The whole file's units of a rule's column, read from the warehouse by the streamed path,
against the figures the previous code took in memory: wall seconds and the same figures.

Usage::

    python benchmarks/rule_units.py                    # 1M and 10M records, one column
    python benchmarks/rule_units.py --n 3000000 --columns 3

A warehouse table of ``n`` records of ``columns`` standard-normal numbers, each missing with
probability 0.01 (the census-like keys of ``benchmarks/scale.py --census``). In this process,
one after the other:

* ``warehouse``: :func:`sdcflow.warehouse.units.rule_units`, what a release masked in pieces
  now asks before its pieces run (exactly rounded sums over chunks of 1 Mi values, the
  median and the spread near it by DuckDB);
* ``anchor`` (the code before, in memory): the columns read whole into numpy, then
  ``nanmean``, ``nanstd`` and :func:`sdcflow.core.validation.lost_resolution`, what each
  piece measured on its own records and what the in-memory path measures on the file.

It checks that the means and standard deviations agree to 1e-12 relative and the verdicts
exactly, and prints one JSON line per size. Figures:
``docs/benchmarks/2026-11-29-census-streamed.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.core.validation import lost_resolution
from sdcflow.warehouse.units import rule_units
from sdcflow.warehouse.warehouse import Warehouse, table_name

RUN = "0123456789abcdef0123456789abcdef"


def measure(n: int, columns: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    names = [f"x{j}" for j in range(columns)]
    with tempfile.TemporaryDirectory() as folder:
        wh = Warehouse(Path(folder) / "w.duckdb")
        wh.initialize()
        X = rng.standard_normal((n, columns))
        X[rng.random(X.shape) < 0.01] = np.nan
        wh.write_frame("raw", RUN, pd.DataFrame(X, columns=names))
        del X
        start = time.perf_counter()
        units = rule_units(wh, "raw", RUN, names)
        warehouse_s = time.perf_counter() - start
        start = time.perf_counter()
        with wh.connect(read_only=True) as con:  # the columns whole, as a frame
            frame = con.execute(f"SELECT {', '.join(names)} FROM {table_name('raw', RUN)}").df()
        Y = frame.to_numpy(np.float64)
        shift, scale, lost = np.nanmean(Y, axis=0), np.nanstd(Y, axis=0), lost_resolution(Y)
        anchor_s = time.perf_counter() - start
    np.testing.assert_allclose(units.shift, shift, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(units.scale, scale, rtol=1e-12)
    assert units.lost is not None and units.lost.tolist() == lost.tolist()
    return {
        "n": n,
        "columns": columns,
        "warehouse_s": round(warehouse_s, 3),
        "anchor_in_memory_s": round(anchor_s, 3),
        "ratio": round(warehouse_s / anchor_s, 2),
        "same_figures": True,
        "load": [round(v, 2) for v in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--columns", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for n in args.n:
        print(json.dumps(measure(n, args.columns, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
