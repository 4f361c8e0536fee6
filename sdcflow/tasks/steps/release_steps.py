"""The Prefect tasks of a release: thin wrappers over the warehouse and the numerical core.

Every task disables caching and result persistence: the data they pass are confidential and
must not be pickled into Prefect's result storage, and a release must never be "cached".
Logs carry figures and decisions only, never record values.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from sdcflow.spec import ReleaseSpec
from sdcflow.tasks.gates.registry import CheckContext, CheckOutcome, run_checks
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.methods.blocks import mask_quasi_identifiers
from sdcflow.tasks.methods.registry import MaskResult
from sdcflow.tasks.steps.plan import preflight
from sdcflow.warehouse.publish import write_release
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

STEP = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="preflight", **STEP)
def check_inputs(spec: ReleaseSpec) -> dict[str, Any]:
    profile = preflight(spec)
    get_run_logger().info(
        "source %s: %d records, %d columns", spec.source, profile["rows"], len(profile["types"])
    )
    return profile


@task(name="ingest", retries=2, retry_delay_seconds=1, **STEP)
def ingest(spec: ReleaseSpec, warehouse: Warehouse, run_id: str) -> pd.DataFrame:
    """Load the source into ``raw`` and read back the columns the release uses."""
    table = warehouse.ingest(spec.source_path, run_id)
    frame = warehouse.read_frame("raw", run_id)
    get_run_logger().info("ingested %d records into %s", len(frame), table)
    return frame


@task(name="mask", **STEP)
def mask(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
) -> MaskResult:
    X = frame[spec.quasi_identifiers].to_numpy(dtype=np.float64)
    result = mask_quasi_identifiers(
        X, spec.quasi_identifiers, spec.method, rng, constraints, spec.blocks
    )
    get_run_logger().info(
        "masked %d records x %d quasi-identifiers with %s",
        X.shape[0],
        X.shape[1],
        spec.method.name,
    )
    return result


def released_frame(spec: ReleaseSpec, frame: pd.DataFrame, result: MaskResult) -> pd.DataFrame:
    """Masked quasi-identifiers + kept and sensitive columns, unchanged (+ the row id for the
    warehouse), in input order."""
    out = result.masked.reset_index(drop=True).copy()
    for col in [*spec.keep, *spec.sensitive]:
        out[col] = frame[col].to_numpy()
    out[ROW_ID] = frame[ROW_ID].to_numpy()
    return out


@task(name="store-masked", **STEP)
def store_masked(warehouse: Warehouse, run_id: str, released: pd.DataFrame) -> str:
    return warehouse.write_frame("masked", run_id, released)


def measure_settings(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> dict[str, Any]:
    """The ``CheckContext.extra`` keys the measure gates read (see tasks/measure_checks.py)."""
    extra: dict[str, Any] = {
        "sensitive": frame[spec.sensitive] if spec.sensitive else None,
        "rng": rng,
        "cluster_loss": spec.measures.cluster_loss.model_dump(),
        "constraints": constraints,
    }
    if spec.measures.interval_disclosure_p is not None:
        extra["interval_disclosure_p"] = spec.measures.interval_disclosure_p
    return extra


@task(name="checks", **STEP)
def check_release(
    spec: ReleaseSpec,
    frame: pd.DataFrame,
    result: MaskResult,
    edit_violations: dict[str, int] | None,
    rng: np.random.Generator,
    constraints: LinearConstraints | None = None,
) -> list[CheckOutcome]:
    ctx = CheckContext(
        original=frame[spec.quasi_identifiers].to_numpy(dtype=np.float64),
        columns=list(spec.quasi_identifiers),
        result=result,
        method=spec.method,
        edit_violations=edit_violations,
        kept=frame[spec.keep + spec.sensitive] if (spec.keep or spec.sensitive) else None,
        extra=measure_settings(spec, frame, rng, constraints),
    )
    outcomes = run_checks(ctx, spec.checks)
    logger = get_run_logger()
    for o in outcomes:
        logger.info(
            "check %s: %.6g %s %.6g -> %s",
            o.key,
            o.figure,
            ">=" if o.direction == "min" else "<=",
            o.threshold,
            "pass" if o.passed else "FAIL",
        )
    return outcomes


@task(name="run-report", **STEP)
def run_report(
    spec: ReleaseSpec,
    report_dir: Path,
    outcome: dict[str, Any],
    result: MaskResult | None,
) -> Path:
    """Write the run's ``report.html`` (checks, edit-rule results, plots; figures only)."""
    from sdcflow.tasks.measures.anonymity import equivalence_class_sizes
    from sdcflow.tasks.report.html import class_size_figure, write_report

    edits = outcome.get("edit_rules") or {}
    summary = {
        "release": spec.release,
        "run id": outcome["run_id"],
        "method": spec.method.name,
        "parameters": spec.method.model_dump(mode="json", exclude={"name"}),
        "decision": outcome["decision"],
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
        checks=outcome.get("checks"),
        edit_results=outcome.get("edit_violations"),
        figures=figures,
        tables=tables,
        title=f"sdcflow release report: {spec.release}",
    )
    get_run_logger().info("run report written to %s", path)
    return path


@task(name="report-artifacts", **STEP)
def report_artifacts(
    spec: ReleaseSpec, run_id: str, outcomes: list[CheckOutcome], decision: str
) -> None:
    """A Markdown summary (checks table, decision) and a table artifact of the figures."""
    rows = [o.as_dict() for o in outcomes]
    lines = [
        f"# Release `{spec.release}`",
        "",
        f"Method: `{spec.method.name}` {spec.method.model_dump(exclude={'name'})}",
        "",
        "| check | figure | rule | threshold | verdict |",
        "|---|---:|:-:|---:|:-:|",
        *(
            f"| {r['check']} | {r['figure']:.6g} | {r['rule']} | {r['threshold']:.6g} | "
            f"{r['verdict']} |"
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
            {k: r[k] for k in ("check", "figure", "rule", "threshold", "verdict")} for r in rows
        ],
        key=f"{key}-checks",
        description=f"check figures of run {run_id}",
    )


def artifact_key(release: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    key = "".join(ch if ch.isalnum() else "-" for ch in release.lower()).strip("-")
    return key or "release"


def manifest(spec: ReleaseSpec, run_id: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """What the run decided, for ``manifest.json`` (transparency: everything but the seed)."""
    return {
        "release": spec.release,
        "run_id": run_id,
        "spec": spec.public_dict(),
        "spec_sha256": spec.sha256(),
        "method": spec.method.model_dump(mode="json"),
        "method_details": outcome["method_details"],
        "checks": outcome["checks"],
        "edit_violations": outcome["edit_violations"],
        "edit_rules": outcome["edit_rules"],
        "software": software_versions(),
    }


def software_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in (
        "sdcflow",
        "numpy",
        "scipy",
        "numba",
        "pandas",
        "pyarrow",
        "duckdb",
        "prefect",
        "great-expectations",
        "pydantic",
    ):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


@task(name="publish", **STEP)
def publish(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    released: pd.DataFrame,
    manifest: dict[str, Any],
    rng: np.random.Generator,
    report: Path | None = None,
) -> Path:
    """Shuffle rows (file order could link records to the source), drop the row id, and
    write the release atomically; also keep a copy in the warehouse's ``published`` schema."""
    order = rng.permutation(len(released))
    public = released.drop(columns=[ROW_ID]).iloc[order].reset_index(drop=True)
    manifest = {**manifest, "rows_shuffled": True, "published_at": datetime.now(UTC).isoformat()}
    extra = {"report.html": report.read_bytes()} if report is not None else None
    path = write_release(spec.output_dir, spec.release, public, manifest, extra_files=extra)
    warehouse.write_frame("published", run_id, public)
    get_run_logger().info("published %d records to %s", len(public), path)
    return path
