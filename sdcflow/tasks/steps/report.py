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
from sdcflow.tasks.measures.anonymity import match_counts
from sdcflow.tasks.methods import MaskResult
from sdcflow.tasks.report.html import class_size_figure, risk_figure, write_report
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
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
) -> Path:
    """Write the run's ``report.html`` (checks, edit-rule results, plots; figures only);
    ``extra_tables``: further sections (title -> table of figures), e.g. the fuzzy mapping's."""
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
    if result is not None and result.details.get("information_loss_lower_bound"):
        d = result.details  # crisp microaggregation: the optimum's IL lies in [bound, IL]
        summary["information loss, lower bound for any partition, ratio"] = (
            f"IL {d['information_loss']:.3f} >= {d['information_loss_lower_bound']:.3f}, "
            f"IL / bound {d['information_loss_over_bound']:.2f}"
        )
    if result is not None:
        f, _ = match_counts(result.released_identifiers)
        k = getattr(spec.method, "k", None)
        figures["Records matching each released record (all keys; missing matches any)"] = (
            class_size_figure(f, k, xlabel="records matching the record", ylabel="records")
        )
        tables.update(disclosure_tables(result.details.get("disclosure"), result.details))
        histogram = (result.details.get("disclosure") or {}).get("risk", {}).get("histogram_after")
        if histogram:
            figures["Individual re-identification risk of the released records"] = risk_figure(
                histogram["edges"], histogram["records"]
            )
    if edits.get("raw"):
        tables["Edit rules on the raw records (violating records)"] = pd.DataFrame(
            {"rule": list(edits["raw"]), "violating records": list(edits["raw"].values())}
        )
    tables.update(extra_tables or {})
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


def _sig(x: float) -> float:
    """Four significant digits (risks span many orders of magnitude)."""
    return float(f"{x:.4g}")


def disclosure_tables(
    disclosure: Mapping[str, Any] | None, details: Mapping[str, Any]
) -> dict[str, pd.DataFrame]:
    """Tables of the keys' figures for the report: k over all keys, with the keep columns,
    the risk before and after, and the categorical values suppressed per key."""
    if not disclosure:
        return {}
    tables: dict[str, pd.DataFrame] = {}
    rows = [
        ("k over all keys (a missing value matches any value)", disclosure["k_anonymity"]),
        ("k over identical released rows", disclosure["k_identical_rows"]),
    ]
    keep = disclosure.get("keep")
    if keep:
        rows.append(
            (f"k if the intruder also knew the keep columns {keep['columns']}", keep["k_with_keep"])
        )
    risk = disclosure["risk"]
    for when in ("before", "after"):
        r = risk[when]
        rows += [
            (
                f"global risk {when}: expected re-identifications",
                _sig(r["expected_reidentifications"]),
            ),
            (f"global risk {when} (% of records)", _sig(r["global_risk_percent"])),
            (f"largest individual risk {when}", _sig(r["max"])),
            (f"sample uniques {when}", r["sample_uniques"]),
        ]
    tables["Keys: anonymity and re-identification risk"] = pd.DataFrame(
        {"figure": [r[0] for r in rows], "value": [r[1] for r in rows]}
    )
    kinds = disclosure.get("keys", {})
    suppressed = details.get("categorical_values_suppressed", {})
    changed = details.get("categorical_values_changed", {})
    tables["Keys: kind, values changed and suppressed"] = pd.DataFrame(
        {
            "key": list(kinds),
            "kind": list(kinds.values()),
            "values changed": [changed.get(c, "") for c in kinds],
            "values suppressed": [suppressed.get(c, "") for c in kinds],
        }
    )
    return tables


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
            f"| {r['check']} | {r['figure']:.6g} | {r['rule']} | {r['threshold']:.6g} | "
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
