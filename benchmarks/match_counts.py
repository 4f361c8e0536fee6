"""Counting matches with missing values under sdcMicro's convention (the count sdcflow reports
beside its identical-row k): CPU s against pair joins.

Usage::

    python benchmarks/match_counts.py                         # n 100k and 1M, 10 keys, 5 %
    python benchmarks/match_counts.py --n 200000 --d 10 --missing 0.05 0.2

The released keys of a microaggregation with missing values, made directly: ``n / k`` group
means (standard normal, ``d`` keys, ``numpy.random.default_rng(seed)``), each repeated k
times, then each value missing with probability ``missing``. Timed (``time.process_time``,
this process): :func:`sdcflow.core.measures.anonymity.match_counts` with weights and
``convention="missing_matches_any"`` (f and F of every record, a missing value matching any
value: the comparison figure of the manifest and the report), and the
baseline in the same run: the same function with index joins and the pool of small
patterns turned off (``INDEX_JOIN_SHARE = 0``, ``SMALL_PATTERN = 1``), one hash join per
pair of missing-value patterns, which is how every count was made before. Both must give
the same f and the same F to the bit; the script stops otherwise. Printed: distinct rows,
missing-value patterns, CPU s of each, their ratio. Figures and commands:
``docs/benchmarks/``, section "Counting matches with missing values".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.core.distinct import distinct_rows
from sdcflow.core.measures import anonymity


def released(n: int, d: int, k: int, missing: float, seed: int) -> pd.DataFrame:
    """(n, d) group means repeated k times, each value NaN with probability ``missing``."""
    rng = np.random.default_rng(seed)
    X = np.repeat(rng.standard_normal((-(-n // k), d)), k, axis=0)[:n]
    X[rng.random(X.shape) < missing] = np.nan
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])


def timed(frame: pd.DataFrame, w: np.ndarray, **settings: float) -> tuple[float, tuple]:
    saved = {name: getattr(anonymity, name) for name in settings}
    try:
        for name, value in settings.items():
            setattr(anonymity, name, value)
        t0 = time.process_time()
        result = anonymity.match_counts(frame, w, convention="missing_matches_any")
        return time.process_time() - t0, result
    finally:
        for name, value in saved.items():
            setattr(anonymity, name, value)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--missing", type=float, nargs="+", default=[0.05])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, help="also write every figure here")
    args = p.parse_args(argv)
    rows = []
    print(
        f"{'n':>8} {'missing':>7} {'distinct':>9} {'patterns':>8} {'CPU s':>8} "
        f"{'pair joins':>10} {'ratio':>6} {'k':>3}"
    )
    for n in args.n:
        for missing in args.missing:
            frame = released(n, args.d, args.k, missing, args.seed)
            codes = anonymity.key_codes(frame)
            distinct, _ = distinct_rows(codes)
            patterns, _ = distinct_rows((distinct < 0).astype(np.int64))
            w = np.random.default_rng(args.seed + 1).uniform(1, 100, n).round(2)
            cpu, (f, F) = timed(frame, w)
            base, (f0, F0) = timed(frame, w, INDEX_JOIN_SHARE=0.0, SMALL_PATTERN=1)
            if f.tolist() != f0.tolist() or F.tolist() != F0.tolist():
                print("the two ways of counting disagree", file=sys.stderr)
                return 1
            row = {
                "n": n,
                "d": args.d,
                "missing": missing,
                "distinct_rows": int(distinct.shape[0]),
                "patterns": int(patterns.shape[0]),
                "cpu_seconds": round(cpu, 2),
                "pair_joins_cpu_seconds": round(base, 2),
                "speed_up": round(base / cpu, 2),
                "k": int(f.min()),
            }
            rows.append(row)
            print(
                f"{n:>8} {missing:>7} {row['distinct_rows']:>9} {row['patterns']:>8} "
                f"{row['cpu_seconds']:>8.2f} {row['pair_joins_cpu_seconds']:>10.2f} "
                f"{row['speed_up']:>6.1f} {row['k']:>3}",
                flush=True,
            )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
