"""``sdcflow.measures.individual_risk`` and ``global_risk``: by hand (f = 1, 2, 3, weights, a
missing value), and against the manifest of a release the command line publishes."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow import InputError, Reason
from sdcflow import measures as M
from sdcflow import measures as _M


@pytest.fixture
def released() -> pd.DataFrame:
    """Six released records under a filtered-looking index: one sample unique (f = 1), one
    pair (f = 2), and two records with a third whose region is missing (it matches both:
    f = 3); a text key, a nullable integer key and sampling weights."""
    return pd.DataFrame(
        {
            "region": ["N", "S", "S", "E", "E", None],
            "age": pd.array([30, 40, 40, 50, 50, 50], dtype="Int64"),
            "w": [10.0, 5.0, 15.0, 4.0, 6.0, 8.0],
        },
        index=[17, 3, 11, 5, 8, 2],
    )


class _Loose:
    """sdcflow.measures' risk functions under sdcMicro's convention."""

    @staticmethod
    def individual_risk(*args, **kwargs):
        return _M.individual_risk(*args, convention="missing_matches_any", **kwargs)

    @staticmethod
    def global_risk(*args, **kwargs):
        return _M.global_risk(*args, convention="missing_matches_any", **kwargs)


def by_hand(f: int, F: float) -> float:
    """sdcMicro's individual risk (Benedetti-Franconi approximation) as written, p = f/F."""
    p = f / F
    if f == 1:
        return p / (1 - p) * math.log(1 / p)
    if f == 2:
        return p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    return p / (f - (1 - p))


def test_individual_risk_counts_identical_rows_by_hand(released):
    """The record whose region is blank is alone in its class (a blank is a value of its
    own): f = 1, F = 8; the two (E, 50) records f = 2, F = 10."""
    expected = [by_hand(1, 10), by_hand(2, 20), by_hand(2, 20), by_hand(2, 10), by_hand(2, 10)]
    expected.append(by_hand(1, 8))
    risk = M.individual_risk(released, ["region", "age"], "w")
    np.testing.assert_allclose(risk.to_numpy(), expected, rtol=1e-12)
    total = M.global_risk(released, ["region", "age"])
    assert total.expected_reidentifications == 4.0  # 1 + 4 x 1/2 + 1


def test_individual_and_global_risk_by_hand(released):
    """sdcMicro's count, for comparison: the blank region matches both (E, 50) records."""
    expected = [by_hand(1, 10), by_hand(2, 20), by_hand(2, 20)] + [by_hand(3, 18)] * 3
    M = _Loose
    risk = M.individual_risk(released, ["region", "age"], "w")
    assert risk.index.equals(released.index) and risk.name == "individual_risk"
    np.testing.assert_allclose(risk.to_numpy(), expected, rtol=1e-12)
    total = M.global_risk(released, ["region", "age"], "w")
    assert total.records == 6
    assert total.expected_reidentifications == pytest.approx(sum(expected), rel=1e-12)
    assert total.percent == pytest.approx(100 * sum(expected) / 6, rel=1e-12)
    # without weights the file is the population: 1/f
    np.testing.assert_allclose(
        M.individual_risk(released, ["region", "age"]), [1, 1 / 2, 1 / 2] + [1 / 3] * 3
    )
    assert M.global_risk(released, ["region", "age"]).expected_reidentifications == 3.0  # fsum
    # weights as an array in row order, or as a Series paired by label, give the same figures
    by_label = released["w"].sample(frac=1, random_state=0)
    for weights in (released["w"].to_numpy(), by_label, released["w"].astype("Int64")):
        pd.testing.assert_series_equal(
            M.individual_risk(released, ["region", "age"], weights), risk
        )
    # a float key equal to the integers, and pd.NA / NaN for the missing value: the same
    as_float = released.astype({"age": float, "region": object})
    as_float.loc[2, "region"] = pd.NA
    pd.testing.assert_series_equal(M.individual_risk(as_float, ["age", "region"], "w"), risk)


def test_bad_keys_and_weights_are_refused_by_field(released):
    keys = ["region", "age"]
    cases = [
        (dict(keys=["region", "town"]), Reason.COLUMN_UNKNOWN, "town"),
        (dict(keys=[]), Reason.PARAMETER, "keys"),
        (dict(keys=keys, weights="weight"), Reason.COLUMN_UNKNOWN, "weight"),
        (dict(keys=keys, weights=released["w"].where(released["w"] > 5)), Reason.WEIGHTS, None),
        (dict(keys=keys, weights=-released["w"]), Reason.WEIGHTS, None),
        (dict(keys=keys, weights=np.ones(5)), Reason.WEIGHTS, "weights"),
        (dict(keys=keys, weights="region"), Reason.WEIGHTS, "region"),
        (dict(keys=keys, weights=released["w"].replace(10.0, np.inf)), Reason.WEIGHTS, None),
    ]
    for kwargs, code, field in cases:
        for measure in (M.individual_risk, M.global_risk):
            with pytest.raises(InputError) as e:
                measure(released, **kwargs)
            assert e.value.code is code and (field is None or e.value.field == field)
    with pytest.raises(InputError) as e:
        M.global_risk(released.iloc[:0], keys)
    assert e.value.code is Reason.TOO_FEW_RECORDS


def people(n: int = 90, seed: int = 4) -> pd.DataFrame:
    """Integer, text and float keys, `?` for a missing region, sampling weights with decimals
    (whose sums, as floats, depend on the order they are added in)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "person": np.arange(n),
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(["North", "South", "East"], n),
            "income": rng.normal(3000, 800, n).round(1),
            "weight": rng.uniform(20, 300, n).round(3),
        }
    )
    frame.loc[rng.random(n) < 0.1, "region"] = "?"
    return frame


@pytest.mark.flow
def test_the_functions_reproduce_the_manifest_of_a_weighted_release(tmp_path, prefect_api):
    from sdcflow.cli.main import main

    people().to_csv(tmp_path / "people.csv", index=False)
    keys = ["age", "sex", "region", "income"]
    spec = {
        "release": "people",
        "source": "people.csv",
        "id_column": "person",
        "quasi_identifiers": keys,
        "missing_values": ["?"],
        "weight_column": "weight",
        "method": {"name": "mdav", "k": 3},
        "checks": {"k_anonymity": 3, "max_individual_risk": 1.0, "max_global_risk": 100},
        "seed": 5,
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0
    out = tmp_path / "published" / "people"
    manifest = json.loads((out / "manifest.json").read_text())
    figure = {c["check"]: c["figure"] for c in manifest["checks"]}
    after = manifest["method_details"]["disclosure"]["risk"]["after"]
    assert after["records"] == 90
    for published in (pd.read_parquet(out / "data.parquet"), pd.read_csv(out / "data.csv")):
        assert published["region"].isna().any()  # missing values released as missing
        assert pd.api.types.is_integer_dtype(published["age"])
        risk = M.individual_risk(published, keys, "weight")
        assert risk.max() == figure["max_individual_risk"]
        total = M.global_risk(published, keys, published["weight"])
        assert total.percent == figure["max_global_risk"]
        assert total.expected_reidentifications == after["expected_reidentifications"]


def test_the_risks_do_not_depend_on_the_order_of_the_records():
    """The sums of weights (F) and numpy's pairwise sum of the individual risks depended on
    the order of the records, so the figures recomputed on the published file (its rows
    shuffled) could differ from the manifest's in their last digit (every shuffle here, for
    some record's risk); F is now summed exactly and ER correctly rounded."""
    frame = people(400, seed=1)[["age", "sex", "region", "weight"]]
    frame["age"] //= 10
    frame["region"] = frame["region"].replace("?", None)  # missing: matches any region
    keys = ["age", "sex", "region"]
    first = M.global_risk(frame, keys, "weight")
    risk = M.individual_risk(frame, keys, "weight")
    assert first.expected_reidentifications == math.fsum(risk)
    rng = np.random.default_rng(0)
    for _ in range(20):
        shuffled = frame.iloc[rng.permutation(len(frame))]
        assert M.global_risk(shuffled, keys, "weight") == first
        pd.testing.assert_series_equal(
            M.individual_risk(shuffled, keys, "weight"), risk.loc[shuffled.index]
        )
