"""Steps a spec declares before its method (issue 44, item 1): top and bottom coding of a
numeric key in ``recode:``, applied before microaggregation in the pipeline and in the
working object with one implementation, counted in the manifest."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from survey import write_release

import sdcflow
from sdcflow.errors import InputError
from sdcflow.methods.recoding import Recoding, recode
from sdcflow.spec.schema import RecodeSpec

SEED = 24681357

# sdcMicro 5.8.1, by hand and by R:
#   x <- c(5, 10, 10.5, 250, NA, 300, 1)
#   topBotCoding(x, value = 10, replacement = 10, kind = "top")    # 5 10 10 10 NA 10 1
#   topBotCoding(x, value = 5, replacement = 4, kind = "bottom")   # 5 10 10.5 250 NA 300 4
X = pd.Series([5, 10, 10.5, 250, None, 300, 1], dtype="float64")


def test_top_coding_replaces_values_above_the_threshold_as_sdcmicro():
    done = recode("x", X, Recoding("top_bottom", top=10, top_value=10))
    np.testing.assert_array_equal(done.values, [5, 10, 10, 10, np.nan, 10, 1])
    assert done.coded == {"top_coded": 3} and done.changed == 3  # 10 itself stays
    assert done.order is None  # the key stays numeric


def test_bottom_coding_replaces_values_below_the_threshold_as_sdcmicro():
    done = recode("x", X, Recoding("top_bottom", bottom=5, bottom_value=4))
    np.testing.assert_array_equal(done.values, [5, 10, 10.5, 250, np.nan, 300, 4])
    assert done.coded == {"bottom_coded": 1}


def test_both_sides_default_to_the_thresholds():
    done = recode("x", X, Recoding("top_bottom", top=100, bottom=5))
    np.testing.assert_array_equal(done.values, [5, 10, 10.5, 100, np.nan, 100, 5])
    assert done.coded == {"top_coded": 2, "bottom_coded": 1} and done.changed == 3


@pytest.mark.parametrize(
    "block, named",
    [
        ({"top_value": 5}, "give `top` too"),
        ({"top": 5, "bottom": 10}, "swap them"),
        ({"top": 5, "bins": [0, 10]}, "exactly one of"),
        ({"bottom": float("inf")}, "finite"),
    ],
)
def test_spec_blocks_that_make_no_sense_are_refused_with_the_fix(block, named):
    with pytest.raises(ValueError, match=named):
        RecodeSpec.model_validate(block)


def test_top_coding_a_categorical_key_is_refused(tmp_path):
    spec = write_release(
        tmp_path,
        rows=40,
        quasi_identifiers=["turnover", "region"],
        method={"name": "mdav", "k": 3},
        recode={"region": {"top": 10}},
    )
    with pytest.raises(InputError, match="top_bottom apply to numeric keys"):
        sdcflow.release(spec, publish=False)


def _release(tmp_path, spec_path):
    outcome = sdcflow.release(spec_path)
    assert outcome.status == "published", outcome.message
    manifest = json.loads((outcome.published / "manifest.json").read_text())
    report = outcome.report.read_text()  # the method's figures, flattened, as the manifest's
    for name in manifest["method_details"].get("recoding", {}):
        assert f"recoding.{name}.records_changed" in report
    for name in manifest["method_details"].get("pram", {}).get("columns", []):
        assert f"pram.values_changed.{name}" in report
    return pd.read_csv(outcome.published / "data.csv"), manifest


def test_top_coding_runs_before_microaggregation_in_the_flow_and_the_working_object(
    tmp_path, prefect_api
):
    keys = ["employees", "turnover"]
    coding = {"top": 5000, "bottom": 200, "bottom_value": 100}
    spec = write_release(
        tmp_path,
        rows=200,
        quasi_identifiers=keys,
        method={"name": "mdav", "k": 3},
        recode={"turnover": coding},
        seed=SEED,
    )
    original = pd.read_csv(tmp_path / "data.csv")
    above = int((original["turnover"] > 5000).sum())
    below = int((original["turnover"] < 200).sum())
    assert above and below  # the slice has both tails
    released, manifest = _release(tmp_path, spec)
    coded = manifest["method_details"]["recoding"]["turnover"]
    assert coded == {
        "kind": "top_bottom",
        "records_changed": above + below,
        "top_coded": above,
        "bottom_coded": below,
    }
    assert manifest["spec"]["recode"]["turnover"]["top"] == 5000  # public, in the spec
    # MDAV averaged the coded values: no released turnover beyond the codes
    assert released["turnover"].max() <= 5000 and released["turnover"].min() >= 100
    # the working object, with the same step, releases the same keys (the published file's
    # rows are in another order) and the same figures
    frame = sdcflow.SdcFrame(original, keys=keys, random_state=SEED)
    frame.top_code("turnover", 5000).bottom_code("turnover", 200, 100).mask("mdav", k=3)
    assert frame.report()["method_details"]["recoding"]["turnover"] == coded
    np.testing.assert_array_equal(_rows(frame.released[keys]), _rows(released[keys]))
    gates = {g["check"]: g["figure"] for g in manifest["checks"]}
    assert gates["k_anonymity"] == frame.risk()["k_anonymity"] >= 3
    # and its spec reproduces the release
    back = frame.to_spec(
        release="again",
        source="data.csv",
        id_column="respondent_id",
        checks={"max_information_loss": 100},
    )
    assert back["recode"] == {"turnover": {"top": 5000.0, "bottom": 200.0, "bottom_value": 100.0}}
    outcome = sdcflow.release(back, publish=False, base_dir=tmp_path)
    assert outcome.status == "checked", outcome.message
    assert outcome.figures["max_information_loss"] == pytest.approx(
        frame.utility()["information_loss"]
    )
    assert outcome.method_details["recoding"]["turnover"] == coded


def _rows(frame: pd.DataFrame) -> np.ndarray:
    """The rows sorted: the same release whatever the order it is published in."""
    values = frame.to_numpy(dtype=np.float64)
    return values[np.lexsort(values.T[::-1])]


def test_an_unchanged_spec_keeps_its_hash_without_top_coding(tmp_path):
    from sdcflow.spec.load import load_spec

    path = write_release(
        tmp_path,
        rows=20,
        method={"name": "mdav", "k": 3},
        recode={"employees": {"bins": [0, 10, 1e9]}},
    )
    public = load_spec(path).hashed_dict(skip=set())
    assert public["recode"]["employees"].keys().isdisjoint({"top", "bottom", "top_value"})


# --- PRAM on categorical keys before the method ----------------------------------------------

NUMBERS = ["employees", "turnover", "wages"]
CATEGORIES = ["region", "sector"]


def test_pram_before_mdav_keeps_k_on_the_released_rows_and_names_the_perturbed_keys(
    tmp_path, prefect_api
):
    spec = write_release(
        tmp_path,
        rows=300,
        quasi_identifiers=[*NUMBERS, *CATEGORIES],
        method={"name": "mdav", "k": 3},
        # the test is about PRAM: the survey's magnitudes form dominated groups in strata too
        # small to merge, which the spec accepts explicitly rather than the p % default refusing
        checks={"max_p_dominated_groups": 300},
        accept={"looser_checks": ["max_p_dominated_groups"]},
        pram={"columns": CATEGORIES, "pd": 0.7},
        seed=SEED,
    )
    released, manifest = _release(tmp_path, spec)
    text = json.dumps(manifest)
    assert str(SEED) not in text and "matrix" not in json.dumps(manifest["spec"]["pram"])
    assert manifest["spec"]["pram"] == {"columns": CATEGORIES, "pd": 0.7, "alpha": 0.5}
    step = manifest["method_details"]["pram"]
    assert step["columns"] == CATEGORIES
    assert set(step["invariance"]) == set(CATEGORIES)  # figures, never the matrix
    assert step["invariance"]["region"]["largest_expected_frequency_change"] < 1e-6
    assert step["values_changed"]["sector"] > 0
    # k counts the released rows, PRAMed keys included, as always: it holds by construction
    gates = {g["check"]: g for g in manifest["checks"]}
    assert gates["k_anonymity"]["figure"] >= 3
    original = pd.read_csv(tmp_path / "data.csv")
    assert set(released["sector"].dropna()) <= set(original["sector"])
    # the working object, with the same steps, releases the same rows and figures
    frame = sdcflow.SdcFrame(original, keys=[*NUMBERS, *CATEGORIES], random_state=SEED)
    frame.pram(CATEGORIES, pd=0.7).mask("mdav", k=3)
    assert frame.report()["method_details"]["pram"] == step
    np.testing.assert_array_equal(
        _text_rows(frame.released[[*NUMBERS, *CATEGORIES]]),
        _text_rows(released[[*NUMBERS, *CATEGORIES]]),
    )
    back = frame.to_spec(release="again", source="data.csv", id_column="respondent_id")
    assert back["pram"] == manifest["spec"]["pram"]
    back["checks"] = {**back.get("checks", {}), "max_p_dominated_groups": 300}
    back["accept"] = {"looser_checks": ["max_p_dominated_groups"]}
    outcome = sdcflow.release(back, publish=False, base_dir=tmp_path)
    assert outcome.status == "checked", outcome.message
    assert outcome.method_details["pram"] == step


def test_pram_then_a_numeric_perturbation_releases_both_kinds_of_keys(tmp_path, prefect_api):
    spec = write_release(
        tmp_path,
        rows=300,
        quasi_identifiers=[*NUMBERS, "region"],
        method={"name": "rank_swap", "p": 15},
        pram={"columns": ["region"]},
        seed=SEED,
    )
    released, manifest = _release(tmp_path, spec)
    gates = {g["check"] for g in manifest["checks"]}
    assert gates == {"max_record_linkage"}  # the method's gate; no k
    assert manifest["method_details"]["pram"]["values_changed"]["region"] > 0
    original = pd.read_csv(tmp_path / "data.csv")
    for c in NUMBERS:  # rank swapping keeps each key's values
        assert sorted(released[c]) == sorted(original[c])


@pytest.mark.parametrize(
    "method, keys, pram, named",
    [
        ({"name": "mdav", "k": 3}, [*NUMBERS, "region"], {"columns": ["turnover"]}, "are numeric"),
        ({"name": "pram"}, CATEGORIES, {"columns": ["region"]}, "remove `pram:`"),
        ({"name": "noise"}, [*NUMBERS, *CATEGORIES], {"columns": ["region"]}, "leaves out sector"),
        ({"name": "mdav", "k": 3}, [*NUMBERS, "region"], {"columns": ["sector"]}, "not quasi"),
        (
            {"name": "mdav", "k": 3},
            [*NUMBERS, "region"],
            {"columns": ["region", "region"]},
            "twice",
        ),
    ],
)
def test_a_pram_step_that_makes_no_sense_is_refused_with_the_reason(
    tmp_path, method, keys, pram, named
):
    spec = write_release(tmp_path, rows=40, quasi_identifiers=keys, method=method, pram=pram)
    with pytest.raises(InputError, match=named):
        sdcflow.release(spec, publish=False)


def _text_rows(frame: pd.DataFrame) -> list[tuple[str, ...]]:
    """The rows as text, sorted: the same release whatever its order and dtypes."""
    return sorted(tuple(str(v) for v in row) for row in frame.astype(object).to_numpy())


def test_the_transformer_codes_with_the_same_function():
    frame = pd.DataFrame({"x": X.fillna(0.0), "y": np.arange(7.0)})
    out = sdcflow.TopBottomCoding(top={"x": 10}, bottom={"x": 5}, bottom_value={"x": 4})
    coded = out.fit_transform(frame)
    np.testing.assert_array_equal(coded["x"], [5, 10, 10, 10, 4, 10, 4])  # 0 is below 5
    np.testing.assert_array_equal(coded["y"], frame["y"])  # not named: unchanged
    with pytest.raises(InputError, match="swap them"):
        sdcflow.TopBottomCoding(top=1, bottom=2).fit(frame)
