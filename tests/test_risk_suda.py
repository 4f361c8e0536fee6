"""SUDA2 (sdcflow.core.risk.suda): sdcMicro's figures, the MSU definition, validation."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from sdcflow.core.risk import suda2
from sdcflow.errors import DataError, ParameterError

# 80 records x 6 keys, one digit per key, 9 = missing; drawn once with
# numpy.random.default_rng(44) (cardinalities 2, 3, 4, 3, 5, 2; 0 the most frequent code; 10
# missing cells; two rows repeated 4 and 3 times) and written down here.
ROWS = """
    011290 000001 010000 100090 020200 102000 000030 021001 100100 100021 110000 002000 100000
    122001 102001 023001 120120 100001 019100 010000 000010 100110 010120 021010 003000 019000
    100101 001201 102040 103001 009210 000001 110000 021240 000091 010000 123001 121040 002110
    000031 100230 000200 100210 109000 003100 120201 120030 020100 120000 021100 100001 001001
    002020 100000 001121 129000 110220 011031 020021 000120 020030 100001 002001 121001 102000
    020200 100041 011001 010040 101030 011290 011290 011290 000001 000001 000001 010240 110190
    100001 120001
""".split()

# Figures produced by R 4.2, sdcMicro 5.8.1:
#   X <- do.call(rbind, lapply(strsplit(ROWS, ""), as.integer))
#   r <- suda2(as.data.frame(X), missing = 9)   # DisFraction = 0.01, original_scores = TRUE
#   sprintf("%.17g", r$score); sprintf("%.17g", r$disScore)
#   sprintf("%.17g", r$attribute_contributions$contribution)
#   format(r$contributionPercent[1:12, ], digits = 17)
# fmt: off
R_SCORE = [
    0, 0, 0, 0, 0, 0, 3, 3, 3, 24, 0, 2, 0, 24, 2, 12, 30, 0, 6, 0, 18, 12, 14, 50, 8, 0, 18,
    30, 30, 12, 6, 0, 0, 30, 0, 0, 6, 26, 54, 12, 26, 7, 12, 0, 26, 30, 8, 6, 2, 24, 0, 6, 32,
    0, 50, 0, 36, 36, 26, 10, 7, 0, 6, 12, 0, 0, 36, 12, 14, 32, 0, 0, 0, 0, 0, 0, 14, 6, 0, 2
]
R_DIS_SCORE = [
    0, 0, 0, 0, 0, 0, 0.022402426103974214, 0.022402426103974214, 0.022402426103974214,
    0.18414050082624842, 0, 0.014458048089910075, 0, 0.18414050082624842, 0.014458048089910075,
    0.095262809599726925, 0.22389942064420112, 0, 0.04682117687899226, 0, 0.14124430960623721,
    0.095262809599726925, 0.11091395846027846, 0.33599866126913264, 0.063149626773193246, 0,
    0.14124430960623721, 0.22389942064420112, 0.22389942064420112, 0.095262809599726925,
    0.04682117687899226, 0, 0, 0.22389942064420112, 0, 0, 0.04682117687899226,
    0.19773739653442507, 0.3551403018719822, 0.095262809599726925, 0.19773739653442507,
    0.054997430588057589, 0.095262809599726925, 0, 0.19773739653442507, 0.22389942064420112,
    0.063149626773193246, 0.04682117687899226, 0.014458048089910075, 0.18414050082624842, 0,
    0.04682117687899226, 0.23647690674034078, 0, 0.33599866126913264, 0, 0.26066184020112176,
    0.26066184020112176, 0.19773739653442507, 0.079324636821257608, 0.054997430588057589, 0,
    0.04682117687899226, 0.095262809599726925, 0, 0, 0.26066184020112176, 0.095262809599726925,
    0.11091395846027846, 0.23647690674034078, 0, 0, 0, 0, 0, 0, 0.11091395846027846,
    0.04682117687899226, 0, 0.014458048089910075
]
R_ATTRIBUTE_CONTRIBUTION = [
    32.53012048192771, 42.825848849945238, 55.093099671412929, 48.521358159912374,
    69.989047097480821, 27.163198247535597
]
R_CONTRIBUTION_FIRST_12 = [
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [0.66666666666666663, 1, 0.33333333333333331, 0.33333333333333331, 1, 1],
    [1, 1, 1, 0.33333333333333331, 0.33333333333333331, 0.66666666666666663],
    [0.66666666666666663, 0.33333333333333331, 0.33333333333333331, 1, 1, 1],
    [0.75, 0.5, 0.16666666666666666, 0.41666666666666669, 1, 0.41666666666666669],
    [0, 0, 0, 0, 0, 0],
    [1, 0, 1, 0, 1, 1],
]
# fmt: on


def _table() -> np.ndarray:
    return np.array([[int(c) for c in r] for r in ROWS])


def test_matches_sdcmicro_suda2() -> None:
    r = suda2(_table(), missing=9)
    np.testing.assert_array_equal(r.score, R_SCORE)
    np.testing.assert_allclose(r.contribution[:12], R_CONTRIBUTION_FIRST_12, rtol=1e-12)
    np.testing.assert_allclose(r.attribute_contribution, R_ATTRIBUTE_CONTRIBUTION, rtol=1e-12)
    # sdcMicro computes DIS and Q in single precision
    np.testing.assert_allclose(r.dis_score, R_DIS_SCORE, rtol=1e-6, atol=1e-12)


def test_sdcmicro_package_examples() -> None:
    # sdcMicro's tests/testthat/test_suda2.R, "simple example contribution" and "book example"
    a = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0]])
    np.testing.assert_allclose(suda2(a).attribute_contribution, [50, 37.5, 37.5])
    np.testing.assert_allclose(suda2(a[:, [2, 0, 1]]).attribute_contribution, [37.5, 50, 37.5])
    age = [0] * 7 + [1]
    gender = [0] * 4 + [1] * 3 + [0]
    income = [0, 0] + [1] * 6
    education = [0, 0, 0, 0, 1, 0, 2, 1]
    book = np.column_stack([age, gender, income, education])
    np.testing.assert_array_equal(suda2(book).score[4:], [4, 2, 6, 8])


def _brute_msus(x: np.ndarray, missing: int, max_size: int) -> np.ndarray:
    """MSU counts by definition: every record, every key subset."""
    n, m = x.shape
    out = np.zeros((n, max_size), int)
    uniq = {}
    for k in range(1, max_size + 1):
        for s in combinations(range(m), k):
            sub = x[:, list(s)]
            eq = (sub[:, None, :] == sub[None, :, :]).all(axis=2)
            uniq[s] = eq.sum(axis=1) == 1
    for i in range(n):
        for s, u in uniq.items():
            if not u[i] or (x[i, list(s)] == missing).any():
                continue
            if all(not uniq[t][i] for t in combinations(s, len(s) - 1) if t):
                out[i, len(s) - 1] += 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_msus_match_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(5, 40)), int(rng.integers(1, 6))
    x = rng.integers(-1, 3, size=(n, m))
    for max_size in sorted({1, m}):
        r = suda2(x, missing=-1, max_size=max_size)
        np.testing.assert_array_equal(r.msu_counts, _brute_msus(x, -1, max_size))


def test_missing_is_never_in_an_msu_and_nan_is_missing() -> None:
    x = np.array([[9, 0, 0], [1, 0, 0], [1, 0, 0], [2, 1, 1]], float)
    r = suda2(x, missing=9)
    assert r.score[0] == 0  # unique only through its missing value
    y = x.copy()
    y[0, 0] = np.nan
    np.testing.assert_array_equal(suda2(y, missing=None).score, r.score)


def test_dis_counts_uniques_and_pairs() -> None:
    x = np.array([[0, 0], [0, 0], [1, 1], [2, 2], [3, 3], [3, 3], [3, 3]])
    r = suda2(x, dis_fraction=0.1)
    assert (r.n_unique, r.n_pair) == (2, 2)
    assert r.dis == pytest.approx(2 * 0.1 / (2 * 0.1 + 2 * 0.9))
    assert r.dis_score[[0, 1, 4, 5, 6]].tolist() == [0, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        ({"keys": np.array([["a", "b"]])}, DataError, "keys"),
        ({"keys": np.array([[0.5, 1.0]])}, DataError, "keys"),
        ({"keys": np.zeros((0, 3), int)}, DataError, "keys"),
        ({"keys": np.zeros((3, 2), int), "max_size": 3}, ParameterError, "max_size"),
        ({"keys": np.zeros((3, 2), int), "dis_fraction": 1.0}, ParameterError, "dis_fraction"),
    ],
)
def test_validation_names_the_argument(kwargs: dict, error: type, field: str) -> None:
    with pytest.raises(error) as info:
        suda2(**kwargs)
    assert info.value.field == field


def _levelwise_reference(x: np.ndarray, missing: float | None, max_size: int) -> tuple:
    """The level-wise numpy search sdcflow used before its compiled kernels (kept as the
    reference of the randomized test): MSU counts (n, M) and raw contributions (n, m)."""
    n, m = x.shape
    x = x.astype(float)
    miss = np.isnan(x)
    if missing is not None:
        miss |= x == missing
    vals = np.where(miss, np.inf, x)
    codes = np.empty((n, m), np.int64)
    card = np.empty(m, np.int64)
    for j in range(m):
        u, inv = np.unique(vals[:, j], return_inverse=True)
        codes[:, j], card[j] = inv.reshape(-1), u.shape[0]
    w = np.array([np.prod([m - j for j in range(k, max_size)]) for k in range(1, max_size + 1)])
    msu = np.zeros((n, max_size), np.int64)
    raw = np.zeros((n, m))
    prev = {}
    for j in range(m):
        cnt = np.bincount(codes[:, j], minlength=card[j])
        gid = np.where(cnt[codes[:, j]] >= 2, codes[:, j], -1)
        prev[(j,)] = gid
        new = np.flatnonzero((gid < 0) & ~miss[:, j])
        msu[new, 0] += 1
        raw[new, j] += w[0]
    for k in range(2, max_size + 1):
        cur = {}
        for s in combinations(range(m), k):
            gp, j = prev[s[:-1]], s[-1]
            idx = np.flatnonzero(gp >= 0)
            gid = np.full(n, -1, np.int64)
            if idx.size:
                _, inv, cnt = np.unique(
                    gp[idx] * card[j] + codes[idx, j], return_inverse=True, return_counts=True
                )
                inv = inv.reshape(-1)
                keep = cnt[inv] >= 2
                gid[idx[keep]] = inv[keep]
                cand = idx[~keep]
                ok = ~miss[cand][:, list(s)].any(axis=1)
                for drop in range(k - 1):
                    ok &= prev[s[:drop] + s[drop + 1 :]][cand] >= 0
                new = cand[ok]
                msu[new, k - 1] += 1
                raw[np.ix_(new, list(s))] += w[k - 1]
            cur[s] = gid
        prev = cur
    return msu, raw, w


@pytest.mark.parametrize("seed", range(40))
def test_compiled_search_matches_the_levelwise_reference(seed: int) -> None:
    # random files with missing values, duplicated rows, wide code ranges (the sorted
    # fallback of the class tables) and float keys with NaN
    rng = np.random.default_rng(1000 + seed)
    n, m = int(rng.integers(1, 400)), int(rng.integers(1, 7))
    cards = rng.integers(1, 8, size=m)
    x = np.column_stack([rng.integers(0, c, size=n) for c in cards]).astype(np.int64)
    if seed % 5:  # one file in five has no missing cell
        x[rng.random((n, m)) < 0.05] = -1
    if seed % 4 == 1:
        x = x[rng.integers(0, n, size=n)]  # many identical rows
    if seed % 4 == 2:
        x[:, 0] = x[:, 0] * 10**9 + 7  # a range beyond the dense tables
    missing: float | None = -1
    if seed % 4 == 3:
        x = x.astype(float)
        x[x == -1] = np.nan
        missing = None
    max_size = int(rng.integers(1, m + 1)) if seed % 3 == 0 else m
    r = suda2(x, missing=missing, max_size=max_size, dis_fraction=0.05)
    msu, raw, w = _levelwise_reference(x, missing, max_size)
    np.testing.assert_array_equal(r.msu_counts, msu)
    score = msu @ w
    np.testing.assert_array_equal(r.score, score)
    expected = np.divide(raw, score[:, None], out=np.zeros_like(raw), where=score[:, None] > 0)
    np.testing.assert_allclose(r.contribution, expected, rtol=1e-15)
    total = score.sum()
    np.testing.assert_allclose(
        r.attribute_contribution, 100 * raw.sum(axis=0) / total if total else 0.0, rtol=1e-13
    )
    _, inv, cnt = np.unique(np.where(np.isnan(x), np.inf, x), axis=0, return_inverse=True,
                            return_counts=True)  # fmt: skip
    fk = cnt[inv.reshape(-1)]
    assert (r.n_unique, r.n_pair) == ((fk == 1).sum(), (fk == 2).sum())


@pytest.mark.parametrize("seed", range(8))
def test_compiled_search_matches_the_definition_with_missing_values(seed: int) -> None:
    rng = np.random.default_rng(2000 + seed)
    n, m = int(rng.integers(2, 30)), int(rng.integers(2, 6))
    x = rng.integers(-1, 3, size=(n, m))
    x = x[rng.integers(0, n, size=n)] if seed % 2 else x
    np.testing.assert_array_equal(suda2(x, missing=-1).msu_counts, _brute_msus(x, -1, m))


def test_compiled_search_sorts_when_the_class_tables_are_too_small() -> None:
    # key 0 with ~n/2 values times key 1 with 40 values outgrows the 8 n entries of the dense
    # class tables: the pairs are grouped by sorting, the identical rows by np.unique
    rng = np.random.default_rng(7)
    n = 9000
    x = np.column_stack(
        [rng.integers(0, n // 2, n), rng.integers(0, 40, n), rng.integers(-1, 3, n)]
    )
    x[rng.random(n) < 0.02, 1] = -1
    r = suda2(x, missing=-1)
    msu, raw, w = _levelwise_reference(x, -1, 3)
    np.testing.assert_array_equal(r.msu_counts, msu)
    assert r.msu_counts[:, 1:].sum() > 0
    score = msu @ w
    np.testing.assert_allclose(
        r.attribute_contribution, 100 * raw.sum(axis=0) / score.sum(), rtol=1e-13
    )
