"""Local suppression on UCI Adult under identical-row k, beside sdcMicro; figures measured by
our code on each tool's released file.

Usage::

    python benchmarks/mixed.py adult --csv ../shared/data/adult.csv [--k 5] [--variants ...]
        [--relaxation]
    python benchmarks/mixed.py gap [--tables 40] [--n 60] [--k 3] [--seed 0]

Adult with the seven keys of issue 40 (age, sex, race, marital-status, education, workclass,
native-country), ``?`` read as missing, ``fnlwgt`` as the sampling weight, k = 5. k counts
identical released rows, a blank equal only to a blank (``DESIGN.md``, "Measures and
checks"). Variants:

* ``all_categorical`` — the seven keys as categories (age a factor of its 73 values), local
  suppression (``method: local_suppression``, greedy).
* ``age_recoded`` — age recoded into 5-year bands [15, 20), ..., [90, inf) first, then local
  suppression: how recoding changes the count.
* ``age_numeric`` — mixed keys: age numeric, microaggregated by MDAV inside the strata (classes
  of identical released rows of the six categorical keys; ``method: mdav``). Its records in
  classes below k and lower bound are those of the six categorical keys, and consistent rows
  are not counted (a released mean is not compared with a true age by equality).

For each variant one table, a column per tool, every figure computed here on the released
keys against the true (recoded) keys:

* ``suppressed values`` — values present in the input and blank in the release; beside it
  the records in classes below k before (the count the issue calls a lower bound) and the
  proven lower bound (:func:`sdcflow.core.suppression.local.lower_bound`), with the ratios;
  with ``--relaxation`` also the linear-programming bound
  (:func:`sdcflow.core.suppression.relaxation.relaxation_bound`, rounded up), which no local
  suppression can beat either;
* ``records below k, shared convention`` — records matched by fewer than k released rows, a
  blank matching any value (sdcMicro's ``freqCalc``);
* ``records in identical classes < k`` — records whose released row fewer than k rows equal;
* ``unsafe before, published unchanged`` — records below k before, under the shared
  convention (the count issue 40 quotes) and in a class of identical rows below k, released
  with every key as it was;
* ``records with < k consistent rows`` — records for which fewer than k released rows are
  consistent with their true keys (on every key blank, or equal to the true value, a true
  missing value equal only to a blank): the candidates an intruder who knows them is left
  with; and the same for an intruder who does not know a record's missing values (any
  released value consistent with them: the count issue 40 quotes for sdcMicro, 1,613);
* ``expected re-identifications`` — the sum of sdcMicro's individual risks with the fnlwgt
  weights (:func:`sdcflow.core.measures.risk.individual_risk`), frequencies counted over
  identical rows, and under the shared convention
  (:func:`sdcflow.core.measures.risk.risk_summary`);
* ``seconds`` — wall seconds of the masking call (sdcflow:
  :func:`sdcflow.methods.mixed.mask_keys` after a warm-up that compiles the numba
  kernels; sdcMicro: its ``localSuppression()`` call, with its CPU seconds).

sdcMicro runs through ``benchmarks/sdcmicro_local_suppression.R`` when ``Rscript`` is on the
path and ``SDCMICRO_LIB`` names the library sdcMicro is installed in; otherwise its column
says why it was skipped. Its age-band variant is given the banded ages of this file, so that
both tools see the same bands. ``age_numeric`` has no sdcMicro counterpart
(``localSuppression`` suppresses categories only). One JSON line per variant and tool follows
each table.

``gap`` compares the greedy local suppression with the exact minimum (the 0-1 program,
HiGHS) and the lower bound on random tables: n records, keys of 3, 5 and 8 categories drawn
with Zipf(1.2) probabilities, 3 % missing values, k = 3.

The figures and the commands: ``docs/benchmarks/``, "Mixed keys (Adult)".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdcflow.core.distinct import row_ids
from sdcflow.core.measures.anonymity import match_counts
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.measures.risk import individual_risk, risk_summary
from sdcflow.core.suppression.local import local_suppression, lower_bound
from sdcflow.core.suppression.relaxation import relaxation_bound
from sdcflow.methods import METHODS
from sdcflow.methods.keys import Key
from sdcflow.methods.mixed import SuppressionSettings, mask_keys
from sdcflow.methods.recoding import Recoding, recode

KEYS = ["age", "sex", "race", "marital-status", "education", "workclass", "native-country"]
CATEGORICAL = KEYS[1:]
VARIANTS = ("all_categorical", "age_recoded", "age_numeric")
BANDS = Recoding("bins", edges=(*(float(e) for e in range(15, 95, 5)), np.inf))
R_SCRIPT = Path(__file__).with_name("sdcmicro_local_suppression.R")


def variant(name: str, k: int) -> tuple[list[Key], dict[str, Any]]:
    """Keys and method block of a variant."""
    nominal = [Key(c, "nominal") for c in CATEGORICAL]
    if name == "all_categorical":
        return [Key("age", "nominal"), *nominal], {"name": "local_suppression", "k": k}
    if name == "age_recoded":
        return [Key("age", "numeric", recoding=BANDS), *nominal], {
            "name": "local_suppression",
            "k": k,
        }
    if name == "age_numeric":
        return [Key("age", "numeric", decimals=0, integer=True), *nominal], {"name": "mdav", "k": k}
    raise SystemExit(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")


def true_keys(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The keys as the masking sees them: age in bands for ``age_recoded``."""
    out = frame[KEYS].copy()
    if name == "age_recoded":
        out["age"] = np.asarray(recode("age", frame["age"], BANDS).values)
    return out


def _canonical(values: pd.Series) -> pd.Series:
    """Numbers where every value present reads as one (40, "40" and 40.0 alike: sdcMicro's
    file is read as text), else text; missing values None."""
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().sum() == values.notna().sum():
        return numbers.astype(object).where(numbers.notna(), None)
    return (
        values.astype(object).where(values.notna(), None).map(lambda v: v if v is None else str(v))
    )


def _joint_codes(true: pd.DataFrame, released: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the true and released keys, equal values equal codes, -1 missing: (n, d) x 2."""
    n = len(true)
    T = np.empty(true.shape, dtype=np.int32)
    R = np.empty(true.shape, dtype=np.int32)
    for j, c in enumerate(true.columns):
        both = pd.concat([true[c], released[c]], ignore_index=True)
        codes = pd.factorize(_canonical(both), use_na_sentinel=True)[0]
        T[:, j], R[:, j] = codes[:n], codes[n:]
    return T, R


def consistent_rows(T: np.ndarray, R: np.ndarray, *, unknown_missing: bool = False) -> np.ndarray:
    """For every record, the released rows consistent with its true keys: on every key blank
    in the row, or equal to the true value (a true missing value equal only to a blank; with
    ``unknown_missing``, consistent with any value, an intruder not knowing it). One join per
    pair of patterns of blanks. (n, d) -> (n,)."""
    n = T.shape[0]
    out = np.zeros(n, dtype=np.int64)
    released = row_ids((R < 0).astype(np.int32))
    known = row_ids((T < 0).astype(np.int32)) if unknown_missing else np.zeros(n, np.int64)
    for a in np.unique(known):
        mine = np.flatnonzero(known == a)
        for p in np.unique(released):
            rows = np.flatnonzero(released == p)
            keep = R[rows[0]] >= 0
            if unknown_missing:
                keep &= T[mine[0]] >= 0
            if not keep.any():
                out[mine] += rows.size
                continue
            ids = row_ids(np.concatenate([T[mine][:, keep], R[rows][:, keep]]) + 1)
            out[mine] += np.bincount(ids[mine.size :], minlength=int(ids.max()) + 1)[
                ids[: mine.size]
            ]
    return out


def table(
    true: pd.DataFrame, released: pd.DataFrame, weights: np.ndarray, k: int
) -> dict[str, Any]:
    """The figures of the module docstring for one released file."""
    T, R = _joint_codes(true, released)
    ids = row_ids(R + 1)
    sizes = np.bincount(ids)[ids]
    before = row_ids(T + 1)
    unsafe = np.bincount(before)[before] < k
    F = np.bincount(ids, weights=weights)[ids]
    f_shared, _ = match_counts(released, convention="missing_matches_any")
    f_before, _ = match_counts(true, convention="missing_matches_any")
    unchanged = (T == R).all(axis=1)
    return {
        "suppressed": int(((T >= 0) & (R < 0)).sum()),
        "below_k_shared": int((f_shared < k).sum()),
        "identical_below_k": int((sizes < k).sum()),
        "unsafe_unchanged": int((unsafe & unchanged).sum()),
        "unsafe_shared_unchanged": int(((f_before < k) & unchanged).sum()),
        "consistent_below_k": int((consistent_rows(T, R) < k).sum()),
        "consistent_below_k_unknown_missing": int(
            (consistent_rows(T, R, unknown_missing=True) < k).sum()
        ),
        "risk_identical": math.fsum(individual_risk(sizes, F)),
        "risk_shared": risk_summary(
            released, weights, convention="missing_matches_any"
        ).expected_reidentifications,
        "k_identical": int(sizes.min()),
    }


def run_sdcflow(frame: pd.DataFrame, name: str, k: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    keys, method = variant(name, k)
    params = METHODS[method["name"]].params.model_validate(method)
    rng = np.random.default_rng(0)
    warm = frame.head(400).reset_index(drop=True)  # compiles the kernels outside the clock
    mask_keys(warm, keys, params, rng, suppression=SuppressionSettings())
    cpu, wall = time.process_time(), time.perf_counter()
    result = mask_keys(frame, keys, params, rng, suppression=SuppressionSettings())
    seconds = {
        "wall_seconds": time.perf_counter() - wall,
        "cpu_seconds": time.process_time() - cpu,
    }
    released = result.released_identifiers[KEYS]
    d = result.details
    numeric = list(result.point_columns or [])
    il = None
    if numeric:  # IL = 100 SSE / SST of the numeric keys as published
        original = frame[numeric].to_numpy(dtype=np.float64)
        il = sse_sst_loss(original, np.asarray(result.points, dtype=np.float64))
    return released, {
        **seconds,
        "il_numeric": il,
        "suppressed_per_key": d.get("categorical_values_suppressed", {}),
        "suppressed_then_restored": d.get("suppressed_then_restored"),
    }


def sdcmicro_skip_reason() -> str | None:
    """Why sdcMicro cannot run here, or None."""
    if shutil.which("Rscript") is None:
        return "Rscript is not on the path"
    if not os.environ.get("SDCMICRO_LIB"):
        return "SDCMICRO_LIB (the R library sdcMicro is installed in) is not set"
    if not R_SCRIPT.exists():
        return f"{R_SCRIPT.name} is not in benchmarks/"
    return None


def run_sdcmicro(frame: pd.DataFrame, name: str, k: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """sdcMicro's localSuppression() on the variant's true keys (age already banded)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
        data = true_keys(frame, name).astype(object)
        data["fnlwgt"] = frame["fnlwgt"].to_numpy()
        data.where(data.notna(), "?").to_csv(src, index=False)
        env = {**os.environ, "R_LIBS": os.environ["SDCMICRO_LIB"]}
        cmd = ["Rscript", "--vanilla", str(R_SCRIPT), str(src), str(out), str(k), ",".join(KEYS)]
        done = subprocess.run(
            [*cmd, "fnlwgt"], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"sdcMicro failed ({done.returncode}): {done.stderr[-2000:]}")
        lines = done.stdout.strip().splitlines()
        result = next(line for line in reversed(lines) if line.startswith("RESULT,"))
        cpu = next((line for line in lines if line.startswith("cpu_seconds,")), "cpu_seconds,nan")
        _, elapsed, suppressed, n = result.split(",")
        released = pd.read_csv(out, dtype=str, keep_default_na=False, na_values=[""])
    if int(n) != len(frame):
        raise SystemExit(f"sdcMicro released {n} records of {len(frame)}")
    return released[KEYS], {
        "wall_seconds": float(elapsed),
        "cpu_seconds": float(cpu.split(",")[1]),
        "suppressed_reported": int(suppressed),
    }


ROWS = [
    ("suppressed values", "suppressed"),
    ("records below k, shared convention", "below_k_shared"),
    ("records in identical classes < k", "identical_below_k"),
    ("unsafe before (shared), published unchanged", "unsafe_shared_unchanged"),
    ("unsafe before (identical), published unchanged", "unsafe_unchanged"),
    ("records with < k consistent rows", "consistent_below_k"),
    ("  the same, a true missing value unknown", "consistent_below_k_unknown_missing"),
    ("expected re-identifications, identical rows", "risk_identical"),
    ("expected re-identifications, shared convention", "risk_shared"),
    ("IL of the numeric keys (100 SSE/SST)", "il_numeric"),
    ("wall seconds", "wall_seconds"),
    ("CPU seconds", "cpu_seconds"),
]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 10 else f"{value:.1f}"
    return f"{value:,}"


def adult(csv: str, k: int, variants: list[str], relaxation: bool = False) -> None:
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False, na_values=["?"])
    frame["age"] = frame["age"].astype(int)
    weights = frame["fnlwgt"].astype(float).to_numpy()
    skip = sdcmicro_skip_reason()
    for name in variants:
        true = true_keys(frame, name)
        # mixed keys: suppression serves the categorical keys (the strata)
        counted = true[CATEGORICAL] if name == "age_numeric" else true
        codes = _joint_codes(counted, counted)[0]
        below, bound = lower_bound(codes, k)
        relaxed, lp_seconds = None, None
        if relaxation:
            start = time.perf_counter()
            relaxed = math.ceil(relaxation_bound(codes, k).bound - 1e-6)
            lp_seconds = time.perf_counter() - start
        tools: dict[str, dict[str, Any] | str] = {}
        released, extra = run_sdcflow(frame, name, k)
        tools["sdcflow"] = {**table(true, released, weights, k), **extra}
        if name == "age_numeric":  # a released mean is not a true age: no equality to count
            tools["sdcflow"]["consistent_below_k"] = None
            tools["sdcflow"]["consistent_below_k_unknown_missing"] = None
        if name == "age_numeric":
            tools["sdcMicro"] = "skipped: localSuppression has no numeric keys"
        elif skip:
            tools["sdcMicro"] = f"skipped: {skip}"
        else:
            released, extra = run_sdcmicro(frame, name, k)
            tools["sdcMicro"] = {**table(true, released, weights, k), **extra}
        print(f"\n{name}: n = {len(frame)}, k = {k}; records in classes below k {below:,}, "
              f"proven lower bound {bound:,}")  # fmt: skip
        if relaxed is not None:
            print(f"linear-programming bound {relaxed:,} ({lp_seconds:.0f} s); the goal "
                  f"1.15 x records below k = {1.15 * below:,.0f}")  # fmt: skip
        print(f"{'':48}" + "".join(f"{t:>16}" for t in tools))
        for label, key in ROWS:
            cells = [v if isinstance(v, str) else _cell(v.get(key)) for v in tools.values()]
            print(f"{label:48}" + "".join(f"{c[:15]:>16}" for c in cells))
        for tool, v in tools.items():
            if isinstance(v, dict):
                total = v["suppressed"]
                print(
                    f"{tool}: {total:,} suppressed = {total / below:.3f} x records below k, "
                    f"{total / bound:.3f} x the lower bound"
                    + (f", {total / relaxed:.3f} x the LP bound" if relaxed else "")
                )
            else:
                print(f"{tool}: {v}")
        for tool, v in tools.items():
            line = {"variant": name, "tool": tool, "k": k, "records_below_k": below}
            line["lower_bound"] = bound
            if relaxed is not None:
                line["lp_bound"] = relaxed
            line.update(v if isinstance(v, dict) else {"skipped": v})
            print(json.dumps(line), flush=True)


def gap(tables: int, n: int, k: int, seed: int) -> dict[str, Any]:
    """Greedy against exact local suppression and the lower bound on random skewed tables."""
    rng = np.random.default_rng(seed)
    local_suppression(np.zeros((4, 2), dtype=np.int32) + np.arange(4)[:, None] % 2, 2)  # JIT
    rows = []
    for _ in range(tables):
        cols = []
        for levels in (3, 5, 8):
            p = 1.0 / np.arange(1, levels + 1) ** 1.2
            cols.append(rng.choice(levels, n, p=p / p.sum()))
        C = np.stack(cols, axis=1).astype(np.int32)
        C[rng.random(C.shape) < 0.03] = -1
        cpu = time.process_time()
        greedy = local_suppression(C, k)
        t_greedy = time.process_time() - cpu
        cpu = time.process_time()
        exact = local_suppression(C, k, algorithm="exact", time_limit=120)
        t_exact = time.process_time() - cpu
        rows.append(
            (greedy.total, exact.total, t_greedy, t_exact,
             greedy.details["suppression_lower_bound"],
             greedy.details["records_in_classes_below_k"])
        )  # fmt: skip
    r = np.array(rows, dtype=np.float64)
    return {
        "tables": tables,
        "n": n,
        "k": k,
        "greedy_total": int(r[:, 0].sum()),
        "exact_total": int(r[:, 1].sum()),
        "lower_bound_total": int(r[:, 4].sum()),
        "records_below_k_total": int(r[:, 5].sum()),
        "ratio": float(r[:, 0].sum() / max(r[:, 1].sum(), 1)),
        "greedy_optimal_share": float((r[:, 0] == r[:, 1]).mean()),
        "max_gap": int((r[:, 0] - r[:, 1]).max()),
        "greedy_seconds": float(r[:, 2].sum()),
        "exact_seconds": float(r[:, 3].sum()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("adult", help="local suppression on UCI Adult, sdcflow and sdcMicro")
    p.add_argument("--csv", required=True, help="adult.csv (UCI Adult with a header)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument(
        "--relaxation",
        action="store_true",
        help="also solve the linear-programming bound (minutes per variant)",
    )
    p = sub.add_parser("gap", help="greedy against exact local suppression")
    p.add_argument("--tables", type=int, default=40)
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "gap":
        print(json.dumps(gap(args.tables, args.n, args.k, args.seed)), flush=True)
        return
    adult(args.csv, args.k, args.variants, args.relaxation)


if __name__ == "__main__":
    main()
