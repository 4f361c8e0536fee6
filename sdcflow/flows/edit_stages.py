"""The edit-rule steps both paths of a release share: the raw validation's summary and the
validation of the released records (:mod:`sdcflow.flows.release` in memory,
:mod:`sdcflow.flows.streamed` with every table in the warehouse)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcflow.preflight.plan import ReleasePlan, binned_keys
from sdcflow.tasks import edits as edit_steps
from sdcflow.warehouse.warehouse import Warehouse

if TYPE_CHECKING:
    from sdcflow.expectations.outcomes import RuleReport


def raw_summary(pre: RuleReport) -> dict[str, Any]:
    """The edit rules' summary after the raw records' validation (counts only)."""
    return {
        "raw": pre.counts(None),
        "repaired_records": 0,
        "raw_undetermined": {o.name: o.undetermined for o in pre.outcomes},
    }


def rules_on_released(
    plan: ReleasePlan,
    warehouse: Warehouse,
    run_id: str,
    summary: dict[str, Any] | None,
    columns: Sequence[str],
    docs: Path | None,
) -> tuple[dict[str, int] | None, list[str]]:
    """Validate the released records (the ``masked`` table, whose ``columns`` are given)
    against the rules they carry, adding the counts to ``summary``: per-rule counts of the
    error rules (None when none could be checked), and the error rules that could not be.
    ``docs``: where Great Expectations writes its Data Docs; None counts by SQL alone."""
    if not plan.rules or summary is None:
        return None, []
    checkable, skipped = edit_steps.released_rules(
        plan.rules, list(columns), binned_keys(plan.spec)
    )
    post = edit_steps.validate_edits(
        warehouse, run_id, "masked", checkable, docs and docs / "masked", plan.spec.release,
        skipped, sql_only=docs is None,
    )  # fmt: skip
    summary |= {"masked": post.counts(None), "not_checked_after_masking": skipped}
    summary["masked_undetermined"] = {o.name: o.undetermined for o in post.outcomes}
    errors = {r.name for r in plan.rules if r.severity == "error"}
    unchecked = [name for name in skipped if name in errors]
    counted = any(r.severity == "error" for r in checkable)
    return (post.counts() if counted else None), unchecked
