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

import numpy as np

from sdcflow.core.jit import cached_njit


@cached_njit(nogil=True)
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
    it. Targets are opened in order of increasing potential, at least k (a target barely
    reaching k wastes no candidate; ties: lower ``tie``, the less important keys blank): the
    candidates that could open the fewest other targets are assigned to it until it holds k,
    and taken off the potentials of their other targets (a heap, an entry pushed again
    whenever a potential falls). Then every unassigned class with an active pair to an open
    target joins the cheapest one. Last, a target short of k is completed, targets with the
    most records first, by classes released with a target of more than k that reach it for
    no more suppressions, and by *donors* (records of safe classes beyond their k, each
    suppressing the values its row has and the target lacks, cost at most L), when they cost
    fewer suppressions than its candidates would pay one level up at least
    (``w (L + 1 - cost)`` summed; at the last level, whatever they cost). A class that no
    level assigns is left at -1 (the all-blank row short of k records: the caller adds
    donors).

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
    options = np.zeros(u, dtype=np.int64)
    order_c = np.zeros(u, dtype=np.int64)
    order_key = np.zeros(u, dtype=np.int64)
    for level in range(levels + 1):
        pot[:] = base
        _add_reach(pot, level, weight, assigned, class_ptr, pair_target, pair_cost)
        heap = [(np.int64(0), 0.0, np.int64(0))]
        heap.pop()
        for t in range(m):
            if base[t] < k <= pot[t]:
                heap.append((pot[t], tie[t], np.int64(t)))
        heapq.heapify(heap)
        for c in range(u):  # targets a class could open at this level
            options[c] = 0
            if assigned[c] < 0:
                for q in range(class_ptr[c], class_ptr[c + 1]):
                    if pair_cost[q] <= level and pot[pair_target[q]] >= k:
                        options[c] += 1
        while heap:
            p, _, t = heapq.heappop(heap)
            if base[t] >= k or p != pot[t]:  # open, or stale: pushed again when it fell
                continue
            # the candidates with the fewest other targets first, until t holds k: the
            # others join an open target at the level's end, and help open others meanwhile
            got = 0
            for r in range(target_ptr[t], target_ptr[t + 1]):
                q = target_pairs[r]
                c = pair_class[q]
                if pair_cost[q] <= level and assigned[c] < 0:
                    order_c[got] = c
                    order_key[got] = options[c] * (levels + 2) + pair_cost[q]
                    got += 1
            sequence = np.argsort(order_key[:got], kind="mergesort")
            for i in range(got):
                if base[t] >= k:
                    break
                c = order_c[sequence[i]]
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
            target_donors, donor_class, surplus, own_target, given, take, order_c,
        )  # fmt: skip
    return assigned, base, given


@cached_njit(nogil=True, inline="always")
def _add_reach(pot, level, weight, assigned, class_ptr, pair_target, pair_cost):  # fmt: skip
    """Add to ``pot`` (per target) the records of every unassigned class that reaches the
    target with a move of cost at most ``level``."""
    for c in range(weight.size):
        if assigned[c] >= 0:
            continue
        for q in range(class_ptr[c], class_ptr[c + 1]):
            if pair_cost[q] <= level:
                pot[pair_target[q]] += weight[c]


@cached_njit(nogil=True, inline="always")
def _cost_to(c, t, class_ptr, pair_target, pair_cost):  # fmt: skip
    """The suppressions class c pays for target t."""
    for q in range(class_ptr[c], class_ptr[c + 1]):
        if pair_target[q] == t:
            return pair_cost[q]
    return -1


@cached_njit(nogil=True)
def _complete(
    level, levels, weight, class_ptr, pair_target, pair_cost, target_ptr, target_pairs, pair_class,
    tie, k, assigned, base, pot, donor_cost, target_donor_ptr, target_donors, donor_class,
    surplus, own_target, given, take, mover,
):  # fmt: skip
    """The donor step of :func:`assign_levels` at one level (arguments as there; ``pot``
    is scratch, ``take`` scratch of the donor moves' size, ``mover`` of the classes')."""
    m = base.size
    pot[:] = 0
    _add_reach(pot, level, weight, assigned, class_ptr, pair_target, pair_cost)
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
        # classes already released with a target of more than k that reach t for no more
        # than they pay there move for free
        cost = 0
        got = 0
        movers = 0
        for r in range(target_ptr[t], target_ptr[t + 1]):
            if got >= need:
                break
            q = target_pairs[r]
            c = pair_class[q]
            t0 = assigned[c]
            if pair_cost[q] > level or t0 < 0 or t0 == t or base[t0] - weight[c] < k:
                continue
            now = _cost_to(c, t0, class_ptr, pair_target, pair_cost)
            if pair_cost[q] > now:
                continue
            mover[movers] = c
            movers += 1
            got += weight[c]
            cost += (pair_cost[q] - now) * weight[c]
            base[t0] -= weight[c]  # held back while t is tried
        # then the cheapest donors of the safe classes
        lo = target_donor_ptr[t]
        hi = target_donor_ptr[t + 1]
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
            for i in range(movers):
                base[assigned[mover[i]]] += weight[mover[i]]
            continue
        for i in range(movers):
            assigned[mover[i]] = t
            base[t] += weight[mover[i]]
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
