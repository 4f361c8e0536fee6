"""Exact linear relations among numeric keys that no edit rule declares.

With missing values a group's mean of each key is taken over the records that have it
(:mod:`sdcflow.core.microaggregation.heterogeneous`), so the means of keys that a relation
ties on every record are means over different records, and the relation applied to them
gives a record's own combination of those keys away. By hand: a group of five holds
``total = a + b`` on every record, and record 1 lacks ``a``; the group releases ``a_G``
over records 2-5 and ``b_G``, ``total_G`` over all five, so

    5 (total_G - b_G) - 4 a_G = total_1 - b_1,

record 1's own ``total - b`` exactly, and ``total_1`` with it for anyone who knows ``b_1``.
Declared as an edit rule, the relation is kept by moving each group's values onto it
(:mod:`sdcflow.core.linear.group_values`): the released means then satisfy it, and the
residual that carried the record's combination is gone. :func:`undeclared_relations` finds
the relations the data hold and the rules do not imply, so that a release can be refused
before it publishes one.

A relation is a combination ``c . x`` (``c`` a unit vector on the keys' z-scores over the
records holding every key) whose standard deviation is below ``RELATION_SD`` of the keys'
own on at least ``HOLDING_SHARE`` of those records (errors break it on the others; sets
without them give it away as before): exact identities (an accounting total, rounding
included) and identities up to a small error alike, which the same arithmetic reads to
within that error. Relations among keys without missing values are left out (their means
are over the same records, and satisfy them), and so are keys constant where the relation
holds (a key that is zero on most records ties nothing to the others).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sdcflow.core.linear.constraints import LinearConstraints

#: A combination of the keys' z-scores whose standard deviation is below this is a relation.
RELATION_SD = 1e-3
#: The records of a larger file the preflight searches (a uniform sample, fixed seed): the
#: search's matrices are then those of this many records, whatever the file's size.
RELATION_SAMPLE = 1_000_000
#: A relation counts when it holds on at least this share of the records holding its keys
#: (the others may break it: errors, or another population); sets within it give it away.
HOLDING_SHARE = 0.9
#: A record within this many ``tol`` of a relation's hyperplane holds it.
_NEAR = 10.0
#: Concentration steps (:func:`_holding`): random starts, and the records searched.
_STARTS = 50
_SEARCH_ROWS = 20_000
#: A random start whose records after one step spread this much (z-units) is off every
#: relation (one whose q records all hold it puts the h records on it at once).
_HOPELESS = 0.05
#: A relation's term below this share of its largest term's spread is rounding (_named).
_TERM = 1e-4
#: Numerical zero for coefficients (relative to a relation's largest).
_LEFT = 1e-6
#: A relation this close (in angle) to the span of the declared ones is one of them.
_SPANNED = 1e-4


def undeclared_relations(
    X: np.ndarray,
    columns: Sequence[str],
    declared: LinearConstraints | None = None,
    tol: float = RELATION_SD,
    masked: np.ndarray | None = None,
    patterns: np.ndarray | None = None,
) -> list[Relation]:
    """The linear relations among the columns of ``X`` that hold on ``HOLDING_SHARE`` of the
    records holding all of them at least (module docstring), involve a column with missing
    values, and are not implied by the equalities of ``declared`` (rows over ``columns``
    only; other rows are ignored); with ``masked`` (p,) bool, only those reading a masked
    column (the others tie columns published as they are).

    ``X`` may be a random sample of the file's records (:func:`sample_rows`): the search
    and each relation's share are then the sample's, and ``patterns`` (m, p) bool, the
    distinct patterns of missing values over the whole file
    (:func:`missing_patterns`), say which columns have a missing value and whether a
    record holds some of a relation's columns but not all, which one record outside the
    sample may do.

    Returns one :class:`Relation` per dimension of what is left (a basis, in the columns'
    own units, the largest coefficient 1 in absolute value, reduced so that each relation
    names as few columns as the others allow); empty when
    fewer than twice as many records as columns hold every column (too few to tell a
    relation from chance). Shapes: X (n, p) with NaN for missing, columns (p,).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(columns):
        raise ValueError("X must be (n, p) with one name per column")
    missing = ~np.isfinite(X)  # an infinity is no value to relate either
    if np.isinf(X).any():  # (a copy only then: X may be millions of records)
        X = np.where(missing, np.nan, X)
    masked = np.ones(X.shape[1], bool) if masked is None else np.asarray(masked, bool)
    if patterns is None:
        file = _Missing(missing.any(axis=0), missing)
    else:
        patterns = np.asarray(patterns, dtype=bool).reshape(-1, X.shape[1])
        file = _Missing(patterns.any(axis=0) | missing.any(axis=0), patterns)
    # too few records holding every column: for each column with gaps, the most missing of
    # the others are left out until twice as many records as columns hold the rest
    subsets = [np.ones(X.shape[1], dtype=bool)]
    if (~missing.any(axis=1)).sum() < 2 * X.shape[1]:
        subsets = []
        for g in np.flatnonzero(file.gaps):
            use = np.ones(X.shape[1], dtype=bool)
            while use.sum() > 2 and (~missing[:, use].any(axis=1)).sum() < 2 * use.sum():
                others = np.flatnonzero(use & (np.arange(X.shape[1]) != g))
                use[others[np.argmax(missing[:, others].sum(axis=0))]] = False
            subsets.append(use)
    chosen: dict[str, Relation] = {}
    for use in subsets:
        for r in _search(X, missing, use, columns, declared, tol, masked, file):
            chosen.setdefault(r.text(), r)
    return list(chosen.values())


def _search(
    X: np.ndarray,
    missing: np.ndarray,
    use: np.ndarray,
    columns: Sequence[str],
    declared: LinearConstraints | None,
    tol: float,
    masked: np.ndarray,
    file: _Missing,
) -> list[Relation]:
    """:func:`undeclared_relations` among the columns ``use`` (p,) bool."""
    rows = ~missing[:, use].any(axis=1)
    full = X[rows]
    full[:, ~use] = 0.0
    # a robust spread (1.4826 MAD; the sd where most values are one): a few outlying
    # values (a 99999999 code, a giant firm) would otherwise shrink everyone else's; column
    # by column, so that the medians' working copies are one column each
    if full.shape[0]:
        centre = np.array([np.median(full[:, j]) for j in range(X.shape[1])])
        mad = [np.median(np.abs(full[:, j] - centre[j])) for j in range(X.shape[1])]
        sd = 1.4826 * np.array(mad)
        if (sd <= 0).any():
            sd = np.where(sd > 0, sd, full.std(axis=0))
    else:
        centre = sd = np.zeros(X.shape[1])
    live = np.flatnonzero(use & (sd > 0))  # a constant column ties nothing to the others
    gaps = file.gaps
    if live.size < 2 or full.shape[0] < 2 * live.size:
        return []
    if not gaps[live].any() and masked[live].all():
        return []  # keys alone, none missing: their means are over the same records
    Z = full[:, live]  # a copy, standardized in place
    Z -= centre[live]
    Z /= sd[live]
    holding, found = _relations(Z, tol)
    if not found.size:
        return []
    found[np.abs(found) < 1e-9] = 0.0  # round-off, before the columns' scales enlarge it
    held = full[holding][:, live]
    # a column constant where the relations hold (zero for most records) ties nothing
    flat = held.std(axis=0) <= 1e-12 * np.maximum(np.abs(held).max(axis=0), 1e-300)
    allowed = [np.eye(live.size)[flat]]
    whole = np.flatnonzero(~gaps[live] & masked[live])
    if whole.size >= 2:  # relations among keys without missing values are kept anyway
        C = np.cov(Z[holding], rowvar=False, bias=True)
        among = _small(C[np.ix_(whole, whole)], tol)
        allowed.append(np.zeros((among.shape[0], live.size)))
        allowed[-1][:, whole] = among
    if declared is not None and declared.A.size:
        on = _declared(declared, columns)[:, live] * sd[live]  # a . x in z-scores
        allowed.append(on[np.abs(on).sum(axis=1) > 0])
    base = np.vstack(allowed)
    if _rank(np.vstack([base, found])) == _rank(base):
        return []
    # the relations in reduced form, in the columns' own units; those the allowed ones and
    # the relations taken before do not span, as a basis of what is left
    reduced = _reduced(found / sd[live])
    chosen = []
    for row in reduced:
        grown = np.vstack([base, row * sd[live]])
        if _rank(grown) <= _rank(base):
            continue
        base = grown
        row = _snapped(row, held, sd[live], tol)
        size = np.abs(row * sd[live])
        row = np.where(size <= _TERM * size.max(), 0.0, row)  # rounding of the others
        coef = np.zeros(X.shape[1])
        coef[live] = row
        on = coef != 0
        if not masked[on].any():
            continue  # among columns published as they are: nothing masked to read
        bare = bool((~masked[on]).any())  # a key read through a column published as it is
        # a record holding some of its columns but not all gives its combination away;
        # where they are missing together (a block unanswered) nothing is read
        if not file.partial(on) and not bare:
            continue
        constant = float(np.median(held @ row))
        mine = ~missing[:, on].any(axis=1)  # the records holding its columns: its share
        off = np.abs(X[mine][:, on] @ coef[on] - constant)
        share = float((off <= _NEAR * tol * size.max()).mean())
        chosen.append(
            Relation(_named(coef, columns), constant, tol * float(size.max()), share, bare)
        )
    return chosen


@dataclass(frozen=True)
class _Missing:
    """Where the file's values are missing: ``gaps`` (p,) the columns with a missing value,
    ``rows`` (m, p) the missing values of every record, or the distinct patterns of them."""

    gaps: np.ndarray
    rows: np.ndarray

    def partial(self, on: np.ndarray) -> bool:
        """Whether a record holds some of the columns ``on`` (p,) bool but not all: it gives
        its combination away; where they are missing together (a block unanswered) nothing
        is read."""
        sub = self.rows[:, on]
        return bool((sub.any(axis=1) & ~sub.all(axis=1)).any())


def missing_patterns(missing: np.ndarray, seen: np.ndarray | None = None) -> np.ndarray:
    """The distinct rows of ``missing`` (n, p) bool, with those ``seen`` (m, p) before:
    (m', p) bool, a few rows however many records (the file's patterns of missing values,
    gathered a batch at a time)."""
    missing = np.asarray(missing, dtype=bool)
    p = missing.shape[1]
    if p <= 62:  # each row as one integer: a sort of n integers, not of n rows
        bits = np.left_shift(np.int64(1), np.arange(p, dtype=np.int64))
        codes = np.unique(missing.astype(np.int64) @ bits)
        missing = (codes[:, None] & bits) != 0
    rows = missing if seen is None else np.vstack([seen, missing])
    return np.unique(rows, axis=0) if rows.shape[0] else rows.reshape(0, p)


def sample_rows(rng: np.random.Generator, n: int, total: int, cap: int) -> np.ndarray:
    """Which of the next ``n`` records of a file of ``total`` records a uniform sample of
    about ``cap`` of them keeps: (n,) bool, every record when ``total <= cap``. Drawn one
    record at a time from ``rng``, so the same file gives the same sample however it is cut
    into batches."""
    if total <= cap:
        return np.ones(n, dtype=bool)
    return rng.random(n) < cap / total


def _snapped(row: np.ndarray, R: np.ndarray, scale: np.ndarray, tol: float) -> np.ndarray:
    """The relation ``row`` (q,) with whole-number coefficients (the largest 1) where they
    are the same relation (within ``_SPANNED`` on the z-scores, ``scale`` (q,)) and hold on
    the records ``R`` (m, q) as well: an identity found up to rounding, ``1.00001 *
    turnover``, is ``turnover``."""
    whole = np.round(row)
    if not np.any(whole) or np.abs(whole - row).max() > 0.01:
        return row
    a, b = row * scale, whole * scale
    if np.linalg.norm(a / np.linalg.norm(a) - b / np.linalg.norm(b)) > _SPANNED:
        return row
    return whole if (R @ whole).std() <= tol * np.abs(b).max() else row


def _relations(Z: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The records (bool (n,)) on which the relations found hold, and the relations (m, q)
    as unit rows: one at a time (:func:`_holding`), each searched among the records that
    hold the ones before, in the directions orthogonal to them."""
    n, q = Z.shape
    holding = np.ones(n, dtype=bool)
    found = np.zeros((0, q))
    while found.shape[0] < q - 1:
        _, _, vt = np.linalg.svd(np.vstack([found, np.zeros((1, q))]), full_matrices=True)
        rest = vt[found.shape[0] :].T  # (q, q - m): the directions orthogonal to the found
        at = np.flatnonzero(holding)
        # (Z itself while every record holds: no copy of millions of records)
        hit = _holding((Z if at.size == n else Z[at]) @ rest, tol)
        if hit is None:
            break
        holds, direction = hit
        holding[at[~holds]] = False
        found = np.vstack([found, rest @ direction])
    return holding, found


def _holding(Z: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The records (bool (n,)) on which a combination (a unit (q,)) of ``Z``'s columns
    varies by less than ``tol``, if it holds on ``HOLDING_SHARE`` of them at least; None
    when there is none.

    A relation the data hold is broken on the records with errors (a survey's data-entry
    errors), which hide it from the covariance of all records. Concentration steps, as in
    Rousseeuw and Van Driessen's FAST-MCD (Technometrics 41(3), 1999): from a start, keep
    the h records nearest the hyperplane of the smallest spread and fit it again, until
    the h records stay; starts are all the records and ``_STARTS`` random sets of q (whose
    hyperplane is exact), on a sample of at most ``_SEARCH_ROWS`` (a fixed seed: the same
    file gives the same answer). Then every record within ``_NEAR`` x ``tol`` of the best
    hyperplane holds it."""
    n, q = Z.shape
    if q < 1 or n < 2 * q:
        return None
    rng = np.random.default_rng(0)
    S = Z if n <= _SEARCH_ROWS else Z[np.sort(rng.choice(n, _SEARCH_ROWS, replace=False))]
    h = max(q + 1, int(np.ceil(HOLDING_SHARE * S.shape[0])))
    starts = [np.arange(S.shape[0])]
    starts += [rng.choice(S.shape[0], q, replace=False) for _ in range(_STARTS)]
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for first, rows in enumerate(starts):
        for step in range(30):
            centre = S[rows].mean(axis=0)
            lam, vec = np.linalg.eigh(np.atleast_2d(np.cov(S[rows], rowvar=False, bias=True)))
            if first and step and lam[0] > _HOPELESS**2:
                break  # a random start off every relation: its h records are not near one
            spread = np.abs((S - centre) @ vec[:, 0])
            kept = np.sort(np.argpartition(spread, h - 1)[:h])
            if kept.size == rows.size and np.array_equal(kept, rows):
                break
            rows = kept
        low = float(np.sqrt(max(lam[0], 0.0)))
        if best is None or low < best[0]:
            best = (low, vec[:, 0], centre)
        if low < tol * 1e-3:  # exact: no start can do better
            break
    assert best is not None
    if best[0] >= tol:
        return None
    holds = np.abs((Z - best[2]) @ best[1]) <= _NEAR * tol
    return (holds, best[1]) if holds.mean() >= HOLDING_SHARE else None


def _declared(declared: LinearConstraints, columns: Sequence[str]) -> np.ndarray:
    """The equality rows of ``declared`` that read only ``columns``, over ``columns``."""
    common = [c for c in columns if c in declared.columns]
    A = np.zeros((0, len(columns)))
    if common:
        sub = declared.restrict(common)
        A = np.zeros((sub.A.shape[0], len(columns)))
        A[:, [list(columns).index(c) for c in common]] = sub.A
    return A


def _rank(M: np.ndarray) -> int:
    """Rank of the rows of ``M``, each scaled to unit length (empty: 0); a row within
    ``_SPANNED`` of the others' span adds nothing (a rounded identity's direction is the
    declared rule's up to its rounding)."""
    if not M.size:
        return 0
    M = M / np.linalg.norm(M, axis=1, keepdims=True)
    return int((np.linalg.svd(M, compute_uv=False) > _SPANNED).sum())


def _small(C: np.ndarray, tol: float) -> np.ndarray:
    """Unit combinations whose standard deviation under the covariance ``C`` (q, q) is
    below ``tol``: (m, q) rows, a basis of them."""
    lam, vec = np.linalg.eigh(C)
    return vec[:, np.sqrt(np.clip(lam, 0.0, None)) < tol].T


def _reduced(coef: np.ndarray) -> np.ndarray:
    """Reduced row echelon form of the relations, pivots from the last column (a total is
    usually listed after its parts), each row scaled to a largest coefficient of 1."""
    R = coef[:, ::-1].copy()
    row = 0
    for c in range(R.shape[1]):
        if row == R.shape[0]:
            break
        pivot = row + int(np.argmax(np.abs(R[row:, c])))
        if abs(R[pivot, c]) < _LEFT * np.abs(R).max():
            continue
        R[[row, pivot]] = R[[pivot, row]]
        R[row] /= R[row, c]
        others = np.arange(R.shape[0]) != row
        R[others] -= np.outer(R[others, c], R[row])
        row += 1
    R = R[:, ::-1]
    R /= np.abs(R).max(axis=1, keepdims=True)
    return R


def _named(row: np.ndarray, columns: Sequence[str]) -> dict[str, float]:
    """The relation's terms by column (those a term below ``_TERM`` of the largest term's
    spread, the rounding of the others -- 0.000173 * MONTH beside monthly sales -- left
    out by the caller)."""
    return {str(c): float(v) for c, v in zip(columns, row, strict=True) if v != 0}


@dataclass(frozen=True)
class Relation:
    """``sum(coefficients[c] * c) == constant`` on every record holding the columns (up to
    ``RELATION_SD`` of their spread)."""

    coefficients: dict[str, float]
    constant: float
    precision: float = 0.0  # what the relation holds to, in the units: a smaller constant is 0
    share: float = 1.0  # of the records holding its columns, those it holds on
    bare: bool = False  # it reads a column published as it is

    def text(self) -> str:
        """As an edit rule, the last column on the left: e.g. ``profit == turnover - wages -
        other_costs`` (the reduced form ends each relation on its own column; 6 figures)."""
        items = list(self.coefficients.items())
        at = len(items) - 1
        name, lead = items[at]
        terms = [(-v / lead, _term(abs(v / lead), c)) for i, (c, v) in enumerate(items) if i != at]
        constant = self.constant / lead
        if abs(constant) > max(self.precision / abs(lead), 1e-12 * abs(self.constant)):
            terms.append((constant, f"{abs(constant):.15g}"))
        right = " ".join(("- " if v < 0 else "+ ") + t for v, t in terms) or "0"
        right = right[2:] if right.startswith("+ ") else "-" + right[2:] if terms else right
        return f"{_quoted(name)} == {right}"


def _term(size: float, name: str) -> str:
    return _quoted(name) if f"{size:.12g}" == "1" else f"{size:.15g} * {_quoted(name)}"


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS = frozenset({"and", "or", "not", "if", "then", "in", "is", "null", "true", "false"})


def _quoted(name: str) -> str:
    """A column as the rule language reads it: in backticks unless a plain identifier."""
    plain = _PLAIN.fullmatch(name) and name.lower() not in _WORDS
    return name if plain else f"`{name}`"
