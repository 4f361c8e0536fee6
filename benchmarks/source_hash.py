"""The cost of the input's sha256 (re-runs, ``audit.runs.input_sha256``) beside the read of
the source it accompanies; one JSON line.

Usage::

    python benchmarks/source_hash.py [--n 1000000] [--d 10] [--seed 0]

Writes a CSV of ``n`` records x ``d`` standard-normal columns (printed with 17 significant
digits, as pandas writes floats) to a temporary folder, then times, in CPU seconds of this
process (``time.process_time``; DuckDB's reader is multi-threaded, so its CPU seconds can
exceed its wall seconds):

* ``read_seconds`` — :func:`sdcflow.warehouse.sources.read_source`, DuckDB's CSV reader (the
  baseline);
* ``hash_seconds`` — the streamed sha256 pass that
  :func:`sdcflow.warehouse.sources.read_source_hashed` adds (``hashlib.file_digest``, 1 MiB
  chunks), measured as ``read_source_hashed`` minus ``read_source`` on the same file, and
  directly as ``hashlib.file_digest`` alone (``digest_seconds``);
* ``ratio`` — ``hash_seconds / read_seconds``.

Both run once for a warm-up (the file in the page cache, as in a release, where the hash
follows DuckDB's read), then three times; the medians are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.warehouse.sources import read_source, read_source_hashed


def _cpu(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "source.csv"
        frame = pd.DataFrame(rng.standard_normal((args.n, args.d)),
                             columns=[f"x{j}" for j in range(args.d)])  # fmt: skip
        frame.to_csv(path, index=False)
        del frame

        def digest() -> None:
            with path.open("rb") as fh:
                hashlib.file_digest(fh, "sha256")

        read_source_hashed(path)  # warm-up: page cache
        reads = [_cpu(lambda: read_source(path)) for _ in range(3)]
        hashed = [_cpu(lambda: read_source_hashed(path)) for _ in range(3)]
        digests = [_cpu(digest) for _ in range(3)]
        read, both = statistics.median(reads), statistics.median(hashed)
        print(
            json.dumps(
                {
                    "n": args.n,
                    "d": args.d,
                    "file_mb": round(path.stat().st_size / 2**20, 1),
                    "read_seconds": round(read, 3),
                    "read_and_hash_seconds": round(both, 3),
                    "hash_seconds": round(both - read, 3),
                    "digest_seconds": round(statistics.median(digests), 3),
                    "ratio": round((both - read) / read, 4),
                }
            )
        )


if __name__ == "__main__":
    main()
