"""``dominance:`` of the crisp methods: groups formed so that no record dominates, applied to
the partition before its means are released (within each stratum), recorded in the
manifest, and gated by the p % rule gate."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.core.microaggregation.dominance_repair import repair_dominance
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.risk import dominance
from sdcflow.methods import METHODS
from sdcflow.methods.microaggregation import DominanceOptions


def _params(name: str, **options: object) -> object:
    return METHODS[name].params.model_validate({"name": name, "k": 3, **options})


@pytest.mark.parametrize("name", ["mdav", "ps", "univariate"])
def test_spec_option(name: str) -> None:
    assert _params(name).dominance is None
    assert _params(name, dominance=True).dominance == DominanceOptions(p=10.0)
    assert _params(name, dominance={"p": 5}).dominance.p == 5.0
    assert _params(name, dominance=False).dominance is None
    with pytest.raises(ValueError, match="greater than 0"):
        _params(name, dominance={"p": 0})


@pytest.mark.parametrize("name", ["mdav", "ps"])
def test_the_released_groups_are_the_repaired_partition(name: str) -> None:
    rng = np.random.default_rng(11)
    X = rng.lognormal(sigma=2.0, size=(300, 3))  # skewed magnitudes: dominated groups
    cols = list("abc")
    plain = METHODS[name].mask(X, cols, _params(name), rng, None)
    assert dominance(plain.groups, X, p=10).n_groups_p_fail > 0
    res = METHODS[name].mask(X, cols, _params(name, dominance=True), rng, None)
    expected = repair_dominance(plain.groups, X, 10.0, Z=working_scale(X, True))
    np.testing.assert_array_equal(res.groups, expected.labels)
    np.testing.assert_allclose(res.points, group_means(X, res.groups))
    assert dominance(res.groups, X, p=10).n_groups_p_fail == 0
    assert np.bincount(res.groups).min() >= 3
    d = res.details["dominance"]
    assert d == {
        "p": 10.0,
        "columns": cols,
        "groups_failing_before": expected.failing_before,
        "groups_merged": expected.merged,
        "groups_failing_after": 0,
        "rounds": expected.rounds,
    }
    assert res.details["groups"] == expected.groups_after
    assert res.details["information_loss"] >= plain.details["information_loss"]


def test_a_key_with_negative_values_is_not_checked() -> None:
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.lognormal(sigma=2.0, size=90), rng.normal(size=90)])
    res = METHODS["mdav"].mask(
        X, ["turnover", "profit"], _params("mdav", dominance=True), rng, None
    )
    assert res.details["dominance"]["columns"] == ["turnover"]
    np.testing.assert_array_equal(
        res.groups, repair_dominance(mdav(X, 3), X, Z=working_scale(X, True)).labels
    )


def test_refused_with_missing_numbers() -> None:
    # such keys are grouped by MDAV-generic on the values present, which does not repair
    assert "dominance" in METHODS["mdav"].unapplied_with_missing_numbers(
        _params("mdav", dominance=True)
    )
    assert METHODS["mdav"].unapplied_with_missing_numbers(_params("mdav")) is None


def test_a_release_with_a_large_firm_publishes_with_the_remedy(tmp_path) -> None:
    # the release the p % gate refuses under plain MDAV (test_dominance_gate), with a
    # categorical key: the repair runs inside each stratum, its counts summed
    from sdcflow.cli.main import main

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": range(60),
            "region": np.repeat(["n", "s"], 30),
            "turnover": rng.uniform(100, 200, 60),
            "employees": rng.integers(1, 50, 60),
        }
    )
    frame.loc[7, "turnover"] = 2000.0  # one firm far larger than its neighbours
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "dominance",
        "source": "data.csv",
        "id_column": "id",
        "quasi_identifiers": ["region", "turnover", "employees"],
        "method": {"name": "mdav", "k": 3, "dominance": {"p": 10}},
        "checks": {"max_p_dominated_groups": 0},
        "output": "published/",
        "warehouse": "warehouse.duckdb",
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0
    manifest = json.loads(next((tmp_path / "published").rglob("manifest.json")).read_text())
    d = manifest["method_details"]["dominance"]
    assert d["parts"] == 2 and d["groups_failing_before"] >= 1 and d["groups_failing_after"] == 0
    assert d["groups_merged"] >= 1 and d["columns"] == ["turnover", "employees"]
