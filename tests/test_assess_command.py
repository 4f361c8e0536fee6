"""``sdcflow assess``: the raw file's risk from the command line, figures only, exit 2 with one
line for bad input, nothing written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sdcflow.cli.main import main

# sex, region, age band as in tests/test_risk_assessment.py, with a unique name beside them
FRAME = pd.DataFrame(
    {
        "sex": ["F", "F", "F", "M", "M", "M"],
        "region": ["North-Zebra", "North-Zebra", "South", "South", "South", "North-Zebra"],
        "age": ["30-39", "30-39", "30-39", "40-49", "40-49", None],
        "weight": [10.0, 10.0, 5.0, 2.0, 2.0, 1.0],
    }
)


def _run(tmp_path, capsys, *args):
    FRAME.to_csv(tmp_path / "data.csv", index=False)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["assess", str(tmp_path / "data.csv"), *args])
    out, err = capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    return code, out, err


def test_the_figures_are_those_counted_by_hand_and_no_value_is_printed(tmp_path, capsys):
    code, out, err = _run(tmp_path, capsys, "--keys", "sex", "region", "age", "--k", "2", "3")
    assert code == 0, err
    # classes {0,1}, {2}, {3,4}, {5}: 2 uniques, all 6 below 3; r = 1/f sums to 4
    assert "k = 2: 2 (33.3 %)" in out and "k = 3: 6 (100.0 %)" in out
    assert "sample uniques: 2" in out
    assert "expected re-identifications 4 " in out
    for value in ("North-Zebra", "South", "30-39", "40-49"):
        assert value not in out


def test_json_gives_the_same_figures(tmp_path, capsys):
    code, out, _ = _run(
        tmp_path, capsys, "--keys", "sex", "region", "age", "--weight", "weight", "--json"
    )
    assert code == 0
    body = json.loads(out)
    assert body["records"] == 6 and body["sample_uniques"] == 2
    assert body["records_below_k"]["2"] == 2
    assert body["individual_risk_max"] == pytest.approx(1.0)
    assert body["key_sets"][0] == {"keys": ["age"], "records": 1}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--keys", "sex", "income"], "no column 'income'"),
        (["--keys", "sex", "--weight", "region"], "weight column 'region' is not numeric"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, words):
    code, _, err = _run(tmp_path, capsys, *args)
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1


def test_a_k_below_2_is_an_argument_error(tmp_path, capsys):
    FRAME.to_csv(tmp_path / "data.csv", index=False)
    with pytest.raises(SystemExit) as exit_:
        main(["assess", str(tmp_path / "data.csv"), "--keys", "sex", "--k", "1"])
    assert exit_.value.code == 2
    assert "k must be a whole number >= 2" in capsys.readouterr().err
