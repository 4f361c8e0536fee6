"""The linear-programming bound on the fewest suppressions for identical-row k-anonymity.

:func:`~sdcflow.core.suppression.local.lower_bound` counts, class by class, the values a
record must blank to reach a row that k records of the file agree with. It ignores that those
k records must actually be released with that row, and that each record is released once. The
linear relaxation of the 0-1 program, aggregated over classes of identical rows, keeps both:

* :math:`x_{cg} \\ge 0`, the records of a class c of fewer than k identical rows (size
  :math:`s_c`) released with row g, where g is c's row with a set T of its present keys blanked,
  at cost :math:`|T|` each; :math:`\\sum_g x_{cg} = s_c` (every record is released once);
* :math:`z_{vg} \\ge 0`, the records a class v of at least k gives to row g (:math:`T \\neq
  \\emptyset`), :math:`\\sum_g z_{vg} \\le s_v`;
* :math:`y_g \\in [0, 1]`, row g is released, for every row other than an untouched class of
  at least k: :math:`k\\,y_g \\le \\sum_c x_{cg} + \\sum_v z_{vg}` (a released row holds k
  records), :math:`x_{cg} \\le s_c\\,y_g` and :math:`z_{vg} \\le \\min(s_v, k)\\,y_g` (only
  a released row takes records).

Minimizing :math:`\\sum |T| (x + z)` bounds every local suppression from below: the classes of
a release give a feasible point (a donor giving more than k to one row can give k; a row only
donors use can be dropped; both lower the cost). Rows that fewer than k records of the file
could be released with are left out (their :math:`y_g` is 0). The program has one variable per
class and subset of its present keys (2^d for d keys) and is solved by HiGHS [1]; it proves
how far a result can still be from the fewest, and is meant for benchmarks and audits, not for
every release (seven keys on 32,561 records take minutes).

References
----------
[1] Q. Huangfu, J.A.J. Hall, "Parallelizing the dual revised simplex method", Mathematical
    Programming Computation 10(1) (2018) 119-142, doi:10.1007/s12532-017-0130-5 (HiGHS).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from sdcflow.core.distinct import row_ids
from sdcflow.core.validation import check_k
from sdcflow.errors import ParameterError


@dataclass(frozen=True)
class RelaxationBound:
    """The linear-programming bound.

    Attributes
    ----------
    bound : float
        No local suppression reaching identical-row k blanks fewer values (the LP optimum;
        ``ceil`` of it is an integer bound).
    variables : int
        Columns of the program.
    status : str
        HiGHS's message.
    """

    bound: float
    variables: int
    status: str


def _moves(rows: np.ndarray, subsets: list[tuple[int, ...]], idx: np.ndarray):
    """Every class of ``idx`` with every subset of its present keys blanked:
    (class, released row (m, d), cost)."""
    R = rows[idx]
    present = R >= 0
    owner, released, cost = [], [], []
    for T in subsets:
        sel = np.flatnonzero(present[:, list(T)].all(axis=1)) if T else np.arange(idx.size)
        r = R[sel].copy()
        r[:, list(T)] = -1
        owner.append(idx[sel])
        released.append(r)
        cost.append(np.full(sel.size, len(T), dtype=np.int64))
    return np.concatenate(owner), np.concatenate(released), np.concatenate(cost)


def relaxation_bound(codes: np.ndarray, k: int, *, time_limit: float = 3600.0) -> RelaxationBound:
    """The linear-programming lower bound on the suppressions identical-row k needs.

    Parameters
    ----------
    codes : ndarray of shape (n, d), int
        Key codes, -1 for a missing value.
    k : int
        2 <= k <= n.
    time_limit : float
        Seconds HiGHS may take.

    Returns
    -------
    RelaxationBound
    """
    C = np.asarray(codes)
    if C.ndim != 2 or not np.issubdtype(C.dtype, np.integer):
        raise ParameterError(
            f"codes must be a 2-D integer array (n, d), got shape {C.shape} and dtype "
            f"{C.dtype}; build it with key_codes"
        )
    C = C.astype(np.int32)
    k = check_k(k, C.shape[0])
    d = C.shape[1]
    ids = row_ids(C + 1)
    sizes = np.bincount(ids)
    rows = C[np.unique(ids, return_index=True)[1]]
    unsafe = np.flatnonzero(sizes < k)
    safe = np.flatnonzero(sizes >= k)
    if not unsafe.size:
        return RelaxationBound(0.0, 0, "no class below k")
    subsets = [T for t in range(d + 1) for T in combinations(range(d), t)]
    uc, ur, ucost = _moves(rows, subsets, unsafe)
    sc, sr, scost = _moves(rows, subsets, safe)
    give = scost > 0
    sc, sr, scost = sc[give], sr[give], scost[give]
    g = row_ids(np.concatenate([ur, sr, rows[safe]]) + 1)
    gu, gs, gown = g[: uc.size], g[uc.size : uc.size + sc.size], g[uc.size + sc.size :]
    G = int(g.max()) + 1
    own = np.zeros(G, dtype=bool)
    own[gown] = True
    # rows fewer than k records could be released with stay unused
    pool = np.bincount(gu, weights=sizes[uc], minlength=G)
    pool += np.bincount(gs, weights=sizes[sc], minlength=G)
    reached = np.bincount(gu, minlength=G) > 0
    usable = (pool >= k) | own
    m = usable[gu]
    uc, gu, ucost = uc[m], gu[m], ucost[m]
    m = reached[gs] & usable[gs] & ~own[gs]
    sc, gs, scost = sc[m], gs[m], scost[m]
    targets = np.unique(gu[~own[gu]])
    tmap = np.full(G, -1, dtype=np.int64)
    tmap[targets] = np.arange(targets.size)
    Xu, Xs, Y = uc.size, sc.size, targets.size
    N = Xu + Xs + Y
    cost = np.concatenate([ucost, scost, np.zeros(Y, dtype=np.int64)]).astype(np.float64)
    cls = np.full(sizes.size, -1, dtype=np.int64)
    cls[unsafe] = np.arange(unsafe.size)
    once = sparse.csr_matrix((np.ones(Xu), (cls[uc], np.arange(Xu))), shape=(unsafe.size, N))
    tu, ts = tmap[gu], tmap[gs]
    iu = np.flatnonzero(tu >= 0)
    ys = Xu + Xs + np.arange(Y)
    holds_k = sparse.csr_matrix(  # k y_g - sum x - sum z <= 0
        (
            np.concatenate([-np.ones(iu.size), -np.ones(Xs), np.full(Y, float(k))]),
            (
                np.concatenate([tu[iu], ts, np.arange(Y)]),
                np.concatenate([iu, Xu + np.arange(Xs), ys]),
            ),
        ),
        shape=(Y, N),
    )
    takes_x = sparse.csr_matrix(  # x_cg - s_c y_g <= 0
        (
            np.concatenate([np.ones(iu.size), -sizes[uc[iu]].astype(np.float64)]),
            (np.tile(np.arange(iu.size), 2), np.concatenate([iu, Xu + Xs + tu[iu]])),
        ),
        shape=(iu.size, N),
    )
    cap = np.minimum(sizes[sc], k).astype(np.float64)
    takes_z = sparse.csr_matrix(  # z_vg - min(s_v, k) y_g <= 0
        (
            np.concatenate([np.ones(Xs), -cap]),
            (np.tile(np.arange(Xs), 2), np.concatenate([Xu + np.arange(Xs), Xu + Xs + ts])),
        ),
        shape=(Xs, N),
    )
    scl = np.full(sizes.size, -1, dtype=np.int64)
    scl[safe] = np.arange(safe.size)
    gives = sparse.csr_matrix((np.ones(Xs), (scl[sc], Xu + np.arange(Xs))), shape=(safe.size, N))
    res = linprog(
        cost,
        A_ub=sparse.vstack([holds_k, takes_x, takes_z, gives]).tocsr(),
        b_ub=np.concatenate([np.zeros(Y + iu.size + Xs), sizes[safe].astype(np.float64)]),
        A_eq=once,
        b_eq=sizes[unsafe].astype(np.float64),
        bounds=np.column_stack([np.zeros(N), np.concatenate([sizes[uc], cap, np.ones(Y)])]),
        method="highs",
        options={"time_limit": float(time_limit)},
    )
    if res.status != 0:
        raise ParameterError(
            f"the linear program did not finish ({res.message}); raise time_limit or use "
            "lower_bound"
        )
    return RelaxationBound(float(res.fun), int(N), str(res.message))
