"""The perturbative methods as `method:` entries (issue 44): noise, rank_swap and pram release
end to end, gated by record linkage, never by k, and the manifest keeps their secrets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from survey import EXAMPLE, QIS, write_release

import sdcflow
from sdcflow.errors import InputError, Reason
from sdcflow.methods import get_method
from sdcflow.methods.keys import EncodedKeys, Key, SuppressionSettings

SEED = 918273645


def _published(tmp_path, **spec):
    path = write_release(tmp_path, seed=SEED, **spec)
    outcome = sdcflow.release(path)
    assert outcome.status == "published", outcome.message
    text = (outcome.published / "manifest.json").read_text()
    return outcome, json.loads(text), text


@pytest.mark.parametrize(
    "method, rows",
    [
        ({"name": "noise"}, 300),
        ({"name": "noise", "kind": "correlated", "noise": 100}, 300),
        ({"name": "rank_swap", "p": 15}, 1000),
    ],
)
def test_numeric_perturbation_releases_gated_by_record_linkage(tmp_path, prefect_api, method, rows):
    outcome, manifest, text = _published(tmp_path, rows=rows, quasi_identifiers=QIS, method=method)
    assert manifest["method"]["name"] == method["name"]
    assert "seed" not in manifest["method"] and str(SEED) not in text
    gates = {g["check"]: g for g in manifest["checks"]}
    assert gates["max_record_linkage"]["threshold"] == 10.0
    assert "k_anonymity" not in gates
    released = pd.read_csv(outcome.published / "data.csv")
    original = pd.read_csv(tmp_path / "data.csv")
    assert (released[QIS].to_numpy() != original[QIS].to_numpy()).any()
    if method["name"] == "rank_swap":  # each key's values only change records
        for c in QIS:
            assert sorted(released[c]) == sorted(original[c])


def test_pram_releases_categorical_keys_without_its_matrix(tmp_path, prefect_api):
    outcome, manifest, text = _published(
        tmp_path,
        rows=400,
        quasi_identifiers=["region", "sector"],
        method={"name": "pram", "pd": 0.6},
    )
    assert manifest["method"] == {"name": "pram", "pd": 0.6, "alpha": 0.5}
    assert str(SEED) not in text
    assert "matrix" not in json.dumps(manifest["method"])
    details = manifest["method_details"]
    assert set(details["invariance"]) == {"region", "sector"}  # figures, never the matrix
    assert details["invariance"]["region"]["categories"] == 4
    assert details["invariance"]["region"]["largest_expected_frequency_change"] < 1e-6
    released = pd.read_csv(outcome.published / "data.csv")
    original = pd.read_csv(tmp_path / "data.csv")
    assert (released["sector"] != original["sector"]).any()
    assert set(released["region"]) <= set(original["region"])


@pytest.mark.parametrize(
    "method, checks",
    [
        ({"name": "noise"}, {"k_anonymity": 3}),
        ({"name": "rank_swap"}, {"block_k_anonymity": 5}),
        ({"name": "pram"}, {"k_anonymity": 5}),
    ],
)
def test_a_k_gate_on_perturbation_is_refused_with_the_reason(tmp_path, method, checks):
    keys = ["region", "sector"] if method["name"] == "pram" else QIS
    spec = write_release(tmp_path, rows=40, quasi_identifiers=keys, method=method, checks=checks)
    with pytest.raises(InputError, match="gives no k-anonymity") as e:
        sdcflow.release(spec, publish=False)
    assert "max_record_linkage" in str(e.value)
    assert e.value.code is Reason.SPEC_CONTRADICTION  # exit 2, before any work


@pytest.mark.parametrize(
    "method, keys, named",
    [
        ({"name": "noise"}, [*QIS, "region"], "no k to stratify"),
        ({"name": "pram"}, ["region", "turnover"], "turnover are numeric"),
        ({"name": "noise", "kind": "correlated"}, ["turnover"], "at least two numeric"),
        ({"name": "noise", "kind": "restricted"}, QIS, "inverted exactly"),
    ],
)
def test_keys_or_parameters_a_method_cannot_release_are_refused(tmp_path, method, keys, named):
    spec = write_release(tmp_path, rows=40, quasi_identifiers=keys, method=method)
    with pytest.raises(InputError, match=named):
        sdcflow.release(spec, publish=False)


def test_pram_keeps_category_frequencies_in_expectation():
    """Over repeated draws the mean released frequencies are the observed ones (invariant
    matrix), while a good share of the values change."""
    gen = np.random.default_rng(5)
    codes = gen.choice(4, size=(2000, 1), p=[0.5, 0.3, 0.15, 0.05]).astype(np.int64)
    key = Key("size", "nominal")
    enc = EncodedKeys(np.zeros((2000, 0)), [], codes, [key], [["a", "b", "c", "d"]])
    entry = get_method("pram")
    params = entry.params(pd=0.5, alpha=1.0)
    t = np.bincount(codes[:, 0], minlength=4)
    rng = np.random.default_rng(0)
    draws = [
        np.bincount(
            entry.mask_keys(enc, params, rng, SuppressionSettings()).codes[:, 0], minlength=4
        )
        for _ in range(200)
    ]
    mean = np.mean(draws, axis=0)
    changed = (entry.mask_keys(enc, params, rng, SuppressionSettings()).codes != codes).mean()
    assert np.abs(mean - t).max() < 0.02 * t.sum()
    assert changed > 0.1


def test_transformers_call_the_registry_methods():
    from sdcflow import Noise, Pram, RankSwap

    X = pd.DataFrame(np.random.default_rng(1).normal(size=(200, 3)), columns=["a", "b", "c"])
    swapped = RankSwap(p=10, random_state=0).fit_transform(X)
    assert all(sorted(swapped[c]) == sorted(X[c]) for c in X)
    noisy = Noise(kind="correlated", noise=50, random_state=0).fit_transform(X)
    assert noisy.shape == X.shape and not np.allclose(noisy, X)
    frame = pd.DataFrame({"sector": list("abcd") * 50})
    released = Pram(pd=0.5, random_state=0).fit_transform(frame)
    assert set(released["sector"]) <= set("abcd") and (released != frame).any().any()
    assert "invariance" in Pram(random_state=0).fit(frame).details_


def test_the_working_object_masks_and_gates_them_through_the_registry():
    from sdcflow import SdcFrame

    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    swapped = SdcFrame(frame, keys=QIS, random_state=0).mask("rank_swap", p=15)
    gates = swapped.check().set_index("check")
    assert list(gates.index) == ["max_record_linkage"]  # the method's default gate only
    assert gates.loc["max_record_linkage", "threshold"] == 10.0
    pram = SdcFrame(frame, keys=["region", "sector"], random_state=0).mask("pram", pd=0.6)
    assert set(pram.released["sector"]) <= set(frame["sector"])
