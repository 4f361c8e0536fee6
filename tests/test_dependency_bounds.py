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


def test_jquery_is_capped_below_the_major_bootstrap_4_refuses():
    """Data Docs load Bootstrap 4's JS bundle with jQuery from XStatic (``make_offline``);
    the bundle throws at load on a jQuery major at or above its ``maxMajor`` (4), so no
    collapsible or tooltip works. jQuery 4 is out; its XStatic package is the next release."""
    import importlib.resources
    import re

    bundle = importlib.resources.files("xstatic.pkg.bootstrap") / "data/js/bootstrap.bundle.js"
    (max_major,) = re.findall(r"\bmaxMajor = (\d+);", bundle.read_text(encoding="utf-8"))
    jquery = _requirement("XStatic-jQuery")
    assert not jquery.specifier.contains(f"{max_major}.0.0.0"), str(jquery)
    assert jquery.specifier.contains("3.7.1.1"), str(jquery)
