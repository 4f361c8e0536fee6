"""``sdcflow assess`` on UCI Adult from the shell, beside sdcMicro's risk of the same keys
(issue 43, item 3: under 3 s).

Usage::

    python benchmarks/assess.py --csv ../shared/data/adult.csv [--repeats 5]

Adult's seven keys (age, sex, race, marital-status, education, workclass, native-country),
``?`` missing, ``fnlwgt`` the weight. sdcflow: the whole command
``sdcflow assess ... --json`` as a process (interpreter start, imports, reading the CSV, the
figures), wall seconds per run. sdcMicro: ``Rscript`` running ``createSdcObj`` with the same
keys and weight (its risk: frequencies, individual and global risk) and ``suda2`` on the same
keys, through ``benchmarks/sdcmicro_assess.R`` when ``Rscript`` is on the path and
``SDCMICRO_LIB`` names the library sdcMicro is installed in (library loading included, as the
shell pays it); otherwise its line says why it was skipped. Median and minimum over the
repeats, one JSON line per tool, and the figures both give for the records below k = 2 and 5.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

KEYS = ["age", "sex", "race", "marital-status", "education", "workclass", "native-country"]
R_SCRIPT = Path(__file__).with_name("sdcmicro_assess.R")


def _timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, done.stdout


def sdcflow_runs(csv: str, repeats: int) -> dict:
    command = [sys.executable, "-m", "sdcflow", "assess", csv, "--keys", *KEYS]
    command += ["--weight", "fnlwgt", "--missing-values", "?", "--json"]
    _timed(command)  # warm-up: the file system's cache, numba's on-disk cache
    times, out = [], ""
    for _ in range(repeats):
        seconds, out = _timed(command)
        times.append(seconds)
    body = json.loads(out)
    return {
        "tool": "sdcflow",
        "median_wall_seconds": statistics.median(times),
        "min_wall_seconds": min(times),
        "records_below_2": body["records_below_k"]["2"],
        "records_below_5": body["records_below_k"]["5"],
    }


def sdcmicro_runs(csv: str, repeats: int) -> dict:
    lib = os.environ.get("SDCMICRO_LIB")
    if shutil.which("Rscript") is None or not lib:
        why = "Rscript not on the path" if lib else "SDCMICRO_LIB is not set"
        return {"tool": "sdcMicro", "skipped": why}
    env = {**os.environ, "R_LIBS": lib}
    command = ["Rscript", str(R_SCRIPT), csv]
    times, out = [], ""
    for _ in range(repeats):
        seconds, out = _timed(command, env)
        times.append(seconds)
    figures = dict(line.split("=", 1) for line in out.split() if "=" in line)
    return {
        "tool": "sdcMicro",
        "median_wall_seconds": statistics.median(times),
        "min_wall_seconds": min(times),
        "records_below_2": int(figures["below2"]),
        "records_below_5": int(figures["below5"]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", required=True, help="adult.csv (UCI Adult with a header)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    for line in (sdcflow_runs(args.csv, args.repeats), sdcmicro_runs(args.csv, args.repeats)):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
