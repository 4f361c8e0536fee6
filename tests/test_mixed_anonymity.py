"""sdcMicro's count over mixed keys with missing values: hand counts, a pairwise reference,
pycanon.

sdcflow counts k over identical released rows (``tests/test_measures_anonymity.py``) and
reports sdcMicro's count beside it for comparison; this file tests that count, so every call
here takes ``convention="missing_matches_any"``. Convention (sdcMicro's ``freqCalc``): a
missing or suppressed value matches any value, so the
frequency of record i is the number of records equal to it on every key where both have a
value. The pycanon cross-check reuses the fixture of ``test_measures_anonymity.py`` (pycanon
installed beside, never into, the environment) on files without missing values, where the
convention and plain equivalence classes agree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_measures_anonymity import pycanon_anonymity  # noqa: F401 (fixture)

from sdcflow.core.measures import anonymity as _anonymity
from sdcflow.core.measures.anonymity import key_codes
from sdcflow.errors import InputError

LOOSE = "missing_matches_any"


def match_counts(*args, **kwargs):
    return _anonymity.match_counts(*args, convention=LOOSE, **kwargs)


def k_anonymity(*args, **kwargs):
    return _anonymity.k_anonymity(*args, convention=LOOSE, **kwargs)


def l_diversity(*args, **kwargs):
    return _anonymity.l_diversity(*args, convention=LOOSE, **kwargs)


def entropy_l_diversity(*args, **kwargs):
    return _anonymity.entropy_l_diversity(*args, convention=LOOSE, **kwargs)


# Keys of three kinds; None / NaN are missing.
#   row  age   sex  region
#   0    30    F    N
#   1    30    F    N
#   2    30    F    None   matches 0, 1, 2, 3(age 30? no: 40) -> 0, 1, 2
#   3    40    F    N
#   4    40    None S
#   5    NaN   M    S
#   6    40    M    S
MIXED = pd.DataFrame(
    {
        "age": [30, 30, 30, 40, 40, np.nan, 40],
        "sex": ["F", "F", "F", "F", None, "M", "M"],
        "region": ["N", "N", None, "N", "S", "S", "S"],
    }
)
# By hand, record by record (itself included):
#   0: 0, 1, 2                      -> 3
#   1: 0, 1, 2                      -> 3
#   2: 0, 1, 2 (region missing)     -> 3   (3 has age 40)
#   3: 3 (4 is region S, 6 sex M)   -> 1
#   4: 4, 5 (age missing), 6        -> 3   (sex missing matches F and M; region S)
#   5: 4, 5, 6                      -> 3
#   6: 4, 5, 6                      -> 3
HAND_F = [3, 3, 3, 1, 3, 3, 3]


def pairwise_reference(frame: pd.DataFrame, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """O(n^2) reference: the match matrix of the convention, written out."""
    codes = key_codes(frame)
    n = codes.shape[0]
    match = np.ones((n, n), dtype=bool)
    for a in range(codes.shape[1]):
        x = codes[:, a]
        match &= (x[:, None] == x[None, :]) | (x[:, None] < 0) | (x[None, :] < 0)
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    return match.sum(axis=1), match.astype(float) @ w


def test_frequencies_by_hand():
    f, F = match_counts(MIXED, weights=[1, 2, 3, 4, 5, 6, 7])
    assert f.tolist() == HAND_F
    # F: weights of the matching records; record 3 alone: 4; records 4, 5, 6: 5 + 6 + 7
    assert F.tolist() == [6, 6, 6, 4, 18, 18, 18]
    assert k_anonymity(MIXED) == 1
    assert k_anonymity(MIXED.drop(index=3)) == 3


def test_without_missing_values_k_is_the_smallest_class():
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 2], "b": ["x", "x", "y", "y", "y"]})
    assert match_counts(frame)[0].tolist() == [2, 2, 3, 3, 3]
    assert k_anonymity(frame) == 2


def test_an_all_missing_record_matches_every_record():
    frame = pd.DataFrame({"a": [1, 2, 3, None], "b": ["x", "y", "z", None]})
    assert match_counts(frame)[0].tolist() == [2, 2, 2, 4]


@pytest.mark.parametrize("seed", range(6))
def test_frequencies_match_the_pairwise_reference(seed):
    rng = np.random.default_rng(seed)
    n = 150
    frame = pd.DataFrame(
        {
            "num": rng.integers(0, 4, n).astype(float),
            "nom": rng.choice(["a", "b", "c"], n).astype(object),
            "ord": rng.integers(0, 3, n).astype(float),
        }
    )
    for col in frame.columns:  # about 15 % missing in every key
        frame.loc[rng.random(n) < 0.15, col] = None
    w = rng.uniform(1, 50, n)
    f, F = match_counts(frame, w)
    ref_f, ref_F = pairwise_reference(frame, w)
    assert f.tolist() == ref_f.tolist()
    assert np.allclose(F, ref_F)


@pytest.mark.parametrize("seed", range(4))
def test_l_diversity_counts_over_the_matching_records(seed):
    rng = np.random.default_rng(100 + seed)
    n = 80
    frame = pd.DataFrame({"a": rng.integers(0, 3, n).astype(float), "b": rng.integers(0, 2, n)})
    frame.loc[rng.random(n) < 0.2, "a"] = np.nan
    s = pd.Series(rng.choice(["x", "y", "z", "w"], n))
    codes = key_codes(frame)
    match = np.ones((n, n), dtype=bool)
    for j in range(codes.shape[1]):
        x = codes[:, j]
        match &= (x[:, None] == x[None, :]) | (x[:, None] < 0) | (x[None, :] < 0)
    distinct = [s[match[i]].nunique() for i in range(n)]
    entropies = []
    for i in range(n):
        p = s[match[i]].value_counts(normalize=True).to_numpy()
        entropies.append(np.exp(-(p * np.log(p)).sum()))
    assert l_diversity(frame, s) == min(distinct)
    assert entropy_l_diversity(frame, s) == pytest.approx(min(entropies))


@pytest.mark.parametrize("seed", [0, 1])
def test_mixed_keys_without_missing_values_match_pycanon(pycanon_anonymity, seed):  # noqa: F811
    rng = np.random.default_rng(seed)
    n = 400
    frame = pd.DataFrame(
        {
            "age": rng.integers(20, 26, n),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(["N", "S", "E"], n, p=[0.6, 0.3, 0.1]),
            "income": rng.choice(["low", "mid", "high"], n),
        }
    )
    qi = ["age", "sex", "region"]
    assert k_anonymity(frame[qi]) == pycanon_anonymity.k_anonymity(frame, qi)
    assert l_diversity(frame[qi], frame["income"]) == pycanon_anonymity.l_diversity(
        frame, qi, ["income"]
    )


def test_weights_must_be_positive():
    with pytest.raises(InputError):
        match_counts(MIXED, weights=[1, 1, 1, 0, 1, 1, 1])


JOINS = {  # module settings that route the pattern pairs through each way of joining them
    "pooled": {"SMALL_PATTERN": 10_000},  # every pattern pooled: direct comparison only
    "indexed": {"SMALL_PATTERN": 1, "INDEX_JOIN_SHARE": float("inf")},
    "hashed": {"SMALL_PATTERN": 1, "INDEX_JOIN_SHARE": 0.0},
    "pool and index": {"SMALL_PATTERN": 12, "INDEX_JOIN_SHARE": float("inf")},
    "pool and hash": {"SMALL_PATTERN": 12, "INDEX_JOIN_SHARE": 0.0},
    "pool too large": {"SMALL_PATTERN": 12, "POOL_MAX": 0},
    "default": {},
}


@pytest.mark.parametrize("join", list(JOINS))
@pytest.mark.parametrize("seed", range(3))
def test_every_way_of_joining_patterns_gives_the_pairwise_counts(join, seed, monkeypatch):
    """The counts go through hash joins, index joins, a pool of small patterns compared
    directly, and rows matching a whole pattern (no key in common); each route on its own
    must give the O(n^2) reference, and the weighted sums must be the same to the bit."""
    from sdcflow.core.measures import anonymity

    rng = np.random.default_rng(40 + seed)
    n = 400
    frame = pd.DataFrame(
        {
            "g": np.repeat(rng.normal(size=n // 4), 4).round(3),  # group means: selective
            "h": np.repeat(rng.normal(size=n // 4), 4).round(3),
            "num": rng.integers(0, 5, n).astype(float),
            "nom": rng.choice(["a", "b", "c"], n).astype(object),
            "ord": rng.integers(0, 3, n).astype(float),
        }
    )
    for col, share in zip(frame.columns, (0.1, 0.3, 0.2, 0.15, 0.5), strict=True):
        frame.loc[rng.random(n) < share, col] = None
    frame.iloc[:3] = None  # records with no key at all match every record
    w = rng.uniform(1, 50, n).round(3)
    _, baseline_F = match_counts(frame, w)
    for name, value in JOINS[join].items():
        monkeypatch.setattr(anonymity, name, value)
    f, F = match_counts(frame, w)
    ref_f, ref_F = pairwise_reference(frame, w)
    assert f.tolist() == ref_f.tolist()
    assert np.allclose(F, ref_F, rtol=1e-12)
    assert F.tolist() == baseline_F.tolist()  # exact parts: the same sums, to the bit
    s = pd.Series(rng.choice(["x", "y", "z"], n))
    codes = key_codes(frame)
    match = np.ones((n, n), dtype=bool)
    for j in range(codes.shape[1]):
        x = codes[:, j]
        match &= (x[:, None] == x[None, :]) | (x[:, None] < 0) | (x[None, :] < 0)
    assert l_diversity(frame, s) == min(s[match[i]].nunique() for i in range(n))


def test_the_count_benchmark_checks_both_ways_agree(tmp_path, capsys):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "match_counts.py"
    spec = importlib.util.spec_from_file_location("match_counts_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "runs.json"
    assert bench.main(["--n", "3000", "--missing", "0.1", "--json", str(out)]) == 0
    (run,) = json.loads(out.read_text())["runs"]
    assert run["k"] >= 5 and run["patterns"] > 1 and run["distinct_rows"] <= 3000
    assert run["speed_up"] > 0 and run["pair_joins_cpu_seconds"] > 0
    frame = bench.released(3000, 10, 5, 0.1, 0)
    assert 0.08 < frame.isna().to_numpy().mean() < 0.12


def _every_record_in_many_patterns(base: int, patterns: int, seed: int) -> np.ndarray:
    """Codes of ``base`` distinct records, each released once in each of ``patterns`` patterns
    of two missing keys (of 10): every record matches about one record of every pattern, so
    every pair of patterns is joined through the index and the matches number n x patterns."""
    rng = np.random.default_rng(seed)
    B = rng.integers(0, 10**6, (base, 10))
    missing = np.zeros((patterns, 10), dtype=bool)
    for p in range(patterns):
        missing[p, rng.choice(10, 2, replace=False)] = True
    codes = np.repeat(B, patterns, axis=0)
    codes[np.tile(missing, (base, 1))] = -1
    return codes


def test_index_joins_do_not_hold_every_matched_pair_at_once(monkeypatch):
    """The pairs an index join finds are added into the sums once they number n (with
    PAIR_BUFFER 0), not held for all M^2 / 2 joins: n x M of them here (24,000 records, 60
    patterns), 6 times the memory of hashing every pair of patterns before the bound."""
    import tracemalloc

    from sdcflow.core.measures import anonymity

    monkeypatch.setattr(anonymity, "PAIR_BUFFER", 0, raising=False)
    small = _every_record_in_many_patterns(12, 20, 3)  # the flushed pairs give the same sums
    frame = pd.DataFrame(np.where(small < 0, np.nan, small))
    w = np.random.default_rng(3).uniform(1, 50, small.shape[0]).round(3)
    f, F = match_counts(frame, w)
    ref_f, ref_F = pairwise_reference(frame, w)
    assert f.tolist() == ref_f.tolist() and np.allclose(F, ref_F, rtol=1e-12)

    codes = _every_record_in_many_patterns(400, 60, 1)
    ones = np.ones((codes.shape[0], 1))

    def peak() -> int:
        tracemalloc.start()
        try:
            anonymity.codes_matching_sums(codes, ones, convention=LOOSE)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    indexed = peak()
    monkeypatch.setattr(anonymity, "INDEX_JOIN_SHARE", 0.0)
    monkeypatch.setattr(anonymity, "SMALL_PATTERN", 1)
    hashed = peak()
    assert indexed < 2 * hashed


def test_counted_once_reuses_only_equal_codes_and_weights(monkeypatch):
    """Inside ``counted_once`` the frequencies of equal key codes and weights are counted
    once; other codes (a value changed in place), other weights, and calls outside the block
    are counted again -- and every answer is the one a fresh count gives."""
    from sdcflow.core.measures import anonymity

    calls = []
    real = anonymity.codes_matching_sums
    monkeypatch.setattr(
        anonymity, "codes_matching_sums", lambda *a, **kw: calls.append(1) or real(*a, **kw)
    )
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(np.repeat(rng.normal(size=(50, 3)), 3, axis=0), columns=list("abc"))
    frame.iloc[::7, 1] = np.nan
    w = rng.uniform(1, 9, len(frame))
    fresh = match_counts(frame.copy(), w)
    calls.clear()
    with anonymity.counted_once():
        first = match_counts(frame, w)
        again = match_counts(frame, w)
        assert len(calls) == 1
        shifted = match_counts(frame + 1.0, w)  # other values, the same codes: the same counts
        assert len(calls) == 1
        assert [x.tolist() for x in shifted] == [x.tolist() for x in first]
        match_counts(frame, w * 2)  # other weights
        assert len(calls) == 2
        frame.iloc[0, 0] = frame.iloc[3, 0]  # record 0 now joins record 3's group on a
        changed = match_counts(frame, w)
        assert len(calls) == 3
        assert changed[0].tolist() != first[0].tolist()
    assert [x.tolist() for x in changed] == [x.tolist() for x in match_counts(frame, w)]
    assert [x.tolist() for x in first] == [x.tolist() for x in fresh]
    assert [x.tolist() for x in again] == [x.tolist() for x in fresh]
    calls.clear()
    match_counts(frame, w)
    match_counts(frame, w)
    assert len(calls) == 2  # outside the block: nothing kept
