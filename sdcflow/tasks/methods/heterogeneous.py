"""Method ``heterogeneous``: numeric, ordinal and nominal keys microaggregated together.

Spec (inside ``method:``)::

    method:
      name: heterogeneous
      k: 5
      categorical: mode        # mode | suppress

Records are grouped by MDAV-generic under the heterogeneous distance of Domingo-Ferrer and
Torra (:mod:`sdcflow.tasks.microaggregation.heterogeneous`), and each group is released as the
mean of its numeric keys, the median of its ordinal keys and the mode of its nominal keys.
``categorical: suppress`` publishes a categorical value only where it equals the group's
median / mode and suppresses it elsewhere, instead of replacing it: the file then holds no
category a respondent did not give (the group still matches on every key, a suppressed value
matching any value). Missing values stay missing. The release is deterministic, so the
method's transparency intruder reruns it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.methods.base import MaskResult, Method, MethodParams
from sdcflow.tasks.methods.keys import EncodedKeys, EncodedRelease, SuppressionSettings
from sdcflow.tasks.microaggregation.heterogeneous import (
    MixedKeys,
    group_representatives,
    heterogeneous_groups,
)


class HeterogeneousParams(MethodParams):
    name: Literal["heterogeneous"] = "heterogeneous"
    k: int = Field(ge=2, description="minimum group size")
    categorical: Literal["mode", "suppress"] = Field(
        "mode",
        description="categorical values unlike the group's median/mode: replaced by it, or "
        "suppressed",
    )


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
) -> EncodedRelease:
    keys, ord_idx, nom_idx = mixed_keys(enc)
    labels = heterogeneous_groups(keys, params.k)
    rep = group_representatives(keys, labels)
    codes = np.empty_like(enc.codes)
    codes[:, ord_idx] = rep.ordinal
    codes[:, nom_idx] = rep.nominal
    if params.categorical == "suppress":
        codes = np.where(codes == enc.codes, enc.codes, -1)
    sizes = np.bincount(labels)
    return EncodedRelease(
        numeric=rep.numeric,
        codes=codes,
        promises={"k_anonymity": float(params.k)},
        details={
            "strategy": "heterogeneous microaggregation (numeric mean, ordinal median, "
            f"nominal mode; categorical: {params.categorical})",
            "groups": int(sizes.size),
            "min_group_size": int(sizes.min()),
            "max_group_size": int(sizes.max()),
        },
    )


def _mask(
    X: np.ndarray,
    columns: list[str],
    params: HeterogeneousParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    keys = MixedKeys.build(numeric=X)
    labels = heterogeneous_groups(keys, params.k)
    points = group_representatives(keys, labels).numeric
    return MaskResult(masked=pd.DataFrame(points, columns=columns), points=points, groups=labels)


HETEROGENEOUS = Method(
    HeterogeneousParams,
    _mask,
    summary="heterogeneous microaggregation: numeric means, ordinal medians, nominal modes",
    mask_keys=_mask_keys,
)
