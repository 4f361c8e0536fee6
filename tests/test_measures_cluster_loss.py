"""Cluster-specific information loss: indices and distances by hand, the paper on Census."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.fuzzy.fcm import FCMResult, memberships
from sdcflow.core.measures.cluster_loss import (
    adjusted_rand_index,
    align_clusters,
    alpha_cut,
    centre_distance,
    cluster_loss,
    compare_partitions,
    fuzzy_cmeans,
    jaccard_index,
    membership_distance,
    pair_counts,
    rand_index,
    standardize_like,
)
from sdcflow.errors import InputError, Reason


def _labels(labels: list[int]) -> np.ndarray:
    return np.eye(max(labels) + 1, dtype=bool)[labels]


def _brute_pairs(A: np.ndarray, B: np.ndarray) -> tuple[int, int, int, int]:
    """Reference: look at every pair (i, j) and ask whether a set of each family holds both."""
    a = b = c = d = 0
    for i, j in combinations(range(A.shape[0]), 2):
        ta, tb = bool((A[i] & A[j]).any()), bool((B[i] & B[j]).any())
        a += ta and tb
        b += ta and not tb
        c += tb and not ta
        d += not ta and not tb
    return a, b, c, d


def test_indices_by_hand_partitions():
    # A = [0,0,1,1], B = [0,0,0,1]. Pairs 01: same/same (a); 02, 12: apart/same (c);
    # 23: same/apart (b); 03, 13: apart/apart (d) -> (1, 1, 2, 2).
    counts = pair_counts(_labels([0, 0, 1, 1]), _labels([0, 0, 0, 1]))
    assert counts == (1, 1, 2, 2)
    assert rand_index(*counts) == pytest.approx(3 / 6)
    assert jaccard_index(*counts) == pytest.approx(1 / 4)
    assert adjusted_rand_index(*counts) == pytest.approx(0.0)  # 2(1*2 - 1*2) = 0
    # A = [0,0,0,1,1,1], B = [0,0,1,1,2,2]: contingency sum C(n_ij, 2) = 1 + 1 = 2,
    # sum C(a_i, 2) = 6, sum C(b_j, 2) = 3, N = 15: ARI = (2 - 6*3/15) / ((6+3)/2 - 1.2)
    # = 0.8 / 3.3; Rand = (a + d)/N with a = 2, b = 4, c = 1, d = 8 -> 10/15; J = 2/7.
    counts = pair_counts(_labels([0, 0, 0, 1, 1, 1]), _labels([0, 0, 1, 1, 2, 2]))
    assert counts == (2, 4, 1, 8)
    assert adjusted_rand_index(*counts) == pytest.approx(0.8 / 3.3)
    assert rand_index(*counts) == pytest.approx(10 / 15)
    assert jaccard_index(*counts) == pytest.approx(2 / 7)
    # [0,0,1,1] vs [0,0,1,2]: a = 1, b = 1, c = 0, d = 4 -> ARI 2*4/(2*5 + 1*4) = 4/7
    assert adjusted_rand_index(*pair_counts(_labels([0, 0, 1, 1]), _labels([0, 0, 1, 2]))) == (
        pytest.approx(4 / 7)
    )


def test_indices_by_hand_overlapping_cuts():
    # A sets {0,1,2}, {2,3}; record 4 in none. B sets {0,1}, {1,2,3,4}.
    # together in A: 01 02 12 23; in B: 01 12 13 14 23 24 34. N = 10.
    # a = {01, 12, 23} = 3, b = {02} = 1, c = {13, 14, 24, 34} = 4, d = 2.
    A = np.zeros((5, 2), dtype=bool)
    A[[0, 1, 2], 0] = A[[2, 3], 1] = True
    B = np.zeros((5, 2), dtype=bool)
    B[[0, 1], 0] = B[[1, 2, 3, 4], 1] = True
    counts = pair_counts(A, B)
    assert counts == (3, 1, 4, 2)
    assert rand_index(*counts) == pytest.approx(0.5)
    assert jaccard_index(*counts) == pytest.approx(3 / 8)
    assert adjusted_rand_index(*counts) == pytest.approx(2 * (3 * 2 - 1 * 4) / (4 * 3 + 7 * 6))


@pytest.mark.parametrize("alpha", [0.9, 0.5, 0.1])
def test_pair_counts_match_brute_force(alpha):
    rng = np.random.default_rng(int(alpha * 10))
    U = rng.dirichlet(np.full(4, 0.7), size=40)
    V = rng.dirichlet(np.full(4, 0.7), size=40)
    A, B = alpha_cut(U, alpha), alpha_cut(V, alpha)
    assert pair_counts(A, B, block=7) == _brute_pairs(A, B)


def test_fcm_memberships_by_hand():
    # centres 0 and 2. Record 0 coincides with centre 0 -> (1, 0). Record 1: d^2 = 1, 1 ->
    # (1/2, 1/2). Record 3: d^2 = 9, 1; m = 2 (exponent 1): u_0 = 1 / (1 + 9) = 0.1;
    # m = 1.5 (exponent 2): u_0 = 1 / (1 + 81) = 1/82.
    Z = np.array([[0.0], [1.0], [3.0]])
    V = np.array([[0.0], [2.0]])
    expected = np.array([[1, 0], [0.5, 0.5], [0.1, 0.9]])
    np.testing.assert_allclose(memberships(Z, V, 2.0), expected, rtol=1e-12)
    assert memberships(Z, V, 1.5)[2] == pytest.approx([1 / 82, 81 / 82])


def test_alignment_is_optimal_not_greedy_and_d1_d2_by_hand():
    # V = (0, 1), V' = (0.9, -1). Greedy (nearest for cluster 0 first) pairs 0-0.9 then
    # 1-(-1): 0.9 + 2 = 2.9. Optimal: 0-(-1) and 1-0.9: 1 + 0.1 = 1.1 = d1.
    V = np.array([[0.0], [1.0]])
    Vp = np.array([[0.9], [-1.0]])
    perm = align_clusters(V, Vp)
    assert list(perm) == [1, 0]
    assert centre_distance(V, Vp, perm) == pytest.approx(1.1)
    # memberships: record 0 (1, 0) vs aligned (0.8, 0.2): sqrt(0.04 + 0.04); record 1 equal.
    U = np.array([[1.0, 0.0], [0.5, 0.5]])
    Up = np.array([[0.2, 0.8], [0.5, 0.5]])
    assert membership_distance(U, Up, perm) == pytest.approx(np.sqrt(0.08))
    assert membership_distance(U, Up, perm, squared=True) == pytest.approx(0.08)


def test_fcm_finds_two_obvious_clusters_and_identical_files_lose_nothing():
    rng = np.random.default_rng(0)
    Z = np.vstack([rng.normal(0, 0.1, (30, 2)), rng.normal(5, 0.1, (30, 2))])
    fp = fuzzy_cmeans(Z, 2, restarts=3)
    assert sorted(fp.centers[:, 0].round(0)) == [0.0, 5.0]
    assert fp.converged and fp.memberships.sum(axis=1) == pytest.approx(1.0)
    loss = cluster_loss(Z, Z, c=2, restarts=3)
    assert loss.d1 == 0.0 and loss.d2 == 0.0
    assert all(v == 1.0 for idx in loss.alpha.values() for v in idx.values())


def test_bad_parameters_are_input_errors():
    Z = np.zeros((5, 2))
    with pytest.raises(InputError) as e:
        fuzzy_cmeans(Z, 6)
    assert e.value.code is Reason.PARAMETER and e.value.field == "c"
    with pytest.raises(InputError) as e:
        fuzzy_cmeans(Z, 2, m=1.0)
    assert e.value.code is Reason.PARAMETER and e.value.field == "m"
    with pytest.raises(InputError) as e:
        alpha_cut(np.ones((2, 1)), 1.0)
    assert e.value.code is Reason.PARAMETER and e.value.field == "alpha"


@pytest.mark.data
def test_census_objective_and_monotone_loss_with_noise(census: pd.DataFrame):
    """[1] Table 3: Census, first two variables, c = 10, additive noise of growing size.

    Noise: x'_j = x_j + N(0, (p sd_j)^2) for p = 0.1, 0.25, 0.5, 1, 2 (one draw each, fixed
    seed). With this seed (20 restarts, m = 1.5): original objective 225.2653 (paper 225.26);
    d1 and d2 grow strictly with p, and the adjusted Rand index of the 0.5-cuts falls.
    """
    X = census.iloc[:, :2].to_numpy(dtype=float)
    Z, _ = standardize_like(X, X)
    original = fuzzy_cmeans(Z, 10, restarts=20, random_state=0)
    assert original.objective == pytest.approx(225.26, abs=0.02)
    rng = np.random.default_rng(2008)
    sd = X.std(axis=0)
    losses = []
    for p in (0.1, 0.25, 0.5, 1.0, 2.0):
        Xp = X + rng.normal(size=X.shape) * p * sd
        _, Zp = standardize_like(X, Xp)
        protected: FCMResult = fuzzy_cmeans(Zp, 10, restarts=20, random_state=0)
        losses.append(compare_partitions(original, protected))
    d1 = [loss.d1 for loss in losses]
    d2 = [loss.d2 for loss in losses]
    ari = [loss.alpha[0.5]["adjusted_rand"] for loss in losses]
    assert np.all(np.diff(d1) > 0), d1
    assert np.all(np.diff(d2) > 0), d2
    assert np.all(np.diff([loss.d2_squared for loss in losses]) > 0)
    assert np.all(np.diff(ari) < 0), ari
