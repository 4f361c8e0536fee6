"""Masking a release's keys when they are of several kinds, have gaps, or a precision.

:func:`mask_keys` is what the mask step calls. It composes, in this order:

1. **Global recoding** of the keys that declare one (:mod:`sdcflow.methods.recoding`): a binned
   numeric key becomes ordinal; a top- or bottom-coded one stays numeric, masked by the
   method with its coded values.
   The spec's ``pram:`` step then perturbs the categorical keys it names
   (:func:`~sdcflow.methods.perturbation.pram_step`), and the method masks them with their
   perturbed values.
2. **Masking**, by the first case that applies:

   * the method masks all keys itself (``Method.mask_keys``: ``heterogeneous``,
     ``local_suppression``);
   * numeric keys only, none missing: the method as before (by blocks if the spec has them);
   * numeric keys only, some missing: MDAV-generic with partial distances
     (:mod:`sdcflow.core.microaggregation.heterogeneous`): records are grouped on the values
     they have, group means use the values present, a missing value stays missing, and each
     group's values are moved onto the linear edit rules its records can be checked against
     (:mod:`sdcflow.core.linear.group_values`);
   * categorical and numeric keys, every categorical key PRAMed, a method without k
     (``noise``, ``rank_swap``, ``shuffle``): the method masks the numeric keys, the
     categorical ones are released as PRAM left them;
   * categorical and numeric keys: **strata** (:func:`~sdcflow.core.suppression.local.\
strata_suppression`): local suppression makes every class of identical released
     categorical rows (a blank equal only to a blank) hold at least k records, with the
     fewest suppressions it finds; these classes are the strata, and the method masks the
     numeric keys inside each (a stratum with a missing numeric value is grouped as in the
     case above; its groups short of a key's values join groups of any stratum, a joined
     group of a stratum without gaps then moved onto the rules as theirs are). A
     microaggregation groups at least k records of a stratum (a stratum of k to 2k - 1
     records is one group), so every released row over all keys is identical to at least
     k - 1 others. Suppressed values that can be given back while every class of identical
     rows over all keys keeps k records are given back
     (:func:`~sdcflow.core.suppression.local.restore`).

3. **Precision**: numeric keys are rounded to their precision (integers for integer columns),
   keeping the linear equalities among them (:mod:`sdcflow.core.linear.rounding`).

The result covers every key as released: ``MaskResult.masked`` holds all of them (a
suppressed or missing categorical value is ``None``, a missing number NaN), so every gate
counts k over all of them. ``points`` holds the numeric
keys as published, on which loss and linkage are measured.

Transparency: a composed release has no single grouping, so ``groups`` is None and the
transparency intruder (who reruns the deterministic steps on the original file) tells records
apart up to identical released rows; for a randomized numeric method inside strata this is a
conservative (higher) risk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.file_units import FileUnits
from sdcflow.core.linear.group_values import (
    Condition,
    GroupValues,
    breaking_conditions,
    group_values_on_rules,
)
from sdcflow.core.linear.relations import undeclared_relations
from sdcflow.core.linear.rounding import Rounded, off_precision, round_keeping_equalities
from sdcflow.core.measures.anonymity import key_codes
from sdcflow.core.microaggregation.heterogeneous import (
    MixedKeys,
    Representatives,
    complete_in_file,
    group_representatives,
    heterogeneous_cells_release,
    heterogeneous_groups,
    one_row_per_group,
)
from sdcflow.core.parallel import stage
from sdcflow.core.suppression.local import importance_rank, restore, strata_suppression
from sdcflow.core.validation import check_k
from sdcflow.errors import DataError, ParameterError, Reason
from sdcflow.methods import get_method
from sdcflow.methods.base import MaskResult, MethodParams
from sdcflow.methods.blocks import mask_quasi_identifiers
from sdcflow.methods.keys import (
    EncodedKeys,
    EncodedRelease,
    Key,
    SuppressionSettings,
    decode,
    encode_keys,
)
from sdcflow.methods.microaggregation import (
    combined_dominance_details,
    loss_without_bound,
    released_loss_details,
    stratified_bound_details,
)
from sdcflow.methods.perturbation import PRAM_STEP, PramStepParams, pram_step
from sdcflow.methods.recoding import recode


def _recoded(frame: pd.DataFrame, keys: Sequence[Key]) -> tuple[pd.DataFrame, list[Key], dict]:
    out = frame.copy()
    resolved, summary = [], {}
    for key in keys:
        if key.recoding is None:
            resolved.append(key)
            continue
        done = recode(key.name, frame[key.name], key.recoding)
        out[key.name] = done.values
        summary[key.name] = {"kind": key.recoding.kind, "records_changed": done.changed}
        if key.recoding.kind == "bins":  # which end of a bin holds its edge
            summary[key.name]["closed"] = key.recoding.closed
        summary[key.name].update(done.coded)  # top and bottom coding: values coded per side
        if key.kind == "numeric" and key.recoding.kind == "bins":  # the key becomes ordinal
            resolved.append(replace(key, kind="ordinal", order=tuple(done.order or ())))
        else:
            resolved.append(key)
    return out, resolved, summary


def _partial_groups(
    X: np.ndarray,
    k: int,
    cell_size: int | None,
    columns: Sequence[str],
    *,
    complete: bool = True,
) -> tuple[np.ndarray, Representatives]:
    """MDAV-generic with partial distances: records grouped on the values they have, means
    over the values present, a key some group holds fewer than k of joined over groups
    (:func:`group_representatives`), missing stays missing; with ``cell_size`` (mdav's),
    within spatial cells of at most that many records (:func:`heterogeneous_cells`). With
    ``complete=False`` (a stratum) the sets it cannot make k are left for the caller.
    (m, p) -> labels (m,), :class:`Representatives`."""
    keys = MixedKeys.build(numeric=X)
    if cell_size is None:
        labels = heterogeneous_groups(keys, k)
        return labels, group_representatives(keys, labels, k, complete=complete, names=columns)
    return heterogeneous_cells_release(keys, k, cell_size, columns, complete=complete)


def _partial_mdav(
    X: np.ndarray,
    k: int,
    cell_size: int | None,
    columns: Sequence[str],
    constraints: LinearConstraints | None,
    decimals: Sequence[int | None],
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
    units: FileUnits | None = None,
) -> GroupValues:
    """Group means of :func:`_partial_groups` over the whole file ``X``, each group's values
    then moved onto the linear rules its records can be checked against
    (:func:`group_values_on_rules`; means over different records break them) and rounded to
    ``decimals`` keeping the equalities each group's columns carry; ``conditional`` rules'
    consequents bind the groups whose values meet their condition; ``units``: the whole
    file's, when ``X`` is a part of it. (m, p) -> :class:`GroupValues` with values (m, p)."""
    labels, rep = _partial_groups(X, k, cell_size, columns)
    done = group_values_on_rules(  # a set of joined groups moved as one (Representatives.sets)
        X, rep.numeric, rep.sets(labels), columns, constraints, decimals, conditional, units
    )
    return done._replace(values=_one_row_per_group(labels, done.values))


def _one_row_per_group(labels: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The released numbers with a key blanked for a whole group where its records would be
    released unlike (some missing it): k counts identical rows (:func:`one_row_per_group`).
    Shapes: (m,), (m, p) -> (m, p)."""
    empty = np.zeros((values.shape[0], 0), np.int64)
    return one_row_per_group(labels, values, empty)[0]


def _moved(
    moved: int,
    constraints: LinearConstraints | None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
) -> dict[str, int]:
    """The details' count of groups moved onto the rules (a conditional rule's consequent
    among them), when there are rules."""
    has_rules = bool(conditional) or (constraints is not None and not constraints.is_empty)
    return {"groups_moved_onto_edit_rules": moved} if has_rules else {}


_NO_BOUND_WITH_GAPS = (
    "the bound's neighbour search takes complete records; the numeric keys have missing values"
)


def _partial_strategy(cell_size: int | None) -> str:
    cells = f" within spatial cells of at most {cell_size} records" if cell_size else ""
    return (
        "numeric keys with missing values: MDAV-generic with partial distances (records "
        f"grouped on the values they have){cells}"
    )


def _strata(
    enc: EncodedKeys,
    params: MethodParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
    settings: SuppressionSettings,
    mask: Callable[..., MaskResult],
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
    further: pd.DataFrame | None = None,
) -> EncodedRelease:
    k = check_k(params.k, enc.n)  # type: ignore[attr-defined]
    names = enc.categorical_names
    strata = strata_suppression(enc.codes, k, importance=settings.indices(names))
    released = np.full(enc.numeric.shape, np.nan)
    labels = strata.labels
    assert labels is not None
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(int(labels.max()) + 2))
    gaps = moved = 0
    final = np.zeros(enc.n, dtype=bool)  # rows rounded per group (missing numbers)
    final_columns: set[str] = set()
    final_derived: set[str] = set()
    bounded: list[np.ndarray] = []  # strata whose method reports a loss bound (crisp)
    count = int(labels.max()) + 1
    cell_size = getattr(params, "cell_size", None)
    partial: list[tuple[np.ndarray, np.ndarray, Representatives | None]] = []
    whole: list[np.ndarray] = []  # strata without missing numbers
    part_details: list[dict[str, Any]] = []
    for s in range(count):
        rows = order[bounds[s] : bounds[s + 1]]
        X = enc.numeric[rows]
        with stage(f"stratum {s + 1} of {count}" if count > 1 else ""):
            if np.isnan(X).any():  # grouped here; the rules wait for the whole file's sets
                partial.append(
                    (rows, *_partial_groups(X, k, cell_size, enc.numeric_names, complete=False))
                )
                continue
            beside = None if further is None else further.iloc[rows]  # the stratum's rows
            part = mask(X, enc.numeric_names, params, rng, constraints, beside)
        released[rows] = part.points
        whole.append(rows)
        part_details.append(part.details)
        if "lower_bound" in part.details:
            bounded.append(rows)
    if partial:
        # a stratum's group short of a key's values may need groups of other strata: those
        # of a stratum masked by the method are its records with one released row
        num = released.copy()
        short = np.zeros(enc.numeric.shape, dtype=bool)
        units = -np.ones(enc.numeric.shape, np.int64)
        offset = 0
        numbered = np.zeros(enc.n, dtype=np.int64)  # every stratum's groups, file-wide
        for rows in whole:
            group = np.unique(released[rows], axis=0, return_inverse=True)[1].reshape(-1)
            numbered[rows] = group + offset
            offset += int(group.max()) + 1
        kept = np.concatenate(whole) if whole else np.zeros(0, np.int64)
        units[kept] = numbered[kept, None]
        for rows, group, rep in partial:
            assert rep is not None and rep.short is not None and rep.units is not None
            num[rows], short[rows] = rep.numeric, rep.short
            units[rows] = rep.units + offset
            numbered[rows] = group + offset
            offset += int(group.max()) + 1
        complete_in_file(num, short, units, enc.numeric, k, enc.numeric_names, numbered)
        # a complete stratum's group joined to a short one releases the set's means, moved
        # onto the rules with the partial strata's (the rest of its stratum is left as its
        # method released it); every set moved as one, in one call: a set spanning strata,
        # or groups, moved in parts would publish one point per part (Representatives.sets)
        moved_rows = kept[(num[kept] != released[kept]).any(axis=1)]
        at = kept[np.isin(numbered[kept], numbered[moved_rows])]
        rows = np.union1d(np.concatenate([r for r, _, _ in partial]), at)
        sets = np.unique(units[rows, 0], return_inverse=True)[1].reshape(-1)
        with stage("strata with missing numbers on the edit rules"):
            done = group_values_on_rules(
                enc.numeric,  # the whole file's units, for every stratum alike
                num[rows],
                sets,
                enc.numeric_names,
                constraints,
                [key.decimals for key in enc.numeric_keys],
                conditional,
            )
        released[rows] = _one_row_per_group(numbered[rows], done.values)
        final[rows] = True
        final_columns |= set(done.rounded)
        final_derived |= set(done.derived)
        gaps, moved = len(partial), done.moved
    # Give back suppressed values while every class of identical rows over all keys keeps k.
    all_codes = np.concatenate([strata.codes, key_codes(released)], axis=1)
    original = np.concatenate([enc.codes, key_codes(released)], axis=1)
    c = enc.codes.shape[1]
    rank = np.concatenate(
        [importance_rank(enc.codes, settings.indices(names)), np.full(released.shape[1], c)]
    )
    S = np.concatenate([strata.suppressed, np.zeros(released.shape, dtype=bool)], axis=1)
    codes, S, _, given_back = restore(all_codes, original, S, k, rank)
    details: dict[str, Any] = {
        "strategy": "strata: classes of >= k identical released categorical rows, "
        f"{params.name} masks the numeric keys inside each stratum",
        "strata": int(labels.max()) + 1,
        "records_in_classes_below_k": strata.details["records_in_classes_below_k"],
        "suppression_lower_bound": strata.details["suppression_lower_bound"],
        "strata_with_missing_numbers": gaps,
        "suppressed_then_restored": int(given_back),
    }
    if gaps:  # how those strata were grouped: not by the spec's method
        details["missing_numbers"] = _partial_strategy(getattr(params, "cell_size", None))
        details.update(_moved(moved, constraints, conditional))
    dominance = combined_dominance_details(part_details)
    if dominance is not None:  # counts over the strata, each repaired inside
        details["dominance"] = dominance
    if bounded and len(bounded) == int(labels.max()) + 1:  # crisp in every stratum
        details.update(stratified_bound_details(enc.numeric, released, bounded, k))
    elif gaps:
        why = (
            f"the bound's neighbour search takes complete records; {gaps} strata hold "
            "missing numbers"
        )
        details.update(loss_without_bound(enc.numeric, released, why))
    return EncodedRelease(
        released,
        codes[:, :c].astype(np.int64),
        details=details,
        final_rows=final,
        final_columns=tuple(sorted(final_columns)),
        final_derived=tuple(sorted(final_derived)),
        strata=labels,
    )


def _rounded(
    rel: EncodedRelease,
    names: list[str],
    decimals: list[int | None],
    constraints: LinearConstraints | None,
) -> Rounded:
    """The released numbers at their precision, equalities kept. Values already rounded
    per group keeping the rules (``rel.final_rows`` x ``rel.final_columns``) are left as
    they are: rounded again record by record, a record missing a value of one equality
    would have the others rounded on their own (``tax == 0.2 * net`` at 1828.6 -> 1829)."""
    final = rel.final_rows
    if final is None or not rel.final_columns or not final.any():
        return round_keeping_equalities(rel.numeric, names, decimals, constraints)
    out = rel.numeric.copy()
    derived = set(rel.final_derived)
    if (~final).any():
        rest = round_keeping_equalities(rel.numeric[~final], names, decimals, constraints)
        out[~final] = rest.values
        derived |= set(rest.derived)
    others = [None if c in rel.final_columns else d for c, d in zip(names, decimals, strict=True)]
    out[final] = round_keeping_equalities(rel.numeric[final], names, others).values
    return Rounded(out, sorted(derived), off_precision(out, names, decimals))


def _conditions_kept(
    rel: EncodedRelease,
    unrounded: np.ndarray,
    X: np.ndarray,
    names: Sequence[str],
    constraints: LinearConstraints | None,
    conditional: Sequence[tuple[Condition, LinearConstraints]],
    decimals: Sequence[int | None],
    tolerances: Mapping[str, float] | None = None,
    units: FileUnits | None = None,
) -> tuple[int, tuple[str, ...]] | None:
    """Redo, at the group level, the groups of records rounded one by one whose values meet
    a condition ``C`` of ``if C then D`` and break ``D``; ``rel.numeric`` is updated in place.

    A group mean on complete records keeps ``if employees == 0 then wages == 0``, but not
    every condition: rounding makes ``employees`` 1.4 into 1 under ``if employees <= 1 then
    wages <= 50``, and a mean of 1 employee can carry more wages than any of its records
    with one. The records released with the same values before rounding (a group) are moved
    onto the rules and ``D`` and rounded, reading the conditions again
    (:func:`group_values_on_rules`), so that they keep sharing one set of values. ``D`` is
    broken as the validation counts it, with its rule's tolerance (``tolerances``: rule
    name -> tolerance). Groups breaking no condition keep their values bit for bit.

    ``X`` (n, p) are the records' numeric keys, ``names`` their names; the groups move in
    the units of ``X``, or in ``units`` (the whole file's) when ``X`` is a part of it.

    Returns the number of groups whose released values changed and the columns solved from
    the equalities there, None when none broke a condition.
    """
    final = rel.final_rows if rel.final_rows is not None else np.zeros(len(X), dtype=bool)
    rows = np.flatnonzero(~final)
    if not conditional or not rows.size:
        return None
    bad = breaking_conditions(rel.numeric[rows], names, conditional, tolerances)
    if not bad.any():
        return None
    # a group: the records of one stratum released with the same values before rounding
    # (groups of two strata released alike are moved alike, and counted apart)
    together = unrounded[rows]
    if rel.strata is not None:
        together = np.column_stack([together, rel.strata[rows]])
    _, labels = np.unique(together, axis=0, return_inverse=True)
    labels = labels.ravel()
    inside = np.isin(labels, labels[bad])
    redo = rows[inside]
    _, groups = np.unique(labels[inside], return_inverse=True)  # numbered 0..g-1
    done = group_values_on_rules(
        X, unrounded[redo], groups, names, constraints, decimals, conditional, units
    )
    values = done.values
    if any(d is not None for d in decimals):
        # columns no rule reads were not rounded there: they keep their record rounding
        own = [j for j, c in enumerate(names) if c not in done.rounded]
        values[:, own] = rel.numeric[np.ix_(redo, own)]
    before = rel.numeric[redo]
    changed = ~((values == before) | (np.isnan(values) & np.isnan(before))).all(axis=1)
    rel.numeric[redo] = values
    return int(np.unique(groups[changed]).size), done.derived


def blanked_numbers(
    original: np.ndarray, released: np.ndarray, names: Sequence[str]
) -> dict[str, dict[str, int]]:
    """``{"numeric_values_blanked": {key: count}}``: the values the file has and the release
    publishes missing (a group mixing records that have a key with records that miss it, or
    a stratum short of k values of it), when there are any; empty otherwise. IL counts the
    values present in both files only, so it is read beside this count. Shapes: (n, p)
    each, NaN where missing."""
    blanked = (~np.isnan(original) & np.isnan(released)).sum(axis=0)
    if not blanked.any():
        return {}
    return {"numeric_values_blanked": {c: int(v) for c, v in zip(names, blanked, strict=True)}}


def _as_integers(series: pd.Series) -> pd.Series:
    """Rounded values as nullable integers: ``Int64`` where they fit, ``UInt64`` for an
    unsigned key beyond 2**63 (a DuckDB UBIGINT), floats where no integer type holds them
    (casting those to Int64 raised, ending the run with exit 3)."""
    rounded = series.round()
    lo, hi = rounded.min(), rounded.max()  # NaN skipped; both NaN when every value is missing
    if pd.isna(lo) or (lo >= -(2.0**63) and hi < 2.0**63):
        return rounded.astype("Int64")
    if lo >= 0 and hi < 2.0**64:
        return rounded.astype("UInt64")
    return rounded


def _assemble(
    enc: EncodedKeys, rel: EncodedRelease, keys: Sequence[Key], source: pd.DataFrame
) -> pd.DataFrame:
    """The released key columns in spec order, numeric as numbers (nullable integers for
    integer keys), categorical as their labels (None when missing or suppressed)."""
    cols: dict[str, pd.Series] = {}
    num = {k.name: j for j, k in enumerate(enc.numeric_keys)}
    cat = {k.name: j for j, k in enumerate(enc.categorical_keys)}
    for key in keys:
        if key.name in num:
            values = rel.numeric[:, num[key.name]]
            series = pd.Series(values)
            # Integers where every value is one: a value an equality left off precision
            # (``tax == 0.2 * net``) stays as solved, so the file is what the checks measured
            # (casting rounded it after the gates' points were taken and broke the rule).
            whole = np.isnan(values) | (values == np.round(values))
            if key.integer and (key.decimals is not None and key.decimals <= 0) and whole.all():
                series = _as_integers(series)
            cols[key.name] = series
        else:
            j = cat[key.name]
            series = decode(rel.codes[:, j], enc.levels[j])
            src = source[key.name] if key.name in source else None
            # categories coded as numbers go back to numbers (recoded labels stay text)
            boolean_source = src is not None and pd.api.types.is_bool_dtype(src)
            numeric_source = (
                src is not None and pd.api.types.is_numeric_dtype(src) and not boolean_source
            )
            if key.recoding is None and boolean_source:
                # booleans are numeric to pandas: coerced as numbers, every label was lost
                series = series.map({"True": True, "False": False}).astype("boolean")
            elif key.recoding is None and numeric_source:
                series = pd.to_numeric(series, errors="coerce")
                if pd.api.types.is_integer_dtype(src):
                    series = series.astype("Int64")
            cols[key.name] = series
    return pd.DataFrame(cols)


def check_relations(
    frame: pd.DataFrame,
    keys: Sequence[Key],
    constraints: LinearConstraints | None,
    published: pd.DataFrame | None,
) -> None:
    """The ``undeclared-relation`` refusal of :func:`mask_keys`, on the records as read: the
    preflight makes it before a run exists (exit 2, nothing written). ``frame`` holds the
    numeric keys at least, ``published`` the columns published as they are."""
    numeric = [k for k in keys if k.kind == "numeric"]
    recoded, resolved, _ = _recoded(frame[[k.name for k in numeric]], numeric)
    enc = encode_keys(recoded, resolved)
    if np.isnan(enc.numeric).any() or (published is not None and published.shape[1]):
        _refuse_undeclared_relations(enc, constraints, published)


def _refuse_undeclared_relations(
    enc: EncodedKeys, constraints: LinearConstraints | None, published: pd.DataFrame | None
) -> None:
    """Refuse (``undeclared-relation``) numeric keys with missing values that a linear
    relation ties (with each other, or with numeric columns ``published`` as they are),
    where no error rule declares it: means over different records would give a record's
    own combination away (:mod:`sdcflow.core.linear.relations`). The message names the
    columns and the relations (coefficients of all records, never a record's value)."""
    X, names = enc.numeric, list(enc.numeric_names)
    if published is not None and published.shape[1]:
        numbers = published.apply(pd.to_numeric, errors="coerce").astype(float)
        X, names = np.hstack([X, numbers.to_numpy()]), names + [str(c) for c in published]
    refuse_undeclared_relations(X, names, enc.numeric.shape[1], constraints)


def refuse_undeclared_relations(
    X: np.ndarray,
    names: Sequence[str],
    keys: int,
    constraints: LinearConstraints | None,
    patterns: np.ndarray | None = None,
) -> None:
    """:func:`_refuse_undeclared_relations` on the matrix itself: ``X`` (n, p) float64, NaN
    for missing, its first ``keys`` columns the masked numeric keys (after recoding) and the
    others the numeric values of the columns published as they are; ``names`` (p,).
    ``X`` may be a sample of the records, ``patterns`` (m, p) bool then the whole file's
    patterns of missing values (:func:`~sdcflow.core.linear.relations.undeclared_relations`)."""
    names = list(names)
    masked = np.arange(len(names)) < keys
    found = undeclared_relations(X, names, constraints, masked=masked, patterns=patterns)
    if not found:
        return
    bare = [r for r in found if r.bare]
    if bare:  # a column published as it is that masked keys determine publishes them
        columns = sorted(
            {c for r in bare for c in r.coefficients if not masked[names.index(c)]},
            key=names.index,
        )
        raise DataError(
            f"{', '.join(columns)}, published as {'it is' if len(columns) == 1 else 'they are'}"
            f" (keep, sensitive or weights), {'is' if len(columns) == 1 else 'are'} tied to "
            f"masked keys on the records that have them "
            f"({'; '.join(f'`{r.text()}`' for r in bare)}): each record's keys could be read "
            "back from it. Mask it as a key (quasi_identifiers), or leave it out of the release",
            code=Reason.UNDECLARED_RELATION,
            field=columns[0],
        )
    tied = sorted({c for r in found for c in r.coefficients}, key=names.index)
    one = len(found) == 1
    texts = "; ".join(
        f"`{r.text()}`" + ("" if r.share == 1.0 else f" on {100 * r.share:.0f} % of them")
        for r in found
    )
    broken = min(r.share for r in found) < 1.0
    raise DataError(
        f"numeric keys with missing values are tied to each other by "
        f"{'a relation' if one else f'{len(found)} relations'} no error rule declares, on "
        f"the records that have {', '.join(tied)} ({texts}): each group's means are taken "
        "over the records that have each key, and the relation applied to them would give "
        "a record's own combination of these columns away. Declare "
        f"{'it' if one else 'them'} in `edits:`, as error rules, so that masking keeps "
        f"{'it' if one else 'them'}"
        + (
            " (the records it does not hold on then break the rule: repaired or refused as "
            "`on_violation` says)"
            if broken
            else ""
        ),
        code=Reason.UNDECLARED_RELATION,
        field=list(found[0].coefficients)[-1],
    )


def mask_keys(
    frame: pd.DataFrame,
    keys: Sequence[Key],
    params: MethodParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
    blocks: Sequence[Sequence[str]] | None = None,
    suppression: SuppressionSettings | None = None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
    tolerances: Mapping[str, float] | None = None,
    published: pd.DataFrame | None = None,
    pram: PramStepParams | None = None,
    further: pd.DataFrame | None = None,
) -> MaskResult:
    """Mask the release's keys (see the module docstring).

    Parameters
    ----------
    frame : DataFrame with n rows
        The records (after any repair), holding every key column as read from the source
        (missing values as None / NaN).
    keys : sequence of Key
        The quasi-identifiers in spec order, kinds resolved.
    params : MethodParams
        The spec's method block.
    rng : numpy.random.Generator
    constraints : LinearConstraints or None
        Linear error rules over the numeric keys.
    blocks : list of list of str or None
        Blocks of numeric keys masked separately (numeric-only releases).
    suppression : SuppressionSettings or None
    conditional : sequence of (condition, LinearConstraints)
        Conditional rules ``if C then D`` that group values computed over the values
        present keep (:func:`~sdcflow.core.linear.group_values.group_values_on_rules`), and
        groups of complete records whose released values meet ``C`` and break ``D``.
    tolerances : mapping str -> float, optional
        Each rule's own tolerance, by name (the consequents' rows carry their rule's name).
    published : DataFrame with n rows, optional
        Columns published as they are (``keep:``, ``sensitive:`` not fuzzy-mapped, the
        weights), for the relations a key with missing values may have with them.
    pram : PramStepParams, optional
        The spec's ``pram:`` step: PRAM on the categorical keys it names before the method
        (:func:`~sdcflow.methods.perturbation.pram_step`), which then masks the keys with
        their perturbed values; a method without k masks the numeric keys only, every
        categorical key being PRAMed.
    further : DataFrame with n rows, optional
        The columns beside the keys the method reads
        (``Method.further_columns``: ``shuffle``'s predictors),
        as published.

    Returns
    -------
    MaskResult
        ``masked``: every key as released; ``points``: the numeric keys as published
        (``point_columns`` names them); ``details``: recoding, suppressions per key, strata,
        rounding.
    """
    settings = suppression or SuppressionSettings()
    method = get_method(params.name)
    recoded, resolved, recode_summary = _recoded(frame, keys)
    enc = encode_keys(recoded, resolved)
    if np.isnan(enc.numeric).any() or (published is not None and published.shape[1]):
        _refuse_undeclared_relations(enc, constraints, published)
    k = getattr(params, "k", None)
    details: dict[str, Any] = {}
    if recode_summary:
        details["recoding"] = recode_summary
    original_codes = enc.codes
    if pram is not None:  # drawn before the method, from the same generator
        enc, details[PRAM_STEP] = pram_step(enc, pram, rng)
    legacy: MaskResult | None = None
    if method.mask_keys is not None:
        rel = method.mask_keys(enc, params, rng, settings, constraints, conditional)
        promises = rel.promises or ({"k_anonymity": float(k)} if k is not None else {})
    elif not enc.categorical_keys:
        if not enc.numeric_keys:
            raise ParameterError("the release has no quasi-identifier to mask")
        if np.isnan(enc.numeric).any():
            if blocks:
                raise ParameterError(
                    "blocks cannot be masked separately when numeric keys have missing values; "
                    "remove `blocks:`"
                )
            cell_size = getattr(params, "cell_size", None)
            done = _partial_mdav(
                enc.numeric,
                check_k(k, enc.n),
                cell_size,
                enc.numeric_names,
                constraints,
                [key.decimals for key in enc.numeric_keys],
                conditional,
            )
            rel = EncodedRelease(
                done.values,
                enc.codes,
                details={
                    "strategy": _partial_strategy(cell_size),
                    "missing_numbers": _partial_strategy(cell_size),
                    **_moved(done.moved, constraints, conditional),
                    **loss_without_bound(enc.numeric, done.values, _NO_BOUND_WITH_GAPS),
                },
                final_rows=np.ones(enc.n, dtype=bool),
                final_columns=done.rounded,
                final_derived=done.derived,
            )
            promises = {"k_anonymity": float(k)}
        else:
            legacy = mask_quasi_identifiers(
                enc.numeric, enc.numeric_names, params, rng, constraints, blocks, further
            )
            rel = EncodedRelease(np.asarray(legacy.points, dtype=np.float64), enc.codes)
            promises = {}
    else:
        if not enc.numeric_keys:
            raise ParameterError(
                f"method {params.name} masks numeric keys and this release has none; use "
                "`method: {name: local_suppression, k: ...}` for categorical keys only"
            )
        if blocks:
            raise ParameterError(
                "blocks split numeric keys; with categorical keys remove `blocks:`"
            )
        if k is None and (pram is None or set(enc.categorical_names) - set(pram.columns)):
            raise ParameterError(f"method {params.name} has no k to stratify by")
        if k is None:  # every categorical key PRAMed: the method masks the numeric ones
            done = mask_quasi_identifiers(
                enc.numeric, enc.numeric_names, params, rng, constraints, None, further
            )
            rel = EncodedRelease(
                np.asarray(done.points, dtype=np.float64), enc.codes, details=done.details
            )
            promises = method.promises(params)
        else:
            rel = _strata(
                enc, params, rng, constraints, settings, method.apply, conditional, further
            )
            promises = {"k_anonymity": float(k)}
    details.update(rel.details)
    if enc.categorical_keys:
        # against the keys as read (after recoding): PRAM's changes count too
        changed = (rel.codes != original_codes).sum(axis=0)
        suppressed = ((rel.codes < 0) & (original_codes >= 0)).sum(axis=0)
        details["categorical_values_changed"] = {
            c: int(v) for c, v in zip(enc.categorical_names, changed, strict=True)
        }
        details["categorical_values_suppressed"] = {
            c: int(v) for c, v in zip(enc.categorical_names, suppressed, strict=True)
        }
    # Precision: integers for integer keys, declared decimals, equalities kept.
    decimals = [key.decimals for key in enc.numeric_keys]
    is_box = legacy is not None and list(legacy.masked.columns) != enc.numeric_names
    # the values before rounding name the groups a broken conditional rule redoes
    redoable = bool(conditional) and not is_box and not blocks
    unrounded = rel.numeric.copy() if redoable else rel.numeric
    if any(d is not None for d in decimals) and not is_box:
        done = _rounded(rel, enc.numeric_names, decimals, constraints)
        rel.numeric = done.values
        details["precision"] = {
            "decimals": {c: d for c, d in zip(enc.numeric_names, decimals, strict=True)},
            "derived_from_equalities": done.derived,
            "off_precision": done.off_precision,
        }
    # Not with `blocks:`: a group of one block is not a set of equal rows, and moving those
    # would split it; a broken conditional rule then blocks publication as any other.
    kept = (
        _conditions_kept(
            rel,
            unrounded,
            enc.numeric,
            enc.numeric_names,
            constraints,
            conditional,
            decimals,
            tolerances,
        )
        if redoable
        else None
    )
    if kept is not None:
        details["groups_moved_onto_conditional_rules"] = kept[0]
        if "precision" in details:
            precision = details["precision"]
            derived = sorted({*precision["derived_from_equalities"], *kept[1]})
            precision["derived_from_equalities"] = derived
            precision["off_precision"] = off_precision(rel.numeric, enc.numeric_names, decimals)
    if not is_box:
        details.update(blanked_numbers(enc.numeric, rel.numeric, enc.numeric_names))
    if legacy is not None:
        if is_box or ("precision" not in details and kept is None):
            out = legacy
        else:
            masked = _assemble(enc, rel, resolved, frame)[enc.numeric_names]
            out = replace(legacy, masked=masked, points=rel.numeric)
        out.point_columns = enc.numeric_names
        out.details = {**legacy.details, **details}
        if "precision" in details or kept is not None:  # the loss of what is published
            out.details = released_loss_details(
                out.details, enc.numeric, rel.numeric, enc.numeric_names
            )
        return out
    if "precision" in details or kept is not None:
        details = released_loss_details(details, enc.numeric, rel.numeric, enc.numeric_names)
    return MaskResult(
        masked=_assemble(enc, rel, resolved, frame),
        points=rel.numeric,
        point_columns=enc.numeric_names,
        promises=promises,
        details=details,
    )
