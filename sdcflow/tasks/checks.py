"""Post-release checks: every gate of the release, logged with its figure and verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.gates import (
    Evidence,
    GateContext,
    GateOutcome,
    gather_evidence,
    measure,
    run_gates,
)
from sdcflow.methods import MaskResult
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.tasks.mask import households, keep_columns, weights


def gate_context(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    result: MaskResult,
    edit_violations: Mapping[str, int] | None,
    rng: np.random.Generator,
    raw: pd.DataFrame | None = None,
    unchecked_rules: Sequence[str] = (),
) -> GateContext:
    """``frame``: the records that went into masking; ``raw``: the same records as ingested
    (before any repair), when the caller has them."""
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
        households=households(spec, frame),
        raw=(raw[columns].to_numpy(dtype=np.float64, na_value=np.nan) if raw is not None else None),
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
    raw: pd.DataFrame | None = None,
    unchecked_rules: Sequence[str] = (),
) -> tuple[list[GateOutcome], dict[str, float], Evidence]:
    """The release's gates (the spec's, what the method promises, the defaults), the
    figures of the gates ``figures`` without thresholds (for comparisons), and the
    :class:`~sdcflow.gates.Evidence` the report shows (IL against the raw and the
    repaired records, per-record risk). ``raw``: the records as ingested, before repair;
    ``unchecked_rules``: error rules that could not be evaluated on the released records."""
    ctx = gate_context(spec, frame, result, edit_violations, rng, raw, unchecked_rules)
    outcomes = run_gates(ctx, spec.checks)
    logger = get_run_logger()
    for o in outcomes:
        if not o.checked:
            logger.info("check %s: %s -> %s", o.key, o.note, o.verdict)
            continue
        figure, threshold = o.shown
        logger.info(
            "check %s: %s %s %s %s -> %s", o.key, figure, o.rule, threshold, o.unit, o.verdict
        )
    extra = measure(ctx, [k for k in figures if k not in {o.key for o in outcomes}])
    evidence = gather_evidence(ctx)
    logger.info("information loss: %s", loss_line(evidence.information_loss))
    return outcomes, {**{o.key: o.figure for o in outcomes}, **extra}, evidence


def loss_line(information_loss: Mapping[str, float]) -> str:
    """The console's IL figures (``2.4 % against the raw records``...); none when no key is
    numeric (the line said "information loss: " and nothing after it)."""
    if not information_loss:
        return "not measured (no numeric key)"
    return ", ".join(f"{v:.6g} % against the {k} records" for k, v in information_loss.items())
