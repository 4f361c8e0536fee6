"""Method ``local_suppression``: k-anonymity of categorical keys by suppressing values.

Spec::

    method: {name: local_suppression, k: 5}
    suppression:                      # optional
      importance: [sex, age, race]    # most important first: suppressed last
      algorithm: greedy               # greedy | exact (small files)

For releases whose keys are all categorical (numeric keys can be binned by ``recode:``
first); with numeric keys use a numeric method, which stratifies by the categorical ones.
The algorithms are those of :mod:`sdcflow.core.suppression.local`; a suppressed value is
published as missing, and every class of identical released rows (a blank equal only to a
blank) holds at least k records. The details give the records in classes below k and a lower
bound on the suppressions beside the total.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.suppression.local import EXACT_MAX_VARIABLES, local_suppression
from sdcflow.errors import ParameterError
from sdcflow.methods.base import MaskResult, Method, MethodParams, ReleaseView, refuse
from sdcflow.methods.keys import EncodedKeys, EncodedRelease, Key, SuppressionSettings, masked_as


class LocalSuppressionParams(MethodParams):
    name: Literal["local_suppression"] = "local_suppression"
    k: int = Field(ge=2, description="every class of identical released rows has >= k records")


def _mask_keys(
    enc: EncodedKeys,
    params: LocalSuppressionParams,
    rng: np.random.Generator,
    settings: SuppressionSettings,
    constraints: LinearConstraints | None = None,  # over numeric keys, which it refuses
    conditional: Sequence[Any] = (),
) -> EncodedRelease:
    if enc.numeric_keys:
        raise ParameterError(
            "local_suppression masks categorical keys only; bin the numeric keys with "
            "`recode:` or choose a numeric method (mdav, ps, fuzzy, heterogeneous)"
        )
    names = enc.categorical_names
    done = local_suppression(
        enc.codes, params.k, importance=settings.indices(names), algorithm=settings.algorithm
    )
    return EncodedRelease(
        numeric=enc.numeric,
        codes=done.codes.astype(np.int64),
        promises={"k_anonymity": float(params.k)},
        details={
            "strategy": f"local suppression ({done.algorithm})",
            "suppressed_total": done.total,
            "optimal": done.optimal,
            **done.details,
        },
    )


def _mask(
    X: np.ndarray,
    columns: list[str],
    params: LocalSuppressionParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    raise ParameterError(
        "local_suppression masks categorical keys only; bin the numeric keys with `recode:` "
        "or choose a numeric method (mdav, ps, fuzzy, heterogeneous)"
    )


def _check_spec(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """Categorical keys only; the exact algorithm only where its program stays small."""
    numeric, categorical = masked_as(keys)
    if numeric:
        refuse(
            f"method local_suppression masks categorical keys, and {', '.join(numeric)} are "
            "numeric: bin them with `recode:` or choose mdav, ps, fuzzy or heterogeneous"
        )
    if spec.suppression.algorithm == "exact":
        bound = rows * 2 ** len(categorical)
        if bound > EXACT_MAX_VARIABLES:
            refuse(
                f"suppression.algorithm exact would need up to {bound} variables for "
                f"{rows} records and {len(categorical)} keys (at most {EXACT_MAX_VARIABLES}); "
                "use algorithm greedy"
            )


LOCAL_SUPPRESSION = Method(
    LocalSuppressionParams,
    _mask,
    summary="local suppression of the fewest categorical values (greedy, or exact for small files)",
    mask_keys=_mask_keys,
    key_kinds=frozenset({"nominal", "ordinal"}),
    missing_numbers=True,  # no numeric key reaches it (check_spec)
    check_spec=_check_spec,
)
