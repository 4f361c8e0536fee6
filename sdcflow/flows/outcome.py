"""The outcome of a release run, as the flow returns it (in the spirit of SciPy's
``OptimizeResult``: a status, a message, and every figure the run computed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sdcflow.gates import GateOutcome, RecordRisk

Status = Literal["published", "checked", "refused", "unchanged"]


@dataclass
class ReleaseOutcome:
    """What a release run decided.

    Attributes
    ----------
    run_id : the run's id (the Prefect flow run id, hex).
    release : the release name.
    status : ``published``; ``checked`` (every check passed, nothing published:
        ``sdcflow check``); ``refused`` (a check or, under ``on_violation: fail``, an edit
        rule failed; nothing published); ``unchanged`` (the live release was published from the same
        input and spec by ``previous_run``; nothing new published, ``--force`` publishes
        again). A run that could not complete raises instead.
    message : the decision in one line.
    method : the method block that ran (as in the manifest).
    checks : every gate with its figure, threshold and verdict.
    figures : every figure computed, by gate key (gated or asked for with ``figures=``).
    method_details : the method's figures for the manifest.
    information_loss : IL = 100 SSE/SST of the release against the raw file (``raw``, as
        ingested: the figure ``max_information_loss`` gates) and, when a repair changed
        records before masking, against the repaired records (``repaired``).
    record_risk : the transparency intruder's per-record re-identification probabilities
        (in input order, never published) and which intruder computed them; None when not
        computed (a randomized release by blocks that no transparency gate measured).
    edit_rules : per-rule counts on the raw and released records, records repaired, rules
        not checked after masking; None without edit rules.
    edit_violations : violating released records per rule; None when no rule could be checked.
    published : the release folder, when published.
    report : the run's ``report.html``.
    previous_run : for ``unchanged``, the run that published the live release.
    """

    run_id: str
    release: str
    status: Status
    message: str
    method: dict[str, Any]
    checks: list[GateOutcome] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)
    method_details: dict[str, Any] = field(default_factory=dict)
    information_loss: dict[str, float] = field(default_factory=dict)
    record_risk: RecordRisk | None = None
    edit_rules: dict[str, Any] | None = None
    edit_violations: dict[str, int] | None = None
    published: Path | None = None
    report: Path | None = None
    previous_run: str | None = None

    @property
    def success(self) -> bool:
        """True when every check passed (published or checked)."""
        return self.status != "refused"

    @property
    def failed(self) -> list[GateOutcome]:
        return [o for o in self.checks if not o.passed]
