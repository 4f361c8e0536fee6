"""Data shuffling (Muralidhar and Sarathy 2006), as sdcMicro's ``shuffle(method = "ds")``.

The confidential variables ``Y`` (n x p) are replaced by their own values, reordered: a
perturbed copy ``Y*`` is drawn from the conditional distribution of ``Y`` given the
non-confidential variables ``S`` (n x q) under a normal copula, and each column of ``Y`` is
given back in the rank order of ``Y*`` (the record with the j-th smallest ``Y*`` gets the
j-th smallest ``Y``). Each released column is a permutation of the original one, so its
marginal distribution is kept exactly; rank correlations with ``S`` and among ``Y`` are kept
in expectation. sdcMicro 5.8.1's ``shuffleWORK``, ``method = "ds"``, step by step:

1. normal scores of every column: ``qnorm((rank - 0.5) / n)``, ties at their average rank;
2. the product-moment correlation of the scores from Spearman's rho of the data,
   ``rho* = 2 sin(pi rho / 6)`` (the normal copula's relation between the two, [1]);
3. the conditional mean ``Y*_1 = S_n (R_YS R_SS^-1)^T`` and covariance
   ``Sigma = R_YY - R_YS R_SS^-1 R_SY`` (the conditional normal of [1]);
4. ``Y* = Y*_1 + e``, ``e ~ N(0, Sigma)``;
5. ``reverseMap``: ``Y`` reordered by the ranks of ``Y*`` ([1]).

Without ``S`` the conditional distribution is the copula itself (``Y*_1 = 0``,
``Sigma = R_YY``): the released values keep the marginals and, in expectation, the rank
correlations among ``Y``, and are independent of the record they land on.

The paper is not among the project's papers: the steps are cited from sdcMicro's code,
which the tests compare figure by figure, not from the paper's equation numbers.

References
----------
.. [1] Muralidhar, K. and Sarathy, R. (2006). Data shuffling: a new masking approach for
   numerical data. Management Science 52(5), 658-670, doi:10.1287/mnsc.1050.0503.
.. [2] Templ, M., Kowarik, A. and Meindl, B. (2015). Statistical disclosure control for
   micro-data using the R package sdcMicro. Journal of Statistical Software 67(4)
   (``shuffle``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from sdcflow.errors import DataError

from ._checks import as_generator, check_float_matrix

__all__ = ["average_ranks", "ds_conditional", "normal_scores", "reverse_map", "shuffle"]


def average_ranks(M: np.ndarray) -> np.ndarray:
    """The 1-based ranks of every column, ties at their average rank (R's ``rank``, SciPy's
    ``rankdata(method="average")``); one unstable sort per column, which average ranks do not
    depend on.

    Shapes: (n, d) -> (n, d), float64.
    """
    n, d = M.shape
    ranks = np.empty((n, d))
    new = np.empty(n, dtype=bool)
    new[0] = True
    for j in range(d):
        order = np.argsort(M[:, j])
        ordered = M[order, j]
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], n) - 1
        ranks[order, j] = ((starts + ends) / 2.0 + 1.0)[np.cumsum(new) - 1]
    return ranks


def _scores(ranks: np.ndarray) -> np.ndarray:
    """``qnorm((rank - 0.5) / n)`` of ranks of shape (n, d)."""
    return ndtri((ranks - 0.5) / ranks.shape[0])


def normal_scores(X: np.ndarray) -> np.ndarray:
    """``qnorm((rank - 0.5) / n)`` of every column, ties at their average rank (step 1).

    Shapes: (n, d) -> (n, d).
    """
    return _scores(average_ranks(X))


def _copula_correlation(ranks: np.ndarray) -> np.ndarray:
    """``2 sin(pi rho / 6)`` of Spearman's rho between the columns whose ``ranks`` are given
    (step 2; [1]). Shapes: (n, d) -> (d, d)."""
    rho = np.atleast_2d(np.corrcoef(ranks, rowvar=False))  # Spearman: Pearson of the ranks
    return 2.0 * np.sin(np.pi * rho / 6.0)


def ds_conditional(Y: np.ndarray, S: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The deterministic part of data shuffling: the conditional mean of the normal scores of
    ``Y`` given ``S`` and its covariance (steps 1-3).

    Parameters
    ----------
    Y : ndarray, shape (n, p)
        Confidential variables, no missing values.
    S : ndarray, shape (n, q), or None
        Non-confidential variables (predictors); None: none.

    Returns
    -------
    mean : ndarray, shape (n, p)
        ``S_n (R_YS R_SS^-1)^T`` (step 3); zeros without ``S``.
    sigma : ndarray, shape (p, p)
        ``R_YY - R_YS R_SS^-1 R_SY`` (step 3); ``R_YY`` without ``S``.
    """
    n, p = Y.shape
    if S is None or S.shape[1] == 0:
        return np.zeros((n, p)), _copula_correlation(average_ranks(Y))
    ranks = average_ranks(np.hstack([Y, S]))  # S's ranks serve its normal scores too
    R = _copula_correlation(ranks)
    r_yy, r_ys, r_ss = R[:p, :p], R[:p, p:], R[p:, p:]
    try:
        beta = np.linalg.solve(r_ss, r_ys.T).T  # R_YS R_SS^-1 (R_SS symmetric)
    except np.linalg.LinAlgError:
        raise DataError(
            "the predictors are collinear in rank (one is a monotone function of the others); "
            "drop the redundant predictor",
            field="S",
        ) from None
    mean = _scores(ranks[:, p:]) @ beta.T  # Ystar1 <- predictors1 %*% t(pxs %*% pssinv)
    sigma = r_yy - beta @ r_ys.T  # Sigma <- pxx - pxs %*% pssinv %*% psx
    return mean, sigma


def reverse_map(y: np.ndarray, y_star: np.ndarray) -> np.ndarray:
    """``y`` reordered by the ranks of ``y_star`` (sdcMicro's ``reverseMap``, step 5): the
    record with the j-th smallest ``y_star`` receives the j-th smallest ``y``; ties in
    ``y_star`` keep the records' order.

    Shapes: (n,), (n,) -> (n,).
    """
    order = np.argsort(y_star)
    ranked = y_star[order]
    if (ranked[1:] == ranked[:-1]).any():  # a tie: only a stable sort keeps the records' order
        order = np.argsort(y_star, kind="stable")
    out = np.empty_like(y)
    out[order] = np.sort(y)
    return out


def _draw(sigma: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of N(0, sigma) through its eigen decomposition, as ``MASS::mvrnorm``; a
    conditional covariance a rounding left slightly indefinite is clipped at 0."""
    values, vectors = np.linalg.eigh((sigma + sigma.T) / 2.0)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    return rng.standard_normal((n, sigma.shape[0])) @ root.T


def shuffle(Y: object, S: object | None = None, *, rng: np.random.Generator | int) -> np.ndarray:
    """Shuffle the confidential columns ``Y`` given the predictors ``S`` (see the module
    docstring; sdcMicro's ``shuffle(method = "ds")``).

    Parameters
    ----------
    Y : array_like, shape (n, p) or (n,)
        Confidential numeric variables; no missing value (sdcMicro imputes them at random and
        blanks them again: impute or drop them first).
    S : array_like, shape (n, q), optional
        Non-confidential numeric variables the shuffle conditions on; they are not changed.
    rng : numpy.random.Generator or int
        The draw of ``e``.

    Returns
    -------
    released : ndarray, float64, shape (n, p)
        Column j is a permutation of ``Y[:, j]``.

    Raises
    ------
    DataError
        Missing or infinite values, fewer than 3 records, ``S`` of another length, collinear
        predictors.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1.0, 10.0], [2.0, 30.0], [3.0, 20.0], [4.0, 40.0]])
    >>> out = shuffle(Y, rng=0)
    >>> [sorted(out[:, j]) == sorted(Y[:, j]) for j in range(2)]
    [True, True]
    """
    gen = as_generator(rng)
    Y = check_float_matrix(Y, "Y", allow_nan=False)
    n = Y.shape[0]
    if n < 3:
        raise DataError(
            "data shuffling needs at least 3 records to rank and correlate; release more",
            field="Y",
        )
    X = None
    if S is not None:
        X = check_float_matrix(S, "S", allow_nan=False)
        if X.shape[0] != n:
            raise DataError(
                f"S has {X.shape[0]} records and Y {n}; give one row of each per record",
                field="S",
            )
    # max == min, not ptp: the difference of +-1e308 overflows
    flat = (Y.max(axis=0) == Y.min(axis=0)).any()
    if flat or (X is not None and (X.max(axis=0) == X.min(axis=0)).any()):
        raise DataError(
            "a column has one value on every record: it has no ranks to correlate; leave it "
            "out (shuffling it changes nothing)",
            field="Y",
        )
    mean, sigma = ds_conditional(Y, X)
    y_star = mean + _draw(sigma, n, gen)  # Ystar <- Ystar1 + e1
    return np.column_stack([reverse_map(Y[:, j], y_star[:, j]) for j in range(Y.shape[1])])
