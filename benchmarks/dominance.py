"""Dominance of plain MDAV groups on Census, EIA and the business survey: groups failing the
p % rule, and the same after the remedy (groups merged until no record dominates).

Usage::

    python benchmarks/dominance.py [--data ../shared/data] [--p 10] [--survey]

Each file is microaggregated with plain MDAV-generic (``sdcflow.core.microaggregation.mdav.
mdav``, standardized attributes) on its numeric attributes (Census: all 13, k = 3 and 5;
EIA: the 11 of the literature, UTILITYID and the ten *REVENUE / *SALES columns, see the data
README, k = 3 and 5); each group is then a magnitude cell and ``sdcflow.core.risk.dominance``
checks every (group, column): p % rule (p = 10) and (2, 85)-dominance. The rules apply to the
contributions, so EIA's UTILITYID (a code) is left out of them and its 74 negative
revenue/sales entries (state-level adjustments) count as 0 contribution.

``--survey`` adds the business survey of ``examples/business_survey/data.csv`` (3000 records;
numeric keys employees, turnover, wages, other_costs, total_costs, profit; k = 5), twice: MDAV
on the whole file, and MDAV inside each region, as the example release masks it (region is a
categorical key there, so its groups stay inside a region, each standardized on its own).
profit has negative values: it places the groups but is not a contribution.

The remedy (``dominance: {p: 10}`` of the crisp methods,
``sdcflow.core.microaggregation.dominance_repair``) merges every failing group with its
nearest group (centroids on the standardized scale the groups were formed on) until none fails.

Printed: one row per file and k: groups, (group, column) cells checked, cells failing the
p % rule, groups failing it on at least one column, cells failing (2, 85)-dominance, then
after the remedy: groups, groups failing, groups merged, rounds; IL = 100 SSE / SST on the
standardized keys (``sse_sst_loss``) before and after, and CPU seconds of the remedy.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation.dominance_repair import repair_dominance
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.risk import dominance

EIA_NUMERIC = [
    "UTILITYID", "RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES",
    "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES",
]  # fmt: skip
SURVEY_NUMERIC = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]
ROOT = Path(__file__).resolve().parents[1]


def _strata_mdav(z: np.ndarray, k: int, strata: np.ndarray | None) -> tuple[np.ndarray, list]:
    """Plain MDAV labels (whole file, or inside each stratum on its own standardized scale)
    and the (rows, Z) pieces the remedy runs on."""
    if strata is None:
        return mdav(z, k), [(np.arange(z.shape[0]), working_scale(z, True))]
    labels = np.empty(z.shape[0], dtype=np.int64)
    pieces, offset = [], 0
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        labels[rows] = mdav(z[rows], k) + offset
        offset = int(labels[rows].max()) + 1
        pieces.append((rows, working_scale(z[rows], True)))
    return labels, pieces


def _row(
    name: str, k: int, z: np.ndarray, contrib: np.ndarray, p: float, strata: np.ndarray | None
) -> tuple:
    labels, pieces = _strata_mdav(z, k, strata)
    r = dominance(labels, contrib, n=2, k=85.0, p=p)
    g = r.groups.size
    start = time.process_time()
    repaired = np.empty_like(labels)
    offset = merged = rounds = 0
    for rows, Z in pieces:
        done = repair_dominance(labels[rows], contrib[rows], p, Z=Z)
        repaired[rows] = done.labels + offset
        offset += done.groups_after
        merged += done.merged
        rounds = max(rounds, done.rounds)
    seconds = time.process_time() - start
    after = dominance(repaired, contrib, n=2, k=85.0, p=p)
    il0 = sse_sst_loss(z, group_means(z, labels))
    il1 = sse_sst_loss(z, group_means(z, repaired))
    return (name, k, g, g * contrib.shape[1], int(r.n_p_fail.sum()), r.n_groups_p_fail,
            int(r.n_nk_fail.sum()), after.groups.size, after.n_groups_p_fail, merged, rounds,
            f"{il0:.2f}", f"{il1:.2f}", f"{seconds:.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "../shared/data"))
    ap.add_argument("--p", type=float, default=10.0)
    ap.add_argument("--survey", action="store_true", help="add the business survey example")
    a = ap.parse_args()
    data = Path(a.data)
    if not (data / "census.csv").is_file():
        raise SystemExit(f"skipped: census.csv / eia.csv not found in {data} (../shared/data)")
    census = pd.read_csv(data / "census.csv")
    eia = pd.read_csv(data / "eia.csv")
    files = [
        ("census", k, census.to_numpy(float), census.to_numpy(float), None) for k in (3, 5)
    ] + [
        (
            "eia",
            k,
            eia[EIA_NUMERIC].to_numpy(float),
            eia[EIA_NUMERIC[1:]].clip(lower=0).to_numpy(float),
            None,
        )
        for k in (3, 5)
    ]
    if a.survey:
        survey = pd.read_csv(ROOT / "examples" / "business_survey" / "data.csv")
        z = survey[SURVEY_NUMERIC].to_numpy(float)
        contrib = survey[SURVEY_NUMERIC[:-1]].to_numpy(float)  # profit: not a contribution
        files.append(("survey", 5, z, contrib, None))
        files.append(("survey, within region", 5, z, contrib, survey["region"].to_numpy()))
    print(f"p % rule p = {a.p:g}, (n, k) = (2, 85); groups: plain MDAV-generic, standardized")
    head = ("file", "k", "groups", "cells", "p%-fail cells", "p%-fail groups",
            "(2,85)-fail cells", "groups after remedy", "p%-fail groups after", "groups merged",
            "rounds", "IL plain", "IL remedy", "remedy CPU s")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for name, k, z, contrib, strata in files:
        row = _row(name, k, z, contrib, a.p, strata)
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
