"""Refinement of a microaggregation partition: local search, then iterated local search.

Given a partition into groups of k..2k-1 records (MDAV's, PS's, any), refinement lowers its
SSE while keeping every group within k..2k-1 records [3]:

1. **Local search.** For a record x in group A (a records, centroid c_A) and a group B
   (b records, centroid c_B) holding one of x's nearest neighbours, two changes are scored
   exactly in O(d) each, from the running group sums:

   * *move* x to B (only while a > k and b < 2k - 1) [1]::

         delta = b / (b + 1) ||x - c_B||^2 - a / (a - 1) ||x - c_A||^2

   * *swap* x with a member y of B (sizes unchanged). Replacing x by y in A changes
     ``SSE_A = sum ||z||^2 - ||s_A||^2 / a`` by ``||y||^2 - ||x||^2 - (2 s_A.(y - x) +
     ||y - x||^2) / a``, i.e. ``||y - c_A||^2 - ||x - c_A||^2 - ||x - y||^2 / a``; with the
     same for B::

         delta = ||y - c_A||^2 - ||x - c_A||^2 + ||x - c_B||^2 - ||y - c_B||^2
                 - ||x - y||^2 (1/a + 1/b)

   * *dissolve* a group: its records join, one after the other, the neighbouring group with
     room where each adds least (``b / (b + 1) ||x - c_B||^2`` at the time it joins); scored as
     the sum of those additions minus the group's SSE. This lowers the number of groups, which
     moves and swaps alone cannot do from a partition of equal-sized groups such as MDAV's.

   Each record takes the best improving change among the groups of its ``K`` nearest
   neighbours; records whose own group or a candidate group changed are re-queued, until no
   change improves the SSE by more than a tolerance (a relative 1e-10 of the mean squared
   norm, so rounding cannot make it cycle).

2. **Iterated local search** [2] within a budget (CPU seconds, or a number of rounds): a round
   picks a random record, takes its group and up to three groups of its nearest neighbours,
   perturbs them (two random swaps between them, or, one round in eight, dissolves one of
   them into the others), runs the local search from the records touched, and keeps the result
   only if the SSE went down; otherwise every change of the round is undone.

Every change kept lowers the SSE, so refinement never raises it; :func:`refine_groups` also
compares the exact SSE of the result with that of the input and returns the input if rounding
ever made the result worse. Neighbour lists: exact for files of up to ``EXACT_NEIGHBOURS``
records, otherwise the ``K`` nearest within cells of a few thousand records of two different
spatial splits (:func:`neighbour_lists`) -- the lists only propose candidates, every score is
exact. Memory O(n (d + K)); a local search pass O(n K k d); no all-pairs loop.

The figures on Census and EIA (targets of issue 15, the literature) and the commands:
``docs/benchmarks/``, section "MDAV and PS".

References
----------
[1] J.A. Hartigan, M.A. Wong, "Algorithm AS 136: A K-means clustering algorithm", Journal of
    the Royal Statistical Society, Series C (Applied Statistics) 28(1) (1979) 100-108,
    doi:10.2307/2346830: the change of SSE when one point leaves a cluster of a points,
    ``-a/(a-1) ||x - c||^2``, or joins one of b points, ``+b/(b+1) ||x - c||^2``.
[2] H.R. Lourenço, O.C. Martin, T. Stützle, "Iterated local search", in F. Glover,
    G.A. Kochenberger (eds.), Handbook of Metaheuristics, Kluwer (2003) 320-353,
    doi:10.1007/0-306-48056-5_11: perturbation, local search, acceptance of the better.
[3] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
    statistical disclosure control", IEEE Transactions on Knowledge and Data Engineering
    14(1) (2002) 189-201, doi:10.1109/69.979982: optimal groups have k..2k-1 records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sdcflow.core.jit import cached_njit
from sdcflow.core.microaggregation.neighbours import (
    CELL,
    EXACT_NEIGHBOURS,
    neighbour_lists,
    reverse_lists,
    spatial_cells,
)
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.validation import check_k, check_matrix, check_random_state
from sdcflow.errors import DataError, ParameterError

_LOG = 1 << 15  # changes one ILS round may undo; a round that would need more stops its search
_DISSOLVE_EVERY = 8  # one ILS round in this many dissolves a group instead of swapping


# ---------------------------------------------------------------------------------------------
# State: group sizes, sums, centroids, member lists, each record's distance to its centroid
# ---------------------------------------------------------------------------------------------


@cached_njit(nogil=True, inline="always", fastmath=True)
def _d2(A: np.ndarray, i: int, B: np.ndarray, j: int) -> float:
    """Squared distance between row i of A and row j of B.

    ``fastmath`` lets the compiler reorder the sum (a third faster); its rounding, about 1e-16
    relative, is far below the search's tolerance, and the result's SSE is checked exactly.
    """
    acc = 0.0
    for c in range(A.shape[1]):
        t = A[i, c] - B[j, c]
        acc += t * t
    return acc


@cached_njit(nogil=True)
def _init_state(Z, lab, G, cap):
    """Sizes (G,), sums and centroids (G, d), members (G, cap), slots (n,), own (n,)."""
    n, d = Z.shape
    size = np.zeros(G, dtype=np.int64)
    sums = np.zeros((G, d))
    mem = np.full((G, cap), -1, dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)
    for x in range(n):
        g = lab[x]
        mem[g, size[g]] = x
        slot[x] = size[g]
        size[g] += 1
        for c in range(d):
            sums[g, c] += Z[x, c]
    cen = np.zeros((G, d))
    for g in range(G):
        if size[g] > 0:
            for c in range(d):
                cen[g, c] = sums[g, c] / size[g]
    own = np.empty(n)
    for x in range(n):
        own[x] = _d2(Z, x, cen, lab[x])
    return size, sums, cen, mem, slot, own


@cached_njit(nogil=True)
def _move(Z, lab, size, sums, cen, mem, slot, x, A, B):
    """Move record x from group A to group B; sums and centroids follow, ``own`` does not."""
    d = Z.shape[1]
    p = slot[x]
    last = size[A] - 1
    y = mem[A, last]  # the last member fills x's slot
    mem[A, p] = y
    slot[y] = p
    mem[A, last] = -1
    size[A] = last
    for c in range(d):
        sums[A, c] -= Z[x, c]
        cen[A, c] = sums[A, c] / last if last > 0 else 0.0
    mem[B, size[B]] = x
    slot[x] = size[B]
    size[B] += 1
    for c in range(d):
        sums[B, c] += Z[x, c]
        cen[B, c] = sums[B, c] / size[B]
    lab[x] = B


@cached_njit(nogil=True)
def _refresh(Z, size, sums, cen, mem, own, g, exact):
    """Distances of group g's members to its centroid; ``exact`` re-sums the group first."""
    d = Z.shape[1]
    m = size[g]
    if exact:
        for c in range(d):
            sums[g, c] = 0.0
        for i in range(m):
            x = mem[g, i]
            for c in range(d):
                sums[g, c] += Z[x, c]
        for c in range(d):
            cen[g, c] = sums[g, c] / m if m > 0 else 0.0
    for i in range(m):
        x = mem[g, i]
        own[x] = _d2(Z, x, cen, g)


@cached_njit(nogil=True, inline="always")
def _listed(values, count, v):
    """Whether v is among ``values[:count]`` (a short list: linear scan)."""
    for t in range(count):
        if values[t] == v:
            return True
    return False


@cached_njit(nogil=True)
def _group_sse(size, own, mem, g):
    s = 0.0
    for i in range(size[g]):
        s += own[mem[g, i]]
    return s


@cached_njit(nogil=True)
def _push_one(x, queue, qtail, inq):
    if not inq[x]:
        inq[x] = True
        queue[qtail % queue.shape[0]] = x
        qtail += 1
    return qtail


@cached_njit(nogil=True)
def _push(g, size, mem, rptr, ridx, queue, qtail, inq):
    """Queue group g's members and every record that lists one of them as a neighbour."""
    for i in range(size[g]):
        m = mem[g, i]
        qtail = _push_one(m, queue, qtail, inq)
        for p in range(rptr[m], rptr[m + 1]):
            qtail = _push_one(ridx[p], queue, qtail, inq)
    return qtail


@cached_njit(nogil=True)
def _push_light(g, size, mem, x, rptr, ridx, queue, qtail, inq):
    """Queue group g's members and the records that list x (which changed group)."""
    for i in range(size[g]):
        qtail = _push_one(mem[g, i], queue, qtail, inq)
    for p in range(rptr[x], rptr[x + 1]):
        qtail = _push_one(ridx[p], queue, qtail, inq)
    return qtail


# ---------------------------------------------------------------------------------------------
# Local search
# ---------------------------------------------------------------------------------------------


@cached_njit(nogil=True, fastmath=True)
def _best_change(Z, lab, size, cen, mem, own, nbr, x, k, kmax, tol, seen):
    """Best improving move or swap of record x: (delta, kind 0 none / 1 move / 2 swap, B, y)."""
    K = nbr.shape[1]
    A = lab[x]
    a = size[A]
    dA = own[x]
    best = -tol
    kind = 0
    best_B = -1
    best_y = -1
    ns = 0
    for j in range(K):
        B = lab[nbr[x, j]]
        if B == A or _listed(seen, ns, B):
            continue
        seen[ns] = B
        ns += 1
        b = size[B]
        dB = _d2(Z, x, cen, B)
        if a > k and b < kmax:
            delta = b / (b + 1.0) * dB - a / (a - 1.0) * dA  # [1] leave A, join B
            if delta < best:
                best, kind, best_B = delta, 1, B
        inv = 1.0 / a + 1.0 / b
        for i in range(b):
            y = mem[B, i]
            dxy = _d2(Z, x, Z, y)
            # swap x (A) with y (B): module docstring
            delta = _d2(Z, y, cen, A) - dA + dB - own[y] - dxy * inv
            if delta < best:
                best, kind, best_B, best_y = delta, 2, B, y
    return best, kind, best_B, best_y


@cached_njit(nogil=True)
def _apply(Z, lab, size, sums, cen, mem, slot, own, x, A, B, log, nlog):
    """Move x from A to B and log it; returns the new log length."""
    _move(Z, lab, size, sums, cen, mem, slot, x, A, B)
    if nlog < log.shape[0]:
        log[nlog, 0] = x
        log[nlog, 1] = A
        log[nlog, 2] = B
    return nlog + 1


@cached_njit(nogil=True)
def _local_search(
    Z, lab, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol,
    queue, qhead, qtail, inq, log, nlog, light=False,
):  # fmt: skip
    """Apply the best improving move or swap of each queued record until the queue is empty.

    Stops early, leaving the queue, when the log could not record another change.
    Returns (SSE change, qhead, qtail, nlog).
    """
    n = Z.shape[0]
    seen = np.empty(nbr.shape[1], dtype=np.int64)
    total = 0.0
    while qhead < qtail and nlog + 2 <= log.shape[0]:
        x = queue[qhead % n]
        qhead += 1
        inq[x] = False
        delta, kind, B, y = _best_change(Z, lab, size, cen, mem, own, nbr, x, k, kmax, tol, seen)
        if kind == 0:
            continue
        A = lab[x]
        total += delta
        nlog = _apply(Z, lab, size, sums, cen, mem, slot, own, x, A, B, log, nlog)
        if kind == 2:
            nlog = _apply(Z, lab, size, sums, cen, mem, slot, own, y, B, A, log, nlog)
        _refresh(Z, size, sums, cen, mem, own, A, False)
        _refresh(Z, size, sums, cen, mem, own, B, False)
        if light:
            qtail = _push_light(A, size, mem, x, rptr, ridx, queue, qtail, inq)
            qtail = _push_light(B, size, mem, x if kind == 1 else y, rptr, ridx, queue, qtail, inq)
        else:
            qtail = _push(A, size, mem, rptr, ridx, queue, qtail, inq)
            qtail = _push(B, size, mem, rptr, ridx, queue, qtail, inq)
    return total, qhead, qtail, nlog


@cached_njit(nogil=True)
def _dissolve(Z, lab, size, sums, cen, mem, slot, own, nbr, g, kmax, force, tol, log, nlog):
    """Dissolve group g into neighbouring groups with room, greedily; see the module docstring.

    Kept if it lowers the SSE by more than ``tol`` or ``force``; otherwise undone. Returns
    (SSE change, nlog); change 0.0 and nlog unchanged when nothing was kept.
    """
    K = nbr.shape[1]
    start = nlog
    delta = -_group_sse(size, own, mem, g)
    while size[g] > 0:
        x = mem[g, size[g] - 1]
        best = np.inf
        best_B = -1
        for j in range(K):
            B = lab[nbr[x, j]]
            if B == g or size[B] >= kmax:
                continue
            b = size[B]
            add = b / (b + 1.0) * _d2(Z, x, cen, B)  # [1] joining B
            if add < best:
                best, best_B = add, B
        if best_B < 0 or nlog + 1 > log.shape[0]:
            best = np.inf
            break
        delta += best
        nlog = _apply(Z, lab, size, sums, cen, mem, slot, own, x, g, best_B, log, nlog)
        if not force and delta >= -tol:
            break  # the additions already cost more than the group's SSE saves
    if size[g] == 0 and (force or delta < -tol):
        for t in range(start, nlog):
            _refresh(Z, size, sums, cen, mem, own, log[t, 2], False)
        return delta, nlog
    for t in range(nlog - 1, start - 1, -1):  # undo
        _move(Z, lab, size, sums, cen, mem, slot, log[t, 0], log[t, 2], log[t, 1])
    for t in range(start, nlog):
        _refresh(Z, size, sums, cen, mem, own, log[t, 2], True)
    _refresh(Z, size, sums, cen, mem, own, g, True)
    return 0.0, start


@cached_njit(nogil=True)
def _descend(Z, lab, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol, light):
    """Local search from every record, then dissolves, until neither improves (no undo).

    A group is offered for dissolving once at the start and again only after it changed.
    ``light``: after a change, re-queue the two groups' members and the records listing the
    records that moved, not every record listing a member (faster; may stop a little short
    of a local optimum).
    """
    n = Z.shape[0]
    G = size.shape[0]
    queue = np.arange(n)
    inq = np.ones(n, dtype=np.bool_)
    log = np.empty((_LOG, 3), dtype=np.int64)
    dirty = np.ones(G, dtype=np.bool_)
    total = 0.0
    qhead, qtail = 0, n
    while True:
        while qhead < qtail:
            delta, qhead, qtail, nlog = _local_search(
                Z, lab, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol,
                queue, qhead, qtail, inq, log, 0, light,
            )  # fmt: skip
            total += delta
            for t in range(nlog):
                dirty[log[t, 1]] = True
                dirty[log[t, 2]] = True
        for g in range(G):
            if size[g] == 0 or not dirty[g]:
                continue
            dirty[g] = False
            delta, nlog = _dissolve(
                Z, lab, size, sums, cen, mem, slot, own, nbr, g, kmax, False, tol, log, 0
            )
            if nlog > 0:
                total += delta
                for t in range(nlog):
                    dirty[log[t, 2]] = True
                    qtail = _push(log[t, 2], size, mem, rptr, ridx, queue, qtail, inq)
        if qhead == qtail:
            return total


@cached_njit(nogil=True, inline="always")
def _pick(u: float, m: int) -> int:
    """An integer uniform on 0..m-1 from u uniform on [0, 1)."""
    return min(int(u * m), m - 1)


@cached_njit(nogil=True)
def _iterate(
    Z, lab, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol, draws, n_groups,
):  # fmt: skip
    """One round of iterated local search [2] per row of ``draws`` (rounds, 10), uniform
    numbers in [0, 1) from the caller's generator; returns (SSE change, rounds kept)."""
    n = Z.shape[0]
    K = nbr.shape[1]
    queue = np.empty(n, dtype=np.int64)
    inq = np.zeros(n, dtype=np.bool_)
    log = np.empty((_LOG, 3), dtype=np.int64)
    region = np.empty(n_groups, dtype=np.int64)
    gain = 0.0
    kept = 0
    for r in range(draws.shape[0]):
        u = draws[r]
        # [2] perturbation: the record's group and groups of its nearest neighbours
        x = _pick(u[0], n)
        nr = 1
        region[0] = lab[x]
        for j in range(K):
            if nr == n_groups:
                break
            B = lab[nbr[x, j]]
            if not _listed(region, nr, B):
                region[nr] = B
                nr += 1
        if nr < 2:
            continue
        nlog = 0
        delta = 0.0
        if _pick(u[1], _DISSOLVE_EVERY) == 0:
            g = region[_pick(u[2], nr)]
            delta, nlog = _dissolve(
                Z, lab, size, sums, cen, mem, slot, own, nbr, g, kmax, True, tol, log, 0
            )
        else:
            for s in range(2):
                ia = _pick(u[2 + 4 * s], nr)
                ib = _pick(u[3 + 4 * s], nr - 1)
                ib += ib >= ia
                A = region[ia]
                B = region[ib]
                xa = mem[A, _pick(u[4 + 4 * s], size[A])]
                xb = mem[B, _pick(u[5 + 4 * s], size[B])]
                before = _group_sse(size, own, mem, A) + _group_sse(size, own, mem, B)
                nlog = _apply(Z, lab, size, sums, cen, mem, slot, own, xa, A, B, log, nlog)
                nlog = _apply(Z, lab, size, sums, cen, mem, slot, own, xb, B, A, log, nlog)
                _refresh(Z, size, sums, cen, mem, own, A, False)
                _refresh(Z, size, sums, cen, mem, own, B, False)
                delta += _group_sse(size, own, mem, A) + _group_sse(size, own, mem, B) - before
        qhead, qtail = 0, 0
        for t in range(nlog):
            qtail = _push(log[t, 1], size, mem, rptr, ridx, queue, qtail, inq)
            qtail = _push(log[t, 2], size, mem, rptr, ridx, queue, qtail, inq)
        # [2] local search from the perturbed groups
        dls, qhead, qtail, nlog = _local_search(
            Z, lab, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol,
            queue, qhead, qtail, inq, log, nlog,
        )  # fmt: skip
        while qhead < qtail:  # the log filled up: drop the rest of the queue
            inq[queue[qhead % n]] = False
            qhead += 1
        delta += dls
        if delta < -tol:  # [2] acceptance: the better of the two
            gain += delta
            kept += 1
            continue
        for t in range(nlog - 1, -1, -1):  # undo the round
            _move(Z, lab, size, sums, cen, mem, slot, log[t, 0], log[t, 2], log[t, 1])
        for t in range(nlog):
            _refresh(Z, size, sums, cen, mem, own, log[t, 1], True)
            _refresh(Z, size, sums, cen, mem, own, log[t, 2], True)
    return gain, kept


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefineReport:
    """What a refinement did (figures for the manifest).

    Attributes
    ----------
    sse_before, sse_after : SSE of the input and of the returned partition (same scale as Z).
    groups_before, groups_after : number of groups.
    rounds : iterated-local-search rounds run; kept : rounds that lowered the SSE.
    seconds : CPU seconds spent (neighbour lists, local search, rounds).
    neighbours : K, candidates per record; exact_neighbours : whether the lists are exact.
    """

    sse_before: float
    sse_after: float
    groups_before: int
    groups_after: int
    rounds: int
    kept: int
    seconds: float
    neighbours: int
    exact_neighbours: bool


def partition_sse(Z: np.ndarray, labels: np.ndarray) -> float:
    """Exact SSE of a partition: sum of squared distances of the records to their centroid.

    Shapes: Z (n, d), labels (n,) with values 0..g-1 -> float.
    """
    counts = np.bincount(labels)
    sums = np.zeros((counts.size, Z.shape[1]))
    np.add.at(sums, labels, Z)
    centroids = sums / np.maximum(counts, 1)[:, None]
    return float(((Z - centroids[labels]) ** 2).sum())


def check_groups(labels: object, n: int, k: int) -> np.ndarray:
    """Validate a partition of n records into groups of k..2k-1; return labels 0..g-1.

    Shapes: labels (n,) integers -> (n,) int64, groups renumbered in order of their label.
    """
    lab = np.asarray(labels)
    if lab.shape != (n,) or not np.issubdtype(lab.dtype, np.integer):
        raise DataError(
            f"labels must be one integer group label per record ({n}); pass the labels a "
            "microaggregation method returned"
        )
    _, lab = np.unique(lab, return_inverse=True)
    sizes = np.bincount(lab)
    if sizes.min() < k or sizes.max() > 2 * k - 1:
        raise DataError(
            f"every group must hold k..2k-1 = {k}..{2 * k - 1} records, found groups of "
            f"{int(sizes.min())}..{int(sizes.max())}; start from the labels of mdav, ps or "
            "univariate with the same k"
        )
    return lab.astype(np.int64)


def refine_groups(
    Z: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    seconds: float | None = 10.0,
    rounds: int | None = None,
    rng: np.random.Generator | None = None,
    neighbours: int | None = None,
    light: bool = False,
) -> tuple[np.ndarray, RefineReport]:
    """Refine a partition of validated records: local search, then iterated local search.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float64
        The records the partition was formed on (standardized or centred), finite.
    labels : ndarray of shape (n,), int
        Groups of k..2k-1 records (:func:`check_groups`).
    k : int
        Minimum group size, 2 <= k <= n.
    seconds : float or None, default 10.0
        CPU seconds for the whole refinement; the local search always runs to its end, the
        iterated local search stops when the budget is spent. None: no time limit.
    rounds : int or None
        Iterated-local-search rounds; None: as many as ``seconds`` allows; 0: local search
        only. With ``rounds`` and ``seconds=None`` the result depends only on the data and
        ``rng``. ``seconds`` and ``rounds`` cannot both be None.
    rng : numpy.random.Generator, optional
        Source of the perturbations (default: fresh OS entropy).
    neighbours : int, optional
        Candidates per record, K (default max(2k, 8), at most n - 1).
    light : bool, default False
        Lighter first local search: after a change only the two groups' members and the
        records listing a moved record are re-examined, not every record listing a member
        of the two groups. Faster on large files; may stop a little short of a local optimum.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records, numbered 0..g-1, SSE never above the input's.
    report : RefineReport
    """
    t0 = time.process_time()
    n = Z.shape[0]
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    check_budget(seconds, rounds)
    lab = check_groups(labels, n, k)
    rng = check_random_state(rng)
    sse0 = partition_sse(Z, lab)
    groups0 = int(lab.max()) + 1
    K = min(neighbours if neighbours is not None else max(2 * k, 8), n - 1)
    if K < 1 or n < 2 * k:  # one group: nothing to refine
        report = RefineReport(sse0, sse0, groups0, groups0, 0, 0, 0.0, max(K, 0), True)
        return lab, report
    full = Z
    perm = None
    work = lab.copy()
    if n > EXACT_NEIGHBOURS:
        # work in a spatial order of the records, groups numbered as they first appear in it:
        # neighbours, their groups and centroids then sit close in memory (a large speed-up
        # once the file outgrows the cache; the search itself is unchanged)
        perm = spatial_cells(Z, CELL)[0]
        Z = np.ascontiguousarray(Z[perm])
        _, first, inverse = np.unique(lab[perm], return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first)] = np.arange(first.size)
        work = rank[inverse.reshape(-1)]
    nbr = neighbour_lists(Z, K, seed=int(rng.integers(2**31)))
    rptr, ridx = reverse_lists(nbr)
    kmax = 2 * k - 1
    tol = 1e-10 * float(np.einsum("ij,ij->", Z, Z)) / n + 1e-300
    size, sums, cen, mem, slot, own = _init_state(Z, work, groups0, 2 * k)
    _descend(Z, work, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol, light)
    done = kept = 0
    chunk = 256
    while rounds is None or done < rounds:
        spent = time.process_time() - t0
        if seconds is not None and spent >= seconds:
            break
        todo = chunk if rounds is None else min(chunk, rounds - done)
        t = time.process_time()
        size, sums, cen, mem, slot, own = _init_state(Z, work, groups0, 2 * k)  # no drift
        _, got = _iterate(
            Z, work, size, sums, cen, mem, slot, own, nbr, rptr, ridx, k, kmax, tol,
            rng.random((todo, 10)), 4,
        )  # fmt: skip
        done += todo
        kept += got
        per_round = (time.process_time() - t) / todo
        left = (seconds - (time.process_time() - t0)) if seconds is not None else 1.0
        chunk = int(min(max(256, 0.25 * left / max(per_round, 1e-9)), 1 << 16))
    if perm is not None:
        back = np.empty(n, dtype=np.int64)
        back[perm] = work
        work, Z = back, full
    _, work = np.unique(work, return_inverse=True)  # drop dissolved groups
    work = work.reshape(-1).astype(np.int64)
    sse1 = partition_sse(Z, work)
    if sse1 > sse0:  # rounding only: the search accepts improvements alone
        work, sse1 = lab, sse0
    report = RefineReport(
        sse_before=sse0,
        sse_after=sse1,
        groups_before=groups0,
        groups_after=int(work.max()) + 1,
        rounds=done,
        kept=kept,
        seconds=time.process_time() - t0,
        neighbours=K,
        exact_neighbours=n <= EXACT_NEIGHBOURS,
    )
    return work, report


def refine(
    X: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    standardize: bool = True,
    seconds: float | None = 10.0,
    rounds: int | None = None,
    random_state: int | np.random.Generator | None = None,
    columns: list[str] | None = None,
) -> np.ndarray:
    """Refine a microaggregation partition of ``X``; see the module docstring.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Numeric records, no missing values.
    labels : array-like of shape (n,), int
        A partition into groups of k..2k-1 records (e.g. ``mdav(X, k)``).
    k : int
        Minimum group size (2 <= k <= n).
    standardize : bool, default True
        Refine on columns standardized to zero mean and unit variance (as the partition of
        ``mdav(X, k)`` was formed); False: on the centred values.
    seconds, rounds : budget, as :func:`refine_groups`.
    random_state : None, int or numpy.random.Generator
        Source of the perturbations.
    columns : list of str, optional
        Column names, used in error messages only.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records with SSE at most the input's.

    Raises
    ------
    InputError
        Bad data, k, labels or budget.
    """
    X = check_matrix(X, columns=columns)
    k = check_k(k, X.shape[0])
    Z = working_scale(X, standardize)
    out, _ = refine_groups(
        Z, labels, k, seconds=seconds, rounds=rounds, rng=check_random_state(random_state)
    )
    return out


def check_budget(seconds: float | None, rounds: int | None) -> None:
    """Validate a refinement budget: seconds > 0 or None, rounds >= 0 or None, not both None."""
    if seconds is None and rounds is None:
        raise ParameterError(
            "give seconds or rounds (or both): without either the search would not stop"
        )
    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
        raise ParameterError(f"seconds must be a number > 0 (CPU seconds), got {seconds!r}")
    if rounds is not None and (
        isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 0
    ):
        raise ParameterError(f"rounds must be an integer >= 0, got {rounds!r}")
