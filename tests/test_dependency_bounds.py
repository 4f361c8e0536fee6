"""The bounds in pyproject.toml keep out the versions known to break a fresh install (issue 13:
"today and next month", where pip resolves the newest versions the bounds allow)."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def _requirement(name: str) -> Requirement:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (req,) = [r for r in map(Requirement, project["dependencies"]) if r.name == name]
    return req


def test_pandas_4_is_excluded_while_duckdb_converts_timestamps_with_drop_inplace():
    """duckdb 2.0's ``.df()`` calls ``DataFrame.drop(inplace=...)`` on every TIMESTAMPTZ
    column (``audit.runs``: ``Warehouse.runs``, ``sdcflow runs``); pandas 3.1 deprecates that
    keyword with a ``Pandas4Warning``, i.e. pandas 4 removes it."""
    pandas4_warning = getattr(pd.errors, "Pandas4Warning", None)
    if pandas4_warning is None:
        pytest.skip(f"pandas {pd.__version__} has no Pandas4Warning (before 3.0)")
    con = duckdb.connect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = con.execute("SELECT TIMESTAMPTZ '2026-11-23 00:00:00+00' AS started_at").df()
    assert len(frame) == 1
    if not any(issubclass(w.category, pandas4_warning) for w in caught):
        pytest.skip(f"duckdb {duckdb.__version__} no longer uses an API pandas 4 removes")
    pandas = _requirement("pandas")
    assert not pandas.specifier.contains("4.0.0"), str(pandas)
    assert pandas.specifier.contains(pd.__version__), str(pandas)
