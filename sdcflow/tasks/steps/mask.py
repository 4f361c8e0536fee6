"""Edit + mask: the spec's method on the quasi-identifiers, and the released table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.methods import MaskResult
from sdcflow.tasks.methods.blocks import mask_quasi_identifiers
from sdcflow.tasks.spec import ReleaseSpec
from sdcflow.tasks.steps import STEP
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse


@task(name="mask", **STEP)
def mask(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
) -> MaskResult:
    X = frame[spec.quasi_identifiers].to_numpy(dtype=np.float64)
    result = mask_quasi_identifiers(
        X, spec.quasi_identifiers, spec.method, rng, constraints, spec.blocks
    )
    get_run_logger().info(
        "masked %d records x %d quasi-identifiers with %s", X.shape[0], X.shape[1], spec.method.name
    )
    return result


def released_frame(spec: ReleaseSpec, frame: pd.DataFrame, result: MaskResult) -> pd.DataFrame:
    """Masked quasi-identifiers + kept and sensitive columns, unchanged (+ the row id for the
    warehouse), in input order."""
    out = result.masked.reset_index(drop=True).copy()
    for col in [*spec.keep, *spec.sensitive]:
        out[col] = frame[col].to_numpy()
    out[ROW_ID] = frame[ROW_ID].to_numpy()
    return out


@task(name="store-masked", **STEP)
def store_masked(warehouse: Warehouse, run_id: str, released: pd.DataFrame) -> str:
    return warehouse.write_frame("masked", run_id, released)
