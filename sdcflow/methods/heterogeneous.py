"""Method ``heterogeneous``: numeric, ordinal and nominal keys microaggregated together.

Spec (inside ``method:``)::

    method:
      name: heterogeneous
      k: 5
      categorical: mode        # mode | suppress
      cell_size: 5000          # optional: large files, cells on the workers (runner: dask)

Records are grouped by MDAV-generic under the heterogeneous distance of Domingo-Ferrer and
Torra (:mod:`sdcflow.core.microaggregation.heterogeneous`), and each group is released as the
mean of its numeric keys, the median of its ordinal keys and the mode of its nominal keys.
``categorical: suppress`` publishes a categorical value only where it equals the group's
median / mode and suppresses it elsewhere, instead of replacing it: the file then holds no
category a respondent did not give. k counts identical released rows, so a group releases
one row: a key on which its records would be released unlike (some missing it, or some
differing from the mode under ``suppress``) is released missing for the whole group
(``numeric_values_suppressed`` in the details counts the numbers blanked so). The release is
deterministic, so the method's transparency intruder reruns it.

One pass costs O(n^2): with ``cell_size`` the records are grouped within spatial cells of at
most that many records (:func:`~sdcflow.core.microaggregation.heterogeneous.heterogeneous_cells`:
median cuts of the numeric and ordinal keys), cell by cell on the workers under
``runner: dask``; groups do not cross cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.group_values import Condition, group_values_on_rules
from sdcflow.core.microaggregation.heterogeneous import (
    MixedKeys,
    Representatives,
    group_representatives,
    heterogeneous_cells_release,
    heterogeneous_groups,
    one_row_per_group,
)
from sdcflow.methods.base import MaskResult, Method, MethodParams
from sdcflow.methods.keys import EncodedKeys, EncodedRelease, SuppressionSettings


class HeterogeneousParams(MethodParams):
    name: Literal["heterogeneous"] = "heterogeneous"
    k: int = Field(ge=2, description="minimum group size")
    categorical: Literal["mode", "suppress"] = Field(
        "mode",
        description="categorical values unlike the group's median/mode: replaced by it, or "
        "suppressed",
    )
    cell_size: int | None = Field(
        None,
        ge=2,
        description="records per spatial cell (at least 2k): groups formed within cells, "
        "cost linear in n (large files; runs under runner: dask); none: one pass",
        json_schema_extra={"added": True},  # unset, not in the spec hash (MethodParams)
    )

    def release(self, keys: MixedKeys, names: Sequence[str]) -> tuple[np.ndarray, Representatives]:
        """The groups of the records (one pass, or within cells with ``cell_size``) and
        their representatives; ``names`` of the numeric keys, for the messages."""
        if self.cell_size is None:
            labels = heterogeneous_groups(keys, self.k)
            return labels, group_representatives(keys, labels, self.k, names=names)
        return heterogeneous_cells_release(keys, self.k, self.cell_size, names)


def mixed_keys(enc: EncodedKeys) -> tuple[MixedKeys, np.ndarray, np.ndarray]:
    """The core's view of encoded keys, and the positions of the ordinal and nominal keys
    among the categorical ones."""
    ordinal = np.array([k.kind == "ordinal" for k in enc.categorical_keys], dtype=bool)
    levels = np.array([len(lev) for lev, o in zip(enc.levels, ordinal, strict=True) if o])
    keys = MixedKeys.build(
        numeric=enc.numeric,
        ordinal=enc.codes[:, ordinal],
        levels=levels.astype(np.int64),
        nominal=enc.codes[:, ~ordinal],
    )
    return keys, np.flatnonzero(ordinal), np.flatnonzero(~ordinal)


def _mask_keys(
    enc: EncodedKeys,
    params: HeterogeneousParams,
    rng: np.random.Generator,
    settings: SuppressionSettings,
    constraints: LinearConstraints | None = None,
    conditional: Sequence[tuple[Condition, LinearConstraints]] = (),
) -> EncodedRelease:
    keys, ord_idx, nom_idx = mixed_keys(enc)
    labels, rep = params.release(keys, enc.numeric_names)
    # means over the values present break the linear rules when some are missing; a set
    # of joined groups is moved as one
    done = group_values_on_rules(
        enc.numeric,
        rep.numeric,
        rep.sets(labels),
        enc.numeric_names,
        constraints,
        [key.decimals for key in enc.numeric_keys],
        conditional,
    )
    codes = np.empty_like(enc.codes)
    codes[:, ord_idx] = rep.ordinal
    codes[:, nom_idx] = rep.nominal
    if params.categorical == "suppress":
        codes = np.where(codes == enc.codes, enc.codes, -1)
    # k counts identical rows: a key released unlike within a group is blanked group-wide
    values, codes, numeric_blanked, _ = one_row_per_group(labels, done.values, codes)
    sizes = np.bincount(labels)
    cells = f", within spatial cells of at most {params.cell_size} records" * bool(params.cell_size)
    moved_detail = (
        {}
        if constraints is None or constraints.is_empty
        else {"groups_moved_onto_edit_rules": done.moved}
    )
    blanked = {
        name: int(v) for name, v in zip(enc.numeric_names, numeric_blanked, strict=True) if v
    }
    return EncodedRelease(
        numeric=values,
        codes=codes,
        promises={"k_anonymity": float(params.k)},
        details={
            "strategy": "heterogeneous microaggregation (numeric mean, ordinal median, "
            f"nominal mode; categorical: {params.categorical}){cells}",
            "groups": int(sizes.size),
            "min_group_size": int(sizes.min()),
            "max_group_size": int(sizes.max()),
            **moved_detail,
            **({"numeric_values_suppressed": blanked} if blanked else {}),
        },
        final_rows=np.ones(enc.n, dtype=bool),
        final_columns=done.rounded,
        final_derived=done.derived,
    )


def _mask(
    X: np.ndarray,
    columns: list[str],
    params: HeterogeneousParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    keys = MixedKeys.build(numeric=X)
    labels, rep = params.release(keys, columns)
    points, *_ = group_values_on_rules(X, rep.numeric, rep.sets(labels), columns, constraints)
    return MaskResult(masked=pd.DataFrame(points, columns=columns), points=points, groups=labels)


def _scale_out(params: HeterogeneousParams) -> Any:
    """Under ``runner: dask`` the cells are the pieces; without ``cell_size`` one pass of
    O(n^2) work, refused there."""
    return "cells" if params.cell_size is not None else None


HETEROGENEOUS = Method(
    HeterogeneousParams,
    _mask,
    summary="heterogeneous microaggregation: numeric means, ordinal medians, nominal modes",
    groups="means",
    mask_keys=_mask_keys,
    scale_out=_scale_out,
    missing_numbers=True,  # grouped on the values each record has
    cells=True,
)
