"""The transparency intruder declared by the methods, alone and over blocks, by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from sdcflow.core.measures.disclosure_risk import reidentification_probabilities
from sdcflow.methods import MdavParams
from sdcflow.methods.base import combined_probabilities, transparency_probabilities
from sdcflow.methods.blocks import mask_quasi_identifiers


def _crisp(labels: np.ndarray) -> sparse.csr_matrix:
    n = labels.size
    return sparse.csr_matrix((np.ones(n), (np.arange(n), labels)))


def test_one_block_is_max_u_over_group_size():
    # Three released groups of sizes 2, 1, 1. Record 0 is split 0.5 / 0.5 between groups 0
    # and 1: max(0.5 / 2, 0.5 / 1) = 0.5. The others are crisp: 1/2, 1, 1.
    labels = np.array([0, 0, 1, 2])
    U = sparse.csr_matrix(np.array([[0.5, 0.5, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]))
    P = combined_probabilities([U], [labels])
    assert P == pytest.approx([0.5, 0.5, 1.0, 1.0])
    dense = reidentification_probabilities(labels, U.toarray())
    assert P == pytest.approx(dense)


def test_crisp_blocks_count_records_sharing_the_whole_tuple():
    # Block a groups {0,1,2,3} by pairs, block b by {0,2},{1,3}: every joint tuple is unique,
    # so the intruder who reruns both finds every record (P = 1), although each block alone
    # has groups of 2.
    a = np.array([0, 0, 1, 1])
    b = np.array([0, 1, 0, 1])
    assert combined_probabilities([_crisp(a), _crisp(b)], [a, b]) == pytest.approx([1, 1, 1, 1])
    b = np.array([0, 0, 1, 1])  # the same pairs: tuples of 2
    assert combined_probabilities([_crisp(a), _crisp(b)], [a, b]) == pytest.approx([0.5] * 4)


def test_random_blocks_multiply_their_draw_probabilities():
    # Two records, two blocks; record 0 draws group 0 of block 1 with 0.8 (group 1: 0.2) and
    # is crisp in block 2. Released tuples: r0 = (0, 0), r1 = (1, 0), each once.
    # Record 0: max(0.8 * 1 / 1, 0.2 * 1 / 1) = 0.8; record 1 (crisp (1, 0)): 1.
    labels1, labels2 = np.array([0, 1]), np.array([0, 0])
    U1 = sparse.csr_matrix(np.array([[0.8, 0.2], [0.0, 1.0]]))
    U2 = sparse.csr_matrix(np.array([[1.0], [1.0]]))
    P = combined_probabilities([U1, U2], [labels1, labels2])
    assert P == pytest.approx([0.8, 1.0])


def test_mdav_by_blocks_is_attacked_on_the_joint_tuple():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    cols = ["a", "b", "c", "d"]
    result = mask_quasi_identifiers(X, cols, MdavParams(k=3), rng, None, [["a", "b"], ["c", "d"]])
    P = transparency_probabilities(X, cols, result)
    tuples = np.stack([b.result.groups for b in result.blocks], axis=1)
    _, inverse, counts = np.unique(tuples, axis=0, return_inverse=True, return_counts=True)
    assert P == pytest.approx(1.0 / counts[inverse.reshape(-1)])
    assert P.max() > 1 / 3  # the joint tuple is rarer than each block's groups
