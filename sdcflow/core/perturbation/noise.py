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

from sdcflow.errors import DataError, ParameterError

from ._checks import as_generator, check_float_matrix, check_percent

__all__ = ["add_noise"]

_METHODS = ("additive", "correlated", "restricted")


def _column_sd(X: np.ndarray) -> np.ndarray:
    """Each column's standard deviation over its observed values (R's ``sd(x, na.rm=TRUE)``,
    divisor n - 1)."""
    observed = (~np.isnan(X)).sum(axis=0)
    if (observed < 2).any():
        j = int(np.flatnonzero(observed < 2)[0])
        raise DataError(
            f"column {j} of X has fewer than 2 observed values: its standard deviation, hence "
            "the noise, is undefined; drop the column or impute it",
            field=f"column {j}",
        )
    return np.nanstd(X, axis=0, ddof=1)


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
        The perturbed variables (a 1-D ``X`` gives shape (n, 1)); NaN where ``X`` is NaN.

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
    X = check_float_matrix(X, "X")
    n, d = X.shape
    w = noise / 100.0
    if method == "additive":
        sd = _column_sd(X)
        # x + rnorm(N, 0, noise/100 * sd(x, na.rm = TRUE)), column by column  [2]
        return X + rng.standard_normal((d, n)).T * (w * sd)
    if method == "correlated":
        if d < 2:
            raise ParameterError(
                "method 'correlated' needs at least 2 columns (as sdcMicro); use 'additive' "
                "for one column",
                field="method",
            )
        complete = X[~np.isnan(X).any(axis=1)]
        if complete.shape[0] < 2:
            raise DataError(
                "X has fewer than 2 complete records: the covariance matrix that shapes the "
                "noise is undefined; impute missing values first",
                field="X",
            )
        S = np.cov(complete, rowvar=False)  # cov(na.omit(x))
        # x + mvrnorm(N, 0, Sigma = noise/100 * S): cov(Z) = (1 + noise/100) S  [1]
        return X + rng.multivariate_normal(np.zeros(d), w * S, size=n, method="eigh")
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
    observed = ~np.isnan(X)
    # colMeans(x, na.rm = TRUE); a column with no observed value stays all NaN
    mean = np.where(observed, X, 0.0).sum(axis=0) / np.maximum(observed.sum(axis=0), 1)
    return c * X + (1.0 - c) * mean  # cc * x + (1 - cc) * colMeans(x)  [2]
