"""The architecture is a contract the tests run: the import-linter contracts in
pyproject.toml (the numerical core imports no Prefect, DuckDB or Great Expectations; flows on
top, never imported; no import circles)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("lint-imports is not installed: pip install '.[test]'")
    run = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_package_is_the_folder_a_reader_opens():
    """No ``__path__`` hook: every subpackage lives in the one folder of the package."""
    import sdcflow
    import sdcflow.core.microaggregation
    import sdcflow.flows

    (root,) = sdcflow.__path__
    for module in (sdcflow.flows, sdcflow.core.microaggregation):
        assert Path(module.__file__).resolve().is_relative_to(Path(root).resolve())
