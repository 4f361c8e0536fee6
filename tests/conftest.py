"""Shared fixtures: the benchmark microdata and one Prefect test API for the whole session."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

# No per-example deadline (the CI machine is small and shared); under CI, a fixed example
# sequence so that a run is reproducible.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Every Prefect API the tests start (the command line's temporary one in the real-process
# tests too) keeps its database in a Prefect home of the session's own, never in the
# developer's ~/.prefect: the tests' runs would fill it, and a database that another Prefect
# version has migrated there would fail every real-process test at the server's start.
_PREFECT_HOME = tempfile.mkdtemp(prefix="sdcflow-tests-prefect-home-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
atexit.register(shutil.rmtree, _PREFECT_HOME, ignore_errors=True)
# Prefect's console handler keeps the stream pytest captured for the first test and writes
# to it after pytest closed it; do not echo those handler errors into later tests' stderr.
logging.raiseExceptions = False

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (real command-line processes, each starting its own Prefect
    server) run when asked for: ``SDCFLOW_SLOW_TESTS=1`` or ``-m slow``."""
    if os.environ.get("SDCFLOW_SLOW_TESTS") == "1" or "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="slow real-process test: set SDCFLOW_SLOW_TESTS=1 or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of public benchmark files, ``../shared/data`` beside the repository."""
    if not (SHARED_DATA / "census.csv").is_file():
        pytest.skip(f"benchmark microdata not found at {SHARED_DATA} (../shared/data is absent)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def census(shared_data: Path) -> pd.DataFrame:
    """Census (CASC): 1080 x 13 numeric attributes."""
    return pd.read_csv(shared_data / "census.csv")


@pytest.fixture(scope="session")
def eia(shared_data: Path) -> pd.DataFrame:
    """EIA: the 11 numeric attributes used in the literature (UTILITYID + *REVENUE/*SALES)."""
    frame = pd.read_csv(shared_data / "eia.csv")
    cols = ["UTILITYID"] + [c for c in frame.columns if c.endswith(("REVENUE", "SALES"))]
    return frame[cols]


@pytest.fixture(scope="session")
def prefect_api():
    """One temporary Prefect API for every flow test (starting one takes 10-30 s here)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
