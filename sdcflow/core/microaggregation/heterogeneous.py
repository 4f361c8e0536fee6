"""Heterogeneous microaggregation: numeric, ordinal and nominal keys grouped in one pass.

Domingo-Ferrer and Torra [1] k-anonymize files whose keys are of several kinds by
microaggregating all of them together: records are grouped by MDAV-generic [2] under a
distance that adds one term per key, and each group is released as one representative
record: the **mean** of a numeric key, the **median** of an ordinal one, the **mode** (most
frequent category) of a nominal one [1]. Every group has k..2k-1 records that share their
released keys, so the file is k-anonymous on all keys without suppression.

Per-key terms of the squared distance between records x and y (each in [0, 1] or on the
standardized scale, so no kind dominates by its units):

* numeric: ``((x - y) / s)^2`` with s the key's standard deviation (population, over the
  present values);
* ordinal: ``((r(x) - r(y)) / L)^2`` with r the rank of the category in the declared order and
  L the number of categories: the share of categories between the two [1];
* nominal: 0 if equal, 1 otherwise [1].

Missing values: a record is placed on the keys it has. The squared distance sums the terms of
the keys present in both records and scales the sum by (keys) / (keys present in both), the
partial-distance rule that keeps records with gaps comparable; a record with no key in
common with another is at distance 0 from it. Representatives use the values present (the
mean of the present values...); a missing value stays missing in the release, nothing is
imputed, and a group that mixes records with and without a key releases it missing for all
of them (:func:`one_row_per_group`: k counts identical rows,
:mod:`sdcflow.core.measures.anonymity`). A
group where m < k records hold a numeric key would publish a mean of fewer than k values
(m = 1: the value itself; m = 2: each record reads the other's as 2 mean - own): such a
group is joined to its nearest groups on the other keys, in disjoint sets of at least k
holders (:func:`short_group_sets`), and each set releases, on every numeric key, the mean of
its holders' values. Whole groups are joined, not the records nearest the group (their
values would lie close around its mean and give it back); a value never sits in two
averages (two overlapping means give one value away by difference); and a set is one unit
for every key (a partner group keeping its own means of the other keys would give its mean
of a key they determine, ``total - b``, and with it the short group's sum).

Large files: MDAV-generic costs O(n^2 d / k), fourfold with every doubling of n (figures:
``docs/benchmarks/``, "Missing numbers at scale"). :func:`heterogeneous_cells` runs it
within spatial cells of at most ``cell_size`` records -- the recursive median cuts of
MDAV's ``cell_size`` (:func:`~sdcflow.core.microaggregation.neighbours.spatial_cells`) on
the scaled numeric and ordinal keys, a missing value placed at its key's mean for the cut
only -- each cell an independent piece of :func:`~sdcflow.core.parallel.map_parts` (a Dask
worker's task run under ``runner: dask``), its distances on the scale of the whole file.

Ties: the farthest record and the k nearest go to the lowest row; the median of an even
number of ranks is the lower one; the mode of a tie is the category listed first (lowest code).

References
----------
[1] J. Domingo-Ferrer, V. Torra, "Ordinal, continuous and heterogeneous k-anonymity through
    microaggregation", Data Mining and Knowledge Discovery 11(2) (2005) 195-212,
    doi:10.1007/s10618-005-0007-5.
[2] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
    statistical disclosure control", IEEE Transactions on Knowledge and Data Engineering
    14(1) (2002) 189-201 (MDAV).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from sdcflow.core.microaggregation.generic_kernels import generic_groups, group_values
from sdcflow.core.microaggregation.neighbours import spatial_cells
from sdcflow.core.parallel import map_parts
from sdcflow.core.validation import check_cell_size, check_k, pow2_exponents
from sdcflow.errors import DataError, ParameterError, Reason


@dataclass(frozen=True)
class MixedKeys:
    """The keys of n records by kind, validated.

    Attributes
    ----------
    numeric : ndarray of shape (n, p), float64
        NaN where missing; finite otherwise.
    ordinal : ndarray of shape (n, q), int64
        Rank of the category in its order (0..L_j - 1), -1 where missing.
    levels : ndarray of shape (q,), int64
        Number of categories L_j of every ordinal key.
    nominal : ndarray of shape (n, r), int64
        Category code, -1 where missing.
    """

    numeric: np.ndarray
    ordinal: np.ndarray
    levels: np.ndarray
    nominal: np.ndarray

    @property
    def n(self) -> int:
        for block in (self.numeric, self.ordinal, self.nominal):
            if block.shape[1]:
                return block.shape[0]
        return self.numeric.shape[0]

    @classmethod
    def build(
        cls,
        numeric: np.ndarray | None = None,
        ordinal: np.ndarray | None = None,
        levels: np.ndarray | None = None,
        nominal: np.ndarray | None = None,
    ) -> MixedKeys:
        """Validate and assemble (any block may be absent; at least one key in all)."""
        blocks = [b for b in (numeric, ordinal, nominal) if b is not None]
        if not blocks:
            raise DataError("give at least one key (numeric, ordinal or nominal)")
        n = np.asarray(blocks[0]).shape[0]
        num = np.zeros((n, 0)) if numeric is None else np.asarray(numeric, dtype=np.float64)
        ordn = np.zeros((n, 0), np.int64) if ordinal is None else np.asarray(ordinal, np.int64)
        nom = np.zeros((n, 0), np.int64) if nominal is None else np.asarray(nominal, np.int64)
        lev = np.zeros(0, np.int64) if levels is None else np.asarray(levels, np.int64)
        for name, block in (("numeric", num), ("ordinal", ordn), ("nominal", nom)):
            if block.ndim != 2 or block.shape[0] != n:
                raise DataError(f"{name} keys must be a 2-D array with {n} rows")
        if num.shape[1] + ordn.shape[1] + nom.shape[1] == 0:
            raise DataError("give at least one key (numeric, ordinal or nominal)")
        if np.isinf(num).any():
            raise DataError("numeric keys must be finite (NaN marks a missing value)")
        if lev.shape != (ordn.shape[1],) or np.any(lev < 1):
            raise DataError("levels must give the number of categories (>= 1) of every ordinal key")
        if ordn.size and (ordn.min() < -1 or np.any(ordn >= lev[None, :])):
            raise DataError("ordinal ranks must lie in 0..levels-1, or -1 for a missing value")
        if nom.size and nom.min() < -1:
            raise DataError("nominal codes must be >= 0, or -1 for a missing value")
        return cls(num, ordn, lev, nom)


def _scaled(keys: MixedKeys) -> tuple[np.ndarray, np.ndarray]:
    """Numeric and ordinal keys on the distance's scale (NaN = missing): z-scores, and ranks
    divided by the number of categories [1]; the same values for any memory layout of the
    keys. Shapes: (n, p), (n, q)."""
    # numpy sums a column of a row-major array in another order than a column-major one, so
    # the means and sds, and with them the groups' ties (whole numbers tie often), would
    # follow the layout: the records in row order, whichever layout the caller holds them in
    # (:func:`~sdcflow.core.microaggregation.scaling.working_scale`)
    num = keys.numeric
    if num.shape[1]:
        # Exact power-of-two rescaling per column first (as validation.standardize), so that
        # keys near the float limits give finite z-scores.
        present = ~np.isnan(num)
        biggest = np.max(np.where(present, np.abs(num), 0.0), axis=0)
        num = np.ldexp(num, -np.frexp(biggest)[1], out=np.empty(num.shape))  # row-major
        empty = ~present.any(axis=0)
        mean = np.nanmean(np.where(empty, 0.0, num), axis=0)
        sd = np.nanstd(np.where(empty, 0.0, num), axis=0)
        sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
        num = (num - mean) / sd
    ordn = np.where(keys.ordinal >= 0, keys.ordinal / keys.levels[None, :], np.nan)
    return num, ordn


class _Distances:
    """Partial squared distances from a set of rows to one point (see the module docstring).

    ``cont`` (n, p + q): the numeric keys' z-scores then the ordinal keys' scaled ranks (NaN
    missing), as :func:`_scaled` gives them; ``numeric`` = p; ``nom`` (n, r) codes."""

    def __init__(self, cont: np.ndarray, numeric: int, nom: np.ndarray) -> None:
        self.cont = cont
        self.numeric = numeric
        self.nom = nom
        self.total = self.cont.shape[1] + self.nom.shape[1]

    @classmethod
    def of(cls, keys: MixedKeys) -> _Distances:
        num, ordn = _scaled(keys)
        return cls(np.concatenate([num, ordn], axis=1), num.shape[1], keys.nominal)

    def to(
        self, rows: np.ndarray, cont: np.ndarray, nom: np.ndarray, apart: float = 0.0
    ) -> np.ndarray:
        """Squared distances of ``rows`` to the point (``cont`` (p+q,), ``nom`` (r,));
        ``apart`` where a row shares no key with it (0: the rule the groups are formed by)."""
        C = self.cont[rows]
        diff = C - cont[None, :]
        both = ~np.isnan(diff)
        sq = np.where(both, diff * diff, 0.0).sum(axis=1)  # [1] numeric and ordinal terms
        common = both.sum(axis=1)
        if self.nom.shape[1]:
            N = self.nom[rows]
            present = (N >= 0) & (nom[None, :] >= 0)
            sq += (present & (N != nom[None, :])).sum(axis=1)  # [1] nominal: 0 or 1
            common = common + present.sum(axis=1)
        return np.where(common > 0, sq * self.total / np.maximum(common, 1), apart)


def _enough_values(pool: np.ndarray, k: int, names: Sequence[str] | None = None) -> None:
    """Refuse (``DataError``, ``too-few-records``) a numeric key of ``pool`` (N, p) that
    fewer than k records have: no average of k of its values can mask them, and an average
    of fewer would publish one as it is, or let each record holding one read the others'
    (both, with two). The message names the key, never a value."""
    counts = (~np.isnan(pool)).sum(axis=0)
    for j in np.flatnonzero((counts > 0) & (counts < k)):
        m, name = int(counts[j]), _name(names, j)
        what = "numeric key " + name if name else "a numeric key"
        held = "a value on one record" if m == 1 else f"values on {m} records"
        risk = "publish it as it is" if m == 1 else "let each of those records read the others'"
        raise DataError(
            f"{what} has {held} only, fewer than k = {k}: no mean of k of its values can "
            f"mask {'it' if m == 1 else 'them'}, and a mean of fewer would {risk}; drop that "
            "key, or add records that have it",
            code=Reason.TOO_FEW_RECORDS,
            field=name,
        )


HIDDEN = 2  # a unit holding at most this many values of another key does not rank on it
CANDIDATES = 32  # units a needy unit ranks first, of many (short_group_sets)


def short_group_sets(
    units: np.ndarray,
    held: np.ndarray,
    needy: np.ndarray,
    others: _Distances,
    k: int,
    groups: np.ndarray | None = None,
    hide: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sets of units, each holding at least k values of one key.

    ``units`` (h,): the unit (a group, or a set already formed) of each record; ``held``
    (h,): whether the record holds the key; ``needy`` (u,): the units to complete;
    ``others``: the partial distances over the records' *other* keys, the key itself left
    out. Each needy unit holding fewer than k, in the order of its number, joins the set of
    the nearest unit holding some, outside its own set, then the next, until its set holds
    k. Nearest: centroid (of all the unit's records) to centroid under ``others``; units
    that share no other key with it after those, those whose set is still short of k first,
    in the order of their number. The key is never used to choose: partners near the unit's
    mean of it would give that mean back (a partner chosen that way is read far closer
    than a full group's member). Sets never overlap, so no value sits in two averages
    (a value in two is read by difference). A set already joined (of two or more groups:
    ``groups`` (h,), each record's group, tells a unit that is itself a set, e.g. a cell's)
    and holding k is taken only when nothing else can complete a set, so that sets do not
    pile up. ``hide`` (u, p + q), optional: coordinates of ``others`` a needy unit does not
    rank on (its centroid's value there left out, as if missing): the keys it holds on one
    or two records (:func:`_complete_keys`).

    With many units a needy unit first ranks the ``CANDIDATES`` units nearest its centroid
    on the continuous keys (a KD-tree, a missing key at its mean), all of them only if those
    cannot make its set k. Returns the set of every unit (u,), named by its lowest unit,
    and whether it holds at least k (u,) (False only where all the units together hold
    fewer). Shapes: units (h,) in 0..u-1, held (h,), needy (u,) -> (u,), (u,).
    """
    u = int(units.max()) + 1 if units.size else 0
    count = np.bincount(units[held], minlength=u)
    size = count.copy()
    members = np.ones(u, dtype=np.int64)  # groups in each set
    if groups is not None and units.size:
        pairs = np.unique(units * (int(groups.max()) + 1) + groups)
        members = np.bincount(pairs // (int(groups.max()) + 1), minlength=u)
    parent = np.arange(u)
    todo = np.flatnonzero(needy & (count > 0) & (count < k))
    if not todo.size:
        return parent, size >= k
    centres = _unit_centres(others, units, u)
    holders = np.flatnonzero(count > 0)  # only units holding the key can complete a set
    places = centres.cont if hide is None else np.where(hide, np.nan, centres.cont)
    shortlist: dict[int, np.ndarray] = {}
    if holders.size > 4 * CANDIDATES and centres.cont.shape[1]:
        # every needy unit's shortlist in one query of the tree (a unit with no continuous
        # key has no place in it: it would stand at every key's mean)
        placed = todo[~np.isnan(places[todo]).all(axis=1)]
        if placed.size:
            tree = cKDTree(np.nan_to_num(centres.cont[holders]))
            near = tree.query(np.nan_to_num(places[placed]), CANDIDATES)[1]
            shortlist = dict(zip(placed.tolist(), np.sort(holders[near], axis=1), strict=True))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    def join(i: int, pool: np.ndarray, last_resort: bool) -> None:
        d = centres.to(pool, places[i], centres.nom[i], apart=np.inf)
        top = parent[pool]
        while (parent[top] != top).any():
            top = parent[top]
        full = size[top] >= k
        # a set already joined and holding k is taken only as a last resort, so needy units
        # do not pile into one set (a sparse key's 40 values made sets of 15 and 12, every
        # key averaged over them); units sharing no other key after the others, those
        # whose set is still short of k first (so they pair among themselves), by number
        taken = full & (members[top] > 1)
        for at in np.lexsort((d, np.where(np.isinf(d), full, taken), np.isinf(d))):
            j = int(pool[at])
            a, b = root(i), root(j)
            if a == b or (taken[at] and not last_resort):
                continue
            parent[max(a, b)] = min(a, b)
            size[min(a, b)] += size[max(a, b)]
            members[min(a, b)] += members[max(a, b)]
            if size[min(a, b)] >= k:
                return

    for i in todo:
        if size[root(i)] >= k:  # joined by a unit before it
            continue
        # the units nearest first (the KD-tree's shortlist of the holders), then all the
        # holders, then the sets already full
        if i in shortlist:
            join(i, shortlist[i], last_resort=False)
        for last_resort in (False, True):
            if size[root(i)] < k:
                join(i, holders, last_resort)
    sets = np.array([root(i) for i in range(u)], dtype=np.int64)
    return sets, size[sets] >= k


def _unit_centres(dist: _Distances, units: np.ndarray, u: int) -> _Distances:
    """The centroid of every unit's records (MDAV-generic's [1]: mean z-scores,
    lower median ranks, modes with ties to the lowest code), as a :class:`_Distances` over
    the u units, all at once (bincounts and one sort). units (h,) in 0..u-1 -> u rows."""
    cont = np.full((u, dist.cont.shape[1]), np.nan)
    for c in range(dist.cont.shape[1]):
        col = dist.cont[:, c]
        has = ~np.isnan(col)
        n_of = np.bincount(units[has], minlength=u)
        if c < dist.numeric:
            total = np.bincount(units[has], col[has], minlength=u)
            cont[:, c] = np.where(n_of > 0, total / np.maximum(n_of, 1), np.nan)
        else:  # lower median: the ((m - 1) // 2)-th of the unit's sorted values
            at = np.flatnonzero(has)
            at = at[np.lexsort((col[at], units[at]))]
            start = np.concatenate([[0], np.cumsum(n_of)[:-1]])
            ok = n_of > 0
            cont[ok, c] = col[at[start[ok] + (n_of[ok] - 1) // 2]]
    nom = -np.ones((u, dist.nom.shape[1]), np.int64)
    for c in range(dist.nom.shape[1]):
        col = dist.nom[:, c]
        has = col >= 0
        if has.any():  # (unit, code) pairs counted, the most frequent per unit, lowest code
            pairs, tally = np.unique(
                np.stack([units[has], col[has]], axis=1), axis=0, return_counts=True
            )
            best = np.lexsort((pairs[:, 1], -tally, pairs[:, 0]))
            first = np.ones(best.size, dtype=bool)
            first[1:] = pairs[best[1:], 0] != pairs[best[:-1], 0]
            nom[pairs[best[first], 0], c] = pairs[best[first], 1]
    return _Distances(cont, dist.numeric, nom)


def _complete_keys(
    num: np.ndarray,
    short: np.ndarray,
    units: np.ndarray,
    numeric: np.ndarray,
    dist: _Distances,
    k: int,
    groups: np.ndarray | None = None,
) -> None:
    """For every numeric key that a unit holds fewer than k of, join such units to their
    nearest on the other keys (:func:`short_group_sets`), and release, on *every* numeric
    key, each merged set's mean over its holders, in place.

    One partition serves all keys: a set joined for one key is one unit for all of them.
    Were only the short key averaged over the set, each partner would keep its own means of
    the other keys, and a key they determine (``total = a + b``) would give the partner's own
    mean of it, hence the short group's sum, by difference (a lone value would be read to
    rounding). ``num`` (n, p): released values; ``short`` (n, p): holders of a unit
    with fewer than k (stays True where all the records together hold fewer); ``units`` (n,
    p): each record's unit, the same in every column (its group, or the set it joined; -1:
    a record that takes no part), becomes its set; ``numeric`` (n, p): the values; ``dist``:
    the records' distances (numeric keys its first p columns); ``groups`` (n,): each
    record's group (:func:`short_group_sets`)."""
    if not short.any():
        return
    unit = units[:, 0]
    assert (units == unit[:, None]).all(), "one unit per record for every key"
    rows = np.flatnonzero(unit >= 0)
    names, first = np.unique(unit[rows], return_inverse=True)
    first = first.reshape(-1)
    of = first.copy()  # each record's set, by its lowest unit
    held = ~np.isnan(numeric[rows])
    for j in np.flatnonzero(short.any(axis=0)):
        sets, compact = np.unique(of, return_inverse=True)  # the sets so far, as units
        compact = compact.reshape(-1)
        count = np.bincount(compact[held[:, j]], minlength=sets.size)
        needy = (count > 0) & (count < k)
        if not needy.any():
            continue
        others = _Distances(np.delete(dist.cont[rows], j, axis=1), dist.numeric - 1, dist.nom[rows])
        # a unit holding one or two values of another key does not rank on it: partners
        # near them would give them back through the set's mean (the value itself for one,
        # 2 R - own for two; a pair's partner was read to 0.31 of their gap, a full group's
        # member to 0.55: tests/test_heterogeneous.py)
        counts = np.stack(
            [np.bincount(compact[held[:, c]], minlength=sets.size) for c in range(held.shape[1])],
            axis=1,
        )
        hide = np.zeros((sets.size, others.cont.shape[1]), dtype=bool)
        hide[:, : dist.numeric - 1] = np.delete((counts > 0) & (counts <= HIDDEN), j, axis=1)
        joined, _ = short_group_sets(
            compact, held[:, j], needy, others, k, None if groups is None else groups[rows], hide
        )
        of = sets[joined[compact]]
    grown = np.zeros(names.size, dtype=bool)
    grown[of[of != first]] = True  # sets that took in another unit
    for j in range(numeric.shape[1]):
        n_of = np.bincount(of[held[:, j]], minlength=names.size)
        changed = held[:, j] & grown[of]
        if changed.any():
            at, label = rows[changed], of[changed]
            values = numeric[at, j]
            e = pow2_exponents(values, axis=None)  # sums on the power-of-two scale
            total = np.bincount(label, np.ldexp(values, -e), minlength=names.size)
            num[at, j] = np.ldexp(total[label] / n_of[label], e)
        short[rows, j] = held[:, j] & (n_of[of] < k)
    units[rows] = names[of][:, None]


def _name(names: Sequence[str] | None, j: int) -> str | None:
    return str(names[j]) if names is not None else None


def heterogeneous_groups(keys: MixedKeys, k: int) -> np.ndarray:
    """MDAV-generic [2] under the heterogeneous distance and centroid [1].

    Parameters
    ----------
    keys : MixedKeys
    k : int
        Minimum group size, 2 <= k <= n.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups numbered in the order they are formed; each has k..2k-1 records.

    Notes
    -----
    O(n^2 d / k): every step computes the distances of the remaining records to one centroid
    and to two records, vectorized; no n x n matrix.
    """
    k = check_k(k, keys.n)
    return _groups(_Distances.of(keys), k)


def _groups(dist: _Distances, k: int) -> np.ndarray:
    """MDAV-generic on the scaled keys of ``dist`` (:func:`heterogeneous_groups`): while at
    least 3k records remain, the record farthest from their centroid and its k - 1 nearest
    form a group, then the record farthest from it and its k - 1 nearest [2]; 2k..3k-1
    left make one more group around the farthest from their centroid, and the rest the
    last. Ties go to the lowest row. Compiled (:func:`generic_groups`), the same groups as
    these steps written with numpy, bit for bit."""
    cont = np.ascontiguousarray(dist.cont, dtype=np.float64)
    nom = np.ascontiguousarray(dist.nom, dtype=np.int64)
    return generic_groups(cont, dist.numeric, nom, k)


def _cell_groups(
    cont: np.ndarray, numeric: int, nom: np.ndarray, k: int, raw: MixedKeys | None = None
) -> tuple[np.ndarray, Representatives | None]:
    """One cell of :func:`heterogeneous_cells` (a piece a map may ship to another process):
    MDAV-generic on the cell's rows of the file's scaled keys, and with ``raw`` (the cell's
    keys as given) the groups' representatives, computed here rather than in the process
    that assembles the cells. (m, p + q), (m, r) -> labels (m,), Representatives or None."""
    dist = _Distances(cont, numeric, nom)
    labels = _groups(dist, k)
    if raw is None:
        return labels, None
    return labels, group_representatives(raw, labels, k, complete=False, dist=dist)


def heterogeneous_cells(keys: MixedKeys, k: int, cell_size: int) -> np.ndarray:
    """MDAV-generic [2] under the heterogeneous distance [1] within spatial cells.

    The records are cut into cells of at most ``cell_size`` records by recursive median cuts
    of the numeric z-scores and scaled ordinal ranks (:func:`spatial_cells`; a missing value
    stands at its key's mean for the cut only, nominal keys do not cut), and
    :func:`heterogeneous_groups` groups each cell on its own, with the distances of the
    whole file (z-scores over every present value, not the cell's). Each cell is one piece of
    :func:`~sdcflow.core.parallel.map_parts`, so the labels do not depend on where the cells
    ran. Groups never cross a cell's border: a cut through a dense region costs some
    information loss against one pass over the file (``docs/benchmarks/``, "Missing
    numbers at scale").

    Parameters
    ----------
    keys : MixedKeys
        n records.
    k : int
        Minimum group size, 2 <= k <= n.
    cell_size : int
        Most records per cell, at least 2k (every cell then holds at least k records).

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Groups of k..2k-1 records, numbered cell by cell. A file of at most ``cell_size``
        records is one cell: the labels of :func:`heterogeneous_groups`.
    """
    return _in_cells(keys, k, cell_size, representatives=False)[0]


def heterogeneous_cells_release(
    keys: MixedKeys,
    k: int,
    cell_size: int,
    names: Sequence[str] | None = None,
    *,
    complete: bool = True,
) -> tuple[np.ndarray, Representatives]:
    """:func:`heterogeneous_cells` and the groups' representatives
    (:func:`group_representatives`), each cell's computed by its own piece, a group short
    of a key's values joined to groups of its cell; what a cell cannot make k is joined
    over all the records given (with ``complete=False`` left marked in ``short``, with
    ``units``, for a caller that joins over more records). Shapes: keys with n records ->
    labels (n,), Representatives."""
    labels, rep = _in_cells(
        keys, k, cell_size, representatives=True, names=names, complete=complete
    )
    assert rep is not None
    return labels, rep


def _in_cells(
    keys: MixedKeys,
    k: int,
    cell_size: int,
    *,
    representatives: bool,
    names: Sequence[str] | None = None,
    complete: bool = True,
) -> tuple[np.ndarray, Representatives | None]:
    k = check_k(k, keys.n)
    cell_size = check_cell_size(cell_size, k)
    if representatives and complete:  # before any cell is grouped
        _enough_values(keys.numeric, k, names)
    dist = _Distances.of(keys)
    n = keys.n
    if n <= cell_size:
        labels = _groups(dist, k)
        if not representatives:
            return labels, None
        rep = group_representatives(keys, labels, k, complete=complete, names=names, dist=dist)
        return labels, rep
    cut = np.where(np.isnan(dist.cont), 0.0, dist.cont)  # z-scores: 0 is the mean
    if dist.numeric < cut.shape[1]:  # ordinal ranks: their mean over the present ones
        ranks = dist.cont[:, dist.numeric :]
        mean = np.nanmean(np.where(np.isnan(ranks).all(axis=0), 0.0, ranks), axis=0)
        cut[:, dist.numeric :] = np.where(np.isnan(ranks), mean, ranks)
    if not cut.shape[1]:
        raise ParameterError(
            "cell_size cuts cells along numeric or ordinal keys and these keys are all "
            "nominal; remove cell_size (or use local_suppression for categorical keys)",
            field="cell_size",
        )
    order, bounds = spatial_cells(cut, cell_size)
    # each cell's rows in file order: ties inside it go to the lowest row, as in one pass
    cells = [np.sort(order[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
    parts = map_parts(
        _cell_groups,
        [
            (
                dist.cont[rows],
                dist.numeric,
                dist.nom[rows],
                k,
                _rows(keys, rows) if representatives else None,
            )
            for rows in cells
        ],
        "cell",
    )
    labels = np.empty(n, dtype=np.int64)
    rep = Representatives(
        np.full(keys.numeric.shape, np.nan),
        -np.ones(keys.ordinal.shape, np.int64),
        -np.ones(keys.nominal.shape, np.int64),
        np.zeros(keys.numeric.shape, dtype=bool),
        -np.ones(keys.numeric.shape, np.int64),
    )
    assert rep.short is not None and rep.units is not None
    offset = 0
    for cell, (part, cell_rep) in zip(cells, parts, strict=True):
        labels[cell] = part + offset
        if cell_rep is not None:
            assert cell_rep.short is not None and cell_rep.units is not None
            rep.numeric[cell], rep.ordinal[cell] = cell_rep.numeric, cell_rep.ordinal
            rep.nominal[cell], rep.short[cell] = cell_rep.nominal, cell_rep.short
            rep.units[cell] = cell_rep.units + offset
        offset += int(part.max()) + 1
    if representatives and rep.short.any():  # what no cell could make k: all the records
        _complete_keys(rep.numeric, rep.short, rep.units, keys.numeric, dist, k, labels)
    if representatives and complete:
        assert not rep.short.any(), "the file holds k values of every key (_enough_values)"
        rep = Representatives(rep.numeric, rep.ordinal, rep.nominal, None, rep.units)
    return labels, rep if representatives else None


def _rows(keys: MixedKeys, rows: np.ndarray) -> MixedKeys:
    """The records ``rows`` of ``keys`` (already validated)."""
    return MixedKeys(keys.numeric[rows], keys.ordinal[rows], keys.levels, keys.nominal[rows])


@dataclass(frozen=True)
class Representatives:
    """The released keys of a heterogeneous microaggregation (missing stays missing).

    Attributes
    ----------
    numeric : ndarray of shape (n, p), float64
        The mean over the holders of the record's set where the record had a value (its
        group, or the groups it was joined to, the same set for every key:
        :func:`group_representatives`), NaN elsewhere.
    ordinal : ndarray of shape (n, q), int64
        Group (lower) median rank where the record had a value, -1 elsewhere.
    nominal : ndarray of shape (n, r), int64
        Group mode where the record had a value, -1 elsewhere.
    short : ndarray of shape (n, p), bool, or None
        Only with ``complete=False``: where the set still holds fewer than k values of the
        key, for the caller to join over more records (:func:`complete_in_file`).
    units : ndarray of shape (n, p), int64, or None
        Each record's set (a group number, the same in every column): :meth:`sets`.
    """

    numeric: np.ndarray
    ordinal: np.ndarray
    nominal: np.ndarray
    short: np.ndarray | None = None
    units: np.ndarray | None = None

    def sets(self, labels: np.ndarray) -> np.ndarray:
        """The records' sets, numbered 0..s-1 (n,): their groups, joined where a group was
        short of a key's values; ``labels`` (n,), the groups, where there are no numeric
        keys. A set releases one mean per key, so whatever moves its values (the edit rules'
        projection) must move it as one: each group of a set moved with its own weights
        would publish one point per group, and two points solve for the set's means."""
        if self.units is None or not self.units.shape[1]:
            return np.asarray(labels, dtype=np.int64)
        return np.unique(self.units[:, 0], return_inverse=True)[1].reshape(-1)


def group_representatives(
    keys: MixedKeys,
    labels: np.ndarray,
    k: int,
    *,
    complete: bool = True,
    names: Sequence[str] | None = None,
    dist: _Distances | None = None,
) -> Representatives:
    """Mean, median and mode of every group [1], released on the records' present values.

    A group of k or more records may hold a numeric key on m < k of them (the others
    missing it): the mean would be an average of fewer than k values, the value itself when
    m = 1, and with m = 2 each record would read the other's as 2 mean - own. The group is
    then joined to its nearest groups (:func:`short_group_sets`: whole groups, centroid to
    centroid under the partial distance over the keys other than that one, in disjoint sets
    of at least k holders), and every record of the set releases, on every numeric key it
    has, the mean of the set's holders of that key (:func:`_complete_keys`). Every released
    number is then an average of at least k values (before rounding to the key's
    precision). A key with fewer than k values among the
    records given is refused (:func:`_enough_values`).

    With ``complete=False`` (a cell, a stratum) nothing is refused, and the sets that the
    records given cannot make k are left marked in ``short``, with every holder's set in
    ``units``, for a caller that joins them over more records. ``dist``: the distances the
    groups were formed with (default: those of ``keys``). ``names`` (of the numeric keys)
    name a refused key. Shapes: keys with n records, labels (n,) in 0..g-1 ->
    :class:`Representatives`.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (keys.n,) or labels.min() < 0:
        raise ParameterError("labels must give a group >= 0 for every record")
    if complete:
        _enough_values(keys.numeric, k, names)
    g = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(g + 1))
    num, ordn, nom, short = group_values(  # [1] means, medians and modes
        np.ascontiguousarray(keys.numeric, dtype=np.float64),
        np.ascontiguousarray(keys.ordinal, dtype=np.int64),
        np.ascontiguousarray(keys.nominal, dtype=np.int64),
        order,
        bounds,
        k,
    )
    units = np.repeat(labels[:, None], keys.numeric.shape[1], axis=1)
    if short.any():
        dist = _Distances.of(keys) if dist is None else dist
        _complete_keys(num, short, units, keys.numeric, dist, k, labels)
    if complete:
        assert not short.any(), "the records hold k values of every key (_enough_values)"
        return Representatives(num, ordn, nom, None, units)
    return Representatives(num, ordn, nom, short, units)


def complete_in_file(
    num: np.ndarray,
    short: np.ndarray,
    units: np.ndarray,
    numeric: np.ndarray,
    k: int,
    names: Sequence[str] | None = None,
    groups: np.ndarray | None = None,
) -> None:
    """Join, over the whole file, the sets that its parts (strata) could not make k
    (``short``, ``units`` of :class:`Representatives` from ``complete=False``, each part's
    unit numbers made distinct by the caller; the records of a part masked otherwise come
    as units that need nothing, e.g. a microaggregation's groups), in place, under the
    partial distance over the file's numeric z-scores (:func:`short_group_sets`; ``groups``
    (N,), each record's group numbered over the file, tells the sets a part already
    joined). Refuses a key with fewer than k values in the file (:func:`_enough_values`).
    Shapes: (N, p) each."""
    _enough_values(numeric, k, names)
    if short.any():
        empty = np.zeros((numeric.shape[0], 0), np.int64)
        dist = _Distances.of(MixedKeys(numeric, empty, np.zeros(0, np.int64), empty))
        _complete_keys(num, short, units, numeric, dist, k, groups)
    assert not short.any(), "the file holds k values of every key (_enough_values)"


def one_row_per_group(
    labels: np.ndarray, numeric: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blank, for a whole group, every key on which its released values differ.

    k counts identical released rows, a missing value being a value of its own
    (:mod:`sdcflow.core.measures.anonymity`): a group of k records releases k identical rows
    only if every key is released alike for all of them. Where a group mixes records that
    miss a key with records that have it (the representative is released on the present
    values), or keeps a category only where it equals the mode (``categorical: suppress``),
    its rows differ and each kind stands in a smaller class. The key is then released
    missing for the whole group: nothing a record gave is published beside a blank that
    tells it apart. Groups are unchanged where their rows already agree.

    Parameters
    ----------
    labels : ndarray of shape (n,), int
        The group of every record.
    numeric : ndarray of shape (n, p), float
        Released numeric keys, NaN where missing.
    codes : ndarray of shape (n, r), int
        Released categorical codes, -1 where missing or suppressed.

    Returns
    -------
    numeric, codes : the released keys, one row per group, new arrays
    numeric_blanked : ndarray of shape (p,), int
        Values present in ``numeric`` blanked here, per key.
    codes_blanked : ndarray of shape (r,), int
        Codes present in ``codes`` blanked here, per key.
    """
    labels = np.asarray(labels, dtype=np.int64)
    num = np.array(numeric, dtype=np.float64, copy=True)
    cod = np.array(codes, dtype=np.int64, copy=True)
    g = int(labels.max()) + 1 if labels.size else 0

    def differs(col: np.ndarray) -> np.ndarray:  # (n,) -> (n,): the record's group differs
        low = np.full(g, np.inf)
        high = np.full(g, -np.inf)
        np.minimum.at(low, labels, col)
        np.maximum.at(high, labels, col)
        return (low != high)[labels]

    num_blanked = np.zeros(num.shape[1], dtype=np.int64)
    for j in range(num.shape[1]):
        col = num[:, j]
        gap = np.isnan(col)
        # a group differs where its values differ or where some, not all, are missing
        mixed = differs(gap.astype(np.float64)) | differs(np.where(gap, 0.0, col))
        num_blanked[j] = int((mixed & ~gap).sum())
        col[mixed] = np.nan
    cod_blanked = np.zeros(cod.shape[1], dtype=np.int64)
    for j in range(cod.shape[1]):
        col = cod[:, j]
        mixed = differs(col.astype(np.float64))
        cod_blanked[j] = int((mixed & (col >= 0)).sum())
        col[mixed] = -1
    return num, cod, num_blanked, cod_blanked
