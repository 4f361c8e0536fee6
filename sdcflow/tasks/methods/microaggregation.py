"""Methods ``mdav`` and ``ps``: crisp microaggregation, every record replaced by its group mean.

The release is deterministic given the file, so the method's transparency intruder reruns
it and finds every record's group (:class:`~sdcflow.tasks.methods.base.CrispIntruder`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.methods.base import MaskResult, Method, MethodParams
from sdcflow.tasks.microaggregation.mdav import group_means, mdav
from sdcflow.tasks.microaggregation.ps import ps


class MdavParams(MethodParams):
    name: Literal["mdav"] = "mdav"
    k: int = Field(ge=2, description="minimum group size")


class PsParams(MethodParams):
    name: Literal["ps"] = "ps"
    k: int = Field(ge=2, description="minimum group size")


def crisp_result(X: np.ndarray, columns: list[str], labels: np.ndarray) -> MaskResult:
    """The release of a crisp partition: every record replaced by its group's mean.

    Shapes: X (n, d), labels (n,) with values 0..g-1.
    """
    points = group_means(X, labels)
    sizes = np.bincount(labels)
    return MaskResult(
        masked=pd.DataFrame(points, columns=columns),
        points=points,
        groups=labels,
        details={
            "groups": int(sizes.size),
            "min_group_size": int(sizes.min()),
            "max_group_size": int(sizes.max()),
        },
    )


def _mask_mdav(
    X: np.ndarray,
    columns: list[str],
    params: MdavParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    return crisp_result(X, columns, mdav(X, params.k, columns=columns))


def _mask_ps(
    X: np.ndarray,
    columns: list[str],
    params: PsParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    return crisp_result(X, columns, ps(X, params.k, columns=columns))


MDAV = Method(MdavParams, _mask_mdav, summary="MDAV-generic microaggregation")
PS = Method(PsParams, _mask_ps, summary="pairwise systematic microaggregation")
