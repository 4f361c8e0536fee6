"""The Python surface: transformers generated from the method registry, measures as plain
functions, a light ``import sdcflow``, errors with the command line's reason codes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from survey import EXAMPLE, QIS, write_release

import sdcflow
from sdcflow import MDAV, PS, Box, ConstrainedFuzzy, Fuzzy, InputError, Reason
from sdcflow.core.measures.disclosure_risk import record_linkage as core_linkage
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.measures import information_loss, k_anonymity, record_linkage


@pytest.fixture(scope="module")
def survey() -> pd.DataFrame:
    frame = pd.read_csv(EXAMPLE / "data.csv").head(200)
    return frame.set_index("respondent_id")[QIS].astype(float)


def test_import_is_light_and_lazy():
    code = (
        "import sys, sdcflow; heavy = {'prefect', 'duckdb', 'numba', 'great_expectations',"
        " 'matplotlib'} & set(sys.modules); assert not heavy, heavy;"
        " print(sdcflow.__version__, sorted(n for n in dir(sdcflow) if not n.startswith('_')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "release" in out.stdout and "MDAV" in out.stdout and "measures" in out.stdout
    assert sdcflow.measures.information_loss is information_loss


def test_mdav_transformer_is_the_registry_method(survey):
    released = MDAV(k=5).fit_transform(survey)
    X = survey.to_numpy()
    expected = group_means(X, mdav(X, 5, columns=QIS))
    assert list(released.columns) == QIS and released.index.equals(survey.index)
    np.testing.assert_allclose(released.to_numpy(), expected)
    assert k_anonymity(released) >= 5
    assert information_loss(survey, released) == pytest.approx(sse_sst_loss(X, expected))
    # frames are matched by column name, not position
    shuffled = released[QIS[::-1]]
    assert record_linkage(survey, shuffled) == pytest.approx(core_linkage(X, expected))
    # arrays in, arrays out
    np.testing.assert_allclose(MDAV(k=5).fit_transform(X), expected)


def test_params_as_in_scikit_learn_and_errors_as_in_the_cli(survey):
    from sdcflow.methods import METHODS

    model = MDAV(k=5)
    # the parameters are the registry's (generated, not copied), plus random_state
    fields = [f for f in METHODS["mdav"].params.model_fields if f != "name"]
    assert list(model.get_params()) == [*fields, "random_state"]
    assert model.get_params()["k"] == 5 and model.get_params()["random_state"] is None
    assert model.set_params(k=4) is model and model.k == 4 and repr(model) == "MDAV(k=4)"
    assert Fuzzy(k=5).get_params()["m1"] is None  # the model fills the default at fit
    assert "constraints" in ConstrainedFuzzy().get_params()
    with pytest.raises(InputError) as unknown:
        MDAV(kk=5)
    assert unknown.value.code == Reason.PARAMETER and unknown.value.field == "kk"
    assert MDAV().k == 3  # sdcMicro's microaggregation default (aggr = 3)
    with pytest.raises(InputError) as small:
        PS(k=1).fit(survey)
    assert small.value.code == Reason.PARAMETER and small.value.field == "k"
    with pytest.raises(InputError) as bad:
        MDAV(k=5).fit(survey.assign(turnover=np.inf))
    assert bad.value.code == Reason.VALUES_NONFINITE  # as the preflight says it
    # a text key gave numpy's ValueError ("could not convert string to float"), no code
    with pytest.raises(InputError) as text:
        MDAV(k=5).fit(survey.assign(region="North"))
    assert text.value.code == Reason.COLUMN_TYPE and text.value.field == "region"


def test_transform_means_the_fitted_release_only(survey):
    model = MDAV(k=5)
    with pytest.raises(InputError) as unfitted:
        model.transform(survey)
    assert unfitted.value.code == Reason.PARAMETER
    released = model.fit_transform(survey)
    pd.testing.assert_frame_equal(model.transform(survey.copy()), released)
    with pytest.raises(InputError) as other:
        model.transform(survey.head(50))
    assert other.value.code == Reason.PARAMETER and other.value.field == "X"


def test_constrained_fuzzy_takes_edit_rules_as_text(survey):
    rules = ["total_costs == wages + other_costs", "profit == turnover - total_costs"]
    edited = ConstrainedFuzzy(k=5, random_state=0, restarts=1, constraints=rules)
    released = edited.fit_transform(survey.head(100))
    gap = released.total_costs - released.wages - released.other_costs
    assert gap.abs().max() < 1e-6 and k_anonymity(released) >= 1
    assert edited.details_["k"] == 5 and edited.result_.expected_sizes.min() >= 5 - 1e-9
    with pytest.raises(InputError) as nonlinear:
        ConstrainedFuzzy(k=5, constraints=["wages * 2 == total_costs * wages"]).fit(survey)
    assert nonlinear.value.code in (Reason.PARAMETER, Reason.RULE_SYNTAX)
    with pytest.raises(InputError) as unknown:
        ConstrainedFuzzy(k=5, constraints=["salary >= 0"]).fit(survey)
    assert unknown.value.code == Reason.RULE_COLUMN


def test_box_releases_boxes(survey):
    boxes = Box(k=5).fit_transform(survey[["turnover", "wages"]])
    assert list(boxes.columns) == ["turnover_lo", "turnover_hi", "wages_lo", "wages_hi",
                                   "box_id", "weight"]  # fmt: skip
    assert boxes.groupby("box_id").size().min() >= 5
    assert (boxes.turnover_lo <= survey.turnover).all() and (
        survey.turnover <= boxes.turnover_hi
    ).all()


def test_in_a_scikit_learn_pipeline_transform_answers_as_ours(survey):
    """Pipeline.transform asks scikit-learn's get_tags before our transform: without
    __sklearn_tags__ both the fitted file and another file raised sklearn's AttributeError."""
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = Pipeline([("scale", StandardScaler()), ("mdav", MDAV(k=3))])
    pipe.set_params(mdav__k=5)
    assert clone(pipe).get_params()["mdav__k"] == 5
    first, other = survey.iloc[:100], survey.iloc[100:]
    released = pipe.fit_transform(first)
    assert k_anonymity(released) >= 5
    np.testing.assert_allclose(pipe.transform(first), released)
    with pytest.raises(InputError) as refused:
        pipe.transform(other)
    assert refused.value.code == Reason.PARAMETER and refused.value.field == "X"


def test_point_methods_keep_column_labels_that_are_not_text(survey):
    # pd.DataFrame(array) has integer labels: the release came back with '0', '1', ... and
    # information_loss(df, released), the docs' own line (docs/howto/python.md), refused it
    # (DataError)
    frame = pd.DataFrame(survey.to_numpy()[:60, :3])
    released = MDAV(k=3).fit_transform(frame)
    assert list(released.columns) == [0, 1, 2] and released.index.equals(frame.index)
    assert 0 < information_loss(frame, released) < 100
    assert list(Box(k=3).fit_transform(frame).columns)[:2] == ["0_lo", "0_hi"]
    twice = pd.DataFrame(survey.to_numpy()[:60, :2], columns=["a", "a"])
    with pytest.raises(InputError) as e:
        MDAV(k=3).fit(twice)
    assert e.value.code == Reason.SOURCE_COLUMNS and e.value.field == "X"


def test_a_column_the_file_lacks_is_named_in_the_error_field(tmp_path):
    """column-unknown carried no field: a script branching on (code, field) could not tell
    which column to fix (only the message named it)."""
    spec = write_release(tmp_path, rows=30, quasi_identifiers=[*QIS, "assets"])
    with pytest.raises(InputError) as e:  # at preflight: nothing runs, nothing is written
        sdcflow.release(spec, publish=False)
    assert (e.value.code, e.value.field) == (Reason.COLUMN_UNKNOWN, "assets")
    assert not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.parametrize(
    ("spec", "code", "field"),
    [
        ({}, Reason.VALUES_MISSING, "age"),  # a blank age, no missing_values:
        ({"missing_values": ["?"], "weight_column": "town"}, Reason.WEIGHTS, "town"),
        ({"missing_values": ["?"], "weight_column": "w"}, Reason.WEIGHTS, "w"),
        (
            {
                "missing_values": ["?"],
                "quasi_identifiers": ["age", {"name": "town", "type": "ordinal"}],
            },
            Reason.COLUMN_TYPE,
            "town",
        ),
        (
            {"missing_values": ["?"], "quasi_identifiers": ["age", "code"]},
            Reason.COLUMN_TYPE,
            "code",
        ),
    ],
)
def test_preflight_errors_about_a_column_name_it_in_their_field(tmp_path, spec, code, field):
    """These refusals named the column in their message only (field None)."""
    rows = [(30 + i % 7, "north" if i % 2 else "south", i % 3 - 1, "7" if i % 5 else "A1")
            for i in range(30)]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["age", "town", "w", "code"]).astype(str)
    frame.loc[3, "age"] = ""
    frame.to_csv(tmp_path / "data.csv", index=False)
    body = {"release": "t", "source": "data.csv", "quasi_identifiers": ["age", "town"],
            "method": {"name": "mdav", "k": 5}, **spec}  # fmt: skip
    with pytest.raises(InputError) as e:
        sdcflow.release(body, publish=False, base_dir=tmp_path)
    assert (e.value.code, e.value.field) == (code, field)


def test_a_reserved_column_name_is_named_in_the_error_field(tmp_path):
    """The source's column named like sdcflow's row id was refused with field None."""
    rows = [(30 + i % 7, i) for i in range(30)]
    pd.DataFrame(rows, columns=["age", "sdc_row_id"]).to_csv(tmp_path / "data.csv", index=False)
    body = {"release": "t", "source": "data.csv", "quasi_identifiers": ["age"],
            "method": {"name": "mdav", "k": 5}}  # fmt: skip
    with pytest.raises(InputError) as e:
        sdcflow.release(body, publish=False, base_dir=tmp_path)
    assert (e.value.code, e.value.field) == (Reason.SOURCE_COLUMNS, "sdc_row_id")
