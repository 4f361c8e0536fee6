"""Anonymity of a released file: crisp k-anonymity, l-diversity, probabilistic k-anonymity.

An *equivalence class* is a group of released records with identical quasi-identifier values.

Distinct l-diversity reads the "well-represented" values of [2] as at least l distinct
sensitive values per class; entropy l-diversity asks ``-sum_s p(q, s) log p(q, s) >= log l``
in every class q [2]. Probabilistic k-anonymity asks that no record be re-identified with
probability above 1/k [3].

References
----------
[1] L. Sweeney, "k-anonymity: a model for protecting privacy", International Journal of
    Uncertainty, Fuzziness and Knowledge-Based Systems 10(5) (2002) 557-570.
[2] A. Machanavajjhala, D. Kifer, J. Gehrke, M. Venkitasubramaniam, "l-Diversity: privacy
    beyond k-anonymity", ACM Transactions on Knowledge Discovery from Data 1(1) (2007),
    article 3.
[3] J. Soria-Comas, J. Domingo-Ferrer, "Probabilistic k-anonymity through microaggregation and
    data swapping", Proc. IEEE International Conference on Fuzzy Systems (FUZZ-IEEE 2012),
    2012.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdcflow.errors import ParameterError


def _class_ids(released: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Equivalence-class id of every released record (0..g-1). Shapes: (n, d) -> (n,)."""
    frame = pd.DataFrame(released)
    if frame.shape[1] == 0:
        raise ParameterError("the released file has no quasi-identifier columns")
    return frame.groupby(list(frame.columns), dropna=False, sort=False).ngroup().to_numpy()


def equivalence_class_sizes(released: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Sizes of the groups of identical released quasi-identifier rows.

    Shapes: released (n, d) -> (g,) with sum n.
    """
    frame = pd.DataFrame(released)
    if frame.empty:
        return np.zeros(0, dtype=np.int64)
    return frame.groupby(list(frame.columns), dropna=False, sort=False).size().to_numpy()


def k_anonymity(released: pd.DataFrame | np.ndarray) -> int:
    """The k the released file achieves: the size of its smallest equivalence class [1]."""
    sizes = equivalence_class_sizes(released)
    return int(sizes.min()) if sizes.size else 0  # [1] the smallest class


def _sensitive_frame(
    released: pd.DataFrame | np.ndarray, sensitive: pd.DataFrame | pd.Series | np.ndarray
) -> tuple[np.ndarray, pd.DataFrame]:
    ids = _class_ids(released)
    sens = pd.DataFrame(sensitive).reset_index(drop=True)
    if sens.shape[0] != ids.size:
        raise ParameterError(
            f"sensitive columns have {sens.shape[0]} rows but the released file has {ids.size}; "
            "pass the sensitive values of the released records, in the same order"
        )
    if sens.shape[1] == 0:
        raise ParameterError("name at least one sensitive column for l-diversity")
    return ids, sens


def _distinct_per_class(ids: np.ndarray, values: pd.Series) -> np.ndarray:
    """Number of distinct values (missing counts as one value) in every class. (g,)"""
    codes = pd.factorize(values, use_na_sentinel=False)[0]
    pairs = pd.DataFrame({"c": ids, "v": codes}).drop_duplicates()
    return np.bincount(pairs["c"].to_numpy(), minlength=ids.max() + 1)


def _entropy_per_class(ids: np.ndarray, values: pd.Series) -> np.ndarray:
    """Shannon entropy (natural log) of the value distribution in every class. (g,)"""
    codes = pd.factorize(values, use_na_sentinel=False)[0]
    counts = pd.DataFrame({"c": ids, "v": codes}).value_counts().reset_index(name="k")
    class_size = np.bincount(ids)
    p = counts["k"].to_numpy() / class_size[counts["c"].to_numpy()]
    # [2] H_q = -sum_s p(q, s) ln p(q, s)
    return np.bincount(counts["c"].to_numpy(), weights=-p * np.log(p), minlength=class_size.size)


def l_diversity(
    released: pd.DataFrame | np.ndarray,
    sensitive: pd.DataFrame | pd.Series | np.ndarray,
) -> int:
    """Distinct l-diversity: the fewest distinct values of a sensitive column in any class [2].

    Parameters
    ----------
    released : DataFrame or ndarray of shape (n, d)
        The released quasi-identifiers; identical rows form an equivalence class.
    sensitive : DataFrame, Series or ndarray of shape (n,) or (n, s)
        The sensitive column(s) of the same released records. With several columns the
        figure is the minimum over them (every sensitive column must be l-diverse).

    Returns
    -------
    int
        ``min over classes q and sensitive columns s`` of the number of distinct values.
    """
    ids, sens = _sensitive_frame(released, sensitive)
    return int(min(_distinct_per_class(ids, sens[c]).min() for c in sens.columns))


def entropy_l_diversity(
    released: pd.DataFrame | np.ndarray,
    sensitive: pd.DataFrame | pd.Series | np.ndarray,
) -> float:
    """Entropy l-diversity: ``min_q exp(H_q)`` over classes and sensitive columns [2].

    A class with entropy ``H_q = -sum_s p(q, s) ln p(q, s)`` is entropy l-diverse for every
    ``l <= exp(H_q)``, so the file's figure is the smallest ``exp(H_q)`` (a real number; the
    largest integer l it satisfies is its floor). Shapes as in :func:`l_diversity`.
    """
    ids, sens = _sensitive_frame(released, sensitive)
    return float(min(np.exp(_entropy_per_class(ids, sens[c])).min() for c in sens.columns))


def probabilistic_k_anonymity(reidentification: np.ndarray | Sequence[float]) -> float:
    """The k of probabilistic k-anonymity [3]: ``1 / max_i P_i``.

    ``P_i`` is the probability that an intruder re-identifies record i (for instance from
    :func:`sdcflow.tasks.measures.disclosure_risk.reidentification_probabilities`). The file is
    probabilistically k-anonymous for every ``k <= 1 / max_i P_i``; for a crisp partition into
    groups this is the smallest group size, as for k-anonymity.

    Shapes: (n,) in (0, 1] -> float >= 1 (inf when every P_i is 0).
    """
    P = np.asarray(reidentification, dtype=np.float64)
    if P.ndim != 1 or P.size == 0:
        raise ParameterError("reidentification must be a non-empty 1-D array of probabilities")
    if np.any((P < 0) | (P > 1)) or not np.all(np.isfinite(P)):
        raise ParameterError("reidentification probabilities must lie in [0, 1]")
    top = float(P.max())
    return float("inf") if top == 0 else 1.0 / top  # [3] every P_i <= 1/k


def expected_cluster_sizes(memberships: np.ndarray) -> np.ndarray:
    """Expected number of records drawn to each centre: column sums of the memberships.

    The expected-size reading of probabilistic k-anonymity for fuzzy microaggregation (every
    expected size ``>= k``) gates on ``expected_cluster_sizes(U).min()``.

    Shapes: memberships (n, c), rows summing to 1 -> (c,) summing to n.
    """
    U = np.asarray(memberships, dtype=np.float64)
    if U.ndim != 2:
        raise ParameterError(f"memberships must be 2-dimensional (n, c), got {U.ndim}-D")
    return U.sum(axis=0)
