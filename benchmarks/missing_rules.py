"""Edit rules with missing numbers: what keeping the rules on each group's values costs.

Usage::

    python benchmarks/missing_rules.py                      # 5 % of each value missing
    python benchmarks/missing_rules.py --missing 0.05 0.2 --seed 1

The example survey (``examples/business_survey``: ``data.csv``, and ``data_with_errors.csv``
with its data-entry errors), each numeric key missing with probability ``missing``
(``numpy.random.default_rng(seed)``), released through the release flow (``sdcflow.api.
release``, ``publish=False``: every step and check, nothing published) by mdav (one pass),
mdav with ``cell_size: 200`` and heterogeneous, k = 5, with the survey's edit rules: the two
sums, and on the file with errors the example's nine rules, both with ``on_violation: repair``.
The baseline, in the same run, is the same release without edit rules: the same groups,
their means over the values present, no projection. The survey's sums hold in the data, so
since undeclared relations are refused with gaps (docs/concepts/missing-values.md,
"Missing numbers") that release
ends with exit 2 (``without_rules``: ``refused: undeclared-relation``); the baseline runs
it with that check off, as it was released before. Printed per release: IL (%) with the
rules and without, their ratio, the groups moved onto the rules, and the released records
breaking a rule (the release is refused, exit 1, when any does).

``--time-n N`` times the projection alone (``group_values_on_rules``, CPU s of this process)
on N synthetic records in groups of ``--time-size`` (default 5; gamma-distributed parts,
their two sums, each value missing with probability ``--missing``, two sums and two bounds
as rules), with and without rounding to integers, against computing the same group means
over the values present (``bincount``) and against the route before (``BATCHED = False``:
one projector per pattern of weights). Figures:
``docs/benchmarks/``, section "Edit rules with missing numbers".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from sdcflow.api import release
from sdcflow.errors import InputError
from sdcflow.methods import mixed

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "business_survey"
KEYS = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]
METHODS = {
    "mdav": {"name": "mdav", "k": 5},
    "mdav cells of 200": {"name": "mdav", "k": 5, "cell_size": 200},
    "heterogeneous": {"name": "heterogeneous", "k": 5},
}


def with_gaps(source: Path, share: float, seed: int, out: Path) -> None:
    frame = pd.read_csv(source)
    rng = np.random.default_rng(seed)
    for key in KEYS:
        frame[key] = frame[key].astype("Int64")
        frame.loc[rng.random(len(frame)) < share, key] = pd.NA
    frame.to_csv(out, index=False)


def run(folder: Path, spec: dict[str, Any]) -> dict[str, Any]:
    outcome = release(spec, publish=False, base_dir=folder, force=True)
    violations = outcome.edit_violations or {}
    return {
        "status": outcome.status,
        "il": outcome.information_loss.get("raw"),
        "moved": outcome.method_details.get("groups_moved_onto_edit_rules"),
        "violating": int(sum(violations.values())),
    }


def refusal(folder: Path, spec: dict[str, Any]) -> str:
    """How the release without rules ends: refused with its reason code (the survey's sums
    hold in the data, and undeclared with gaps they are refused), or its status."""
    try:
        return run(folder, spec)["status"]
    except InputError as e:
        return f"refused: {e.code}"


@contextlib.contextmanager
def relation_check_off():
    """The baseline: the release without rules as it was before undeclared relations were
    refused (the same groups, their means over the values present, no projection)."""
    saved = mixed._refuse_undeclared_relations
    mixed._refuse_undeclared_relations = lambda *args: None
    try:
        yield
    finally:
        mixed._refuse_undeclared_relations = saved


def projection_time(n: int, share: float = 0.05, size: int = 5, seed: int = 0) -> dict[str, float]:
    """CPU s of the projection on ``n`` synthetic records (module docstring)."""
    import time

    from sdcflow.core.linear import group_values as gv
    from sdcflow.core.linear.constraints import LinearConstraints
    from sdcflow.core.linear.group_values import group_values_on_rules

    rng = np.random.default_rng(seed)
    wages, other, turnover = rng.gamma(2, 10, n), rng.gamma(2, 5, n), rng.gamma(3, 20, n)
    X = np.c_[turnover, wages, other, wages + other, turnover - wages - other]
    columns = ["turnover", "wages", "other", "total", "profit"]
    X[rng.random(X.shape) < share] = np.nan
    g = -(-n // size)
    labels = rng.permutation(np.repeat(np.arange(g), size)[:n])
    t0 = time.process_time()
    means = np.full(X.shape, np.nan)
    for j in range(X.shape[1]):
        has = ~np.isnan(X[:, j])
        total = np.bincount(labels[has], X[has, j], g)
        count = np.bincount(labels[has], minlength=g)
        means[has, j] = (total / np.maximum(count, 1))[labels[has]]
    baseline = time.process_time() - t0
    rules = LinearConstraints.from_rows(
        [
            ("costs", [({"total": 1, "wages": -1, "other": -1}, 0.0)], []),
            ("profit", [({"profit": 1, "turnover": -1, "total": 1}, 0.0)], []),
            ("wages", [], [({"wages": -1}, 0.0)]),
            ("other", [], [({"other": -1}, 0.0)]),
        ],
        columns,
    )
    group_values_on_rules(X[:50], means[:50], labels[:50] % 10, columns, rules)  # compile
    t0 = time.process_time()
    _, moved, *_ = group_values_on_rules(X, means, labels, columns, rules)
    plain = time.process_time() - t0
    t0 = time.process_time()
    group_values_on_rules(X, means, labels, columns, rules, decimals=[0] * 5)
    rounded = time.process_time() - t0
    gv.BATCHED = False  # the route before: one projector per pattern of weights
    try:
        t0 = time.process_time()
        group_values_on_rules(X, means, labels, columns, rules)
        per_pattern = time.process_time() - t0
    finally:
        gv.BATCHED = True
    return {
        "n": n,
        "missing": share,
        "group_size": size,
        "groups": g,
        "groups_moved": moved,
        "means_cpu_s": baseline,
        "projection_cpu_s": plain,
        "with_rounding_cpu_s": rounded,
        "ratio_to_means": plain / baseline,
        "one_projector_per_weight_pattern_cpu_s": per_pattern,
        "speed_up_over_it": per_pattern / plain,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--missing", type=float, nargs="+", default=[0.05])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-n", type=int, default=None)
    p.add_argument("--time-size", type=int, default=5, help="records per group (--time-n)")
    args = p.parse_args(argv)
    if args.time_n:
        for share in args.missing:
            print(json.dumps(projection_time(args.time_n, share, args.time_size)), flush=True)
        return 0
    example = yaml.safe_load((EXAMPLE / "release_with_errors.yaml").read_text())
    files = {
        "survey, 2 sums": (
            "data.csv",
            ["total_costs == wages + other_costs", "profit == turnover - total_costs"],
            "repair",
        ),
        "survey with errors, 9 rules, repair": ("data_with_errors.csv", example["edits"], "repair"),
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for share in args.missing:
            for label, (name, edits, on_violation) in files.items():
                with_gaps(EXAMPLE / name, share, args.seed, folder / "data.csv")
                for method_label, method in METHODS.items():
                    base = {
                        "release": "gaps",
                        "source": "data.csv",
                        "id_column": "respondent_id",
                        "quasi_identifiers": [*KEYS, "region"],
                        "missing_values": [""],
                        "method": method,
                        "checks": {"k_anonymity": 5},
                        "warehouse": "warehouse.duckdb",
                        "output": "published/",
                    }
                    kept = run(folder, {**base, "edits": edits, "on_violation": on_violation})
                    refused = refusal(folder, base)
                    with relation_check_off():
                        without = run(folder, base)
                    row = {
                        "missing": share,
                        "file": label,
                        "method": method_label,
                        "il_rules": kept["il"],
                        "il_without": without["il"],
                        "ratio": kept["il"] / without["il"],
                        "groups_moved": kept["moved"],
                        "violating": kept["violating"],
                        "status": kept["status"],
                        "without_rules": refused,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return 0 if all(r["violating"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
