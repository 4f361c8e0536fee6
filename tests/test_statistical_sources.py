"""SPSS, Stata and SAS files as offices have them (issue 43, item 5): read with pyreadstat
(the ``stats`` extra), value labels as the category levels, and the same promises on bad
input as CSV and Parquet: exit 2, one line, nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import yaml
from errorline import cli_error
from survey import EXAMPLE, QIS

from sdcflow.cli.main import main
from sdcflow.errors import InputError, Reason
from sdcflow.warehouse.sources import read_source

pyreadstat = pytest.importorskip("pyreadstat")

REGIONS = {1: "North", 2: "South", 3: "East", 4: "West"}


def _survey(rows: int = 60) -> pd.DataFrame:
    """The example survey with region as SPSS/Stata codes (its labels: ``REGIONS``)."""
    frame = pd.read_csv(EXAMPLE / "data.csv").head(rows)
    codes = {label: code for code, label in REGIONS.items()}
    frame["region"] = frame["region"].map(codes).astype(float)
    assert frame["region"].notna().all()
    return frame.drop(columns=["sector"])


def _spec(tmp: Path, source: str) -> Path:
    spec = {
        "release": "survey",
        "source": source,
        "id_column": "respondent_id",
        "quasi_identifiers": [*QIS, "region"],
        "method": {"name": "mdav", "k": 5},
        "checks": {"k_anonymity": 5},
        "output": "published/",
        "warehouse": "warehouse.duckdb",
    }
    (tmp / "release.yaml").write_text(yaml.safe_dump(spec))
    return tmp / "release.yaml"


def test_value_labels_are_the_category_levels_and_integers_stay_integers(tmp_path):
    frame = pd.DataFrame(
        {"region": [1.0, 2.0, 9.0, None], "n": [1.0, 2.0, 3.0, 4.0], "name": ["a", "", "c", "d"]}
    )
    pyreadstat.write_sav(
        frame, tmp_path / "d.sav", variable_value_labels={"region": {1: "North", 2: "South"}},
        variable_format={"n": "F8.0"},
    )  # fmt: skip
    data = read_source(tmp_path / "d.sav")
    # a code without a label keeps its own text; missing stays missing
    assert data.column("region").to_pylist() == ["North", "South", "9", None]
    assert data.schema.field("n").type == pa.int64()
    assert data.column("name").to_pylist() == ["a", None, "c", "d"]  # SPSS's blank
    stata = pd.DataFrame({"region": [1, 2], "x": [0.5, 1.5]})
    pyreadstat.write_dta(stata, tmp_path / "d.dta", variable_value_labels={"region": REGIONS})
    data = read_source(tmp_path / "d.dta", missing_values=["South"])
    assert data.column("region").to_pylist() == ["North", None]  # a label can be a token
    assert data.column("x").to_pylist() == [0.5, 1.5]


@pytest.mark.flow
@pytest.mark.parametrize("suffix", [".sav", ".dta"])
def test_an_spss_or_stata_file_is_released_with_its_labels(tmp_path, prefect_api, suffix):
    write = pyreadstat.write_sav if suffix == ".sav" else pyreadstat.write_dta
    write(_survey(), tmp_path / f"data{suffix}", variable_value_labels={"region": REGIONS})
    assert main(["release", str(_spec(tmp_path, f"data{suffix}"))]) == 0
    published = tmp_path / "published" / "survey"
    released = pd.read_csv(published / "data.csv")
    assert set(released["region"]) <= set(REGIONS.values())
    assert "respondent_id" not in released
    manifest = json.loads((published / "manifest.json").read_text())
    assert {c["check"]: c["verdict"] for c in manifest["checks"]}["k_anonymity"] == "pass"


@pytest.mark.parametrize("suffix", [".sav", ".dta", ".sas7bdat"])
def test_a_file_that_is_not_what_its_name_says_is_refused_on_one_line(tmp_path, capsys, suffix):
    (tmp_path / f"data{suffix}").write_text("respondent_id,region\n1,North\n")
    spec = _spec(tmp_path, f"data{suffix}")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert cli_error(err)[0] is Reason.SOURCE_FORMAT and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"data{suffix}", spec.name])


def test_without_pyreadstat_the_refusal_names_the_extra(tmp_path, monkeypatch):
    pyreadstat.write_sav(_survey(), tmp_path / "data.sav")
    monkeypatch.setitem(sys.modules, "pyreadstat", None)
    with pytest.raises(InputError, match=r"pip install 'sdcflow\[stats\]'") as e:
        read_source(tmp_path / "data.sav")
    assert e.value.code is Reason.SOURCE_FORMAT
