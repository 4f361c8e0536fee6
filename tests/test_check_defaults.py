"""Default gates: what a method promises is checked even when the spec does not ask."""

from __future__ import annotations

import numpy as np

from sdcflow.tasks.gates import GateContext, run_gates
from sdcflow.tasks.methods import METHODS, MdavParams
from sdcflow.tasks.methods.blocks import mask_quasi_identifiers

COLS = ["a", "b", "c", "d"]


def _outcomes(params, blocks=None, thresholds=None, edit_violations=None):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(203, 4))
    result = mask_quasi_identifiers(X, COLS, params, rng, None, blocks)
    ctx = GateContext(X, COLS, result, params, edit_violations=edit_violations)
    return {o.key: o for o in run_gates(ctx, thresholds or {})}


def test_mdav_is_gated_on_its_k_without_being_asked():
    out = _outcomes(MdavParams(k=5))
    assert out["k_anonymity"].threshold == 5 and out["k_anonymity"].passed
    assert "max_edit_violations" not in out  # no rule was evaluated: no vacuous pass


def test_edit_rules_evaluated_on_the_release_are_always_gated():
    out = _outcomes(MdavParams(k=5), edit_violations={"R1": 0, "R2": 3})
    assert out["max_edit_violations"].figure == 3 and not out["max_edit_violations"].passed


def test_spec_threshold_overrides_the_default():
    out = _outcomes(MdavParams(k=5), thresholds={"k_anonymity": 6})
    assert out["k_anonymity"].threshold == 6 and not out["k_anonymity"].passed


def test_blocks_are_gated_per_block():
    out = _outcomes(MdavParams(k=5), blocks=[["a", "b"], ["c", "d"]])
    assert "k_anonymity" not in out
    assert out["block_k_anonymity"].figure >= 5 and out["block_k_anonymity"].passed
    # The joint tuple of two independent groupings is (almost surely) not 5-anonymous: the
    # spec can still demand it, and then the release is refused.
    joint = _outcomes(
        MdavParams(k=5), blocks=[["a", "b"], ["c", "d"]], thresholds={"k_anonymity": 5}
    )
    assert not joint["k_anonymity"].passed


def test_box_gets_containment_and_l_gates():
    params = METHODS["box"].params.model_validate({"name": "box", "k": 4, "l": 2})
    out = _outcomes(params)
    assert {
        "k_anonymity",
        "box_max_records_outside",
        "box_max_targets_outside",
        "box_l_diversity",
    } <= set(out)
    assert all(o.passed for o in out.values())
