"""The run's report: ``report.html`` in the run's report folder and Prefect artifacts
(figures and decisions only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from sdcflow.expectations.rules import Rule
from sdcflow.gates import Evidence, GateOutcome
from sdcflow.gates.base import distinct_digits
from sdcflow.methods import MaskResult
from sdcflow.report.html import write_report
from sdcflow.report.release import ReleaseFacts, RuleFacts, release_sections
from sdcflow.report.sections import fmt
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP, artifact_key


@task(name="run-report", **STEP)
def run_report(
    spec: ReleaseSpec,
    report_dir: Path,
    run_id: str,
    decision: str,
    checks: Sequence[GateOutcome],
    edit_rules: Mapping[str, Any] | None,
    rules: Sequence[Rule],
    raw: pd.DataFrame | None,
    result: MaskResult | None,
    evidence: Evidence | None,
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
) -> Path:
    """Write the run's ``report.html`` (:func:`~sdcflow.report.release.release_sections`:
    figures and the spec's text only); ``raw``: the records as ingested (None when nothing
    was masked); ``extra_tables``: further sections (title -> table of figures), e.g. the
    fuzzy mapping's."""
    points = result.point_columns if result is not None else None
    columns = list(spec.quasi_identifiers if points is None else points)
    facts = ReleaseFacts(
        release=spec.release,
        run_id=run_id,
        decision=decision,
        passed=all(o.passed for o in checks),
        method=spec.method,
        checks=[o.as_dict() for o in checks],
        rules=[RuleFacts(r.name, r.text, r.severity) for r in rules],
        edit_rules=edit_rules,
        columns=columns,
        original=(
            raw[columns].to_numpy(dtype=np.float64, na_value=np.nan)
            if raw is not None and result is not None
            else None
        ),
        result=result,
        evidence=evidence,
        tables=dict(extra_tables or {}),
    )
    path = write_report(
        report_dir,
        release_sections(facts),
        title=f"sdcflow release report: {spec.release}",
        decision=decision,
        passed=facts.passed,
    )
    get_run_logger().info("run report written to %s", path)
    return path


def _figure_and_threshold(row: dict[str, Any]) -> tuple[str, str]:
    if row["figure"] is None:
        return "not checked", f"{row['threshold']:.6g}"
    return distinct_digits(row["figure"], row["threshold"])


@task(name="report-artifacts", **STEP)
def report_artifacts(
    spec: ReleaseSpec, run_id: str, outcomes: Sequence[GateOutcome], decision: str
) -> None:
    """A Markdown summary (checks table, decision) and a table artifact of the figures."""
    rows = [o.as_dict() for o in outcomes]
    lines = [
        f"# Release `{spec.release}`",
        "",
        f"Method: `{spec.method.name}` ({fmt(spec.method.model_dump(exclude={'name'}))})",
        "",
        "| check | figure | rule | threshold | unit | verdict |",
        "|---|---:|:-:|---:|---|:-:|",
        *(
            f"| {r['check']} | {figure} | {r['rule']} | {threshold} | {r['unit']} | "
            f"{r['verdict']} |"
            for r, (figure, threshold) in zip(rows, map(_figure_and_threshold, rows), strict=True)
        ),
        "",
        f"**Decision:** {decision}",
    ]
    key = artifact_key(spec.release)
    create_markdown_artifact(
        markdown="\n".join(lines), key=f"{key}-summary", description=f"run {run_id}"
    )
    create_table_artifact(
        table=[
            {k: r[k] for k in ("check", "figure", "rule", "threshold", "unit", "verdict")}
            for r in rows
        ],
        key=f"{key}-checks",
        description=f"check figures of run {run_id}",
    )
