"""Compiled kernel of local suppression: the level-by-level greedy over candidate rows.

Private module: ``local.py`` builds the candidates and passes contiguous arrays. The unit is
an *unsafe class* (records with one identical row, fewer than k of them): every record of a
class has the same candidate released rows, so the classes are moved whole. A *pair* (c, t)
says that class c reaches target row t by suppressing ``cost`` of its present values; a
target is *open* once at least k records are released with it, after which any class may
join it alone.
"""

from __future__ import annotations

import heapq

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def assign_levels(
    weight: np.ndarray,
    class_ptr: np.ndarray,
    pair_target: np.ndarray,
    pair_cost: np.ndarray,
    target_ptr: np.ndarray,
    target_pairs: np.ndarray,
    pair_class: np.ndarray,
    locked: np.ndarray,
    tie: np.ndarray,
    k: int,
    levels: int,
    donor_ptr: np.ndarray,
    donor_target: np.ndarray,
    donor_cost: np.ndarray,
    target_donor_ptr: np.ndarray,
    target_donors: np.ndarray,
    donor_class: np.ndarray,
    surplus: np.ndarray,
    own_target: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Assign every unsafe class to a target row, fewest suppressions first.

    Level L = 0, 1, ..., ``levels`` makes the pairs of cost <= L *active*. The potential of a
    target is the records released with it (``base``: the safe records equal to it, and the
    classes assigned to it) plus the records of the unassigned classes with an active pair to
    it. Targets are opened in order of decreasing potential (ties: lower ``tie``, the less
    important keys blank) while one of at least k is left; opening assigns every unassigned
    class with an active pair to it, and takes those records off the potentials of their
    other targets (a heap with lazy updates: potentials only fall). Then every unassigned
    class with an active pair to an open target joins the cheapest one. Last, a target short
    of k is completed by *donors* (records of safe classes beyond their k, each suppressing
    the values its row has and the target lacks, cost at most L) when they cost fewer
    suppressions than its candidates would pay one level up at least (``w (L + 1 - cost)``
    summed; at the last level, whatever they cost): targets with the most records first. A
    class that no level assigns is left at -1 (the all-blank row short of k records: the
    caller adds donors).

    Parameters
    ----------
    weight : (u,) int64
        Records of every unsafe class.
    class_ptr : (u + 1,) int64
        Pairs of class c: ``class_ptr[c]:class_ptr[c + 1]``.
    pair_target, pair_cost : (p,) int64
        Target and number of suppressions of every pair, grouped by class.
    target_ptr : (m + 1,) int64, target_pairs : (p,) int64
        The pairs of every target (indices into the pair arrays).
    pair_class : (p,) int64
        Class of every pair.
    locked : (m,) int64
        Safe records equal to every target.
    tie : (m,) float64
        Importance of the blank keys of every target (lower: less important).
    k : int
    levels : int
        The largest cost of any pair.
    donor_ptr : (v + 1,) int64, donor_target, donor_cost : (e,) int64
        The moves of every safe class (cost >= 1), grouped by class.
    target_donor_ptr : (m + 1,) int64, target_donors : (e,) int64, donor_class : (e,) int64
        The donor moves of every target, and the safe class of every move.
    surplus : (v,) int64
        Records every safe class can give (its size - k); decremented in place.
    own_target : (v,) int64
        The target equal to every safe class's row.

    Returns
    -------
    assigned : (u,) int64
        The target of every class, -1 when none.
    base : (m,) int64
        Records released with every target.
    given : (e,) int64
        Records every donor move takes.
    """
    u = weight.size
    m = locked.size
    assigned = np.full(u, -1, dtype=np.int64)
    base = locked.copy()
    pot = np.zeros(m, dtype=np.int64)
    given = np.zeros(donor_target.size, dtype=np.int64)
    take = np.zeros(donor_target.size, dtype=np.int64)
    for level in range(levels + 1):
        pot[:] = base
        for c in range(u):
            if assigned[c] >= 0:
                continue
            for q in range(class_ptr[c], class_ptr[c + 1]):
                if pair_cost[q] <= level:
                    pot[pair_target[q]] += weight[c]
        heap = [(np.int64(0), 0.0, np.int64(0))]
        heap.pop()
        for t in range(m):
            if base[t] < k <= pot[t]:
                heap.append((pot[t], tie[t], np.int64(t)))
        heapq.heapify(heap)
        while heap:
            p, _, t = heapq.heappop(heap)
            if base[t] >= k or p != pot[t]:  # open, or stale: pushed again when it fell
                continue
            for r in range(target_ptr[t], target_ptr[t + 1]):
                q = target_pairs[r]
                c = pair_class[q]
                if pair_cost[q] > level or assigned[c] >= 0:
                    continue
                assigned[c] = t
                base[t] += weight[c]
                for q2 in range(class_ptr[c], class_ptr[c + 1]):
                    t2 = pair_target[q2]
                    if pair_cost[q2] <= level and t2 != t:
                        pot[t2] -= weight[c]
                        if base[t2] < k <= pot[t2]:
                            heapq.heappush(heap, (pot[t2], tie[t2], t2))
        for c in range(u):
            if assigned[c] >= 0:
                continue
            best = -1
            for q in range(class_ptr[c], class_ptr[c + 1]):
                t = pair_target[q]
                if pair_cost[q] > level or base[t] < k:
                    continue
                if (
                    best == -1
                    or pair_cost[q] < pair_cost[best]
                    or (pair_cost[q] == pair_cost[best] and tie[t] < tie[pair_target[best]])
                ):
                    best = q
            if best >= 0:
                assigned[c] = pair_target[best]
                base[pair_target[best]] += weight[c]
        _complete(
            level, levels, weight, class_ptr, pair_target, pair_cost, target_ptr, target_pairs,
            pair_class, tie, k, assigned, base, pot, donor_cost, target_donor_ptr,
            target_donors, donor_class, surplus, own_target, given, take,
        )  # fmt: skip
    return assigned, base, given


@nb.njit(cache=True, nogil=True)
def _complete(
    level, levels, weight, class_ptr, pair_target, pair_cost, target_ptr, target_pairs, pair_class,
    tie, k, assigned, base, pot, donor_cost, target_donor_ptr, target_donors, donor_class,
    surplus, own_target, given, take,
):  # fmt: skip
    """The donor step of :func:`assign_levels` at one level (arguments as there; ``pot``
    is scratch, ``take`` scratch of the donor moves' size)."""
    m = base.size
    pot[:] = 0
    for c in range(weight.size):
        if assigned[c] >= 0:
            continue
        for q in range(class_ptr[c], class_ptr[c + 1]):
            if pair_cost[q] <= level:
                pot[pair_target[q]] += weight[c]
    heap = [(np.int64(0), 0.0, np.int64(0))]
    heap.pop()
    for t in range(m):
        if pot[t] > 0 and base[t] < k:
            heap.append((-(pot[t] + base[t]), tie[t], np.int64(t)))
    heapq.heapify(heap)
    while heap:
        negp, tt, t = heapq.heappop(heap)
        if base[t] >= k or pot[t] == 0:
            continue
        if -negp != pot[t] + base[t]:
            heapq.heappush(heap, (-(pot[t] + base[t]), tt, t))
            continue
        need = k - pot[t] - base[t]
        saving = 0
        for r in range(target_ptr[t], target_ptr[t + 1]):
            q = target_pairs[r]
            if pair_cost[q] <= level and assigned[pair_class[q]] < 0:
                saving += weight[pair_class[q]] * (level + 1 - pair_cost[q])
        # the cheapest donors, by cost then by surplus
        lo = target_donor_ptr[t]
        hi = target_donor_ptr[t + 1]
        cost = 0
        got = 0
        for cmax in range(1, level + 1):
            for r in range(lo, hi):
                e = target_donors[r]
                if donor_cost[e] != cmax or got >= need:
                    continue
                avail = surplus[donor_class[e]]
                if avail <= 0:
                    continue
                n_take = min(avail, need - got)
                take[e] = n_take
                got += n_take
                cost += n_take * cmax
        # at the last level the candidates have nowhere else to go
        if got < need or (cost >= saving and level < levels):
            for r in range(lo, hi):
                take[target_donors[r]] = 0
            continue
        for r in range(lo, hi):
            e = target_donors[r]
            if take[e] > 0:
                v = donor_class[e]
                surplus[v] -= take[e]
                base[own_target[v]] -= take[e]
                base[t] += take[e]
                given[e] += take[e]
                take[e] = 0
        for r in range(target_ptr[t], target_ptr[t + 1]):
            q = target_pairs[r]
            c = pair_class[q]
            if pair_cost[q] > level or assigned[c] >= 0:
                continue
            assigned[c] = t
            base[t] += weight[c]
            for q2 in range(class_ptr[c], class_ptr[c + 1]):
                if pair_cost[q2] <= level:
                    pot[pair_target[q2]] -= weight[c]
