"""The release flow: ingest -> validate edits -> edit + mask -> checks -> publish (or refuse).

Run it with ``sdcflow release SPEC`` (``sdcflow check SPEC`` stops before publishing), or call
:func:`release` from Python or a Prefect deployment.
"""

from __future__ import annotations

import logging
import os
import typing
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import flow, get_run_logger
from prefect.exceptions import ExternalSignal, MissingContextError
from prefect.runtime import flow_run
from prefect.states import Failed, State

from sdcflow.core.measures.anonymity import counted_once
from sdcflow.core.validation import check_random_state
from sdcflow.errors import ChecksFailed
from sdcflow.flows.outcome import ReleaseOutcome
from sdcflow.gates import GateOutcome
from sdcflow.preflight.plan import ReleasePlan, binned_keys
from sdcflow.spec.load import load_spec
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import checks as check_steps
from sdcflow.tasks import edits as edit_steps
from sdcflow.tasks import fuzzy_map as fuzzy_map_steps
from sdcflow.tasks.ingest import ingest
from sdcflow.tasks.mask import mask, released_frame, store_masked
from sdcflow.tasks.preflight import preflight
from sdcflow.tasks.progress import Progress
from sdcflow.tasks.publish import manifest, publish
from sdcflow.tasks.report import report_artifacts, run_report
from sdcflow.tasks.scale import scaled_out, settle, warm_up
from sdcflow.warehouse.ownership import IncompleteFolder, deferred_signals, sweep_incomplete
from sdcflow.warehouse.publish import SWAPPED_IN, files_intact, published_run, recover
from sdcflow.warehouse.retention import Policy, apply_policy, sweep_compactions
from sdcflow.warehouse.transient import is_interrupted
from sdcflow.warehouse.warehouse import Warehouse


def _run_id() -> str:
    current = flow_run.id
    return uuid.UUID(str(current)).hex if current else uuid.uuid4().hex


@dataclass
class _Edits:
    """What the edit-rule stage hands on: the (repaired) records and the rules' summary."""

    frame: pd.DataFrame
    summary: dict[str, Any] | None = None
    refused: list[GateOutcome] = field(default_factory=list)


def _edit_raw(
    plan: ReleasePlan, warehouse: Warehouse, run_id: str, frame: pd.DataFrame, docs: Path
) -> _Edits:
    """Validate the raw records against the edit rules; refuse (``fail``) or repair them."""
    spec = plan.spec
    if not plan.rules:
        return _Edits(frame)
    pre = edit_steps.validate_edits(
        warehouse, run_id, "raw", plan.rules, docs / "raw", spec.release
    )
    summary: dict[str, Any] = {"raw": pre.counts(None), "repaired_records": 0}
    summary["raw_undetermined"] = {o.name: o.undetermined for o in pre.outcomes}
    if spec.on_violation == "fail" and not pre.success:
        return _Edits(frame, summary, edit_steps.rule_failures(pre))
    if plan.constraints is not None and edit_steps.needs_repair(spec, plan.constraints):
        frame, summary["repaired_records"] = edit_steps.repair_edits(
            spec, warehouse, run_id, frame, plan.rules, plan.constraints
        )
    return _Edits(frame, summary)


def _edit_masked(
    plan: ReleasePlan,
    warehouse: Warehouse,
    run_id: str,
    edits: _Edits,
    released: pd.DataFrame,
    docs: Path,
) -> tuple[dict[str, int] | None, list[str]]:
    """Validate the released records against the rules they carry: per-rule counts of the
    error rules (None when none could be checked), and the error rules that could not be."""
    if not plan.rules or edits.summary is None:
        return None, []
    # a fuzzy-mapped column holds mapped values: its rules are not checked on them
    columns = [c for c in released.columns if c not in plan.spec.fuzzy_map]
    checkable, skipped = edit_steps.released_rules(plan.rules, columns, binned_keys(plan.spec))
    post = edit_steps.validate_edits(
        warehouse, run_id, "masked", checkable, docs / "masked", plan.spec.release, skipped
    )
    edits.summary |= {"masked": post.counts(None), "not_checked_after_masking": skipped}
    edits.summary["masked_undetermined"] = {o.name: o.undetermined for o in post.outcomes}
    errors = {r.name for r in plan.rules if r.severity == "error"}
    unchecked = [name for name in skipped if name in errors]
    counted = any(r.severity == "error" for r in checkable)
    return (post.counts() if counted else None), unchecked


def _decision(failed: list[GateOutcome], publish: bool) -> str:
    if failed:
        return "REFUSED: " + ", ".join(o.key for o in failed) + " failed"
    return "published" if publish else "all checks passed (check only, not published)"


def _refused(outcome: ReleaseOutcome) -> State:
    # A Failed final state ends the flow run Failed and raises ChecksFailed in the caller,
    # without logging a traceback for what is a decision, not a crash.
    names = ", ".join(f"{o.key} ({' vs '.join(o.shown)})" for o in outcome.failed)
    error = ChecksFailed(f"check(s) failed: {names}; nothing was published", outcome)
    return Failed(message=outcome.message, data=error)


# The steps a run's progress counts (the release's Prefect progress artifact, the command
# line's bar); ``sdcflow check`` stops before the last.
STEPS = (
    "ingest",
    "edit rules on the raw records",
    "mask",
    "edit rules on the released records",
    "checks",
    "report",
    "publish",
)

# Runs this process published, by run id: the command line reads it when an interrupt arrived
# after the publication (the release is live; it must say so).
PUBLISHED: dict[str, ReleaseOutcome] = {}


@flow(name="sdc-release", persist_result=False, log_prints=False)
def release(
    spec_path: str,
    publish: bool = True,
    method: dict[str, Any] | None = None,
    figures: list[str] | None = None,
    measures: dict[str, Any] | None = None,
    plan: ReleasePlan | None = None,
    wait: float | None = None,
    kind: str | None = None,
    force: bool = False,
) -> ReleaseOutcome | State:
    """Release the file described by the spec at ``spec_path``.

    Parameters
    ----------
    spec_path : path of the release YAML.
    publish : False runs every step and check but publishes nothing (``sdcflow check``).
    method : optional replacement for the spec's ``method`` block (comparisons).
    figures : gate keys whose figures to compute without a threshold (comparisons).
    measures : optional updates of the spec's ``measures`` settings (comparisons).
    plan : the preflight's :class:`ReleasePlan` when the caller made one (the command line);
        without it the flow runs the preflight itself (a deployment).
    wait : seconds to wait for another release holding the warehouse (default
        ``$SDCFLOW_LOCK_WAIT`` or 60); then :class:`~sdcflow.errors.WarehouseBusy`.
    kind : what started the run, recorded in ``audit.runs.kind``: ``release`` (publishing),
        ``check`` (``publish=False``, the default then) or ``compare`` (a variant).
    force : publish even when the live release was published from the same input (sha256 of
        the source file) and the same spec (:meth:`ReleaseSpec.sha256`); without it such a
        run publishes nothing and returns status ``unchanged`` (:func:`already_published`).

    Returns the :class:`ReleaseOutcome`. When a check or, under ``on_violation: fail``, an
    edit rule fails, the flow run ends Failed and the call raises ``ChecksFailed`` carrying
    the refused outcome; ``audit.runs`` records the run as ``refused``.

    The run holds the warehouse's writer lock throughout (:meth:`Warehouse.lock`). ``SIGINT``
    and ``SIGTERM`` arriving while it publishes are deferred until the swap and its audit
    record are done (:func:`~sdcflow.warehouse.ownership.deferred_signals`); the run then
    completes as published and the signal stays pending for the caller.
    """
    if plan is None:
        plan = preflight(load_spec(spec_path), force=force)
    if method or measures:
        plan = plan.variant(method, measures)
    spec = plan.spec
    warehouse = Warehouse(spec.warehouse_path)
    # the released keys are counted once for the disclosure figures, the gates and the report
    with warehouse.lock(wait), counted_once():
        return _release(
            plan,
            warehouse,
            publish,
            figures,
            kind or ("release" if publish else "check"),
            force,
        )


# ``sdcflow serve`` hands the flow to its runs' process pickled (cloudpickle): the module's
# attribute ``release`` is the Flow, not this function, so the function travels by value
# with only the globals its body names, and Prefect, validating the run's parameters, could
# not resolve the string annotations of ``from __future__ import annotations`` (``plan:
# ReleasePlan | None``): every served run failed before it started. Resolved here, the
# annotations travel as the types themselves.
release.fn.__annotations__ = typing.get_type_hints(release.fn)


def _release(
    plan: ReleasePlan,
    warehouse: Warehouse,
    publish: bool,
    figures: list[str] | None,
    kind: str,
    force: bool = False,
) -> ReleaseOutcome | State:
    spec = plan.spec
    run_id = _run_id()
    rng = check_random_state(spec.seed)
    recover(spec.output_dir)  # what killed earlier runs left, for any release in that folder
    sweep_incomplete(spec.reports_dir)  # their partial report folders
    sweep_compactions(warehouse)  # a killed `prune --compact`'s copy of the warehouse
    report_folder = IncompleteFolder(spec.reports_dir / spec.release / run_id)
    report_dir = report_folder.path
    docs = report_dir / "data-docs"
    target = spec.release_dir.resolve() if publish else None
    # once: the manifest must name the spec hash audit.runs records, whatever happens to a
    # file the spec names meanwhile (a rules file edited during a run must not make the
    # manifest hash the new file while the audit holds the one the run applied)
    spec_sha256 = spec.sha256()
    warehouse.start_run(
        run_id,
        spec.release,
        spec_sha256,
        spec.method.name,
        target=target,
        kind=kind,
        input_sha256=plan.source_sha256 or None,
        secrets_sha256=spec.secrets_sha256(),
        release_sha256=plan.release_sha256(),
    )
    exposure = warehouse.exposure()
    if exposure is not None:  # reported, not refused: its mode is the owner's decision
        get_run_logger().warning("%s", exposure)
    status, message, published, n_rows = "failed", None, None, None
    recorded = False
    warm: list = []
    try:
        previous = already_published(plan, warehouse) if publish and not force else None
        if previous is not None:
            status = "unchanged"  # its published_to stays empty: this run published nothing
            message = (
                f"already published as run {previous['run_id']} from the same input and "
                "spec; nothing new published (--force to publish again)"
            )
            get_run_logger().info("decision: %s", message)
            return ReleaseOutcome(
                run_id=run_id,
                release=spec.release,
                status="unchanged",
                message=message,
                method=spec.method.model_dump(mode="json"),
                published=Path(previous["published_to"]),
                previous_run=previous["run_id"],
            )
        report_folder.create()
        steps = Progress(spec.release, "release", STEPS[: len(STEPS) - (not publish)], run_id)
        warm = warm_up(spec)  # runner: dask -- workers load the mask's code meanwhile
        with steps.step("ingest"):
            frame = ingest(plan, warehouse, run_id)
        n_rows = len(frame)
        outcome = ReleaseOutcome(
            run_id=run_id,
            release=spec.release,
            status="refused",
            message="",
            method=spec.method.model_dump(mode="json"),
        )

        with steps.step("edit rules on the raw records"):
            edits = _edit_raw(plan, warehouse, run_id, frame, docs)
        if edits.refused:
            outcome.message = "REFUSED: raw records violate edit rules (on_violation: fail)"
            outcome.checks, outcome.edit_rules = edits.refused, edits.summary
            warehouse.record_checks(run_id, [o.as_dict() for o in edits.refused])
            outcome.report = run_report(
                spec, report_dir, run_id, outcome.message, edits.refused, edits.summary,
                plan.rules, None, None, None,
            )  # fmt: skip
            report_folder.complete()
            status, message = "refused", outcome.message
            return _refused(outcome)

        with steps.step("mask"):
            edits.frame, mapped = fuzzy_map_steps.map_sensitive(
                spec, warehouse, run_id, edits.frame, rng
            )
            with scaled_out(
                warm, spec.release
            ):  # runner: dask -- the mask's pieces as task runs on the cluster
                result = mask(
                    spec, edits.frame, rng, plan.constraints, plan.resolved_keys, plan.rules
                )
            released = released_frame(spec, edits.frame, result)
            store_masked(warehouse, run_id, released)
        with steps.step("edit rules on the released records"):
            edit_violations, unchecked = _edit_masked(
                plan, warehouse, run_id, edits, released, docs
            )
        with steps.step("checks"):
            checks, computed, evidence = check_steps.check_release(
                spec, edits.frame, result, edit_violations, rng, figures or (), frame, unchecked
            )
        warehouse.record_checks(run_id, [o.as_dict() for o in checks])
        failed = [o for o in checks if not o.passed]
        outcome.checks, outcome.figures = checks, computed
        outcome.method_details = result.details
        outcome.edit_rules, outcome.edit_violations = edits.summary, edit_violations
        outcome.information_loss = evidence.information_loss
        outcome.record_risk = evidence.record_risk
        outcome.message = _decision(failed, publish)
        with steps.step("report"):
            report_artifacts(spec, run_id, checks, outcome.message)
            outcome.report = run_report(
                spec,
                report_dir,
                run_id,
                outcome.message,
                checks,
                edits.summary,
                plan.rules,
                frame,
                result,
                evidence,
                fuzzy_map_steps.report_tables(mapped),
            )
        report_folder.complete()
        if failed:
            status, message = "refused", outcome.message
            return _refused(outcome)

        if publish:
            # The swap and its audit record happen together: an interrupt waits for both.
            with steps.step("publish"), deferred_signals():
                published = publish_release(
                    spec, warehouse, run_id, released, outcome, rng, spec_sha256, force
                )
                outcome.published, outcome.status = published, "published"
                status, message = "published", outcome.message
                PUBLISHED[run_id] = outcome  # live from here on, whatever happens next
                warehouse.finish_run(
                    run_id, status, message=message, n_rows=n_rows, published_to=str(published)
                )
                recorded = True
        else:
            outcome.status = status = "checked"
        get_run_logger().info("decision: %s", outcome.message)
        return outcome
    except BaseException as e:
        if run_id in SWAPPED_IN:  # the swap happened: the release is live whatever came after
            status, published = "published", SWAPPED_IN[run_id]
            what = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            message = f"published; then {what}"
        elif isinstance(e, (KeyboardInterrupt, ExternalSignal)) or is_interrupted(e):
            status = "interrupted"
            message = "interrupted by a signal before publication; nothing was published"
        elif status == "failed":
            message = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if not recorded:
            report_folder.discard()  # partial: the run did not finish writing it
        raise
    finally:
        if not recorded:
            with deferred_signals():
                warehouse.finish_run(
                    run_id,
                    status,
                    message=message,
                    n_rows=n_rows,
                    published_to=str(published) if published else None,
                )
        if status != "interrupted":  # after a signal, the next run or `sdcflow prune` does it
            retain(spec, warehouse)
        # a run refused before its mask step: the warm-up pieces, after the audit record is
        # written and within 30 s in all (not 30 s each)
        settle(warm, timeout=30)


def already_published(plan: ReleasePlan, warehouse: Warehouse) -> dict[str, Any] | None:
    """The live release's run when it was published from the same input and spec, else None.

    Same input: the sha256 of the source file's bytes (``plan.source_sha256``); same spec:
    :meth:`ReleaseSpec.sha256` (the public spec, canonical JSON; ``retention`` and the
    runner aside) or :meth:`ReleasePlan.release_sha256` (the same, also without the reports
    folder and the source's path, with the rules as parsed: a spec that differs in those
    alone would publish a second masking of the same file), and
    :meth:`ReleaseSpec.secrets_sha256` (the seed, the fuzzy mappings). Live:
    the latest ``published`` run of the release in ``audit.runs`` is the one whose marker
    the release folder carries now, with the data files its manifest lists (a folder
    removed, replaced or edited since is published again).
    """
    if not plan.source_sha256:
        return None
    last = warehouse.latest_published(plan.spec.release)
    if last is None or last["input_sha256"] != plan.source_sha256:
        return None
    if not last["published_to"]:
        return None
    same_spec = last["spec_sha256"] == plan.spec.sha256()
    if not same_spec and last.get("release_sha256") != plan.release_sha256():
        return None
    if last["secrets_sha256"] != plan.spec.secrets_sha256():  # another seed or mapping
        return None
    folder = Path(last["published_to"])
    # the live release must be the one this spec publishes to: a spec with a relative
    # `output:` in another folder (a project copied with its warehouse) has the same hash
    # but its own release folder, which may hold nothing
    if not _same_path(folder, plan.spec.release_dir):
        return None
    if published_run(folder) != last["run_id"] or not files_intact(folder):
        return None
    return last


def _same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one folder (links resolved; one that is absent is not)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def retain(spec: ReleaseSpec, warehouse: Warehouse) -> None:
    """Apply the spec's ``retention:`` to the release's runs (end of every run). A failure
    here never changes the run's outcome: it is logged, and the next run or ``sdcflow
    prune`` drops what is left."""
    policy = Policy(**spec.retention.model_dump())
    try:
        dropped = apply_policy(warehouse, policy, spec.release)
    except Exception as e:
        _logger().warning(
            "retention: the expired copies could not be dropped (%s); the next run or "
            "`sdcflow prune` drops them",
            type(e).__name__,
        )
        return
    for run in dropped:
        _logger().info(
            "retention: dropped the %s copies of run %s (%s)",
            "/".join(run.schemas),
            run.run_id,
            run.why,
        )


def _logger() -> logging.Logger | logging.LoggerAdapter:  # type: ignore[type-arg]
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("sdcflow")


def publish_release(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    released: pd.DataFrame,
    outcome: ReleaseOutcome,
    rng: np.random.Generator,
    spec_sha256: str,
    force: bool = False,
) -> Path:
    record = manifest(
        spec,
        run_id,
        outcome.checks,
        outcome.method_details,
        outcome.edit_violations,
        outcome.edit_rules,
        outcome.information_loss,
        spec_sha256=spec_sha256,
    )
    report = outcome.report if spec.publish_report else None
    return publish(spec, warehouse, run_id, released, record, rng, report, force=force)
