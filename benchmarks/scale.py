"""Scale-out benchmark: a large release end to end on the Dask runner; prints every figure
beside its target.

Usage::

    python benchmarks/scale.py                      # 1M records x 10 keys, k = 5, 1 and 2 workers
    python benchmarks/scale.py --n 200000 --cell-size 50000
    python benchmarks/scale.py --method constrained_fuzzy   # runner: local (howto/scale-out)
    python benchmarks/scale.py --method constrained_fuzzy --cell-size 5000 --runner dask

Data: ``numpy.random.default_rng(seed).standard_normal((n, d))`` (independent standard
normal keys ``x0..x{d-1}``, seed 0 by default) and an ``id`` column, written as Parquet. The
spec: ``mdav`` with ``k`` and ``cell_size`` (``constrained_fuzzy``: ``guarantee: both``, and
``cell_size`` / ``restarts`` when given; ``--runner dask`` needs ``--cell-size`` for it),
one edit rule (``x0 >= -1000``, true of every record, so that the validation step runs on
every record; ``--repair``: ``x0 >= -1`` under ``on_violation: repair``, which moves the
sixth of the records that break it before the mask; ``--census --conditional``: also
``if x1 <= -1 then x0 <= 1``, which the file is made to keep and a group mean can break),
gates ``k_anonymity: k`` and
``max_information_loss: 100``. ``--missing P``
(mdav): each value is missing (a null) with probability P, the spec declares
``missing_values: ['']``, and the cells are grouped by MDAV-generic with partial distances;
there is no unpartitioned baseline then (one pass is O(n^2)).

Each run is one ``sdcflow release SPEC --runner dask --dask-workers W`` process (its own
temporary Prefect API, an embedded LocalCluster), so the figures are those a user gets; its
whole log is left beside its spec (``<work>/<name>.log``, with ``--work`` kept). Figures:

* ``wall_seconds`` of the command; the machine is shared, so ``load`` (``/proc/loadavg``)
  is printed beside them;
* ``steps``: seconds of each step from Prefect's log timestamps, as the time from the end of
  the step before (the flow's start for the first) to the step's end -- the steps run one
  after the other;
* ``peak_rss_mb``: the largest sum of the resident set sizes of the process and all its
  children (the Prefect server and the Dask workers included), sampled every 0.2 s;
* ``cpu_seconds``: the CPU time (user + system) of the same process tree, each process's
  last sample summed (a process that ends between two samples loses at most 0.2 s), and
  ``cores_busy`` = ``cpu_seconds / wall_seconds``, the cores the run kept busy on average.
  On ``os.cpu_count()`` cores a run cannot take less than ``cpu_seconds / cpus`` wall
  seconds, so ``speed-up ceiling`` = wall with 1 worker / (CPU seconds with 2 workers /
  cpus) bounds the speed-up any scheduling of the same work could reach on this machine;
  ``cpu_seconds_by_role`` splits it into the flow's process (which also hosts an embedded
  cluster's scheduler), the temporary Prefect API and the Dask workers; and ``speed-up
  bound`` = wall with 1 worker / (that wall - its mask step / 2) is the speed-up if the
  mask step, what the workers run, were perfectly parallel and the other steps unchanged;
* ``pieces``: what the workers spent on the mask's pieces, from the line each piece's task
  run logs (its wall seconds, and the CPU seconds of the thread that ran it): their sums,
  and their ``span`` from the first piece's start to the last one's end. ``speed-up of the
  pieces' span`` = span with 1 worker / span with 2 is the speed-up of the workers' share
  alone, scheduling, start-up and contention included; were the rest of the run (wall -
  span) as long in both runs, the end-to-end speed-up would stay below it;
* ``il``: the information loss the release's manifest records, and ``il_over_unpartitioned``
  its relative excess (%) over exact (unpartitioned) MDAV on the same data, the baseline
  computed in this process in the same run (``unpartitioned_cpu_seconds``: its CPU time).

``--json PATH`` also writes every figure as JSON. Figures and the commands: ``docs/benchmarks/``,
section "Scale-out".
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import yaml

from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation.blocked import blocked_mdav
from sdcflow.core.microaggregation.mdav import group_means, mdav, mdav_groups
from sdcflow.core.microaggregation.neighbours import spatial_cells
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.parallel import part_map, serial_map

TARGETS = {  # issue #13, item 7, for this 2-core machine
    "wall_seconds_1m": 180.0,
    "il_over_unpartitioned_pct": 3.0,
    "speedup_2_over_1": 1.7,
    "peak_rss_mb": 4096.0,
    "constrained_fuzzy_wall_seconds_1m": 300.0,
}
MDAV_CELL_SIZE = 125_000  # --cell-size's default for mdav and ps
_LOG = re.compile(r"^(\d\d:\d\d:\d\d\.\d\d\d) \| \w+ +\| (.*)$")
_TASK = re.compile(r"Task run '([a-z-]+)-[0-9a-f]+' - Finished in state (\w+)")
_PIECE = re.compile(
    r"Task run '(mask-[a-z]+)-[0-9a-f]+' - (?:piece|(\d+) pieces) done in "
    r"([0-9.]+) s wall, ([0-9.]+) s CPU"
)


def make_data(
    folder: Path, n: int, d: int, seed: int, missing: float = 0.0
) -> tuple[Path, np.ndarray]:
    X = np.random.default_rng(seed).standard_normal((n, d))
    if missing:  # each value missing with this probability (a null in the Parquet file)
        X[np.random.default_rng(seed + 1).random((n, d)) < missing] = np.nan
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    frame.insert(0, "id", np.arange(n))
    path = folder / "data.parquet"
    frame.to_parquet(path, index=False)
    return path, X


# --census: the categorical keys (name, levels); numeric keys as above
CENSUS_CATEGORICAL = (("sex", 2), ("region", 12), ("activity", 8))
CENSUS_MISSING = 0.01  # each numeric key value missing with this probability
CENSUS_MISSING_CATEGORICAL = 0.002  # each categorical key value missing


#: --conditional: the rule the file keeps and group means can break
CONDITIONAL_RULE = "if x1 <= -1 then x0 <= 1"


def keep_conditional(X: np.ndarray) -> None:
    """``X`` (n, d) made to keep :data:`CONDITIONAL_RULE`, in place: x0 at most 1 where x1 is
    at most -1 (a missing value stays missing)."""
    hold = X[:, 1] <= -1
    X[hold, 0] = np.minimum(X[hold, 0], 1.0)


def make_census(
    folder: Path, n: int, d: int, seed: int, conditional: bool = False
) -> tuple[Path, np.ndarray]:
    """A census-like file: ``d`` standard-normal numeric keys ``x0..`` (each value missing
    with probability ``CENSUS_MISSING``), three categorical keys (``CENSUS_CATEGORICAL``,
    uniform levels ``<name>_<j>``, each missing with probability
    ``CENSUS_MISSING_CATEGORICAL``) and an ``id`` column, written as Parquet in row groups so
    that the file is never held whole here either. Returns the path and the numeric keys
    (n x d, NaN where missing) for the baseline."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < CENSUS_MISSING] = np.nan
    if conditional:
        keep_conditional(X)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    for name, levels in CENSUS_CATEGORICAL:
        codes = rng.integers(0, levels, n)
        values = np.array([f"{name}_{j}" for j in range(levels)], dtype=object)[codes]
        values[rng.random(n) < CENSUS_MISSING_CATEGORICAL] = None
        frame[name] = values
    frame.insert(0, "id", np.arange(n))
    path = folder / "data.parquet"
    frame.to_parquet(path, index=False, row_group_size=250_000)
    return path, X


def write_spec(folder: Path, args: argparse.Namespace, name: str) -> Path:
    method: dict = {"name": args.method, "k": args.k}
    if args.method in ("mdav", "ps"):
        method["cell_size"] = args.cell_size or MDAV_CELL_SIZE
    else:  # constrained_fuzzy: gated on crisp k as well as on its expected group size
        method["guarantee"] = "both"
        if args.cell_size is not None:
            method["cell_size"] = args.cell_size
        if args.restarts is not None:
            method["restarts"] = args.restarts
    spec = {
        "release": "scale",
        "source": "data.parquet",
        "id_column": "id",
        "quasi_identifiers": [f"x{j}" for j in range(args.d)]
        + ([c for c, _ in CENSUS_CATEGORICAL] if args.census else []),
        # the rule holds on every record, so that the validation reads every record;
        # --repair: `x0 >= -1` breaks on a sixth of the records, which the repair moves
        "on_violation": "repair" if args.repair else "fail",
        "edits": ["x0 >= -1" if args.repair else "x0 >= -1000"]
        + ([CONDITIONAL_RULE] if args.conditional else []),
        "method": method,
        "checks": {"k_anonymity": args.k, "max_information_loss": 100},
        **({"missing_values": [""]} if args.missing or args.census else {}),
        **({"dask": {"memory_limit": args.worker_memory}} if args.worker_memory else {}),
        "output": f"published-{name}",
        "warehouse": f"warehouse-{name}.duckdb",
        "reports": f"reports-{name}",
        "seed": args.seed,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _role_rss(proc: psutil.Process) -> dict[str, int]:
    """The RSS (bytes) of the tree's processes summed by role (:func:`_role`)."""
    out: dict[str, int] = {}
    for p in [proc, *proc.children(recursive=True)]:
        try:
            role = _role(p, proc)
            out[role] = out.get(role, 0) + p.memory_info().rss
        except psutil.Error:
            pass
    return out


def _role(p: psutil.Process, root: psutil.Process) -> str:
    """Which part of the release a process of the tree is: the flow's own process (which
    also hosts an embedded cluster's scheduler and nannies), the temporary Prefect API, or
    everything else (the Dask workers)."""
    if p.pid == root.pid:
        return "flow"
    return "api" if "uvicorn" in " ".join(p.cmdline()) else "workers"


def _tree_cpu(proc: psutil.Process, seen: dict[tuple[int, float], tuple[str, float]]) -> None:
    """Record the role and CPU seconds of every process of the tree, keyed by (pid, start
    time)."""
    for p in [proc, *proc.children(recursive=True)]:
        try:
            with p.oneshot():
                t = p.cpu_times()
                key = (p.pid, p.create_time())
                role = seen[key][0] if key in seen else _role(p, proc)
                seen[key] = (role, t.user + t.system)
        except psutil.Error:
            pass


def step_seconds(log: str) -> dict[str, float]:
    """Seconds of each flow step from the console log (see the module docstring)."""
    return {name: round(b - a, 2) for name, (a, b) in _step_spans(log).items()}


def step_peaks(log: str, samples: list[tuple[float, int]]) -> dict[str, float]:
    """The flow process's peak RSS (MB) during each step: the largest sample of
    ``samples`` ((seconds since midnight, RSS bytes) of the flow's process alone) within the
    step's span from the log (a step that runs twice, its largest)."""
    out: dict[str, float] = {}
    for name, spans in _step_spans(log, keep_spans=True).items():
        peak = max((rss for a, b in spans for t, rss in samples if a <= t <= b + 0.2), default=0)
        out[name] = round(peak / 2**20, 1)
    return out


def _seconds_of_day(stamp: datetime) -> float:
    return stamp.hour * 3600 + stamp.minute * 60 + stamp.second + stamp.microsecond / 1e6


def _step_spans(log: str, keep_spans: bool = False) -> dict:
    """Each flow step's span (seconds of the day, start, end) from the console log: the
    time from the end of the step before (the flow's start for the first) to the step's
    end. ``keep_spans``: every span of a step that ran more than once, else its summed
    seconds as one span (0, total)."""
    steps: dict = {}
    last: datetime | None = None
    for line in log.splitlines():
        m = _LOG.match(line.strip())
        if not m:
            continue
        stamp = datetime.strptime(m.group(1), "%H:%M:%S.%f")
        if last is None and "Beginning flow run" in m.group(2):
            last = stamp
        t = _TASK.search(m.group(2))
        if t and last is not None and not t.group(1).startswith("mask-"):
            if keep_spans:
                span = (_seconds_of_day(last), _seconds_of_day(stamp))
                steps.setdefault(t.group(1), []).append(span)
            else:
                seconds = round((stamp - last).total_seconds() % 86400, 2)
                total = steps.get(t.group(1), (0.0, 0.0))[1] + seconds
                steps[t.group(1)] = (0.0, total)
            last = stamp
    return steps


def piece_seconds(log: str) -> dict[str, float] | None:
    """What the workers spent on the mask's pieces, from the lines each piece's task run logs
    (``mask-cell``, ``mask-border``, ``mask-bound``; not the warm-up): the pieces, their task
    runs, the sums of their wall and CPU seconds, and their ``span`` -- from the earliest
    start (a line's time less its wall seconds) to the latest end. None without such lines
    (the local runner)."""
    pieces = runs = 0
    wall = cpu = 0.0
    first: datetime | None = None
    last: datetime | None = None
    for line in log.splitlines():
        m = _LOG.match(line.strip())
        t = _PIECE.search(m.group(2)) if m else None
        if t is None or t.group(1) == "mask-warm":
            continue
        end = datetime.strptime(m.group(1), "%H:%M:%S.%f")
        seconds = float(t.group(3))
        start = end - timedelta(seconds=seconds)
        first = start if first is None or start < first else first
        last = end if last is None or end > last else last
        pieces += int(t.group(2) or 1)
        runs += 1
        wall += seconds
        cpu += float(t.group(4))
    if first is None or last is None:
        return None
    return {
        "pieces": pieces,
        "task_runs": runs,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "span_seconds": round((last - first).total_seconds() % 86400, 2),
    }


def release_env(args: argparse.Namespace) -> dict[str, str]:
    """The release command's environment for ``--path`` and ``--duckdb-memory``."""
    env: dict[str, str] = {}
    if args.path == "streamed":
        env["SDCFLOW_STREAMED_ROWS"] = "0"
    elif args.path == "in-memory":
        env["SDCFLOW_STREAMED_ROWS"] = str(args.n + 1)
    if args.duckdb_memory:
        env["SDCFLOW_DUCKDB_MEMORY_LIMIT"] = args.duckdb_memory
    return env


def run_release(spec: Path, workers: int | None, extra_env: dict[str, str] | None = None) -> dict:
    cmd = [sys.executable, "-m", "sdcflow.cli", "release", str(spec)]
    if workers is not None:
        cmd += ["--runner", "dask", "--dask-workers", str(workers)]
    env = {**os.environ, "PREFECT_LOGGING_LEVEL": "INFO", "COLUMNS": "200", **(extra_env or {})}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=spec.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak = [0]
    roles: dict[str, int] = {}
    flow_rss: list[tuple[float, int]] = []  # (seconds of the day, the flow process's RSS)
    cpu: dict[tuple[int, float], tuple[str, float]] = {}
    done = threading.Event()

    def sample() -> None:
        ps = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                peak[0] = max(peak[0], _tree_rss(ps))
                for role, rss in _role_rss(ps).items():
                    roles[role] = max(roles.get(role, 0), rss)
                flow_rss.append((_seconds_of_day(datetime.now()), ps.memory_info().rss))
                _tree_cpu(ps, cpu)
            except psutil.Error:
                break
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    # the release's whole log beside its spec (a failure's traceback runs past the tail)
    spec.with_suffix(".log").write_text(out + err)
    total = sum(c for _, c in cpu.values())
    manifest_path = next(spec.parent.glob(f"published-{spec.stem}/scale/manifest.json"), None)
    manifest = json.loads(manifest_path.read_text()) if manifest_path else {}
    checks = {c["check"]: c["figure"] for c in manifest.get("checks", [])}
    return {
        "workers": workers,
        "runner": "dask" if workers is not None else "local",
        "exit_code": proc.returncode,
        "status": "published" if proc.returncode == 0 and manifest else "failed",
        "wall_seconds": round(wall, 2),
        "steps": step_seconds(err + out),
        "pieces": piece_seconds(err + out),
        "peak_rss_mb": round(peak[0] / 2**20, 1),
        # each role's own peak: the flow's process, the API, the workers summed
        "peak_rss_mb_by_role": {r: round(v / 2**20, 1) for r, v in sorted(roles.items())},
        "flow_peak_rss_mb_by_step": step_peaks(err + out, flow_rss),
        "cpu_seconds": round(total, 1),
        "cpu_seconds_by_role": {
            role: round(sum(c for r, c in cpu.values() if r == role), 1)
            for role in sorted({r for r, _ in cpu.values()})
        },
        "cores_busy": round(total / wall, 2),
        "il": checks.get("max_information_loss"),
        "il_against_repaired": (manifest.get("information_loss") or {}).get(
            "against_repaired_records"
        ),
        "repaired_records": (manifest.get("edit_rules") or {}).get("repaired_records"),
        # groups moved onto the rules as they are set (strata with missing numbers, the
        # conditional rule's consequent among them), and groups of complete records redone
        # on a conditional rule after rounding
        "groups_moved": {
            what: (manifest.get("method_details") or {}).get(f"groups_moved_onto_{what}")
            for what in ("edit_rules", "conditional_rules")
        },
        "path": (manifest.get("method_details") or {}).get("path", "in memory"),
        "k": checks.get("k_anonymity"),
        "stderr_tail": err[-1500:] if proc.returncode else "",
    }


def unpartitioned(X: np.ndarray, k: int) -> tuple[float, float]:
    """IL of exact MDAV on the whole file, and its CPU seconds (this process)."""
    t0 = time.process_time()
    labels = mdav(X, k)
    cpu = time.process_time() - t0
    return sse_sst_loss(X, group_means(X, labels)), cpu


def border_split(X: np.ndarray, k: int, cell_size: int) -> dict:
    """Where the CPU time of MDAV in cells goes, in this process: the pieces a Dask cluster
    shares (grouping + refining each cell, each part of the border search), the work left to
    the flow's process (cuts, assembly), and the IL of MDAV in the cells alone, after the
    in-cell search and after the border search."""
    Z = working_scale(X, True)
    spent: dict[str, float] = {}
    pieces: dict[str, int] = {}

    def timed(fn, calls, label):  # a PartMap
        t = time.process_time()
        out = serial_map(fn, calls, label)
        spent[label] = spent.get(label, 0.0) + time.process_time() - t
        pieces[label] = pieces.get(label, 0) + len(calls)
        return out

    t0 = time.process_time()
    with part_map(timed):
        labels = blocked_mdav(Z, k, cell_size)
    total = time.process_time() - t0
    order, bounds = spatial_cells(Z, cell_size)
    mdav_only = np.empty(X.shape[0], dtype=np.int64)
    offset = 0
    for lo, hi in itertools.pairwise(bounds):
        part = mdav_groups(np.ascontiguousarray(Z[order[lo:hi]]), k)
        mdav_only[order[lo:hi]] = part + offset
        offset += int(part.max()) + 1
    shared = sum(spent.values())
    return {
        "cells": len(bounds) - 1,
        "pieces": pieces,
        "pieces_cpu_seconds": {key: round(v, 2) for key, v in spent.items()},
        "shared_cpu_seconds": round(shared, 2),
        "rest_cpu_seconds": round(total - shared, 2),
        "il_cells_only": sse_sst_loss(X, group_means(X, mdav_only)),
        "il_refined": sse_sst_loss(X, group_means(X, labels)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--cell-size",
        type=int,
        help=f"records per spatial cell (mdav, ps: default {MDAV_CELL_SIZE}; "
        "constrained_fuzzy: none, the whole file, unless given)",
    )
    p.add_argument(
        "--runner",
        choices=["local", "dask"],
        help="default: dask (with --workers) for mdav and ps, local for constrained_fuzzy; "
        "constrained_fuzzy runs under dask only with --cell-size",
    )
    p.add_argument("--restarts", type=int, help="constrained_fuzzy: FCM restarts (default 5)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--method", default="mdav", choices=["mdav", "ps", "constrained_fuzzy"])
    p.add_argument("--no-baseline", action="store_true", help="skip unpartitioned MDAV")
    p.add_argument(
        "--missing",
        type=float,
        default=0.0,
        help="probability of each key value being missing (mdav: MDAV-generic with partial "
        "distances in the cells; no unpartitioned baseline, one pass is O(n^2))",
    )
    p.add_argument(
        "--census",
        action="store_true",
        help="a census-like file: the numeric keys with missing values plus three "
        "categorical keys (sex, region, activity) with missing values (mdav)",
    )
    p.add_argument(
        "--border", action="store_true", help="also split MDAV in cells: cells / border search"
    )
    p.add_argument(
        "--lever",
        type=int,
        nargs="+",
        metavar="CELL_SIZE",
        help="only the lever, in this process: IL of MDAV in cells of each size over "
        "unpartitioned MDAV, before and after the border search (no release)",
    )
    p.add_argument(
        "--cells-in-duckdb",
        action="store_true",
        help="only the spatial cells cut by DuckDB queries (Warehouse.median_cells) beside "
        "spatial_cells in this process (no release)",
    )
    p.add_argument(
        "--path",
        choices=["auto", "streamed", "in-memory"],
        default="auto",
        help="the release's path: the preflight's choice (auto), or forced through "
        "SDCFLOW_STREAMED_ROWS (streamed: 0; in-memory: more than the file's records)",
    )
    p.add_argument(
        "--repair",
        action="store_true",
        help="on_violation: repair with the rule x0 >= -1, which a sixth of the records "
        "break (the repair runs before the mask, in ranges on the streamed path)",
    )
    p.add_argument(
        "--conditional",
        action="store_true",
        help=f"--census: also the conditional rule `{CONDITIONAL_RULE}`, which the file keeps "
        "and a group mean can break (those groups are redone on the rule)",
    )
    p.add_argument(
        "--worker-memory",
        metavar="BYTES",
        help="dask: {memory_limit: ...} of each embedded worker, e.g. 3GB",
    )
    p.add_argument(
        "--duckdb-memory",
        metavar="BYTES",
        help="SDCFLOW_DUCKDB_MEMORY_LIMIT of the release's warehouse connections, e.g. 2GB",
    )
    p.add_argument("--json", type=Path, help="also write every figure here")
    p.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    args = p.parse_args(argv)

    if args.lever:
        return lever(args)
    runner = args.runner or ("local" if args.method == "constrained_fuzzy" else "dask")
    if runner == "dask" and args.method == "constrained_fuzzy" and args.cell_size is None:
        p.error("--runner dask with constrained_fuzzy needs --cell-size (e.g. 5000)")
    if args.missing and args.method != "mdav":
        p.error("--missing: only mdav groups records with missing numbers (MDAV-generic)")
    if not 0.0 <= args.missing < 1.0:
        p.error("--missing is a probability in [0, 1)")
    work = args.work or Path(tempfile.mkdtemp(prefix="sdcflow-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.cells_in_duckdb:
            return cells_in_duckdb(args, work)
        if args.conditional and not args.census:
            p.error("--conditional needs --census")
        if args.census:
            _, X = make_census(work, args.n, args.d, args.seed, args.conditional)
        else:
            _, X = make_data(work, args.n, args.d, args.seed, args.missing)
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        runs = []
        plans = [None] if runner == "local" else args.workers
        for workers in plans:
            name = "local" if workers is None else f"dask{workers}"
            runs.append(run_release(write_spec(work, args, name), workers, release_env(args)))
        load_after = Path("/proc/loadavg").read_text().split()[:3]
        # one pass with gaps: O(n^2); categorical keys: strata, no one-pass baseline
        skip = args.no_baseline or bool(args.missing) or args.census
        il0, cpu0 = (None, None) if skip else unpartitioned(X, args.k)
        border = border_split(X, args.k, args.cell_size or MDAV_CELL_SIZE) if args.border else None
        del X
        for run in runs:
            if run["il"] is not None and il0:
                run["il_over_unpartitioned"] = round(100.0 * (run["il"] / il0 - 1.0), 3)
        result = {
            "n": args.n,
            "d": args.d,
            "k": args.k,
            "seed": args.seed,
            "method": args.method,
            "cell_size": (args.cell_size or MDAV_CELL_SIZE)
            if args.method in ("mdav", "ps")
            else args.cell_size,
            "restarts": args.restarts if args.method == "constrained_fuzzy" else None,
            "data": "standard normal, independent keys"
            + (f", each value missing with probability {args.missing}" if args.missing else "")
            + (
                f", census-like: categorical keys {dict(CENSUS_CATEGORICAL)}, numeric values "
                f"missing with probability {CENSUS_MISSING}, categorical "
                f"{CENSUS_MISSING_CATEGORICAL}"
                if args.census
                else ""
            ),
            "load": {"before": load_before, "after": load_after, "cpus": os.cpu_count()},
            "il_unpartitioned": il0,
            "unpartitioned_cpu_seconds": round(cpu0, 2) if cpu0 is not None else None,
            "runs": runs,
            "border": border,
        }
        result["targets"] = targets(result)
        report(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return 0 if all(r["status"] == "published" for r in runs) else 1
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def cells_in_duckdb(args: argparse.Namespace, work: Path) -> int:
    """``--cells-in-duckdb``: the spatial cells cut by DuckDB queries
    (``Warehouse.median_cells``; the table never leaves DuckDB) beside ``spatial_cells`` on
    the whole key matrix in this process (the anchor, skipped above 3M records: the matrix
    and its scaled copy), on the same standard-normal keys, one run each."""
    from sdcflow.warehouse.warehouse import Warehouse

    rng = np.random.default_rng(args.seed)
    size = args.cell_size or MDAV_CELL_SIZE
    wh = Warehouse(work / "cells.duckdb")
    wh.initialize()
    run = "d" * 32
    names = [f"x{j}" for j in range(args.d)]
    with wh.connect() as con:
        con.execute("SET enable_progress_bar = false")
        first = True
        for start in range(0, args.n, 1_000_000):  # written a million records at a time
            m = min(1_000_000, args.n - start)
            part = pd.DataFrame(rng.standard_normal((m, args.d)), columns=names)
            part.insert(0, "sdc_row_id", np.arange(start, start + m))
            con.register("part", part)
            into = f'CREATE TABLE raw."run_{run}" AS' if first else f'INSERT INTO raw."run_{run}"'
            con.execute(f"{into} SELECT * FROM part")
            con.unregister("part")
            first = False
    load = Path("/proc/loadavg").read_text().split()[:3]
    t, c = time.perf_counter(), time.process_time()
    cells = wh.median_cells("raw", run, names, size)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(
        f"n={args.n} d={args.d} cell_size={size} (load {' '.join(load)}, DuckDB memory limit "
        f"{os.environ.get('SDCFLOW_DUCKDB_MEMORY_LIMIT', 'its default')}): median_cells "
        f"{len(cells)} cells in {wall:.1f} s wall, {cpu:.1f} CPU s of this process"
    )
    if args.n <= 3_000_000:
        with wh.connect(read_only=True) as con:
            X = con.execute(f'SELECT {", ".join(names)} FROM raw."run_{run}" ORDER BY sdc_row_id')
            X = np.column_stack(list(X.fetchnumpy().values()))
        t, c = time.perf_counter(), time.process_time()
        _, bounds = spatial_cells(working_scale(X, True), size)
        print(
            f"anchor: spatial_cells on the whole matrix {len(bounds) - 1} cells in "
            f"{time.perf_counter() - t:.1f} s wall, {time.process_time() - c:.1f} CPU s"
        )
    return 0


def lever(args: argparse.Namespace) -> int:
    """IL of MDAV in cells of each ``--lever`` size over unpartitioned MDAV (same data)."""
    X = np.random.default_rng(args.seed).standard_normal((args.n, args.d))
    il0, cpu0 = unpartitioned(X, args.k)
    print(
        f"n={args.n} d={args.d} k={args.k} seed={args.seed}: unpartitioned MDAV IL "
        f"{il0:.4f} % ({cpu0:.2f} CPU s)"
    )
    rows = []
    for size in args.lever:
        b = border_split(X, args.k, size)
        b["cell_size"] = size
        b["cells_only_over_unpartitioned"] = round(100 * (b["il_cells_only"] / il0 - 1), 3)
        b["refined_over_unpartitioned"] = round(100 * (b["il_refined"] / il0 - 1), 3)
        rows.append(b)
        print(
            f"cell_size {size:>7}: {b['cells']:>4} cells; IL over unpartitioned "
            f"{b['cells_only_over_unpartitioned']:+.2f} % cells only, "
            f"{b['refined_over_unpartitioned']:+.2f} % after the border search; CPU s: pieces "
            f"{b['pieces_cpu_seconds']} (shared), cuts and assembly {b['rest_cpu_seconds']}"
        )
    if args.json:
        args.json.write_text(json.dumps({"il_unpartitioned": il0, "lever": rows}, indent=2))
    return 0


def targets(result: dict) -> list[dict]:
    """Every figure beside its target (the time targets are for 1M records)."""
    out = []
    scale = result["n"] / 1e6
    fuzzy = result["method"] == "constrained_fuzzy"
    for run in result["runs"]:
        who = f"{run['runner']}" + (f" {run['workers']} worker(s)" if run["workers"] else "")
        limit = TARGETS["constrained_fuzzy_wall_seconds_1m" if fuzzy else "wall_seconds_1m"]
        out.append(
            {
                "figure": f"wall seconds, {who}"
                + ("" if run["status"] == "published" else f" ({run['status']})"),
                "value": run["wall_seconds"],
                "target": f"< {limit:g} at 1M"
                + ("" if scale == 1 else f" (this run: n={result['n']})"),
                # a run that published nothing meets no time target
                "met": (run["wall_seconds"] < limit if scale == 1 else None)
                if run["status"] == "published"
                else False,
            }
        )
        out.append(
            {
                "figure": f"peak RSS MB, {who}",
                "value": run["peak_rss_mb"],
                "target": f"< {TARGETS['peak_rss_mb']:g}",
                "met": run["peak_rss_mb"] < TARGETS["peak_rss_mb"],
            }
        )
        if "il_over_unpartitioned" in run:
            out.append(
                {
                    "figure": f"IL over unpartitioned MDAV %, {who}",
                    "value": run["il_over_unpartitioned"],
                    "target": f"<= {TARGETS['il_over_unpartitioned_pct']:g}",
                    "met": run["il_over_unpartitioned"] <= TARGETS["il_over_unpartitioned_pct"],
                }
            )
    by = {r["workers"]: r["wall_seconds"] for r in result["runs"] if r["status"] == "published"}
    if 1 in by and 2 in by:
        speedup = by[1] / by[2]
        out.append(
            {
                "figure": "speed-up, 2 workers over 1 (wall, end to end)",
                "value": round(speedup, 3),
                "target": f">= {TARGETS['speedup_2_over_1']:g}",
                "met": speedup >= TARGETS["speedup_2_over_1"],
            }
        )
    cpus = result["load"]["cpus"]
    done = [r for r in result["runs"] if r["status"] == "published"]
    two = next((r for r in done if r["workers"] == 2), None)
    if 1 in by and two is not None and two["cpu_seconds"]:
        out.append(
            {
                "figure": f"speed-up ceiling on {cpus} CPUs (1 worker's wall / (2's CPU / {cpus}))",
                "value": round(by[1] / (two["cpu_seconds"] / cpus), 3),
                "target": "(no scheduling of this work beats it)",
                "met": None,
            }
        )
    masks = {
        r["workers"]: r["steps"].get("mask")
        for r in result["runs"]
        if r["status"] == "published" and r["steps"].get("mask")
    }
    if 1 in masks and 2 in masks:
        out.append(
            {
                "figure": "speed-up of the mask step, 2 workers over 1 (wall)",
                "value": round(masks[1] / masks[2], 3),
                "target": "(what the cluster runs)",
                "met": None,
            }
        )
    spans = {
        r["workers"]: r["pieces"]["span_seconds"]
        for r in done
        if r.get("pieces") and r["pieces"]["span_seconds"] > 0
    }
    if 1 in spans and 2 in spans:
        # (S + P1) / (S + P2) <= P1 / P2 for any S >= 0: with the rest as long in both runs
        out.append(
            {
                "figure": "speed-up of the pieces' span, 2 workers over 1 (first start to "
                "last end)",
                "value": round(spans[1] / spans[2], 3),
                "target": "(end to end stays below it if the rest is as long in both)",
                "met": None,
            }
        )
    if 1 in masks and 1 in by:
        # Amdahl: everything but the mask step takes the 1-worker run's seconds, the mask
        # step half of its 1-worker seconds
        out.append(
            {
                "figure": "speed-up bound, mask step perfectly parallel (1 worker's wall / "
                "(wall - mask / 2))",
                "value": round(by[1] / (by[1] - masks[1] / 2), 3),
                "target": "(the other steps as they are)",
                "met": None,
            }
        )
    return out


def report(result: dict) -> None:
    print(
        f"n={result['n']} d={result['d']} k={result['k']} seed={result['seed']} "
        f"method={result['method']} cell_size={result['cell_size']} ({result['data']}); "
        f"load before {' '.join(result['load']['before'])}, after "
        f"{' '.join(result['load']['after'])} on {result['load']['cpus']} CPUs"
    )
    if result["il_unpartitioned"] is not None:
        print(
            f"unpartitioned MDAV: IL {result['il_unpartitioned']:.4f} % "
            f"({result['unpartitioned_cpu_seconds']} CPU s, the baseline)"
        )
    if result["border"]:
        b = result["border"]
        print(
            f"MDAV in {b['cells']} cells, one process: pieces a cluster shares "
            f"{b['pieces']} took {b['pieces_cpu_seconds']} CPU s, the cuts and assembly left "
            f"to the flow's process {b['rest_cpu_seconds']} CPU s; IL {b['il_cells_only']:.4f} "
            f"% for MDAV in the cells alone, {b['il_refined']:.4f} % after the searches"
        )
    for run in result["runs"]:
        steps = ", ".join(f"{k} {v:.1f}" for k, v in run["steps"].items())
        print(
            f"{run['runner']} workers={run['workers']}: {run['status']} (exit "
            f"{run['exit_code']}), {run['path']} path, IL {run['il']}, k {run['k']}"
            + "".join(
                f", groups moved onto the {what.replace('_', ' ')} {n}"
                for what, n in run["groups_moved"].items()
                if n is not None
            )
            + f"; {run['cpu_seconds']} CPU s, "
            f"{run['cores_busy']} cores busy on average (CPU s by process: "
            f"{run['cpu_seconds_by_role']}); steps (s): {steps}"
        )
        print(
            f"  peak RSS MB by process: {run['peak_rss_mb_by_role']}; the flow process's "
            f"peak by step: {run['flow_peak_rss_mb_by_step']}"
        )
        if run.get("pieces"):
            pc = run["pieces"]
            print(
                f"  the mask's pieces: {pc['pieces']} in {pc['task_runs']} task runs, "
                f"{pc['wall_seconds']} s wall and {pc['cpu_seconds']} CPU s on the workers, "
                f"span {pc['span_seconds']} s; the rest of the run "
                f"{run['wall_seconds'] - pc['span_seconds']:.1f} s"
            )
        if run["stderr_tail"]:
            print(run["stderr_tail"], file=sys.stderr)
    print(f"{'figure':<52} {'value':>10}  {'target':<28} met")
    for t in result["targets"]:
        met = {True: "yes", False: "NO", None: "-"}[t["met"]]
        print(f"{t['figure']:<52} {t['value']!s:>10}  {t['target']:<28} {met}")


if __name__ == "__main__":
    sys.exit(main())
