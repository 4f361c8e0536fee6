"""The preflight as the first step of a flow run started without a plan (from a deployment):
:func:`sdcflow.preflight.plan.plan_release` as a Prefect task."""

from __future__ import annotations

from prefect import get_run_logger, task

from sdcflow.preflight.plan import ReleasePlan, plan_release
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP


@task(name="preflight", **STEP)
def preflight(spec: ReleaseSpec, *, force: bool = False) -> ReleasePlan:
    """:func:`plan_release` as the first step of a flow run started without a plan (from a
    deployment)."""
    plan = plan_release(spec, force=force)
    get_run_logger().info(
        "source %s: %d records, %d columns, %d edit rules",
        spec.source,
        plan.profile.rows,
        len(plan.profile.types),
        len(plan.rules),
    )
    return plan
