"""Fuzzy releases masked in blocks: the expected group size is gated over the released
tuples of block centres, not only per block."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from survey import QIS, write_release

from sdcflow.cli.main import main
from sdcflow.core.measures.anonymity import expected_tuple_sizes
from sdcflow.gates import GateContext, default_gates, run_gates
from sdcflow.methods import METHODS
from sdcflow.methods.base import BlockResult, MaskResult
from sdcflow.methods.blocks import mask_quasi_identifiers

# Four records, two blocks of one key each, two centres per block: explicit draw
# probabilities (rows sum to 1) and the centres each record was released as.
P1 = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.25, 0.75]])
P2 = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
L1 = np.array([0, 0, 1, 1])
L2 = np.array([0, 1, 1, 0])


def _part(P: np.ndarray, labels: np.ndarray, column: str) -> MaskResult:
    points = labels.astype(float)[:, None]
    return MaskResult(
        masked=pd.DataFrame(points, columns=[column]),
        points=points,
        groups=labels,
        expected_sizes=P.sum(axis=0),
        draw_probabilities=sparse.csr_matrix(P),
    )


def _fuzzy(k: int = 5):
    return METHODS["fuzzy"].params.model_validate({"name": "fuzzy", "k": k, "restarts": 1})


def test_joint_expected_size_by_hand():
    # E(t) = sum_i P1[i, t1] P2[i, t2]:
    #   (0, 0): 1*.5 + .5*1 + 0*0 + .25*.5 = 1.125   (0, 1): 1*.5 + 0 + 0 + .25*.5 = 0.625
    #   (1, 0): 0 + .5*1 + 0 + .75*.5      = 0.875   (1, 1): 0 + 0 + 1*1 + .75*.5  = 1.375
    # (together n = 4); each block's centres expect 1.75 and 2.25 records.
    tuples, expected = expected_tuple_sizes(
        [sparse.csr_matrix(P1), sparse.csr_matrix(P2)], [L1, L2]
    )
    assert tuples.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    np.testing.assert_allclose(expected, [1.125, 0.625, 0.875, 1.375])
    np.testing.assert_allclose(expected, (P1.T @ P2)[tuples[:, 0], tuples[:, 1]])
    # only the tuples the file releases count: without (0, 1) the smallest is 0.875
    _, released = expected_tuple_sizes(
        [sparse.csr_matrix(P1), sparse.csr_matrix(P2)], [L1, np.array([0, 0, 1, 0])]
    )
    np.testing.assert_allclose(released, [1.125, 0.875, 1.375])
    # the gate reads the draw probabilities the blocks kept
    result = MaskResult(
        masked=pd.DataFrame({"a": L1.astype(float), "b": L2.astype(float)}),
        points=np.stack([L1, L2], axis=1).astype(float),
        blocks=[BlockResult(["a"], _part(P1, L1, "a")), BlockResult(["b"], _part(P2, L2, "b"))],
    )
    ctx = GateContext(np.zeros((4, 2)), ["a", "b"], result, _fuzzy(k=2))
    out = {o.key: o for o in run_gates(ctx, {})}
    assert out["probabilistic_k_anonymity"].figure == pytest.approx(0.625)
    assert not out["probabilistic_k_anonymity"].passed
    assert out["block_probabilistic_k_anonymity"].figure == pytest.approx(1.75)


def test_one_block_is_the_expected_size_of_the_released_centres():
    _, expected = expected_tuple_sizes([sparse.csr_matrix(P1)], [L1])
    np.testing.assert_allclose(expected, [1.75, 2.25])
    # both centres are released: the existing (per-centre) figure of the unblocked release
    ctx = GateContext(np.zeros((4, 1)), ["a"], _part(P1, L1, "a"), _fuzzy(k=2))
    figure = {o.key: o.figure for o in run_gates(ctx, {})}["probabilistic_k_anonymity"]
    assert figure == pytest.approx(expected.min())
    # on a fuzzy release: the expected sizes of the released centres, never below the
    # per-centre figure (which takes every candidate centre)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    result = mask_quasi_identifiers(X, ["a", "b"], _fuzzy(), rng)
    ctx = GateContext(X, ["a", "b"], result, _fuzzy())
    figure = {o.key: o.figure for o in run_gates(ctx, {})}["probabilistic_k_anonymity"]
    tuples, expected = expected_tuple_sizes([result.draw_probabilities], [result.groups])
    np.testing.assert_allclose(expected, result.expected_sizes[tuples[:, 0]])
    assert expected.min() >= figure >= 5
    # deterministic blocks: the joint figure is the size of every released tuple
    crisp = [MaskResult(pd.DataFrame(), lab[:, None], lab).draw_matrix() for lab in (L1, L2)]
    assert expected_tuple_sizes(crisp, [L1, L2])[1].tolist() == [1, 1, 1, 1]
    assert expected_tuple_sizes([crisp[0], crisp[0]], [L1, L1])[1].tolist() == [2, 2]


def test_blocks_get_the_joint_and_the_per_block_expected_size_by_default():
    gates = default_gates(_fuzzy(), blocked=True, edit_rules=False)
    assert gates == {"probabilistic_k_anonymity": 5.0, "block_probabilistic_k_anonymity": 5.0}
    assert default_gates(_fuzzy(), blocked=False, edit_rules=False) == {
        "probabilistic_k_anonymity": 5.0
    }


@pytest.mark.flow
def test_fuzzy_blocks_refused_by_default_published_when_accepted(tmp_path, prefect_api, capsys):
    blocks = [["employees", "turnover", "wages"], ["other_costs", "total_costs", "profit"]]
    method = {"name": "fuzzy", "k": 5, "restarts": 1}

    def spec(**extra):
        return write_release(
            tmp_path, rows=150, quasi_identifiers=QIS, method=method, blocks=blocks, seed=7,
            release="fb", **extra,
        )  # fmt: skip

    # each block's centres hold >= 5 records in expectation, the released tuples do not
    assert main(["release", str(spec())]) == 1
    err = capsys.readouterr().err
    assert "probabilistic_k_anonymity" in err and "nothing was published" in err
    assert not (tmp_path / "published").exists()
    # a spec assuming an intruder knows one block at most says so, and is published
    accepted = spec(
        checks={"probabilistic_k_anonymity": 0},
        accept={"looser_checks": ["probabilistic_k_anonymity"]},
    )
    assert main(["release", str(accepted)]) == 0
    manifest = json.loads((tmp_path / "published" / "fb" / "manifest.json").read_text())
    checks = {c["check"]: c for c in manifest["checks"]}
    joint, per_block = (
        checks["probabilistic_k_anonymity"],
        checks["block_probabilistic_k_anonymity"],
    )
    assert joint["threshold"] == 0 and joint["figure"] < 5
    assert per_block["threshold"] == 5 and per_block["figure"] >= 5
