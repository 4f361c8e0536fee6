"""The release of a file the flow's process never holds: the same steps as
:func:`~sdcflow.flows.release.release`, each run by the warehouse or by workers on a piece.

The preflight chooses this path (``plan.path == "streamed"``) for a release every step of
which it can serve (:func:`~sdcflow.preflight.path.release_path`): then

* ingest is DuckDB reading the source into ``raw.run_<id>``;
* the edit rules are counted by DuckDB's SQL (no check columns in this process, no Great
  Expectations: :func:`~sdcflow.tasks.edits.validate_edits` with ``sql_only``), and under
  ``on_violation: repair`` the records are repaired in row-id ranges into ``edited.run_<id>``
  (:func:`~sdcflow.tasks.edits.repair_streamed`), which the mask then reads;
* the mask runs piece by piece, each piece read from and written to a Parquet file of the
  run's private folder by whoever masks it, and DuckDB assembles ``masked.run_<id>``;
* the gates, the disclosure figures and the report are aggregates DuckDB computes over the
  two tables;
* publication streams ``masked`` in chunks, as on the other path.

What this process holds is row counts, the pieces' small figures and one piece or one chunk
at a time; ``docs/concepts/scale.md`` gives the design and the bytes.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pandas as pd
from prefect.states import State

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
from sdcflow.flows.run_record import RunRecord
from sdcflow.flows.ui import link_report
from sdcflow.tasks import edits as edit_steps
from sdcflow.tasks.aggregates import check_streamed, disclosure_streamed, report_streamed
from sdcflow.tasks.cells import mask_streamed_step
from sdcflow.tasks.ingest import ingest_streamed
from sdcflow.tasks.scale import scaled_out, warm_up
from sdcflow.warehouse.leftovers import pieces_folder
from sdcflow.warehouse.private import private_folder
from sdcflow.warehouse.warehouse import ROW_ID


def streamed_stages(
    run: RunRecord, publish: bool, figures: list[str], force: bool
) -> ReleaseOutcome | State:
    """The release, every table in the warehouse: ingest, edit rules, mask in pieces, edit
    rules again, checks, report, publish."""
    plan, spec, warehouse, run_id = run.plan, run.spec, run.warehouse, run.run_id
    previous = already_published(plan, warehouse) if publish and not force else None
    if previous is not None:
        return _unchanged(run, previous)
    rng = check_random_state(spec.seed)
    # runner: dask -- the workers load the mask's code meanwhile
    steps = run.begin(STEPS[: len(STEPS) - (not publish)], warm_up(spec))
    with steps.step("ingest"):
        run.n_rows = ingest_streamed(plan, warehouse, run_id)
    summary: dict[str, Any] | None = None
    repair: edit_steps.StreamedRepair | None = None
    with steps.step("edit rules on the raw records"):
        if plan.rules:
            pre = edit_steps.validate_edits(
                warehouse, run_id, "raw", plan.rules, None, spec.release, sql_only=True
            )
            summary = raw_summary(pre)
            if spec.on_violation == "fail" and not pre.success:
                return refused_by_edit_rules(run, summary, edit_steps.rule_failures(pre))
            if plan.constraints is not None and edit_steps.needs_repair(spec, plan.constraints):
                repair = edit_steps.repair_streamed(
                    spec, warehouse, run_id, plan.rules, plan.constraints
                )
                summary["repaired_records"] = repair.moved
    # the records masked: the repaired ones when a repair ran (``edited``), as in memory
    source = "raw" if repair is None else "edited"
    with steps.step("mask"):
        folder = _pieces_folder(run)
        try:
            with scaled_out(run.warm, spec.release):  # runner: dask -- pieces on the cluster
                masked = mask_streamed_step(
                    spec,
                    warehouse,
                    run_id,
                    plan.resolved_keys,
                    folder,
                    rng,
                    plan.constraints,
                    source,
                    plan.rules,
                )
            masked.details["disclosure"] = disclosure_streamed(
                spec, warehouse, run_id, plan.resolved_keys, source
            )
        finally:
            with contextlib.suppress(OSError):  # left when it holds what it did not write
                folder.rmdir()
    with steps.step("edit rules on the released records"):
        columns = [c for c in masked.dtypes if c != ROW_ID]
        violations, unchecked = rules_on_released(plan, warehouse, run_id, summary, columns, None)
    with steps.step("checks"):
        checks, computed, evidence = check_streamed(
            spec,
            warehouse,
            run_id,
            masked.point_columns,
            masked.details,
            violations,
            unchecked,
            figures,
            source,
            repaired=repair is not None and repair.changed,
        )
    warehouse.record_checks(run_id, [o.as_dict() for o in checks])
    outcome = run.outcome()
    outcome.checks, outcome.figures = checks, computed
    outcome.method_details = {**masked.details, "path": "streamed"}
    outcome.edit_rules, outcome.edit_violations = summary, violations
    outcome.information_loss = evidence.information_loss
    outcome.record_risk = evidence.record_risk
    outcome.message = _decision(outcome.failed, publish)
    with steps.step("report"):
        outcome.report = report_streamed(
            spec,
            run.report_dir,
            run_id,
            outcome.message,
            checks,
            summary,
            plan.rules,
            warehouse,
            masked.point_columns,
            outcome.method_details,
            evidence,
        )
        link_report(spec.release, run_id, outcome.report)
        run.reported()
    dtypes = pd.Series(masked.dtypes, dtype=object)
    return conclude(run, outcome, steps, rng, dtypes, publish, force)


def _pieces_folder(run: RunRecord) -> Path:
    """The run's private folder for the pieces' Parquet files (owner-only: they hold
    confidential records), beside the warehouse; the mask removes the files it wrote and
    the flow the folder, once empty."""
    folder = pieces_folder(run.warehouse, run.run_id)  # a killed run's: sweep_run_leftovers
    private_folder(folder)
    return folder


__all__ = ["streamed_stages"]
