"""Reproduce the layout of Tables 1-3 of the fuzzy-mapping paper on UCI Adult (``age``).

    python benchmarks/fuzzy_mapping.py [--data DIR] [--seeds 20]

Table 1: Pearson, Jaccard, Dice, cosine between the original ages and the mapped ones, for
the seven combiners M1..M7, under the earlier (R1) and the modified (R2) membership
definitions, three sets 0-50 / 25-75 / 50-100 (as the paper's section 4.1 says) and, for R2,
also three uniform sets over Adult's own range 17-90 (what the paper's Table 3 shows it used).
Table 2: the same on rescaled values. Table 3: association rules (mlxtend Apriori on 4
equal-width bins, as Weka) with the original and with the mapped age, the mapped intervals
mapped back, and support and confidence side by side. The paper's figures are printed beside
ours, with where and why they differ. CPU seconds are process time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcflow.core.fuzzy_mapping import (
    COMBINERS,
    PAPER_LABELS,
    combine,
    custom_sets,
    integer_hull,
    memberships,
    preimage,
    uniform_sets,
)
from sdcflow.core.fuzzy_mapping.rules import items_frame, mine_rules, rule_counts, select_rules
from sdcflow.core.fuzzy_mapping.similarity import (
    cosine,
    czekanowski,
    dice,
    jaccard,
    pearson,
    rank_figures,
    rescale,
    ruzicka,
)

PAPER_T1 = {
    "R1": [0.88, 0.89, 0.94, 0.84, 0.61, 0.97, 0.56],
    "R2": [0.73, 0.90, 0.81, 0.75, 0.54, 0.94, 0.21],
    "J1": [0.05, 0.06, 0.06, 0.06, 0.05, 0.07, 0.04],
    "J2": [0.06, 0.05, 0.06, 0.06, 0.06, 0.07, 0.05],
    "D1": [0.10, 0.11, 0.11, 0.11, 0.10, 0.12, 0.08],
    "D2": [0.11, 0.10, 0.11, 0.11, 0.11, 0.12, 0.09],
    "C1": [0.96, 0.99, 0.99, 0.98, 0.96, 0.99, 0.95],
    "C2": [0.97, 0.98, 0.98, 0.98, 0.95, 0.99, 0.93],
}
PAPER_T2 = {
    "NJ1": [0.95, 0.97, 0.97, 0.92, 0.81, 0.94, 0.63],
    "ND1": [0.98, 0.98, 0.99, 0.96, 0.89, 0.97, 0.77],
    "NC1": [0.98, 0.98, 0.99, 0.96, 0.90, 0.996, 0.81],
    "NJ2": [0.89, 0.76, 0.78, 0.94, 0.92, 0.81, 0.99],
    "ND2": [0.94, 0.86, 0.88, 0.97, 0.96, 0.90, 0.997],
    "NC2": [0.97, 0.90, 0.92, 0.99, 0.97, 0.91, 0.998],
}
# Table 3: (mapped interval, LHS, LHS and RHS) and (remapped ages, LHS, both), per combiner.
PAPER_T3 = {
    "arithmetic_average": ("2", 6453, 5949, "17-53", 6453, 5949),
    "normalized_average": ("1.5", 3934, 3590, "17-35", 3934, 3590),
    "weighted_average": ("1.875-2.406", 6074, 5598, "17-49", 6074, 5598),
    "highest_affinity": ("1.521-2.140", 5428, 4992, "17-44", 5428, 4992),
    "random_pick": ("1.771-2.514", 5098, 4685, "17-71", 7221, 6673),
    "maximum": ("2-2.5", 5428, 4992, "17-44", 5428, 4992),
    "minimum": ("1.771-2.514", 4815, 4413, "17-71", 7221, 6673),
}
MEASURES = {
    "R": pearson,
    "J": jaccard,
    "D": dice,
    "C": cosine,
    "Ruzicka": ruzicka,
    "Czekanowski": czekanowski,
}


def mapped(age: np.ndarray, sets, seeds: int) -> dict[str, list[np.ndarray]]:
    """Mapped ages per combiner; the random pick once per seed 0..seeds-1."""
    m = memberships(age, sets)
    out = {c: [combine(m, c)] for c in COMBINERS if c != "random_pick"}
    out["random_pick"] = [combine(m, "random_pick", np.random.default_rng(s)) for s in range(seeds)]
    return {c: out[c] for c in COMBINERS}


def figure(values: list[np.ndarray], f, p: np.ndarray, bounds=None, qbounds=None) -> str:
    """One cell: the measure (mean +- sd over the random pick's seeds)."""
    xs = [
        f(
            p if bounds is None else rescale(p, bounds),
            v if qbounds is None else rescale(v, qbounds),
        )
        for v in values
    ]
    if len(xs) == 1:
        return f"{xs[0]:.3f}"
    return f"{np.mean(xs):.3f}±{np.std(xs):.3f}"


def _matches(cells: list[str], paper: list[float]) -> int:
    """Cells within half a unit of the paper's last printed digit (M5: the mean)."""
    hits = 0
    for cell, want in zip(cells, paper, strict=True):
        decimals = len(f"{want:g}".partition(".")[2])
        got = float(cell.split("±")[0])
        hits += abs(got - want) <= 0.5 * 10.0**-decimals + 1e-9
    return hits


def row(label: str, cells: list[str], paper: list[float] | None) -> None:
    line = f"  {label:<24}" + "".join(f"{c:>13}" for c in cells)
    print(line)
    if paper is not None:
        print(
            f"  {'  paper':<24}"
            + "".join(f"{v:>13g}" for v in paper)
            + f"   {_matches(cells, paper)}/7 within its last digit"
        )


def header() -> None:
    print(f"  {'':<24}" + "".join(f"{PAPER_LABELS[c] + ' ' + c[:9]:>13}" for c in COMBINERS))


def table_1_2(age: np.ndarray, seeds: int) -> None:
    layouts = {
        "1": (
            "R1: earlier, sets 0-50/25-75/50-100",
            custom_sets([[0, 50], [25, 75], [50, 100]], (0, 100), "earlier"),
        ),
        "2": (
            "R2: modified, sets 0-50/25-75/50-100",
            custom_sets([[0, 50], [25, 75], [50, 100]], (0, 100), "modified"),
        ),
        "2u": ("R2: modified, 3 uniform sets on 17-90", uniform_sets(3, (17, 90), "modified")),
    }
    t = time.process_time()
    maps = {key: mapped(age, sets, seeds) for key, (_, sets) in layouts.items()}
    print(
        f"mapping 3 layouts x 7 combiners ({seeds} random-pick seeds): "
        f"{time.process_time() - t:.2f} CPU s\n"
    )
    print("TABLE 1 - raw values (M5: mean±sd over the seeds)")
    for key, (title, _) in layouts.items():
        print(f" {title}")
        header()
        for name, f in MEASURES.items():
            label = name
            paper_key = f"{name}{key[0]}" if len(name) == 1 else None
            if name == "R":
                paper_key = f"R{key[0]}"
            row(
                label,
                [figure(maps[key][c], f, age) for c in COMBINERS],
                PAPER_T1.get(paper_key) if paper_key else None,
            )
        ranks = [rank_figures(age, maps[key][c][0]) for c in COMBINERS]
        row("Spearman rho", [f"{r['spearman']:.3f}" for r in ranks], None)
        kendall = [r["within_set_kendall"] for r in ranks]
        row(
            "|Kendall tau| in a set", ["none" if np.isnan(v) else f"{v:.3f}" for v in kendall], None
        )
    print(
        "\nWhere Table 1 differs, and why (the counts after each paper row say how many cells\n"
        "agree with it within half a unit of its last digit):\n"
        " * R1 (earlier sets on 0-100, as the paper's section 4.1 says) agrees with the paper's\n"
        "   row on M1, M3, M4 and M7. M5 (random pick, uniform over the candidates) averages\n"
        "   0.617 over the seeds against 0.61: another draw. M6 is 0.963 against 0.97. M2 does\n"
        "   not agree: the paper's example of the normalized average prints the formula\n"
        "   sum w_i (i + w_i) (1.6*0.6 + 2.4*0.4 = 1.92) beside the figure 2.0 (the plain mean of\n"
        "   1.6 and 2.4); sdcflow follows the formula, and the plain mean gives 0.787: neither\n"
        "   is 0.89.\n"
        " * R2 as the text describes it (modified, sets 0-50/25-75/50-100) does not give the\n"
        "   paper's row; three uniform sets over Adult's own range 17-90 give it for M1, M3-M7,\n"
        "   and they are the sets of the paper's Table 3 (its mapped bins start at\n"
        "   1 + 0.5/18.25 = 1.0274, age 53 under peaks 35.25, 53.5, 71.75; see Table 3 below).\n"
        "   So R2 was computed on the data's range, not on 0-100.\n"
        " * R2 M2 cannot be 0.90 beside M3 = 0.81: modified uniform sets sum to 1 at every age,\n"
        "   so normalizing changes nothing and the normalized average equals the weighted\n"
        "   average exactly (0.814 both; tests/test_fuzzy_mapping.py checks the identity).\n"
        " * Jaccard and Dice on raw values: the paper's 0.04-0.07 and 0.08-0.12 are given by the\n"
        "   inner-product forms of the survey it cites for them (Cha 2007, its [8]):\n"
        "   J = sum PQ / (sum P^2 + sum Q^2 - sum PQ), D = 2 sum PQ / (sum P^2 + sum Q^2).\n"
        "   They are small because ages (~38) dwarf mapped values (~2): sum P^2 >> sum Q^2, so\n"
        "   J ~ mean(Q)/mean(P) and D ~ twice that, a ratio of scales that barely moves with\n"
        "   the mapping. The intersection-family forms (Ruzicka sum min / sum max, Czekanowski\n"
        "   2 sum min / sum(P + Q)) give the same two decimals, so the raw figures cannot tell\n"
        "   these definitions apart, nor say much about the combiners.\n"
        " * Order (not in the paper): Spearman's rho and the mean |Kendall tau| inside the\n"
        "   records of one released set number. 'none' means the combiner is constant inside\n"
        "   each set number (the arithmetic average under modified uniform sets is a 3-level\n"
        "   recoding); near 1, the order of the ages inside a set is released, kept or reversed.\n"
    )
    print("TABLE 2 - rescaled values")
    for key, bounds, qb, title in [
        ("1", (0, 100), (1, 4), "R1 over the ranges: ages/[0,100], mapped/[1,4]"),
        ("1", None, None, "R1 over the data's own min and max"),
        ("2u", (17, 90), (1, 4), "R2 (uniform 17-90) over the ranges"),
        ("2u", None, None, "R2 (uniform 17-90) over the data's own min and max"),
        ("2", (0, 100), (1, 4), "R2 (sets 0-100) over the ranges"),
    ]:
        print(f" {title}")
        header()
        for name in ("J", "D", "C"):
            paper = PAPER_T2.get(f"N{name}{key[0]}")
            row(
                f"N{name}",
                [
                    figure(maps[key][c], MEASURES[name], age, bounds or (age.min(), age.max()), qb)
                    if bounds
                    else figure(maps[key][c], MEASURES[name], age, (age.min(), age.max()), None)
                    for c in COMBINERS
                ],
                paper,
            )
    print(
        "\nWhere Table 2 differs, and why:\n"
        " * NJ1, ND1, NC1 are reproduced (counts above) by min-max\n"
        "   rescaling over the ranges, not over the data: ages over the sets' domain [0, 100],\n"
        "   mapped values over their possible range [1, k + 1] = [1, 4]. Rescaling over the\n"
        "   data's own minimum and maximum gives other figures.\n"
        " * NJ2, ND2, NC2 are not reproduced by any of: the two layouts of R2, rescaling over the\n"
        "   ranges or the data, by the maximum, the sum, the L2 norm or z-scores. The paper's\n"
        "   NJ2 of 0.99 for the minimum combiner (Pearson 0.21, order reversed on every piece)\n"
        "   is implausible for any of them; the row may belong to another mapping.\n"
    )


def table_3(adult: pd.DataFrame, seeds: int) -> None:
    cols = ["education", "hours-per-week", "income", "native-country"]
    lhs, rhs = {"education": "Some-college"}, {"native-country": "United-States"}
    sets = uniform_sets(3, (17, 90), "modified")
    print("TABLE 3 - rules age=<bin> education=Some-college ==> native-country=United-States")
    print("  (mlxtend Apriori, min support 0.1, min confidence 0.9, on age, education,")
    print("   hours-per-week, income, native-country; numeric columns in 4 equal-width bins;")
    print("   mapping: 3 uniform modified sets on 17-90; random pick with seed 0)")
    t = time.process_time()
    frames = {"original": adult[["age", *cols]]}
    m = memberships(adult["age"].to_numpy(dtype=np.float64), sets)
    for c in COMBINERS:
        f = adult[cols].copy()
        f.insert(0, "age", combine(m, c, np.random.default_rng(0)))
        frames[c] = f
    print(f"  {'':<20}{'age':>22}{'LHS':>8}{'RHS':>8}{'conf':>7}    paper")
    paper = f"17-37.5 {4275} {3905} 0.91"
    ante, both = rule_counts(adult, lhs, rhs, {"age": (17, 37.5)})
    print(
        f"  {'original (paper)':<20}{'17-37.5':>22}{ante:>8}{both:>8}{both / ante:>7.3f}    {paper}"
    )
    for name, frame in frames.items():
        items = items_frame(frame, {"age": 4, "hours-per-week": 4})
        rules = select_rules(
            mine_rules(items), ["education=Some-college"], ["native-country=United-States"], "age="
        )
        for _, r in rules.iterrows():
            item = next(i for i in r["antecedents"] if i.startswith("age="))
            shown = item.removeprefix("age=")
            line = f"  {name:<20}{shown:>22}{r['lhs']:>8}{r['both']:>8}{r['confidence']:>7.3f}"
            p = PAPER_T3.get(name)
            print(line + (f"    {p[0]} {p[1]} {p[2]} {p[2] / p[1]:.2f}" if p else ""))
            if name == "original":
                continue
            lo_s, hi_s = (
                shown.strip("()[]").split("-", 1)
                if not shown.startswith("(-inf")
                else ("-inf", shown[6:-1])
            )
            lo, hi = float(lo_s), float(hi_s.rstrip(")]"))
            pieces = preimage(
                (lo, hi), sets, name, lo_closed=False, hi_closed=not shown.endswith(")")
            )
            ih = integer_hull(pieces)
            if ih is None:
                continue
            a2, b2 = rule_counts(adult, lhs, rhs, {"age": ih})
            print(
                f"  {'  remapped':<20}{f'{ih[0]}-{ih[1]}':>22}{a2:>8}{b2:>8}{b2 / a2:>7.3f}    "
                + (f"{p[3]} {p[4]} {p[5]} {p[5] / p[4]:.3f}" if p else "")
            )
    print(f"  rule mining of 8 files: {time.process_time() - t:.1f} CPU s")
    print(
        "\nWhere Table 3 differs, and why:\n"
        " * 'remapped' rows count, on the original file, the integer ages the mapped bin maps\n"
        "   back to (exact preimages, sdcflow.core.fuzzy_mapping.remap). Our mapped bins have\n"
        "   the paper's upper edges (2.5, 2.40641, 2.14041; the paper prints the column's\n"
        "   minimum where Weka prints -inf) and, except for the normalized average and the\n"
        "   random draw, the paper's counts and remapped ages.\n"
        " * Normalized average: the paper's row (1.5; 3934 -> 3590; 17-35) is the original\n"
        "   file's first bin (ages up to 35.25: 3934 -> 3590 above). Under these sets the\n"
        "   normalized average is the weighted average (see Table 1), so its row is the\n"
        "   weighted one (17-49, 6074 -> 5598), as ours shows.\n"
        " * Random pick: the mapped counts depend on the draw (seed 0: 5119 -> 4702 against the\n"
        "   paper's 5098 -> 4685); the remapped interval and counts do not (17-71, 7221 -> 6673).\n"
        " * The original row's 17-37.5 is not a 4-bin equal-width cut of 17-90 (35.25 is); its\n"
        "   counts 4275 -> 3905 are reproduced exactly by counting ages 17-37.5.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data", help="folder holding adult.csv")
    parser.add_argument("--seeds", type=int, default=20, help="random-pick draws for M5")
    args = parser.parse_args()
    path = Path(args.data) / "adult.csv"
    t = time.process_time()
    adult = pd.read_csv(path, skipinitialspace=True)
    age = adult["age"].to_numpy(dtype=np.float64)
    print(f"Adult: {len(adult)} records, read in {time.process_time() - t:.2f} CPU s\n")
    table_1_2(age, args.seeds)
    table_3(adult, args.seeds)


if __name__ == "__main__":
    main()
