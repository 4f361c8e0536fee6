"""The edit-rule gate: released records that violate an edit rule."""

from __future__ import annotations

from sdcflow.tasks.gates.base import Gate, GateContext


def _edit_violations(ctx: GateContext) -> float:
    if ctx.edit_violations is None:
        return 0.0
    return float(sum(ctx.edit_violations.values()))


GATES = [
    Gate(
        "max_edit_violations",
        "max",
        _edit_violations,
        "released records that violate an edit rule",
        "records",
    )
]
