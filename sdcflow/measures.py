"""The measures of sdcflow as plain functions on DataFrames or arrays, for notebooks.

Each function takes the original and the released records in the same row order (the
released file as a masking method returns it, before publication shuffles it) and delegates
to the numerical core (:mod:`sdcflow.core.measures`), which holds the formulas and their
references. DataFrames are matched by column name: the released frame must have every
column of the original (point methods release the same columns); arrays by position. Rows
are paired by position, or by row label when both frames (or the keys and the sensitive
values) carry the same labels in another order; a released frame built from an array (a
default ``RangeIndex``) is paired by position, and labels that cannot pair the rows (the same
labels reordered with one repeated, some of the original's labels at other positions) are
refused (``Reason.DATA``).

Missing values (NaN, None, ``pd.NA``, nullable dtypes) are counted as a release counts them,
so that a figure here is the manifest's for the same records: for k-anonymity, l-diversity
and the class sizes' frequencies a missing value is a value of its own (k counts identical
released rows; ``convention="missing_matches_any"`` gives sdcMicro's count, where a missing
value matches any value, for comparison); information loss counts
every value present (each column over the records that have it in both files); generic and
probabilistic loss, record linkage and interval disclosure are measured on the records that
have every column in both files (``DataError`` naming the emptiest column when too few do).
The loss and linkage measures take numeric columns; a text, categorical or boolean column
is refused by name (``Reason.COLUMN_TYPE``), as is an infinite value.

:func:`individual_risk` and :func:`global_risk` take the released records alone, their key
columns and sampling weights, and return the figures of the ``max_individual_risk`` and
``max_global_risk`` gates (sdcMicro's individual risk), computed by the gates' function.

>>> from sdcflow import MDAV
>>> from sdcflow.measures import information_loss, k_anonymity
>>> released = MDAV(k=5).fit_transform(df[cols])          # doctest: +SKIP
>>> information_loss(df[cols], released), k_anonymity(released)   # doctest: +SKIP

Bad input raises the same :class:`~sdcflow.errors.InputError` (with its ``code``) as the
command line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from sdcflow.core.measures import anonymity as _anonymity
from sdcflow.core.measures import disclosure_risk
from sdcflow.core.measures import information_loss as _loss
from sdcflow.core.measures.anonymity import Convention, equivalence_class_sizes, k_anonymity
from sdcflow.core.measures.complete import complete_records, on_complete_records
from sdcflow.core.measures.risk import RiskSummary, risk_summary
from sdcflow.errors import DataError, ParameterError, Reason

__all__ = [
    "GlobalRisk",
    "entropy_l_diversity",
    "equivalence_class_sizes",
    "generic_loss",
    "global_risk",
    "individual_risk",
    "information_loss",
    "interval_disclosure",
    "k_anonymity",
    "l_diversity",
    "probabilistic_loss",
    "record_linkage",
]


_NUMERIC_OBJECTS = {"integer", "floating", "mixed-integer-float", "decimal", "empty"}


def _aligned(original: pd.DataFrame, other: Any, which: str) -> Any:
    """``other`` in the original's row order when both carry the same row labels in another
    order (a released frame sorted, or a column picked from a reordered frame); otherwise
    unchanged (rows are then paired by position, as the functions say). A default
    ``RangeIndex`` on ``other`` (a frame built from an array) carries no labels: it is paired
    by position even when the original's labels are a shuffle of ``0..n-1``. Refused
    (``DataError``, field ``which``): the same labels in another order with a label repeated,
    and some of the original's labels at other positions (both labelled, not all shared).
    """
    index = getattr(other, "index", None)
    if (
        index is None
        or index.equals(original.index)
        or len(index) != len(original.index)
        or index.equals(pd.RangeIndex(len(index)))
    ):
        return other
    shared = index.isin(original.index)
    if index.is_unique and original.index.is_unique:
        if shared.all():
            return other.loc[original.index]
        if (
            shared.any()
            and not original.index.equals(pd.RangeIndex(len(index)))
            and (original.index[shared] != index[shared]).any()
        ):
            raise DataError(
                f"the rows of {which} carry some of the original's labels, at other positions: "
                "pairing them by position would pair records whose labels differ, and by label "
                "some have no partner; pass the same records under the same labels (or "
                "reset_index(drop=True) on both to pair them by position)",
                code=Reason.DATA,
                field=which,
            )
        return other
    if Counter(index) == Counter(original.index):
        raise DataError(
            f"the rows of {which} carry the original's labels in another order, with a label "
            "repeated, so they cannot be paired by label, and pairing them by position would "
            "measure other records; pass them in the original's row order, or give both "
            "unique labels (reset_index(drop=True) on both before reordering)",
            code=Reason.DATA,
            field=which,
        )
    return other


def _floats(data: Any, which: str) -> tuple[np.ndarray, list[str]]:
    """One file as a float array (NaN where a value is missing: NaN, None, ``pd.NA``) and its
    column labels (names, or ``column j`` for an array); ``DataError`` naming the column for
    text, categorical and boolean columns (the loss and linkage measures compare numeric
    keys, as a release does) and for infinite values. Shapes: (n, d) -> (n, d), d labels."""
    frame = data if isinstance(data, pd.DataFrame) else None
    if frame is None:
        array = np.asarray(data)
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2:
            raise DataError(
                f"{which} must be 2-dimensional (records x columns), got {array.ndim}-D",
                field=which,
            )
        frame = pd.DataFrame(array, columns=[f"column {j}" for j in range(array.shape[1])])
    labels = [str(c) for c in frame.columns]
    out = np.empty(frame.shape, dtype=np.float64)
    for j, label in enumerate(labels):
        col = frame.iloc[:, j]
        kind = pd.api.types.infer_dtype(col, skipna=True)
        if pd.api.types.is_bool_dtype(col.dtype) or kind == "boolean":
            kind = "boolean"
        elif pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(
            col.dtype, pd.CategoricalDtype
        ):
            kind = "floating"
        if kind not in _NUMERIC_OBJECTS:
            raise DataError(
                f"{which}: {label} is not numeric ({kind}); information loss, linkage "
                "and interval disclosure compare numeric keys only, as a release measures "
                "them: pass the numeric columns (k_anonymity and l_diversity count the "
                "categorical ones)",
                code=Reason.COLUMN_TYPE,
                field=label,
            )
        out[:, j] = pd.to_numeric(col).to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isinf(out[:, j]).any():
            raise DataError(
                f"{which}: {label} has infinite value(s); replace them with a number "
                "or leave them missing (NaN)",
                code=Reason.VALUES_NONFINITE,
                field=label,
            )
    return out, labels


def _pair_with_missing(original: Any, released: Any) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Both files as float arrays with columns in the original's order, NaN where missing.

    DataFrames are matched by column name and, when both carry the same row labels in
    another order, by row label. Shapes: (n, d), (n, d) -> (n, d), (n, d), d labels.
    """
    if isinstance(original, pd.DataFrame) and isinstance(released, pd.DataFrame):
        missing = [c for c in original.columns if c not in released.columns]
        if missing:
            raise DataError(
                f"the released frame lacks column(s) {missing} of the original; pass the "
                "point values a method released for the same columns (box: the box centres)",
                code=Reason.COLUMN_UNKNOWN,
                field=str(missing[0]),
            )
        released = _aligned(original, released[list(original.columns)], "released")
    X, labels = _floats(original, "original")
    Xm, _ = _floats(released, "released")
    if X.shape != Xm.shape:
        raise DataError(
            f"original {X.shape} and released {Xm.shape} must have the same shape (the same "
            "records in the same order, the same columns)",
            field="released",
        )
    if X.shape[1] == 0:
        raise DataError("the files have no columns; pass the numeric keys", field="original")
    return X, Xm, labels


def _pair(original: Any, released: Any, *, minimum: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Both files on the records that have every column in both (a release measures these
    figures on the records that have every numeric key); ``DataError`` naming the emptiest
    column when fewer than ``minimum`` records have them all (the manifest says "not
    checked"). Shapes: (n, d), (n, d) -> (m, d), (m, d)."""
    X, Xm, labels = _pair_with_missing(original, released)
    complete = complete_records(X, Xm)
    if complete.sum() < minimum:
        missing = np.isnan(X) | np.isnan(Xm)
        worst = labels[int(np.argmax(missing.sum(axis=0)))]
        raise DataError(
            f"{int(complete.sum())} record(s) have every column in both files (column "
            f"{worst} misses most) and this figure is measured on those, as a release measures "
            f"it (at least {minimum} needed); pass fewer columns",
            code=Reason.VALUES_MISSING,
            field=worst,
        )
    return on_complete_records(X, Xm)


def information_loss(original: Any, released: Any) -> float:
    """IL = 100 SSE / SST on attributes standardized with the original's mean and standard
    deviation (:func:`sdcflow.core.measures.information_loss.sse_sst_loss_present`: with
    missing values, each column over the records that have it in both files, as a release).

    Shapes: original (n, d), released (n, d) -> float (0 = unchanged, 100 = every record
    replaced by the mean).
    """
    return _loss.sse_sst_loss_present(*_pair_with_missing(original, released)[:2])


def generic_loss(
    original: Any,
    released: Any,
    statistic: Literal["means", "variances", "covariances", "correlations"] = "means",
    *,
    kind: Literal["absolute", "relative"] = "relative",
) -> float:
    """Mean absolute or relative difference of a statistic between the two files
    (:func:`sdcflow.core.measures.information_loss.generic_loss`)."""
    return _loss.generic_loss(*_pair(original, released, minimum=2), statistic, kind=kind)


def probabilistic_loss(
    original: Any,
    released: Any,
    statistic: Literal["means", "variances", "covariances", "correlations"] = "means",
) -> float:
    """Probabilistic information loss of a statistic, % in [0, 100]
    (:func:`sdcflow.core.measures.information_loss.probabilistic_loss`)."""
    return _loss.probabilistic_loss(*_pair(original, released, minimum=2), statistic)


def record_linkage(original: Any, released: Any) -> float:
    """Distance-based record linkage: % of released records linked to their own original
    (:func:`sdcflow.core.measures.disclosure_risk.record_linkage`)."""
    return disclosure_risk.record_linkage(*_pair(original, released))


def interval_disclosure(
    original: Any, released: Any, p: float | Sequence[float] = tuple(range(1, 11))
) -> float:
    """Rank-based interval disclosure, % (:func:`sdcflow.core.measures.disclosure_risk.\
interval_disclosure`); ``p``: interval width(s) in % of the records."""
    return disclosure_risk.interval_disclosure(*_pair(original, released), p)


def _sensitive_aligned(released: Any, sensitive: Any) -> Any:
    if isinstance(sensitive, str):  # a column name: pd.DataFrame(str) raised a bare ValueError
        raise ParameterError(
            f"sensitive is the text {sensitive!r}: pass the sensitive values of the released "
            f"records (released_frame[{sensitive!r}]), and the keys without them",
            field="sensitive",
        )
    if isinstance(released, pd.DataFrame) and isinstance(sensitive, (pd.Series, pd.DataFrame)):
        return _aligned(released, sensitive, "sensitive")
    return sensitive


def l_diversity(released: Any, sensitive: Any, *, convention: Convention = "identical") -> int:
    return _anonymity.l_diversity(
        released, _sensitive_aligned(released, sensitive), convention=convention
    )


def entropy_l_diversity(
    released: Any, sensitive: Any, *, convention: Convention = "identical"
) -> float:
    return _anonymity.entropy_l_diversity(
        released, _sensitive_aligned(released, sensitive), convention=convention
    )


_ROWS = (
    "\n\n    Rows of ``sensitive`` are paired with the released records by position, or by row\n"
    "    label when both carry the same labels in another order."
)
l_diversity.__doc__ = (_anonymity.l_diversity.__doc__ or "").rstrip() + _ROWS
entropy_l_diversity.__doc__ = (_anonymity.entropy_l_diversity.__doc__ or "").rstrip() + _ROWS


# --- re-identification risk from key frequencies and sampling weights ----------------------


def _key_risk(
    released: Any, keys: Any, weights: Any, convention: Convention = "identical"
) -> tuple[pd.DataFrame, RiskSummary]:
    """The released frame and the risk of its records over ``keys``, computed by the core
    function the ``max_individual_risk`` and ``max_global_risk`` gates call
    (:func:`sdcflow.core.measures.risk.risk_summary`, on the released keys and the weights
    as a release passes them)."""
    frame = released if isinstance(released, pd.DataFrame) else pd.DataFrame(released)
    names = [keys] if np.ndim(keys) == 0 else list(keys)
    if not names:
        raise ParameterError("name at least one key column (keys=[...])", field="keys")
    unknown = [k for k in names if k not in frame.columns]
    if unknown:
        raise DataError(
            f"the released frame has no column(s) {unknown}; keys are the released frame's "
            "columns an intruder could know (the spec's quasi_identifiers)",
            code=Reason.COLUMN_UNKNOWN,
            field=str(unknown[0]),
        )
    if frame.shape[0] == 0:
        raise DataError(
            "the released frame has no records; the risk is measured per record",
            code=Reason.TOO_FEW_RECORDS,
            field="released",
        )
    return frame, risk_summary(frame[names], _weights(frame, weights), convention=convention)


def _weights(frame: pd.DataFrame, weights: Any) -> np.ndarray | None:
    """The sampling weights as floats, one per record (refused as ``weight_column:`` is:
    ``Reason.WEIGHTS``, when not numbers, missing, not positive or not finite, or summing
    beyond a float). A column name, a Series (paired by label as the other measures pair
    rows) or an array in the frame's row order; None: no weights."""
    if weights is None:
        return None
    field = "weights"
    if isinstance(weights, pd.Series):
        series = _aligned(frame, weights, "weights")
    elif np.ndim(weights) == 0:  # a column label
        if not isinstance(weights, Hashable) or weights not in frame.columns:
            raise DataError(
                f"weights names column {weights!r}, which the released frame lacks; pass the "
                "weight column's name, or the weights themselves",
                code=Reason.COLUMN_UNKNOWN,
                field=str(weights),
            )
        field, series = str(weights), frame[weights]
    else:
        array = np.asarray(weights)
        if array.ndim != 1:
            raise DataError(
                f"weights must be one number per record (1-dimensional), got {array.ndim}-D",
                code=Reason.WEIGHTS,
                field=field,
            )
        series = pd.Series(array)
    kind = pd.api.types.infer_dtype(series, skipna=True)
    if pd.api.types.is_bool_dtype(series.dtype) or kind not in _NUMERIC_OBJECTS:
        raise DataError(
            f"weights are {kind}, not numbers; give sampling weights as positive numbers",
            code=Reason.WEIGHTS,
            field=field,
        )
    w = pd.to_numeric(series).to_numpy(dtype=np.float64, na_value=np.nan)
    if w.size != frame.shape[0]:
        raise DataError(
            f"{w.size} weight(s) for {frame.shape[0]} released records; give one sampling "
            "weight per record",
            code=Reason.WEIGHTS,
            field=field,
        )
    missing = int(np.isnan(w).sum())
    bad = int((~np.isnan(w) & ~(np.isfinite(w) & (w > 0))).sum())
    if missing or bad:
        raise DataError(
            f"weights have {missing} missing and {bad} non-positive or infinite value(s); "
            "every record needs a positive sampling weight (as weight_column: in a release)",
            code=Reason.WEIGHTS,
            field=field,
        )
    with np.errstate(over="ignore"):  # an infinite total is what is tested
        total = w.sum()
    if not np.isfinite(total):
        raise DataError(
            "weights add up to more than the largest number a float holds, so the population "
            "estimates (sums of weights) would be infinite; give them on a smaller scale",
            code=Reason.WEIGHTS,
            field=field,
        )
    return w


def individual_risk(
    released: Any, keys: Any, weights: Any = None, *, convention: Convention = "identical"
) -> pd.Series:
    """Individual re-identification risk of every released record over its ``keys``: the
    figure whose maximum is the ``max_individual_risk`` gate's (sdcMicro's ``measure_risk``,
    :func:`sdcflow.core.measures.risk.individual_risk`).

    With ``f_k`` the number of released records whose row is identical to the record's on
    every key (a missing or suppressed value is a value of its own, as the gates count),
    ``F_k``
    the sum of their sampling weights and ``p_k = f_k / F_k``, the Benedetti-Franconi
    approximation::

        r_k = p_k / (1 - p_k) * ln(1 / p_k)                               f_k = 1
        r_k = p_k / (1 - p_k) - (p_k / (1 - p_k))^2 * ln(1 / p_k)         f_k = 2
        r_k = p_k / (f_k - (1 - p_k))                                     f_k > 2

    and ``r_k = 1 / f_k`` without weights or where ``F_k <= f_k`` (the sample is the
    population there). References: Templ, Kowarik and Meindl, JSS 67(4) (2015)
    (``indivRisk``, ``method = "approx"``); Franconi and Polettini, PSD 2004, LNCS 3050.

    Parameters
    ----------
    released : DataFrame (n, d)
        The released records (as published, or as a method returns them): text, categorical,
        integer (also nullable) and float keys; NaN, None and ``pd.NA`` are missing.
    keys : column name or list of names
        The released columns an intruder could know (the spec's quasi-identifiers).
    weights : column name, Series, array (n,) or None
        Sampling weights (``weight_column:``), positive: a column of ``released``, a Series
        paired by row label when it carries the frame's labels in another order, or an array
        in the frame's row order. None: the file is the population, ``r = 1 / f``.
    convention : {"identical", "missing_matches_any"}
        How ``f_k`` counts a missing value: a value of its own (the default, as the gates),
        or matching any value (sdcMicro's ``freqCalc``, for comparison).

    Returns
    -------
    Series (n,) in (0, 1], aligned to ``released``'s index, named ``individual_risk``.
    """
    frame, summary = _key_risk(released, keys, weights, convention)
    return pd.Series(summary.risk, index=frame.index, name="individual_risk")


@dataclass(frozen=True)
class GlobalRisk:
    """The global risk of a released file (:func:`global_risk`).

    Attributes
    ----------
    expected_reidentifications : float
        ``ER = sum_i r_i`` over the records (the manifest's
        ``method_details.disclosure.risk.after.expected_reidentifications``).
    percent : float
        ``100 ER / n``, the ``max_global_risk`` gate's figure (% of records).
    records : int
        ``n``.
    """

    expected_reidentifications: float
    percent: float
    records: int


def global_risk(
    released: Any, keys: Any, weights: Any = None, *, convention: Convention = "identical"
) -> GlobalRisk:
    """Global re-identification risk: the expected number of re-identifications
    ``ER = sum_i r_i`` (sdcMicro's ``measure_risk``, Templ, Kowarik and Meindl, JSS 67(4)
    (2015)) and ``100 ER / n``, the ``max_global_risk`` gate's figure, from the individual
    risks ``r_i`` of :func:`individual_risk` (same arguments, same conventions: identical
    released rows, weights as ``weight_column:``). Computed by the gate's own
    function, so that the figures are the manifest's for the same released records."""
    _, summary = _key_risk(released, keys, weights, convention)
    return GlobalRisk(
        expected_reidentifications=summary.expected_reidentifications,
        percent=summary.global_risk_percent,
        records=int(summary.risk.size),
    )
