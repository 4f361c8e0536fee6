"""The working object: steps measured by the gates' figures, undone, and written as the spec
that the pipeline releases with the same figures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from survey import EXAMPLE, QIS

import sdcflow
from sdcflow import InputError, Reason, SdcFrame
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.spec.load import spec_from_dict


@pytest.fixture
def toy() -> pd.DataFrame:
    # classes of identical rows over (sex, town): (f, a) x3, (m, a) x2, (m, b) x1
    return pd.DataFrame(
        {
            "sex": ["f", "f", "f", "m", "m", "m"],
            "town": ["a", "a", "a", "a", "a", "b"],
            "income": ["lo", "hi", "lo", "lo", "lo", "hi"],
            "w": [10.0, 10.0, 10.0, 4.0, 4.0, 50.0],
        },
        index=[11, 12, 13, 14, 15, 16],
    )


def test_risk_by_hand(toy):
    sdc = SdcFrame(toy, nominal=["sex", "town"], sensitive=["income"])
    risk = sdc.risk()
    assert risk["k_anonymity"] == 1 and risk["sample_uniques"] == 1
    assert risk["records_below_k"] == {2: 1, 3: 3, 5: 6}
    # unweighted: r = 1 / f, ER = 3 * 1/3 + 2 * 1/2 + 1 = 3
    assert risk["max_individual_risk"] == 1.0
    assert risk["expected_reidentifications"] == pytest.approx(3.0)
    assert risk["global_risk_percent"] == pytest.approx(50.0)
    # distinct incomes per class: (f, a) {lo, hi}, (m, a) {lo}, (m, b) {hi}
    assert risk["l_diversity"] == 1
    weighted = SdcFrame(toy, nominal=["sex", "town"], weight="w").risk()
    assert weighted["weighted"] and weighted["max_individual_risk"] < 1.0


def test_suppress_then_undo(toy):
    sdc = SdcFrame(toy, nominal=["sex", "town"], sensitive=["income"])
    sdc.suppress(k=2, importance=["sex"])
    assert sdc.history == ["start", "suppress k=2"]
    assert sdc.risk()["k_anonymity"] >= 2  # a blank is a value of its own
    suppressed = sdc.utility()["categorical_values_suppressed"]
    assert set(suppressed) == {"sex", "town"} and sum(suppressed.values()) >= 1
    assert sdc.released.index.equals(toy.index)
    assert list(sdc.released.columns) == ["sex", "town", "income"]
    sdc.undo()
    assert sdc.history == ["start"] and sdc.risk()["k_anonymity"] == 1
    with pytest.raises(InputError) as e:
        sdc.undo()
    assert e.value.code == Reason.PARAMETER


def test_a_failed_step_leaves_the_object_as_it_was(toy):
    sdc = SdcFrame(toy, nominal=["sex", "town"])
    with pytest.raises(InputError) as e:
        sdc.mask("mdav", k=2)  # a numeric method, no numeric key
    assert e.value.code == Reason.PARAMETER
    with pytest.raises(InputError) as k:
        sdc.suppress(k=1)
    assert (k.value.code, k.value.field) == (Reason.PARAMETER, "k")
    assert sdc.history == ["start"]


def test_construction_errors_name_the_column(toy):
    with pytest.raises(InputError) as unknown:
        SdcFrame(toy, nominal=["sex", "age"])
    assert (unknown.value.code, unknown.value.field) == (Reason.COLUMN_UNKNOWN, "age")
    with pytest.raises(InputError) as text:
        SdcFrame(toy, numeric=["town"])
    assert (text.value.code, text.value.field) == (Reason.COLUMN_TYPE, "town")
    with pytest.raises(InputError) as weights:
        SdcFrame(toy.assign(w=-1.0), nominal=["sex"], weight="w")
    assert (weights.value.code, weights.value.field) == (Reason.WEIGHTS, "w")


@pytest.fixture(scope="module")
def survey() -> pd.DataFrame:
    return pd.read_csv(EXAMPLE / "data.csv").head(600)


def test_mask_within_strata_is_the_pipelines_step(survey):
    sdc = SdcFrame(survey, numeric=QIS, strata=["region"])
    assert sdc.risk()["k_anonymity"] == 1
    sdc.mask("mdav", k=5)
    released = sdc.released
    assert sdc.risk()["k_anonymity"] >= 5
    # within region: every group's records share their region, which is released unchanged
    assert (released["region"] == survey["region"]).all()
    assert released.groupby([*QIS, "region"]).size().min() >= 5
    X = survey[QIS].to_numpy(dtype=float)
    assert sdc.utility()["information_loss"] == pytest.approx(
        sse_sst_loss(X, released[QIS].to_numpy(dtype=float))
    )
    assert released[QIS].dtypes.map(pd.api.types.is_integer_dtype).all()  # as published


def test_display_shows_figures_and_no_record_value(survey):
    sdc = SdcFrame(survey, numeric=QIS, strata=["region"]).mask("mdav", k=5)
    page = sdc._repr_html_()
    assert "k_anonymity" in page and "information_loss" in page
    for value in [*survey["region"].unique(), *map(str, survey["turnover"].head(50))]:
        assert f">{value}<" not in page
    assert "North" not in str(sdc.report()) and "North" not in page


def test_recode_makes_a_key_ordinal_and_is_undone(survey):
    sdc = SdcFrame(survey, numeric=QIS, strata=["region"])
    sdc.recode("employees", bins=[-math.inf, 0, 9, 49, 249, math.inf]).mask("mdav", k=5)
    assert sdc.utility()["recoded_records"] == {"employees": 600}
    bands = {"[-inf, 0]", "(0, 9]", "(9, 49]", "(49, 249]", "(249, inf]"}
    assert set(sdc.released["employees"].dropna()) <= bands  # some suppressed in strata
    spec = sdc.to_spec(source="data.csv")
    assert spec["recode"] == {"employees": {"bins": [-math.inf, 0.0, 9.0, 49.0, 249.0, math.inf]}}
    sdc.undo()
    assert sdc.history == ["start", "recode employees: bins [-inf, 0.0, 9.0, 49.0, 249.0, inf]"]
    with pytest.raises(InputError) as e:
        sdc.to_spec()
    assert (e.value.code, e.value.field) == (Reason.PARAMETER, "method")


def test_random_state_reproduces_a_randomized_method(survey):
    a = SdcFrame(survey, numeric=QIS[:3], random_state=7).mask("fuzzy", k=5)
    b = SdcFrame(survey, numeric=QIS[:3], random_state=np.random.RandomState(3))
    b.mask("fuzzy", k=5)
    pd.testing.assert_frame_equal(
        a.released, SdcFrame(survey, numeric=QIS[:3], random_state=7).mask("fuzzy", k=5).released
    )
    assert a.to_spec()["seed"] == 7 and "seed" not in b.to_spec()


# -- to_spec: the pipeline releases the same ----------------------------------------------------


EDUCATION = ("Preschool 1st-4th 5th-6th 7th-8th 9th 10th 11th 12th HS-grad Some-college "
             "Assoc-voc Assoc-acdm Bachelors Masters Prof-school Doctorate").split()  # fmt: skip


def _release(spec: dict, tmp_path) -> sdcflow.ReleaseOutcome:
    spec_from_dict(dict(spec), tmp_path, "spec")  # loads as a spec
    spec = {**spec, "output": "published/", "warehouse": "warehouse.duckdb"}
    return sdcflow.release(spec, publish=False, base_dir=tmp_path)


def test_to_spec_releases_the_same_figures(survey, tmp_path, prefect_api):
    survey.to_csv(tmp_path / "data.csv", index=False)
    # the survey's magnitudes: the release gets the p % rule gate, which the remedy passes
    sdc = SdcFrame(survey, numeric=QIS, strata=["region"]).mask("mdav", k=5, dominance=True)
    spec = sdc.to_spec(
        release="survey",
        source="data.csv",
        id_column="respondent_id",
        checks={"max_information_loss": 100, "max_global_risk": 100},
    )
    outcome = _release(spec, tmp_path)
    assert outcome.status == "checked", outcome.message
    risk, utility = sdc.risk(), sdc.utility()
    assert outcome.figures["k_anonymity"] == risk["k_anonymity"]
    assert outcome.figures["max_information_loss"] == pytest.approx(utility["information_loss"])
    assert outcome.figures["max_global_risk"] == pytest.approx(risk["global_risk_percent"])
    details = outcome.method_details
    assert details["categorical_values_suppressed"] == utility["categorical_values_suppressed"]
    assert details["disclosure"]["records_below_k"]["after"] == risk["records_below_k"][5]


def test_to_spec_of_recoding_and_suppression_with_weights(shared_data, tmp_path, prefect_api):
    adult = pd.read_csv(shared_data / "adult.csv", na_values=["?"]).head(2000)
    adult.to_csv(tmp_path / "adult.csv", index=False)
    sdc = SdcFrame(
        adult,
        numeric=["age"],
        nominal=["sex", "race"],
        ordinal={"education": EDUCATION},
        weight="fnlwgt",
        sensitive=["income"],
    )
    sdc.recode("age", bins=[0, 25, 35, 45, 55, 65, 120]).suppress(k=3, importance=["sex"])
    spec = sdc.to_spec(
        release="adult",
        source="adult.csv",
        checks={"max_individual_risk": 1, "max_global_risk": 100, "l_diversity": 1},
    )
    outcome = _release(spec, tmp_path)
    assert outcome.status == "checked", outcome.message
    risk, utility = sdc.risk(), sdc.utility()
    assert outcome.figures["k_anonymity"] == risk["k_anonymity"] >= 3
    assert outcome.figures["max_individual_risk"] == pytest.approx(risk["max_individual_risk"])
    assert outcome.figures["max_global_risk"] == pytest.approx(risk["global_risk_percent"])
    assert outcome.figures["l_diversity"] == risk["l_diversity"]
    details = outcome.method_details
    assert details["categorical_values_suppressed"] == utility["categorical_values_suppressed"]
    assert details["suppressed_total"] == sum(utility["categorical_values_suppressed"].values())
