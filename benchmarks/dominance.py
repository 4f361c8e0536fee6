"""Dominance of plain MDAV groups on Census and EIA: groups failing the p % rule.

Usage::

    python benchmarks/dominance.py [--data ../shared/data] [--p 10]

Each file is microaggregated with plain MDAV-generic (``sdcflow.tasks.microaggregation.mdav``,
standardized attributes) with k = 3 and 5 on its numeric attributes (Census: all 13; EIA: the
11 of the literature, UTILITYID and the ten *REVENUE / *SALES columns, see the data README);
each group is then a magnitude cell and ``sdcflow.core.risk.dominance`` checks every
(group, column): p % rule (p = 10) and (2, 85)-dominance. The rules apply to the
contributions, so EIA's UTILITYID (a code) is left out of them and its 74 negative
revenue/sales entries (state-level adjustments) count as 0 contribution.

Printed: one row per file and k: groups, (group, column) cells checked, cells failing the
p % rule, groups failing it on at least one column, cells failing (2, 85)-dominance.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from sdcflow.core.risk import dominance
from sdcflow.tasks.microaggregation.mdav import mdav

EIA_NUMERIC = [
    "UTILITYID", "RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES",
    "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES",
]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "../shared/data"))
    ap.add_argument("--p", type=float, default=10.0)
    a = ap.parse_args()
    data = Path(a.data)
    if not (data / "census.csv").is_file():
        raise SystemExit(f"skipped: census.csv / eia.csv not found in {data} (../shared/data)")
    census = pd.read_csv(data / "census.csv")
    eia = pd.read_csv(data / "eia.csv")
    files = {
        "census": (census.to_numpy(float), census.to_numpy(float)),
        "eia": (
            eia[EIA_NUMERIC].to_numpy(float),
            eia[EIA_NUMERIC[1:]].clip(lower=0).to_numpy(float),
        ),
    }
    print(f"p % rule p = {a.p:g}, (n, k) = (2, 85); groups: plain MDAV-generic, standardized")
    head = ("file", "k", "groups", "cells", "p%-fail cells", "p%-fail groups", "(2,85)-fail cells")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for name, (z, contrib) in files.items():
        for k in (3, 5):
            labels = mdav(z, k)
            r = dominance(labels, contrib, n=2, k=85.0, p=a.p)
            g = r.groups.size
            row = (name, k, g, g * contrib.shape[1], int(r.n_p_fail.sum()), r.n_groups_p_fail,
                   int(r.n_nk_fail.sum()))  # fmt: skip
            print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
