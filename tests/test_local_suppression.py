"""Local suppression: the exact solver against brute force, the greedy against the exact
solver, hand cases, strata, importance."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from sdcflow.errors import InputError
from sdcflow.tasks.suppression.local import (
    frequencies,
    importance_rank,
    local_suppression,
    restore,
    strata_suppression,
)


@functools.cache
def _brute_force(table: bytes, shape: tuple[int, int], k: int) -> int:
    C = np.frombuffer(table, dtype=np.int32).reshape(shape)
    n, d = shape
    cells = [(i, a) for i in range(n) for a in range(d) if C[i, a] >= 0]
    index = {cell: c for c, cell in enumerate(cells)}
    masks = np.arange(2 ** len(cells), dtype=np.uint32)  # every set of suppressed values
    bit = [((masks >> c) & 1).astype(bool) for c in range(len(cells))]
    f = np.ones((n, masks.size), dtype=np.int16)  # each record matches itself
    for i, j in itertools.combinations(range(n), 2):
        match = np.ones(masks.size, dtype=bool)
        for a in range(d):
            if C[i, a] >= 0 and C[j, a] >= 0 and C[i, a] != C[j, a]:
                match &= bit[index[(i, a)]] | bit[index[(j, a)]]
        f[i] += match
        f[j] += match
    feasible = (f >= k).all(axis=0)
    sizes = np.bitwise_count(masks)
    return int(sizes[feasible].min())


def brute_force_fewest(C: np.ndarray, k: int) -> int:
    """The fewest suppressions making every frequency >= k, over every set of values (2^cells,
    tiny tables only): record i matches j when, on every key where both hold different
    values, one of the two is suppressed."""
    C = np.ascontiguousarray(C, dtype=np.int32)
    return _brute_force(C.tobytes(), C.shape, int(k))


def random_table(rng: np.random.Generator, n: int, d: int, missing: float = 0.1) -> np.ndarray:
    C = rng.integers(0, 3, (n, d)).astype(np.int32)
    C[rng.random((n, d)) < missing] = -1
    return C


@pytest.mark.parametrize("seed", range(12))
def test_exact_is_the_brute_force_minimum(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(5, 8)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    C = random_table(rng, n, d)
    exact = local_suppression(C, k, algorithm="exact")
    assert exact.optimal and exact.frequencies.min() >= k
    assert frequencies(exact.codes).tolist() == exact.frequencies.tolist()
    assert exact.total == brute_force_fewest(C, k)
    # only present values are suppressed, and the codes show exactly those
    assert not (exact.suppressed & (C < 0)).any()
    assert ((exact.codes < 0) == ((C < 0) | exact.suppressed)).all()


@pytest.mark.parametrize("seed", range(12))
def test_greedy_is_k_anonymous_minimal_and_never_below_the_minimum(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(5, 8)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    C = random_table(rng, n, d)
    greedy = local_suppression(C, k, algorithm="greedy")
    assert greedy.frequencies.min() >= k
    assert frequencies(greedy.codes).tolist() == greedy.frequencies.tolist()
    assert greedy.total >= brute_force_fewest(C, k)
    # minimal: no single suppressed value can be given back
    for i, a in zip(*np.nonzero(greedy.suppressed), strict=True):
        D = greedy.codes.copy()
        D[i, a] = C[i, a]
        assert frequencies(D).min() < k


def test_greedy_on_a_block_suppresses_the_singletons_only():
    # Sex agrees; ages 1, 2, 3 once each, age 4 twice, age 5 three times; k = 5.
    # Suppressing the three singleton ages lifts every age class by 3: 2 + 3 >= 5 and
    # 3 + 3 >= 5, and the three suppressed records match all 8: 3 suppressions, the minimum
    # (2 would leave class 4 at 2 + 2 < 5; suppressing others instead needs more).
    ages = [1, 2, 3, 4, 4, 5, 5, 5]
    C = np.array([[a, 0] for a in ages], dtype=np.int32)
    greedy = local_suppression(C, 5, algorithm="greedy")
    assert greedy.total == 3 == brute_force_fewest(C, 5)
    assert sorted(np.flatnonzero(greedy.suppressed[:, 0]).tolist()) == [0, 1, 2]
    assert greedy.per_key(["age", "sex"]) == {"age": 3, "sex": 0}


def test_importance_decides_between_equally_cheap_keys():
    # Record 4 is unique; suppressing either key makes it match a class of 4.
    C = np.array([[0, 0]] * 4 + [[1, 1]] + [[1, 0]] * 4 + [[0, 1]] * 4, dtype=np.int32)
    for important, other in ((0, 1), (1, 0)):
        done = local_suppression(C, 5, importance=[important, other], algorithm="greedy")
        assert done.frequencies.min() >= 5
        assert done.suppressed[4, other] and not done.suppressed[4, important]


def test_default_importance_suppresses_the_key_with_more_categories_first():
    C = np.array([[0, 0], [1, 1], [2, 0], [3, 1]], dtype=np.int32)
    assert importance_rank(C).tolist() == [0, 1]  # key 0 (4 values) first


def test_restore_gives_back_what_is_not_needed():
    C = np.array([[0, 0]] * 5 + [[1, 0]], dtype=np.int32)
    over = C.copy()
    S = np.zeros(C.shape, dtype=bool)
    over[:, 0] = -1  # every age suppressed: 6 suppressions where 1 is enough
    S[:, 0] = True
    codes, S2, f, given_back = restore(over, C, S, 5, np.array([0, 1]))
    assert (codes[:5, 0] == 0).all() and codes[5, 0] == -1
    assert given_back == 5 and S2.sum() == 1 and S2[5, 0] and f.min() >= 5


def test_strata_are_groups_of_k_records_that_all_match():
    rng = np.random.default_rng(3)
    C = rng.integers(0, 4, (300, 3)).astype(np.int32)
    C[:, 2] = rng.integers(0, 12, 300)
    C[rng.random((300, 3)) < 0.05] = -1
    done = strata_suppression(C, 5)
    labels = done.labels
    assert labels is not None and np.bincount(labels).min() >= 5
    for s in range(labels.max() + 1):
        rows = done.codes[labels == s]
        for a in range(C.shape[1]):
            values = set(rows[:, a][rows[:, a] >= 0].tolist())
            assert len(values) <= 1  # every two records of a stratum match
    assert done.frequencies.min() >= 5
    assert not (done.suppressed & (C < 0)).any()


def test_strata_suppress_the_less_important_key():
    # Two classes of 4 that differ only on one key each way: (0, 0) x4 and (0, 1) x4 differ on
    # key 1; (0, 0) x4 and (1, 0) x4 differ on key 0. k = 8: whichever key is less important
    # is suppressed in one of the two pairs.
    C = np.array([[0, 0]] * 4 + [[0, 1]] * 4 + [[1, 0]] * 4 + [[1, 1]] * 4, dtype=np.int32)
    for important, other in ((0, 1), (1, 0)):
        done = strata_suppression(C, 8, importance=[important, other])
        assert done.suppressed[:, important].sum() == 0 and done.suppressed[:, other].sum() == 8
        assert done.frequencies.min() >= 8


def test_safe_records_are_left_alone():
    C = np.array([[0, 0]] * 5 + [[1, 1]] * 5, dtype=np.int32)
    for done in (local_suppression(C, 5), strata_suppression(C, 5)):
        assert done.total == 0


def test_bad_input_names_the_problem():
    with pytest.raises(InputError):
        local_suppression(np.zeros((4, 2), dtype=np.int32), 5)  # k > n
    with pytest.raises(InputError):
        local_suppression(np.zeros((4, 2)), 2)  # not integer codes
    with pytest.raises(InputError):
        local_suppression(np.zeros((4, 2), dtype=np.int32), 2, importance=[0, 0])


def test_a_release_of_categorical_keys_only_passes_its_checks():
    # local_suppression serves files with categorical keys only; the checks then measured
    # IL over zero numeric columns and ended the run with exit 2 (DataError, field X) after
    # ingest and masking. No numeric key: no IL figure, and the gates run.
    import pandas as pd

    from sdcflow.tasks.gates import GATES, GateContext, default_gates, gather_evidence
    from sdcflow.tasks.methods import LocalSuppressionParams
    from sdcflow.tasks.methods.keys import Key
    from sdcflow.tasks.methods.mixed import mask_keys

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"region": rng.choice(list("abcd"), 60), "sex": rng.choice(["F", "M"], 60)}
    )
    params = LocalSuppressionParams(k=5)
    keys = [Key("region", "nominal"), Key("sex", "nominal")]
    result = mask_keys(frame, keys, params, rng)
    columns = list(result.point_columns or [])
    ctx = GateContext(frame[columns].to_numpy(dtype=np.float64), columns, result, params)
    gates = default_gates(params, blocked=False, edit_rules=False, promises=result.promises)
    figures = {key: GATES[key].compute(ctx) for key in gates}
    assert figures["k_anonymity"] >= 5
    assert gather_evidence(ctx).information_loss == {}


def test_the_console_loss_line_of_a_release_without_numeric_keys_is_not_empty():
    # categorical keys only: no IL figure (3ecef87), and the console printed
    # "information loss: " with nothing after it
    from sdcflow.tasks.steps.checks import loss_line

    assert loss_line({}).strip()
    assert loss_line({"raw": 2.403, "repaired": 2.436}).count("%") == 2


def test_a_code_beyond_int32_is_refused_not_read_as_missing():
    """QA: codes were cast to int32, so 2**31 wrapped to a negative code and was counted as
    missing (matching any value): [[2**31, 0], [0, 0]] gave frequencies [2, 2], not [1, 1]."""
    from sdcflow.errors import DataError

    with pytest.raises(DataError, match="below 2\\*\\*31"):
        frequencies(np.array([[2**31, 0], [0, 0]], dtype=np.int64))
    assert frequencies(np.array([[2**31 - 1, 0], [0, 0]], dtype=np.int64)).tolist() == [1, 1]
