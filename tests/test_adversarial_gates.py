"""The edit-rule gate cannot be bypassed; a default gate cannot be loosened silently (issue
#11, defect 5)."""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from errorline import cli_error
from survey import EXAMPLE, write_release

from sdcflow.cli.main import main
from sdcflow.errors import Reason
from sdcflow.gates import GateContext, run_gates
from sdcflow.methods import MdavParams
from sdcflow.methods.blocks import mask_quasi_identifiers
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec

COLS = ["a", "b", "c"]


def _outcomes(thresholds=None, **context):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    params = MdavParams(k=5)
    result = mask_quasi_identifiers(X, COLS, params, rng)
    ctx = GateContext(X, COLS, result, params, **context)
    return {o.key: o for o in run_gates(ctx, thresholds or {})}


def test_a_looser_threshold_does_not_loosen_a_default_gate():
    out = _outcomes({"k_anonymity": 2, "max_edit_violations": 1000}, edit_violations={"R1": 10})
    assert out["k_anonymity"].threshold == 5 and "looser" in out["k_anonymity"].note
    assert out["max_edit_violations"].threshold == 0 and not out["max_edit_violations"].passed
    tighter = _outcomes({"k_anonymity": 6})
    assert tighter["k_anonymity"].threshold == 6 and not tighter["k_anonymity"].note


def test_only_an_explicit_acceptance_loosens_a_default_gate():
    out = _outcomes(
        {"max_edit_violations": 1000},
        edit_violations={"R1": 10},
        accept_looser=frozenset({"max_edit_violations"}),
    )
    gate = out["max_edit_violations"]
    assert gate.threshold == 1000 and gate.passed and "accepted" in gate.note
    assert gate.as_dict()["note"] == gate.note  # what the manifest and audit.checks record


def test_an_error_rule_not_checked_on_the_release_is_not_a_pass():
    out = _outcomes(unchecked_rules=("R3",))
    gate = out["max_edit_violations"]
    assert not gate.checked and not gate.passed and math.isnan(gate.figure)
    assert gate.verdict == "FAIL (not checked)" and gate.as_dict()["figure"] is None
    mixed = _outcomes(edit_violations={"R1": 0}, unchecked_rules=("R3",))
    assert not mixed["max_edit_violations"].passed  # one checked rule does not cover R3
    accepted = _outcomes(unchecked_rules=("R3",), accepted_unchecked=frozenset({"R3"}))
    gate = accepted["max_edit_violations"]
    assert gate.passed and not gate.checked and gate.verdict == "not checked (accepted)"


def _unreleased_rule_spec(tmp_path, **overrides):
    frame = pd.read_csv(EXAMPLE / "data.csv").head(200)
    spec = write_release(
        tmp_path,
        rows=200,
        **{
            "edits": ["turnover >= 0", {"rule": "sector in ['A', 'B']", "name": "sector_code"}],
            "seed": 5,
            **overrides,
        },
    )
    frame.to_csv(tmp_path / "data.csv", index=False)
    return spec


def test_a_rule_on_a_column_not_released_is_refused_before_the_run(tmp_path, capsys):
    spec = _unreleased_rule_spec(tmp_path)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.RULE_NOT_CHECKABLE, "sector_code")
    assert not (tmp_path / "warehouse.duckdb").exists()
    accepted = _unreleased_rule_spec(tmp_path, accept={"unchecked_rules": ["sector_code"]})
    assert plan_release(load_spec(accepted)).rules  # accepted explicitly: the run may go on
    unknown = _unreleased_rule_spec(tmp_path, accept={"unchecked_rules": ["nope"]})
    assert main(["check", str(unknown)]) == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.RULE_OPTION


def test_a_rule_on_the_published_weight_column_is_checkable(tmp_path):
    # The weight column is published (unchanged), yet a rule on it was refused as "not
    # released", with a hint to move it to keep or sensitive, which the spec refuses for it.
    spec = write_release(
        tmp_path, rows=200, edits=["turnover >= 0", "weight > 0"], weight_column="weight"
    )
    frame = pd.read_csv(EXAMPLE / "data.csv").head(200).assign(weight=2.5)
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert len(plan_release(load_spec(spec)).rules) == 2


@pytest.mark.flow
def test_max_edit_violations_1000_does_not_publish_violating_records(tmp_path, prefect_api, capsys):
    frame = pd.read_csv(EXAMPLE / "data.csv").head(200)
    frame.loc[:9, "region"] = "Atlantis"  # ten records violate the set rule
    spec = write_release(
        tmp_path,
        rows=200,
        edits=["region in ['North', 'South', 'East', 'West']"],
        checks={"max_edit_violations": 1000},
        seed=5,
    )
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "max_edit_violations (10 vs 0)" in err
    assert not (tmp_path / "published").exists()


@pytest.mark.flow
def test_an_accepted_unchecked_rule_says_not_checked_and_the_manifest_records_it(
    tmp_path, prefect_api, capsys
):
    spec = _unreleased_rule_spec(
        tmp_path,
        edits=[{"rule": "sector in ['A', 'B', 'C', 'D', 'E']", "name": "sector_code"}],
        accept={"unchecked_rules": ["sector_code"]},
    )
    assert main(["release", str(spec)]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "max_edit_violations" in x]
    assert "not checked" in line and " 0 <=" not in line
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    (gate,) = [c for c in manifest["checks"] if c["check"] == "max_edit_violations"]
    assert gate["figure"] is None and gate["verdict"] == "not checked (accepted)"
    assert manifest["spec"]["accept"]["unchecked_rules"] == ["sector_code"]
    assert manifest["edit_rules"]["not_checked_after_masking"] == ["sector_code"]
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        verdict = con.execute(
            "SELECT verdict FROM audit.checks WHERE check_name = 'max_edit_violations'"
        ).fetchone()
    assert verdict == ("not checked (accepted)",)


@pytest.mark.flow
def test_a_gate_not_checked_and_not_accepted_reads_as_the_failure_it_is(
    tmp_path, prefect_api, capsys
):
    # the table said "not checked" and the refusal "(nan vs 0)" for a run that exits 1:
    # the p % rule asked of a signed key alone (profit), which it cannot judge
    spec = write_release(
        tmp_path,
        rows=200,
        quasi_identifiers=["profit", "region"],
        method={"name": "mdav", "k": 5},
        checks={"k_anonymity": 5, "max_p_dominated_groups": 0},
        seed=5,
    )
    assert main(["release", str(spec)]) == 1
    printed = capsys.readouterr()
    (line,) = [x for x in printed.out.splitlines() if "max_p_dominated_groups" in x]
    assert "FAIL (not checked)" in line
    assert "max_p_dominated_groups (not checked)" in printed.err
    assert "(nan vs" not in printed.err
    assert not (tmp_path / "published").exists()


@pytest.mark.flow
def test_the_console_says_which_threshold_applied(tmp_path, prefect_api, capsys):
    spec = write_release(tmp_path, rows=200, checks={"k_anonymity": 2}, seed=5)
    assert main(["release", str(spec)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "k_anonymity" in x]
    assert " >= 5 " in line and "looser" in line  # the promised k = 5 applied, and it says so
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    (gate,) = [c for c in manifest["checks"] if c["check"] == "k_anonymity"]
    assert gate["threshold"] == 5 and "looser" in gate["note"]
