"""MDAV-generic: hand-computed cases, invariants, kernel == reference, published figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation.mdav import (
    group_means,
    mdav,
    mdav_groups,
    mdav_groups_reference,
)
from sdcflow.core.validation import standardize
from sdcflow.errors import InputError, Reason

BOTH = pytest.mark.parametrize(
    "groups", [mdav_groups_reference, mdav_groups], ids=["numpy", "numba"]
)


def check_partition(labels: np.ndarray, n: int, k: int) -> None:
    """MDAV-generic's shape: floor(n/k) groups numbered 0.., all of size k but the last."""
    g = n // k
    sizes = np.bincount(labels)
    assert labels.shape == (n,)
    assert sizes.size == g
    assert (sizes >= k).all() and (sizes <= 2 * k - 1).all()
    assert (sizes[:-1] == k).all()  # two groups of k per step; the remainder is the last group
    assert sizes[-1] == n - k * (g - 1)


# --- computed by hand ------------------------------------------------------------------------


@BOTH
def test_six_records_by_hand(groups) -> None:
    # k = 2, records x0..x5 = (0,0) (1,0) (10,0) (11,0) (0,5) (1,5).
    # centroid c = (23/6, 10/6) = (3.833, 1.667); squared distances to c:
    #   x0 17.47, x1 10.81, x2 40.81, x3 54.14, x4 25.81, x5 19.14  -> r = x3.
    # squared distances to r = (11,0): x0 121, x1 100, x2 1, x4 146, x5 125 -> s = x4.
    # group 0: r and its nearest, x2 (1)                          -> {x2, x3}
    # group 1: s = (0,5) and its nearest of x0 (25), x1 (26), x5 (1) -> {x4, x5}
    # 2 records left < 2k = 4: the last group                       -> {x0, x1}
    X = np.array([[0, 0], [1, 0], [10, 0], [11, 0], [0, 5], [1, 5]], dtype=float)
    labels = groups(X, 2)
    np.testing.assert_array_equal(labels, [2, 2, 0, 0, 1, 1])
    centroids = np.array([[10.5, 0.0], [0.5, 5.0], [0.5, 0.0]])
    np.testing.assert_array_equal(group_means(X, labels), centroids[labels])


@BOTH
def test_six_records_with_ties_by_hand(groups) -> None:
    # k = 2, one column: x0..x5 = 0, 0, 1, 2, 2, 3; centroid 8/6 = 1.333.
    # squared distances to c: 1.78, 1.78, 0.11, 0.44, 0.44, 2.78        -> r = x5 (3).
    # to r: x0 9, x1 9 (tie: lowest row)                                  -> s = x0.
    # r's nearest: x3 and x4 both at 1 (tie: lowest row)                  -> {x3, x5}
    # s's nearest among x1, x2, x4: x1 at 0                               -> {x0, x1}
    # rest                                                                -> {x2, x4}
    X = np.array([[0.0], [0.0], [1.0], [2.0], [2.0], [3.0]])
    np.testing.assert_array_equal(groups(X, 2), [1, 1, 2, 0, 2, 0])


@BOTH
def test_fewer_than_3k_records(groups) -> None:
    # n = 5, k = 2 (2k <= n < 3k): one group around r, the other 3 together.
    # x = 0, 1, 2, 3, 10: centroid 3.2, r = x4 (10), its nearest x3 (3) -> {x3, x4}; rest.
    X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0]])
    np.testing.assert_array_equal(groups(X, 2), [1, 1, 1, 0, 0])
    # n = 3, k = 2 (n < 2k): a single group.
    np.testing.assert_array_equal(groups(X[:3], 2), [0, 0, 0])


# --- invariants ------------------------------------------------------------------------------


@pytest.mark.parametrize("n,k", [(500, 3), (777, 5), (1000, 10), (64, 7)])
def test_partition_invariants(n: int, k: int) -> None:
    rng = np.random.default_rng(n + k)
    X = rng.lognormal(size=(n, 4)) * [1, 10, 1e3, 1e5]
    labels = mdav(X, k)
    check_partition(labels, n, k)
    masked = group_means(X, labels)
    frame = pd.DataFrame(X).groupby(labels).mean().to_numpy()
    np.testing.assert_allclose(masked, frame[labels], rtol=1e-12)
    # the masked file keeps the column means (group means are unbiased) and is k-anonymous
    np.testing.assert_allclose(masked.mean(axis=0), X.mean(axis=0), rtol=1e-10)
    assert np.unique(masked, axis=0, return_counts=True)[1].min() >= k


def test_unstandardized_groups_the_centred_values() -> None:
    # standardize=False forms the groups on the centred values: there the large column
    # decides, so the groups differ from the standardized ones
    X = np.random.default_rng(8).lognormal(size=(120, 3)) * [1, 1e3, 1e6]
    raw = mdav(X, 3, standardize=False)
    np.testing.assert_array_equal(raw, mdav_groups(X - X.mean(axis=0), 3))
    assert not np.array_equal(raw, mdav(X, 3))
    check_partition(raw, 120, 3)


# --- the compiled kernel gives the reference's groups ----------------------------------------


def test_compiled_distances_are_bit_equal_to_the_reference() -> None:
    # the whole identity argument rests on this: same operations, same order, no fused
    # multiply-add in the compiled code (a compiler or CPU change that fused them would fail)
    from sdcflow.core.microaggregation.mdav import _sq_dist, _sq_dist_rows

    rng = np.random.default_rng(11)
    P = rng.standard_normal((500, 7)) * rng.lognormal(size=7)
    q = rng.standard_normal(7)
    compiled = np.array([_sq_dist(P, i, q) for i in range(P.shape[0])])
    np.testing.assert_array_equal(compiled, _sq_dist_rows(P, q))


def test_compiled_distances_to_query_rows_are_bit_equal_to_the_reference() -> None:
    # the sweeps measure against a row of the query matrix (no view): same arithmetic
    from sdcflow.core.microaggregation.mdav import _sq_dist_rows, _sq_dist_to

    rng = np.random.default_rng(12)
    P = rng.standard_normal((400, 9)) * rng.lognormal(size=9)
    Q = rng.standard_normal((3, 9))
    for b in range(3):
        compiled = np.array([_sq_dist_to(P, i, Q, b) for i in range(P.shape[0])])
        np.testing.assert_array_equal(compiled, _sq_dist_rows(P, Q[b]))


def datasets() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 4, size=(400, 3)).astype(float)
    return {
        "normal": rng.standard_normal((1500, 10)),
        "lognormal": rng.lognormal(sigma=1.5, size=(1500, 6)),
        "duplicates": base,  # 64 distinct records, ties everywhere
        # near-ties: distinct in float64, equal in float32 (the filter must not decide them)
        "near_ties": np.repeat(base[:50], 4, axis=0) + 1e-12 * rng.standard_normal((200, 3)),
        "one_column": rng.integers(0, 20, size=(300, 1)).astype(float),
        "clustered": np.repeat(rng.standard_normal((30, 5)), 17, axis=0)[:500],
        "constant": np.ones((60, 2)),  # every distance 0: ties decide everything
        "mostly_constant": np.vstack([np.ones((300, 2)), rng.standard_normal((12, 2))]),
    }


@pytest.mark.parametrize("name", list(datasets()))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_kernel_equals_reference(name: str, k: int) -> None:
    Z, _, _ = standardize(datasets()[name])
    ref = mdav_groups_reference(Z, k)
    stats = np.zeros(4, dtype=np.int64)
    np.testing.assert_array_equal(mdav_groups(Z, k, stats=stats), ref)
    assert stats[2] > 0  # some r's were answered from speculative neighbour lists
    np.testing.assert_array_equal(mdav_groups(Z, k, precision="float64"), ref)
    np.testing.assert_array_equal(mdav_groups(Z, k, batch=0), ref)  # one sweep per search
    np.testing.assert_array_equal(mdav_groups(Z, k, batch=2), ref)  # frequent misses
    check_partition(ref, Z.shape[0], k)


@pytest.mark.parametrize("k", [2, 3, 4, 7])
@pytest.mark.parametrize("size", ["k", "2k-1", "2k", "3k-1", "3k", "3k+1"])
def test_kernel_equals_reference_small_n(k: int, size: str) -> None:
    n = {"k": k, "2k-1": 2 * k - 1, "2k": 2 * k, "3k-1": 3 * k - 1, "3k": 3 * k}.get(
        size, 3 * k + 1
    )
    rng = np.random.default_rng(n * 31 + k)
    for X in (rng.standard_normal((n, 3)), rng.integers(0, 2, size=(n, 2)).astype(float)):
        ref = mdav_groups_reference(X, k)
        np.testing.assert_array_equal(mdav_groups(X, k), ref)
        np.testing.assert_array_equal(mdav_groups(X, k, batch=0), ref)
        check_partition(ref, n, k)


@pytest.mark.parametrize("k", [127, 128, 129, 257, 300, 511, 512, 513, 600])
def test_kernel_equals_reference_for_large_k(k: int) -> None:
    """k above 128 records: the seed takes k records of the first block of 512 (no seed
    beyond it), so a sweep never reads its thresholds past the records seeded (an
    uninitialized buffer: a segfault or negative labels)."""
    rng = np.random.default_rng(k)
    for n in (2 * k, 2 * k + 1, 3 * k + 7, 5 * k + 3):
        X = rng.standard_normal((n, 3))
        ref = mdav_groups_reference(X, k)
        check_partition(ref, n, k)
        np.testing.assert_array_equal(mdav_groups(X, k), ref)
        np.testing.assert_array_equal(mdav_groups(X, k, batch=0), ref)


@settings(max_examples=60, deadline=None)
@given(
    X=arrays(
        np.float64,
        st.tuples(st.integers(2, 40), st.integers(1, 4)),
        elements=st.sampled_from([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0, 1e6]),
    ),
    k=st.integers(2, 6),
)
def test_kernel_equals_reference_property(X: np.ndarray, k: int) -> None:
    k = min(k, X.shape[0])
    ref = mdav_groups_reference(X, k)
    np.testing.assert_array_equal(mdav_groups(X, k), ref)
    np.testing.assert_array_equal(mdav_groups(X, k, batch=1), ref)


@pytest.mark.parametrize("d,k", [(10, 5), (3, 3), (12, 2)])
def test_threads_give_the_reference_labels(d: int, k: int) -> None:
    # beyond 4096 remaining records a speculative pass is shared by the threads
    Z, _, _ = standardize(np.random.default_rng(d + k).standard_normal((5000, d)))
    ref = mdav_groups_reference(Z, k)
    np.testing.assert_array_equal(mdav_groups(Z, k, threads=2), ref)
    np.testing.assert_array_equal(mdav_groups(Z, k, threads=2, batch=5), ref)


def test_large_values_use_float64_filter() -> None:
    # beyond 1e15 the float32 copy could overflow; the kernel switches to float64 by itself
    X = np.random.default_rng(3).standard_normal((300, 3)) * 1e20
    np.testing.assert_array_equal(mdav_groups(X, 4), mdav_groups_reference(X, 4))


# --- published figures -----------------------------------------------------------------------


@pytest.mark.data
@pytest.mark.parametrize("k,il", [(3, 5.692), (5, 9.088), (10, 14.156)])
def test_census_published_il(census: pd.DataFrame, k: int, il: float) -> None:
    X = census.to_numpy(dtype=float)
    assert X.shape == (1080, 13)
    labels = mdav(X, k)
    assert sse_sst_loss(X, group_means(X, labels)) == pytest.approx(il, abs=0.01)
    np.testing.assert_array_equal(labels, mdav(X, k, kernel="numpy"))


@pytest.mark.data
@pytest.mark.parametrize("k,il", [(3, 0.483), (5, 1.667), (10, 3.840)])
def test_eia_published_il(eia: pd.DataFrame, k: int, il: float) -> None:
    X = eia.to_numpy(dtype=float)
    assert X.shape[1] == 11
    labels = mdav(X, k)
    assert sse_sst_loss(X, group_means(X, labels)) == pytest.approx(il, abs=0.01)
    np.testing.assert_array_equal(labels, mdav(X, k, kernel="numpy"))


# --- bad input -------------------------------------------------------------------------------


def test_missing_value_names_the_column() -> None:
    X = np.ones((10, 2))
    X[3, 1] = np.nan
    with pytest.raises(InputError) as e:
        mdav(X, 2, columns=["turnover", "wages"])
    assert e.value.code is Reason.VALUES_NONFINITE and e.value.field == "wages"


@pytest.mark.parametrize(
    "k,code", [(1, Reason.PARAMETER), (0, Reason.PARAMETER), (11, Reason.TOO_FEW_RECORDS)]
)
def test_bad_k(k: int, code: Reason) -> None:
    with pytest.raises(InputError) as e:
        mdav(np.random.default_rng(0).standard_normal((10, 2)), k)
    assert e.value.code is code and e.value.field == "k"


def test_non_integer_k() -> None:
    with pytest.raises(InputError) as e:
        mdav(np.ones((10, 2)), 2.5)
    assert e.value.code is Reason.PARAMETER and e.value.field == "k"


def test_non_numeric() -> None:
    X = np.array([["1", "a"], ["2", "b"], ["3", "c"]], dtype=object)
    with pytest.raises(InputError) as e:
        mdav(X, 2)
    assert e.value.code is Reason.DATA and e.value.field == "X"


def test_unknown_kernel() -> None:
    with pytest.raises(InputError) as e:
        mdav(np.ones((10, 2)), 2, kernel="fortran")
    assert e.value.code is Reason.PARAMETER and e.value.field == "kernel"


@pytest.mark.parametrize(
    "option", [{"precision": "float16"}, {"batch": -1}, {"threads": 0}, {"threads": 1.5}]
)
def test_bad_kernel_option(option: dict) -> None:
    with pytest.raises(InputError) as e:
        mdav_groups(np.ones((10, 2)), 2, **option)
    assert e.value.code is Reason.PARAMETER and e.value.field == next(iter(option))
