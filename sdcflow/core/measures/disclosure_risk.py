"""Disclosure-risk measures for a masked file of continuous quasi-identifiers.

All figures are percentages in [0, 100] of the n released records, computed from the original
quasi-identifiers ``X`` (n, d) and the released point values ``X_masked`` (n, d) in the same
record order (the order is known to us, never to the intruder).

* :func:`record_linkage` — distance-based record linkage (DBRL) [1], [2]: the intruder holds
  the original records and links each released record to its nearest original one.
* :func:`interval_disclosure` — rank-based interval disclosure [1], [2].
* :func:`transparency_reidentification` — the intruder of the transparency principle [5]:
  knows the masking method and its parameters and uses them to link.

References
----------
[1] J. Domingo-Ferrer, V. Torra, "A quantitative comparison of disclosure control methods for
    microdata", in: P. Doyle, J.I. Lane, J.J.M. Theeuwes, L.V. Zayatz (eds.), Confidentiality,
    Disclosure and Data Access: Theory and Practical Applications for Statistical Agencies,
    North-Holland, Amsterdam, 2001, 111-133 (distance-based record linkage, rank-based
    interval disclosure).
[2] J. Domingo-Ferrer, J.M. Mateo-Sanz, V. Torra, "Comparing SDC methods for microdata on the
    basis of information loss and disclosure risk", Pre-proceedings of ETK-NTTS 2001, vol. 2,
    Eurostat, Luxembourg, 2001, 807-826.
[3] J. Domingo-Ferrer, V. Torra, "Towards fuzzy c-means based microaggregation", in:
    P. Grzegorzewski, O. Hryniewicz, M.A. Gil (eds.), Soft Methods in Probability, Statistics
    and Data Analysis, Advances in Soft Computing 16, Physica-Verlag, Heidelberg, 2002,
    289-294; the transparency principle and fuzzy microaggregation as the answer to it are
    reviewed in [5] Sec. 1-2.
[4] J. Soria-Comas, J. Domingo-Ferrer, "Probabilistic k-anonymity through microaggregation and
    data swapping", Proc. IEEE International Conference on Fuzzy Systems (FUZZ-IEEE 2012),
    2012: a record is re-identified with probability at most 1/k.
[5] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
    for data with constraints", Journal of Intelligent & Fuzzy Systems (2020),
    doi:10.3233/JIFS-189074.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from scipy import sparse
from scipy.spatial import cKDTree

from sdcflow.core.validation import check_pair, standardize_pair
from sdcflow.errors import ParameterError


def _standardize_pair(X: np.ndarray, Xm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both files on the original's scale: zero mean, unit population sd (constant -> 1);
    :func:`~sdcflow.core.validation.standardize_pair` (finite for any finite input)."""
    return standardize_pair(X, Xm)


# --- distance-based record linkage ------------------------------------------------------------


def record_linkage_scores(
    X: np.ndarray, X_masked: np.ndarray, *, rtol: float = 1e-9, workers: int = 1
) -> np.ndarray:
    """Probability that the intruder links each released record to its own original record.

    Both files are standardized with the original mean and population standard deviation, and
    each released record is linked to the nearest original record in Euclidean distance [1].
    Ties: when ``t`` original records are at the minimal distance (within a relative tolerance
    ``rtol``, plus ``rtol`` absolute on the standardized scale), the intruder picks one of them
    at random, so the released record scores ``1/t`` if its own original is among them and 0
    otherwise. Microaggregated files with duplicated original records are the usual case.

    Cost: one KD-tree over the originals, one nearest-neighbour query per released record and
    a counting ball query for those whose own original is at the minimal distance; O(n log n)
    for low d, no n x n matrix. KD-trees degrade in 10 dimensions and more (timings in
    ``docs/benchmarks/``, "Measures"); ``workers=-1`` spreads the queries over all
    cores.

    Shapes: X (n, d), X_masked (n, d) -> (n,) in [0, 1].
    """
    X, Xm = check_pair(X, X_masked)
    Z, Zm = _standardize_pair(X, Xm)
    tree = cKDTree(Z)
    d_min, _ = tree.query(Zm, k=1, workers=workers)  # [1] nearest original record
    radius = d_min * (1.0 + rtol) + rtol
    own = np.sqrt(((Zm - Z) ** 2).sum(axis=1))
    hit = own <= radius  # only these can score: count their ties
    scores = np.zeros(X.shape[0])
    if hit.any():
        tied = tree.query_ball_point(Zm[hit], r=radius[hit], return_length=True, workers=workers)
        scores[hit] = 1.0 / np.maximum(np.asarray(tied), 1)
    return scores


def record_linkage(
    X: np.ndarray, X_masked: np.ndarray, *, rtol: float = 1e-9, workers: int = 1
) -> float:
    """DBRL risk: expected percentage of released records linked to their own original [1].

    The mean of :func:`record_linkage_scores` times 100 (ties count fractionally, 1/t).
    """
    return float(100.0 * record_linkage_scores(X, X_masked, rtol=rtol, workers=workers).mean())


# --- rank-based interval disclosure ---------------------------------------------------------


def _percent_list(p: float | Sequence[float]) -> np.ndarray:
    ps = np.atleast_1d(np.asarray(p, dtype=np.float64))
    if ps.size == 0 or not np.all((ps > 0) & (ps <= 100)):
        raise ParameterError(f"interval percentages p must lie in (0, 100], got {p!r}", field="p")
    return ps


def interval_disclosure_per_variable(
    X: np.ndarray, X_masked: np.ndarray, p: float | Sequence[float] = tuple(range(1, 11))
) -> np.ndarray:
    """Rank-based interval disclosure of each variable, percent, averaged over ``p``.

    For variable j and a percentage p ([1], [2]): sort the original values; the
    released value ``x'_ij`` sits at rank ``c`` = the rank of the original value nearest to it
    (the lower value when two are equally near; when that value occurs several times, the
    rank of its copy nearest to ``x'_ij``: the last copy for a value below ``x'_ij``, the first
    for one above or equal -- ``x'_ij``'s own place among the sorted originals); the
    interval around it spans the original values of ranks
    ``c - h .. c + h`` with ``h = floor(p n / 200)``, so that ranks inside it differ by at most
    p percent of n. The original value ``x_ij`` is disclosed when it lies in that interval
    (bounds included). The figure is the percentage of disclosed values, averaged over the
    percentages in ``p`` (the literature uses p = 1, 2, ..., 10 [2]).

    Shapes: X (n, d), X_masked (n, d) -> (d,) in [0, 100].
    """
    X, Xm = check_pair(X, X_masked)
    ps = _percent_list(p)
    n, d = X.shape
    S = np.sort(X, axis=0)
    out = np.zeros(d)
    for j in range(d):  # one vectorized pass over the n records per variable
        s, xm = S[:, j], Xm[:, j]
        place = np.searchsorted(s, xm, side="left")  # x'_ij's own place among the originals
        # (clipped after taking the one below: above every original the nearest copy is the
        # last, n - 1, not n - 2 when the largest value occurs twice)
        hi_pos = np.clip(place, 0, n - 1)
        lo_pos = np.clip(place - 1, 0, n - 1)
        c = np.where(np.abs(xm - s[lo_pos]) <= np.abs(s[hi_pos] - xm), lo_pos, hi_pos)
        for pk in ps:
            h = int(np.floor(pk * n / 200.0))  # [1], [2]: ranks within p % of n
            lo = s[np.clip(c - h, 0, n - 1)]
            hi = s[np.clip(c + h, 0, n - 1)]
            out[j] += np.mean((X[:, j] >= lo) & (X[:, j] <= hi))
    return 100.0 * out / ps.size


def interval_disclosure(
    X: np.ndarray, X_masked: np.ndarray, p: float | Sequence[float] = tuple(range(1, 11))
) -> float:
    """Rank-based interval disclosure, percent: mean over variables of
    :func:`interval_disclosure_per_variable`."""
    return float(interval_disclosure_per_variable(X, X_masked, p).mean())


# --- the transparency-principle intruder --------------------------------------------------


def _released_counts(groups: np.ndarray) -> np.ndarray:
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.size == 0:
        raise ParameterError("groups must be a non-empty 1-D array of released group labels")
    if not np.issubdtype(groups.dtype, np.integer) or groups.min() < 0:
        raise ParameterError("groups must hold non-negative integer labels")
    return np.bincount(groups)


def reidentification_probabilities(
    groups: np.ndarray, memberships: np.ndarray | None = None
) -> np.ndarray:
    """Each record's probability of being re-identified by the transparency intruder.

    Model (worst case, the same intruder knowledge as record linkage): the intruder knows the
    method and its parameters [5] and holds the original quasi-identifiers. From them he
    computes, for every target record i, the probability ``u_ig`` that it was released as
    group/centre g (for a deterministic method such as MDAV he simply reruns it: ``u_ig`` is 1
    for the record's own group). The released file shows ``N_g`` records with the values of g,
    indistinguishable on the quasi-identifiers, so if he bets on g and picks one of them his
    success probability is ``u_ig / N_g``; the Bayes-optimal bet gives

        ``P_i = max_g u_ig / N_g``

    (the assignment of other records is treated as independent of the target's). For MDAV
    this is ``1/|group|``; for fuzzy microaggregation the random draw spreads ``u_ig`` and
    lowers it. Probabilistic k-anonymity [4] holds when every ``P_i <= 1/k``.

    Parameters
    ----------
    groups : ndarray of shape (n,), int
        The released group / centre of every record (``MaskResult.groups``).
    memberships : ndarray of shape (n, g) or None
        ``u_ig``; rows sum to 1. None means crisp: each record's own group with probability 1.

    Returns
    -------
    ndarray of shape (n,) in [0, 1]
    """
    counts = _released_counts(groups)
    groups = np.asarray(groups)
    if memberships is None:
        return 1.0 / counts[groups]
    U = np.asarray(memberships, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] != groups.size:
        raise ParameterError(
            f"memberships must have shape (n, g) with n = {groups.size}, got {U.shape}"
        )
    if U.shape[1] < counts.size:
        raise ParameterError(
            f"memberships has {U.shape[1]} columns but groups use {counts.size} labels"
        )
    N = np.zeros(U.shape[1])
    N[: counts.size] = counts
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(N > 0, U / np.where(N > 0, N, 1.0), 0.0)
    return ratio.max(axis=1)  # P_i = max_g u_ig / N_g


def transparency_reidentification(
    groups: np.ndarray, memberships: np.ndarray | None = None
) -> float:
    """Expected percentage of records the transparency intruder re-identifies.

    ``100 * mean_i P_i`` with ``P_i`` from :func:`reidentification_probabilities`; for MDAV it
    equals ``100 * (number of groups) / n``.
    """
    return float(100.0 * reidentification_probabilities(groups, memberships).mean())


def fuzzy_reidentification_probabilities(
    Z: np.ndarray,
    centres: np.ndarray,
    groups: np.ndarray,
    *,
    m: float | None = None,
    lam: float | None = None,
    chunk: int = 4096,
) -> np.ndarray:
    """:func:`reidentification_probabilities` for fuzzy microaggregation, without an n x c matrix.

    The intruder's ``u_ig`` are the memberships of record i to the released centres that the
    method draws from [3], [5]: fuzzy c-means memberships with fuzziness ``m`` (the method's m2),
    ``u_ig ∝ ||z_i - v_g||^(-2/(m-1))``, or entropy-FCM memberships with ``lam`` (its λ2),
    ``u_ig ∝ exp(-lam ||z_i - v_g||^2)``; a record that coincides with centres shares its
    membership among them. They are computed ``chunk`` records at a time.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Quasi-identifiers on the scale the method clustered on.
    centres : ndarray of shape (g, d)
        Released centre of every group label (rows of unused labels are ignored).
    groups : ndarray of shape (n,), int
        The centre each record was released as.
    m, lam : float
        Exactly one of them.

    Returns
    -------
    ndarray of shape (n,) in [0, 1]
    """
    if (m is None) == (lam is None):
        raise ParameterError("give exactly one of m (fuzzy c-means) and lam (entropy FCM)")
    if m is not None and not m > 1:
        raise ParameterError(f"m must be > 1, got {m!r}")
    if lam is not None and not lam > 0:
        raise ParameterError(f"lam must be > 0, got {lam!r}")
    counts = _released_counts(groups)
    Z = np.asarray(Z, dtype=np.float64)
    V = np.asarray(centres, dtype=np.float64)
    if V.shape[0] < counts.size or V.shape[1] != Z.shape[1]:
        raise ParameterError(
            f"centres must have shape (>= {counts.size}, {Z.shape[1]}), got {V.shape}"
        )
    used = np.flatnonzero(counts > 0)
    V, N = V[used], counts[used].astype(np.float64)
    out = np.empty(Z.shape[0])
    for start, U in _membership_chunks(Z, V, m, lam, chunk):
        out[start : start + U.shape[0]] = (U / N).max(axis=1)
    return out


def _membership_chunks(
    Z: np.ndarray, V: np.ndarray, m: float | None, lam: float | None, chunk: int
) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, memberships)`` of ``chunk`` records at a time to the centres ``V``:
    FCM ``u ∝ d^(-2/(m-1))`` or entropy FCM ``u ∝ exp(-lam d^2)``; a record on centres shares
    its membership among them. Shapes: Z (n, d), V (g, d) -> chunks of (<= chunk, g)."""
    for start in range(0, Z.shape[0], chunk):
        block = Z[start : start + chunk]
        D2 = np.zeros((block.shape[0], V.shape[0]))
        for j in range(Z.shape[1]):
            diff = block[:, j, None] - V[None, :, j]
            D2 += diff * diff
        dmin = D2.min(axis=1, keepdims=True)
        if lam is not None:
            W = np.exp(-lam * (D2 - dmin))
        else:
            zero = D2 <= 0.0
            with np.errstate(divide="ignore"):
                W = (np.where(zero, 1.0, dmin) / np.where(zero, 1.0, D2)) ** (1.0 / (m - 1.0))
            hit = zero.any(axis=1)
            W[hit] = zero[hit]
        yield start, W / W.sum(axis=1, keepdims=True)


def fuzzy_membership_rows(
    Z: np.ndarray,
    centres: np.ndarray,
    labels: np.ndarray,
    *,
    m: float | None = None,
    lam: float | None = None,
    chunk: int = 4096,
    floor: float = 1e-15,
) -> sparse.csr_matrix:
    """Memberships of every record to the released centres ``labels`` (rows of ``centres``),
    as the transparency intruder computes them from the draw fuzziness: fuzzy c-means
    ``u_ig ∝ ||z_i - v_g||^(-2/(m-1))`` or entropy FCM ``u_ig ∝ exp(-lam ||z_i - v_g||^2)``;
    a record on a centre shares its membership among the centres it coincides with.

    Entries below ``floor`` are dropped (they cannot be a record's best bet). Computed
    ``chunk`` records at a time.

    Shapes: Z (n, d), centres (G, d), labels (g,) int -> sparse (n, G), rows summing to 1.
    """
    if (m is None) == (lam is None):
        raise ParameterError("give exactly one of m (fuzzy c-means) and lam (entropy FCM)")
    Z = np.asarray(Z, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    V = np.asarray(centres, dtype=np.float64)[labels]
    parts = []
    for _, U in _membership_chunks(Z, V, m, lam, chunk):
        U[U < floor] = 0.0
        parts.append(sparse.csr_matrix(U))
    U = sparse.vstack(parts).tocoo()
    return sparse.csr_matrix(
        (U.data, (U.row, labels[U.col])), shape=(Z.shape[0], int(centres.shape[0]))
    )


def release_reidentification_probabilities(
    X: np.ndarray,
    points: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    m: float | None = None,
    lam: float | None = None,
) -> np.ndarray:
    """The transparency intruder's success probabilities for a released file.

    ``groups`` defaults to the classes of identical released rows of ``points``. Without
    ``m`` / ``lam`` the release is crisp (MDAV and other partitions): ``1/|group|``. With the
    method's ``m2`` (``m``) or ``λ2`` (``lam``) it is fuzzy microaggregation: the released
    centre of each group is the released value of its records, and memberships are computed
    on the quasi-identifiers standardized with the original mean and population sd (see
    :func:`fuzzy_reidentification_probabilities`).

    Shapes: X (n, d), points (n, d), groups (n,) -> (n,) in [0, 1].
    """
    X, P = check_pair(X, points, ("X", "points"))
    if groups is None:
        groups = np.unique(P, axis=0, return_inverse=True)[1].reshape(-1)
    groups = np.asarray(groups)
    if groups.shape != (X.shape[0],):
        raise ParameterError(f"groups must have shape ({X.shape[0]},), got {groups.shape}")
    if m is None and lam is None:
        return reidentification_probabilities(groups)
    labels, first = np.unique(groups, return_index=True)
    if labels.min() < 0:
        raise ParameterError("groups must hold non-negative integer labels")
    centres = np.zeros((int(labels.max()) + 1, X.shape[1]))
    centres[labels] = P[first]
    Z, V = _standardize_pair(X, centres)
    return fuzzy_reidentification_probabilities(Z, V, groups, m=m, lam=lam)


def model_reidentification_probabilities(
    groups: np.ndarray,
    released_centres: np.ndarray,
    model_centres: np.ndarray,
    indptr: np.ndarray,
    leaf: np.ndarray,
    prob: np.ndarray,
) -> np.ndarray:
    """:func:`reidentification_probabilities` when the intruder reruns a randomized method.

    Under transparency the intruder reruns the method on the original records and obtains
    every record's draw distribution over *his* centres (sparse rows ``indptr``, ``leaf``,
    ``prob``, as fuzzy microaggregation's fitted partition gives them). He maps each of his
    centres to the nearest released centre (KD-tree) and adds up the probabilities that land on
    the same released centre, which gives ``u_ig`` over the released centres; then
    ``P_i = max_g u_ig / N_g`` as in :func:`reidentification_probabilities`. When his rerun
    reproduces the released partition the mapping is exact.

    Parameters
    ----------
    groups : ndarray of shape (n,), int
        Released centre of every record.
    released_centres : ndarray of shape (G, d)
        Released centre of every group label, on the scale the method clustered on.
    model_centres : ndarray of shape (C, d)
        The intruder's centres, same scale.
    indptr : ndarray of shape (n + 1,); leaf, prob : ndarray of shape (nnz,)
        Record i's distribution: centres ``leaf[indptr[i]:indptr[i+1]]`` with probabilities
        ``prob[...]``.

    Returns
    -------
    ndarray of shape (n,) in [0, 1]
    """
    counts = _released_counts(groups)
    n = np.asarray(groups).size
    indptr = np.asarray(indptr)
    if indptr.shape != (n + 1,):
        raise ParameterError(f"indptr must have shape ({n + 1},), got {indptr.shape}")
    used = np.flatnonzero(counts > 0)
    R = np.asarray(released_centres, dtype=np.float64)[used]
    _, nearest = cKDTree(R).query(np.asarray(model_centres, dtype=np.float64), k=1)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    U = sparse.csr_matrix(
        (np.asarray(prob, dtype=np.float64), (rows, nearest[np.asarray(leaf)])),
        shape=(n, used.size),
    )  # duplicates (two model centres -> one released centre) are summed
    U = U.multiply(1.0 / counts[used][None, :]).tocsr()
    return np.asarray(U.max(axis=1).todense()).reshape(-1)
