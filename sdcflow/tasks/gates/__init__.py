"""The registry of publication gates: every ``checks:`` key of the spec, with its direction,
unit, the ``measures:`` option it reads and the spec fields it needs.

Adding a gate is one :class:`~sdcflow.tasks.gates.base.Gate` entry in the module of its
family (``anonymity``, ``loss``, ``risk``, ``box``, ``edits``), with its
:class:`~sdcflow.tasks.gates.base.GateOption` beside it when it has a setting: the spec's
``measures:`` block is assembled from those declarations (:func:`options_model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from sdcflow.tasks.gates import anonymity, box, edits, loss, risk
from sdcflow.tasks.gates.base import Gate, GateContext, GateOption, GateOutcome
from sdcflow.tasks.methods import get_method

GATES: dict[str, Gate] = {
    g.key: g for module in (anonymity, loss, risk, box, edits) for g in module.GATES
}

# Gates every release gets even when the spec does not name them, with this threshold.
ALWAYS: dict[str, float] = {"max_edit_violations": 0.0}


def _options() -> dict[str, GateOption]:
    out: dict[str, GateOption] = {}
    for gate in GATES.values():
        if gate.option is not None:
            out.setdefault(gate.option.key, gate.option)
    return out


OPTIONS: dict[str, GateOption] = _options()


def options_model() -> type[BaseModel]:
    """The pydantic model of the spec's ``measures:`` block: one field per declared option."""
    fields: dict[str, Any] = {
        key: (
            opt.annotation | None,
            Field(None, description=opt.description),
        )
        for key, opt in OPTIONS.items()
    }
    return create_model(
        "MeasureOptions",
        __config__=ConfigDict(extra="forbid", frozen=True),
        __doc__="Settings of the measures behind the gates (``measures:`` in the spec).",
        **fields,
    )


MeasureOptions = options_model()


def wanted_gates(ctx: GateContext, thresholds: Mapping[str, float]) -> dict[str, float]:
    """The gates a release runs: the ones every release gets, what its method (or the
    composition that masked it, ``MaskResult.promises``) promises, then the spec's
    ``thresholds``, which override a default. With ``keep`` columns, ``keep_k_anonymity``
    (k if the intruder also knew them) is gated at the promised k."""
    if ctx.result.promises is not None:
        promised = dict(ctx.result.promises)
    else:
        promised = get_method(ctx.method.name).promises(ctx.method) if ctx.method else {}
    k = promised.get("k_anonymity")
    if k is not None and ctx.keep is not None and ctx.keep.shape[1]:
        promised["keep_k_anonymity"] = k
    if ctx.result.blocks and "k_anonymity" in promised:
        # Blocks masked separately promise k per block, not for the joint tuple (a record's
        # combination of block groups may be unique); the spec can still ask for the joint k.
        promised["block_k_anonymity"] = promised.pop("k_anonymity")
    defaults = dict(ALWAYS)
    if ctx.edit_violations is None:
        # No edit rule could be evaluated on the release: the gate would pass vacuously.
        defaults.pop("max_edit_violations")
    return {**defaults, **promised, **thresholds}


def run_gates(ctx: GateContext, thresholds: Mapping[str, float]) -> list[GateOutcome]:
    """Evaluate the gates of :func:`wanted_gates` on ``ctx``."""
    outcomes = []
    for key, threshold in wanted_gates(ctx, thresholds).items():
        gate = GATES[key]
        figure = float(gate.compute(ctx))
        outcomes.append(
            GateOutcome(
                key,
                figure,
                float(threshold),
                gate.direction,
                gate.passes(figure, float(threshold)),
                gate.description,
                gate.unit,
            )
        )
    return outcomes


def measure(ctx: GateContext, keys: list[str]) -> dict[str, float]:
    """The figures of the gates ``keys`` without thresholds (reports, comparisons)."""
    return {key: float(GATES[key].compute(ctx)) for key in keys}


__all__ = [
    "ALWAYS",
    "GATES",
    "OPTIONS",
    "Gate",
    "GateContext",
    "GateOption",
    "GateOutcome",
    "MeasureOptions",
    "measure",
    "options_model",
    "run_gates",
    "wanted_gates",
]
