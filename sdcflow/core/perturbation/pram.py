"""Post-RAndomization Method (PRAM) for one categorical column of integer codes.

Each record's category is replaced by a draw from the row of a Markov transition matrix
belonging to its category. The default matrix is the one sdcMicro's ``pram`` builds
(``pramWORK``'s ``calcTransitionMatrix``, sdcMicro 5.8.1): an *invariant* matrix, so that the
expected category frequencies after PRAM equal the observed ones.

References
----------
.. [1] Gouweleeuw, J. M., Kooiman, P., Willenborg, L. C. R. J. and de Wolf, P.-P. (1998).
   Post randomisation for statistical disclosure control: theory and implementation.
   Journal of Official Statistics 14(4), 463-478.
.. [2] Kooiman, P., Willenborg, L. and Gouweleeuw, J. (1997). PRAM: a method for disclosure
   limitation of microdata. Research paper 9705, Statistics Netherlands.
.. [3] Templ, M., Kowarik, A. and Meindl, B. (2015). Statistical disclosure control for
   micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).
"""

from __future__ import annotations

import numbers

import numpy as np

from sdcflow.errors import DataError, ParameterError

from ._checks import as_generator, check_fraction

__all__ = ["invariant_transition", "pram", "pram_transition"]

# rows of a user's transition matrix must sum to 1 within this (sdcMicro: machine epsilon,
# which a matrix typed in with decimals or computed by a product does not meet)
_ROW_SUM_TOL = 1e-9


def invariant_transition(P: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """The invariant transition matrix ``R = P Q`` built from ``P`` and the frequencies.

    ``Q`` is the "backward" matrix of ``P`` (Bayes' rule):
    ``Q[k, j] = P[j, k] t[j] / sum_l t[l] P[l, k]``. Then ``t R = t`` [1]_: the
    expected frequencies after PRAM with ``R`` are the observed ones.

    Parameters
    ----------
    P : ndarray of shape (L, L)
        A transition matrix (non-negative, each row sums to 1).
    frequencies : ndarray of shape (L,)
        Category counts or proportions ``t`` (non-negative, not all zero); only their ratios
        matter.

    Returns
    -------
    R : ndarray of shape (L, L)
        Rows sum to 1 and ``frequencies @ R == frequencies`` (to rounding). A category ``k``
        that no record can reach under ``P`` (``sum_l t[l] P[l, k] == 0``) keeps its row of
        ``Q`` as the unit row (sdcMicro divides 0 by 0 there and fails).

    References
    ----------
    .. [1] Gouweleeuw, Kooiman, Willenborg and de Wolf (1998), J. Official Statistics 14(4).
    """
    P = np.asarray(P, dtype=np.float64)
    t = np.asarray(frequencies, dtype=np.float64)
    t = t / t.sum()
    reach = t @ P  # sum_l t_l P[l, k]
    safe = np.where(reach > 0, reach, 1.0)
    Q = (P * t[:, None]).T / safe[:, None]  # Q[k, j] = P[j, k] t_j / sum_l t_l P[l, k]  [1]
    dead = reach <= 0
    if dead.any():
        Q[dead] = 0.0
        Q[dead, dead.nonzero()[0]] = 1.0
    return P @ Q  # R = P Q, invariant: t R = (t P) Q = t  [1]


def pram_transition(
    frequencies: np.ndarray,
    *,
    pd: float = 0.8,
    alpha: float = 0.5,
    rng: int | np.random.Generator,
) -> np.ndarray:
    """sdcMicro's default PRAM matrix for categories with the given frequencies.

    As sdcMicro's ``calcTransitionMatrix`` (sdcMicro 5.8.1, ``pramWORK``):

    1. for each category ``i`` draw ``pd_i ~ U(pd, 1)``; ``P[i, i] = pd_i`` and every other
       entry of row ``i`` is ``(1 - pd_i) / (L - 1)``;
    2. ``R = P Q``, the invariant matrix of ``P`` (:func:`invariant_transition`);
    3. ``Rs = alpha R + (1 - alpha) I``, still invariant, with more mass on the diagonal.

    Parameters
    ----------
    frequencies : array_like of shape (L,)
        The count of each category among the records to perturb (zeros allowed).
    pd : float in [0, 1], default 0.8
        Lower bound of the probability that a category is kept by ``P``.
    alpha : float in [0, 1], default 0.5
        Weight of the invariant matrix against the identity.
    rng : int or numpy.random.Generator
        Draws the ``L`` values ``pd_i``.

    Returns
    -------
    Rs : ndarray of shape (L, L)
        A row-stochastic matrix with ``t Rs = t``. With one category it is ``[[1.0]]``.
    """
    t = np.asarray(frequencies, dtype=np.float64)
    rng = as_generator(rng)
    pds = rng.uniform(pd, 1.0, size=t.shape[0])  # pds <- runif(L, min = pd, max = 1)
    return _transition_from_pds(pds, t, alpha)


def _transition_from_pds(pds: np.ndarray, t: np.ndarray, alpha: float) -> np.ndarray:
    """Steps 1 to 3 of :func:`pram_transition` with the diagonal ``pds`` given."""
    L = t.shape[0]
    if L == 1:
        return np.ones((1, 1))
    P = np.repeat(((1.0 - pds) / (L - 1))[:, None], L, axis=1)  # P[i, ] <- (1 - pds[i])/(L-1)
    np.fill_diagonal(P, pds)  # diag(P) <- pds
    R = invariant_transition(P, t)
    return alpha * R + (1.0 - alpha) * np.eye(L)  # Rs <- alpha * R + (1 - alpha) * EI


def _check_codes(codes: object, n_categories: int | None) -> tuple[np.ndarray, int]:
    arr = np.asarray(codes)
    if arr.ndim != 1:
        raise DataError(
            f"codes must be 1-dimensional (one categorical column), got {arr.ndim}-D; "
            "call pram once per column",
            field="codes",
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise DataError(
            "codes must be integer category codes 0..L-1 with -1 for missing; encode the "
            "column first (e.g. pandas.factorize)",
            field="codes",
        )
    if arr.size and arr.min() < -1:
        raise DataError("codes has values below -1; only -1 marks a missing value", field="codes")
    top = int(arr.max()) + 1 if arr.size else 0
    if n_categories is None:
        n_categories = top
    elif top > n_categories:
        raise DataError(
            "codes has a code >= the number of categories; pass a larger n_categories or a "
            "larger transition matrix",
            field="codes",
        )
    return arr, n_categories


def _check_transition(transition: object) -> np.ndarray:
    try:
        R = np.array(transition, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ParameterError(
            "transition must be a numeric (L, L) matrix", field="transition"
        ) from e
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise ParameterError(
            "transition must be a square (L, L) matrix, one row and column per category",
            field="transition",
        )
    if not np.isfinite(R).all() or (R < 0).any():
        raise ParameterError(
            "transition must hold probabilities: finite and non-negative", field="transition"
        )
    if np.abs(R.sum(axis=1) - 1.0).max() > _ROW_SUM_TOL:
        raise ParameterError(
            "every row of transition must sum to 1 (row i: the probabilities of the categories "
            "that category i becomes); normalize the rows",
            field="transition",
        )
    return R


def _draw(codes: np.ndarray, R: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw each non-missing record's new code from its category's row of ``R``.

    One uniform per non-missing record, in record order, inverted through the row's
    cumulative distribution (sdcMicro's ``sample(levs, ..., prob = Rs[i, ])``).
    """
    out = codes.copy()
    observed = np.flatnonzero(codes >= 0)
    u = rng.random(observed.size)
    cum = np.cumsum(R, axis=1)
    cum[:, -1] = 1.0  # u < 1 always lands in the row, whatever the rounding of the sum
    obs_codes = codes[observed]
    order = np.argsort(obs_codes, kind="stable")
    bounds = np.searchsorted(obs_codes[order], np.arange(R.shape[0] + 1))
    for c in np.flatnonzero(np.diff(bounds)):  # categories present, each a block of `order`
        block = order[bounds[c] : bounds[c + 1]]
        new = np.searchsorted(cum[c], u[block], side="right")  # first j with cum[c, j] > u
        out[observed[block]] = np.minimum(new, R.shape[0] - 1)
    return out


def pram(
    codes: object,
    *,
    transition: object = None,
    pd: float = 0.8,
    alpha: float = 0.5,
    n_categories: int | None = None,
    rng: int | np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Post-randomize a categorical column (PRAM), as sdcMicro's ``pram``.

    Each record with category ``i`` becomes category ``j`` with probability ``R[i, j]``,
    independently of the other records [1]_. Missing values (code -1) stay missing and do not
    count in the frequencies.

    Parameters
    ----------
    codes : array_like of int, shape (n,)
        Category codes ``0..L-1``; ``-1`` marks a missing value.
    transition : array_like of shape (L, L), optional
        The transition matrix to use as given (rows sum to 1; ``pd`` and ``alpha`` are then
        ignored, as sdcMicro does with a matrix ``pd``). Default: sdcMicro's invariant matrix
        built from the observed frequencies (:func:`pram_transition`).
    pd : float in [0, 1], default 0.8
        Lower bound of the probability of keeping a category in the base matrix ``P``.
    alpha : float in [0, 1], default 0.5
        Weight of the invariant matrix against the identity: ``Rs = alpha R + (1-alpha) I``.
    n_categories : int, optional
        Number of categories ``L`` (default: ``codes.max() + 1``, or the size of
        ``transition``). Categories with no record still get a row and a column, as factor
        levels without records do in sdcMicro.
    rng : int or numpy.random.Generator
        Draws first the ``L`` values ``pd_i`` of the default matrix (not with ``transition``),
        then one uniform per non-missing record.

    Returns
    -------
    perturbed : ndarray of shape (n,)
        The new codes, of the dtype of ``codes``; -1 where ``codes`` is -1.
    transition : ndarray of shape (L, L)
        The matrix used. The default one is invariant: ``t @ transition == t`` for the
        frequencies ``t`` of the observed codes.

    Raises
    ------
    DataError
        ``codes`` not 1-D integers, below -1, or beyond the categories.
    ParameterError
        ``pd`` or ``alpha`` outside [0, 1]; ``transition`` not square, not stochastic.

    Notes
    -----
    Not (yet) supported from sdcMicro: strata (one matrix per stratum) and several columns in
    one call (call once per column, with the same generator).

    References
    ----------
    .. [1] Gouweleeuw, Kooiman, Willenborg and de Wolf (1998), J. Official Statistics 14(4).
    .. [2] sdcMicro 5.8.1, ``pram`` / ``pramWORK``.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([0, 0, 0, 1, 1, 2, -1])
    >>> new, R = pram(codes, rng=0)
    >>> new[-1], R.shape, bool(np.allclose(R.sum(axis=1), 1))
    (np.int64(-1), (3, 3), True)
    """
    rng = as_generator(rng)
    if n_categories is not None and (
        isinstance(n_categories, bool)
        or not isinstance(n_categories, numbers.Integral)
        or n_categories < 1
    ):
        raise ParameterError("n_categories must be a positive integer", field="n_categories")
    if transition is not None:
        R = _check_transition(transition)
        if n_categories is not None and n_categories != R.shape[0]:
            raise ParameterError(
                "n_categories differs from the size of transition; pass only one of them",
                field="n_categories",
            )
        arr, L = _check_codes(codes, R.shape[0])
    else:
        pd = check_fraction(pd, "pd")
        alpha = check_fraction(alpha, "alpha")
        arr, L = _check_codes(codes, n_categories)
        if not (arr >= 0).any():  # nothing observed: nothing to perturb (sdcMicro: all NA)
            return arr.copy(), np.eye(L)
        frequencies = np.bincount(arr[arr >= 0], minlength=L)
        R = pram_transition(frequencies, pd=pd, alpha=alpha, rng=rng)
    return _draw(arr, R, rng), R
