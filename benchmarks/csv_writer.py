"""The published ``data.csv`` of a census-like release: ``publish.write_csv`` against pandas.

Usage::

    python benchmarks/csv_writer.py                    # 1,000,000 records
    python benchmarks/csv_writer.py --n 100000 1000000 --repeats 3

The frame is a census-like release as the streamed path reads it back (``benchmarks/scale.py
--census``): an ``id``, ten float64 keys, and three text keys (``sex``, ``region``,
``activity`` with 2, 12 and 8 levels, each value missing with probability 0.002). Figures,
the median of ``--repeats`` runs, wall seconds in this process: ``write_csv`` (DuckDB's COPY
wherever it writes the values as pandas does), and its anchor, the previous writer of a frame
with text columns, pandas' ``to_csv``; the files must be the same bytes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.warehouse.publish import write_csv

TEXT = (("sex", 2), ("region", 12), ("activity", 8))


def census_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"x{j}": rng.standard_normal(n) for j in range(10)})
    for name, levels in TEXT:
        values = np.array([f"{name}_{j}" for j in range(levels)], dtype=object)
        column = values[rng.integers(0, levels, n)]
        column[rng.random(n) < 0.002] = None
        frame[name] = column
    frame.insert(0, "id", np.arange(n))
    return frame


def median_seconds(write, frame: pd.DataFrame, path: Path, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        write(frame, path)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def pandas_writer(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"wall s, median of {args.repeats}")
    print(f"{'n':>9} | {'write_csv':>9} {'pandas':>8} {'ratio':>6} | same bytes")
    for n in args.n:
        frame = census_frame(n, args.seed)
        with tempfile.TemporaryDirectory() as folder:
            ours, theirs = Path(folder) / "ours.csv", Path(folder) / "pandas.csv"
            t_ours = median_seconds(write_csv, frame, ours, args.repeats)
            t_pandas = median_seconds(pandas_writer, frame, theirs, args.repeats)
            same = ours.read_bytes() == theirs.read_bytes()
        print(f"{n:>9} | {t_ours:>9.2f} {t_pandas:>8.2f} {t_pandas / t_ours:>5.1f}x | {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
