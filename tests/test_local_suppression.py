"""Local suppression under identical-row k (a blank equals only a blank): the exact solver
against brute force, the greedy between the lower bound and the exact minimum, hand cases,
strata, importance, the unique code of issue 40."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from sdcflow.core.suppression.local import (
    frequencies,
    importance_rank,
    local_suppression,
    lower_bound,
    restore,
    strata_suppression,
)
from sdcflow.core.suppression.relaxation import relaxation_bound
from sdcflow.errors import InputError, ParameterError


def brute_force_class_sizes(C: np.ndarray) -> np.ndarray:
    """Records with a row identical to each record's, a blank (-1) equal only to a blank,
    by comparing every pair."""
    n = C.shape[0]
    return np.array([sum(bool((C[i] == C[j]).all()) for j in range(n)) for i in range(n)])


@functools.cache
def _brute_force(table: bytes, shape: tuple[int, int], k: int) -> int:
    C = np.frombuffer(table, dtype=np.int32).reshape(shape)
    n, d = shape
    # every record's choices: the sets of its present keys to blank, as (cost, row code)
    costs, rows = [], []
    for i in range(n):
        avail = [a for a in range(d) if C[i, a] >= 0]
        cs, rs = [], []
        for t in range(len(avail) + 1):
            for T in itertools.combinations(avail, t):
                r = C[i].copy()
                r[list(T)] = -1
                cs.append(len(T))
                rs.append(int(((r + 1) * 4 ** np.arange(d)).sum()))
        costs.append(np.array(cs))
        rows.append(np.array(rs))
    radix = [c.size for c in costs]
    total = int(np.prod(radix))
    best = n * d + 1
    for start in range(0, total, 100_000):
        idx = np.arange(start, min(total, start + 100_000))
        cost = np.zeros(idx.size, dtype=np.int64)
        code = np.empty((idx.size, n), dtype=np.int64)
        rest = idx
        for i in range(n):
            pick = rest % radix[i]
            rest = rest // radix[i]
            cost += costs[i][pick]
            code[:, i] = rows[i][pick]
        sizes = (code[:, :, None] == code[:, None, :]).sum(axis=2)
        ok = (sizes >= k).all(axis=1)
        if ok.any():
            best = min(best, int(cost[ok].min()))
    return best


def brute_force_fewest(C: np.ndarray, k: int) -> int:
    """The fewest suppressions making every class of identical rows >= k, over every choice
    of blanked keys of every record (2^d per record: tiny tables only)."""
    C = np.ascontiguousarray(C, dtype=np.int32)
    return _brute_force(C.tobytes(), C.shape, int(k))


def random_table(rng: np.random.Generator, n: int, d: int, missing: float = 0.1) -> np.ndarray:
    C = rng.integers(0, 3, (n, d)).astype(np.int32)
    C[rng.random((n, d)) < missing] = -1
    return C


@pytest.mark.parametrize("seed", range(20))
def test_identical_row_counts_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    C = random_table(rng, int(rng.integers(1, 40)), int(rng.integers(1, 4)), missing=0.3)
    C[: C.shape[0] // 3] = C[0]  # some larger classes
    assert frequencies(C).tolist() == brute_force_class_sizes(C).tolist()


@pytest.mark.parametrize("seed", range(12))
def test_exact_is_the_brute_force_minimum_and_the_bound_is_below_it(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(5, 8)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    C = random_table(rng, n, d)
    exact = local_suppression(C, k, algorithm="exact")
    assert exact.optimal and exact.frequencies.min() >= k
    assert frequencies(exact.codes).tolist() == exact.frequencies.tolist()
    assert exact.total == brute_force_fewest(C, k)
    assert exact.details["suppression_lower_bound"] <= exact.total
    # only present values are suppressed, and the codes show exactly those
    assert not (exact.suppressed & (C < 0)).any()
    assert ((exact.codes < 0) == ((C < 0) | exact.suppressed)).all()


@pytest.mark.parametrize("seed", range(12))
def test_greedy_is_k_anonymous_minimal_and_above_the_minimum(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(5, 8)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    C = random_table(rng, n, d)
    greedy = local_suppression(C, k, algorithm="greedy")
    assert brute_force_class_sizes(greedy.codes).min() >= k
    assert frequencies(greedy.codes).tolist() == greedy.frequencies.tolist()
    assert greedy.total >= brute_force_fewest(C, k) >= greedy.details["suppression_lower_bound"]
    assert not (greedy.suppressed & (C < 0)).any()
    assert ((greedy.codes < 0) == ((C < 0) | greedy.suppressed)).all()
    # minimal: no single suppressed value can be given back
    for i, a in zip(*np.nonzero(greedy.suppressed), strict=True):
        D = greedy.codes.copy()
        D[i, a] = C[i, a]
        assert frequencies(D).min() < k


@pytest.mark.parametrize("seed", range(6))
def test_greedy_against_exact_on_larger_tables(seed):
    rng = np.random.default_rng(100 + seed)
    C = random_table(rng, 30, 3, missing=0.05)
    greedy = local_suppression(C, 3)
    exact = local_suppression(C, 3, algorithm="exact", time_limit=120)
    below, bound = lower_bound(C, 3)
    assert greedy.total >= exact.total >= bound
    assert exact.frequencies.min() >= 3 and greedy.frequencies.min() >= 3
    assert greedy.details["records_in_classes_below_k"] == below


def test_greedy_on_a_block_blanks_every_age():
    # Sex agrees; ages 1, 2, 3 once each, age 4 twice, age 5 three times; k = 5. No age
    # class reaches 5, so every record leaves its row, and the cheapest row 5 records share
    # is (blank, sex): 8 suppressions, the 8 records below 5 (the bound).
    ages = [1, 2, 3, 4, 4, 5, 5, 5]
    C = np.array([[a, 0] for a in ages], dtype=np.int32)
    greedy = local_suppression(C, 5, algorithm="greedy")
    assert greedy.total == 8 == brute_force_fewest(C, 5)
    assert lower_bound(C, 5) == (8, 8)
    assert greedy.per_key(["age", "sex"]) == {"age": 8, "sex": 0}


def test_a_row_with_a_blank_is_completed_by_the_records_that_agree_with_it():
    # (blank, 0) x 3 is short of 5; (1, 0) x 2 blank their first key and join it: 2
    # suppressions for 5 records below 5. The count of records below k (5) is no bound
    # here; the bound (2) is.
    C = np.array([[-1, 0]] * 3 + [[1, 0]] * 2 + [[2, 1]] * 5, dtype=np.int32)
    for algorithm in ("greedy", "exact"):
        done = local_suppression(C, 5, algorithm=algorithm)
        assert done.total == 2 and done.frequencies.min() >= 5
    assert lower_bound(C, 5) == (5, 2)


def test_donors_complete_a_row_that_unsafe_records_alone_cannot():
    # (1, 1) is unique; 4 of the nine (0, 1) blank their first key with it: (blank, 1) x 5,
    # 5 suppressions (the exact minimum); blanking its second key leaves it alone.
    C = np.array([[0, 1]] * 9 + [[1, 1]], dtype=np.int32)
    greedy = local_suppression(C, 5)
    assert greedy.total == 5 == brute_force_fewest(C, 5)
    assert greedy.frequencies.min() >= 5


def test_importance_decides_between_equally_cheap_keys():
    # Record 10 is unique; suppressing either key joins a class of 5 that has that key blank.
    C = np.array([[-1, 1]] * 5 + [[1, -1]] * 5 + [[1, 1]], dtype=np.int32)
    for important, other in ((0, 1), (1, 0)):
        done = local_suppression(C, 5, importance=[important, other], algorithm="greedy")
        assert done.frequencies.min() >= 5 and done.total == 1
        assert done.suppressed[10, other] and not done.suppressed[10, important]


def test_default_importance_suppresses_the_key_with_more_categories_first():
    C = np.array([[0, 0], [1, 1], [2, 0], [3, 1]], dtype=np.int32)
    assert importance_rank(C).tolist() == [0, 1]  # key 0 (4 values) first


def test_restore_gives_back_what_is_not_needed():
    # every age suppressed: 10 suppressions; 5 of the nine 0s get their age back, (0, 0) x 5,
    # and (blank, 0) keeps 4 of them with the lone 1: 5 left
    C = np.array([[0, 0]] * 9 + [[1, 0]], dtype=np.int32)
    over = C.copy()
    over[:, 0] = -1
    S = over < C
    codes, S2, f, given_back = restore(over, C, S, 5, np.array([0, 1]))
    assert given_back == 5 and S2.sum() == 5 and S2[9, 0] and f.min() >= 5
    assert (codes[S2[:, 0], 0] == -1).all() and (codes[~S2[:, 0], 0] == 0).all()


def test_a_key_unique_per_record_is_blanked_on_every_record():
    # Issue 40: a code unique per record. Under sdcMicro's convention blanking 80 of 3,000
    # codes passed k = 5 with 2,920 records published with their code; under identical rows
    # no record keeps its code (it would be alone with it).
    rng = np.random.default_rng(0)
    n = 600
    C = np.column_stack([np.arange(n), rng.integers(0, 2, n)]).astype(np.int32)
    done = local_suppression(C, 5)
    assert done.frequencies.min() >= 5
    assert (done.codes[:, 0] == -1).all()
    assert done.total == n == done.details["records_in_classes_below_k"]
    assert done.details["suppression_lower_bound"] == n


def test_strata_are_classes_of_k_identical_rows():
    rng = np.random.default_rng(3)
    C = rng.integers(0, 4, (300, 3)).astype(np.int32)
    C[:, 2] = rng.integers(0, 12, 300)
    C[rng.random((300, 3)) < 0.05] = -1
    done = strata_suppression(C, 5)
    labels = done.labels
    assert labels is not None and np.bincount(labels).min() >= 5
    for s in range(labels.max() + 1):
        rows = done.codes[labels == s]
        assert (rows == rows[0]).all()  # one released row per stratum
    assert done.frequencies.min() >= 5
    assert not (done.suppressed & (C < 0)).any()


def test_strata_suppress_the_less_important_key():
    # (0, 0) x 4, (0, 1) x 4, (1, 0) x 4, (1, 1) x 4, k = 8: blanking the less important
    # key pairs the classes two by two (8 suppressions per pair, 16 in all).
    C = np.array([[0, 0]] * 4 + [[0, 1]] * 4 + [[1, 0]] * 4 + [[1, 1]] * 4, dtype=np.int32)
    for important, other in ((0, 1), (1, 0)):
        done = strata_suppression(C, 8, importance=[important, other])
        assert done.suppressed[:, important].sum() == 0 and done.suppressed[:, other].sum() == 16
        assert done.frequencies.min() >= 8


def test_safe_records_are_left_alone():
    C = np.array([[0, 0]] * 5 + [[1, 1]] * 5, dtype=np.int32)
    for done in (local_suppression(C, 5), strata_suppression(C, 5)):
        assert done.total == 0
        assert done.details["records_in_classes_below_k"] == 0


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

    from sdcflow.gates import GATES, GateContext, default_gates, gather_evidence
    from sdcflow.methods import LocalSuppressionParams
    from sdcflow.methods.keys import Key
    from sdcflow.methods.mixed import mask_keys

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
    from sdcflow.tasks.checks import loss_line

    assert loss_line({}).strip()
    assert loss_line({"raw": 2.403, "repaired": 2.436}).count("%") == 2


def test_a_code_beyond_int32_is_refused_not_read_as_missing():
    """QA: codes were cast to int32, so 2**31 wrapped to a negative code and was counted as
    missing (matching any value): [[2**31, 0], [0, 0]] gave frequencies [2, 2], not [1, 1]."""
    from sdcflow.errors import DataError

    with pytest.raises(DataError, match="below 2\\*\\*31"):
        frequencies(np.array([[2**31, 0], [0, 0]], dtype=np.int64))
    assert frequencies(np.array([[2**31 - 1, 0], [0, 0]], dtype=np.int64)).tolist() == [1, 1]


def test_the_unique_code_of_issue_40_is_protected_through_the_method():
    # 3,000 records, a code unique per record and two categorical keys: the method releases
    # no code (every record would be alone with its own), and every class of identical
    # released rows holds at least 5 records.
    import pandas as pd

    from sdcflow.core.measures.anonymity import equivalence_class_sizes
    from sdcflow.methods import LocalSuppressionParams
    from sdcflow.methods.keys import Key
    from sdcflow.methods.mixed import mask_keys

    rng = np.random.default_rng(40)
    n = 3000
    frame = pd.DataFrame(
        {
            "code": [f"c{i:05d}" for i in range(n)],
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(list("abc"), n),
        }
    )
    keys = [Key("code", "nominal"), Key("sex", "nominal"), Key("region", "nominal")]
    result = mask_keys(frame, keys, LocalSuppressionParams(k=5), rng)
    released = result.released_identifiers
    assert released["code"].isna().all()
    assert equivalence_class_sizes(released).min() >= 5
    assert result.details["categorical_values_suppressed"]["code"] == n


def test_mixed_keys_give_identical_rows_over_all_keys():
    # strata of identical categorical rows, MDAV groups of >= k inside each (a stratum of
    # k to 2k - 1 records one group): every released row over all keys is shared by >= k
    import pandas as pd

    from sdcflow.core.measures.anonymity import equivalence_class_sizes
    from sdcflow.methods import MdavParams
    from sdcflow.methods.keys import Key
    from sdcflow.methods.mixed import mask_keys

    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(list("abcdefg"), n, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.04, 0.01]),
        }
    )
    frame.loc[rng.random(n) < 0.05, "region"] = None
    keys = [Key("age", "numeric", decimals=0, integer=True)]
    keys += [Key("sex", "nominal"), Key("region", "nominal")]
    for k in (3, 5):
        result = mask_keys(frame, keys, MdavParams(k=k), rng)
        assert equivalence_class_sizes(result.released_identifiers).min() >= k


# --- the linear-programming bound (relaxation.py) ---


@pytest.mark.parametrize("seed", range(10))
def test_the_relaxation_bound_is_never_above_the_brute_force_minimum(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(5, 8)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    C = random_table(rng, n, d)
    assert relaxation_bound(C, k).bound <= brute_force_fewest(C, k) + 1e-6


@pytest.mark.parametrize("seed", range(8))
def test_the_relaxation_bound_lies_between_the_records_below_k_and_the_exact_minimum(seed):
    rng = np.random.default_rng(200 + seed)
    k = 2 + seed % 2
    C = rng.integers(0, 3, size=(24, 3)).astype(np.int32)
    C[rng.random(C.shape) < 0.1] = -1
    exact = local_suppression(C, k, algorithm="exact", time_limit=120).total
    relaxed = relaxation_bound(C, k).bound
    below, _ = lower_bound(C, k)
    assert relaxed <= exact + 1e-6
    # a record whose row others cannot complete must blank one value at least
    complete = (C >= 0).all(axis=1)
    sizes = np.unique(C, axis=0, return_inverse=True, return_counts=True)
    counts = sizes[2][sizes[1].ravel()]
    assert relaxed >= ((counts < k) & complete).sum() - 1e-6
    assert below >= ((counts < k) & complete).sum()


def test_a_row_that_needs_a_donor_raises_the_bound_above_the_class_bound():
    # k = 2. Safe classes (0,0) x3, (1,1) x2, (2,2) x2; unsafe (0,1), (0,2), (2,1) once each.
    # Each unsafe record reaches a row k records agree with by one suppression, so the
    # class-by-class bound is 3. But three single records cannot pair up on one blank each:
    # (0,1) and (2,1) can meet at (*,1), and then (0,2) reaches (0,*) or (*,2) alone, short
    # of k, unless a record of a safe class blanks a value to join it: 4 at least, and 4 is
    # reached ((0,0) x3 spares one for (0,*)). The linear program counts the donor.
    C = np.array(
        [[1, 1], [2, 2], [0, 0], [2, 2], [0, 0], [2, 1], [0, 2], [0, 1], [1, 1], [0, 0]],
        dtype=np.int32,
    )
    _, classwise = lower_bound(C, 2)
    assert classwise == 3
    assert brute_force_fewest(C, 2) == local_suppression(C, 2, algorithm="exact").total == 4
    assert relaxation_bound(C, 2).bound == pytest.approx(4.0)


def test_a_file_without_classes_below_k_needs_no_suppression():
    C = np.zeros((6, 2), dtype=np.int32)
    assert relaxation_bound(C, 3).bound == 0.0


def test_bad_codes_are_refused_with_the_fix():
    with pytest.raises(ParameterError, match="key_codes"):
        relaxation_bound(np.zeros((4, 2)), 2)
