"""The edit-rule gate: released records that violate an edit rule."""

from __future__ import annotations

from sdcflow.gates.base import Gate, GateContext


def _edit_violations(ctx: GateContext) -> float:
    if ctx.edit_violations is None:
        return 0.0
    return float(sum(ctx.edit_violations.values()))


def _edit_not_checked(ctx: GateContext) -> tuple[str, bool] | None:
    """Error rules that could not be evaluated on the release: the gate is "not checked"
    (and fails) unless the spec accepts every one of them."""
    if not ctx.unchecked_rules:
        return None
    open_ = [r for r in ctx.unchecked_rules if r not in ctx.accepted_unchecked]
    if open_:
        return (
            f"edit rule(s) {', '.join(open_)} not checked on the released records (their "
            "columns are not released)",
            False,
        )
    if ctx.edit_violations is None:
        return (
            f"edit rule(s) {', '.join(ctx.unchecked_rules)} not checked on the released "
            "records (accepted by the spec)",
            True,
        )
    return None


GATES = [
    Gate(
        "max_edit_violations",
        "max",
        _edit_violations,
        "released records that violate an edit rule",
        "records",
        not_checked=_edit_not_checked,
        measures="edit_rules",
        with_edit_rules=0.0,  # every release with error rules is gated on them
    )
]
