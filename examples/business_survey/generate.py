"""Generate the synthetic business survey used by the example release.

Deterministic for a given seed. Amounts are in thousands of euros (integers), so the
accounting identities hold exactly on clean records:

    total_costs == wages + other_costs
    profit      == turnover - total_costs
    if employees == 0 then wages == 0

``--errors FRACTION`` injects realistic data-entry errors into about that share of records
(each hit record gets one error in one amount): swapped adjacent digits, a value keyed in
thousands instead of units (a "missing thousand": divided by 1000), or a lost sign. The
clean file is the default; the error file gives the edit-rule step real violations to find
and repair.

    python generate.py                      # -> data.csv (clean)
    python generate.py --errors 0.04 --out data_with_errors.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

REGIONS = {"North": 1.05, "South": 0.90, "East": 0.95, "West": 1.10}
SECTORS = {  # turnover per employee (k EUR), wage per employee (k EUR), other-cost share
    "manufacturing": (210.0, 48.0, 0.55),
    "construction": (160.0, 44.0, 0.50),
    "retail": (190.0, 30.0, 0.70),
    "services": (120.0, 52.0, 0.30),
    "hospitality": (70.0, 26.0, 0.45),
}
AMOUNTS = ["turnover", "wages", "other_costs", "total_costs"]


def generate(n: int = 3000, seed: int = 20261121) -> pd.DataFrame:
    """A clean survey of ``n`` businesses; every edit identity holds exactly."""
    rng = np.random.default_rng(seed)
    region = rng.choice(list(REGIONS), size=n, p=[0.3, 0.25, 0.2, 0.25])
    sector = rng.choice(list(SECTORS), size=n, p=[0.2, 0.15, 0.25, 0.3, 0.1])
    # Firm sizes are heavy-tailed; about 6% are sole proprietors without employees.
    employees = np.floor(rng.lognormal(mean=2.2, sigma=1.2, size=n)).astype(np.int64)
    employees[rng.random(n) < 0.06] = 0
    prod = np.array([SECTORS[s][0] for s in sector]) * np.array([REGIONS[r] for r in region])
    wage = np.array([SECTORS[s][1] for s in sector]) * np.array([REGIONS[r] for r in region])
    share = np.array([SECTORS[s][2] for s in sector])
    size = np.maximum(employees, 1)  # a sole proprietor still has turnover
    turnover = np.round(size * prod * rng.lognormal(0.0, 0.35, n)).astype(np.int64)
    wages = np.where(employees > 0, np.round(employees * wage * rng.lognormal(0, 0.15, n)), 0)
    wages = wages.astype(np.int64)
    other = np.round(turnover * share * rng.beta(8, 8, n) * 2 * 0.8).astype(np.int64)
    total = wages + other
    return pd.DataFrame(
        {
            "respondent_id": np.arange(100001, 100001 + n),
            "region": region,
            "sector": sector,
            "employees": employees,
            "turnover": turnover,
            "wages": wages,
            "other_costs": other,
            "total_costs": total,
            "profit": turnover - total,
        }
    )


def _swap_digits(value: int, rng: np.random.Generator) -> int:
    digits = list(str(abs(value)))
    if len(digits) < 2:
        return value * 10 + 1 if value >= 0 else value * 10 - 1
    i = int(rng.integers(0, len(digits) - 1))
    if digits[i] == digits[i + 1]:
        i = next((j for j in range(len(digits) - 1) if digits[j] != digits[j + 1]), i)
    digits[i], digits[i + 1] = digits[i + 1], digits[i]
    swapped = int("".join(digits))
    return swapped if value >= 0 else -swapped


def inject_errors(frame: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    """Copy of ``frame`` with one data-entry error in about ``fraction`` of the records."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    hit = np.flatnonzero(rng.random(len(out)) < fraction)
    kinds = rng.choice(["swap", "thousand", "sign"], size=hit.size, p=[0.5, 0.3, 0.2])
    cols = rng.choice(AMOUNTS, size=hit.size)
    for row, kind, col in zip(hit, kinds, cols, strict=True):
        value = int(out.at[row, col])
        if kind == "swap":
            value = _swap_digits(value, rng)
        elif kind == "thousand":
            value = round(value / 1000)
        else:
            value = -value if value != 0 else -1
        out.at[row, col] = value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="number of businesses")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--errors", type=float, default=0.0, help="share of records with errors")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("data.csv"))
    args = parser.parse_args()
    frame = generate(args.n, args.seed)
    if args.errors > 0:
        frame = inject_errors(frame, args.errors, args.seed + 1)
    frame.to_csv(args.out, index=False)
    print(f"wrote {len(frame)} records to {args.out}")


if __name__ == "__main__":
    main()
