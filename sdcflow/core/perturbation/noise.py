"""Noise addition to continuous variables, as sdcMicro's ``addNoise`` (sdcMicro 5.8.1,
``addNoiseWORK``): methods ``additive``, ``correlated`` and ``restr`` (here ``restricted``).

References
----------
.. [1] Brand, R. (2002). Microdata protection through noise addition. In Inference Control in
   Statistical Databases, LNCS 2316, 97-116. Springer.
.. [2] Templ, M. (2017). Statistical Disclosure Control for Microdata: Methods and Applications
   in R. Springer.
"""

from __future__ import annotations

import numpy as np

from sdcflow.core.jit import cached_njit
from sdcflow.errors import DataError, ParameterError

from ._checks import as_generator, check_percent

__all__ = ["add_noise"]

_METHODS = ("additive", "correlated", "restricted")


def _as_matrix(X: object) -> np.ndarray:
    """``X`` as a float64 (n, d) array, without a copy when it is one already (``add_noise``
    writes its result to a new array and never to ``X``)."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DataError(
            "X must be numeric; convert or drop non-numeric columns first", field="X"
        ) from e
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(
            f"X must be 1- or 2-dimensional (n records, d variables), got {arr.ndim}-D",
            field="X",
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError("X is empty; pass at least one record and one column", field="X")
    return arr


@cached_njit(nogil=True)
def _column_moments(X: np.ndarray, centred: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """One validating pass over X (n, d), row by row, and a centred one when ``centred``.

    Returns each column's observed count (d,), mean (d,) and sum of squared deviations
    (d,; zeros unless ``centred``) over its non-NaN values, and the first column holding an
    infinity (-1: none).
    """
    n, d = X.shape
    count = np.zeros(d, np.int64)
    total = np.zeros(d)
    bad = -1
    for i in range(n):
        for j in range(d):
            v = X[i, j]
            if v == v:  # not NaN
                if np.isinf(v):
                    if bad < 0 or j < bad:
                        bad = j
                    continue
                count[j] += 1
                total[j] += v
    mean = np.zeros(d)
    m2 = np.zeros(d)
    if bad >= 0:
        return count, mean, m2, bad
    for j in range(d):
        if count[j] > 0:
            mean[j] = total[j] / count[j]
    if not centred:
        return count, mean, m2, bad
    for i in range(n):  # centred: no cancellation of large means
        for j in range(d):
            v = X[i, j]
            if v == v:
                m2[j] += (v - mean[j]) * (v - mean[j])
    return count, mean, m2, bad


@cached_njit(nogil=True)
def _add_scaled_columns(X: np.ndarray, E: np.ndarray, scale: np.ndarray) -> None:
    """``E[j, i] = X[i, j] + E[j, i] * scale[j]`` in place, E (d, n): NaN in X stays NaN."""
    n, d = X.shape
    for j in range(d):
        s = scale[j]
        for i in range(n):
            E[j, i] = X[i, j] + E[j, i] * s


@cached_njit(nogil=True)
def _add_mixed_rows(X: np.ndarray, E: np.ndarray, F: np.ndarray) -> None:
    """``E[i] = X[i] + F @ E[i]`` in place, E (n, d) standard normals, F (d, d): each
    record's noise is F times its own d draws."""
    n, d = X.shape
    e = np.empty(d)
    for i in range(n):
        for a in range(d):
            e[a] = E[i, a]
        for a in range(d):
            acc = 0.0
            for b in range(d):
                acc += F[a, b] * e[b]
            E[i, a] = X[i, a] + acc


@cached_njit(nogil=True)
def _shrink_columns(X: np.ndarray, c: float, shift: np.ndarray) -> np.ndarray:
    """``c * X[i, j] + shift[j]``, (n, d) in X's row order."""
    n, d = X.shape
    Z = np.empty((n, d))
    for i in range(n):
        for j in range(d):
            Z[i, j] = c * X[i, j] + shift[j]
    return Z


@cached_njit(nogil=True)
def _complete_row(X: np.ndarray, i: int) -> bool:
    """Whether record ``i`` of ``X`` (n, d) has no NaN (NaN is the one value unequal to
    itself)."""
    for j in range(X.shape[1]):
        if X[i, j] != X[i, j]:
            return False
    return True


@cached_njit(nogil=True)
def _complete_covariance(X: np.ndarray) -> tuple[np.ndarray, int]:
    """Covariance (d, d), divisor r - 1, of the r records with no NaN (R's
    ``cov(na.omit(x))``), centred on their means; returns (S, r)."""
    n, d = X.shape
    mean = np.zeros(d)
    r = 0
    for i in range(n):
        if _complete_row(X, i):
            r += 1
            for j in range(d):
                mean[j] += X[i, j]
    S = np.zeros((d, d))
    if r < 2:
        return S, r
    mean /= r
    for i in range(n):
        if _complete_row(X, i):
            for a in range(d):
                da = X[i, a] - mean[a]
                for b in range(a + 1):
                    S[a, b] += da * (X[i, b] - mean[b])
    for a in range(d):
        for b in range(a + 1):
            S[a, b] /= r - 1
            S[b, a] = S[a, b]
    return S, r


def _moments(X: np.ndarray, centred: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed counts, means and (when ``centred``) squared deviations of X's columns;
    DataError for an infinity."""
    count, mean, m2, bad = _column_moments(X, centred)
    if bad >= 0:
        raise DataError(
            f"X has infinite values in column {bad}; replace them or mark them missing (NaN)",
            field=f"column {bad}",
        )
    return count, mean, m2


def _column_sd(count: np.ndarray, m2: np.ndarray) -> np.ndarray:
    """Each column's standard deviation over its observed values (R's ``sd(x, na.rm=TRUE)``,
    divisor n - 1)."""
    if (count < 2).any():
        j = int(np.flatnonzero(count < 2)[0])
        raise DataError(
            f"column {j} of X has fewer than 2 observed values: its standard deviation, hence "
            "the noise, is undefined; drop the column or impute it",
            field=f"column {j}",
        )
    return np.sqrt(m2 / (count - 1))


def add_noise(
    X: object,
    *,
    method: str = "additive",
    noise: float = 150.0,
    rng: int | np.random.Generator,
) -> np.ndarray:
    """Add noise to continuous variables, as sdcMicro's ``addNoise``.

    Parameters
    ----------
    X : array_like of shape (n, d) or (n,)
        The variables, one per column. NaN marks a missing value; it stays missing.
    method : {"additive", "correlated", "restricted"}, default "additive"
        ``"additive"``: independent noise per column,
        ``z_ij = x_ij + e_ij``, ``e_ij ~ N(0, (noise/100 * s_j)^2)`` with ``s_j`` the column's
        standard deviation [2]_.
        ``"correlated"``: ``z_i = x_i + e_i``, ``e_i ~ N_d(0, noise/100 * S)`` with ``S`` the
        covariance matrix of the complete records, so that
        ``cov(Z) ~ (1 + noise/100) S`` and correlations are kept [1]_ (needs d >= 2).
        ``"restricted"`` (sdcMicro's ``"restr"``): ``z_ij = c x_ij + (1 - c) m_j`` with
        ``m_j`` the column's mean and ``c = sqrt((n - 1 - w) / ((n + 1)(1 + w)))`` when
        n < 500, else ``c = sqrt((n - 1) / (n + n w - 1))``, ``w = noise/100``, ``n`` counting
        every record as sdcMicro does. As in sdcMicro, this adds *no* random noise: it is only the
        deterministic linear step of a restricted-noise method, without the noise, so
        ``cov(Z) = c^2 S`` exactly; ``rng`` draws nothing. sdcMicro 5.8.1 adds the vector of
        column means ``(1 - c) m`` to the matrix by R's recycling, down the rows, so with
        several columns and an odd n it mixes the columns' means; here each column gets its
        own mean (identical to sdcMicro called on one column at a time).
    noise : float >= 0, default 150
        The amount of noise in percent (sdcMicro's ``noise``).
    rng : int or numpy.random.Generator
        ``"additive"`` draws an (n, d) standard-normal matrix, column after column;
        ``"correlated"`` one multivariate-normal draw per record.

    Returns
    -------
    Z : ndarray of shape (n, d), float64
        The perturbed variables (a 1-D ``X`` gives shape (n, 1)); NaN where ``X`` is NaN. A
        new array (``X`` is never written to); column-major for ``"additive"``, whose noise
        is drawn column after column.

    Raises
    ------
    DataError
        ``X`` not numeric, with infinities, a column with fewer than 2 observed values, fewer
        than 2 complete records for ``"correlated"``.
    ParameterError
        Unknown ``method``, negative ``noise``, ``"correlated"`` with one column,
        ``"restricted"`` with n < 500 and ``noise/100 > n - 1`` (``c`` undefined).

    Notes
    -----
    sdcMicro's other methods (``additive0``, ``correlated2``, ``ROMM``, ``outdect``) are not
    implemented.

    References
    ----------
    .. [1] Brand (2002), Microdata protection through noise addition, LNCS 2316.
    .. [2] sdcMicro 5.8.1, ``addNoise`` / ``addNoiseWORK``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> add_noise(X, method="correlated", noise=50, rng=1).shape
    (1000, 2)
    """
    if method not in _METHODS:
        raise ParameterError(
            f"method must be one of {', '.join(_METHODS)}; got an unknown method",
            field="method",
        )
    noise = check_percent(noise, "noise", upper=None)
    rng = as_generator(rng)
    X = _as_matrix(X)
    n, d = X.shape
    w = noise / 100.0
    # one pass validates (and sums); additive noise needs a second, centred, for the sd
    count, mean, m2 = _moments(X, centred=method == "additive")
    if method == "additive":
        sd = _column_sd(count, m2)
        # x + rnorm(N, 0, noise/100 * sd(x, na.rm = TRUE)), column by column  [2]: the
        # (d, n) draw is filled in place and returned transposed (an F-ordered (n, d) array)
        E = np.empty((d, n))
        rng.standard_normal(out=E)
        _add_scaled_columns(X, E, w * sd)
        return E.T
    if method == "correlated":
        if d < 2:
            raise ParameterError(
                "method 'correlated' needs at least 2 columns (as sdcMicro); use 'additive' "
                "for one column",
                field="method",
            )
        S, complete = _complete_covariance(X)  # cov(na.omit(x))
        if complete < 2:
            raise DataError(
                "X has fewer than 2 complete records: the covariance matrix that shapes the "
                "noise is undefined; impute missing values first",
                field="X",
            )
        # x + mvrnorm(N, 0, Sigma = noise/100 * S): cov(Z) = (1 + noise/100) S  [1]; the
        # draw and the factor are numpy's multivariate_normal(method="eigh"), so a seed
        # gives its noise up to rounding: e_i = u sqrt(|s|) z_i with w S = u diag(s) u'
        s, u = np.linalg.eigh(w * S)
        E = np.empty((n, d))
        rng.standard_normal(out=E)
        _add_mixed_rows(X, E, u * np.sqrt(np.abs(s)))
        return E
    # restricted ("restr")
    if n < 500:
        if w > n - 1:
            raise ParameterError(
                "method 'restricted' with fewer than 500 records needs noise/100 <= n - 1; "
                "lower noise",
                field="noise",
            )
        c = np.sqrt((n - 1 - w) / ((n + 1) * (1 + w)))
    else:
        c = np.sqrt((n - 1) / (n + n * w - 1))
    # colMeans(x, na.rm = TRUE) (a column with no observed value stays all NaN);
    # cc * x + (1 - cc) * colMeans(x)  [2]
    return _shrink_columns(X, c, (1.0 - c) * mean)
