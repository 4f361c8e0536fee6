"""k-anonymity, l-diversity and probabilistic k-anonymity: hand figures and pycanon.

pycanon 1.3.6 pins numpy==2.0.2 and pandas==2.3.3, which would downgrade the project's stack,
so it is neither a dependency nor in the ``test`` extra (``pip install --dry-run`` of it in the
project environment reports a downgrade of numpy, pandas and scipy). Its ``anonymity``
subpackage only needs numpy and pandas and runs on ours, so the fixture below installs the
wheel alone (``pip install --no-deps --target``) into a folder of pytest's cache (a temporary
folder without the cache plugin), never into the environment, and imports it from there.
Without network or pip the cross-check skips and says why.
"""

from __future__ import annotations

import importlib
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.measures.anonymity import (
    entropy_l_diversity,
    equivalence_class_sizes,
    expected_cluster_sizes,
    k_anonymity,
    l_diversity,
    match_counts,
    probabilistic_k_anonymity,
)
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.errors import InputError, Reason

PYCANON = "pycanon==1.3.6"

# Three classes: (1, a) x3, (2, b) x2, (3, c) x4. Sensitive s and t.
QI = pd.DataFrame({"age": [1, 1, 1, 2, 2, 3, 3, 3, 3], "zone": list("aaabbcccc")})
SENS = pd.DataFrame(
    {
        "s": ["x", "y", "x", "x", "x", "x", "y", "z", "w"],
        "t": [1, 2, 3, 1, 2, 1, 1, 1, 2],
    }
)


def test_k_anonymity_by_hand():
    # class sizes 3, 2, 4 -> k = 2
    assert sorted(equivalence_class_sizes(QI)) == [2, 3, 4]
    assert k_anonymity(QI) == 2


def test_l_diversity_by_hand():
    # s: class 1 {x, y} = 2, class 2 {x} = 1, class 3 {x, y, z, w} = 4 -> l = 1
    # t: class 1 {1, 2, 3} = 3, class 2 {1, 2} = 2, class 3 {1, 2} = 2 -> l = 2
    assert l_diversity(QI, SENS["s"]) == 1
    assert l_diversity(QI, SENS[["t"]]) == 2
    assert l_diversity(QI, SENS) == 1  # every sensitive column must be l-diverse


def test_entropy_l_diversity_by_hand():
    # t: class 1 (1, 2, 3): H = ln 3; class 2 (1, 2): ln 2; class 3 (1, 1, 1, 2):
    # H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.562335 -> exp = 1.754765 is the minimum.
    h3 = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert entropy_l_diversity(QI, SENS["t"]) == pytest.approx(math.exp(h3))
    assert entropy_l_diversity(QI, SENS["s"]) == pytest.approx(1.0)  # class 2 holds only x


def test_probabilistic_k_anonymity_by_hand():
    # groups of 3 and 4 re-identified with 1/3 and 1/4 -> k = 3; a fuzzy spread of 0.2 -> 5
    assert probabilistic_k_anonymity([1 / 3] * 3 + [1 / 4] * 4) == pytest.approx(3.0)
    assert probabilistic_k_anonymity([0.2, 0.1]) == pytest.approx(5.0)
    U = np.array([[0.8, 0.2], [0.3, 0.7], [0.5, 0.5]])
    assert expected_cluster_sizes(U) == pytest.approx([1.6, 1.4])
    with pytest.raises(InputError):
        probabilistic_k_anonymity([1.5])


def test_sensitive_rows_must_match():
    with pytest.raises(InputError) as e:
        l_diversity(QI, SENS.iloc[:4])
    assert e.value.code is Reason.PARAMETER and e.value.field == "sensitive"


@pytest.fixture(scope="session")
def pycanon_anonymity(request, tmp_path_factory):
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    name = "pycanon-1.3.6-nodeps"
    target = cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)
    if not (target / "pycanon" / "anonymity").is_dir():
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            PYCANON,
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        except (OSError, subprocess.TimeoutExpired) as e:
            pytest.skip(f"pycanon cross-check: could not run pip ({e})")
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
            pytest.skip(f"pycanon cross-check: {PYCANON} not installable (offline?): {tail[0]}")
    sys.path.insert(0, str(target))
    try:
        return importlib.import_module("pycanon.anonymity")
    except ImportError as e:
        pytest.skip(f"pycanon cross-check: {PYCANON} does not import with this stack: {e}")
    finally:
        sys.path.remove(str(target))


def _random_release(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 300
    frame = pd.DataFrame(
        {
            "q1": rng.integers(0, 3, n),
            "q2": rng.integers(0, 4, n),
            "q3": rng.choice(["u", "v"], n),
            "s1": rng.choice(["flu", "hiv", "none", "cold"], n, p=[0.4, 0.1, 0.4, 0.1]),
            "s2": rng.integers(0, 3, n),
        }
    )
    return frame


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_pycanon_on_random_files(pycanon_anonymity, seed):
    frame = _random_release(seed)
    qi, sa = ["q1", "q2", "q3"], ["s1", "s2"]
    assert k_anonymity(frame[qi]) == pycanon_anonymity.k_anonymity(frame, qi)
    assert l_diversity(frame[qi], frame[sa]) == pycanon_anonymity.l_diversity(frame, qi, sa)
    for s in sa:
        ours = entropy_l_diversity(frame[qi], frame[s])
        theirs = pycanon_anonymity.entropy_l_diversity(frame, qi, [s])
        # pycanon returns int(min exp(H)); allow its floating floor at an exact integer
        assert theirs in {math.floor(ours - 1e-9), math.floor(ours + 1e-9)}


def test_matches_pycanon_on_an_mdav_release(pycanon_anonymity):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3))
    labels = mdav(X, 5)
    released = pd.DataFrame(group_means(X, labels), columns=["a", "b", "c"])
    released["s"] = rng.integers(0, 4, 200)
    qi = ["a", "b", "c"]
    assert k_anonymity(released[qi]) == pycanon_anonymity.k_anonymity(released, qi) >= 5
    assert l_diversity(released[qi], released["s"]) == pycanon_anonymity.l_diversity(
        released, qi, ["s"]
    )


def test_k_counts_identical_rows_and_the_gate_says_so():
    """A blank is a value of its own: the three rows differ, so k is 1, while sdcMicro's
    count (a blank matches any value) gives 3; each gate's description names its count."""
    from sdcflow.gates.anonymity import GATES

    released = pd.DataFrame({"a": [1.0, 1.0, np.nan], "s": ["x", None, "x"]})
    assert k_anonymity(released) == 1
    assert k_anonymity(released, convention="missing_matches_any") == 3
    assert released.groupby(["a", "s"], dropna=False).size().min() == 1
    gates = {g.key: g for g in GATES}
    assert "identical" in gates["k_anonymity"].description
    assert "matching any value" in gates["k_anonymity_missing_matches_any"].description


def test_a_unique_code_blanked_on_a_few_records_is_not_k_anonymous():
    """The intruder's case: a code unique per record, blanked on k - 1 records. Under
    sdcMicro's count every record matches k rows; an intruder who knows a code finds the
    one row that carries it, so the identical-row k is 1."""
    k = 5
    codes = pd.Series([f"c{i}" for i in range(100)], dtype=object)
    codes[: k - 1] = None
    released = pd.DataFrame({"code": codes})
    assert k_anonymity(released, convention="missing_matches_any") == k
    assert k_anonymity(released) == 1
    f, _ = match_counts(released)
    assert int((f < k).sum()) == 100  # every record: 96 unique codes and 4 blanks


def _brute_force_counts(rows: list[tuple], identical: bool) -> list[int]:
    """Records counting for each record, by comparing every pair (None is missing)."""

    def agree(x, y) -> bool:
        if identical:
            return x == y
        return x is None or y is None or x == y

    return [sum(all(agree(x, y) for x, y in zip(r, o, strict=True)) for o in rows) for r in rows]


@pytest.mark.parametrize("seed", range(12))
def test_counts_match_a_brute_force_count_with_missing_values(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 40)), int(rng.integers(1, 4))
    values = rng.integers(0, 3, size=(n, d)).astype(object)
    values[rng.random((n, d)) < 0.25] = None
    frame = pd.DataFrame(values, columns=[f"k{j}" for j in range(d)])
    rows = [tuple(r) for r in values.tolist()]
    weights = rng.uniform(1.0, 50.0, n)
    for convention, identical in (("identical", True), ("missing_matches_any", False)):
        expected = _brute_force_counts(rows, identical)
        f, F = match_counts(frame, weights, convention=convention)
        assert f.tolist() == expected
        assert k_anonymity(frame, convention=convention) == min(expected)
        pairs = [
            [
                all(
                    (x == y) if identical else (x is None or y is None or x == y)
                    for x, y in zip(r, o, strict=True)
                )
                for o in rows
            ]
            for r in rows
        ]
        assert F == pytest.approx(np.asarray(pairs, dtype=float) @ weights)
