"""One piece of a streamed mask: the records of one stratum (or of one cut of a large one),
masked as :func:`sdcflow.methods.mixed.mask_keys` masks that stratum inside the whole file.

:func:`~sdcflow.methods.mixed.mask_keys` masks each stratum (a class of identical released
categorical rows after local suppression) on its own: the numeric keys of a stratum are
grouped, averaged and rounded from that stratum's records alone, and the suppressed values
given back are decided from the classes of identical released rows over all keys, which never
cross strata (their categorical values differ). :func:`mask_piece` runs the same core
functions, in the same order, on one stratum's records in row-id order, so a piece gives the
values the whole file gives to those records. What the whole file decides across strata is
the caller's: the local suppression itself (from the categorical combinations' counts), the
importance rank of the categorical keys, and the figures summed over the pieces.

Two steps read other strata in memory and here read only the piece (the figures say when
they acted): a set of a stratum with missing numbers still short of k values of a key after
its stratum is joined over the stratum's records here (over the whole file in memory,
:func:`~sdcflow.core.microaggregation.heterogeneous.complete_in_file`), and a key the
stratum holds fewer than k values of is released blank in that stratum; the information
loss's lower bound needs the whole file and is not computed. The linear edit rules, and the
consequents of conditional ones, move a group in the whole file's units, as in memory: the
caller gives them (``file_units``, from the warehouse), else the piece's own are taken. The
groups a conditional rule redoes are the records of one stratum released alike before
rounding (``mask_keys``), so a piece redoes its own (groups of two cuts of one stratum
released alike are moved alike and counted once per cut).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.file_units import FileUnits
from sdcflow.core.linear.group_values import Condition, group_values_on_rules
from sdcflow.core.measures.anonymity import key_codes
from sdcflow.core.microaggregation.blocked import blocked_groups, blocked_mdav
from sdcflow.core.microaggregation.heterogeneous import complete_in_file
from sdcflow.core.microaggregation.mdav import group_means
from sdcflow.core.microaggregation.ps import ps_groups
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.microaggregation.univariate import univariate_groups
from sdcflow.core.suppression.local import restore
from sdcflow.core.validation import check_k
from sdcflow.methods.keys import EncodedRelease, Key
from sdcflow.methods.microaggregation import CrispParams, MdavParams, PsParams
from sdcflow.methods.mixed import (
    _conditions_kept,
    _one_row_per_group,
    _partial_groups,
    _partial_mdav,
    _partial_strategy,
    _rounded,
)

#: The details' text on how numeric keys with missing values were grouped (``mask_keys``').
partial_strategy = _partial_strategy


@dataclass
class PieceRelease:
    """A piece's released keys and its figures.

    Attributes
    ----------
    numeric : ndarray of shape (m, p)
        The numeric keys as released (rounded to their precision), NaN where missing.
    codes : ndarray of shape (m, c)
        The categorical codes as released (-1: missing or suppressed).
    figures : dict
        Counts for the release's details, summed over the pieces by the caller.
    """

    numeric: np.ndarray
    codes: np.ndarray
    figures: dict[str, Any] = field(default_factory=dict)


def crisp_labels(X: np.ndarray, params: CrispParams, k: int) -> np.ndarray:
    """The groups ``mdav`` / ``ps`` with ``cell_size`` form on complete records, as the
    method's mask forms them (:func:`~sdcflow.methods.microaggregation._mask_crisp` without
    ``refine`` and ``dominance``, which the streamed path refuses, and without the loss's
    lower bound). Shapes: X (m, p) finite -> labels (m,), groups of k..2k-1."""
    Z = working_scale(X, params.standardize)
    if X.shape[1] == 1:  # one variable: the optimal univariate partition, as the method does
        return univariate_groups(Z[:, 0], k)
    cell_size = getattr(params, "cell_size", None)
    assert cell_size is not None, "the streamed path takes mdav / ps with cell_size only"
    if isinstance(params, PsParams):
        return blocked_groups(Z, k, cell_size, ps_groups)
    assert isinstance(params, MdavParams)
    return blocked_mdav(Z, k, cell_size)


def mask_piece(
    X: np.ndarray,
    codes: np.ndarray,
    released_codes: np.ndarray,
    numeric_keys: Sequence[Key],
    params: CrispParams,
    constraints: LinearConstraints | None,
    rank: np.ndarray,
    *,
    stratified: bool,
    file_units: FileUnits | None = None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
    tolerances: Mapping[str, float] | None = None,
) -> PieceRelease:
    """Mask one piece as the in-memory path masks its stratum.

    Parameters
    ----------
    X : ndarray of shape (m, p)
        The piece's numeric keys in row-id order, NaN where missing.
    codes : ndarray of shape (m, c)
        Its categorical codes as read (the file's levels), -1 where missing.
    released_codes : ndarray of shape (m, c)
        The codes after the file's local suppression (-1 where suppressed): one stratum.
    numeric_keys : sequence of Key, length p
    params : CrispParams
        The spec's ``mdav`` / ``ps`` block (``cell_size`` set).
    constraints : LinearConstraints or None
        The linear error rules over the numeric keys.
    rank : ndarray of shape (c,)
        :func:`~sdcflow.core.suppression.local.importance_rank` over the whole file.
    stratified : bool
        Whether the release has categorical keys (the strata path of ``mask_keys``); without,
        the piece is the whole file (or a cut of it) and is masked as the numeric-only path.
    file_units : FileUnits, optional
        The whole file's units of the rules' columns (``sdcflow.warehouse.units``): a group
        of a piece with missing numbers is moved onto the rules in them, as in memory.
        Default: the piece's own. With ``conditional`` rules they are needed on every
        piece (a group of complete records that breaks one is moved too).
    conditional : sequence of (condition, LinearConstraints)
        The rules ``if C then D`` the groups keep (``mask_keys``' ``conditional``).
    tolerances : mapping str -> float, optional
        Each rule's own tolerance, by name (``mask_keys``' ``tolerances``).

    Returns
    -------
    PieceRelease
    """
    names = [key.name for key in numeric_keys]
    decimals = [key.decimals for key in numeric_keys]
    m = X.shape[0]
    k = check_k(params.k, m)
    cell_size = getattr(params, "cell_size", None)
    figures: dict[str, Any] = {"records": m, "missing_numbers": bool(np.isnan(X).any())}
    final = np.zeros(m, dtype=bool)
    final_columns: tuple[str, ...] = ()
    final_derived: tuple[str, ...] = ()
    moved = 0
    if not np.isnan(X).any():
        labels = crisp_labels(X, params, k)
        released = group_means(X, labels)
    elif not stratified:  # mask_keys' numeric-only path with missing values
        done = _partial_mdav(X, k, cell_size, names, constraints, decimals, conditional, file_units)
        released, moved = done.values, done.moved
        final[:] = True
        final_columns, final_derived = tuple(done.rounded), tuple(done.derived)
    else:  # a stratum with missing numbers (mixed._strata)
        labels, rep = _partial_groups(X, k, cell_size, names, complete=False)
        assert rep.short is not None and rep.units is not None
        num, short, units = rep.numeric.copy(), rep.short.copy(), rep.units.copy()
        figures["short_sets"] = int(np.unique(units[short.any(axis=1), 0]).size)
        # A key the stratum holds fewer than k values of cannot be completed inside it (in
        # memory its sets join other strata's): released blank for the stratum, so that no
        # mean of fewer than k of its values is published.
        held = (~np.isnan(X)).sum(axis=0)
        few = (held > 0) & (held < k) & short.any(axis=0)
        figures["values_blanked"] = int(held[few].sum())
        pool = X
        if few.any():
            pool = X.copy()
            pool[:, few] = np.nan
            num[:, few] = np.nan
            short[:, few] = False
        if short.any():  # joined over the stratum here, over the whole file in memory
            complete_in_file(num, short, units, pool, k, names, labels)
        sets = np.unique(units[:, 0], return_inverse=True)[1].reshape(-1)
        done = group_values_on_rules(
            X, num, sets, names, constraints, decimals, conditional, file_units
        )
        released = _one_row_per_group(labels, done.values)
        moved = done.moved
        final[:] = True
        final_columns = tuple(sorted(done.rounded))
        final_derived = tuple(sorted(done.derived))
    figures["groups_moved_onto_edit_rules"] = int(moved)
    out_codes = released_codes
    if stratified:
        # Give back suppressed values while every class of identical rows over all keys keeps
        # k: those classes lie inside the stratum (mixed._strata, on the whole file there).
        c = codes.shape[1]
        num_codes = key_codes(released)
        all_codes = np.concatenate([released_codes, num_codes], axis=1)
        original = np.concatenate([codes, num_codes], axis=1)
        full_rank = np.concatenate([rank, np.full(released.shape[1], c)])
        S = np.concatenate(
            [(released_codes < 0) & (codes >= 0), np.zeros(released.shape, dtype=bool)], axis=1
        )
        restored, _, _, given_back = restore(all_codes, original, S, k, full_rank)
        out_codes = restored[:, :c].astype(np.int64)
        figures["suppressed_then_restored"] = int(given_back)
    # Precision: integers for integer keys, declared decimals, equalities kept (mask_keys).
    rel = EncodedRelease(
        released, out_codes, final_rows=final, final_columns=final_columns,
        final_derived=final_derived,
    )  # fmt: skip
    unrounded = released.copy() if conditional else released
    if any(d is not None for d in decimals):
        rel.numeric = _rounded(rel, names, decimals, constraints).values
    if conditional:  # the groups of complete records that break one, redone (mask_keys)
        kept = _conditions_kept(
            rel, unrounded, X, names, constraints, conditional, decimals, tolerances, file_units
        )
        if kept is not None:
            figures["groups_moved_onto_conditional_rules"] = kept[0]
    released = rel.numeric
    figures["numbers_blanked"] = [int(v) for v in (~np.isnan(X) & np.isnan(released)).sum(axis=0)]
    # whether every value of an integer key is whole here (the file's type needs all pieces)
    whole = np.isnan(released) | (released == np.round(released))
    figures["whole"] = [bool(v) for v in whole.all(axis=0)]
    return PieceRelease(np.asarray(released, dtype=np.float64), out_codes, figures)
