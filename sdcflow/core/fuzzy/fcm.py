"""Fuzzy c-means (FCM), entropy fuzzy c-means (EFCM) and their linearly constrained variants.

The alternate optimization of [1]_ section 2.1 (Prop. 1 and eq. 1 for FCM [2]_; eq. 2-4 for
EFCM [3]_) with the constrained centre updates of [1]_ section 3 (Prop. 4, eq. 5; Prop. 6,
eq. 11), generalized from one equality ``alpha . v = A`` to the edit-rule polyhedron
``{v : A v = b, G v <= h}``. Several random restarts are run and the one with the lowest
objective is kept: the iteration only reaches a local optimum and different optima give
different clusters ([4]_ section 3.1, "best of 20 executions").

Constrained centre update. With the memberships fixed, the centre ``v_i`` only appears in
``sum_k w_k ||x_k - v_i||^2`` with ``w_k = u_ki^m`` (FCM, [1]_ Prop. 4) or ``w_k = u_ki``
(EFCM, [1]_ Prop. 6; the entropy term does not involve ``v``). Around the weighted mean
``xbar_i = sum_k w_k x_k / W_i``, ``W_i = sum_k w_k``::

    sum_k w_k ||x_k - v||^2 = W_i ||v - xbar_i||^2 + sum_k w_k ||x_k - xbar_i||^2,

since the cross term vanishes, so the constrained minimizer over any feasible set is the
Euclidean projection of the unconstrained centre (eq. 1 / eq. 4) onto it, in the coordinates
the objective is written in. For one equality this is eq. 5 (weights ``u^m``) and eq. 11
(weights ``u``); for the polyhedron it is
:class:`~sdcflow.core.linear.projection.PolyhedronProjector`. Data that satisfy the rules
have every weighted mean inside the (convex) set, the projection leaves it unchanged, and
the constrained algorithm is unconstrained FCM / EFCM iterate by iterate ([1]_ Prop. 5, 7).

Memberships are computed relative to the nearest centre (``_kernels``): under FCM a record on
one or more centres gets membership 1 shared among them, 0 elsewhere (the limit of Prop. 1,
0/0 there); under EFCM the formula is smooth at ``D = 0`` (eq. 3). A pass never stores the
``n x c`` memberships: a compiled kernel adds each record's contribution to the centre sums
(O(n c d) time, O(c d) memory), and without truncation the whole iteration runs compiled,
constrained or not, because the recursive search of fuzzy microaggregation runs thousands of
fits of a few records.

Truncation. For large ``n c`` each record only sees its ``Q = n_neighbors`` nearest centres
(a KD-tree on the centres, refreshed through the centres' own neighbour graph when they have
moved by more than half the median margin ``d_Q - d_1`` of the candidate lists, and by an
exact query at the start and before convergence is declared) and keeps the smallest number
``q_k`` of largest memberships holding ``mass`` of the candidates' membership, renormalized;
an iteration costs O(n Q d). With ``D_1 <= ... <= D_Q`` a record's squared distances to its
candidates, ``f(D) = D^(-1/(m-1))`` (FCM) or ``exp(-lam D)`` (EFCM) and ``S = sum_j f(D_j)``,
every other centre has ``D >= D_Q``, so the membership outside the candidates, relative to
theirs, is at most::

    tail = (c - Q) f(D_Q) / S,

and the record loses at most ``(1 - mass) + tail`` of its full membership. The bound charges
every far centre at the ``Q``-th distance, so the dropped mass is also measured exactly on a
sample of records (``FCMResult.truncation``). Truncation is faithful only when memberships
concentrate: a shell at distance ``r`` holds about ``r^(d-1)`` centres of membership
``~ r^(-2/(m-1))``, summable only for ``m < 1 + 2/d`` (1.2 in 10 dimensions); above that
truncated FCM is a different, crisper algorithm and ``truncate=False`` (or fewer variables per
block) is the choice. Measured objective gaps, dropped mass and times are in
``docs/benchmarks/``.

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems 39(5), 2020,
   doi:10.3233/JIFS-189074.
.. [2] J. C. Bezdek, *Pattern Recognition with Fuzzy Objective Function Algorithms*, Plenum
   Press, New York, 1981.
.. [3] S. Miyamoto and M. Mukaidono, "Fuzzy c-means as a regularization and maximum entropy
   approach", Proc. 7th IFSA World Congress (IFSA'97), Prague, vol. II, pp. 86-92, 1997.
.. [4] V. Torra and S. Ladra, "Cluster-specific information loss measures in data privacy: a
   review", Proc. 3rd Int. Conf. on Availability, Reliability and Security (ARES 2008), IEEE,
   2008, doi:10.1109/ARES.2008.87.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.spatial import cKDTree

from sdcflow.core.fuzzy import _kernels as _k
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.core.parallel import threads
from sdcflow.core.validation import check_matrix, check_random_state
from sdcflow.errors import ParameterError

DENSE_LIMIT = 5e7  # n * c above which truncate='auto' switches to nearest-centre truncation
TRY_TRUNCATION = 1e6  # n * c above which truncate='auto' tries truncation, checked by sampling
# Mean sampled membership share truncation may drop under 'auto': faithful regimes drop well
# under 1 %, unfaithful ones tens of % (docs/benchmarks/).
AUTO_MAX_DROPPED = 1e-2
INIT_JITTER = 1e-3  # random seeds start this many root-mean-variances away from their record


@dataclass(frozen=True)
class Fuzziness:
    """The fuzzifier of FCM (``m > 1``) or of entropy FCM (``lam > 0``): exactly one is set."""

    m: float | None = None
    lam: float | None = None

    @property
    def entropy(self) -> bool:
        return self.lam is not None

    def kernel_args(self) -> tuple[float, float, bool]:
        """``(m, lam, entropy)`` as the compiled kernels take them."""
        if self.lam is not None:
            return 1.0, float(self.lam), True
        return float(self.m), 1.0, False  # type: ignore[arg-type]

    def describe(self) -> dict[str, float]:
        return {"lambda": float(self.lam)} if self.entropy else {"m": float(self.m)}  # type: ignore[arg-type]


def check_fuzziness(m: float | None, lam: float | None, *, suffix: str = "") -> Fuzziness:
    """Validate the fuzzifier: exactly one of ``m > 1`` (FCM) or ``lam > 0`` (EFCM)."""
    if (m is None) == (lam is None):
        raise ParameterError(
            f"give exactly one of m{suffix} (fuzzy c-means, > 1) or lambda{suffix} "
            f"(entropy fuzzy c-means, > 0); got m{suffix}={m!r}, lambda{suffix}={lam!r}",
            field=f"m{suffix}",
        )
    if m is not None:
        if not np.isfinite(m) or m <= 1.0:
            raise ParameterError(
                f"m{suffix} must be a finite number > 1 (m -> 1 is k-means), got {m!r}",
                field=f"m{suffix}",
            )
        return Fuzziness(m=float(m))
    if not np.isfinite(lam) or lam <= 0.0:  # type: ignore[arg-type]
        raise ParameterError(
            f"lambda{suffix} must be a finite number > 0, got {lam!r}",
            field=f"lambda{suffix}" if suffix else "lam",
        )
    return Fuzziness(lam=float(lam))  # type: ignore[arg-type]


@dataclass
class FCMResult:
    """Result of :func:`fuzzy_c_means`.

    Attributes
    ----------
    centers : ndarray of shape (c, d)
        Cluster centres of the restart with the lowest objective.
    objective : float
        ``J(u, V)`` at those centres with optimal memberships ([1]_ Prop. 1 / eq. 2); under
        truncation, the truncated objective.
    expected_sizes : ndarray of shape (c,)
        Column sums ``sum_k w_k u_ki`` of the memberships at ``centers``; they sum to
        ``sum_k w_k`` (``n`` without weights).
    n_iter : int
        Iterations of the kept restart.
    converged : bool
        Whether the largest centre move fell below the tolerance before ``max_iter``.
    status : int
        0 converged, 1 iteration limit reached.
    message : str
    objectives : list of float
        Final objective of every restart, in order.
    truncation : dict or None
        Truncation diagnostics (see module docstring) or None for full FCM.
    memberships : ndarray of shape (n, c) or None
        The membership matrix at ``centers``, filled only by callers that need it (the
        cluster-specific information loss); a fit never stores it (O(n c) memory).
    """

    centers: np.ndarray
    objective: float
    expected_sizes: np.ndarray
    n_iter: int
    converged: bool
    status: int
    message: str
    objectives: list[float] = field(default_factory=list)
    truncation: dict[str, Any] | None = None
    memberships: np.ndarray | None = None


def _as_projector(
    constraints: LinearConstraints | PolyhedronProjector | None, d: int
) -> PolyhedronProjector | None:
    if constraints is None or isinstance(constraints, PolyhedronProjector):
        return constraints
    if constraints.is_empty:
        return None
    if constraints.A.shape[1] != d or constraints.G.shape[1] != d:
        raise ParameterError(
            f"constraints are over {len(constraints.columns)} columns but X has {d}; "
            "restrict them to the clustered columns"
        )
    return PolyhedronProjector.from_constraints(constraints)


class _Neighbours:
    """Candidate centres per record: an exact KD-tree query on the centres at the start and
    before convergence is declared; in between, when the centres have moved by more than
    ``refresh`` times the candidate lists' median margin, a cheap refresh through the
    centres' own neighbour graph (:func:`_kernels.refine_candidates`)."""

    def __init__(self, X: np.ndarray, n_neighbors: int, refresh: float) -> None:
        self.X = X
        self.Q = n_neighbors
        self.refresh = refresh
        self.nbr: np.ndarray | None = None
        self.moved = 0.0
        self.radius = 0.0
        self.queries = 0
        self.refinements = 0
        self.exact_next = True
        self.graph_size = 16  # neighbours per centre in the centre graph

    def get(self, V: np.ndarray) -> tuple[np.ndarray, bool]:
        """Candidates ``(n, Q)`` and whether they are exactly the ``Q`` nearest centres."""
        if self.exact_next or self.nbr is None:
            # The first query, against the random seeds, may be (1+eps)-approximate (eps = 1,
            # much cheaper): the centres move most in the first iterations and the graph
            # refresh repairs the lists.
            first = self.nbr is None
            eps = 1.0 if first else 0.0
            dist, nbr = cKDTree(V).query(self.X, k=self.Q, eps=eps, workers=threads())
            self.nbr = np.ascontiguousarray(nbr.reshape(len(self.X), self.Q), dtype=np.int64)
            dist = np.asarray(dist).reshape(len(self.X), -1)
            # the candidate list's margin: how far centres may move before a centre outside
            # it could overtake one inside
            self.radius = float(np.median(dist[:, -1] - dist[:, 0]))
            self.moved = 0.0
            self.queries += 1
            self.exact_next = False
            return self.nbr, not first
        if np.quantile(self.moved, 0.9) > self.refresh * self.radius:
            L = min(self.graph_size, len(V))
            graph = cKDTree(V).query(V, k=L, workers=threads())[1].reshape(len(V), L)
            self.nbr = _k.refine_candidates(
                self.X, V, self.nbr, np.ascontiguousarray(graph, dtype=np.int64), 2
            )
            self.moved = 0.0
            self.refinements += 1
        return self.nbr, False

    def note_move(self, shift: np.ndarray) -> None:
        """Accumulate each centre's move (c,) since the last refresh."""
        self.moved = self.moved + shift


def _pass(
    X: np.ndarray,
    w: np.ndarray,
    V: np.ndarray,
    fz: Fuzziness,
    nbrs: _Neighbours | None,
    mass: float,
    force_fresh: bool = False,
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, dict[str, Any] | None, bool]:
    m, lam, ent = fz.kernel_args()
    if nbrs is None:
        sums, wsum, obj, expd = _k.full_pass(X, w, V, m, lam, ent)
        return sums, wsum, float(obj), expd, None, True
    if force_fresh:
        nbrs.exact_next = True
    nbr, fresh = nbrs.get(V)
    sums, wsum, obj, expd, q, tail = _k.truncated_pass(X, w, V, nbr, m, lam, ent, mass)
    info = {"q": q, "tail": tail, "nbr": nbr}
    return sums, wsum, float(obj), expd, info, fresh


def _fcm_restart(
    X: np.ndarray,
    w: np.ndarray,
    V: np.ndarray,
    fz: Fuzziness,
    proj: PolyhedronProjector | None,
    max_iter: int,
    tol_abs: float,
    nbrs: _Neighbours | None,
    mass: float,
) -> tuple[np.ndarray, float, np.ndarray, int, bool, dict[str, Any] | None]:
    if proj is None and nbrs is None:
        V, obj, expd, it, converged = _k.dense_fit(X, w, V, *fz.kernel_args(), max_iter, tol_abs)
        return V, float(obj), expd, int(it), bool(converged), None
    if nbrs is None and proj.compiled_args is not None:
        return _constrained_dense_restart(X, w, V, fz, proj, max_iter, tol_abs)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        sums, wsum, _, _, _, fresh = _pass(X, w, V, fz, nbrs, mass)
        Vn = V.copy()
        filled = wsum > 0.0
        Vn[filled] = sums[filled] / wsum[filled, None]  # [1] eq. 1 (FCM) / eq. 4 (EFCM)
        if proj is not None:
            Vn = proj.project(Vn)  # [1] eq. 5 / eq. 11, generalized (module docstring)
        moves = np.sqrt(((Vn - V) ** 2).sum(axis=1))
        shift = float(moves.max())
        V = Vn
        if nbrs is not None:
            nbrs.note_move(moves)
        if shift <= tol_abs:
            if fresh:
                converged = True
                break
            if nbrs is not None:
                nbrs.exact_next = True  # converged on refreshed candidates: query, go on
    # final objective and sizes at the final centres; candidates are re-queried unless the
    # last pass was exact and the centres have moved by at most tol since
    exact = nbrs is not None and not converged
    _, _, obj, expd, info, _ = _pass(X, w, V, fz, nbrs, mass, force_fresh=exact)
    return V, obj, expd, it, converged, info


def _constrained_dense_restart(
    X: np.ndarray,
    w: np.ndarray,
    V: np.ndarray,
    fz: Fuzziness,
    proj: PolyhedronProjector,
    max_iter: int,
    tol_abs: float,
) -> tuple[np.ndarray, float, np.ndarray, int, bool, None]:
    """The constrained loop compiled, handing back to Python only for the projections the
    face rule cannot settle (then ``proj.project`` solves them exactly)."""
    args = fz.kernel_args()
    done, converged = 0, False
    while done < max_iter and not converged:
        V, Vn, its, converged, stalled = _k.constrained_dense_fit(
            X, w, V, *args, max_iter - done, tol_abs, *proj.compiled_args
        )
        done += its
        if stalled:
            P = proj.project(Vn)
            converged = float(np.sqrt(((P - V) ** 2).sum(axis=1)).max()) <= tol_abs
            V, done = P, done + 1
        elif not converged:
            break  # iteration limit
    _, _, obj, expd = _k.full_pass(X, w, V, *args)
    return V, float(obj), expd, done, bool(converged), None


def fuzzy_c_means(
    X: np.ndarray,
    n_clusters: int,
    *,
    m: float | None = None,
    lam: float | None = None,
    constraints: LinearConstraints | PolyhedronProjector | None = None,
    sample_weight: np.ndarray | None = None,
    restarts: int = 10,
    max_iter: int = 300,
    tol: float = 1e-4,
    truncate: bool | Literal["auto"] = "auto",
    n_neighbors: int = 32,
    mass: float = 0.999,
    init: np.ndarray | None = None,
    screen: int | None = None,
    random_state: int | np.random.Generator | None = None,
) -> FCMResult:
    """Fuzzy c-means (``m``) or entropy fuzzy c-means (``lam``), optionally constrained.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Records, in the coordinates the objective is measured in (standardize beforehand if
        the variables have different units; constraints must be expressed in the same
        coordinates).
    n_clusters : int
        Number of clusters ``c``, 1 <= c <= number of records with positive weight.
    m : float, optional
        FCM fuzzifier, > 1 ([1]_ Prop. 1). Exactly one of ``m`` and ``lam``.
    lam : float, optional
        EFCM parameter lambda, > 0 ([1]_ eq. 2-4); smaller is fuzzier.
    constraints : LinearConstraints or PolyhedronProjector, optional
        Centres are kept in ``{A v = b, G v <= h}`` ([1]_ Prop. 4 / 6, generalized).
    sample_weight : array-like of shape (n,), optional
        Non-negative record weights multiplying each record's objective terms (used by the
        recursive splitting of fuzzy microaggregation). Default: all ones.
    restarts : int
        Random initializations (``c`` distinct records drawn with probability proportional
        to the weights, each moved by a Gaussian jitter of ``1e-3`` root mean variances so
        that no centre starts exactly on a record); the lowest objective is kept ([4]_).
    max_iter : int
        Iteration limit per restart.
    tol : float
        Convergence when the largest centre move is at most ``tol`` times the root mean
        column variance of ``X``.
    truncate : bool or 'auto'
        Restrict memberships to the nearest centres (module docstring). ``'auto'``: always
        when ``n c > 5e7``; never when ``n c <= 1e6`` or ``c <= 2 n_neighbors``; in between,
        a truncated fit is kept if the membership share it drops, measured on 256 sampled
        records against all centres, averages at most 1 %, else it is refitted in full
        (the result's ``message`` says so).
    n_neighbors : int
        Candidate centres per record under truncation (``Q``).
    mass : float in (0, 1]
        Membership share of the candidates each record keeps under truncation.
    init : ndarray of shape (c, d), optional
        Initial centres for the first restart (the others are random).
    screen : int, optional
        With several restarts, run each for only ``screen`` iterations and continue the one
        with the lowest objective to convergence (``restarts - 1`` fewer full runs). The
        ranking after a few tens of iterations predicts the final one well but not perfectly
        (``docs/benchmarks/``). Default: every restart runs to convergence.
    random_state : None, int or numpy.random.Generator
        Source of the random initializations.

    Returns
    -------
    FCMResult
    """
    X = check_matrix(X)
    n, d = X.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ParameterError("sample_weight must be n finite non-negative numbers, not all zero")
    fz = check_fuzziness(m, lam)
    npos = int(np.count_nonzero(w))
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)):
        raise ParameterError(
            f"n_clusters must be an integer, got {n_clusters!r}", field="n_clusters"
        )
    if not 1 <= n_clusters <= npos:
        raise ParameterError(
            f"n_clusters must be between 1 and the {npos} records with positive weight, "
            f"got {n_clusters}",
            field="n_clusters",
        )
    if screen is not None and not 1 <= int(screen):
        raise ParameterError(
            f"screen must be a positive number of iterations, got {screen!r}", field="screen"
        )
    if int(restarts) < 1 or int(max_iter) < 1 or not tol > 0:
        raise ParameterError(
            f"restarts and max_iter must be >= 1 and tol > 0, got restarts={restarts}, "
            f"max_iter={max_iter}, tol={tol}"
        )
    if not 0.0 < mass <= 1.0:
        raise ParameterError(f"mass must be in (0, 1], got {mass}")
    c = int(n_clusters)
    Q = min(int(n_neighbors), c)
    if truncate is not False and Q < 1:
        raise ParameterError(f"n_neighbors must be >= 1, got {n_neighbors}")
    proj = _as_projector(constraints, d)
    rng = check_random_state(random_state)
    if init is not None:
        init = check_matrix(init, name="init")
        if init.shape != (c, d):
            raise ParameterError(f"init must have shape ({c}, {d}), got {init.shape}")
    screen = None if screen is None or int(restarts) == 1 else min(int(screen), int(max_iter))
    args = (X, w, c, fz, proj, int(restarts), int(max_iter), float(tol), Q, mass, init, screen, rng)
    if truncate != "auto":
        return _fit(*args, truncate=bool(truncate))
    size = float(n) * c
    if size > DENSE_LIMIT:
        return _fit(*args, truncate=True)
    if size <= TRY_TRUNCATION or c <= 2 * Q:
        return _fit(*args, truncate=False)
    # Medium size: truncation is much cheaper, but faithful only when memberships
    # concentrate (module docstring); keep it only if the dropped mass measured on sampled
    # records is small, else refit in full.
    fit = _fit(*args, truncate=True)
    dropped = fit.truncation["sampled_dropped_mass_mean"]  # type: ignore[index]
    if dropped <= AUTO_MAX_DROPPED:
        return fit
    full = _fit(*args, truncate=False)
    full.message += (
        f"; fitted in full: truncation to {Q} nearest centres dropped {dropped:.2%} of the "
        "membership on sampled records"
    )
    return full


def _fit(
    X: np.ndarray,
    w: np.ndarray,
    c: int,
    fz: Fuzziness,
    proj: PolyhedronProjector | None,
    restarts: int,
    max_iter: int,
    tol: float,
    Q: int,
    mass: float,
    init: np.ndarray | None,
    screen: int | None,
    rng: np.random.Generator,
    *,
    truncate: bool,
) -> FCMResult:
    """The restarts of :func:`fuzzy_c_means` on validated input; the lowest objective wins
    (after ``screen`` iterations, when given, and the winner then runs on)."""
    n, d = X.shape
    npos = int(np.count_nonzero(w))
    wn = w / w.sum()
    mean = wn @ X
    scale = float(np.sqrt(max((wn @ (X - mean) ** 2).mean(), 0.0))) or 1.0
    tol_abs = tol * scale

    best: tuple | None = None
    objectives: list[float] = []
    queries = refinements = 0
    for r in range(restarts):
        if r == 0 and init is not None:
            V0 = init.copy()
        else:
            seeds = rng.choice(n, size=c, replace=False, p=None if npos == n else wn)
            # Seeds are moved off their records: a centre exactly on a record gives it
            # membership 1 ([1] Prop. 1 at D = 0), which for large m pins the centre there (a
            # stationary point of J) and would defeat [1] Prop. 2.
            V0 = X[seeds] + INIT_JITTER * scale * rng.standard_normal((c, d))
        nbrs = _Neighbours(X, Q, refresh=0.5) if truncate else None
        out = _fcm_restart(X, w, V0, fz, proj, screen or max_iter, tol_abs, nbrs, mass)
        if nbrs is not None:
            queries += nbrs.queries
            refinements += nbrs.refinements
        objectives.append(out[1])
        if best is None or out[1] < best[1]:
            best = out
    V, obj, expd, it, conv, info = best  # type: ignore[misc]
    if screen is not None and not conv and it < max_iter:
        nbrs = _Neighbours(X, Q, refresh=0.5) if truncate else None
        V, obj, expd, more, conv, info = _fcm_restart(
            X, w, V, fz, proj, max_iter - it, tol_abs, nbrs, mass
        )
        it += more
        if nbrs is not None:
            queries += nbrs.queries
            refinements += nbrs.refinements
    trunc = None
    if info is not None:
        trunc = _truncation_report(X, V, fz, info, mass, rng, c, Q, queries, refinements)
    return FCMResult(
        centers=V,
        objective=obj,
        expected_sizes=expd,
        n_iter=it,
        converged=conv,
        status=0 if conv else 1,
        message="converged: largest centre move below tol"
        if conv
        else f"iteration limit {max_iter} reached before the centres settled",
        objectives=objectives,
        truncation=trunc,
    )


def _truncation_report(
    X: np.ndarray,
    V: np.ndarray,
    fz: Fuzziness,
    info: dict[str, Any],
    mass: float,
    rng: np.random.Generator,
    c: int,
    Q: int,
    queries: int,
    refinements: int,
    sample: int = 256,
) -> dict[str, Any]:
    """Summaries of the truncation (never per-record values): kept ``q``, the certified tail
    bound, and the membership mass dropped, measured exactly on a random sample of records."""
    q, tail = info["q"], info["tail"]
    rows = rng.choice(len(X), size=min(sample, len(X)), replace=False)
    dropped = sampled_dropped_mass(X[rows], V, info["nbr"][rows], fz, mass)
    return {
        "candidates": Q,
        "mass": mass,
        "kd_tree_queries": queries,
        "graph_refreshes": refinements,
        "kept_min": int(q.min()),
        "kept_mean": float(q.mean()),
        "kept_max": int(q.max()),
        "tail_bound_median": float(np.median(tail)),
        "tail_bound_p99": float(np.quantile(tail, 0.99)),
        "certified_fraction": float(np.mean(tail <= 1.0 - mass)),
        "sampled_records": int(rows.size),
        "sampled_dropped_mass_mean": float(dropped.mean()),
        "sampled_dropped_mass_max": float(dropped.max()),
    }


def sampled_dropped_mass(
    X: np.ndarray, V: np.ndarray, nbr: np.ndarray, fz: Fuzziness, mass: float
) -> np.ndarray:
    """For each row of ``X`` (s, d): the share of its full membership (over all centres) that
    truncation to its candidates ``nbr`` (s, Q) with ``mass`` drops. Returns (s,)."""
    m, lam, ent = fz.kernel_args()
    U = _k.dense_memberships(X, V, m, lam, ent)
    idx, _ = _k.candidate_memberships(X, V, np.ascontiguousarray(nbr), m, lam, ent, mass)
    kept = np.where(idx >= 0, np.take_along_axis(U, np.maximum(idx, 0), axis=1), 0.0)
    return np.clip(1.0 - kept.sum(axis=1), 0.0, 1.0)


def memberships(
    X: np.ndarray, centers: np.ndarray, m: float | None = None, *, lam: float | None = None
) -> np.ndarray:
    """Dense membership matrix ([1]_ Prop. 1 / eq. 3) for small problems.

    Shapes: X (n, d), centers (c, d) -> (n, c), rows summing to one. Under FCM a record
    equal to a centre gets membership 1 there (shared equally between coinciding centres);
    under EFCM (``lam``) memberships stay smooth there.
    """
    X = check_matrix(X)
    V = check_matrix(centers, name="centers")
    if V.shape[1] != X.shape[1]:
        raise ParameterError(f"centers have {V.shape[1]} columns, X has {X.shape[1]}")
    mm, ll, ent = check_fuzziness(m, lam).kernel_args()
    return _k.dense_memberships(X, V, mm, ll, ent)


def truncated_memberships(
    X: np.ndarray,
    centers: np.ndarray,
    *,
    m: float | None = None,
    lam: float | None = None,
    n_neighbors: int = 32,
    mass: float = 0.999,
) -> tuple[np.ndarray, np.ndarray]:
    """Memberships restricted to each record's nearest centres, as fixed-width sparse rows.

    Returns ``(idx, val)`` of shape (n, Q): centre indices (-1 in unused slots) and
    memberships (0 there), each row ordered by decreasing membership and summing to one.
    See the module docstring for what truncation drops.
    """
    X = check_matrix(X)
    V = check_matrix(centers, name="centers")
    mm, ll, ent = check_fuzziness(m, lam).kernel_args()
    Q = min(int(n_neighbors), V.shape[0])
    _, nbr = cKDTree(V).query(X, k=Q, workers=threads())
    nbr = np.ascontiguousarray(np.asarray(nbr).reshape(len(X), Q), dtype=np.int64)
    return _k.candidate_memberships(X, V, nbr, mm, ll, ent, mass)


def fcm_objective(
    X: np.ndarray,
    centers: np.ndarray,
    *,
    m: float | None = None,
    lam: float | None = None,
    sample_weight: np.ndarray | None = None,
) -> float:
    """Full objective ``J(u*(V), V)`` ([1]_ Prop. 1 / eq. 2) at optimal memberships, O(n c d)."""
    X = check_matrix(X)
    V = check_matrix(centers, name="centers")
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
    mm, ll, ent = check_fuzziness(m, lam).kernel_args()
    return float(_k.full_pass(X, w, V, mm, ll, ent)[2])
