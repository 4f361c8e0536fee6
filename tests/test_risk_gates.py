"""The gates of issue 44's risk measures (DIS-SUDA, household risk, t-closeness): each figure
on a hand-built release equals the numerical core's on the codes of the released keys, and
a release is published or refused as its t-closeness dictates."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.core.measures.anonymity import key_codes
from sdcflow.core.risk import household_risk, suda2, t_closeness
from sdcflow.gates import GATES, GateContext, MeasureOptions, run_gates
from sdcflow.gates.uniqueness import dis_figures
from sdcflow.methods import MaskResult, MdavParams
from sdcflow.spec.schema import ReleaseSpec

SUDA, HOUSEHOLD, TCLOSE = "max_suda_dis", "max_household_risk", "max_t_closeness"

# Released keys: region and sex categorical, one blank (a category of its own), age group.
KEYS = pd.DataFrame(
    {
        "region": ["n", "n", "n", "s", "s", "s", "e", "e", None, "w"],
        "sex": ["f", "f", "m", "m", "m", "f", "f", "f", "m", "m"],
        "age": [1, 1, 2, 2, 2, 3, 3, 3, 1, 2],
    }
)


def _ctx(keys: pd.DataFrame = KEYS, **kwargs) -> GateContext:
    options = kwargs.pop("options", None)
    n = len(keys)
    result = MaskResult(masked=keys, points=np.zeros((n, 0)))
    opts = MeasureOptions.model_validate(options) if options else None
    return GateContext(np.zeros((n, 0)), [], result, MdavParams(k=2), options=opts, **kwargs)


def _figure(ctx: GateContext, key: str, threshold: float = 1.0):
    (outcome,) = [o for o in run_gates(ctx, {key: threshold}) if o.key == key]
    return outcome


def test_max_suda_dis_is_the_largest_dis_score_of_the_core_on_the_key_codes():
    codes = key_codes(KEYS)
    for fraction in (0.01, 0.2):
        core = suda2(codes, missing=None, dis_fraction=fraction)
        assert core.dis_score.max() > 0  # the file has uniques: not the trivial 0
        options = {"suda_dis_fraction": fraction} if fraction != 0.01 else None
        outcome = _figure(_ctx(options=options), SUDA)
        assert outcome.figure == pytest.approx(core.dis_score.max(), rel=1e-12)
        assert outcome.unit == "DIS score (0..1)"
    # the blank region is a category: the record with it is unique on region alone
    assert suda2(codes, missing=None).msu_counts[8, 0] == 1
    # the manifest's figures: the largest score and the records scored above 0
    scores = suda2(codes, missing=None).dis_score
    figures = dis_figures(KEYS, 0.01)
    assert figures.records_with_dis_score == int((scores > 0).sum())
    assert figures.max_dis_score == pytest.approx(scores.max())


def test_a_release_without_unique_rows_has_no_special_unique():
    keys = pd.concat([KEYS.iloc[:4], KEYS.iloc[:4]], ignore_index=True)
    assert suda2(key_codes(keys), missing=None).dis_score.max() == 0
    assert _figure(_ctx(keys), SUDA, 0.0).figure == 0 and _figure(_ctx(keys), SUDA, 0.0).passed


def test_the_dis_fraction_is_refused_outside_zero_one():
    for bad in (0, 1, 1.5):
        with pytest.raises(ValueError):
            MeasureOptions.model_validate({"suda_dis_fraction": bad})


def test_max_household_risk_is_the_core_household_risk_of_the_individual_risks():
    households = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 4])
    fk = KEYS.assign(_=1).groupby(list(KEYS.columns), dropna=False)["_"].transform("size")
    risk = 1.0 / fk.to_numpy()  # unweighted individual risk: 1 / class size
    expected = household_risk(risk, households).record_risk.max()
    outcome = _figure(_ctx(households=households), HOUSEHOLD, 0.9)
    assert outcome.figure == pytest.approx(expected)
    assert 0 < outcome.figure <= 1


def test_the_household_check_needs_the_household_column():
    base = {
        "release": "r",
        "source": "data.csv",
        "quasi_identifiers": ["age"],
        "method": {"name": "mdav", "k": 3},
        "checks": {HOUSEHOLD: 0.5},
    }
    with pytest.raises(ValueError, match="household_column: <column>"):
        ReleaseSpec.model_validate(base)
    assert ReleaseSpec.model_validate({**base, "household_column": "hh"}).household_column == "hh"


def test_t_closeness_is_the_largest_class_distance_over_the_sensitive_columns():
    sensitive = pd.DataFrame(
        {
            "income": [10.0, 20, 30, 40, 50, 60, 70, np.nan, 90, 100],
            "diagnosis": ["a", "a", "b", "b", "c", "c", "a", None, "b", "c"],
        }
    )
    codes = key_codes(KEYS)
    held = sensitive["income"].notna().to_numpy()
    income = t_closeness(codes[held], sensitive["income"].to_numpy()[held]).t
    labels = pd.factorize(sensitive["diagnosis"], use_na_sentinel=False)[0]
    diagnosis = t_closeness(codes, labels, distance="equal").t
    outcome = _figure(_ctx(sensitive=sensitive), TCLOSE)
    assert outcome.figure == pytest.approx(max(income, diagnosis))
    assert _figure(_ctx(sensitive=sensitive[["income"]]), TCLOSE).figure == pytest.approx(income)
    assert GATES[TCLOSE].measures == "sensitive" and GATES[TCLOSE].upper == 1.0


def test_t_closeness_is_not_checked_when_no_sensitive_value_is_known():
    sensitive = pd.DataFrame({"income": [np.nan] * len(KEYS)})
    outcome = _figure(_ctx(sensitive=sensitive), TCLOSE)
    assert not outcome.checked and not outcome.passed


def _release(tmp_path, diagnosis: list[str], **more) -> tuple[int, dict | None]:
    from sdcflow.cli.main import main

    n = len(diagnosis)
    # adults' ages: a group of ages 0, 1, 2 would fail the p % rule (0 < 10 % of 2), which a
    # release of group means of a non-negative key gets by default
    frame = pd.DataFrame({"id": range(n), "age": range(20, 20 + n), "diagnosis": diagnosis})
    frame["household"] = frame["id"] // 2
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "tclose",
        "source": "data.csv",
        "id_column": "id",
        "quasi_identifiers": ["age"],
        "sensitive": ["diagnosis"],
        "method": {"name": "mdav", "k": 3},
        "checks": {TCLOSE: 0.5},
        "output": "published/",
        "warehouse": "warehouse.duckdb",
        **more,
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    code = main(["release", str(tmp_path / "release.yaml")])
    manifests = list((tmp_path / "published").glob("tclose/**/manifest.json"))
    return code, json.loads(manifests[0].read_text()) if manifests else None


def test_a_release_whose_groups_share_one_diagnosis_is_refused(tmp_path):
    # MDAV groups consecutive ages in threes; each group holds one diagnosis of three equally
    # frequent ones: EMD = (2/3 + 1/3 + 1/3) / 2 = 2/3 > 0.5
    code, manifest = _release(tmp_path, [("a", "b", "c")[(i // 3) % 3] for i in range(30)])
    assert code == 1 and manifest is None


def test_a_release_whose_groups_mirror_the_file_is_published(tmp_path):
    # every group of three consecutive ages holds a, b and c: EMD 0
    code, manifest = _release(tmp_path, [("a", "b", "c")[i % 3] for i in range(30)])
    assert code == 0
    (check,) = [c for c in manifest["checks"] if c["check"] == TCLOSE]
    assert check["figure"] == 0 and check["verdict"] == "pass"
    # no age is unique after MDAV: no special unique, figures only in the summary
    suda = manifest["method_details"]["disclosure"]["suda"]
    assert suda == {"max_dis_score": 0.0, "records_with_dis_score": 0, "dis_fraction": 0.01}


def test_the_household_column_reaches_the_gate_of_a_release(tmp_path):
    # MDAV groups of three ages: every individual risk is 1/3; households of two records:
    # 1 - (2/3)^2 = 5/9
    code, manifest = _release(
        tmp_path,
        [("a", "b", "c")[i % 3] for i in range(30)],
        household_column="household",
        checks={HOUSEHOLD: 0.6},
    )
    assert code == 0
    (check,) = [c for c in manifest["checks"] if c["check"] == HOUSEHOLD]
    assert check["figure"] == pytest.approx(5 / 9)
    published = next((tmp_path / "published").glob("tclose/**/data.csv"))
    assert "household" not in pd.read_csv(published).columns
