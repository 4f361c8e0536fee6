"""Global recoding: bins, maps and hierarchies against hand figures; unknown levels refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from errorline import cli_error

from sdcflow.cli.main import main
from sdcflow.errors import InputError, Reason
from sdcflow.methods.recoding import Recoding, load_hierarchy, recode
from sdcflow.spec.schema import RecodeSpec


def test_bins_by_hand():
    ages = pd.Series([17, 18, 40, 64, 65, 90, None])
    done = recode("age", ages, Recoding("bins", edges=(0, 18, 65, np.inf)))
    # by default (a, b] as sdcMicro's globalRecode (R's cut), the first [a, b]; the missing
    # value stays missing
    assert done.values.tolist() == [
        "[0, 18]",
        "[0, 18]",
        "(18, 65]",
        "(18, 65]",
        "(18, 65]",
        "(65, inf]",
        None,
    ]
    assert done.order == ["[0, 18]", "(18, 65]", "(65, inf]"]
    assert done.changed == 6


def test_bins_closed_left_by_hand():
    ages = pd.Series([17, 18, 40, 64, 65, 90, None])
    done = recode("age", ages, Recoding("bins", edges=(0, 18, 65, np.inf), closed="left"))
    # [a, b), the last [a, b]
    assert done.values.tolist() == [
        "[0, 18)",
        "[18, 65)",
        "[18, 65)",
        "[18, 65)",
        "[65, inf]",
        "[65, inf]",
        None,
    ]
    assert done.order == ["[0, 18)", "[18, 65)", "[65, inf]"]


@pytest.mark.parametrize(
    ("closed", "expected"), [("right", ["lo", "lo", "hi"]), ("left", ["lo", "hi", "hi"])]
)
def test_bins_with_labels_and_both_outer_edges_inside(closed, expected):
    rule = Recoding("bins", (0, 5, 10), ("lo", "hi"), closed=closed)
    # 0 and 10 are in the bins whichever end is closed: the outer edges are closed both ways
    assert recode("x", pd.Series([0.0, 5.0, 10.0]), rule).values.tolist() == expected


def test_bins_agree_with_pandas_cut_include_lowest():
    rng = np.random.default_rng(0)
    x = pd.Series(rng.integers(0, 50, 500).astype(float))
    edges = (0.0, 5.0, 12.0, 30.0, 50.0)
    ours = recode("x", x, Recoding("bins", edges))
    cut = pd.cut(x, list(edges), include_lowest=True)
    counts = ours.values.value_counts().reindex(ours.order, fill_value=0)
    assert counts.tolist() == cut.value_counts().sort_index().tolist()


@pytest.mark.data
def test_adult_age_bins_hold_what_sdcmicro_globalrecode_holds(shared_data):
    # With breaks 15, 20, ..., sdcMicro's globalRecode (R's cut: (a, b]) puts 2,410 Adult
    # records in the first bin; [a, b) puts 1,657 there (ages 17-19).
    age = pd.read_csv(shared_data / "adult.csv", usecols=["age"])["age"]
    edges = (*(float(e) for e in range(15, 95, 5)), np.inf)
    first = {
        closed: int((recode("age", age, Recoding("bins", edges, closed=closed)).values
                     == ("[15, 20]" if closed == "right" else "[15, 20)")).sum())
        for closed in ("right", "left")
    }  # fmt: skip
    assert first == {"right": 2410, "left": 1657}


@pytest.mark.parametrize("closed", ["right", "left"])
def test_values_outside_the_bins_are_refused(closed):
    # never dropped (as R's cut makes them NA): a missing value would match any value
    with pytest.raises(InputError) as e:
        recode("age", pd.Series([-1, 5, 200, 300]), Recoding("bins", (0, 100), closed=closed))
    assert (e.value.code, e.value.field) == (Reason.RECODING, "recode.age")
    assert "3 value(s) of age" in str(e.value) and "200" not in str(e.value)
    assert ".inf" in str(e.value)


def test_closed_is_a_field_of_bins_only():
    RecodeSpec(bins=[0, 1], closed="left")
    assert RecodeSpec(bins=[0, 1]).closed == "right"
    for bad in ({"map": {"a": "b"}, "closed": "left"}, {"bins": [0, 1], "closed": "both"}):
        with pytest.raises(ValueError):
            RecodeSpec(**bad)


def test_map_by_hand_and_unknown_level():
    col = pd.Series(["Married-civ-spouse", "Divorced", None, "Never-married"])
    rule = Recoding("map", mapping={"Married-civ-spouse": "Married", "Divorced": "Single"})
    done = recode("marital", col, rule)
    assert done.values.tolist() == ["Married", "Single", None, "Never-married"]
    assert done.changed == 2
    with pytest.raises(InputError) as e:
        recode("marital", col, Recoding("map", mapping={"Widowed": "Single"}))
    assert e.value.code == Reason.RECODING and "Widowed" in str(e.value)


def test_hierarchy_from_a_file(tmp_path):
    path = tmp_path / "country.csv"
    path.write_text(
        "Canada;North-America;America\nMexico;North-America;America\nPeru;South-America;America\n"
    )
    table = load_hierarchy(path)
    col = pd.Series(["Canada", "Peru", "Mexico", None])
    one = recode("c", col, Recoding("hierarchy", hierarchy=table, level=1))
    two = recode("c", col, Recoding("hierarchy", hierarchy=table, level=2))
    assert one.values.tolist() == ["North-America", "South-America", "North-America", None]
    assert two.values.tolist() == ["America", "America", "America", None]
    # a level of the column the hierarchy lacks is refused, without naming the value
    with pytest.raises(InputError) as e:
        recode("c", pd.Series(["Canada", "Chile"]), Recoding("hierarchy", hierarchy=table))
    assert e.value.code == Reason.RECODING and "Chile" not in str(e.value)
    with pytest.raises(InputError) as e:
        recode("c", col, Recoding("hierarchy", hierarchy=table, level=3))
    assert e.value.code == Reason.SPEC_FIELD


@pytest.mark.parametrize("closed", [None, "left"])
def test_a_spec_whose_bins_leave_values_out_is_refused_in_one_line(tmp_path, capsys, closed):
    rows = ["age,sex"] + [f"{17 + i % 60},{'FM'[i % 2]}" for i in range(120)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    bins = {"bins": [20, 40, 65], **({"closed": closed} if closed else {})}
    spec = {"release": "r", "source": "data.csv", "quasi_identifiers": ["age", "sex"],
            "recode": {"age": bins}, "method": {"name": "local_suppression", "k": 3}}  # fmt: skip
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "release.yaml")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert cli_error(err) == (Reason.RECODING, "recode.age")
    assert "value(s) of age" in err and ".inf" in err


@pytest.mark.parametrize(
    ("edges", "labels"),
    [
        ((0, 1234567, np.inf), ["[0, 1234567]", "(1234567, inf]"]),
        ((-np.inf, 0.1, 1e20), ["[-inf, 0.1]", "(0.1, 1e+20]"]),
        ((0.5, 2.25, 1234561, 1234562), ["[0.5, 2.25]", "(2.25, 1234561]", "(1234561, 1234562]"]),
    ],
)
def test_bin_labels_state_the_edges_exactly(edges, labels):
    # f"{x:g}" kept 6 significant digits: 1234567 was labelled 1.23457e+06
    values = pd.Series([e for e in edges[1:] if np.isfinite(e)], dtype=float)
    done = recode("x", values, Recoding("bins", edges=edges))
    assert done.order == labels


def test_bins_a_unit_apart_in_the_millions_are_not_refused_as_alike():
    # their labels were all (1.23456e+06, 1.23456e+06] and the spec refused: "labels must differ"
    edges = (0, 1234561, 1234562, 1234563, np.inf)
    done = recode("x", pd.Series([1234562.0, 1234563.0]), Recoding("bins", edges=edges))
    assert done.values.tolist() == ["(1234561, 1234562]", "(1234562, 1234563]"]


@pytest.mark.flow
def test_a_release_with_infinite_edges_publishes_a_strict_json_manifest(
    tmp_path, capsys, prefect_api
):
    rows = ["age,sex,income"] + [f"{17 + i % 60},{'FM'[i % 2]},{1000 + i}" for i in range(120)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = {"release": "r", "source": "data.csv", "quasi_identifiers": ["age", "sex"],
            "sensitive": ["income"], "recode": {"age": {"bins": [-np.inf, 40, 1234567, np.inf]}},
            "method": {"name": "local_suppression", "k": 3}}  # fmt: skip
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0, capsys.readouterr().err
    text = (tmp_path / "published" / "r" / "manifest.json").read_text()

    def refuse(word):
        raise AssertionError(f"manifest.json holds {word}, which is not JSON")

    manifest = json.loads(text, parse_constant=refuse)  # NaN, Infinity, -Infinity
    assert '"-inf"' in text and '"inf"' in text and "1234567" in text
    assert "Infinity" not in text and "NaN" not in text
    labels = set(pd.read_parquet(tmp_path / "published" / "r" / "data.parquet")["age"].dropna())
    assert labels <= {"[-inf, 40]", "(40, 1234567]", "(1234567, inf]"}
    assert manifest["rows"] == 120
