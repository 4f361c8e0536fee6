"""The gates, the disclosure figures and the report: in memory against DuckDB aggregates.

Usage::

    python benchmarks/streamed_checks.py                 # n = 1 000 000
    python benchmarks/streamed_checks.py --n 200000 --repeat 3

The file is ``benchmarks/scale.py``'s ``make_census`` (10 standard-normal numeric keys, each
value missing with probability 0.01; 3 categorical keys; ``--n`` records). The release
stands in for the mask (timing only; the figures of both paths are compared by
``tests/test_streamed_checks.py``): the records sorted by their categorical keys, groups of
``k`` = 5 consecutive records, each numeric key released as its group's mean over the values
present (a missing value stays missing), the categorical keys as the group's first record's.
The raw and released tables are written to a warehouse once (DuckDB, from the Parquet file).

Then, each in a fresh process (``--repeat`` times, the median printed):

* ``in memory`` (the anchor): the raw and released tables read into pandas
  (``Warehouse.read_frame``, what the flow holds today), the ``MaskResult``, then
  ``check_release``, ``disclosure_summary`` and ``run_report``;
* ``streamed``: ``check_streamed``, ``disclosure_streamed`` and ``report_streamed`` on the
  warehouse, nothing read into the process but aggregates.

Figures: wall seconds of each step and of the whole, the process's peak RSS (``ru_maxrss``
of the child: DuckDB runs inside it, its buffers count) beside its RSS after the imports
(``psutil``; the floor both sides share), with
``SDCFLOW_DUCKDB_MEMORY_LIMIT`` as set in the environment (default here ``1GB``).
``/proc/loadavg`` is printed beside every run: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

RUN = "e" * 32
K = 5
NUMERIC = [f"x{j}" for j in range(10)]


def _spec():
    from scale import CENSUS_CATEGORICAL

    from sdcflow.spec.schema import ReleaseSpec

    keys = NUMERIC + [c for c, _ in CENSUS_CATEGORICAL]
    return ReleaseSpec.model_validate(
        {
            "release": "streamed-checks",
            "source": "data.parquet",
            "quasi_identifiers": keys,
            "method": {"name": "mdav", "k": K, "cell_size": 125_000},
            "checks": {"k_anonymity": K, "max_information_loss": 100},
        }
    )


def prepare(folder: Path, n: int, seed: int) -> Path:
    """The census file, and the warehouse with its raw and stand-in released tables."""
    from scale import CENSUS_CATEGORICAL, make_census

    from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, table_name

    path, _ = make_census(folder, n, len(NUMERIC), seed)
    wh = Warehouse(folder / "w.duckdb")
    wh.initialize()
    cats = [c for c, _ in CENSUS_CATEGORICAL]
    with wh.connect() as con:
        con.execute(
            f"CREATE TABLE {table_name('raw', RUN)} AS SELECT * EXCLUDE (id), "
            f"id AS {ROW_ID} FROM read_parquet('{path}')"
        )
        order = ", ".join([*cats, ROW_ID])
        means = ", ".join(
            f"CASE WHEN {c} IS NULL THEN NULL ELSE avg({c}) OVER g END AS {c}" for c in NUMERIC
        )
        firsts = ", ".join(f"first({c}) OVER g AS {c}" for c in cats)
        con.execute(
            f"CREATE TABLE {table_name('masked', RUN)} AS SELECT {means}, {firsts}, {ROW_ID} "
            f"FROM (SELECT *, (row_number() OVER (ORDER BY {order}) - 1) // {K} AS grp "
            f"FROM {table_name('raw', RUN)}) WINDOW g AS (PARTITION BY grp ORDER BY {ROW_ID} "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
        )
    return folder / "w.duckdb"


def run_in_memory(warehouse: Path, reports: Path) -> dict[str, float]:
    import numpy as np
    from prefect.logging import disable_run_logger

    from sdcflow.methods import MaskResult
    from sdcflow.methods.keys import Key
    from sdcflow.tasks.checks import check_release
    from sdcflow.tasks.mask import disclosure_summary
    from sdcflow.tasks.report import run_report
    from sdcflow.warehouse.warehouse import Warehouse

    spec = _spec()
    wh = Warehouse(warehouse)
    keys = [Key(c, "numeric" if c in NUMERIC else "nominal") for c in spec.quasi_identifiers]
    out = {}
    t0 = time.perf_counter()
    raw = wh.read_frame("raw", RUN)
    masked = wh.read_frame("masked", RUN)
    result = MaskResult(
        masked=masked[spec.quasi_identifiers],
        points=masked[NUMERIC].to_numpy(dtype=np.float64, na_value=np.nan),
        point_columns=list(NUMERIC),
    )
    out["read"] = time.perf_counter() - t0
    with disable_run_logger():
        t = time.perf_counter()
        outcomes, _, evidence = check_release.fn(
            spec, raw, result, {"x0 >= -1000": 0}, np.random.default_rng(0), (), raw
        )
        out["checks"] = time.perf_counter() - t
        t = time.perf_counter()
        result.details = {"disclosure": disclosure_summary(spec, raw, keys, result)}
        out["disclosure"] = time.perf_counter() - t
        t = time.perf_counter()
        run_report.fn(spec, reports, RUN, "published", outcomes, None, (), raw, result, evidence)
        out["report"] = time.perf_counter() - t
    out["total"] = time.perf_counter() - t0
    out["figures"] = {o.key: o.figure for o in outcomes}
    return out


def run_streamed(warehouse: Path, reports: Path) -> dict[str, float]:
    from prefect.logging import disable_run_logger

    from sdcflow.methods.keys import Key
    from sdcflow.tasks.aggregates import check_streamed, disclosure_streamed, report_streamed
    from sdcflow.warehouse.warehouse import Warehouse

    spec = _spec()
    wh = Warehouse(warehouse)
    keys = [Key(c, "numeric" if c in NUMERIC else "nominal") for c in spec.quasi_identifiers]
    out = {}
    t0 = time.perf_counter()
    with disable_run_logger():
        outcomes, _, evidence = check_streamed.fn(
            spec, wh, RUN, NUMERIC, {}, {"x0 >= -1000": 0}, ()
        )
        out["checks"] = time.perf_counter() - t0
        t = time.perf_counter()
        details = {"disclosure": disclosure_streamed(spec, wh, RUN, keys)}
        out["disclosure"] = time.perf_counter() - t
        t = time.perf_counter()
        report_streamed.fn(
            spec, reports, RUN, "published", outcomes, None, (), wh, NUMERIC, details, evidence
        )
        out["report"] = time.perf_counter() - t
    out["total"] = time.perf_counter() - t0
    out["figures"] = {o.key: o.figure for o in outcomes}
    return out


def child(which: str, warehouse: Path) -> None:
    import psutil

    import sdcflow.report.aggregated
    import sdcflow.tasks.aggregates
    import sdcflow.tasks.checks
    import sdcflow.tasks.report  # noqa: F401  (the imports' own memory, the floor of both)

    floor = psutil.Process().memory_info().rss / 2**20
    with tempfile.TemporaryDirectory() as reports:
        fn = run_in_memory if which == "memory" else run_streamed
        out = fn(warehouse, Path(reports))
    # ru_maxrss: KiB on Linux, the peak of this process (DuckDB included)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["imports_rss_mb"] = floor
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", choices=["memory", "streamed"])
    parser.add_argument("--warehouse", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.warehouse)
        return
    env = {**os.environ, "SDCFLOW_DUCKDB_MEMORY_LIMIT": os.environ.get(
        "SDCFLOW_DUCKDB_MEMORY_LIMIT", "1GB")}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        warehouse = prepare(Path(tmp), args.n, args.seed)
        print(f"n = {args.n}: census file and warehouse in {time.perf_counter() - t:.1f} s")
        runs: dict[str, list[dict]] = {"memory": [], "streamed": []}
        for _ in range(args.repeat):
            for which in ("memory", "streamed"):
                load = Path("/proc/loadavg").read_text().split()[:3]
                done = subprocess.run(
                    [sys.executable, __file__, "--child", which, "--warehouse", str(warehouse)],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                runs[which].append(figures)
                print(
                    f"  {which:9s} total {figures['total']:7.2f} s, peak RSS "
                    f"{figures['peak_rss_mb']:7.0f} MB, after the imports "
                    f"{figures['imports_rss_mb']:5.0f} MB (loadavg {' '.join(load)})"
                )
        same = runs["memory"][0]["figures"].keys() == runs["streamed"][0]["figures"].keys()
        print(f"same gates: {same}; figures in memory {runs['memory'][0]['figures']}")
        print(f"                  streamed  {runs['streamed'][0]['figures']}")
        print(f"median of {args.repeat} runs, n = {args.n}:")
        print(f"{'':10s}" + "".join(f"{s:>12s}" for s in ("checks", "disclosure", "report",
              "total s", "peak RSS MB")))  # fmt: skip
        for which in ("memory", "streamed"):
            row = [
                statistics.median(r[s] for r in runs[which])
                for s in ("checks", "disclosure", "report", "total", "peak_rss_mb")
            ]
            print(f"{which:10s}" + "".join(f"{v:12.2f}" for v in row))
        m = statistics.median(r["peak_rss_mb"] for r in runs["memory"])
        s = statistics.median(r["peak_rss_mb"] for r in runs["streamed"])
        mt = statistics.median(r["total"] for r in runs["memory"])
        st = statistics.median(r["total"] for r in runs["streamed"])
        print(f"streamed / in memory: wall {st / mt:.2f}x, peak RSS {s / m:.2f}x")


if __name__ == "__main__":
    main()
