"""What a release run shows in the Prefect UI and tells an automation.

- :func:`flow_run_name`: the flow run is named after the release and what ran it
  (``business-survey-release``, ``business-survey-check``, ``business-survey-compare-ps``),
  not Prefect's random pair of words;
- :func:`labelled`: the flow run and its task runs carry the tags ``release:<name>``,
  ``method:<name>`` and ``sdcflow:<command>``, for the UI's filters;
- :func:`link_report`: a link artifact to the run's ``report.html``;
- :func:`announce`: an event, ``sdcflow.release.published`` or ``sdcflow.release.refused``,
  whose resource is the release (``sdcflow.release.<name>``), for automations to react to.

None of it decides anything: a failure to label a run is logged, never the run's failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from prefect import get_run_logger, tags
from prefect.artifacts import create_link_artifact
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.events import emit_event

from sdcflow.flows.outcome import ReleaseOutcome
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import artifact_key

#: The events :func:`announce` emits, by the run's decision.
PUBLISHED = "sdcflow.release.published"
REFUSED = "sdcflow.release.refused"


def command(parameters: dict[str, Any]) -> str:
    """What started the run, as the flow's ``kind`` parameter says (``audit.runs.kind``)."""
    return parameters.get("kind") or ("release" if parameters.get("publish", True) else "check")


def flow_run_name() -> str:
    """``<release>-<command>`` (``-<method>`` for a comparison's variant), from the run's
    parameters: the preflight's plan when the caller made one, else the spec file's
    ``release:`` (its file name when that cannot be read: the preflight will say why)."""
    context = FlowRunContext.get()
    parameters = dict(context.parameters or {}) if context else {}
    plan = parameters.get("plan")
    spec = getattr(plan, "spec", None)
    if isinstance(spec, ReleaseSpec):
        name = spec.release
    else:
        name = _release_in(str(parameters.get("spec_path") or "release"))
    kind = command(parameters)
    method = parameters.get("method")
    if kind == "compare" and isinstance(method, dict) and method.get("name"):
        return f"{name}-{kind}-{method['name']}"
    return f"{name}-{kind}"


def _release_in(spec_path: str) -> str:
    try:
        with open(spec_path, encoding="utf-8") as f:
            release = yaml.safe_load(f).get("release")
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        release = None
    return release if isinstance(release, str) and release else Path(spec_path).stem


def run_tags(spec: ReleaseSpec, kind: str) -> list[str]:
    """The tags of a release's flow run and task runs."""
    return [f"release:{spec.release}", f"method:{spec.method.name}", f"sdcflow:{kind}"]


@contextmanager
def labelled(spec: ReleaseSpec, kind: str) -> Iterator[None]:
    """Tag the current flow run with :func:`run_tags`, and every task run inside the block.

    A flow run takes its tags when it is created, before the spec is read; they are added
    to it here through the API (a deployment's own tags are kept)."""
    names = run_tags(spec, kind)
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None:
        flow_run = context.flow_run
        try:
            with get_client(sync_client=True) as client:
                client.update_flow_run(flow_run.id, tags=sorted({*flow_run.tags, *names}))
        except Exception as e:  # a label, never the run's failure
            get_run_logger().warning("could not tag the flow run %s: %s", names, e)
    with tags(*names):
        yield


def link_report(release: str, run_id: str, report: Path | None) -> None:
    """A link artifact to the run's ``report.html`` (a ``file://`` address on the machine
    that ran it), keyed ``<release>-report``: the UI lists every run's under that key."""
    if report is None:
        return
    create_link_artifact(
        link=Path(report).resolve().as_uri(),
        link_text="report.html",
        key=f"{artifact_key(release)}-report",
        description=f"run report of run {run_id}",
    )


def announce(event: str, spec: ReleaseSpec, outcome: ReleaseOutcome) -> None:
    """Emit ``event`` about the release: its resource is ``sdcflow.release.<name>``, the
    flow run is a related resource (Prefect adds it), the payload says what was decided."""
    payload: dict[str, Any] = {
        "run_id": outcome.run_id,
        "message": outcome.message,
        "method": spec.method.name,
        "failed": [o.key for o in outcome.failed],
        "published": str(outcome.published) if outcome.published else None,
        "report": str(outcome.report) if outcome.report else None,
    }
    emit_event(
        event=event,
        resource={
            "prefect.resource.id": f"sdcflow.release.{spec.release}",
            "prefect.resource.name": spec.release,
            "sdcflow.method": spec.method.name,
        },
        payload=payload,
    )
