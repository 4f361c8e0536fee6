"""Apply a registered masking method to the quasi-identifiers, whole or by blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.validation import check_matrix
from sdcflow.methods import get_method
from sdcflow.methods.base import BlockResult, MaskResult, MethodParams


def mask_quasi_identifiers(
    X: np.ndarray,
    columns: Sequence[str],
    params: MethodParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
    blocks: Sequence[Sequence[str]] | None = None,
    further: pd.DataFrame | None = None,
) -> MaskResult:
    """Mask ``X`` (n, d) with the method ``params.name``; by blocks of columns if given.
    ``further`` (n rows) holds the columns beside the keys the method reads, if it declares
    any (``Method.further_columns``).

    With blocks, each block is masked independently (its own groups) with the constraints
    restricted to its columns; the caller must make sure no rule spans two blocks. The merged
    result has no single crisp grouping (``groups`` is None) and lists each block in
    ``blocks``.
    """
    columns = list(columns)
    X = check_matrix(X, columns=columns)
    method = get_method(params.name)
    if not blocks or len(blocks) == 1:
        return method.apply(X, columns, params, rng, constraints, further)
    parts: list[BlockResult] = []
    for block in blocks:
        idx = [columns.index(c) for c in block]
        sub = constraints.restrict(list(block)) if constraints is not None else None
        parts.append(
            BlockResult(
                list(block), method.apply(X[:, idx], list(block), params, rng, sub, further)
            )
        )
    points = np.empty_like(X)
    for part in parts:
        points[:, [columns.index(c) for c in part.columns]] = part.result.points
    details: dict[str, Any] = {
        "blocks": [
            {"columns": p.columns, "released_columns": p.released_columns, **p.result.details}
            for p in parts
        ]
    }
    details.update(_combined_bound(X, points, [p.result.details for p in parts]))
    return MaskResult(
        masked=pd.concat([p.result.masked for p in parts], axis=1),
        points=points,
        groups=None,
        blocks=parts,
        identifying=[c for p in parts for c in p.released_columns],
        details=details,
    )


def _combined_bound(
    X: np.ndarray, points: np.ndarray, parts: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The information loss of a release masked by blocks and, when every block reports a
    lower bound (crisp microaggregation), the bound of the whole release and the ratio.

    The loss of the whole is ``100 sum_b SSE_b / sum_b SST_b`` (standardized columns), and each
    block's SSE is at least its bound, so ``100 sum_b bound_b / sum_b SST_b`` bounds it.
    Shapes: X (n, d), points (n, d).
    """
    bounds = [p.get("lower_bound") or {} for p in parts]
    if not bounds or any(b.get("sse") is None or not b.get("sst") for b in bounds):
        return {}
    il = sse_sst_loss(X, points)
    il_bound = 100.0 * sum(b["sse"] for b in bounds) / sum(b["sst"] for b in bounds)
    return {
        "information_loss": il,
        "information_loss_lower_bound": il_bound,
        "information_loss_over_bound": il / il_bound if il_bound > 0 else None,
    }
