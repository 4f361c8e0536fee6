"""The streamed mask beside the in-memory mask on the census-like file (issue 45).

Usage::

    python benchmarks/streamed_mask.py                 # 200 000 and 1 000 000 records
    python benchmarks/streamed_mask.py --n 200000 --repeats 3
    SDCFLOW_DUCKDB_MEMORY_LIMIT=256MB python benchmarks/streamed_mask.py --modes streamed

Data: ``benchmarks/scale.py``'s ``make_census`` (10 standard-normal numeric keys, each value
missing with probability 1 %, three categorical keys of 2, 12 and 8 levels, each missing
with probability 0.2 %), ingested into a warehouse twice (two runs). The spec: ``mdav``,
k = 5, ``cell_size`` 125 000 (``scale.py``'s), ``on_violation: fail``; the edit rule
``x0 >= -1000`` of ``scale.py`` binds no record and is left out of both masks alike.

Each mask runs in a process of its own (``--child``), timed from the first line of the mask
to the masked table stored:

* ``memory`` (the anchor): ``Warehouse.read_frame`` of ``raw``, ``mask_keys``,
  ``released_frame``, ``write_frame`` -- what the flow runs today;
* ``streamed``: :func:`sdcflow.tasks.cells.mask_streamed` on the local runner.

Printed for each: wall seconds, the process's peak RSS (psutil, sampled every 0.05 s) and
its RSS before the mask (for the streamed mask also per phase: ``PHASES``), the information
loss of the stored table (DuckDB sums, ``Warehouse.information_loss``), and the records whose
released keys are the same in both tables. The machine is shared: ``/proc/loadavg`` is
printed beside every figure; with ``--repeats`` the median wall is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import CENSUS_CATEGORICAL, MDAV_CELL_SIZE, make_census

from sdcflow.methods.keys import Key, SuppressionSettings
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.warehouse.warehouse import Warehouse, table_name

MEMORY, STREAMED = "a" * 32, "b" * 32
D, K = 10, 5


def _keys() -> list[Key]:
    return [Key(f"x{j}", "numeric") for j in range(D)] + [
        Key(c, "nominal") for c, _ in CENSUS_CATEGORICAL
    ]


def _spec(folder: Path) -> ReleaseSpec:
    return ReleaseSpec.model_validate(
        {
            "release": "streamed",
            "source": "data.parquet",
            "id_column": "id",
            "quasi_identifiers": [k.name for k in _keys()],
            "method": {"name": "mdav", "k": K, "cell_size": MDAV_CELL_SIZE},
            "on_violation": "fail",
            "base_dir": str(folder),
        }
    )


class _Peak:
    """The process's largest RSS, sampled every 0.05 s on a thread."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, self.proc.memory_info().rss)


#: The streamed mask's phases: the strata from the combinations, the pieces written by
#: DuckDB, the pieces masked, the masked table loaded, the loss summed, the dtypes sampled.
PHASES = ("_strata", "write_pieces", "map_parts", "load_masked", "_loss", "_released_dtypes")


def _timed_phases(peak: _Peak, phases: list[dict]) -> None:
    """Wrap each of ``PHASES`` in ``sdcflow.tasks.cells`` so that its seconds and the
    process's peak RSS while it ran are appended to ``phases``."""
    from sdcflow.tasks import cells

    for name in PHASES:
        fn = getattr(cells, name)

        def timed(*args, _fn=fn, _name=name, **kwargs):
            peak.peak = peak.proc.memory_info().rss  # the phase's own peak from here
            start = time.perf_counter()
            out = _fn(*args, **kwargs)
            phases.append(
                {
                    "phase": _name,
                    "seconds": round(time.perf_counter() - start, 1),
                    "peak_rss_mb": round(peak.peak / 2**20),
                }
            )
            return out

        setattr(cells, name, timed)


def child(mode: str, folder: Path) -> None:
    """One mask in this process; prints its figures as JSON."""
    from sdcflow.methods.mixed import mask_keys
    from sdcflow.tasks.cells import mask_streamed
    from sdcflow.tasks.mask import released_frame

    wh = Warehouse(folder / "w.duckdb")
    spec, keys = _spec(folder), _keys()
    names = [k.name for k in keys]
    rng = np.random.default_rng(0)
    base = psutil.Process().memory_info().rss
    peak = _Peak()
    phases: list[dict] = []
    start = time.perf_counter()
    if mode == "memory":
        raw = wh.read_frame("raw", MEMORY)
        result = mask_keys(
            raw[names].reset_index(drop=True), keys, spec.method, rng,
            suppression=SuppressionSettings(),
        )  # fmt: skip
        wh.write_frame("masked", MEMORY, released_frame(spec, raw, result))
        run = MEMORY
    else:
        run_folder = folder / "run"
        run_folder.mkdir(mode=0o700, exist_ok=True)
        _timed_phases(peak, phases)
        done = mask_streamed(spec, wh, STREAMED, keys, run_folder, rng)
        print(json.dumps({"streamed": done.details["streamed"]}), file=sys.stderr)
        print(json.dumps({"phases": phases}), file=sys.stderr)
        run = STREAMED
    wall = time.perf_counter() - start
    top = max([peak.stop()] + [p["peak_rss_mb"] * 2**20 for p in phases])
    il = wh.information_loss("raw", "masked", run, [k.name for k in keys if k.kind == "numeric"])
    print(
        json.dumps(
            {
                "mode": mode,
                "wall_seconds": round(wall, 2),
                "peak_rss_mb": round(top / 2**20, 1),
                "rss_before_mb": round(base / 2**20, 1),
                "information_loss": il,
                "load": Path("/proc/loadavg").read_text().split()[:3],
            }
        )
    )


def _prepare(folder: Path, n: int, seed: int) -> None:
    """The census-like file, ingested twice (one raw table per mask), in a child process so
    that its memory is not the masks'."""
    path, _ = make_census(folder, n, D, seed)
    wh = Warehouse(folder / "w.duckdb")
    wh.initialize()
    data = pq.read_table(path)
    for run in (MEMORY, STREAMED):
        wh.ingest(data, run)


def _same_records(folder: Path) -> int:
    """Records whose released keys are the same in both masked tables (a missing value
    equal to a missing value)."""
    names = [k.name for k in _keys()]
    same = " AND ".join(f'a."{c}" IS NOT DISTINCT FROM b."{c}"' for c in names)
    wh = Warehouse(folder / "w.duckdb")
    with wh.connect(read_only=True) as con:
        return int(
            con.execute(
                f"SELECT count(*) FROM {table_name('masked', MEMORY)} a JOIN "
                f"{table_name('masked', STREAMED)} b USING (sdc_row_id) WHERE {same}"
            ).fetchone()[0]
        )


def _run(mode: str, folder: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--folder", str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    for line in out.stderr.splitlines():
        if line.startswith(('{"streamed"', '{"phases"')):
            figures.update(json.loads(line))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--modes", nargs="+", choices=["memory", "streamed"], default=["memory", "streamed"]
    )
    parser.add_argument("--child", choices=["memory", "streamed"])
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder)
        return
    for n in args.n:
        with tempfile.TemporaryDirectory(prefix="streamed-mask-") as tmp:
            folder = Path(tmp)
            subprocess.run(
                [sys.executable, "-c",
                 f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                 f"from pathlib import Path; from streamed_mask import _prepare; "
                 f"_prepare(Path({tmp!r}), {n}, {args.seed})"],
                check=True,
            )  # fmt: skip
            runs: dict[str, list[dict]] = {"memory": [], "streamed": []}
            for _ in range(args.repeats):
                for mode in args.modes:
                    runs[mode].append(_run(mode, folder))
                    print(f"n={n}", json.dumps(runs[mode][-1]), flush=True)
            if len(args.modes) < 2:
                continue
            same = _same_records(folder)
            anchor, new = runs["memory"], runs["streamed"]
            wall_a = statistics.median(r["wall_seconds"] for r in anchor)
            wall_s = statistics.median(r["wall_seconds"] for r in new)
            print(
                f"n={n}: streamed {wall_s:.1f} s beside in-memory {wall_a:.1f} s (median of "
                f"{args.repeats}); peak RSS {max(r['peak_rss_mb'] for r in new):.0f} MB beside "
                f"{max(r['peak_rss_mb'] for r in anchor):.0f} MB; IL "
                f"{new[-1]['information_loss']:.4f} beside {anchor[-1]['information_loss']:.4f};"
                f" records released alike {same} of {n}",
                flush=True,
            )


if __name__ == "__main__":
    main()
