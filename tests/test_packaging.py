"""What the package carries and declares (issue 43, item 8): the licence text, the typing
marker, ``python -m sdcflow``, and the optional dependencies as extras whose absence is
refused in words that name the extra."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from survey import write_release

import sdcflow
from sdcflow.cli.main import main
from sdcflow.errors import InputError, ParameterError, Reason
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_package_carries_its_licence_and_its_typing_marker():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (REPO / "LICENSE").read_text()
    assert (REPO / "sdcflow" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["sdcflow"]
    assert "version" in project["dynamic"]  # from git (setuptools-scm), never by hand
    assert PYPROJECT["tool"]["setuptools_scm"]["fallback_version"]


def test_the_test_extra_installs_every_optional_dependency():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"dask", "rules", "sklearn", "stats"} <= set(extras)
    assert "sdcflow[dask,rules,sklearn,stats]" in extras["test"]
    runtime = " ".join(PYPROJECT["project"]["dependencies"])
    assert "prefect-dask" not in runtime and "mlxtend" not in runtime


def test_python_m_sdcflow_is_the_command():
    out = subprocess.run(
        [sys.executable, "-m", "sdcflow", "--version"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"sdcflow {sdcflow.__version__}"


def test_runner_dask_without_prefect_dask_is_refused_naming_the_extra(
    tmp_path, monkeypatch, capsys
):
    spec = write_release(
        tmp_path, rows=60, method={"name": "mdav", "k": 5, "cell_size": 20}, runner="dask"
    )
    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # not installed, as import sees it
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert (e.value.code, e.value.field) == (Reason.RUNNER, "runner")
    assert "pip install 'sdcflow[dask]'" in str(e.value)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sdcflow[dask]" in err
    assert not (tmp_path / "published").exists()


def test_a_local_run_needs_no_prefect_dask(monkeypatch):
    from sdcflow.tasks.scale import on_dask

    monkeypatch.setitem(sys.modules, "prefect_dask", None)
    assert on_dask() is False


def test_mining_rules_without_mlxtend_names_the_extra(monkeypatch):
    from sdcflow.core.fuzzy_mapping.rules import mine_rules

    monkeypatch.setitem(sys.modules, "mlxtend", None)
    monkeypatch.setitem(sys.modules, "mlxtend.frequent_patterns", None)
    with pytest.raises(ParameterError, match=r"pip install 'sdcflow\[rules\]'"):
        mine_rules(pd.DataFrame({"a": [True, False]}))
