"""The release flow: ingest -> validate edits -> edit + mask -> checks -> publish (or refuse).

Run it with ``sdcflow release SPEC`` (or ``sdcflow check SPEC`` to stop before publishing),
or call :func:`release` from Python / a Prefect deployment.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed

from sdcflow.spec import ReleaseSpec, load_spec
from sdcflow.tasks.gates.registry import CheckOutcome
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.steps import edits as edit_steps
from sdcflow.tasks.steps import release_steps as steps
from sdcflow.tasks.validation import check_random_state
from sdcflow.warehouse.publish import recover
from sdcflow.warehouse.warehouse import Warehouse


class ChecksFailed(RuntimeError):
    """A post-release check failed: nothing was published. Carries the run's outcome."""

    def __init__(self, failed: list[CheckOutcome], outcome: dict[str, Any]) -> None:
        names = ", ".join(f"{o.key} ({o.figure:.6g} vs {o.threshold:.6g})" for o in failed)
        super().__init__(f"check(s) failed: {names}; nothing was published")
        self.failed = failed
        self.outcome = outcome


def _run_id() -> str:
    current = flow_run.id
    return uuid.UUID(str(current)).hex if current else uuid.uuid4().hex


def with_method(spec: ReleaseSpec, method: dict[str, Any] | None) -> ReleaseSpec:
    """The spec with its ``method`` block replaced (for comparisons of variants)."""
    if not method:
        return spec
    data = spec.model_dump(exclude={"method"}) | {"method": method, "base_dir": spec.base_dir}
    return ReleaseSpec.model_validate(data)


@dataclass
class _Edits:
    """What the edit-rule stage hands on: the (repaired) records and the linear constraints."""

    rules: list[Any]
    frame: pd.DataFrame
    constraints: LinearConstraints | None = None
    summary: dict[str, Any] | None = None
    refused: list[CheckOutcome] | None = None


def _edit_raw(
    spec: ReleaseSpec, warehouse: Warehouse, run_id: str, frame: pd.DataFrame, docs: Path
) -> _Edits:
    """Validate the raw records against the edit rules; refuse (``fail``) or repair them."""
    rules = edit_steps.spec_rules(spec, list(frame.columns))
    if not rules:
        return _Edits(rules, frame)
    pre = edit_steps.validate_edits(warehouse, run_id, "raw", rules, docs / "raw", spec.release)
    summary: dict[str, Any] = {"raw": pre.counts(None), "repaired_records": 0}
    if spec.on_violation == "fail" and not pre.success:
        return _Edits(rules, frame, summary=summary, refused=edit_steps.rule_failures(pre))
    constraints = edit_steps.edit_constraints(spec, rules)
    if edit_steps.needs_repair(spec, constraints):
        frame, summary["repaired_records"] = edit_steps.repair_edits(
            spec, warehouse, run_id, frame, constraints
        )
    return _Edits(rules, frame, constraints, summary)


def _edit_masked(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    edits: _Edits,
    released: pd.DataFrame,
    docs: Path,
) -> dict[str, int] | None:
    """Validate the released records against the rules they carry; per-rule counts."""
    if not edits.rules or edits.summary is None:
        return None
    checkable, skipped = edit_steps.released_rules(edits.rules, list(released.columns))
    post = edit_steps.validate_edits(
        warehouse, run_id, "masked", checkable, docs / "masked", spec.release, skipped
    )
    edits.summary |= {"masked": post.counts(None), "not_checked_after_masking": skipped}
    return post.counts() if checkable else None


def _decision(failed: list[CheckOutcome], publish: bool) -> str:
    if failed:
        return "REFUSED: " + ", ".join(o.key for o in failed) + " failed"
    return "published" if publish else "all checks passed (check only, not published)"


@flow(name="sdc-release", persist_result=False, log_prints=False)
def release(
    spec_path: str, publish: bool = True, method: dict[str, Any] | None = None
) -> dict[str, Any] | Any:
    """Release the file described by the spec at ``spec_path``.

    Parameters
    ----------
    spec_path : path of the release YAML.
    publish : False runs every step and check but publishes nothing (``sdcflow check``).
    method : optional replacement for the spec's ``method`` block (comparisons).

    Returns the run outcome (run id, decision, checks, method details, published path).
    When a check or, under ``on_violation: fail``, an edit rule fails, the flow run ends
    Failed and the call raises ``ChecksFailed``; ``audit.runs`` records the run as
    ``refused`` (``failed`` is kept for errors).
    """
    spec = with_method(load_spec(spec_path), method)
    run_id = _run_id()
    warehouse = Warehouse(spec.warehouse_path)
    rng = check_random_state(spec.seed)
    report_dir = spec.reports_dir / spec.release / run_id
    docs = report_dir / "data-docs"

    steps.check_inputs(spec)
    recover(spec.output_dir, spec.release)  # what a killed earlier run may have left
    warehouse.start_run(run_id, spec.release, spec.sha256(), spec.method.name)
    status, message, published, n_rows = "failed", None, None, None
    try:
        frame = steps.ingest(spec, warehouse, run_id)
        n_rows = len(frame)
        outcome: dict[str, Any] = {
            "run_id": run_id,
            "release": spec.release,
            "method": spec.method.model_dump(mode="json"),
            "report_dir": str(report_dir),
            "published": None,
        }

        edits = _edit_raw(spec, warehouse, run_id, frame, docs)
        if edits.refused:
            outcome |= {
                "decision": "REFUSED: raw records violate edit rules (on_violation: fail)",
                "edit_rules": edits.summary,
                "checks": [o.as_dict() for o in edits.refused],
            }
            warehouse.record_checks(run_id, outcome["checks"])
            steps.run_report(spec, report_dir, outcome, None)
            status, message = "refused", outcome["decision"]
            return Failed(message=message, data=ChecksFailed(edits.refused, outcome))

        result = steps.mask(spec, edits.frame, rng, edits.constraints)
        released = steps.released_frame(spec, edits.frame, result)
        steps.store_masked(warehouse, run_id, released)
        edit_violations = _edit_masked(spec, warehouse, run_id, edits, released, docs)

        outcomes = steps.check_release(
            spec, edits.frame, result, edit_violations, rng, edits.constraints
        )
        warehouse.record_checks(run_id, [o.as_dict() for o in outcomes])
        failed = [o for o in outcomes if not o.passed]
        outcome |= {
            "method_details": result.details,
            "checks": [o.as_dict() for o in outcomes],
            "edit_violations": edit_violations,
            "edit_rules": edits.summary,
            "decision": _decision(failed, publish),
        }
        steps.report_artifacts(spec, run_id, outcomes, outcome["decision"])
        report = steps.run_report(spec, report_dir, outcome, result)
        if failed:
            # A Failed final state ends the flow run Failed and re-raises ChecksFailed to the
            # caller, without logging a traceback for what is a decision, not a crash.
            status, message = "refused", outcome["decision"]
            return Failed(message=message, data=ChecksFailed(failed, outcome))

        if publish:
            published = steps.publish(
                spec,
                warehouse,
                run_id,
                released,
                steps.manifest(spec, run_id, outcome),
                rng,
                report if spec.publish_report else None,
            )
            outcome["published"] = str(published)
        status = "published" if publish else "checked"
        get_run_logger().info("decision: %s", outcome["decision"])
        return outcome
    except BaseException as e:
        message = message or f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        raise
    finally:
        warehouse.finish_run(
            run_id,
            status,
            message=message,
            n_rows=n_rows,
            published_to=str(published) if published else None,
        )
