"""Top and bottom coding of a continuous variable, as sdcMicro's ``topBotCoding``."""

from __future__ import annotations

import numbers

import numpy as np

from sdcflow.errors import DataError, ParameterError

__all__ = ["top_bottom_code"]


def _threshold(value: object, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ParameterError(f"{name} must be a finite number or None", field=name)
    return float(value)


def top_bottom_code(
    x: object,
    *,
    top: float | None = None,
    bottom: float | None = None,
    replacement: float | tuple[float | None, float | None] | None = None,
) -> np.ndarray:
    """Replace the values above ``top`` and below ``bottom``, as sdcMicro's ``topBotCoding``.

    sdcMicro's ``topBotCodingWORK``: ``x[x > value] <- replacement`` (``kind = "top"``) and
    ``x[x < value] <- replacement`` (``kind = "bottom"``). Here both sides in one call.

    Parameters
    ----------
    x : array_like of numbers, any shape
        NaN marks a missing value; it stays missing.
    top : float, optional
        Values strictly greater than ``top`` are replaced.
    bottom : float, optional
        Values strictly less than ``bottom`` are replaced.
    replacement : float or (float or None, float or None), optional
        The new value: one number when only one of ``top`` and ``bottom`` is given, else the
        pair ``(bottom_replacement, top_replacement)`` (low side first, as on the number
        line). None, alone or in the pair, is the mean of the values it replaces, which keeps
        the column's total; sdcMicro has no default and needs the value.

    Returns
    -------
    coded : ndarray, float64, shape of ``x``
        A copy of ``x`` with the values beyond the thresholds replaced.

    Raises
    ------
    ParameterError
        Neither threshold given, ``bottom > top``, a non-finite threshold or replacement, one
        number as ``replacement`` with both thresholds.
    DataError
        ``x`` not numeric or with infinities.

    Examples
    --------
    >>> top_bottom_code([1.0, 5.0, 9.0, 12.0], top=8, replacement=8.0)
    array([1., 5., 8., 8.])
    >>> top_bottom_code([1.0, 5.0, 9.0, 12.0], top=8)  # the mean of 9 and 12
    array([ 1. ,  5. , 10.5, 10.5])
    """
    top = _threshold(top, "top")
    bottom = _threshold(bottom, "bottom")
    if top is None and bottom is None:
        raise ParameterError(
            "top_bottom_code needs top, bottom or both; pass the threshold(s)", field="top"
        )
    if top is not None and bottom is not None and bottom > top:
        raise ParameterError("bottom must not exceed top; swap them", field="bottom")
    if top is not None and bottom is not None:
        if replacement is None:
            replacement = (None, None)
        elif not isinstance(replacement, tuple | list) or len(replacement) != 2:
            raise ParameterError(
                "with both top and bottom, replacement is a pair (bottom_replacement, "
                "top_replacement); None in it means the mean of the values replaced",
                field="replacement",
            )
        low, high = replacement
    elif top is not None:
        low, high = None, replacement
    else:
        low, high = replacement, None
    low = _threshold(low, "replacement")
    high = _threshold(high, "replacement")
    try:
        coded = np.array(x, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as e:
        raise DataError("x must be numeric; convert it first", field="x") from e
    if np.isinf(coded).any():
        raise DataError("x has infinite values; replace them or mark them missing", field="x")
    for threshold, new, beyond in ((top, high, np.greater), (bottom, low, np.less)):
        if threshold is None:
            continue
        hit = beyond(coded, threshold)  # NaN compares False: missing stays missing
        if hit.any():
            coded[hit] = coded[hit].mean() if new is None else new  # x[x > value] <- replacement
    return coded
