"""Edit + mask: the spec's method on the quasi-identifiers, and the released table.

The keys (numeric, nominal, ordinal; recoded, with missing values, with a precision) are
masked by :func:`sdcflow.methods.mixed.mask_keys`; the step adds the figures every
report needs about the release's keys (counts, never values): the kinds, suppressions per
key, k over all keys (identical released rows, and sdcMicro's count beside it for
comparison), k if the intruder also knew the ``keep`` columns, and the re-identification risk
before and after.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.core.measures.risk import risk_summary
from sdcflow.expectations.rules import Rule
from sdcflow.gates.uniqueness import summary_dis_figures
from sdcflow.methods import MaskResult, get_method
from sdcflow.methods.keys import Key, SuppressionSettings
from sdcflow.methods.mixed import mask_keys
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.tasks.edits import group_conditions
from sdcflow.tasks.progress import Progress
from sdcflow.tasks.retry import IO_RETRY
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse


def spec_keys(spec: ReleaseSpec, keys: Sequence[Key] | None) -> list[Key]:
    """The resolved keys, or every quasi-identifier as a numeric key (a caller without a
    plan)."""
    return list(keys) if keys else [Key(c, "numeric") for c in spec.quasi_identifiers]


def weights(spec: ReleaseSpec, frame: pd.DataFrame) -> np.ndarray | None:
    """The sampling weights of the records, or None without ``weight_column``."""
    if spec.weight_column is None:
        return None
    return frame[spec.weight_column].to_numpy(dtype=np.float64)


def households(spec: ReleaseSpec, frame: pd.DataFrame) -> np.ndarray | None:
    """The household of every record as integer codes, or None without
    ``household_column``; a record without a household id is a household of its own."""
    if spec.household_column is None:
        return None
    codes = pd.factorize(frame[spec.household_column], use_na_sentinel=True)[0].astype(np.int64)
    alone = codes < 0
    codes[alone] = codes.max(initial=-1) + 1 + np.arange(int(alone.sum()))
    return codes


def keep_columns(spec: ReleaseSpec, frame: pd.DataFrame) -> pd.DataFrame | None:
    """The ``keep`` columns as counted, or None: as published (unchanged), a nested value
    (a list, array or mapping, which cannot be hashed) by a canonical text of it, so that
    equal values count as equal."""
    if not spec.keep:
        return None
    keep = frame[spec.keep].reset_index(drop=True)
    return keep.apply(_hashable) if len(keep) else keep


def _hashable(column: pd.Series) -> pd.Series:
    """``column``, or its nested values (lists, arrays, mappings) as canonical JSON text (keys
    sorted, arrays as lists, bytes as hex); a missing value stays missing."""
    if column.dtype != object or not column.map(_nested).any():
        return column
    return column.map(lambda v: json.dumps(v, sort_keys=True, default=_plain) if _nested(v) else v)


def _nested(value: object) -> bool:
    return isinstance(value, list | tuple | dict | np.ndarray)


def _plain(value: object) -> object:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _risk_histogram(risk: np.ndarray) -> dict[str, list[float]]:
    edges = [0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0]
    counts = np.histogram(np.clip(risk, 0.0, 1.0), bins=edges)[0]
    return {"edges": edges, "records": [int(c) for c in counts]}


def disclosure_summary(
    spec: ReleaseSpec, frame: pd.DataFrame, keys: Sequence[Key], result: MaskResult
) -> dict[str, Any]:
    """Figures about the keys before and after masking (counts and risks, never values)."""
    names = [k.name for k in keys]
    w = weights(spec, frame)
    released = result.released_identifiers.reset_index(drop=True)
    after = risk_summary(released, w)
    before = risk_summary(frame[names].reset_index(drop=True), w)
    k = _k(spec)
    # sdcMicro's count (a blank matches any value), reported beside for comparison only
    loose = risk_summary(released, w, convention="missing_matches_any")
    out: dict[str, Any] = {
        "convention": "identical released rows (a missing or suppressed value is a value of "
        "its own)",
        "keys": {k.name: _released_kind(k) for k in keys},
        "k_anonymity": int(after.fk.min()),
        "records_below_k": {
            "before": int((before.fk < k).sum()) if k else None,
            "after": int((after.fk < k).sum()) if k else None,
        },
        "risk": {
            "weighted": w is not None,
            "before": before.distribution(),
            "after": after.distribution(),
            "histogram_after": _risk_histogram(after.risk),
        },
        "missing_matches_any": {
            "convention": "a missing or suppressed value matches any value (sdcMicro's "
            "freqCalc), for comparison: never gated unless the spec accepts it",
            "k_anonymity": int(loose.fk.min()),
            "records_below_k_after": int((loose.fk < k).sum()) if k else None,
            "expected_reidentifications_after": loose.expected_reidentifications,
        },
    }
    # special uniques (SUDA2): the largest DIS score and the records scored, never a score
    out["suda"] = summary_dis_figures(released, spec.measures)
    keep = keep_columns(spec, frame)
    if keep is not None:
        joint = pd.concat([released, keep], axis=1)
        out["keep"] = {
            "columns": list(spec.keep),
            "k_with_keep": int(k_anonymity(joint)),
            "distinct_share": {
                c: float(keep[c].nunique(dropna=False) / max(len(keep), 1)) for c in keep.columns
            },
        }
    return out


def _released_kind(key: Key) -> str:
    """The key's kind as released: a numeric key recoded into bins is ordinal."""
    binned = key.recoding is not None and key.recoding.kind == "bins"
    return "ordinal" if binned else key.kind


def _published_as_is(spec: ReleaseSpec, frame: pd.DataFrame) -> list[str]:
    """The columns published unchanged: ``keep:``, ``sensitive:`` not fuzzy-mapped, the
    weights (a relation between their numbers and the keys reads the keys; text columns,
    or numbers read as text beside one ``inf``, are taken as numbers where they are)."""
    names = [*spec.keep, *(c for c in spec.sensitive if c not in spec.fuzzy_map)]
    if spec.weight_column is not None:
        names.append(spec.weight_column)
    return [c for c in dict.fromkeys(names) if c in frame]


def _k(spec: ReleaseSpec) -> int | None:
    return getattr(spec.method, "k", None)


# The mask step's phases (its Prefect progress artifact, ``<release>-mask-progress``).
MASK_PHASES = ("mask the keys", "disclosure figures before and after")


@task(name="mask", **STEP)
def mask(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
    keys: Sequence[Key] | None = None,
    rules: Sequence[Rule] = (),
) -> MaskResult:
    resolved = spec_keys(spec, keys)
    names = [k.name for k in resolved]
    settings = SuppressionSettings(tuple(spec.suppression.importance), spec.suppression.algorithm)
    # the columns beside the keys the method reads (shuffle's predictors), as published
    further = list(get_method(spec.method.name).further_columns(spec.method))
    phases = Progress(spec.release, "mask", MASK_PHASES)
    with phases.step(MASK_PHASES[0]):
        result = mask_keys(
            frame[names].reset_index(drop=True),
            resolved,
            spec.method,
            rng,
            constraints,
            spec.blocks,
            settings,
            group_conditions(
                spec,
                rules,
                constraints,
                [k.name for k in resolved if _released_kind(k) == "numeric"],
            ),
            {rule.name: rule.tolerance for rule in rules},
            frame[_published_as_is(spec, frame)].reset_index(drop=True),
            pram=spec.pram,  # PRAM on the keys it names, before the method
            further=frame[further].reset_index(drop=True) if further else None,
        )
    with phases.step(MASK_PHASES[1]):
        disclosure = disclosure_summary(spec, frame.reset_index(drop=True), resolved, result)
    result.details = {**result.details, "disclosure": disclosure}
    logger = get_run_logger()
    logger.info(
        "masked %d records x %d keys (%d numeric) with %s",
        len(frame),
        len(names),
        len(result.point_columns or []),
        spec.method.name,
    )
    suppressed = result.details.get("categorical_values_suppressed")
    if suppressed:
        logger.info("categorical values suppressed per key: %s", suppressed)
    return result


def released_frame(spec: ReleaseSpec, frame: pd.DataFrame, result: MaskResult) -> pd.DataFrame:
    """Masked keys + kept, sensitive and weight columns, unchanged (+ the row id for the
    warehouse), in input order."""
    out = result.masked.reset_index(drop=True).copy()
    extra = [*spec.keep, *spec.sensitive]
    if spec.weight_column and spec.weight_column not in out.columns:
        extra.append(spec.weight_column)
    for col in extra:
        out[col] = frame[col].to_numpy()
    out[ROW_ID] = frame[ROW_ID].to_numpy()
    return out


@task(name="store-masked", **IO_RETRY, **STEP)
def store_masked(warehouse: Warehouse, run_id: str, released: pd.DataFrame) -> str:
    return warehouse.write_frame("masked", run_id, released)
