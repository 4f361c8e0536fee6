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
    X: object,
    *,
    name: str = "X",
    columns: Sequence[str] | None = None,
    min_rows: int = 1,
    field: str | None = None,
) -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 array of shape (n, d), or raise ``DataError``.

    Rejects non-numeric data, missing values (NaN) and infinities, naming the offending column
    when ``columns`` is given (never the offending value: values may be confidential). The
    error's ``field`` is the offending column (its name, or ``column j``) for missing values,
    else ``field`` (default ``name``): the caller's argument.
    """
    field = name if field is None else field
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DataError(
            f"{name} must be numeric; convert or drop non-numeric columns before masking",
            field=field,
        ) from e
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(
            f"{name} must be 2-dimensional (n records, d variables), got {arr.ndim}-D", field=field
        )
    if arr.shape[1] == 0:
        raise DataError(f"{name} has no columns; name at least one quasi-identifier", field=field)
    if arr.shape[0] < min_rows:
        raise DataError(
            f"{name} has {arr.shape[0]} rows; at least {min_rows} are needed",
            code=Reason.TOO_FEW_RECORDS,
            field=field,
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
            field=str(label),
        )
    return np.ascontiguousarray(arr)


def check_magnitude(
    X: np.ndarray,
    limit: float,
    *,
    columns: Sequence[str] | None = None,
    what: str = "this computation",
) -> None:
    """Refuse values beyond ``limit`` in magnitude (``DataError``, reason ``VALUES_RANGE``),
    for computations that square or multiply the values themselves and cannot rescale.

    The message names the column and the limit, never a value.
    """
    if X.size == 0:
        return
    big = np.abs(X).max(axis=0) > limit
    if big.any():
        j = int(np.flatnonzero(big)[0])
        label = columns[j] if columns is not None else f"column {j}"
        raise DataError(
            f"{label!s} has values beyond {limit:.3g} in magnitude, where {what} would "
            "overflow; express the column in larger units (thousands, millions) before release",
            code=Reason.VALUES_RANGE,
            field=str(label),
        )


def lost_resolution(X: np.ndarray) -> np.ndarray:
    """Columns (d,) bool whose ordinary values a computation in standardized units cannot keep
    apart: those whose rounding there, ``4 eps (|mean| + sd)``, passes a thousandth of their
    typical spread (the mean distance from the median of the 95 % of values nearest it, at
    least 1e-9 of the median, so that float noise around one value is that value). Back
    from standardized units, ``x = mean + sd z``, every value carries the rounding of the
    column's mean and standard deviation, which a few absurd values set (a turnover of 1e40
    among thousands left every other record's turnover at about 1e25). Constant columns
    keep theirs; missing values (NaN) are left out. Shapes: X (n, d).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ParameterError(f"X must be 2-D (n, d), got shape {X.shape}")
    if np.isnan(X).any():
        return np.array([bool(lost_resolution(c[~np.isnan(c), None])[0]) for c in X.T], bool)
    if X.shape[0] == 0:
        return np.zeros(X.shape[1], dtype=bool)
    med = np.median(X, axis=0)
    dev = np.abs(X - med)
    # the typical spread: the mean distance from the median of the 95 % of values nearest
    # it (a few absurd values are what is tested, not what is measured by), and at least
    # 1e-9 of the median (0.3 computed as 3 * 0.1, or a fee of 0.3 as (net + 0.3) - net,
    # are one value)
    kept = max(1, int(0.95 * X.shape[0]))
    nearest = np.partition(dev, kept - 1, axis=0)[:kept]
    spread = np.maximum(nearest.mean(axis=0), 1e-9 * np.abs(med))
    # nearly all at one value: the nearest other value is the spread (inf when constant)
    flat = spread == 0
    spread[flat] = np.where(dev[:, flat] > 0, dev[:, flat], np.inf).min(axis=0, initial=np.inf)
    # the mean and sd of the values over their largest magnitude: no overflow at 1e308; an
    # infinite value keeps nothing apart
    top = np.abs(X).max(axis=0)
    unit = np.where((top > 0) & np.isfinite(top), top, 1.0)
    with np.errstate(invalid="ignore"):
        shift_and_scale = (np.abs((X / unit).mean(axis=0)) + (X / unit).std(axis=0)) * unit
    rounding = 4 * np.finfo(np.float64).eps * np.where(np.isfinite(top), shift_and_scale, np.inf)
    return rounding > 1e-3 * spread


def check_resolution(
    X: np.ndarray, columns: Sequence[str] | None = None, *, what: str = "this computation"
) -> None:
    """Refuse (:func:`resolution_error`) a column whose ordinary values ``what``, working in
    standardized units, would lose to rounding (:func:`lost_resolution`). Shapes: X (n, d).
    """
    lost = lost_resolution(X)
    if lost.any():
        j = int(np.flatnonzero(lost)[0])
        label = columns[j] if columns is not None else f"column {j}"
        raise resolution_error(
            str(label), what, advice="or mask with mdav, which averages in the column's own units"
        )


def resolution_error(label: str, what: str, *, advice: str = "") -> DataError:
    """The refusal (``DataError``, reason ``VALUES_RANGE``) of a column ``label`` whose
    ordinary values ``what``, working in standardized units, would lose to rounding: it
    names the column, never a value, and ends with ``advice`` after "correct or drop those
    records"."""
    return DataError(
        f"{label} has values so far from its others that {what}, which works in "
        "standardized units, would lose the others to rounding (a wrong value, or one in "
        f"another unit?); correct or drop those records{', ' + advice if advice else ''}",
        code=Reason.VALUES_RANGE,
        field=label,
    )


def check_pair(
    X: object, X_masked: object, fields: tuple[str, str] = ("X", "X_masked")
) -> tuple[np.ndarray, np.ndarray]:
    """Validate an original file and its masked version: same shape, numeric, finite.

    ``fields`` are the caller's names of the two arguments (the errors' ``field``).

    Shapes: X (n, d), X_masked (n, d) -> both as float64 arrays.
    """
    X = check_matrix(X, name="original", field=fields[0])
    Xm = check_matrix(X_masked, name="masked", field=fields[1])
    if X.shape != Xm.shape:
        raise DataError(
            f"original {X.shape} and masked {Xm.shape} must have the same shape "
            "(same records in the same order, same variables)",
            field=fields[1],
        )
    return X, Xm


def check_k(k: object, n: int, *, name: str = "k") -> int:
    """Validate a minimum group size ``k`` for ``n`` records: an integer with 2 <= k <= n."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise ParameterError(f"{name} must be an integer >= 2, got {k!r}", field=name)
    k = int(k)
    if k < 2:
        raise ParameterError(f"{name} must be >= 2 (k = 1 protects nothing), got {k}", field=name)
    if k > n:
        raise ParameterError(
            f"{name} = {k} is larger than the number of records ({n}); lower {name} or add records",
            code=Reason.TOO_FEW_RECORDS,
            field=name,
        )
    return k


def check_cell_size(cell_size: object, k: int) -> int:
    """Validate the ``cell_size`` of a fit within spatial cells: an integer >= 2k, so that
    every cell of the recursive median cuts (at least half of ``cell_size`` records) holds
    at least k records."""
    if isinstance(cell_size, bool) or not isinstance(cell_size, Integral):
        raise ParameterError(
            f"cell_size must be an integer >= 2k, got {cell_size!r}", field="cell_size"
        )
    if cell_size < 2 * k:
        raise ParameterError(
            f"cell_size = {cell_size} is below 2k = {2 * k}: a cell could hold fewer than k "
            "records; raise cell_size (thousands of records is typical)",
            field="cell_size",
        )
    return int(cell_size)


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
        f"random_state must be None, an int or a numpy.random.Generator, got {seed!r}",
        field="random_state",
    )


def pow2_exponents(A: np.ndarray, axis: int | None = 0) -> np.ndarray:
    """Exponents ``e`` with ``max |A| * 2**-e`` in [0.5, 1) along ``axis`` (0 where all zero).

    Multiplying by ``2**-e`` (``np.ldexp(A, -e)``) is exact, so sums, means and variances of
    the rescaled values, rescaled back, are bit for bit those of the plain computation
    whenever it neither overflows nor underflows, and finite when it would overflow [1]_.

    Shapes: A (n, d), axis 0 -> (d,) int; axis None -> scalar.

    References
    ----------
    .. [1] N.J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM,
       Philadelphia, 2002, Sec. 2.1 and 27.8 (scaling by powers of the base is exact;
       avoiding overflow by scaling).
    """
    biggest = np.max(np.abs(A), axis=axis) if np.size(A) else np.zeros(())
    _, e = np.frexp(biggest)  # [1] Sec. 2.1: biggest = f 2**e, f in [0.5, 1)
    return e


def safe_mean(values: np.ndarray) -> float:
    """The mean of a 1-D array of finite values, computed on the power-of-two scale of
    :func:`pow2_exponents` so that it is finite whenever the values are (bit for bit
    ``values.mean()`` when that does not overflow). Shapes: (m,) with m >= 1 -> float."""
    e = pow2_exponents(values, axis=None)
    return float(np.ldexp(np.ldexp(values, -e).mean(), e))


def standardize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardize columns to zero mean and unit *population* variance (ddof = 0).

    Returns ``(Z, mean, scale)`` with ``X = Z * scale + mean`` (:func:`destandardize`).
    Constant columns get scale 1 (they carry no information and would otherwise divide by
    zero).

    Every finite input gives finite output: each column is first rescaled by an exact power
    of two (:func:`pow2_exponents`) so that its largest magnitude lies in [0.5, 1), its mean
    and deviation are computed there and scaled back; ``Z`` is the same on either scale. The
    results are bit for bit those of ``(X - X.mean(0)) / X.std(0)`` whenever that computation
    neither overflows nor underflows; for columns near the float limits (1e308, or 1e-308)
    where it overflows to infinity or loses the values to underflow, they stay finite and
    exact to rounding. The returned ``mean`` and ``scale`` are finite: ``|mean| <= max |x|``
    and ``scale <= max |x|`` (a population variance of values in [-M, M] is at most M^2).

    Shapes: X (n, d) -> Z (n, d), mean (d,), scale (d,).
    """
    e = pow2_exponents(X, axis=0)
    Xs = np.ldexp(X, -e)  # [1] of pow2_exponents: exact
    ms = Xs.mean(axis=0)
    ss = Xs.std(axis=0)
    varying = ss > 0
    Z = (Xs - ms) / np.where(varying, ss, 1.0)
    mean = np.ldexp(ms, e)
    scale = np.where(varying, np.ldexp(ss, e), 1.0)
    return Z, mean, scale


def rescale_pair(X: np.ndarray, X_masked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both files multiplied, column by column, by the same exact power of two that puts the
    column's largest magnitude (over both files) in [0.5, 1).

    For measures that do not change when a column is multiplied by a positive constant (IL on
    standardized data, relative and standardized generic losses, PIL, distances on
    standardized data), computing on the rescaled files gives the same figure bit for bit when
    the plain computation neither overflows nor underflows, and a finite one where it would
    overflow (sums of values near 1e308, fourth powers of values beyond 1e77).

    Shapes: X (n, d), X_masked (n, d) -> (n, d), (n, d).
    """
    e = np.maximum(pow2_exponents(X, axis=0), pow2_exponents(X_masked, axis=0))
    return np.ldexp(X, -e), np.ldexp(X_masked, -e)


def standardize_pair(X: np.ndarray, X_masked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both files standardized with the *original* mean and population sd (constant columns:
    scale 1), overflow-safe as :func:`standardize`.

    Shapes: X (n, d), X_masked (n, d) -> (n, d), (n, d).
    """
    Xs, Xms = rescale_pair(X, X_masked)
    mean = Xs.mean(axis=0)
    scale = Xs.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return (Xs - mean) / scale, (Xms - mean) / scale


def standardize_with(X: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``(X - mean) / scale`` for other records on the scale :func:`standardize` found,
    computed on a power-of-two scale per column so that the difference cannot overflow.

    Shapes: X (m, d) or (d,), mean (d,), scale (d,) -> like X.
    """
    mean = np.asarray(mean, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    rows = X.reshape(-1, mean.size)
    e = pow2_exponents(np.vstack([rows, mean, scale]), axis=0)
    return (np.ldexp(X, -e) - np.ldexp(mean, -e)) / np.ldexp(scale, -e)


def destandardize(Z: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``Z * scale + mean`` (the inverse of :func:`standardize`), computed on a power-of-two
    scale per column so that it overflows only when the result itself does.

    Shapes: Z (n, d) or (d,), mean (d,), scale (d,) -> like Z.
    """
    mean = np.asarray(mean, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    e = pow2_exponents(np.vstack([mean, scale]), axis=0)
    return np.ldexp(np.ldexp(mean, -e) + np.ldexp(scale, -e) * Z, e)
