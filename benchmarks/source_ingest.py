"""The preflight and ingest of a census-scale source: peak RSS and seconds of
``plan_release`` + ingest, beside the whole table read into memory (issue 45).

Usage::

    python benchmarks/source_ingest.py --n 1000000 10000000 [--repeats 1] [--folder /tmp/x]

Data: ``benchmarks/scale.py``'s ``make_census`` (10 standard-normal numeric keys each missing
with probability 1 %, three categorical keys, an ``id``; Parquet in row groups of 250,000),
written once per size into ``--folder`` (a temporary folder by default, removed at the end),
and the same records as CSV (``--csv``, written by DuckDB). The spec is ``scale.py``'s census
spec (``mdav`` k = 5 in cells, ``missing_values: ['']``, one edit rule).

Each figure comes from a fresh process (``resource.getrusage(RUSAGE_SELF).ru_maxrss``: that
process's peak resident set, interpreter and imports included, and the wall seconds of the
work alone):

* ``streamed``: ``plan_release`` + ``Warehouse.ingest_source`` + ``count_rows``, what
  ``tasks.ingest.ingest_streamed`` runs: DuckDB scans the file and writes ``raw.run_<id>``;
  ``steps_seconds_peak_mb`` gives the preflight's heavy steps one by one (``STEPS``: the
  seconds of each and the process's peak after it), and ``plan_release`` the whole preflight;
* ``anchor``, in the same run: the whole table in memory as the preflight held it before
  (``read_source``: the Arrow table; ``Warehouse.ingest`` of it; ``read_frame``, the pandas
  frame the in-memory ingest returns).

With ``--before`` the child processes run without this worktree on ``PYTHONPATH`` (the
installed sdcflow, e.g. ``main``), and ``streamed`` is whatever that code's
``plan_release`` + ``ingest`` (``Warehouse.ingest(plan.data)`` + ``read_frame``) does.
Every line is JSON; ``/proc/loadavg`` is printed beside each figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {bench!r})
mode, spec_path = {mode!r}, {spec!r}
from sdcflow.spec.load import load_spec
import sdcflow.preflight.plan as P
from sdcflow.preflight.plan import plan_release
from sdcflow.warehouse.sources import read_source
steps = {{}}

def _peak_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

for _name in [n for n in {steps!r} if hasattr(P, n)]:  # seconds, and the peak after each
    def _timed(*a, _f=getattr(P, _name), _n=_name, **k):
        t = time.perf_counter()
        out = _f(*a, **k)
        steps[_n] = [round(time.perf_counter() - t, 2), _peak_mb()]
        return out
    setattr(P, _name, _timed)
from sdcflow.warehouse.warehouse import Warehouse
spec = load_spec(spec_path)
wh = Warehouse(spec.warehouse_path)
wh.initialize()
run = "0" * 32
start = time.perf_counter()
if mode == "anchor":
    table = read_source(spec.source_path, spec.missing_values)
    wh.ingest(table, run)
    rows = len(wh.read_frame("raw", run))
else:
    plan = P.plan_release(spec)
    steps["plan_release"] = [round(time.perf_counter() - start, 2), _peak_mb()]
    if hasattr(wh, "ingest_source"):
        wh.ingest_source(plan.data, run, plan.source_sha256)
        rows = wh.count_rows("raw", run)
    else:  # the code before: the Arrow table ingested, read back as the task does
        wh.ingest(plan.data, run)
        rows = len(wh.read_frame("raw", run))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
figure = {{"rows": rows, "seconds": round(seconds, 2), "peak_rss_mb": round(peak / 2**20)}}
if steps:
    figure["steps_seconds_peak_mb"] = steps
print(json.dumps(figure))
"""


#: The preflight's steps timed one by one (``steps_seconds_peak_mb``: seconds, and the
#: process's peak RSS in MB after the step), those ``sdcflow.preflight.plan`` has.
STEPS = (
    "read_source_hashed",
    "open_source_hashed",
    "profile_table",
    "check_evaluable",
    "check_undeclared_relations",
)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def make_files(folder: Path, n: int, csv: bool) -> Path:
    """The census file (Parquet, or CSV copied from it by DuckDB), made in a child process
    so that its arrays never count in this one."""
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); from pathlib import Path; "
        f"from scale import make_census; make_census(Path({str(folder)!r}), {n}, 10, 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    source = folder / "data.parquet"
    if csv:
        import duckdb

        con = duckdb.connect()
        con.execute(
            f"COPY (SELECT * FROM read_parquet('{source}')) TO '{folder / 'data.csv'}' "
            "(HEADER, DELIMITER ',')"
        )
        con.close()
        source.unlink()
        source = folder / "data.csv"
    return source


def write_spec(folder: Path, source: Path) -> Path:
    sys.path.insert(0, str(HERE))
    from scale import write_spec as scale_spec  # a benchmark's sibling, on the path here

    args = argparse.Namespace(
        method="mdav",
        k=5,
        cell_size=None,
        d=10,
        census=True,
        missing=0.0,
        seed=0,
        restarts=None,
        worker_memory=None,
    )
    path = scale_spec(folder, args, "ingest")
    text = path.read_text().replace("source: data.parquet", f"source: {source.name}")
    path.write_text(text)
    return path


def measure(folder: Path, spec: Path, mode: str, before: bool) -> dict:
    for name in ("warehouse-ingest.duckdb", "warehouse-ingest.duckdb.wal"):
        (folder / name).unlink(missing_ok=True)
    env = dict(os.environ)
    if before:
        env.pop("PYTHONPATH", None)
    code = CHILD.format(bench=str(HERE), mode=mode, spec=str(spec), steps=list(STEPS))
    # in the data's folder: `python -c` puts the working folder first on the path, and a
    # checkout's sdcflow there would win over the one asked for
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=folder
    )
    if out.returncode:
        return {"failed": out.returncode, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--csv", action="store_true", help="the source as CSV, not Parquet")
    parser.add_argument("--before", action="store_true", help="the installed sdcflow's code")
    parser.add_argument("--no-anchor", action="store_true", help="skip the in-memory anchor")
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    root = args.folder or Path(tempfile.mkdtemp(prefix="sdcflow-ingest-"))
    try:
        for n in args.n:
            folder = root / f"n{n}"
            folder.mkdir(parents=True, exist_ok=True)
            source = next(iter(folder.glob("data.*")), None) or make_files(folder, n, args.csv)
            spec = write_spec(folder, source)
            size = source.stat().st_size
            modes = ["streamed"] + ([] if args.no_anchor else ["anchor"])
            for mode in modes:
                for repeat in range(args.repeats):
                    figure = measure(folder, spec, mode, args.before)
                    label = "before" if args.before and mode == "streamed" else mode
                    print(
                        json.dumps(
                            {
                                "n": n,
                                "source": source.name,
                                "source_mb": round(size / 2**20),
                                "mode": label,
                                "repeat": repeat,
                                **figure,
                                "load": _load(),
                            }
                        ),
                        flush=True,
                    )
    finally:
        if args.folder is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
