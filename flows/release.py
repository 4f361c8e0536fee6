"""The release flow: ingest -> validate edits -> edit + mask -> checks -> publish (or refuse).

Run it with ``sdcflow release SPEC`` (or ``sdcflow check SPEC`` to stop before publishing),
or call :func:`release` from Python / a Prefect deployment.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed

from sdcflow.flows import edit_steps, steps
from sdcflow.flows.spec import ReleaseSpec, load_spec
from sdcflow.tasks._validation import check_random_state
from sdcflow.tasks.checks import CheckOutcome
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
    When a check fails the flow run ends Failed and the call raises ``ChecksFailed``;
    ``audit.runs`` records the run as ``refused`` (``failed`` is kept for errors).
    """
    spec = with_method(load_spec(spec_path), method)
    run_id = _run_id()
    logger = get_run_logger()
    warehouse = Warehouse(spec.warehouse_path)
    rng = check_random_state(spec.seed)
    report_dir = spec.reports_dir / spec.release / run_id

    steps.check_inputs(spec)
    warehouse.start_run(run_id, spec.release, spec.sha256(), spec.method.name)
    status, message, published, n_rows = "failed", None, None, None
    try:
        frame = steps.ingest(spec, warehouse, run_id)
        n_rows = len(frame)
        # Edit rules: validate the raw table, then fail or repair (edit_steps, issue 3).
        rules = edit_steps.spec_rules(spec, list(frame.columns))
        constraints, edit_summary = None, None
        if rules:
            docs = report_dir / "data-docs"
            pre = edit_steps.validate_edits(
                warehouse, run_id, "raw", rules, docs / "raw", spec.release
            )
            edit_summary = {"raw": pre.counts(None), "repaired_records": 0}
            if spec.on_violation == "fail" and not pre.success:
                failed = edit_steps.rule_failures(pre)
                decision = "REFUSED: raw records violate edit rules (on_violation: fail)"
                warehouse.record_checks(run_id, [o.as_dict() for o in failed])
                status, message = "refused", decision
                refused = {
                    "run_id": run_id,
                    "decision": decision,
                    "edit_rules": edit_summary,
                    "checks": [o.as_dict() for o in failed],
                    "report_dir": str(report_dir),
                }
                steps.run_report(spec, report_dir, refused, None)
                return Failed(message=decision, data=ChecksFailed(failed, refused))
            constraints = edit_steps.edit_constraints(spec, rules)
            if edit_steps.needs_repair(spec, constraints):
                frame, moved = edit_steps.repair_edits(spec, warehouse, run_id, frame, constraints)
                edit_summary["repaired_records"] = moved
        result = steps.mask(spec, frame, rng, constraints)
        released = steps.released_frame(spec, frame, result)
        steps.store_masked(warehouse, run_id, released)
        edit_violations = None
        if rules:
            checkable, skipped = edit_steps.released_rules(rules, list(released.columns))
            post = edit_steps.validate_edits(
                warehouse, run_id, "masked", checkable, docs / "masked", spec.release, skipped
            )
            edit_violations = post.counts()
            edit_summary |= {"masked": post.counts(None), "not_checked_after_masking": skipped}
        outcomes = steps.check_release(spec, frame, result, edit_violations, rng, constraints)
        warehouse.record_checks(run_id, [o.as_dict() for o in outcomes])
        failed = [o for o in outcomes if not o.passed]
        outcome: dict[str, Any] = {
            "run_id": run_id,
            "release": spec.release,
            "method": spec.method.model_dump(mode="json"),
            "method_details": result.details,
            "checks": [o.as_dict() for o in outcomes],
            "edit_violations": edit_violations,
            "edit_rules": edit_summary,
            "report_dir": str(report_dir),
            "published": None,
        }
        if failed:
            decision = "REFUSED: " + ", ".join(o.key for o in failed) + " failed"
        elif publish:
            decision = "published"
        else:
            decision = "all checks passed (check only, not published)"
        outcome["decision"] = decision
        steps.report_artifacts(spec, run_id, outcomes, decision)
        report = steps.run_report(spec, report_dir, outcome, result)
        if failed:
            # A Failed final state ends the flow run Failed and re-raises ChecksFailed to the
            # caller, without logging a traceback for what is a decision, not a crash.
            status, message = "refused", decision
            return Failed(message=decision, data=ChecksFailed(failed, outcome))
        if publish:
            manifest = {
                "release": spec.release,
                "run_id": run_id,
                "spec": spec.public_dict(),
                "spec_sha256": spec.sha256(),
                "method": spec.method.model_dump(mode="json"),
                "method_details": result.details,
                "checks": outcome["checks"],
                "edit_violations": edit_violations,
                "edit_rules": edit_summary,
                "software": steps.software_versions(),
            }
            published = steps.publish(
                spec,
                warehouse,
                run_id,
                released,
                manifest,
                rng,
                report if spec.publish_report else None,
            )
            outcome["published"] = str(published)
        status = "published" if publish else "checked"
        logger.info("decision: %s", decision)
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


def spec_location(spec_path: str | Path) -> str:
    return str(Path(spec_path).resolve())
