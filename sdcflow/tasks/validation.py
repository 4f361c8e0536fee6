"""Input checks shared by the numerical core (the public boundary of every method).

Modelled on scikit-learn's ``check_array`` / ``check_random_state``: validate once at the public
function, then pass plain float arrays and a ``numpy.random.Generator`` to private kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np

from sdcflow.errors import DataError, ParameterError, Reason


def check_matrix(
    X: object, *, name: str = "X", columns: Sequence[str] | None = None, min_rows: int = 1
) -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 array of shape (n, d), or raise ``DataError``.

    Rejects non-numeric data, missing values (NaN) and infinities, naming the offending column
    when ``columns`` is given (never the offending value: values may be confidential).
    """
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DataError(
            f"{name} must be numeric; convert or drop non-numeric columns before masking"
        ) from e
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(f"{name} must be 2-dimensional (n records, d variables), got {arr.ndim}-D")
    if arr.shape[1] == 0:
        raise DataError(f"{name} has no columns; name at least one quasi-identifier")
    if arr.shape[0] < min_rows:
        raise DataError(
            f"{name} has {arr.shape[0]} rows; at least {min_rows} are needed",
            code=Reason.TOO_FEW_RECORDS,
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        col = int(np.flatnonzero(bad.any(axis=0))[0])
        label = columns[col] if columns is not None else f"column {col}"
        count = int(bad[:, col].sum())
        raise DataError(
            f"{name}: {label!s} has {count} missing or infinite value(s); drop those records "
            "or declare the missing-value tokens before masking",
            code=Reason.VALUES_NONFINITE,
        )
    return np.ascontiguousarray(arr)


def check_pair(X: object, X_masked: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate an original file and its masked version: same shape, numeric, finite.

    Shapes: X (n, d), X_masked (n, d) -> both as float64 arrays.
    """
    X = check_matrix(X, name="original")
    Xm = check_matrix(X_masked, name="masked")
    if X.shape != Xm.shape:
        raise DataError(
            f"original {X.shape} and masked {Xm.shape} must have the same shape "
            "(same records in the same order, same variables)"
        )
    return X, Xm


def check_k(k: object, n: int, *, name: str = "k") -> int:
    """Validate a minimum group size ``k`` for ``n`` records: an integer with 2 <= k <= n."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise ParameterError(f"{name} must be an integer >= 2, got {k!r}")
    k = int(k)
    if k < 2:
        raise ParameterError(f"{name} must be >= 2 (k = 1 protects nothing), got {k}")
    if k > n:
        raise ParameterError(
            f"{name} = {k} is larger than the number of records ({n}); lower {name} or add records",
            code=Reason.TOO_FEW_RECORDS,
        )
    return k


def check_random_state(seed: int | np.random.Generator | None) -> np.random.Generator:
    """Turn ``seed`` into a ``numpy.random.Generator``.

    ``None`` draws fresh entropy from the OS (production runs); an int gives a reproducible
    generator (tests); a Generator is passed through unchanged.
    """
    if seed is None or isinstance(seed, (Integral, np.integer)):
        return np.random.default_rng(None if seed is None else int(seed))
    if isinstance(seed, np.random.Generator):
        return seed
    raise ParameterError(
        f"random_state must be None, an int or a numpy.random.Generator, got {seed!r}"
    )


def standardize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardize columns to zero mean and unit *population* variance (ddof = 0).

    Returns ``(Z, mean, scale)`` with ``X = Z * scale + mean``. Constant columns get scale 1
    (they carry no information and would otherwise divide by zero).

    Shapes: X (n, d) -> Z (n, d), mean (d,), scale (d,).
    """
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return (X - mean) / scale, mean, scale
