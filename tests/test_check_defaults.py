"""Default gates: what a method promises is checked even when the spec does not ask."""

from __future__ import annotations

import numpy as np

from sdcflow.gates import GateContext, run_gates
from sdcflow.methods import METHODS, MdavParams
from sdcflow.methods.blocks import mask_quasi_identifiers

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


def _blocked(**context):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(203, 4))
    params = MdavParams(k=5)
    result = mask_quasi_identifiers(X, COLS, params, rng, None, [["a", "b"], ["c", "d"]])
    return GateContext(X, COLS, result, params, **context)


def test_blocks_are_gated_per_block_and_jointly():
    # Blocks masked separately are k-anonymous block by block, but the joint tuple of two
    # independent groupings is (almost surely) not: an intruder may know every
    # quasi-identifier, so the joint k is gated at the method's k too and the release is
    # refused by default (before, only the per-block k was gated: Census in two blocks was
    # published with k = 1 over its 13 keys).
    out = {o.key: o for o in run_gates(_blocked(), {})}
    assert out["block_k_anonymity"].figure >= 5 and out["block_k_anonymity"].passed
    assert out["k_anonymity"].threshold == 5 and not out["k_anonymity"].passed
    # a spec that assumes an intruder knows one block at most says so explicitly
    accepted = _blocked(accept_looser=frozenset({"k_anonymity"}))
    out = {o.key: o for o in run_gates(accepted, {"k_anonymity": 1})}
    assert out["k_anonymity"].passed and out["k_anonymity"].threshold == 1
    assert out["block_k_anonymity"].threshold == 5 and out["block_k_anonymity"].passed
    # without the acceptance a lower threshold does not loosen the default
    out = {o.key: o for o in run_gates(_blocked(), {"k_anonymity": 1})}
    assert out["k_anonymity"].threshold == 5 and not out["k_anonymity"].passed


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
