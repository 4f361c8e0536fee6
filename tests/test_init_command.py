"""``sdcflow init``: a spec drafted from the file that ``sdcflow check`` runs as it is; it
never writes over a file."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from survey import EXAMPLE

from sdcflow.cli.main import main


def test_the_example_survey_gives_a_spec_check_runs_and_passes(tmp_path, prefect_api, capsys):
    pd.read_csv(EXAMPLE / "data.csv").to_csv(tmp_path / "data.csv", index=False)
    assert main(["init", str(tmp_path / "data.csv")]) == 0
    spec = yaml.safe_load((tmp_path / "release.yaml").read_text())
    assert spec["id_column"] == "respondent_id"
    assert "turnover" in spec["quasi_identifiers"] and "region" in spec["quasi_identifiers"]
    # turnover, wages... are magnitudes: groups where no firm dominates (the p % rule gate)
    assert spec["method"] == {"name": "mdav", "k": 5, "dominance": True}
    capsys.readouterr()
    assert main(["check", str(tmp_path / "release.yaml")]) == 0
    assert not (tmp_path / "published").exists()


def test_tokens_codes_weights_and_identifying_text_are_recognised(tmp_path, prefect_api):
    n = 40
    frame = pd.DataFrame(
        {
            "person": [f"P{i:03d}" for i in range(n)],  # a value per record: the id
            "name": [f"name {i}" for i in range(n)],  # free text, identifying: left out
            "postcode": [f"{i % 4:04d}" for i in range(n)],  # codes written as numbers
            "sex": ["F", "M", "?", "F"] * (n // 4),  # "?" for missing
            "weight": [10.0 + i for i in range(n)],
        }
    )
    frame.to_csv(tmp_path / "people.csv", index=False)
    assert main(["init", str(tmp_path / "people.csv"), "-o", str(tmp_path / "s.yaml")]) == 0
    spec = yaml.safe_load((tmp_path / "s.yaml").read_text())
    assert spec["id_column"] == "person"
    assert spec["missing_values"] == ["?"]
    assert spec["weight_column"] == "weight"
    assert {"name": "postcode", "type": "nominal"} in spec["quasi_identifiers"]
    assert "name" not in spec["quasi_identifiers"]
    assert spec["method"]["name"] == "local_suppression"
    assert main(["check", str(tmp_path / "s.yaml")]) in (0, 1)  # it runs: no input error


def test_an_existing_spec_is_never_written_over(tmp_path, capsys):
    pd.read_csv(EXAMPLE / "data.csv").head(50).to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "release.yaml").write_text("# mine\n")
    assert main(["init", str(tmp_path / "data.csv")]) == 2
    err = capsys.readouterr().err
    assert "never writes over a file" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "release.yaml").read_text() == "# mine\n"


@pytest.mark.parametrize("name", ["missing.csv"])
def test_a_missing_source_is_one_line_and_exit_2(tmp_path, capsys, name):
    assert main(["init", str(tmp_path / name)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "release.yaml").exists()
