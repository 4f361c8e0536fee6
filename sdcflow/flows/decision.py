"""What both paths of a release share after the checks: the decision, a refusal, an
unchanged release, and publication (:mod:`sdcflow.flows.release` in memory,
:mod:`sdcflow.flows.streamed` with every table in the warehouse)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger
from prefect.states import Failed, State

from sdcflow.errors import ChecksFailed
from sdcflow.flows.outcome import ReleaseOutcome
from sdcflow.flows.run_record import RunRecord
from sdcflow.flows.ui import PUBLISHED, REFUSED, announce, link_report
from sdcflow.gates import GateOutcome
from sdcflow.preflight.plan import ReleasePlan
from sdcflow.tasks.publish import manifest, publish
from sdcflow.tasks.report import run_report
from sdcflow.warehouse.ownership import deferred_signals
from sdcflow.warehouse.publish import files_intact, published_run
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse


def _decision(failed: list[GateOutcome], publish: bool) -> str:
    if failed:
        return "REFUSED: " + ", ".join(o.key for o in failed) + " failed"
    return "published" if publish else "all checks passed (check only, not published)"


def _refused(run: RunRecord, outcome: ReleaseOutcome) -> State:
    """A refusal: ``audit.runs`` records it, and a Failed final state ends the flow run
    Failed and raises ChecksFailed in the caller, without logging a traceback for what is a
    decision, not a crash."""
    run.ends("refused", outcome.message)
    announce(REFUSED, run.spec, outcome)
    names = ", ".join(
        f"{o.key} ({' vs '.join(o.shown) if o.checked else 'not checked'})" for o in outcome.failed
    )
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


def _unchanged(run: RunRecord, previous: dict[str, Any]) -> ReleaseOutcome:
    """The live release came from the same input and spec: nothing new is published (its
    ``published_to`` stays empty in ``audit.runs``: this run published nothing)."""
    message = (
        f"already published as run {previous['run_id']} from the same input and spec; "
        "nothing new published (--force to publish again)"
    )
    run.ends("unchanged", message)
    get_run_logger().info("decision: %s", message)
    return ReleaseOutcome(
        run_id=run.run_id,
        release=run.spec.release,
        status="unchanged",
        message=message,
        method=run.spec.method.model_dump(mode="json"),
        published=Path(previous["published_to"]),
        previous_run=previous["run_id"],
    )


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


def publish_release(
    run: RunRecord,
    outcome: ReleaseOutcome,
    rng: np.random.Generator,
    dtypes: pd.Series | None = None,
    force: bool = False,
) -> Path:
    """Publish the released records (the run's ``masked`` table, read from the warehouse in
    chunks) with their manifest (and the report when the spec says so); ``run`` learns of the
    swap the moment the release is live. ``dtypes``: the released frame's column types."""
    spec = run.spec
    record = manifest(
        spec,
        run.run_id,
        outcome.checks,
        outcome.method_details,
        outcome.edit_violations,
        outcome.edit_rules,
        outcome.information_loss,
        spec_sha256=run.spec_sha256,
    )
    report = outcome.report if spec.publish_report else None
    return publish(
        spec,
        run.warehouse,
        run.run_id,
        record,
        rng,
        None if dtypes is None else dtypes.drop(ROW_ID, errors="ignore").to_dict(),
        report,
        force=force,
        after_swap=run.swapped,
    )


def refused_by_edit_rules(
    run: RunRecord, summary: dict[str, Any], refused: list[GateOutcome]
) -> State:
    """``on_violation: fail`` and the raw records violate an error rule: refused, and
    reported from the counts alone (nothing was masked)."""
    outcome = run.outcome()
    outcome.message = "REFUSED: raw records violate edit rules (on_violation: fail)"
    outcome.checks, outcome.edit_rules = refused, summary
    run.warehouse.record_checks(run.run_id, [o.as_dict() for o in refused])
    outcome.report = run_report(
        run.spec, run.report_dir, run.run_id, outcome.message, refused, summary,
        run.plan.rules, None, None, None,
    )  # fmt: skip
    link_report(run.spec.release, run.run_id, outcome.report)
    run.reported()
    return _refused(run, outcome)


def conclude(
    run: RunRecord,
    outcome: ReleaseOutcome,
    steps: Any,
    rng: np.random.Generator,
    dtypes: pd.Series,
    publish: bool,
    force: bool,
) -> ReleaseOutcome | State:
    """The end of a run once its checks decided: refused, published, or checked only.
    ``steps``: the run's :class:`~sdcflow.tasks.progress.Progress`; ``dtypes``: the
    released columns' pandas types."""
    if outcome.failed:
        return _refused(run, outcome)
    if publish:
        # The swap and its audit record happen together: an interrupt waits for both.
        with steps.step("publish"), deferred_signals():
            folder = publish_release(run, outcome, rng, dtypes, force)
            run.published_as(outcome, folder)
            announce(PUBLISHED, run.spec, outcome)
    else:
        outcome.status = "checked"
        run.ends("checked")
    get_run_logger().info("decision: %s", outcome.message)
    return outcome
