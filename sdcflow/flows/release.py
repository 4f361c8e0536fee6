"""The release flow: ingest -> validate edits -> edit + mask -> checks -> publish (or refuse).

Run it with ``sdcflow release SPEC`` (``sdcflow check SPEC`` stops before publishing), or call
:func:`release` from Python or a Prefect deployment.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import flow, get_run_logger
from prefect.states import State

from sdcflow.core.measures.anonymity import counted_once
from sdcflow.core.validation import check_random_state
from sdcflow.flows.decision import (
    STEPS,
    _decision,
    _unchanged,
    already_published,
    conclude,
    refused_by_edit_rules,
)
from sdcflow.flows.edit_stages import raw_summary, rules_on_released
from sdcflow.flows.outcome import ReleaseOutcome
from sdcflow.flows.path import STREAMED, release_path, streamed_rows
from sdcflow.flows.publications import Publications
from sdcflow.flows.run_record import RunRecord
from sdcflow.flows.streamed import streamed_stages
from sdcflow.flows.ui import flow_run_name, labelled, link_report
from sdcflow.gates import GateOutcome
from sdcflow.preflight.plan import ReleasePlan
from sdcflow.spec.load import load_spec
from sdcflow.tasks import checks as check_steps
from sdcflow.tasks import edits as edit_steps
from sdcflow.tasks import fuzzy_map as fuzzy_map_steps
from sdcflow.tasks.ingest import ingest
from sdcflow.tasks.mask import mask, released_frame, store_masked
from sdcflow.tasks.preflight import preflight
from sdcflow.tasks.report import report_artifacts, run_report
from sdcflow.tasks.scale import scaled_out, warm_up
from sdcflow.warehouse.warehouse import Warehouse


@dataclass
class _Edits:
    """What the edit-rule stage hands on: the (repaired) records and the rules' summary."""

    frame: pd.DataFrame
    summary: dict[str, Any] | None = None
    refused: list[GateOutcome] = field(default_factory=list)


def _edit_raw(
    plan: ReleasePlan, warehouse: Warehouse, run_id: str, frame: pd.DataFrame, docs: Path | None
) -> _Edits:
    """Validate the raw records against the edit rules; refuse (``fail``) or repair them.
    ``docs``: where Great Expectations writes its Data Docs; None counts by SQL alone."""
    spec = plan.spec
    if not plan.rules:
        return _Edits(frame)
    pre = edit_steps.validate_edits(
        warehouse, run_id, "raw", plan.rules, docs and docs / "raw", spec.release,
        sql_only=docs is None,
    )  # fmt: skip
    summary = raw_summary(pre)
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
    docs: Path | None,
) -> tuple[dict[str, int] | None, list[str]]:
    """Validate the released records against the rules they carry
    (:func:`~sdcflow.flows.edit_stages.rules_on_released`)."""
    # a fuzzy-mapped column holds mapped values: its rules are not checked on them
    columns = [c for c in released.columns if c not in plan.spec.fuzzy_map]
    return rules_on_released(plan, warehouse, run_id, edits.summary, columns, docs)


# The flow run is named after the release and the command (``business-survey-check``) and
# tagged with the release and method (sdcflow.flows.ui), for the Prefect UI.
@flow(name="sdc-release", flow_run_name=flow_run_name, persist_result=False, log_prints=False)
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
    publications: Publications | None = None,
    data_docs: bool = True,
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
    publications : the caller's :class:`~sdcflow.flows.run_record.Publications`, which
        holds the run from the moment its release is live: a caller that an error or a
        signal reaches after the swap (in the flow, in Prefect's engine or in its own code)
        learns from it that the release was published.
    data_docs : validate the edit rules with Great Expectations and write its Data Docs
        into the report folder (``sdcflow release``); False counts them by DuckDB's SQL
        alone, the same counts (Great Expectations' are held against them), without the
        seconds Great Expectations takes to load (``sdcflow check`` without
        ``--data-docs``).

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
    warehouse = Warehouse(plan.spec.warehouse_path)
    kind = kind or ("release" if publish else "check")
    if publications is None:  # not `or`: the caller's is empty (falsy) until a swap
        publications = Publications()
    # the released keys are counted once for the disclosure figures, the gates and the report
    with (
        labelled(plan.spec, kind),
        warehouse.lock(wait),
        counted_once(),
        RunRecord(plan, warehouse, kind, publish, publications) as run,
    ):
        return _stages(run, publish, figures or [], force, data_docs)


# ``sdcflow serve`` hands the flow to its runs' process pickled (cloudpickle): the module's
# attribute ``release`` is the Flow, not this function, so the function travels by value
# with only the globals its body names, and Prefect, validating the run's parameters, could
# not resolve the string annotations of ``from __future__ import annotations`` (``plan:
# ReleasePlan | None``): every served run failed before it started. Resolved here, the
# annotations travel as the types themselves.
release.fn.__annotations__ = typing.get_type_hints(release.fn)


def _stages(
    run: RunRecord, publish: bool, figures: list[str], force: bool, data_docs: bool = True
) -> ReleaseOutcome | State:
    """The release: ingest, edit rules, mask, edit rules again, checks, report, publish."""
    path, in_memory_because = release_path(run.plan, figures)
    if path == STREAMED:
        get_run_logger().info("path: streamed (every table stays in the warehouse)")
        return streamed_stages(run, publish, figures, force)
    if run.plan.profile.rows >= streamed_rows():
        get_run_logger().info("path: in memory, because %s", in_memory_because)
    plan, spec, warehouse, run_id = run.plan, run.spec, run.warehouse, run.run_id
    previous = already_published(plan, warehouse) if publish and not force else None
    if previous is not None:
        return _unchanged(run, previous)
    rng = check_random_state(spec.seed)
    docs = run.docs if data_docs else None
    # runner: dask -- the workers load the mask's code meanwhile
    steps = run.begin(STEPS[: len(STEPS) - (not publish)], warm_up(spec))
    with steps.step("ingest"):
        frame = ingest(plan, warehouse, run_id)
    run.n_rows = len(frame)
    with steps.step("edit rules on the raw records"):
        edits = _edit_raw(plan, warehouse, run_id, frame, docs)
    if edits.refused:
        return _refused_by_edit_rules(run, edits)
    with steps.step("mask"):
        masked = _mask(run, edits, rng)
    with steps.step("edit rules on the released records"):
        violations, unchecked = _edit_masked(plan, warehouse, run_id, edits, masked.released, docs)
    with steps.step("checks"):
        checks, computed, evidence = check_steps.check_release(
            spec, edits.frame, masked.result, violations, rng, figures, frame, unchecked
        )
    outcome = _decide(run, publish, checks, computed, evidence, masked, edits, violations)
    with steps.step("report"):
        _report(run, outcome, frame, masked, edits, evidence)
    return conclude(run, outcome, steps, rng, masked.released.dtypes, publish, force)


@dataclass
class _Masked:
    """What the mask stage hands on: the released records, the method's result, and the
    fuzzy mappings applied before it (for the report)."""

    released: pd.DataFrame
    result: Any
    mapped: Any


def _mask(run: RunRecord, edits: _Edits, rng: np.random.Generator) -> _Masked:
    """Map the sensitive columns the spec fuzzy-maps, mask, keep the released records."""
    plan, spec = run.plan, run.spec
    mapped: dict[str, Any] = {}
    if spec.fuzzy_map:  # no task run (and no line in the UI) for a step with nothing to do
        edits.frame, mapped = fuzzy_map_steps.map_sensitive(
            spec, run.warehouse, run.run_id, edits.frame, rng
        )
    with scaled_out(run.warm, spec.release):  # runner: dask -- the mask's pieces on the cluster
        result = mask(spec, edits.frame, rng, plan.constraints, plan.resolved_keys, plan.rules)
    released = released_frame(spec, edits.frame, result)
    store_masked(run.warehouse, run.run_id, released)
    return _Masked(released, result, mapped)


def _decide(
    run: RunRecord,
    publish: bool,
    checks: list[GateOutcome],
    computed: dict[str, float],
    evidence: Any,
    masked: _Masked,
    edits: _Edits,
    violations: dict[str, int] | None,
) -> ReleaseOutcome:
    """The outcome the checks decided (``audit.checks`` records them)."""
    run.warehouse.record_checks(run.run_id, [o.as_dict() for o in checks])
    outcome = run.outcome()
    outcome.checks, outcome.figures = checks, computed
    outcome.method_details = masked.result.details
    outcome.edit_rules, outcome.edit_violations = edits.summary, violations
    outcome.information_loss = evidence.information_loss
    outcome.record_risk = evidence.record_risk
    outcome.message = _decision(outcome.failed, publish)
    return outcome


def _report(
    run: RunRecord,
    outcome: ReleaseOutcome,
    frame: pd.DataFrame,
    masked: _Masked,
    edits: _Edits,
    evidence: Any,
) -> None:
    spec = run.spec
    report_artifacts(spec, run.run_id, outcome.checks, outcome.message)
    outcome.report = run_report(
        spec,
        run.report_dir,
        run.run_id,
        outcome.message,
        outcome.checks,
        edits.summary,
        run.plan.rules,
        frame,
        masked.result,
        evidence,
        fuzzy_map_steps.report_tables(masked.mapped),
    )
    link_report(spec.release, run.run_id, outcome.report)
    run.reported()


def _refused_by_edit_rules(run: RunRecord, edits: _Edits) -> State:
    """``on_violation: fail`` and the raw records violate an edit rule: refused, reported."""
    return refused_by_edit_rules(run, edits.summary or {}, edits.refused)
