"""Mixed keys on UCI Adult: categorical values changed, loss, risk and time; JSON lines.

Usage::

    python benchmarks/mixed.py adult --csv ../shared/data/adult.csv [--k 5] [--variants ...]
    python benchmarks/mixed.py gap [--tables 40] [--n 60] [--k 3] [--seed 0]

Adult with the seven keys of issue 12 (age, sex, race, marital-status, education, workclass,
native-country), ``?`` read as missing, ``fnlwgt`` as the sampling weight, k = 5. One JSON
line per variant:

* ``age_numeric`` — age a numeric key, microaggregated by MDAV inside strata of the six
  categorical keys (``method: mdav``); the categorical keys agree within each stratum by local
  suppression (:func:`sdcflow.tasks.suppression.local.strata_suppression`).
* ``age_recoded`` — age recoded into 5-year bands (global recoding), then every key
  categorical and local suppression (``method: local_suppression``, greedy).
* ``all_categorical`` — the setting of the sdcMicro figures quoted in issue 12: all seven keys
  categorical (age as a factor of its 73 values), local suppression, greedy.
* ``heterogeneous`` — age numeric, the six others nominal, heterogeneous microaggregation
  with ``categorical: suppress`` (values unlike the group's mode suppressed, none replaced).

The timed call is :func:`sdcflow.tasks.methods.mixed.mask_keys` (recoding, suppression,
microaggregation, rounding to integers), after a warm-up on a small slice that compiles the
numba kernels (or loads them from numba's cache); reading the file and the figures are
outside the clock. Fields: ``changed`` (categorical values changed per key: suppressed,
or replaced by a mode), ``changed_total``, ``suppressed_total``, ``il_numeric`` (IL =
100 SSE/SST of the numeric keys as published, None without one), ``k`` (over all keys as
released, a missing value matching any value), ``global_risk_before`` /
``global_risk_after`` (expected re-identifications, sum of sdcMicro's individual risks with
the fnlwgt weights, on the original and the released keys), ``seconds`` (CPU seconds of this
process) and ``wall_seconds``, ``count_seconds`` (CPU seconds of counting k over the released
keys, missing matching any value). The sdcMicro figures are not measured here (R and CRAN are
unreachable on this machine): ``sdcmicro_changed`` = 15340 and ``sdcmicro_seconds`` = 379 are
quoted from issue 12 (sdcMicro 5.8.1, ``localSuppression``, k = 5, the seven keys as factors,
fnlwgt as weight, on this machine), with ``ratio_changed`` = sdcflow / sdcMicro and
``ratio_seconds`` likewise.

``gap`` compares the greedy local suppression with the exact minimum (the 0-1 program,
HiGHS) on random tables: n records, keys of 3, 5 and 8 categories drawn with Zipf(1.2)
probabilities, 3 % missing values, k = 3; one line with both totals, the share of tables
where the greedy is optimal, the largest gap, the suppressions per record of each, and the CPU
seconds of each.

The figures and the commands: ``benchmarks/README.md``, "Mixed keys (Adult)".
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import pandas as pd

from sdcflow.tasks.measures.anonymity import k_anonymity
from sdcflow.tasks.measures.information_loss import sse_sst_loss
from sdcflow.tasks.measures.risk import risk_summary
from sdcflow.tasks.methods import METHODS
from sdcflow.tasks.methods.keys import Key
from sdcflow.tasks.methods.mixed import SuppressionSettings, mask_keys
from sdcflow.tasks.recoding.recode import Recoding
from sdcflow.tasks.suppression.local import local_suppression

KEYS = ["age", "sex", "race", "marital-status", "education", "workclass", "native-country"]
CATEGORICAL = KEYS[1:]
SDCMICRO_CHANGED, SDCMICRO_AGES, SDCMICRO_SECONDS = 15340, 13251, 379.0
VARIANTS = ("age_numeric", "age_recoded", "all_categorical", "heterogeneous")


def variant(name: str, k: int) -> tuple[list[Key], dict[str, Any]]:
    """Keys and method block of a variant."""
    nominal = [Key(c, "nominal") for c in CATEGORICAL]
    if name == "age_numeric":
        return [Key("age", "numeric", decimals=0, integer=True), *nominal], {
            "name": "mdav",
            "k": k,
        }
    if name == "age_recoded":
        bands = Recoding("bins", edges=(*(float(e) for e in range(15, 95, 5)), np.inf))
        return [Key("age", "numeric", recoding=bands), *nominal], {
            "name": "local_suppression",
            "k": k,
        }
    if name == "all_categorical":
        return [Key("age", "nominal"), *nominal], {"name": "local_suppression", "k": k}
    if name == "heterogeneous":
        return [Key("age", "numeric", decimals=0, integer=True), *nominal], {
            "name": "heterogeneous",
            "k": k,
            "categorical": "suppress",
        }
    raise SystemExit(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")


def run(frame: pd.DataFrame, name: str, k: int, weights: np.ndarray) -> dict[str, Any]:
    keys, method = variant(name, k)
    params = METHODS[method["name"]].params.model_validate(method)
    rng = np.random.default_rng(0)
    warm = frame.head(400).reset_index(drop=True)  # compiles the kernels outside the clock
    mask_keys(warm, keys, params, rng, suppression=SuppressionSettings())
    cpu, wall = time.process_time(), time.perf_counter()
    result = mask_keys(frame, keys, params, rng, suppression=SuppressionSettings())
    seconds, wall_seconds = time.process_time() - cpu, time.perf_counter() - wall
    released = result.released_identifiers
    changed = result.details.get("categorical_values_changed", {})
    suppressed = result.details.get("categorical_values_suppressed", {})
    numeric = result.point_columns or []
    il = None
    if numeric:
        original = frame[numeric].to_numpy(dtype=np.float64)
        il = sse_sst_loss(original, np.asarray(result.points, dtype=np.float64))
    cpu = time.process_time()
    k_released = int(k_anonymity(released))
    count_seconds = time.process_time() - cpu
    before = risk_summary(frame[KEYS], weights)
    after = risk_summary(released, weights)
    total = int(sum(changed.values()))
    return {
        "variant": name,
        "n": len(frame),
        "k_target": k,
        "method": method["name"],
        "k": k_released,
        "count_seconds": count_seconds,
        "changed": changed,
        "changed_total": total,
        "suppressed_total": int(sum(suppressed.values())),
        "il_numeric": il,
        "global_risk_before": before.expected_reidentifications,
        "global_risk_after": after.expected_reidentifications,
        "max_individual_risk_after": after.max_risk,
        "seconds": seconds,
        "wall_seconds": wall_seconds,
        "sdcmicro_changed": SDCMICRO_CHANGED,
        "sdcmicro_changed_ages": SDCMICRO_AGES,
        "sdcmicro_seconds": SDCMICRO_SECONDS,
        "ratio_changed": total / SDCMICRO_CHANGED,
        "ratio_seconds": seconds / SDCMICRO_SECONDS,
    }


def gap(tables: int, n: int, k: int, seed: int) -> dict[str, Any]:
    """Greedy against exact local suppression on random skewed tables."""
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
             int((greedy.suppressed.sum(axis=1) > 0).sum()),
             int((exact.suppressed.sum(axis=1) > 0).sum()))
        )  # fmt: skip
    r = np.array(rows, dtype=np.float64)
    return {
        "tables": tables,
        "n": n,
        "k": k,
        "greedy_total": int(r[:, 0].sum()),
        "exact_total": int(r[:, 1].sum()),
        "ratio": float(r[:, 0].sum() / max(r[:, 1].sum(), 1)),
        "greedy_optimal_share": float((r[:, 0] == r[:, 1]).mean()),
        "max_gap": int((r[:, 0] - r[:, 1]).max()),
        "greedy_records_touched": int(r[:, 4].sum()),
        "exact_records_touched": int(r[:, 5].sum()),
        "greedy_seconds": float(r[:, 2].sum()),
        "exact_seconds": float(r[:, 3].sum()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("adult", help="the issue-12 variants on UCI Adult")
    p.add_argument("--csv", required=True, help="adult.csv (UCI Adult with a header)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p = sub.add_parser("gap", help="greedy against exact local suppression")
    p.add_argument("--tables", type=int, default=40)
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "gap":
        print(json.dumps(gap(args.tables, args.n, args.k, args.seed)), flush=True)
        return
    frame = pd.read_csv(args.csv, dtype=str, keep_default_na=False, na_values=["?"])
    frame["age"] = frame["age"].astype(int)
    weights = frame["fnlwgt"].astype(float).to_numpy()
    for name in args.variants:
        print(json.dumps(run(frame, name, args.k, weights)), flush=True)


if __name__ == "__main__":
    main()
