"""Post-release checks: every gate of the release, logged with its figure and verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.tasks.gates import GateContext, GateOutcome, measure, run_gates
from sdcflow.tasks.methods import MaskResult
from sdcflow.tasks.spec import ReleaseSpec
from sdcflow.tasks.steps import STEP
from sdcflow.tasks.steps.mask import keep_columns, weights


def gate_context(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    result: MaskResult,
    edit_violations: Mapping[str, int] | None,
    rng: np.random.Generator,
) -> GateContext:
    columns = list(spec.quasi_identifiers if result.point_columns is None else result.point_columns)
    return GateContext(
        original=frame[columns].to_numpy(dtype=np.float64, na_value=np.nan),
        columns=columns,
        result=result,
        method=spec.method,
        options=spec.measures,
        edit_violations=edit_violations,
        sensitive=frame[spec.sensitive].reset_index(drop=True) if spec.sensitive else None,
        rng=rng,
        keep=keep_columns(spec, frame),
        weights=weights(spec, frame),
    )


@task(name="checks", **STEP)
def check_release(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    result: MaskResult,
    edit_violations: Mapping[str, int] | None,
    rng: np.random.Generator,
    figures: Sequence[str] = (),
) -> tuple[list[GateOutcome], dict[str, float]]:
    """The release's gates (the spec's, what the method promises, the defaults), and the
    figures of the gates ``figures`` without thresholds (for comparisons)."""
    ctx = gate_context(spec, frame, result, edit_violations, rng)
    outcomes = run_gates(ctx, spec.checks)
    logger = get_run_logger()
    for o in outcomes:
        logger.info(
            "check %s: %.6g %s %.6g %s -> %s",
            o.key,
            o.figure,
            o.rule,
            o.threshold,
            o.unit,
            "pass" if o.passed else "FAIL",
        )
    extra = measure(ctx, [k for k in figures if k not in {o.key for o in outcomes}])
    return outcomes, {**{o.key: o.figure for o in outcomes}, **extra}
