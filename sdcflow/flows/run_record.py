"""A release run's bookkeeping, beside the stages of :mod:`sdcflow.flows.release`.

:class:`RunRecord` is one run's line in ``audit.runs`` and what surrounds the stages: the
leftovers of earlier runs swept first, the report folder (incomplete until the report is
written, discarded when the run fails), the warm-up pieces of a Dask run, the retention
policy applied at the end, and the status, message and published folder the run ends with,
written once whatever ends it.

:class:`~sdcflow.flows.publications.Publications` is how the caller learns that the
run's release went live: the record notes the swap and the outcome in it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.exceptions import ExternalSignal, MissingContextError
from prefect.runtime import flow_run

from sdcflow.flows.outcome import ReleaseOutcome
from sdcflow.flows.publications import Publications
from sdcflow.preflight.plan import ReleasePlan
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks.progress import Progress
from sdcflow.tasks.scale import settle
from sdcflow.warehouse.leftovers import sweep_run_leftovers
from sdcflow.warehouse.ownership import IncompleteFolder, deferred_signals, sweep_incomplete
from sdcflow.warehouse.publish import recover
from sdcflow.warehouse.retention import Policy, apply_policy, sweep_compactions
from sdcflow.warehouse.transient import is_interrupted
from sdcflow.warehouse.warehouse import Warehouse


def new_run_id() -> str:
    """The Prefect flow run's id as hex (a fresh one outside a flow run)."""
    current = flow_run.id
    return uuid.UUID(str(current)).hex if current else uuid.uuid4().hex


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


@dataclass(eq=False)
class RunRecord:
    """One release run, from its ``audit.runs`` line's start to its end.

    Used as a context manager around the stages: entering sweeps what killed earlier runs
    left and starts the audit line; leaving writes the line's end (status, message, rows,
    published folder) under deferred signals unless the publication wrote it already,
    applies the spec's retention (not after a signal: the next run or ``sdcflow prune``
    does it) and settles the warm-up pieces. An exception leaving the block decides the
    status: ``published`` when the swap happened (the release is live whatever came after),
    ``interrupted`` for a signal before it, else ``failed``; the partial report folder is
    discarded.
    """

    plan: ReleasePlan
    warehouse: Warehouse
    kind: str
    publish: bool
    publications: Publications = field(default_factory=Publications)
    run_id: str = field(default_factory=new_run_id)
    status: str = "failed"
    message: str | None = None
    published: Path | None = None
    n_rows: int | None = None
    recorded: bool = False
    warm: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        spec = self.spec
        self.report_folder = IncompleteFolder(spec.reports_dir / spec.release / self.run_id)
        # once: the manifest must name the spec hash audit.runs records, whatever happens to
        # a file the spec names meanwhile (a rules file edited during a run must not make the
        # manifest hash the new file while the audit holds the one the run applied)
        self.spec_sha256 = spec.sha256()

    @property
    def spec(self) -> ReleaseSpec:
        return self.plan.spec

    @property
    def report_dir(self) -> Path:
        return self.report_folder.path

    @property
    def docs(self) -> Path:
        """Where the edit rules' Data Docs go."""
        return self.report_dir / "data-docs"

    def __enter__(self) -> RunRecord:
        spec = self.spec
        recover(spec.output_dir)  # what killed earlier runs left, for any release in that folder
        sweep_incomplete(spec.reports_dir)  # their partial report folders
        sweep_compactions(self.warehouse)  # a killed `prune --compact`'s copy of the warehouse
        # and killed runs' copies of the source and pieces (the caller holds the lock)
        for folder in sweep_run_leftovers(self.warehouse, self.run_id):
            get_run_logger().info("removed %s, left by a run that was killed", folder.name)
        self.warehouse.start_run(
            self.run_id,
            spec.release,
            self.spec_sha256,
            spec.method.name,
            target=spec.release_dir.resolve() if self.publish else None,
            kind=self.kind,
            input_sha256=self.plan.source_sha256 or None,
            secrets_sha256=spec.secrets_sha256(),
            release_sha256=self.plan.release_sha256(),
        )
        exposure = self.warehouse.exposure()
        if exposure is not None:  # reported, not refused: its mode is the owner's decision
            get_run_logger().warning("%s", exposure)
        return self

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        try:
            if error is not None:
                self._ended_by(error)
                if not self.recorded:
                    self.report_folder.discard()  # partial: the run did not finish writing it
        finally:
            if not self.recorded:
                with deferred_signals():
                    self._write_end()
            if self.status != "interrupted":  # after a signal, the next run or prune does it
                retain(self.spec, self.warehouse)
            # a run refused before its mask step: the warm-up pieces, after the audit record
            # is written and within 30 s in all (not 30 s each)
            settle(self.warm, timeout=30)

    def begin(self, steps: tuple[str, ...], warm: list[Any]) -> Progress:
        """Start the stages: the report folder (incomplete until :meth:`reported`), the
        progress over ``steps``, the warm-up pieces ``warm`` (settled at the end)."""
        self.report_folder.create()
        self.warm = warm
        return Progress(self.spec.release, "release", steps, self.run_id)

    def outcome(self) -> ReleaseOutcome:
        """The run's outcome before its checks: ``refused`` until they decide."""
        return ReleaseOutcome(
            run_id=self.run_id,
            release=self.spec.release,
            status="refused",
            message="",
            method=self.spec.method.model_dump(mode="json"),
        )

    def reported(self) -> None:
        """The report is written: its folder is complete."""
        self.report_folder.complete()

    def ends(self, status: str, message: str | None = None) -> None:
        """The run's decision, written to ``audit.runs`` when the run ends."""
        self.status, self.message = status, message

    def swapped(self, folder: Path) -> None:
        """The publisher's call right after its swap: the release is live at ``folder``."""
        self.published = folder
        self.publications.swapped(self.run_id, folder)

    def published_as(self, outcome: ReleaseOutcome, folder: Path) -> None:
        """Record the publication: the outcome says so, the caller's :class:`Publications`
        holds it, and ``audit.runs`` records it now. Call it with signals deferred, in the
        block that swapped: the swap and its record happen together."""
        outcome.published, outcome.status = folder, "published"
        self.published = folder
        self.ends("published", outcome.message)
        self.publications.published(outcome)  # live from here on, whatever happens next
        self._write_end()
        self.recorded = True

    def _ended_by(self, error: BaseException) -> None:
        if self.published is not None:  # the swap happened: the release is live
            self.status, self.message = "published", f"published; then {_first_line(error)}"
        elif isinstance(error, (KeyboardInterrupt, ExternalSignal)) or is_interrupted(error):
            self.status = "interrupted"
            self.message = "interrupted by a signal before publication; nothing was published"
        elif self.status == "failed":
            self.message = _first_line(error)

    def _write_end(self) -> None:
        self.warehouse.finish_run(
            self.run_id,
            self.status,
            message=self.message,
            n_rows=self.n_rows,
            published_to=str(self.published) if self.published else None,
        )


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
