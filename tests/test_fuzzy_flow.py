"""Editing and masking in one step through the release flow (issue 4, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from errorline import cli_error
from survey import QIS, write_release

from sdcflow.cli.main import main
from sdcflow.errors import Reason

RULES = [
    {"rule": "total_costs == wages + other_costs", "name": "costs_add_up"},
    {"rule": "profit == turnover - total_costs", "name": "profit_identity"},
    {"rule": "wages >= 0", "name": "wages_nonneg"},
    {"rule": "other_costs >= 0", "name": "other_costs_nonneg"},
]

pytestmark = pytest.mark.flow


def _spec(tmp: Path, method: str, rows: int = 400, **extra) -> Path:
    """The survey slice with errors, released by ``method`` (m1 = m2 = 1.1, crisp k = 5)."""
    params = {"k": 5, "m1": 1.1, "m2": 1.1, "restarts": 2, "guarantee": "k_anonymity"}
    return write_release(
        tmp,
        data="data_with_errors.csv",
        rows=rows,
        write_to="d.csv",
        spec_name="s.yaml",
        release="fz",
        edits=RULES,
        method={"name": method, **params},
        seed=3,
        **extra,
    )


def _manifest(tmp: Path) -> dict:
    return json.loads((tmp / "published" / "fz" / "manifest.json").read_text())


def test_constrained_fuzzy_edits_while_masking(tmp_path, prefect_api):
    assert main(["release", str(_spec(tmp_path, "constrained_fuzzy"))]) == 0
    edits = _manifest(tmp_path)["edit_rules"]
    assert sum(edits["raw"].values()) > 0  # the raw slice has real errors
    assert edits["repaired_records"] == 0  # no separate repair step ran
    assert set(edits["masked"].values()) == {0}
    out = pd.read_parquet(tmp_path / "published" / "fz" / "data.parquet")
    assert (out.total_costs - out.wages - out.other_costs).abs().max() < 1e-6
    assert out.groupby(QIS).size().min() >= 5


def test_unconstrained_fuzzy_needs_the_repair_step(tmp_path, prefect_api):
    assert main(["release", str(_spec(tmp_path, "fuzzy"))]) == 0
    edits = _manifest(tmp_path)["edit_rules"]
    assert edits["repaired_records"] > 0 and set(edits["masked"].values()) == {0}


def test_rule_spanning_two_blocks_exits_2_naming_it(tmp_path, capsys):
    """Blocks are microaggregated separately, so a rule across two blocks cannot hold."""
    blocks = [["employees", "turnover", "wages"], ["other_costs", "total_costs", "profit"]]
    spec = _spec(tmp_path, "constrained_fuzzy", rows=100, blocks=blocks, quasi_identifiers=QIS)
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert cli_error(err) == (Reason.RULE_NOT_KEEPABLE, "costs_add_up")
    assert not (tmp_path / "warehouse.duckdb").exists()
    assert not (tmp_path / "published").exists()
