"""Cluster-specific information loss: how much masking changes a fuzzy clustering of the file.

Following Torra and Ladra [1]_: cluster the original file and the protected file with fuzzy
c-means, keep for each file the run with the lowest objective over several random restarts
([1]_ section 3.1: local optima otherwise dominate the comparison), align the two sets of
clusters, and compare them by

* ``d1`` — the sum over aligned pairs of the Euclidean distances between cluster centres;
* ``d2`` — the sum over records of the Euclidean distance between the record's membership
  vector in the original clustering and in the (aligned) protected clustering;
* α-cuts (α = 0.9, 0.5, 0.1): each fuzzy cluster becomes the crisp set of records with
  membership larger than α, and the two families of crisp sets are compared with the Rand,
  adjusted Rand and Jaccard indices [2]_, [3]_, [4]_, [5]_.

The alignment is optimal (Hungarian assignment of the centre-distance matrix,
``scipy.optimize.linear_sum_assignment``), not the greedy nearest-centre matching described in
[1]_: the greedy matching depends on the order of the clusters and can pair two centres that
a global matching would not.

Clustering is the project's fuzzy c-means (``sdcflow.core.fuzzy.fcm.fuzzy_c_means``,
[6]_) with the settings of [1]_ (:func:`fuzzy_cmeans`), on the quasi-identifiers standardized
with the *original* file's mean and population standard deviation, for both files, so that d1
is in units of the original standard deviations and noise in the protected file shows as
such. [1]_ does not state ``m``; with this scaling ``m = 1.5`` reproduces the objective of its
Table 3 on Census (225.27 against 225.26 for c = 10), hence the default (more figures in
``docs/benchmarks/``).

References
----------
.. [1] V. Torra and S. Ladra, "Cluster-specific information loss measures in data privacy: a
   review", Proc. 3rd Int. Conf. on Availability, Reliability and Security (ARES 2008), IEEE,
   2008, doi:10.1109/ARES.2008.87. Section 3.1, Tables 1-3.
.. [2] W. M. Rand, "Objective criteria for the evaluation of clustering methods", Journal of
   the American Statistical Association 66(336), pp. 846-850, 1971.
.. [3] L. Hubert and P. Arabie, "Comparing partitions", Journal of Classification 2(1),
   pp. 193-218, 1985 (adjusted Rand index).
.. [4] D. Steinley, "Properties of the Hubert-Arabie adjusted Rand index", Psychological
   Methods 9(3), pp. 386-396, 2004 (eq. 5, the pair-counting form
   ``ARI = 2 (ad - bc) / ((a+b)(b+d) + (a+c)(c+d))``).
.. [5] V. V. Raghavan and M. Y. L. Ip, "Techniques for measuring the stability of clustering:
   a comparative study", Proc. 5th Annual ACM Conf. on Research and Development in
   Information Retrieval (SIGIR 1982), pp. 209-237, 1982 (Jaccard index over pairs,
   ``J = a / (a + b + c)``).
.. [6] J. C. Bezdek, *Pattern Recognition with Fuzzy Objective Function Algorithms*, Plenum
   Press, New York, 1981.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import linear_sum_assignment

from sdcflow.core.fuzzy.fcm import FCMResult, fuzzy_c_means, memberships
from sdcflow.core.validation import check_matrix, check_random_state, standardize_pair
from sdcflow.errors import ParameterError

ALPHAS: tuple[float, ...] = (0.9, 0.5, 0.1)


# --- the clustering ----------------------------------------------------------------------------


def fuzzy_cmeans(
    Z: np.ndarray,
    c: int,
    *,
    m: float = 1.5,
    restarts: int = 20,
    tol: float = 1e-4,
    max_iter: int = 500,
    random_state: int | np.random.Generator | None = 0,
) -> FCMResult:
    """The clustering of [1] section 3.1: ``fuzzy_c_means``,
    best of ``restarts`` random starts by objective value, full (never truncated), with the
    membership matrix the comparison needs.

    Parameters
    ----------
    Z : array-like of shape (n, d)
        Records (standardized, :func:`standardize_like`).
    c : int
        Number of clusters, ``2 <= c <= n``.
    m : float
        Fuzziness, ``m > 1``; 1.5 reproduces the objectives of [1] (module docstring).
    restarts : int
        Random starts; the one with the lowest objective is kept ([1] uses 20).
    tol : float
        A run stops when no centre moves more than ``tol`` times the root-mean standard
        deviation of ``Z`` (1 for the standardized original).
    max_iter : int
        Iteration limit per run.
    random_state : int, Generator or None
        Seed of the initial centres. A measure should be reproducible, hence the default 0.

    Returns
    -------
    FCMResult
        The best run, with ``memberships`` (n, c) at its centres.
    """
    Z = check_matrix(Z, name="data")
    n = Z.shape[0]
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 2 <= c <= n:
        raise ParameterError(
            f"c (number of clusters) must be an integer in [2, {n}], got {c!r}", field="c"
        )
    fit = fuzzy_c_means(
        Z,
        int(c),
        m=m,
        restarts=restarts,
        tol=tol,
        max_iter=max_iter,
        truncate=False,
        random_state=random_state,
    )
    return replace(fit, memberships=memberships(Z, fit.centers, m=m))


# --- comparison of two fuzzy partitions --------------------------------------------------


def align_clusters(centres: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Optimal one-to-one matching of ``other``'s clusters to ``centres``' clusters.

    Minimizes the total Euclidean distance between matched centres (Hungarian algorithm).

    Shapes: centres (c, d), other (c, d) -> perm (c,): cluster i of ``centres`` is matched to
    cluster ``perm[i]`` of ``other``.
    """
    if centres.shape != other.shape:
        raise ParameterError(
            f"both clusterings need the same number of clusters and variables: "
            f"{centres.shape} vs {other.shape}"
        )
    cost = np.sqrt(((centres[:, None, :] - other[None, :, :]) ** 2).sum(axis=2))
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(centres.shape[0], dtype=np.int64)
    perm[rows] = cols
    return perm


def centre_distance(centres: np.ndarray, other: np.ndarray, perm: np.ndarray) -> float:
    """d1 of [1]: ``sum_i ||v_i - v'_perm(i)||``. Shapes: (c, d), (c, d), (c,) -> float."""
    return float(np.sqrt(((centres - other[perm]) ** 2).sum(axis=1)).sum())  # [1] d1


def membership_distance(
    U: np.ndarray, U_other: np.ndarray, perm: np.ndarray, *, squared: bool = False
) -> float:
    """d2 of [1]: ``sum_k ||u_k - u'_k||`` with ``U_other``'s columns aligned by ``perm``.

    [1] does not name the per-record distance; it is Euclidean here, like d1, so each record
    contributes at most sqrt(2). ``squared=True`` sums squared distances instead (at most 2
    per record): the ratio d2/d1 in [1] Table 3 grows with the noise as a squared distance
    would, so :class:`ClusterLoss` reports both.

    Shapes: U (n, c), U_other (n, c), perm (c,) -> float.
    """
    sq = ((U - U_other[:, perm]) ** 2).sum(axis=1)  # [1] d2, per record
    return float(sq.sum() if squared else np.sqrt(sq).sum())


def alpha_cut(U: np.ndarray, alpha: float) -> np.ndarray:
    """Crisp sets of the α-cut: record k is in set i when ``u_ik > alpha`` ([1] section 3.1).

    For α >= 0.5 a record is in at most one set (memberships sum to 1), possibly in none; for
    smaller α it may be in several, so an α-cut is in general not a partition.

    Shapes: U (n, c) -> bool (n, c).
    """
    if not 0.0 <= alpha < 1.0:
        raise ParameterError(f"alpha must lie in [0, 1), got {alpha!r}", field="alpha")
    return np.asarray(U) > alpha  # [1] section 3.1, alpha-cut


def pair_counts(A: np.ndarray, B: np.ndarray, *, block: int = 2048) -> tuple[int, int, int, int]:
    """Pair counts of two families of crisp sets over the same n records.

    Two records are *together* in a family when some set of it holds both (for a partition:
    same cluster; a record in no set is together with nobody). Over the ``n(n-1)/2`` pairs:
    ``a`` together in both, ``b`` only in ``A``, ``c`` only in ``B``, ``d`` in neither.

    When every record is in at most one set of each family (partitions, α-cuts with α >= 0.5)
    the counts come from the contingency table in O(n + c^2). Otherwise (overlapping sets)
    they are accumulated over row blocks of ``block`` records: O(n^2 c) time, O(block n)
    memory, never an n x n matrix.

    Shapes: A (n, c_A) bool, B (n, c_B) bool -> four ints summing to n(n-1)/2.
    """
    A = np.asarray(A, dtype=bool)
    B = np.asarray(B, dtype=bool)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0]:
        raise ParameterError(
            f"set-membership matrices must be (n, c) over the same n: {A.shape}, {B.shape}"
        )
    n = A.shape[0]
    total = n * (n - 1) // 2
    if A.sum(axis=1).max(initial=0) <= 1 and B.sum(axis=1).max(initial=0) <= 1:
        # partition path: label -1 for "in no set"
        la = np.where(A.any(axis=1), A.argmax(axis=1), -1)
        lb = np.where(B.any(axis=1), B.argmax(axis=1), -1)

        def comb2(x: np.ndarray) -> int:
            x = x.astype(np.int64)
            return int((x * (x - 1) // 2).sum())

        both = (la >= 0) & (lb >= 0)
        joint = np.bincount(la[both] * B.shape[1] + lb[both], minlength=A.shape[1] * B.shape[1])
        a = comb2(joint)
        ta = comb2(np.bincount(la[la >= 0], minlength=A.shape[1]))
        tb = comb2(np.bincount(lb[lb >= 0], minlength=B.shape[1]))
    else:
        Af, Bf = A.astype(np.float64), B.astype(np.float64)
        s_ab = s_a = s_b = 0
        for start in range(0, n, block):
            TA = (Af[start : start + block] @ Af.T) > 0  # together relation, rows of the block
            TB = (Bf[start : start + block] @ Bf.T) > 0
            s_ab += int((TA & TB).sum())
            s_a += int(TA.sum())
            s_b += int(TB.sum())
        # ordered pairs include (k, k): a record with any set is together with itself
        self_a, self_b = A.any(axis=1), B.any(axis=1)
        a = (s_ab - int((self_a & self_b).sum())) // 2
        ta = (s_a - int(self_a.sum())) // 2
        tb = (s_b - int(self_b.sum())) // 2
    b, c = ta - a, tb - a
    return a, b, c, total - a - b - c


def rand_index(a: int, b: int, c: int, d: int) -> float:
    """Rand index [2]: share of pairs on which the two families agree, ``(a + d) / N``."""
    total = a + b + c + d
    return 1.0 if total == 0 else (a + d) / total


def adjusted_rand_index(a: int, b: int, c: int, d: int) -> float:
    """Adjusted Rand index [3] in the pair-counting form of [4] eq. 5,
    ``2(ad - bc) / ((a+b)(b+d) + (a+c)(c+d))``.

    1 for identical families; about 0 for independent ones. When the denominator is 0 the
    two families are identical in their pairs (all together or all apart) and the index is 1.
    """
    a, b, c, d = (float(x) for x in (a, b, c, d))
    den = (a + b) * (b + d) + (a + c) * (c + d)
    return 1.0 if den == 0 else 2.0 * (a * d - b * c) / den  # [4] eq. 5


def jaccard_index(a: int, b: int, c: int, d: int) -> float:
    """Jaccard index over pairs [5], ``a / (a + b + c)``; 1 when no pair is together in either."""
    den = a + b + c
    return 1.0 if den == 0 else a / den


def compare_alpha_cuts(
    U: np.ndarray, U_other: np.ndarray, perm: np.ndarray, alphas: Sequence[float] = ALPHAS
) -> dict[float, dict[str, float]]:
    """Rand, adjusted Rand and Jaccard between the α-cuts of two aligned fuzzy partitions.

    Shapes: U (n, c), U_other (n, c), perm (c,) -> {alpha: {"rand", "adjusted_rand",
    "jaccard"}}.
    """
    out = {}
    for alpha in alphas:
        counts = pair_counts(alpha_cut(U, alpha), alpha_cut(U_other[:, perm], alpha))
        out[float(alpha)] = {
            "rand": rand_index(*counts),
            "adjusted_rand": adjusted_rand_index(*counts),
            "jaccard": jaccard_index(*counts),
        }
    return out


# --- the measure ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterLoss:
    """Cluster-specific information loss of a protected file.

    Attributes
    ----------
    d1, d2 : float
        Centre-based and membership-based distances of [1] (0 for identical clusterings).
    d2_squared : float
        d2 with squared per-record distances (see :func:`membership_distance`).
    alpha : dict float -> dict str -> float
        For each α, the Rand, adjusted Rand and Jaccard indices of the α-cuts (1 = identical).
    objective_original, objective_protected : float
        FCM objective of the best run on each file (standardized with the original's scale).
    converged : bool
        Whether both best runs converged within ``max_iter``.
    """

    d1: float
    d2: float
    d2_squared: float = float("nan")
    alpha: dict[float, dict[str, float]] = field(default_factory=dict)
    objective_original: float = float("nan")
    objective_protected: float = float("nan")
    converged: bool = True


def compare_partitions(
    original: FCMResult, protected: FCMResult, alphas: Sequence[float] = ALPHAS
) -> ClusterLoss:
    """Align two fuzzy partitions of the same records and compute d1, d2 and the α-cut indices.

    Both come from :func:`fuzzy_cmeans` (which keeps their membership matrices). Use it
    directly to compare several protected files with one clustering of the original.
    """
    if original.memberships is None or protected.memberships is None:
        raise ParameterError("compare partitions from fuzzy_cmeans, which keeps the memberships")
    if original.memberships.shape[0] != protected.memberships.shape[0]:
        raise ParameterError("both partitions must cover the same records")
    perm = align_clusters(original.centers, protected.centers)
    return ClusterLoss(
        d1=centre_distance(original.centers, protected.centers, perm),
        d2=membership_distance(original.memberships, protected.memberships, perm),
        d2_squared=membership_distance(
            original.memberships, protected.memberships, perm, squared=True
        ),
        alpha=compare_alpha_cuts(original.memberships, protected.memberships, perm, alphas),
        objective_original=original.objective,
        objective_protected=protected.objective,
        converged=original.converged and protected.converged,
    )


def standardize_like(X: np.ndarray, X_masked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both files standardized with the original mean and population sd (constant: scale 1).

    Shapes: (n, d), (n, d) -> (n, d), (n, d).
    """
    X = check_matrix(X, name="original")
    Xm = check_matrix(X_masked, name="masked")
    if X.shape != Xm.shape:
        raise ParameterError(f"original {X.shape} and masked {Xm.shape} must have the same shape")
    return standardize_pair(X, Xm)  # finite for any finite input


def cluster_loss(
    X: np.ndarray,
    X_masked: np.ndarray,
    *,
    c: int = 10,
    m: float = 1.5,
    restarts: int = 20,
    alphas: Sequence[float] = ALPHAS,
    tol: float = 1e-4,
    max_iter: int = 500,
    random_state: int | np.random.Generator | None = 0,
) -> ClusterLoss:
    """Cluster-specific information loss of ``X_masked`` with respect to ``X`` [1].

    Both files are standardized with the original mean and population standard deviation
    (:func:`standardize_like`), clustered with :func:`fuzzy_cmeans` (best of ``restarts``),
    and compared with :func:`compare_partitions`.

    Parameters
    ----------
    X, X_masked : array-like of shape (n, d)
        Original and protected records, same order.
    c, m, restarts, tol, max_iter, random_state
        Passed to :func:`fuzzy_cmeans`; both files get generators from the same seed.
    alphas : sequence of float
        α-cut levels, default (0.9, 0.5, 0.1) as in [1].

    Returns
    -------
    ClusterLoss

    Cost: ``2 * restarts`` FCM runs of O(n c d) per iteration, plus O(n^2 c) for α-cuts below
    0.5 (see :func:`pair_counts`).
    """
    Z, Zm = standardize_like(X, X_masked)
    seed = check_random_state(random_state).integers(2**63)
    kwargs = {"m": m, "restarts": restarts, "tol": tol, "max_iter": max_iter}
    orig = fuzzy_cmeans(Z, c, random_state=np.random.default_rng(seed), **kwargs)
    prot = fuzzy_cmeans(Zm, c, random_state=np.random.default_rng(seed), **kwargs)
    return compare_partitions(orig, prot, alphas)
