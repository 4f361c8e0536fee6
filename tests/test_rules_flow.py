"""Edit rules in the release flow: a real Prefect API, a real DuckDB file, real GE Data Docs."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from survey import EXAMPLE, QIS, write_release

from sdcflow.cli.main import main
from sdcflow.expectations.rules import parse_rules

RULES = [
    {"rule": "total_costs == wages + other_costs", "name": "costs_add_up"},
    {"rule": "profit == turnover - total_costs", "name": "profit_identity"},
    {"rule": "0 <= employees <= 100000", "name": "employees_range"},
    {"rule": "wages >= 0", "name": "wages_nonneg"},
    {"rule": "other_costs >= 0", "name": "other_costs_nonneg"},
    {"rule": "region in ['North', 'South', 'East', 'West']", "name": "region_code"},
    {"rule": "if employees == 0 then wages == 0", "name": "no_staff_no_wages"},
]

pytestmark = pytest.mark.flow


def make_release(tmp: Path, rows: int = 600, **overrides) -> Path:
    """A spec over a slice of the survey with injected errors; returns the spec path."""
    spec = {
        "edits": RULES,
        "checks": {"k_anonymity": 5, "max_information_loss": 40},
        "seed": 11,
        **overrides,
    }
    return write_release(tmp, data="data_with_errors.csv", rows=rows, **spec)


def raw_violations(frame: pd.DataFrame) -> dict[str, int]:
    """Per-rule violating records, by plain numpy."""
    f = {c: frame[c].to_numpy(float) for c in QIS}
    return {
        "costs_add_up": int(
            (np.abs(f["total_costs"] - f["wages"] - f["other_costs"]) > 1e-8).sum()
        ),
        "profit_identity": int(
            (np.abs(f["profit"] - f["turnover"] + f["total_costs"]) > 1e-8).sum()
        ),
        "employees_range": int(((f["employees"] < 0) | (f["employees"] > 100000)).sum()),
        "wages_nonneg": int((f["wages"] < 0).sum()),
        "other_costs_nonneg": int((f["other_costs"] < 0).sum()),
        "region_code": int((~frame["region"].isin(["North", "South", "East", "West"])).sum()),
        "no_staff_no_wages": int(
            ((np.abs(f["employees"]) <= 1e-8) & (np.abs(f["wages"]) > 1e-8)).sum()
        ),
    }


def audit(tmp: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(tmp / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def read_markdown_artifacts(keys: list[str]) -> dict[str, str]:
    """Latest Markdown artifact by key, from the REST API of the test server."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    body = {"artifacts": {"key": {"any_": keys}}, "sort": "CREATED_DESC", "limit": 20}
    response = httpx.post(f"{PREFECT_API_URL.value()}/artifacts/filter", json=body, timeout=30)
    response.raise_for_status()
    out: dict[str, str] = {}
    for item in response.json():
        out.setdefault(item["key"], item["data"])
    return out


def test_repair_publishes_a_file_satisfying_every_rule(tmp_path, prefect_api):
    spec = make_release(tmp_path)
    raw = pd.read_csv(tmp_path / "data.csv")
    sole = np.flatnonzero(raw["employees"] == 0)[:2]
    raw.loc[sole, "wages"] = [17, 230]  # wages keyed for sole proprietors (and sums broken)
    raw.to_csv(tmp_path / "data.csv", index=False)
    expected = raw_violations(raw)
    assert expected["costs_add_up"] > 0 and expected["wages_nonneg"] > 0
    assert expected["no_staff_no_wages"] == 2

    assert main(["release", str(spec)]) == 0

    published = pd.read_parquet(tmp_path / "published" / "survey" / "data.parquet")
    for rule in parse_rules(RULES):
        assert raw_violations(published)[rule.name] == 0, rule.text
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    edits = manifest["edit_rules"]
    assert edits["raw"] == expected
    assert edits["masked"] == dict.fromkeys(expected, 0)
    assert 0 < edits["repaired_records"] <= sum(expected.values())
    checks = {c["check"]: c for c in manifest["checks"]}
    assert checks["max_edit_violations"]["figure"] == 0

    (run_id,) = audit(tmp_path, "SELECT run_id FROM audit.runs")[0]
    stored = dict(
        audit(
            tmp_path,
            "SELECT rule, count(*) FROM audit.violations WHERE stage = 'raw' GROUP BY rule",
        )
    )
    assert stored == {k: v for k, v in expected.items() if v}
    ids = audit(
        tmp_path,
        "SELECT sdc_row_id FROM audit.violations WHERE rule = 'wages_nonneg' ORDER BY 1",
    )
    assert [i for (i,) in ids] == np.flatnonzero(raw["wages"] < 0).tolist()
    assert audit(tmp_path, "SELECT count(*) FROM audit.violations WHERE stage = 'masked'") == [(0,)]
    edited = audit(tmp_path, f'SELECT count(*) FROM edited."run_{run_id}"')[0][0]
    assert edited == len(raw)

    docs = tmp_path / "reports" / "survey" / run_id / "data-docs"
    assert (docs / "raw" / "index.html").is_file() and (docs / "masked" / "index.html").is_file()
    pages = "".join(p.read_text() for p in (docs / "raw").rglob("*.html"))
    assert "costs_add_up" in pages

    artifacts = read_markdown_artifacts(["survey-edits-raw", "survey-edits-masked"])
    markdown = artifacts["survey-edits-raw"]
    assert f"| costs_add_up | error | {expected['costs_add_up']} | 0 | FAIL |" in markdown
    assert "| region_code | error | 0 | 0 | pass |" in artifacts["survey-edits-masked"]
    bad = raw.loc[raw["wages"] < 0, "wages"].astype(str)
    for value in bad:
        assert value not in markdown and value not in pages


def test_fail_exits_1_with_counts_and_publishes_nothing(tmp_path, prefect_api, capsys):
    spec = make_release(tmp_path, on_violation="fail")
    expected = raw_violations(pd.read_csv(tmp_path / "data.csv"))
    assert main(["release", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nothing was published" in err
    for name, count in expected.items():
        if count:
            assert f"edit_rule:{name} ({count} vs 0)" in err
    assert "region_code" not in err
    assert not (tmp_path / "published").exists()
    assert audit(tmp_path, "SELECT status FROM audit.runs") == [("refused",)]
    assert audit(tmp_path, "SELECT count(*) FROM audit.violations")[0][0] > 0


def test_rule_masking_cannot_keep_blocks_publication(tmp_path, prefect_api, capsys):
    # A set rule on a column released unchanged is violated in the raw file; repair only moves
    # records onto the linear rules, so the masked file still violates it: refused.
    frame = pd.read_csv(EXAMPLE / "data_with_errors.csv").head(200)
    frame.loc[[3, 17], "region"] = "Atlantis"
    # region released unchanged (keep): the keep_k gate refuses it too, as it should
    spec = make_release(tmp_path, rows=200, quasi_identifiers=QIS, keep=["region"])
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "max_edit_violations (2 vs 0)" in err
    assert not (tmp_path / "published").exists()
    rows = audit(
        tmp_path, "SELECT stage, sdc_row_id FROM audit.violations WHERE rule = 'region_code'"
    )
    assert sorted(rows) == [("masked", 3), ("masked", 17), ("raw", 3), ("raw", 17)]


def test_rules_file_is_read_relative_to_the_spec(tmp_path, prefect_api):
    (tmp_path / "rules.yaml").write_text(
        yaml.safe_dump({"rules": [{"rule": "turnover >= 0", "name": "turnover_nonneg"}]})
    )
    spec = make_release(tmp_path, rows=300, rules_file="rules.yaml")
    assert main(["release", str(spec)]) == 0
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    assert list(manifest["edit_rules"]["masked"])[-1] == "turnover_nonneg"


# -- bad rules: exit 2 before any flow run, nothing written ------------------------------------


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        (["total_costs == wages + ) other_costs"], ["unexpected ')'", "^"]),
        (["total_costs == wagez + other_costs"], ["unknown column 'wagez'", "^^^^^", "known"]),
        (["wages >= 5", "wages <= 3"], ["R1, R2 contradict each other"]),
        (["region >= 1"], ["column 'region' is VARCHAR"]),
        (["wages <= respondent_id"], ["ties masked column(s) wages"]),
        ([{"rule": "wages >= 0", "severity": "fatal"}], ["severity must be"]),
    ],
)
def test_bad_rules_exit_2(tmp_path, capsys, edits, expected):
    extra = {"id_column": None, "keep": ["respondent_id"]} if "respondent" in str(edits) else {}
    spec = make_release(tmp_path, rows=50, edits=edits, **extra)
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected:
        assert text in err
    assert not (tmp_path / "warehouse.duckdb").exists()
    assert not (tmp_path / "published").exists()


def test_missing_rules_file_exits_2(tmp_path, capsys):
    spec = make_release(tmp_path, rows=50, rules_file="nope.yaml")
    assert main(["release", str(spec)]) == 2
    assert "rules file" in capsys.readouterr().err
