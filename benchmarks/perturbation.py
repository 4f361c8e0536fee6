"""Time the perturbative methods of ``sdcflow.core.perturbation`` beside sdcMicro's; print a
table.

Usage::

    python benchmarks/perturbation.py [--n 100000] [--d 3] [--categories 10] [--p 15]
                                      [--seed 0] [--repeat 7]

Data: ``d`` standard-normal columns with correlation 0.5 and one categorical column of
``categories`` codes, ``n`` records (``numpy.random.default_rng(seed)``). Each sdcflow call
(the core function alone, on the (n, d) float64 array) is timed ``repeat`` times after a
warm-up call on 1 000 records (numba's compilation, or its cache, outside the clock); the
median wall-clock seconds are printed. sdcMicro runs through
``benchmarks/sdcmicro_perturbation.R`` on the same data when ``Rscript`` is on the path and
``SDCMICRO_LIB`` names the R library sdcMicro is installed in; otherwise its column says why
not. Its clock covers each sdcMicro call alone (``addNoise(num, ...)`` on the data frame of
the d columns, ``pram``, ...; not reading the CSV), the median of ``repeat`` calls for the
fast ones (``pram``, ``rankSwap``: one call). Rank swapping runs with sdcMicro's
``P = p / 100`` (its ``P`` is a fraction) and no top/bottom coding on both sides.

The row ``normal draw floor`` is the least any noise addition pays that draws n d normals:
allocating the (d, n) float64 result and filling it with ``Generator.standard_normal``, timed
in the same run. Additive noise cannot be faster than it; its ratio to sdcMicro's additive
time (and to its correlated time: correlated noise draws as many) bounds the speed-up of
``add_noise``.

Data shuffling shuffles ``x2..xd`` given ``x1`` (``method = "ds"``; sdcMicro's ``gadp = FALSE``,
which skips the GADP fit it would add to the result and sdcflow does not compute); it needs
``d >= 3`` (sdcMicro shuffles at least two variables).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sdcflow.core.perturbation import add_noise, pram, rank_swap, shuffle, top_bottom_code

R_SCRIPT = Path(__file__).with_name("sdcmicro_perturbation.R")


def make_data(n: int, d: int, categories: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cov = np.full((d, d), 0.5) + 0.5 * np.eye(d)
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    weights = 1.0 / np.arange(1, categories + 1)
    codes = rng.choice(categories, size=n, p=weights / weights.sum())
    return X, codes


def calls(X: np.ndarray, codes: np.ndarray, p: float) -> dict[str, Callable[[], object]]:
    return {
        "pram": lambda: pram(codes, rng=1),
        "add_noise additive": lambda: add_noise(X, method="additive", rng=1),
        "add_noise correlated": lambda: add_noise(X, method="correlated", rng=1),
        "add_noise restricted": lambda: add_noise(X, method="restricted", rng=1),
        "rank_swap": lambda: rank_swap(X, p=p, rng=1),
        "top_bottom_code": lambda: top_bottom_code(X[:, 0], top=2.0, replacement=2.0),
        "shuffle ds": lambda: shuffle(X[:, 1:], X[:, :1], rng=1),
    }


def load_average() -> str:
    """The 1-minute load average (timings on a shared machine are read beside it)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


def draw_floor(n: int, d: int) -> None:
    """What additive noise cannot avoid: a fresh (d, n) float64 array of standard normals."""
    np.random.default_rng(1).standard_normal(out=np.empty((d, n)))


def median_seconds(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def time_sdcflow(X: np.ndarray, codes: np.ndarray, p: float, repeat: int) -> dict[str, float]:
    for call in calls(X[:1000], codes[:1000], p).values():  # warm-up: numba compile or cache
        call()
    out = {}
    for name, call in calls(X, codes, p).items():
        out[name] = median_seconds(call, 1 if name == "rank_swap" else repeat)
    out["normal draw floor"] = median_seconds(lambda: draw_floor(*X.shape), repeat)
    return out


def sdcmicro_skip_reason() -> str | None:
    """Why sdcMicro cannot run here, or None."""
    if shutil.which("Rscript") is None:
        return "Rscript is not on the path"
    if not os.environ.get("SDCMICRO_LIB"):
        return "SDCMICRO_LIB (the R library sdcMicro is installed in) is not set"
    return None


def time_sdcmicro(X: np.ndarray, codes: np.ndarray, p: float, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.csv"
        header = ",".join([*(f"x{j + 1}" for j in range(X.shape[1])), "cat"])
        table = np.column_stack([X, codes])
        fmt = ["%.17g"] * X.shape[1] + ["%d"]
        np.savetxt(src, table, delimiter=",", header=header, comments="", fmt=fmt)
        env = {**os.environ, "R_LIBS": os.environ["SDCMICRO_LIB"]}
        done = subprocess.run(
            ["Rscript", "--vanilla", str(R_SCRIPT), str(src), repr(p / 100.0), str(repeat)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"sdcMicro failed ({done.returncode}): {done.stderr[-2000:]}")
    out = {}
    for line in done.stdout.splitlines():
        if line.startswith("TIME,"):
            _, name, seconds = line.split(",")
            out[name] = float(seconds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--categories", type=int, default=10)
    parser.add_argument("--p", type=float, default=15.0, help="rank range in percent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per method (median)")
    args = parser.parse_args()
    X, codes = make_data(args.n, args.d, args.categories, args.seed)
    ours = time_sdcflow(X, codes, args.p, args.repeat)
    reason = sdcmicro_skip_reason()
    theirs = {} if reason else time_sdcmicro(X, codes, args.p, args.repeat)
    floor = ours.pop("normal draw floor")
    print(
        f"n = {args.n}, d = {args.d}, categories = {args.categories}, p = {args.p:g} %, "
        f"median of {args.repeat} calls, load average {load_average()}"
    )
    print(f"{'method':<22} {'sdcflow s':>10} {'sdcMicro s':>11} {'ratio':>7}")
    for name, seconds in ours.items():
        if name in theirs:
            r = theirs[name]
            ratio = f"{r / seconds:.1f}" if r > 0 else "-"  # R's clock ticks in ms
            print(f"{name:<22} {seconds:>10.4f} {r:>11.4f} {ratio:>7}")
        else:
            print(f"{name:<22} {seconds:>10.4f} {'-':>11} {'-':>7}")
    print(
        f"normal draw floor (a fresh ({args.d}, {args.n}) array of standard normals): {floor:.4f} s"
    )
    for kind in ("additive", "correlated"):
        r = theirs.get(f"add_noise {kind}", 0.0)
        print(f"  sdcMicro {kind} / floor = {r / floor:.1f}: the most {kind} noise can gain")
    print(f"load average after: {load_average()}")
    if reason:
        print(f"sdcMicro skipped: {reason}")


if __name__ == "__main__":
    main()
