"""How long a census release on Dask workers takes to stop on ``SIGTERM`` in its mask, and
what it leaves.

Usage::

    python benchmarks/interrupt.py                       # 1,000,000 records, two workers
    python benchmarks/interrupt.py --n 200000 --after 1

The file and spec are ``benchmarks/scale.py --census``'s (``mdav``, k = 5, ``cell_size``
5000, two workers of an embedded ``LocalCluster``). The release runs as ``sdcflow release``
in a process of its own; ``--after`` seconds after the first piece of the mask is logged it
is sent ``SIGTERM``. Printed: the seconds from the signal to the command's exit, its exit
code and last line, the files beside the warehouse afterwards (a run's private pieces folder
must be gone), and the Dask worker processes still alive (none may be).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import make_census, write_spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--after", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="sdcflow-interrupt-"))
    make_census(folder, args.n, 10, args.seed)
    spec_args = argparse.Namespace(
        method="mdav", k=5, cell_size=5000, d=10, census=True, missing=0.0,
        worker_memory=None, seed=args.seed, restarts=None,
    )  # fmt: skip
    spec = write_spec(folder, spec_args, "interrupt")
    cmd = [sys.executable, "-m", "sdcflow.cli", "release", spec.name, "--runner", "dask"]
    cmd += ["--dask-workers", str(args.workers)]
    env = {**os.environ, "PREFECT_LOGGING_LEVEL": "INFO"}
    proc = subprocess.Popen(
        cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    while proc.poll() is None and not any("mask-stratum" in line for line in lines):
        time.sleep(0.05)
    time.sleep(args.after)
    workers = psutil.Process(proc.pid).children(recursive=True)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait()
    seconds = time.perf_counter() - sent
    reader.join(5)
    alive = [p.pid for p in workers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    beside = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
    print(f"n {args.n}, {args.workers} workers, SIGTERM {args.after:g} s into the mask's pieces")
    print(f"stopped in {seconds:.2f} s, exit {code}: {last}")
    print(f"hidden files beside the warehouse: {beside or 'none'}")
    print(f"processes of the release still alive: {alive or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
