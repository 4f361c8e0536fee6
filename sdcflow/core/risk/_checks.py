"""Input checks shared by the risk measures: messages name the argument and the fix."""

from __future__ import annotations

import numpy as np

from sdcflow.errors import DataError, ParameterError


def as_2d(x: object, name: str, *, dtype: type = float) -> np.ndarray:
    """``x`` as a 2-D array of ``dtype`` (a 1-D array is one column); DataError otherwise."""
    a = np.asarray(x)
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.bool_)
    ):
        raise DataError(
            f"{name} must be numeric; code categories as integers first "
            f"(np.unique(column, return_inverse=True))",
            field=name,
        )
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise DataError(f"{name} must be 2-D (records x columns), not {a.ndim}-D", field=name)
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise DataError(f"{name} is empty: it needs at least one record and one column", field=name)
    return a.astype(dtype, copy=False)


def as_1d(x: object, name: str, n: int) -> np.ndarray:
    """``x`` as a 1-D array of length ``n`` (labels of any hashable numeric or string type)."""
    a = np.asarray(x)
    if a.ndim != 1 or a.shape[0] != n:
        raise DataError(
            f"{name} must be 1-D with one entry per record ({n}), not of shape {a.shape}",
            field=name,
        )
    return a


def finite(a: np.ndarray, name: str) -> np.ndarray:
    """Refuse NaN or infinite values."""
    if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
        raise DataError(
            f"{name} holds NaN or infinite values; impute or drop those records first",
            field=name,
        )
    return a


def in_range(value: float, name: str, low: float, high: float, *, closed: str = "both") -> float:
    """Refuse a scalar outside [low, high] (or an open end, ``closed`` in both/left/right/none)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number", field=name) from None
    lo_ok = v >= low if closed in ("both", "left") else v > low
    hi_ok = v <= high if closed in ("both", "right") else v < high
    if not (np.isfinite(v) and lo_ok and hi_ok):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise ParameterError(f"{name} must lie in {lb}{low}, {high}{rb}", field=name)
    return v


def group_codes(labels: np.ndarray, name: str) -> tuple[np.ndarray, int]:
    """Dense codes 0..G-1 of group labels (any sortable dtype) and G."""
    if labels.dtype.kind == "f" and np.isnan(labels).any():
        raise DataError(f"{name} holds NaN; give every record a group label", field=name)
    try:
        uniq, inv = np.unique(labels, return_inverse=True)
    except TypeError:
        raise DataError(f"{name} must hold labels of one sortable type", field=name) from None
    return inv.reshape(-1).astype(np.intp), uniq.shape[0]
