"""Association rules on a file with a mapped attribute, as [1]_ section 4.2 mines them.

[1]_ mines with Weka's Apriori after Weka's unsupervised equal-width discretization of the
numeric attributes into 4 bins: ``hours-per-week='(25.5-50]'`` is the second of four bins of
[1, 99], and the random-pick mapped age ``'(1.77055-2.5137]'`` the second of four of
[1.0274, 4.0] (the mapped range under uniform sets k = 3 on [17, 90]). :func:`equal_width_bins`
gives the same cut points and Weka's labels; :func:`mine_rules` runs a maintained Apriori
(``mlxtend`` [2]_, the optional ``rules`` extra) on the one-hot items; :func:`rule_counts` counts a
rule's records on any frame (the "LHS" and "RHS" columns of [1]_ Table 3: records that satisfy
the antecedent, and the antecedent and consequent).

References
----------
.. [1] "Fuzzy-based Methods for Privacy-Preserving Data Mining", Eighth International
   Conference on Information Technology: New Generations (ITNG), IEEE, 2011,
   doi:10.1109/ITNG.2011.68.
.. [2] S. Raschka, "MLxtend: Providing machine learning and data science utilities and
   extensions to Python's scientific computing stack", Journal of Open Source Software 3(24),
   2018, 638, doi:10.21105/joss.00638.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdcflow.errors import DataError, ParameterError


def _label(v: float) -> str:
    return "inf" if v == np.inf else "-inf" if v == -np.inf else f"{v:.6g}"


def equal_width_bins(values: object, bins: int = 4) -> tuple[pd.Categorical, np.ndarray]:
    """Weka's equal-width discretization: cut points ``min + j (max - min)/bins``,
    j = 1..bins-1, bins ``(-inf-c1]``, ``(c1-c2]``, ..., ``(c_{b-1}-inf)``.

    Shapes: values (n,) -> categorical (n,) of bin labels, cut points (bins - 1,).
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise ParameterError(f"bins must be an integer >= 2, got {bins!r}")
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or not np.isfinite(v).all():
        raise DataError("values to discretize must be 1-D and finite")
    lo, hi = float(v.min()), float(v.max())
    cuts = lo + (hi - lo) * np.arange(1, bins) / bins
    edges = np.concatenate([[-np.inf], cuts, [np.inf]])
    labels = [
        f"({_label(a)}-{_label(b)}{')' if b == np.inf else ']'}"
        for a, b in itertools.pairwise(edges)
    ]
    idx = np.searchsorted(cuts, v, side="left")  # (c_{j-1}, c_j] -> j
    return pd.Categorical.from_codes(idx, categories=labels), cuts


def items_frame(frame: pd.DataFrame, numeric_bins: Mapping[str, int]) -> pd.DataFrame:
    """One-hot items ``column=value`` for a rule miner: numeric columns named in
    ``numeric_bins`` discretized into that many equal-width bins, the others as they are."""
    parts = {}
    for col in frame.columns:
        if col in numeric_bins:
            parts[col] = equal_width_bins(frame[col].to_numpy(), numeric_bins[col])[0]
        else:
            parts[col] = frame[col].astype(str)
    coded = pd.DataFrame(parts)
    return pd.get_dummies(coded, prefix_sep="=").astype(bool)


def mine_rules(
    items: pd.DataFrame, *, min_support: float = 0.1, min_confidence: float = 0.9
) -> pd.DataFrame:
    """Apriori frequent itemsets and the rules above ``min_confidence`` ([2]_), with the
    antecedent and consequent as frozensets of item names and their record counts.

    Returns a frame with columns ``antecedents``, ``consequents``, ``lhs`` (records with the
    antecedent), ``both`` (with antecedent and consequent), ``confidence``.
    """
    try:
        from mlxtend.frequent_patterns import apriori, association_rules
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ParameterError(
            "mining rules needs mlxtend, which is not installed here: pip install 'sdcflow[rules]'"
        ) from e
    frequent = apriori(items, min_support=min_support, use_colnames=True)
    if frequent.empty:
        return pd.DataFrame(columns=["antecedents", "consequents", "lhs", "both", "confidence"])
    rules = association_rules(frequent, metric="confidence", min_threshold=min_confidence)
    n = len(items)
    out = pd.DataFrame(
        {
            "antecedents": rules["antecedents"],
            "consequents": rules["consequents"],
            "lhs": np.rint(rules["antecedent support"].to_numpy() * n).astype(np.int64),
            "both": np.rint(rules["support"].to_numpy() * n).astype(np.int64),
            "confidence": rules["confidence"].to_numpy(),
        }
    )
    return out.reset_index(drop=True)


def rule_counts(
    frame: pd.DataFrame,
    lhs: Mapping[str, object],
    rhs: Mapping[str, object],
    ranges: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[int, int]:
    """Records satisfying the antecedent, and antecedent and consequent.

    ``lhs`` / ``rhs``: column -> value (equality); ``ranges``: column -> (lo, hi), closed,
    added to the antecedent (a remapped interval such as age 17..71).
    """

    def holds(conds: Mapping[str, object]) -> np.ndarray:
        ok = np.ones(len(frame), dtype=bool)
        for col, value in conds.items():
            ok &= (frame[col] == value).to_numpy()
        return ok

    ante = holds(lhs)
    for col, (lo, hi) in (ranges or {}).items():
        v = frame[col].to_numpy(dtype=np.float64)
        ante &= (v >= lo) & (v <= hi)
    both = ante & holds(rhs)
    return int(ante.sum()), int(both.sum())


def select_rules(
    rules: pd.DataFrame, lhs_items: Sequence[str], rhs_items: Sequence[str], prefix: str
) -> pd.DataFrame:
    """Rules whose antecedent is ``lhs_items`` plus one item starting with ``prefix`` and whose
    consequent is ``rhs_items`` (the rows [1]_ Table 3 compares)."""
    want_l, want_r = set(lhs_items), frozenset(rhs_items)
    keep = []
    for i, (a, c) in enumerate(zip(rules["antecedents"], rules["consequents"], strict=True)):
        extra = set(a) - want_l
        if (
            c == want_r
            and want_l <= set(a)
            and len(extra) == 1
            and next(iter(extra)).startswith(prefix)
        ):
            keep.append(i)
    return rules.iloc[keep].reset_index(drop=True)
