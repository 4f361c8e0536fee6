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


def gate_context(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    result: MaskResult,
    edit_violations: Mapping[str, int] | None,
    rng: np.random.Generator,
    unchecked_rules: Sequence[str] = (),
) -> GateContext:
    return GateContext(
        original=frame[spec.quasi_identifiers].to_numpy(dtype=np.float64),
        columns=list(spec.quasi_identifiers),
        result=result,
        method=spec.method,
        options=spec.measures,
        edit_violations=edit_violations,
        sensitive=frame[spec.sensitive] if spec.sensitive else None,
        rng=rng,
        unchecked_rules=tuple(unchecked_rules),
        accepted_unchecked=frozenset(spec.accept.unchecked_rules),
        accept_looser=frozenset(spec.accept.looser_checks),
    )


@task(name="checks", **STEP)
def check_release(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    result: MaskResult,
    edit_violations: Mapping[str, int] | None,
    rng: np.random.Generator,
    figures: Sequence[str] = (),
    unchecked_rules: Sequence[str] = (),
) -> tuple[list[GateOutcome], dict[str, float]]:
    """The release's gates (the spec's, what the method promises, the defaults), and the
    figures of the gates ``figures`` without thresholds (for comparisons).

    ``unchecked_rules``: error rules that could not be evaluated on the released records."""
    ctx = gate_context(spec, frame, result, edit_violations, rng, unchecked_rules)
    outcomes = run_gates(ctx, spec.checks)
    logger = get_run_logger()
    for o in outcomes:
        if not o.checked:
            logger.info("check %s: %s -> %s", o.key, o.note, o.verdict)
            continue
        logger.info(
            "check %s: %.6g %s %.6g %s -> %s",
            o.key,
            o.figure,
            o.rule,
            o.threshold,
            o.unit,
            o.verdict,
        )
    extra = measure(ctx, [k for k in figures if k not in {o.key for o in outcomes}])
    return outcomes, {**{o.key: o.figure for o in outcomes}, **extra}
