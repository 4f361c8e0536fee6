"""The dominance gates: a group mean that gives its largest contribution away fails the p %
and (n, k) rules, figures counted by hand; a release is refused on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.gates import GATES, GateContext, MeasureOptions, run_gates
from sdcflow.methods import MaskResult, MdavParams

COLS = ["turnover", "employees"]


def _ctx(X: np.ndarray, groups: np.ndarray, **options) -> GateContext:
    means = pd.DataFrame(X).groupby(groups).transform("mean").to_numpy()
    result = MaskResult(masked=pd.DataFrame(means, columns=COLS), points=means, groups=groups)
    opts = MeasureOptions.model_validate(options) if options else None
    return GateContext(X, COLS, result, MdavParams(k=3), options=opts)


def test_a_planted_large_value_fails_the_p_percent_rule_of_its_group():
    # group 0: turnover 1000, 20, 10: total - x1 - x2 = 10 < 10 % of 1000 -> fails;
    # group 1: 50, 40, 30: 30 >= 5 -> passes. employees: 3, 2, 1 (1 >= 0.3) and 4, 4, 4 pass.
    X = np.array([[1000, 3], [20, 2], [10, 1], [50, 4], [40, 4], [30, 4]], dtype=float)
    groups = np.array([0, 0, 0, 1, 1, 1])
    out = {o.key: o for o in run_gates(_ctx(X, groups), {"max_p_dominated_groups": 0})}
    assert out["max_p_dominated_groups"].figure == 1
    assert not out["max_p_dominated_groups"].passed
    # p = 0.5 %: 10 >= 5 -> group 0 passes too
    loose = {"max_p_dominated_groups": 0}
    out = {o.key: o for o in run_gates(_ctx(X, groups, dominance_p=0.5), loose)}
    assert out["max_p_dominated_groups"].figure == 0 and out["max_p_dominated_groups"].passed


def test_the_n_k_rule_counts_groups_whose_largest_hold_more_than_k_percent():
    # (1, 90): group 0 turnover 1000 / 1030 = 97 % > 90 -> fails; group 1 50 / 120 -> passes;
    # employees 3/6 and 4/12 pass. (2, 99): 1020/1030 = 99.03 % > 99 -> fails.
    X = np.array([[1000, 3], [20, 2], [10, 1], [50, 4], [40, 4], [30, 4]], dtype=float)
    groups = np.array([0, 0, 0, 1, 1, 1])
    key = "max_nk_dominated_groups"
    out = {o.key: o for o in run_gates(_ctx(X, groups, dominance_nk=(1, 90)), {key: 0})}
    assert out[key].figure == 1
    out = {o.key: o for o in run_gates(_ctx(X, groups, dominance_nk=(2, 99.5)), {key: 0})}
    assert out[key].figure == 0


def test_signed_keys_are_left_out_and_a_file_of_them_is_not_checked():
    X = np.array([[-5, 3], [20, 2], [10, 1], [50, 4], [40, 4], [30, 4]], dtype=float)
    groups = np.array([0, 0, 0, 1, 1, 1])
    out = {o.key: o for o in run_gates(_ctx(X, groups), {"max_p_dominated_groups": 0})}
    assert out["max_p_dominated_groups"].figure == 0  # employees only: all pass
    X[:, 1] = -1
    out = {o.key: o for o in run_gates(_ctx(X, groups), {"max_p_dominated_groups": 0})}
    assert not out["max_p_dominated_groups"].passed
    assert "non-negative" in out["max_p_dominated_groups"].note


def test_bad_rule_settings_are_refused_when_the_spec_is_read():
    with pytest.raises(ValueError, match="greater than 0"):
        MeasureOptions.model_validate({"dominance_p": 0})
    with pytest.raises(ValueError, match="less than or equal to 100"):
        MeasureOptions.model_validate({"dominance_nk": [2, 120]})
    assert GATES["max_p_dominated_groups"].measures == "numeric_keys"


def test_a_release_whose_groups_give_a_large_firm_away_is_refused(tmp_path):
    from sdcflow.cli.main import main

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": range(60),
            "turnover": rng.uniform(100, 200, 60),
            "employees": rng.integers(1, 50, 60),
        }
    )
    frame.loc[7, "turnover"] = 1e6  # one firm far larger than the rest
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "dominance",
        "source": "data.csv",
        "id_column": "id",
        "quasi_identifiers": ["turnover", "employees"],
        "method": {"name": "mdav", "k": 3},
        "checks": {"max_p_dominated_groups": 0},
        "output": "published/",
        "warehouse": "warehouse.duckdb",
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 1
    assert not (tmp_path / "published" / "dominance").exists()
