"""Argument checks shared by the perturbative methods: the random generator, matrices,
percentages. Messages name the argument and the fix, never a data value."""

from __future__ import annotations

import numbers

import numpy as np

from sdcflow.errors import DataError, ParameterError

__all__ = ["as_generator", "check_float_matrix", "check_fraction", "check_percent"]


def as_generator(rng: object) -> np.random.Generator:
    """Return ``rng`` as a :class:`numpy.random.Generator`.

    Parameters
    ----------
    rng : int, numpy.random.Generator or numpy.random.SeedSequence
        A seed (a non-negative int) or a generator, which is returned as is (its state advances
        with each draw, as the caller expects when it passes one generator to several calls).

    Raises
    ------
    ParameterError
        For None, a float, a legacy ``RandomState`` or anything else: a perturbation must be
        reproducible, so the generator is always explicit.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ParameterError(
                "rng must be a non-negative integer seed or a numpy.random.Generator; "
                "pass e.g. rng=0 or rng=numpy.random.default_rng(0)",
                field="rng",
            )
        return np.random.default_rng(int(rng))
    raise ParameterError(
        "rng must be an integer seed or a numpy.random.Generator (a perturbation is random and "
        "must be reproducible); pass e.g. rng=0 or rng=numpy.random.default_rng(0)",
        field="rng",
    )


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a real number", field=name)
    value = float(value)
    if not np.isfinite(value):
        raise ParameterError(f"{name} must be finite", field=name)
    return value


def check_fraction(value: object, name: str) -> float:
    """``value`` as a float in [0, 1], or ParameterError."""
    value = _real(value, name)
    if not 0.0 <= value <= 1.0:
        raise ParameterError(f"{name} must lie in [0, 1]; pass a probability", field=name)
    return value


def check_percent(value: object, name: str, *, upper: float | None = 100.0) -> float:
    """``value`` as a float in [0, upper] (no upper bound when ``upper`` is None)."""
    value = _real(value, name)
    if value < 0.0 or (upper is not None and value > upper):
        span = "[0, 100]" if upper == 100.0 else ">= 0" if upper is None else f"[0, {upper}]"
        raise ParameterError(f"{name} is a percentage and must be {span}", field=name)
    return value


def check_float_matrix(X: object, name: str = "X", *, allow_nan: bool = True) -> np.ndarray:
    """Return ``X`` as a float64 array of shape (n, d), a copy the caller may write to.

    A 1-D array is one column. NaN marks a missing value (refused when ``allow_nan`` is
    False); infinities are always refused.
    """
    try:
        arr = np.array(X, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as e:
        raise DataError(
            f"{name} must be numeric; convert or drop non-numeric columns first", field=name
        ) from e
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(
            f"{name} must be 1- or 2-dimensional (n records, d variables), got {arr.ndim}-D",
            field=name,
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(f"{name} is empty; pass at least one record and one column", field=name)
    if np.isinf(arr).any():
        j = int(np.flatnonzero(np.isinf(arr).any(axis=0))[0])
        raise DataError(
            f"{name} has infinite values in column {j}; replace them or mark them missing (NaN)",
            field=f"column {j}",
        )
    if not allow_nan and np.isnan(arr).any():
        j = int(np.flatnonzero(np.isnan(arr).any(axis=0))[0])
        raise DataError(
            f"{name} has missing values (NaN) in column {j}; impute or drop those records first",
            field=f"column {j}",
        )
    return arr
