"""The measures of sdcflow as plain functions on DataFrames or arrays, for notebooks.

Each function takes the original and the released records in the same row order (the
released file as a masking method returns it, before publication shuffles it) and delegates
to the numerical core (:mod:`sdcflow.tasks.measures`), which holds the formulas and their
references. DataFrames are matched by column name: the released frame must have every
column of the original (point methods release the same columns); arrays by position.

>>> from sdcflow import MDAV
>>> from sdcflow.measures import information_loss, k_anonymity
>>> released = MDAV(k=5).fit_transform(df[cols])          # doctest: +SKIP
>>> information_loss(df[cols], released), k_anonymity(released)   # doctest: +SKIP

Bad input raises the same :class:`~sdcflow.errors.InputError` (with its ``code``) as the
command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from sdcflow.errors import DataError
from sdcflow.tasks.measures import disclosure_risk
from sdcflow.tasks.measures import information_loss as _loss
from sdcflow.tasks.measures.anonymity import (
    entropy_l_diversity,
    equivalence_class_sizes,
    k_anonymity,
    l_diversity,
)

__all__ = [
    "entropy_l_diversity",
    "equivalence_class_sizes",
    "generic_loss",
    "information_loss",
    "interval_disclosure",
    "k_anonymity",
    "l_diversity",
    "probabilistic_loss",
    "record_linkage",
]


def _pair(original: Any, released: Any) -> tuple[np.ndarray, np.ndarray]:
    """Both files as float arrays with columns in the original's order.

    Shapes: (n, d), (n, d) -> (n, d), (n, d).
    """
    if isinstance(original, pd.DataFrame) and isinstance(released, pd.DataFrame):
        missing = [c for c in original.columns if c not in released.columns]
        if missing:
            raise DataError(
                f"the released frame lacks column(s) {missing} of the original; pass the "
                "point values a method released for the same columns (box: the box centres)"
            )
        released = released[list(original.columns)]
    return np.asarray(original, dtype=np.float64), np.asarray(released, dtype=np.float64)


def information_loss(original: Any, released: Any) -> float:
    """IL = 100 SSE / SST on attributes standardized with the original's mean and standard
    deviation (:func:`sdcflow.tasks.measures.information_loss.sse_sst_loss`).

    Shapes: original (n, d), released (n, d) -> float (0 = unchanged, 100 = every record
    replaced by the mean).
    """
    return _loss.sse_sst_loss(*_pair(original, released))


def generic_loss(
    original: Any,
    released: Any,
    statistic: Literal["means", "variances", "covariances", "correlations"] = "means",
    *,
    kind: Literal["absolute", "relative"] = "relative",
) -> float:
    """Mean absolute or relative difference of a statistic between the two files
    (:func:`sdcflow.tasks.measures.information_loss.generic_loss`)."""
    return _loss.generic_loss(*_pair(original, released), statistic, kind=kind)


def probabilistic_loss(
    original: Any,
    released: Any,
    statistic: Literal["means", "variances", "covariances", "correlations"] = "means",
) -> float:
    """Probabilistic information loss of a statistic, % in [0, 100]
    (:func:`sdcflow.tasks.measures.information_loss.probabilistic_loss`)."""
    return _loss.probabilistic_loss(*_pair(original, released), statistic)


def record_linkage(original: Any, released: Any) -> float:
    """Distance-based record linkage: % of released records linked to their own original
    (:func:`sdcflow.tasks.measures.disclosure_risk.record_linkage`)."""
    return disclosure_risk.record_linkage(*_pair(original, released))


def interval_disclosure(
    original: Any, released: Any, p: float | Sequence[float] = tuple(range(1, 11))
) -> float:
    """Rank-based interval disclosure, % (:func:`sdcflow.tasks.measures.disclosure_risk.\
interval_disclosure`); ``p``: interval width(s) in % of the records."""
    return disclosure_risk.interval_disclosure(*_pair(original, released), p)
