"""Time SUDA2 on synthetic keys beside sdcMicro's ``suda2``.

Usage::

    SDCMICRO_LIB=<R library holding sdcMicro> python benchmarks/risk_measures.py
        [--n 100000] [--seed 0] [--repeat 5]

Keys: ``numpy.random.default_rng(seed)``, n records on m = 5, 6, 7 keys of 2..9 categories
with skewed frequencies (one dominant category). sdcflow's ``core.risk.suda2`` is timed in
this process (wall seconds, the median of ``repeat`` calls after a warm-up call that loads
the compiled kernels). sdcMicro's ``suda2`` (``DisFraction = 0.01``) runs in ``Rscript`` on
the same keys written to a temporary CSV; its time is measured inside R with
``system.time`` around the call alone (the median of ``repeat`` calls; reading the CSV is
outside the clock), and its scores are compared. R runs only when ``Rscript`` is on PATH and
``SDCMICRO_LIB`` is set; otherwise the row says why it skipped. The machine's 1-minute load
average is printed before and after: on a shared machine both sides slow down together.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from sdcflow.core.risk import suda2

R_SCRIPT = """
suppressPackageStartupMessages(library(sdcMicro))
d <- read.csv(commandArgs(TRUE)[1])
times <- vapply(seq_len(as.integer(commandArgs(TRUE)[3])), function(i) {
  system.time(r <<- suda2(d, DisFraction = 0.01))[["elapsed"]]
}, numeric(1))
write.csv(data.frame(score = r$score, dis = r$disScore), commandArgs(TRUE)[2], row.names = FALSE)
cat(median(times), "\\n")
"""


def keys(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cols = []
    for _ in range(m):
        c = int(rng.integers(2, 10))
        p = np.r_[0.5, np.full(c - 1, 0.5 / (c - 1))]
        cols.append(rng.choice(c, size=n, p=p))
    return np.column_stack(cols)


def load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


def run_r(x: np.ndarray, repeat: int) -> tuple[float | str, np.ndarray | None]:
    lib = os.environ.get("SDCMICRO_LIB")
    if shutil.which("Rscript") is None:
        return "skipped: Rscript not on PATH", None
    if not lib:
        return "skipped: SDCMICRO_LIB not set (the R library holding sdcMicro)", None
    with tempfile.TemporaryDirectory() as tmp:
        src, out, script = Path(tmp, "k.csv"), Path(tmp, "o.csv"), Path(tmp, "s.R")
        np.savetxt(
            src,
            x,
            fmt="%d",
            delimiter=",",
            header=",".join(f"k{j}" for j in range(x.shape[1])),
            comments="",
        )
        script.write_text(R_SCRIPT)
        env = dict(os.environ, R_LIBS=lib)
        p = subprocess.run(["Rscript", str(script), str(src), str(out), str(repeat)], env=env,
                           capture_output=True, text=True, check=False)  # fmt: skip
        if p.returncode != 0:
            return f"failed: {p.stderr.strip().splitlines()[-1:]}", None
        res = np.genfromtxt(out, delimiter=",", skip_header=1, missing_values="NA")
        return float(p.stdout.split()[-1]), res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per side (median)")
    a = ap.parse_args()
    suda2(keys(200, 3, a.seed))  # warm-up (imports, compiled kernels)
    print(f"load average before: {load_average()}; medians of {a.repeat} calls\n")
    head = ("n", "keys", "MSUs", "sdcflow s", "sdcMicro s", "ratio", "scores equal",
            "max |DIS diff|")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for m in (5, 6, 7):
        x = keys(a.n, m, a.seed + m)
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            r = suda2(x, missing=None)
            times.append(time.perf_counter() - t0)
        t = float(np.median(times))
        rt, res = run_r(x, a.repeat)
        same = dis = ratio = "-"
        if isinstance(rt, float):
            ratio = f"{rt / t:.1f}"
            rt = f"{rt:.3f}"
        if res is not None:
            same = str(bool(np.array_equal(r.score, res[:, 0])))
            ok = ~np.isnan(res[:, 1])
            dis = f"{np.abs(r.dis_score - res[:, 1])[ok].max():.1e} ({int((~ok).sum())} NA in R)"
        row = (a.n, m, int(r.msu_counts.sum()), f"{t:.4f}", rt, ratio, same, dis)
        print("| " + " | ".join(str(v) for v in row) + " |")
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
