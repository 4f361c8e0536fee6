"""One try of the working object on the business survey, warm, beside sdcMicro (issue 43).

Usage::

    python benchmarks/working_object.py [--csv examples/business_survey/data.csv] [--repeats 15]

The example file (``examples/business_survey/generate.py``: 3,000 businesses, six amounts and
``region``). "One try" is what a statistician does in a notebook: MDAV with k = 5 within
region, then the risk. sdcflow: :class:`sdcflow.working.SdcFrame` built once (the notebook's
object), then ``sdc.mask("mdav", k=5)`` and ``sdc.risk()`` timed together, and ``undo()``
outside the clock; the first try warms up (numba compiles its kernels on first use, a
notebook's first cell pays it once). The object's construction (the original keys encoded,
their risk measured) is timed apart. sdcMicro: ``createSdcObj`` with the six amounts as
``numVars``, region as key and (a copy of it) as ``strataVar``, ``microaggregation(method =
"mdav", aggr = 5)`` and the risk it keeps, through ``benchmarks/sdcmicro_working_object.R``
when ``Rscript`` is on the path and ``SDCMICRO_LIB`` names the library sdcMicro is installed
in; otherwise its line says why it was skipped. sdcMicro's risk counts the categorical key
(region) only; sdcflow's counts identical released rows over all seven keys.

Median and minimum wall seconds over the repeats, one JSON line per tool.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pandas as pd

from sdcflow.working import SdcFrame

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "business_survey" / "data.csv"
R_SCRIPT = HERE / "sdcmicro_working_object.R"
AMOUNTS = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]


def sdcflow_times(frame: pd.DataFrame, repeats: int) -> dict:
    built = []
    for _ in range(3):
        start = time.perf_counter()
        sdc = SdcFrame(frame, numeric=AMOUNTS, strata=["region"])
        sdc.risk()
        built.append(time.perf_counter() - start)
    sdc.mask("mdav", k=5).risk()  # warm-up: numba's kernels compile on first use
    sdc.undo()
    tries, k = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        k = sdc.mask("mdav", k=5).risk()["k_anonymity"]
        tries.append(time.perf_counter() - start)
        sdc.undo()
    return {
        "tool": "sdcflow",
        "one_try_median_s": statistics.median(tries),
        "one_try_min_s": min(tries),
        "build_median_s": statistics.median(built),
        "repeats": repeats,
        "k_anonymity": k,
    }


def sdcmicro_times(csv: Path, repeats: int) -> dict:
    if shutil.which("Rscript") is None:
        return {"tool": "sdcMicro", "skipped": "Rscript is not on the path"}
    if not os.environ.get("SDCMICRO_LIB"):
        return {
            "tool": "sdcMicro",
            "skipped": "SDCMICRO_LIB (the R library sdcMicro is installed in) is not set",
        }
    env = {**os.environ, "R_LIBS": os.environ["SDCMICRO_LIB"]}
    done = subprocess.run(
        ["Rscript", "--vanilla", str(R_SCRIPT), str(csv), str(repeats)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT,")]
    if done.returncode != 0 or not lines:
        return {"tool": "sdcMicro", "skipped": f"Rscript failed: {done.stderr.strip()[-300:]}"}
    _, median, fastest, n = lines[-1].split(",")
    return {
        "tool": "sdcMicro",
        "one_try_median_s": float(median),
        "one_try_min_s": float(fastest),
        "repeats": int(n),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=EXAMPLE)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    frame = pd.read_csv(args.csv)
    rows = [sdcflow_times(frame, args.repeats), sdcmicro_times(args.csv, args.repeats)]
    print(f"one try (MDAV k=5 within region, then the risk) on {len(frame)} records, warm")
    for row in rows:
        if "skipped" in row:
            print(f"  {row['tool']:<9} skipped: {row['skipped']}")
        else:
            print(
                f"  {row['tool']:<9} median {row['one_try_median_s']:.3f} s, "
                f"min {row['one_try_min_s']:.3f} s over {row['repeats']}"
            )
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
