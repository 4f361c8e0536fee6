"""The raw file's risk before any protection: what an office reads before choosing a method.

k counts identical rows over every key (a missing value is a value of its own, ``DESIGN.md``,
"Measures and checks"), so the figures here are those the ``k_anonymity`` gate and the risk
gates would give the file if it were released unmasked:

* records in classes of fewer than k identical rows, for several k, and the sample uniques
  (k = 2);
* individual risk [1] (sampling weights estimate the population frequency; without them the
  file is its own population, ``r = 1 / f``), its sum (the expected re-identifications) and
  maximum;
* the smallest combinations of keys that make records unique: for every set of keys up to a
  size, the records unique on those keys alone and on no smaller set — what an intruder must
  know least of to single them out;
* the keys that drive the risk: each key's share of the SUDA2 scores [2] (sdcMicro's
  ``attribute_contributions``), and the sample uniques left when that key is dropped.

References
----------
[1] F. Franconi, S. Polettini, "Individual risk estimation in mu-Argus: a review", Privacy in
    Statistical Databases, LNCS 3050 (2004) 262-272 (sdcMicro ``measure_risk``).
[2] A.M. Manning, D.J. Haglin, J.A. Keane, "A recursive search algorithm for statistical
    disclosure assessment", Data Mining and Knowledge Discovery 16 (2008) 165-196.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from sdcflow.core.distinct import row_ids
from sdcflow.core.measures.risk import individual_risk
from sdcflow.core.risk.suda import suda2
from sdcflow.errors import ParameterError


@dataclass(frozen=True)
class Assessment:
    """Figures of a file's keys before any protection (never a record value).

    Attributes
    ----------
    n : int
        Records.
    keys : tuple of str
        The keys, in the order given.
    below_k : dict of int to int
        Records in classes of fewer than k identical rows, for every k asked.
    sample_uniques : int
        Records whose row of keys no other record shares.
    expected_reidentifications : float
        Sum of the individual risks.
    max_risk : float
        Largest individual risk.
    weighted : bool
        True when sampling weights estimated the population frequencies.
    combinations : list of (tuple of str, int)
        Key sets (smallest first, then most records) with the records unique on those keys
        alone and on no smaller set of keys: the least an intruder must know to single them
        out.
    key_contributions : dict of str to float
        Percent of the file's SUDA2 score held by each key.
    uniques_without : dict of str to int
        Sample uniques when that key is left out.
    """

    n: int
    keys: tuple[str, ...]
    below_k: dict[int, int]
    sample_uniques: int
    expected_reidentifications: float
    max_risk: float
    weighted: bool
    combinations: list[tuple[tuple[str, ...], int]]
    key_contributions: dict[str, float]
    uniques_without: dict[str, int]

    @property
    def global_risk_percent(self) -> float:
        """Expected re-identifications per 100 records."""
        return 100.0 * self.expected_reidentifications / self.n


def _class_sizes(codes: np.ndarray) -> np.ndarray:
    ids = row_ids(codes + 1)
    return np.bincount(ids)[ids]


def assess(
    codes: np.ndarray,
    keys: tuple[str, ...] | list[str],
    *,
    weights: np.ndarray | None = None,
    ks: tuple[int, ...] = (2, 3, 5, 10),
    max_combination: int = 3,
    top: int = 10,
) -> Assessment:
    """Assess the keys of a file before any protection.

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Key codes, -1 for a missing value (a value of its own).
    keys : sequence of str, length d
        The keys' names.
    weights : ndarray of shape (n,), optional
        Sampling weights (> 0): the population frequency of a class is the sum of its
        weights.
    ks : tuple of int
        The k for which records below k are counted.
    max_combination : int
        Largest key set searched for uniques (all sets up to it: sum of C(d, s) passes).
    top : int
        Combinations listed.

    Returns
    -------
    Assessment
    """
    C = np.asarray(codes)
    if C.ndim != 2 or not np.issubdtype(C.dtype, np.integer):
        raise ParameterError(
            f"codes must be a 2-D integer array (n, d), got shape {C.shape} and dtype {C.dtype}"
        )
    n, d = C.shape
    names = tuple(keys)
    if len(names) != d or n == 0:
        raise ParameterError(f"{len(names)} key names for {d} columns of codes and {n} records")
    C = C.astype(np.int64)
    f = _class_sizes(C)
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ParameterError("weights must be n finite positive numbers, one per record")
        ids = row_ids(C + 1)
        risk = individual_risk(f, np.bincount(ids, weights=w)[ids])  # [1]
    else:
        risk = individual_risk(f)
    found: list[tuple[tuple[int, ...], int]] = []
    unique_on = np.zeros(n, dtype=bool)  # unique on a smaller listed set already
    for size in range(1, min(max_combination, d) + 1):
        level = []
        for K in combinations(range(d), size):
            alone = _class_sizes(C[:, list(K)]) == 1
            fresh = int((alone & ~unique_on).sum())
            if fresh:
                level.append((K, fresh, alone))
        found.extend((K, fresh) for K, fresh, _ in level)
        for *_, alone in level:
            unique_on |= alone
    found.sort(key=lambda item: (len(item[0]), -item[1], item[0]))
    suda = suda2(C, missing=None)
    uniques_without = {
        names[a]: int((_class_sizes(np.delete(C, a, axis=1)) == 1).sum()) if d > 1 else 0
        for a in range(d)
    }
    return Assessment(
        n=n,
        keys=names,
        below_k={int(k): int((f < k).sum()) for k in ks},
        sample_uniques=int((f == 1).sum()),
        expected_reidentifications=math.fsum(risk),
        max_risk=float(risk.max()),
        weighted=weights is not None,
        combinations=[(tuple(names[a] for a in K), c) for K, c in found[:top]],
        key_contributions={names[a]: float(suda.attribute_contribution[a]) for a in range(d)},
        uniques_without=uniques_without,
    )
