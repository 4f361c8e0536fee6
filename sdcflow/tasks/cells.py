"""The streamed mask: the release's keys masked in pieces, the flow's process never holding
more than one piece of records (``docs/concepts/scale.md``, "The mask in pieces").

:func:`mask_streamed` stands in for :func:`~sdcflow.tasks.mask.mask`,
:func:`~sdcflow.tasks.mask.released_frame` and :func:`~sdcflow.tasks.mask.store_masked` on
the releases :func:`streamed_path` accepts. The unit of work is what
:func:`~sdcflow.methods.mixed.mask_keys` already masks independently, a stratum:

1. the local suppression of the categorical keys is decided in this process from the
   combinations' counts (``GROUP BY`` in DuckDB;
   :func:`~sdcflow.core.suppression.local.strata_runs` holds runs of ranks, not records,
   and the greedy takes a combination's records in row-id order in memory too, so each
   record gets, by its rank in its combination, the suppression the whole file gives it),
   and the strata follow;
2. DuckDB writes each stratum's records as Parquet in the run's private folder (``COPY ...
   PARTITION_BY``), a stratum above the bound cut first by median cuts;
3. :func:`mask_piece_file` -- a module-level function of
   :func:`~sdcflow.core.parallel.map_parts`, so that ``runner: dask`` ships the file's path,
   not its records -- reads one piece, masks it with the core functions the in-memory path
   runs on that stratum (:func:`~sdcflow.methods.pieces.mask_piece`), writes
   ``masked/part-<i>.parquet`` (row id, masked numeric keys, blank flags of the categorical
   keys) and returns counts;
4. DuckDB creates ``masked.run_<id>`` from the parts joined with the unchanged columns of
   the table masked (``raw``, or ``edited`` after a repair); the pieces' files are removed.

A stratum of at most the bound is the in-memory release record for record. A cut stratum is
grouped inside each cut (the border search cannot cross a cut), so its groups differ; every
group still holds k..2k-1 records of one stratum, and the loss rises a little (measured:
``benchmarks/streamed_mask.py``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from prefect import get_run_logger, task

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.file_units import FileUnits
from sdcflow.core.linear.group_values import Condition, read_columns
from sdcflow.core.parallel import map_parts
from sdcflow.core.suppression.local import importance_rank, strata_runs
from sdcflow.core.validation import check_k
from sdcflow.expectations.rules import Conditional, Rule
from sdcflow.methods.keys import Key, SuppressionSettings, as_text
from sdcflow.methods.microaggregation import CrispParams, MdavParams, PsParams
from sdcflow.methods.pieces import mask_piece, partial_strategy
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.tasks.edits import group_conditions
from sdcflow.warehouse.cells import (
    BLANK,
    Piece,
    combinations,
    load_masked,
    sample_columns,
    write_pieces,
)
from sdcflow.warehouse.units import has_missing, rule_units
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

#: The least a piece may hold before a stratum is cut: large enough that the cuts are rare
#: (the border search does not cross them), small enough that a piece fits a worker.
MIN_BOUND = 1_000_000


def piece_bound(cell_size: int) -> int:
    """The most records of a piece: ``max(8 * cell_size, MIN_BOUND)``."""
    return max(8 * int(cell_size), MIN_BOUND)


@dataclass
class StreamedMask:
    """What :func:`mask_streamed` leaves for the flow.

    Attributes
    ----------
    table : str
        The ``masked.run_<id>`` table written.
    point_columns : list of str
        The numeric keys masked (as ``MaskResult.point_columns``).
    details : dict
        The method's details as ``MaskResult.details`` gives them, figures only; what needs
        the whole file in one process (the loss's lower bound) is marked not computed.
    dtypes : dict of str to str
        The released columns' pandas dtypes, for publication.
    """

    table: str
    point_columns: list[str]
    details: dict[str, Any]
    dtypes: dict[str, str]


def streamed_path(spec: ReleaseSpec, keys: Sequence[Key], rules: Sequence[Rule] = ()) -> str | None:
    """None when this release can take the streamed mask, else why not (one line)."""
    method = spec.method
    if not isinstance(method, MdavParams | PsParams):
        return f"method {method.name} is masked in memory (the streamed mask takes mdav and ps)"
    if method.cell_size is None:
        return "the streamed mask needs cell_size (exact MDAV / PS groups the whole file)"
    if method.refine is not None:
        return "refine searches the whole file's partition: it is masked in memory"
    if method.dominance is not None:
        return "dominance merges groups over the whole file: it is masked in memory"
    if spec.blocks:
        return "blocks are masked in memory"
    if spec.fuzzy_map:
        return "fuzzy_map maps the sensitive columns in memory"
    if spec.pram is not None:
        return "the pram step perturbs the categorical keys in memory"
    if spec.on_violation == "repair" and any(isinstance(r.node, Conditional) for r in rules):
        return "conditional edit rules are repaired in memory (on_violation: repair)"
    if any(k.recoding is not None for k in keys):
        return "recoded keys are masked in memory"
    if not any(k.kind == "numeric" for k in keys):
        return "the streamed mask masks numeric keys (local suppression alone is in memory)"
    return None


def file_rule_units(
    warehouse: Warehouse,
    source: str,
    run_id: str,
    numeric: Sequence[Key],
    constraints: LinearConstraints | None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
) -> FileUnits | None:
    """The whole file's units of the columns the rules read, which a piece moves its groups
    onto the rules in (the in-memory path's, bit for bit); None when no group can need
    them: no rule, or no missing number among the keys and no conditional rule (whose
    consequent also moves groups of complete records, ``mask_keys``)."""
    if constraints is None or (constraints.is_empty and not conditional):
        return None
    names = [k.name for k in numeric]
    read = read_columns(constraints, conditional)  # group_values_on_rules measures these
    columns = [c for c, r in zip(constraints.columns, read, strict=True) if r and c in names]
    if not columns:
        return None
    if not conditional and not has_missing(warehouse, source, run_id, names):
        return None
    return rule_units(warehouse, source, run_id, columns)  # the columns the rules read


def _codes(values: pd.Series, key: Key, levels: Sequence[str]) -> np.ndarray:
    """Codes of ``values`` in the file's ``levels`` (:func:`~sdcflow.methods.keys.encode`'s:
    the sorted labels, or an ordinal key's order), -1 where missing. Shapes: (m,) -> (m,)."""
    index = {v: i for i, v in enumerate(levels)}
    return np.array([index[v] if v is not None else -1 for v in as_text(values)], np.int64)


def mask_piece_file(
    path: str,
    out: str,
    numeric: Sequence[Key],
    categorical: Sequence[Key],
    levels: Sequence[Sequence[str]],
    params: CrispParams,
    constraints: LinearConstraints | None,
    rank: np.ndarray,
    units: FileUnits | None = None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
    tolerances: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Mask the piece in the Parquet folder ``path`` and write ``out`` (row id, masked
    numeric keys, the categorical keys' blank flags); return the piece's figures (counts).
    ``units``: the whole file's units of the rules' columns (:func:`file_rule_units`);
    ``conditional``, ``tolerances``: the rules ``if C then D`` the groups keep and the
    rules' own tolerances (:func:`~sdcflow.methods.pieces.mask_piece`).

    Runs where :func:`~sdcflow.core.parallel.map_parts` runs it: in the calling process, or
    on a Dask worker, which receives these arguments only (paths and the spec's keys)."""
    frame = pq.read_table(path).to_pandas()
    frame = frame.sort_values(ROW_ID, kind="stable").reset_index(drop=True)  # mask_keys' order
    X = frame[[k.name for k in numeric]].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
    m, c = len(frame), len(categorical)
    # the in-memory mask takes its keys in row order (C), a stratum as ``numeric[rows]``;
    # the same layout gives the same sums to the last bit (the scale's means and sds, hence
    # the groups' ties, follow the layout's summation order), where pandas gives columns (F)
    X = np.ascontiguousarray(X)
    codes = np.zeros((m, c), np.int64)
    blank = np.zeros((m, c), dtype=bool)
    for j, key in enumerate(categorical):
        codes[:, j] = _codes(frame[key.name], key, levels[j])
        blank[:, j] = frame[BLANK.format(j)].to_numpy(dtype=bool)
    released_codes = np.where(blank, -1, codes)
    done = mask_piece(
        X, codes, released_codes, numeric, params, constraints, rank, stratified=bool(c),
        file_units=units, conditional=conditional, tolerances=tolerances,
    )  # fmt: skip
    columns = {ROW_ID: pa.array(frame[ROW_ID].to_numpy(np.int64))}
    for j, key in enumerate(numeric):  # NaN -> null, as the in-memory frame's NaN in DuckDB
        columns[key.name] = pa.array(done.numeric[:, j], pa.float64(), from_pandas=True)
    for j in range(c):
        columns[BLANK.format(j)] = pa.array(done.codes[:, j] < 0)
    pq.write_table(pa.table(columns), out)
    figures = dict(done.figures)
    figures["changed"] = [int(v) for v in (done.codes != codes).sum(axis=0)]
    figures["suppressed"] = [int(v) for v in ((done.codes < 0) & (codes >= 0)).sum(axis=0)]
    return figures


#: The details' count of groups moved onto a conditional rule's consequent (``mask_keys``').
_KEPT = "groups_moved_onto_conditional_rules"


@dataclass
class _Strata:
    combos: pa.Table
    runs: pa.Table
    levels: list[list[str]]
    rank: np.ndarray
    details: dict[str, Any]


def _strata(
    spec: ReleaseSpec,
    wh: Warehouse,
    run_id: str,
    categorical: Sequence[Key],
    k: int,
    source: str = "raw",
) -> _Strata:
    """The strata of :func:`~sdcflow.methods.mixed.mask_keys`, from the combinations' counts:
    :func:`~sdcflow.core.suppression.local.strata_runs` on the combinations and their counts:
    runs of ranks (combination, first and last rank, stratum, blank flags) for DuckDB to
    give each record its stratum. Holds a row per combination and run, none per record."""
    names = [key.name for key in categorical]
    combos = combinations(wh, source, run_id, names)
    levels: list[list[str]] = []
    codes = np.zeros((combos.num_rows, len(names)), np.int64)
    for j, key in enumerate(categorical):
        text = as_text(combos.column(key.name).to_pandas())
        levels.append(
            list(key.order) if key.kind == "ordinal" and key.order else sorted(set(text) - {None})
        )
        codes[:, j] = _codes(combos.column(key.name).to_pandas(), key, levels[j])
    order = np.lexsort(codes.T[::-1])  # by code, first key first: the records' rows sorted
    codes = codes[order].astype(np.int32)
    counts = combos.column("sdc_count").to_numpy()[order].astype(np.int64)
    combos = combos.take(pa.array(order)).drop_columns(["sdc_count"])
    combos = combos.append_column("sdc_combo", pa.array(np.arange(len(order), dtype=np.int64)))
    k = check_k(k, int(counts.sum()))
    settings = SuppressionSettings(tuple(spec.suppression.importance), spec.suppression.algorithm)
    done = strata_runs(codes, counts, k, importance=settings.indices(names))
    rank = importance_rank(codes, settings.indices(names))
    lo = done.runs.ranks()
    runs = {
        "sdc_combo": done.runs.source,
        "lo": lo,
        "hi": lo + done.runs.count - 1,
        "stratum": done.labels,
    }
    for j in range(len(names)):
        runs[BLANK.format(j)] = done.runs.suppressed[:, j]
    details = {
        "strata": done.details["strata"],
        "records_in_classes_below_k": done.details["records_in_classes_below_k"],
        "suppression_lower_bound": done.details["suppression_lower_bound"],
    }
    return _Strata(combos, pa.table(runs), levels, rank, details)


def mask_streamed(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    keys: Sequence[Key],
    folder: Path,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
    source: str = "raw",
    *,
    bound: int | None = None,
    rules: Sequence[Rule] = (),
) -> StreamedMask:
    """Mask the ``source`` table of ``run_id`` in pieces and write ``masked.run_<id>``.

    Parameters
    ----------
    spec : ReleaseSpec
        A release :func:`streamed_path` accepts.
    warehouse : Warehouse
    run_id : str
    keys : sequence of Key
        The quasi-identifiers in spec order, kinds resolved.
    folder : Path
        The run's private folder (created 0700 by the caller); the pieces' files are
        written under it and removed once loaded.
    rng : numpy.random.Generator
        Unused: ``mdav`` and ``ps`` are deterministic (the contract of the mask step).
    constraints : LinearConstraints or None
        The linear error rules over the numeric keys.
    source : {"raw", "edited"}
        The records masked: as ingested, or as the repair left them
        (:func:`~sdcflow.tasks.edits.repair_streamed`).
    bound : int, optional
        The most records of a piece (default :func:`piece_bound`).
    rules : sequence of Rule
        The release's edit rules: the conditional ones whose consequent is linear over the
        numeric keys bind the groups, as in memory
        (:func:`~sdcflow.tasks.edits.group_conditions`).

    Returns
    -------
    StreamedMask
    """
    reason = streamed_path(spec, keys, rules)
    if reason is not None:
        raise ValueError(f"this release cannot take the streamed mask: {reason}")
    params = spec.method
    assert isinstance(params, MdavParams | PsParams) and params.cell_size is not None
    numeric = [k for k in keys if k.kind == "numeric"]
    categorical = [k for k in keys if k.kind != "numeric"]
    bound = bound or piece_bound(params.cell_size)
    strata = (
        _strata(spec, warehouse, run_id, categorical, params.k, source) if categorical else None
    )
    pieces = write_pieces(
        warehouse,
        source,
        run_id,
        [k.name for k in numeric],
        [k.name for k in categorical],
        strata.combos if strata else None,
        strata.runs if strata else None,
        bound,
        folder,
    )
    parts = folder / "masked"
    parts.mkdir(exist_ok=True)
    levels = strata.levels if strata else []
    rank = strata.rank if strata else np.zeros(0, np.int64)
    conditional = group_conditions(spec, rules, constraints, [k.name for k in numeric])
    units = file_rule_units(warehouse, source, run_id, numeric, constraints, conditional)
    tolerances = {rule.name: rule.tolerance for rule in rules}
    calls = [
        (
            str(p.path),
            str(parts / f"part-{p.number}.parquet"),
            numeric,
            categorical,
            levels,
            params,
            constraints,
            rank,
            units,
            conditional,
            tolerances,
        )
        for p in pieces
    ]
    try:
        figures = map_parts(mask_piece_file, calls, "stratum")
    except BaseException:
        shutil.rmtree(parts, ignore_errors=True)  # the run's own files: none left behind
        raise
    finally:
        shutil.rmtree(folder / "pieces", ignore_errors=True)
    how = []
    at = {k.name: j for j, k in enumerate(numeric)}
    for key in keys:
        if key.name in at:
            whole = all(f["whole"][at[key.name]] for f in figures)
            integer = key.integer and key.decimals is not None and key.decimals <= 0
            how.append((key.name, "bigint" if integer and whole else "double"))
        else:
            how.append((key.name, f"blank:{categorical.index(key)}"))
    copied = [*spec.keep, *spec.sensitive]
    if spec.weight_column and spec.weight_column not in copied:
        copied.append(spec.weight_column)
    copied = [c for c in dict.fromkeys(copied) if c not in at]
    try:
        table = load_masked(warehouse, source, run_id, parts, how, copied)
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    details = _details(
        params, constraints, numeric, categorical, pieces, figures, strata, bound, bool(conditional)
    )
    details.update(_loss(warehouse, run_id, numeric, source))
    dtypes = {n: "Int64" if h == "bigint" else "float64" for n, h in how if n in at}
    dtypes.update(_released_dtypes(warehouse, run_id, categorical, copied, source))
    return StreamedMask(table, [k.name for k in numeric], details, dtypes)


def _released_dtypes(
    wh: Warehouse,
    run_id: str,
    categorical: Sequence[Key],
    copied: Sequence[str],
    source: str = "raw",
) -> dict[str, str]:
    """The pandas dtypes the in-memory released frame gives the categorical keys (labels as
    text, numbers where the source's were: ``mask_keys``' ``_assemble``) and the columns
    copied as they are (``released_frame`` copies them as numpy arrays)."""
    names = [k.name for k in categorical]
    sample = sample_columns(wh, source, run_id, [*names, *copied])
    out: dict[str, str] = {}
    for name in names:
        src = sample[name]
        if pd.api.types.is_bool_dtype(src):
            out[name] = "boolean"
        elif pd.api.types.is_integer_dtype(src):
            out[name] = "Int64"
        elif pd.api.types.is_numeric_dtype(src):  # to_numeric of the labels: floats
            out[name] = "float64"
        else:
            out[name] = "object"
    for name in copied:
        out[name] = str(pd.Series(sample[name].to_numpy()).dtype)
    return out


@task(name="mask-streamed", **STEP)
def mask_streamed_step(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    keys: Sequence[Key],
    folder: Path,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
    source: str = "raw",
    rules: Sequence[Rule] = (),
) -> StreamedMask:
    """:func:`mask_streamed` as the flow's mask step (a Prefect task run, ``mask-streamed``);
    under ``runner: dask`` call it inside :func:`~sdcflow.tasks.scale.scaled_out`, so that
    the pieces are task runs on the cluster."""
    done = mask_streamed(
        spec, warehouse, run_id, keys, folder, rng, constraints, source, rules=rules
    )
    pieces = done.details["streamed"]
    get_run_logger().info(
        "masked %d pieces (largest %d records) with %s into %s",
        pieces["pieces"],
        pieces["largest_piece"],
        spec.method.name,
        done.table,
    )
    return done


def _details(
    params: CrispParams,
    constraints: LinearConstraints | None,
    numeric: Sequence[Key],
    categorical: Sequence[Key],
    pieces: Sequence[Piece],
    figures: Sequence[dict[str, Any]],
    strata: _Strata | None,
    bound: int,
    conditional: bool = False,
) -> dict[str, Any]:
    """The details ``mask_keys`` gives, from the pieces' counts; ``conditional``: whether
    conditional rules bind the groups (their moves are counted with the rules')."""
    constraints_moved = sum(f["groups_moved_onto_edit_rules"] for f in figures)
    gaps = {p.stratum for p, f in zip(pieces, figures, strict=True) if f["missing_numbers"]}
    details: dict[str, Any] = {}
    if strata is not None:
        details.update(
            {
                "strategy": "strata: classes of >= k identical released categorical rows, "
                f"{params.name} masks the numeric keys inside each stratum",
                **strata.details,
                "strata_with_missing_numbers": len(gaps),
                "suppressed_then_restored": sum(f["suppressed_then_restored"] for f in figures),
            }
        )
        if gaps:
            details["missing_numbers"] = partial_strategy(params.cell_size)
        names = [k.name for k in categorical]
        for what in ("changed", "suppressed"):
            total = np.sum([f[what] for f in figures], axis=0)
            details[f"categorical_values_{what}"] = {
                c: int(v) for c, v in zip(names, total, strict=True)
            }
    elif gaps:
        details["strategy"] = partial_strategy(params.cell_size)
        details["missing_numbers"] = partial_strategy(params.cell_size)
    if gaps and (conditional or (constraints is not None and not constraints.is_empty)):
        details["groups_moved_onto_edit_rules"] = constraints_moved
    blanked = np.sum([f["numbers_blanked"] for f in figures], axis=0, dtype=np.int64)
    if blanked.any():  # as mask_keys' blanked_numbers
        details["numeric_values_blanked"] = {
            k.name: int(v) for k, v in zip(numeric, blanked, strict=True)
        }
    kept = [f["groups_moved_onto_conditional_rules"] for f in figures if _KEPT in f]
    if kept:
        details[_KEPT] = sum(kept)
    decimals = [k.decimals for k in numeric]
    if any(d is not None for d in decimals):
        details["precision"] = {
            "decimals": {k.name: k.decimals for k in numeric},
            "derived_from_equalities": "not computed: the streamed mask",
        }
    per_stratum = np.bincount([p.stratum for p in pieces])
    details["streamed"] = {
        "pieces": len(pieces),
        "largest_piece": max((p.records for p in pieces), default=0),
        "bound": bound,
        "strata_cut": int((per_stratum > 1).sum()),
        "short_sets_joined_in_their_stratum": sum(f.get("short_sets", 0) for f in figures),
        "values_blanked_in_strata_short_of_k": sum(f.get("values_blanked", 0) for f in figures),
    }
    details["lower_bound"] = {
        "status": "not computed: the bound's neighbour search needs the whole file in one "
        "process, which the streamed mask never holds"
    }
    return details


def _loss(wh: Warehouse, run_id: str, numeric: Sequence[Key], source: str) -> dict[str, Any]:
    """The information loss of the release as published against the records masked (the
    method's figure, as in memory), by sums in DuckDB."""
    names = [k.name for k in numeric]
    return {"information_loss": wh.information_loss(source, "masked", run_id, names)}
