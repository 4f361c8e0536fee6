"""Box-anonymization gates: l-diversity of the boxes, records outside their box, target
statistics outside their published interval. They apply to a box release only."""

from __future__ import annotations

import numpy as np

from sdcflow.core.box.checks import min_distinct, records_outside, targets_outside
from sdcflow.errors import ParameterError, Reason
from sdcflow.gates.base import Gate, GateContext
from sdcflow.methods.box import BoxParams, BoxResult


def _boxes(ctx: GateContext) -> list[tuple[np.ndarray, list[str], BoxResult]]:
    """``(original columns, names, box result)`` for the release or each of its blocks."""
    parts = [(b.columns, b.result) for b in ctx.result.blocks] or [(ctx.columns, ctx.result)]
    if not all(isinstance(part, BoxResult) for _, part in parts):
        raise ParameterError(
            "box checks (box_l_diversity, box_max_records_outside, box_max_targets_outside) "
            "apply to box releases only; remove them from `checks:`",
            code=Reason.SPEC_CONTRADICTION,
        )
    return [
        (ctx.original[:, [ctx.columns.index(c) for c in names]], list(names), part)
        for names, part in parts
    ]


def _min_distinct(ctx: GateContext) -> float:
    return float(min(min_distinct(X, b.box_ids, b.epsilon) for X, _, b in _boxes(ctx)))


def _records_outside(ctx: GateContext) -> float:
    return float(sum(records_outside(X, b.lo, b.hi) for X, _, b in _boxes(ctx)))


def _targets_outside(ctx: GateContext) -> float:
    bad = 0
    for X, names, boxes in _boxes(ctx):
        w = boxes.weights
        bad += targets_outside(X, names, w, boxes.estimates)
        if boxes.estimates_equal_weights is not None:
            uniform = np.full(len(w), 1.0 / len(w))
            bad += targets_outside(X, names, uniform, boxes.estimates_equal_weights)
    return float(bad)


GATES = [
    Gate(
        "box_l_diversity",
        "min",
        _min_distinct,
        "box: fewest distinct values (closer than epsilon count as one) of a variable in a box",
        "values",
        only_for=(BoxParams,),
        measures="numeric_keys",  # the boxes span the numeric keys
    ),
    Gate(
        "box_max_records_outside",
        "max",
        _records_outside,
        "box: original records outside their released box",
        "records",
        only_for=(BoxParams,),
        measures="numeric_keys",  # the boxes span the numeric keys
    ),
    Gate(
        "box_max_targets_outside",
        "max",
        _targets_outside,
        "box: target statistics outside their guaranteed published interval",
        "statistics",
        only_for=(BoxParams,),
        measures="numeric_keys",  # the boxes span the numeric keys
    ),
]
