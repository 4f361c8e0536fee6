"""A release at home in the Prefect UI (issue 43, item 7): its flow run is named after the
release and the command, carries the release and method as tags, its two edit validations
are told apart, its report is a link artifact, and publishing or refusing emits an event."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prefect.settings import PREFECT_API_URL
from survey import write_release

import sdcflow.flows.ui as ui
from sdcflow.cli.main import main

REPO = Path(__file__).resolve().parents[1]
EDITS = ["total_costs == wages + other_costs"]


def _post(path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = httpx.post(f"{PREFECT_API_URL.value()}/{path}", json=body, timeout=30)
    response.raise_for_status()
    return response.json()


def _flow_run(run_hex: str) -> dict[str, Any]:
    body = {"flow_runs": {"id": {"any_": [str(uuid.UUID(run_hex))]}}}
    (run,) = _post("flow_runs/filter", body)
    return run


@pytest.fixture
def events(monkeypatch) -> list[dict[str, Any]]:
    """The events the flow emits, as it hands them to Prefect (which gets them too)."""
    seen: list[dict[str, Any]] = []
    emit = ui.emit_event

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return emit(**kwargs)

    monkeypatch.setattr(ui, "emit_event", spy)
    return seen


@pytest.mark.flow
def test_a_release_is_named_tagged_linked_and_announced(tmp_path, prefect_api, events):
    spec = write_release(tmp_path, rows=60, edits=EDITS)
    assert main(["release", str(spec)]) == 0
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    run = _flow_run(manifest["run_id"])
    assert run["name"] == "survey-release"
    assert {"release:survey", "method:mdav", "sdcflow:release"} <= set(run["tags"])

    tasks = _post("task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}}})
    names = {t["name"] for t in tasks}
    assert {"validate-edits-raw", "validate-edits-released"} <= names
    assert all("release:survey" in t["tags"] for t in tasks)

    links = _post(
        "artifacts/filter",
        {"artifacts": {"key": {"any_": ["survey-report"]}, "flow_run_id": {"any_": [run["id"]]}}},
    )
    (link,) = links  # Prefect stores a link artifact as the Markdown of the link
    report = next((tmp_path / "reports" / "survey").glob("*/report.html"))
    assert link["data"] == f"[report.html]({report.resolve().as_uri()})"

    (event,) = events
    assert event["event"] == ui.PUBLISHED
    assert event["resource"]["prefect.resource.id"] == "sdcflow.release.survey"
    assert event["payload"]["run_id"] == manifest["run_id"]
    assert event["payload"]["published"].endswith("survey")


@pytest.mark.flow
def test_a_refused_check_is_named_as_a_check_and_announced(tmp_path, prefect_api, events):
    spec = write_release(tmp_path, rows=60, checks={"max_information_loss": 0.001})
    assert main(["check", str(spec)]) == 1
    (event,) = events
    assert event["event"] == ui.REFUSED
    assert event["payload"]["failed"] == ["max_information_loss"]
    assert event["payload"]["published"] is None
    run = _flow_run(event["payload"]["run_id"])
    assert run["name"] == "survey-check"
    assert "sdcflow:check" in run["tags"]


def test_the_flow_run_name_reads_the_release_from_the_spec_file(tmp_path):
    from prefect.context import FlowRunContext

    spec = tmp_path / "r.yaml"
    spec.write_text("release: monthly-turnover\n")
    cases = [
        ({"spec_path": str(spec)}, "monthly-turnover-release"),
        ({"spec_path": str(spec), "publish": False}, "monthly-turnover-check"),
        ({"spec_path": str(spec), "kind": "compare", "method": {"name": "ps"}},
         "monthly-turnover-compare-ps"),
        ({"spec_path": str(tmp_path / "missing.yaml")}, "missing-release"),
    ]  # fmt: skip
    for parameters, name in cases:
        with FlowRunContext.model_construct(parameters=parameters):
            assert ui.flow_run_name() == name


def test_the_deployments_name_the_flow_by_its_module_path():
    """An installed package deploys without a checkout: Prefect imports the module."""
    deployments = yaml.safe_load((REPO / "deploy" / "prefect.yaml").read_text())["deployments"]
    assert {d["entrypoint"] for d in deployments} == {"sdcflow.flows.release.release"}
    from prefect.flows import load_flow_from_entrypoint

    assert load_flow_from_entrypoint("sdcflow.flows.release.release").name == "sdc-release"
