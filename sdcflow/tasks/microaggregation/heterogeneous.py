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
mean of the present values...); a missing value stays missing in the release (it matches any
value when k is counted, :mod:`sdcflow.tasks.measures.anonymity`), nothing is imputed. A
numeric key's value that is the only one of its group would be its own mean, published as it
is: it is released as the mean of the k values of the key nearest it instead
(:func:`lone_value_means`).

Large files: MDAV-generic costs O(n^2 d / k), fourfold with every doubling of n (figures:
``benchmarks/README.md``, "Missing numbers at scale"). :func:`heterogeneous_cells` runs it
within spatial cells of at most ``cell_size`` records -- the recursive median cuts of
MDAV's ``cell_size`` (:func:`~sdcflow.tasks.microaggregation.neighbours.spatial_cells`) on
the scaled numeric and ordinal keys, a missing value placed at its key's mean for the cut
only -- each cell an independent piece of :func:`~sdcflow.tasks.parallel.map_parts` (a Dask
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

from sdcflow.errors import DataError, ParameterError, Reason
from sdcflow.tasks.microaggregation.neighbours import spatial_cells
from sdcflow.tasks.parallel import map_parts
from sdcflow.tasks.validation import check_cell_size, check_k, safe_mean


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
    divided by the number of categories [1]. Shapes: (n, p), (n, q)."""
    num = keys.numeric
    if num.shape[1]:
        # Exact power-of-two rescaling per column first (as validation.standardize), so that
        # keys near the float limits give finite z-scores.
        present = ~np.isnan(num)
        biggest = np.max(np.where(present, np.abs(num), 0.0), axis=0)
        num = np.ldexp(num, -np.frexp(biggest)[1])
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

    def to(self, rows: np.ndarray, cont: np.ndarray, nom: np.ndarray) -> np.ndarray:
        """Squared distances of ``rows`` to the point (``cont`` (p+q,), ``nom`` (r,))."""
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
        return np.where(common > 0, sq * self.total / np.maximum(common, 1), 0.0)

    def record(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.cont[i], self.nom[i]

    def centroid(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean of the scaled numeric keys, median rank of the ordinal ones (on the scaled
        ranks, which keep the order), mode of the nominal ones, over the values present."""
        cont = _aggregate_cont(self.cont[rows], self.numeric)
        nom = np.array([_mode(self.nom[rows, j]) for j in range(self.nom.shape[1])], np.int64)
        return cont, nom


def _aggregate_cont(block: np.ndarray, numeric: int) -> np.ndarray:
    """Means of the first ``numeric`` columns and lower medians of the others (NaN ignored;
    NaN when a column has no value)."""
    out = np.full(block.shape[1], np.nan)
    for j in range(block.shape[1]):
        col = block[:, j]
        col = col[~np.isnan(col)]
        if col.size == 0:
            continue
        if j < numeric:
            out[j] = safe_mean(col)  # [1] continuous keys: the mean
        else:
            out[j] = np.sort(col)[(col.size - 1) // 2]  # [1] ordinal keys: the (lower) median
    return out


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


def lone_value_means(
    pool: np.ndarray, v: np.ndarray, k: int, name: str | None = None
) -> np.ndarray:
    """For each value ``v`` (r,) of the key's column ``pool`` (n,), the mean of the k present
    values of ``pool`` nearest it (itself included; ties to the lower value): the value a
    group releases for a key only one of its records has (:func:`group_representatives`),
    an average of k values.

    In the sorted present values the k nearest to v form the window of k consecutive values
    around v whose farther end is nearest; it is found for all records at once by a binary
    search on the window's start. Refused (:func:`_enough_values`) when fewer than k values
    are present. Shapes: pool (n,) with NaN missing, v (r,) -> (r,).
    """
    _enough_values(pool[:, None], k, None if name is None else [name])
    values = np.sort(pool[~np.isnan(pool)])
    m = values.size
    w = k  # m >= k (_enough_values)
    v = np.asarray(v, dtype=np.float64)
    # the window [s, s + w) is the k nearest to v when v - values[s] <= values[s + w] - v
    # fails for s - 1 and holds for s: the first s in [0, m - w] where it holds
    lo = np.zeros(v.size, dtype=np.int64)
    hi = np.full(v.size, m - w, dtype=np.int64)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        holds = v - values[mid] <= values[np.minimum(mid + w, m - 1)] - v
        holds |= mid + w >= m
        hi = np.where(holds, mid, hi)
        lo = np.where(holds, lo, mid + 1)
    return np.array([safe_mean(values[s : s + w]) for s in lo]) if v.size else v.copy()


def _name(names: Sequence[str] | None, j: int) -> str | None:
    return str(names[j]) if names is not None else None


def _mode(col: np.ndarray) -> int:
    """Most frequent code among those present (-1 when none); ties to the lowest code."""
    present = col[col >= 0]
    return int(np.bincount(present).argmax()) if present.size else -1  # [1] nominal: the mode


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
    """MDAV-generic on the scaled keys of ``dist`` (:func:`heterogeneous_groups`)."""
    n = dist.cont.shape[0] if dist.cont.shape[1] else dist.nom.shape[0]
    labels = -np.ones(n, dtype=np.int64)
    remaining = np.arange(n)
    group = 0

    def take(center_row: int) -> None:
        nonlocal remaining, group
        d2 = dist.to(remaining, *dist.record(center_row))
        # the k nearest, ties to the lowest row (remaining is sorted)
        nearest = np.argsort(d2, kind="stable")[:k]
        labels[remaining[nearest]] = group
        group += 1
        keep = np.ones(remaining.size, dtype=bool)
        keep[nearest] = False
        remaining = remaining[keep]

    while remaining.size >= 3 * k:
        c = dist.centroid(remaining)
        r = remaining[int(np.argmax(dist.to(remaining, *c)))]
        take(r)  # [2] the record farthest from the centroid and its k - 1 nearest
        s = remaining[int(np.argmax(dist.to(remaining, *dist.record(r))))]
        take(s)  # [2] the record farthest from r and its k - 1 nearest
    if remaining.size >= 2 * k:
        c = dist.centroid(remaining)
        take(remaining[int(np.argmax(dist.to(remaining, *c)))])
    labels[remaining] = group
    return labels


def _cell_groups(
    cont: np.ndarray, numeric: int, nom: np.ndarray, k: int, raw: MixedKeys | None = None
) -> tuple[np.ndarray, Representatives | None]:
    """One cell of :func:`heterogeneous_cells` (a piece a map may ship to another process):
    MDAV-generic on the cell's rows of the file's scaled keys, and with ``raw`` (the cell's
    keys as given) the groups' representatives, computed here rather than in the process
    that assembles the cells. (m, p + q), (m, r) -> labels (m,), Representatives or None."""
    labels = _groups(_Distances(cont, numeric, nom), k)
    return labels, (None if raw is None else group_representatives(raw, labels, k, lone=False))


def heterogeneous_cells(keys: MixedKeys, k: int, cell_size: int) -> np.ndarray:
    """MDAV-generic [2] under the heterogeneous distance [1] within spatial cells.

    The records are cut into cells of at most ``cell_size`` records by recursive median cuts
    of the numeric z-scores and scaled ordinal ranks (:func:`spatial_cells`; a missing value
    stands at its key's mean for the cut only, nominal keys do not cut), and
    :func:`heterogeneous_groups` groups each cell on its own, with the distances of the
    whole file (z-scores over every present value, not the cell's). Each cell is one piece of
    :func:`~sdcflow.tasks.parallel.map_parts`, so the labels do not depend on where the cells
    ran. Groups never cross a cell's border: a cut through a dense region costs some
    information loss against one pass over the file (``benchmarks/README.md``, "Missing
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
    pool: np.ndarray | None = None,
) -> tuple[np.ndarray, Representatives]:
    """:func:`heterogeneous_cells` and the groups' representatives
    (:func:`group_representatives`), each cell's computed by its own piece: the same values
    as computing them after, without a pass over every group in the assembling process.
    Shapes: keys with n records -> labels (n,), Representatives."""
    labels, rep = _in_cells(keys, k, cell_size, representatives=True, names=names, pool=pool)
    assert rep is not None
    return labels, rep


def _in_cells(
    keys: MixedKeys,
    k: int,
    cell_size: int,
    *,
    representatives: bool,
    names: Sequence[str] | None = None,
    pool: np.ndarray | None = None,
) -> tuple[np.ndarray, Representatives | None]:
    k = check_k(k, keys.n)
    cell_size = check_cell_size(cell_size, k)
    if representatives:  # before any cell is grouped
        _enough_values(keys.numeric if pool is None else pool, k, names)
    dist = _Distances.of(keys)
    n = keys.n
    if n <= cell_size:
        labels = _groups(dist, k)
        if not representatives:
            return labels, None
        return labels, group_representatives(keys, labels, k, names=names, pool=pool)
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
    )
    offset = 0
    for rows, (part, cell_rep) in zip(cells, parts, strict=True):
        labels[rows] = part + offset
        offset += int(part.max()) + 1
        if cell_rep is not None:
            rep.numeric[rows], rep.ordinal[rows] = cell_rep.numeric, cell_rep.ordinal
            rep.nominal[rows] = cell_rep.nominal
    if representatives:  # a group's lone value: over the whole file, as in one pass
        for j in range(keys.numeric.shape[1]):
            at = np.flatnonzero(np.isnan(rep.numeric[:, j]) & ~np.isnan(keys.numeric[:, j]))
            if at.size:
                column = keys.numeric[:, j] if pool is None else pool[:, j]
                rep.numeric[at, j] = lone_value_means(
                    column, keys.numeric[at, j], k, _name(names, j)
                )
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
        Group mean of the present values where the record had a value, NaN elsewhere.
    ordinal : ndarray of shape (n, q), int64
        Group (lower) median rank where the record had a value, -1 elsewhere.
    nominal : ndarray of shape (n, r), int64
        Group mode where the record had a value, -1 elsewhere.
    """

    numeric: np.ndarray
    ordinal: np.ndarray
    nominal: np.ndarray


def group_representatives(
    keys: MixedKeys,
    labels: np.ndarray,
    k: int,
    *,
    lone: bool = True,
    names: Sequence[str] | None = None,
    pool: np.ndarray | None = None,
) -> Representatives:
    """Mean, median and mode of every group [1], released on the records' present values.

    A group of k or more records may hold a numeric key's value on one record only (the
    others missing it): its mean would be that record's own value, published as it is. That
    value is released instead as the mean of the k values of the key nearest it among the
    records given, or in ``pool`` (:func:`lone_value_means`; its own among them), so no
    value alone in its group is published as it was (before rounding to the key's
    precision). With ``lone=False`` such values are left NaN, for a caller that computes
    them over more records (the cells of :func:`heterogeneous_cells_release` leave them to
    the whole file). ``pool`` (N, p): the numeric keys of the whole file, where the
    neighbours are taken from (default: the records given; a stratum passes the file's).
    ``names`` (of the numeric keys) name a refused key. Shapes: keys with n records, labels
    (n,) in 0..g-1 ->
    :class:`Representatives`.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (keys.n,) or labels.min() < 0:
        raise ParameterError("labels must give a group >= 0 for every record")
    if lone:
        _enough_values(keys.numeric if pool is None else pool, k, names)
    g = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(g + 1))
    num = np.full(keys.numeric.shape, np.nan)
    ordn = -np.ones(keys.ordinal.shape, np.int64)
    nom = -np.ones(keys.nominal.shape, np.int64)
    lone_rows: list[list[int]] = [[] for _ in range(keys.numeric.shape[1])]
    for grp in range(g):
        rows = order[bounds[grp] : bounds[grp + 1]]
        for j in range(keys.numeric.shape[1]):
            col = keys.numeric[rows, j]
            has = ~np.isnan(col)
            if has.sum() == 1 and rows.size > 1:
                lone_rows[j].append(int(rows[has][0]))
            elif has.any():
                num[rows[has], j] = safe_mean(col[has])  # [1] mean
        for j in range(keys.ordinal.shape[1]):
            col = keys.ordinal[rows, j]
            has = col >= 0
            if has.any():
                ordn[rows[has], j] = np.sort(col[has])[(int(has.sum()) - 1) // 2]  # [1] median
        for j in range(keys.nominal.shape[1]):
            col = keys.nominal[rows, j]
            has = col >= 0
            if has.any():
                nom[rows[has], j] = _mode(col)  # [1] mode
    for j, at in enumerate(lone_rows if lone else []):
        if at:  # no numeric key value published as it is
            column = keys.numeric[:, j] if pool is None else pool[:, j]
            num[at, j] = lone_value_means(column, keys.numeric[at, j], k, _name(names, j))
    return Representatives(num, ordn, nom)
