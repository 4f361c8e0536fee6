"""The run's report: ``report.html`` in the run's report folder and Prefect artifacts
(figures and decisions only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from sdcflow.tasks.gates import GateOutcome
from sdcflow.tasks.measures.anonymity import equivalence_class_sizes
from sdcflow.tasks.methods import MaskResult
from sdcflow.tasks.report.html import class_size_figure, write_report
from sdcflow.tasks.spec import ReleaseSpec
from sdcflow.tasks.steps import STEP, artifact_key


@task(name="run-report", **STEP)
def run_report(
    spec: ReleaseSpec,
    report_dir: Path,
    run_id: str,
    decision: str,
    checks: Sequence[GateOutcome],
    edit_rules: Mapping[str, Any] | None,
    edit_violations: Mapping[str, int] | None,
    result: MaskResult | None,
) -> Path:
    """Write the run's ``report.html`` (checks, edit-rule results, plots; figures only)."""
    edits = edit_rules or {}
    summary = {
        "release": spec.release,
        "run id": run_id,
        "method": spec.method.name,
        "parameters": spec.method.model_dump(mode="json", exclude={"name"}),
        "decision": decision,
        "records repaired before masking": edits.get("repaired_records"),
    }
    figures: dict[str, Any] = {}
    tables: dict[str, pd.DataFrame] = {}
    if result is not None:
        sizes = equivalence_class_sizes(result.released_identifiers)
        k = getattr(spec.method, "k", None)
        figures["Sizes of the groups of identical released records"] = class_size_figure(sizes, k)
    if edits.get("raw"):
        tables["Edit rules on the raw records (violating records)"] = pd.DataFrame(
            {"rule": list(edits["raw"]), "violating records": list(edits["raw"].values())}
        )
    path = write_report(
        report_dir,
        summary={k: v for k, v in summary.items() if v is not None},
        checks=[o.as_dict() for o in checks],
        edit_results=edit_violations,
        figures=figures,
        tables=tables,
        title=f"sdcflow release report: {spec.release}",
    )
    get_run_logger().info("run report written to %s", path)
    return path


def _figure(value: float | None) -> str:
    return "not checked" if value is None else f"{value:.6g}"


@task(name="report-artifacts", **STEP)
def report_artifacts(
    spec: ReleaseSpec, run_id: str, outcomes: Sequence[GateOutcome], decision: str
) -> None:
    """A Markdown summary (checks table, decision) and a table artifact of the figures."""
    rows = [o.as_dict() for o in outcomes]
    lines = [
        f"# Release `{spec.release}`",
        "",
        f"Method: `{spec.method.name}` {spec.method.model_dump(exclude={'name'})}",
        "",
        "| check | figure | rule | threshold | unit | verdict |",
        "|---|---:|:-:|---:|---|:-:|",
        *(
            f"| {r['check']} | {_figure(r['figure'])} | {r['rule']} | {r['threshold']:.6g} | "
            f"{r['unit']} | {r['verdict']} |"
            for r in rows
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
