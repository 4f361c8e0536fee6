"""Groups formed so that no record dominates (sdcflow.core.microaggregation.dominance_repair):
a group failing the p % rule merges with its nearest group until the rule holds."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.microaggregation.dominance_repair import repair_dominance
from sdcflow.core.microaggregation.mdav import mdav_groups
from sdcflow.core.risk import dominance
from sdcflow.core.validation import standardize
from sdcflow.errors import DataError, ParameterError


def _members(labels: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels)}


def test_a_planted_value_merges_its_group_with_the_nearest_until_the_rule_holds() -> None:
    # four groups of three along a line; a planted 1000 in group 0 (x2 = 12, rest 11 < 100)
    X = np.array(
        [[1000, 0], [12, 0], [11, 0], [20, 1], [21, 1], [22, 1],
         [60, 5], [61, 5], [62, 5], [90, 9], [91, 9], [92, 9]], float,
    )  # fmt: skip
    labels = np.repeat([0, 1, 2, 3], 3)
    assert dominance(labels, X, p=10).p_fail.any(axis=1).tolist() == [True, False, False, False]
    r = repair_dominance(labels, X, p=10)
    # its nearest group: the nearest centroid on the standardized scale
    Z = standardize(X)[0]
    c = np.array([Z[labels == g].mean(axis=0) for g in range(4)])
    nearest = 1 + int(np.argmin(((c[1:] - c[0]) ** 2).sum(axis=1)))
    merged = set(np.flatnonzero((labels == 0) | (labels == nearest)).tolist())
    rest = {i for i in range(12)} - merged
    remaining = dominance(r.labels, X, p=10)
    assert r.failing_before == 1 and r.failing_after == 0
    assert not remaining.p_fail.any()
    own = set(np.flatnonzero(r.labels == r.labels[0]).tolist())
    assert merged <= own
    # the groups it did not absorb are untouched
    assert {m for m in _members(r.labels) if 0 not in m} == {
        m for m in _members(labels) if m <= rest and not m & own
    }
    assert r.merged == 4 - np.unique(r.labels).size == r.groups_before - r.groups_after


def test_the_planted_group_and_its_nearest_by_hand() -> None:
    # group 0 holds 100 among 10 and 9 (rest 9 < 10 % of 100); group 2 (centroid 41) is
    # nearer its centroid (39.7) than group 1 (11): they merge, and 100 - 42 leaves 100 >= 10
    X = np.array([100, 10, 9, 11, 12, 10, 40, 41, 42], float)[:, None]
    r = repair_dominance(np.repeat([0, 1, 2], 3), X, p=10)
    assert r.labels.tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert (r.failing_before, r.failing_after, r.merged, r.rounds) == (1, 0, 1, 1)


def test_groups_already_passing_are_untouched() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(50, 60, size=(60, 2))  # no value dominates a group of three
    labels = mdav_groups(standardize(X)[0], 3)
    r = repair_dominance(labels, X, p=10)
    assert _members(r.labels) == _members(labels)
    assert (r.failing_before, r.merged, r.rounds) == (0, 0, 0)


def test_merging_only_grows_groups_so_k_holds() -> None:
    rng = np.random.default_rng(3)
    X = rng.lognormal(sigma=2.5, size=(600, 3))  # heavy tails: many dominated groups
    k = 3
    labels = mdav_groups(standardize(X)[0], k)
    r = repair_dominance(labels, X, p=10)
    assert r.failing_before > 0 and r.failing_after == 0
    assert not dominance(r.labels, X, p=10).p_fail.any()
    assert np.bincount(r.labels).min() >= k
    # every new group is a union of old ones
    for m in _members(r.labels):
        assert all(set(np.flatnonzero(labels == labels[i]).tolist()) <= m for i in m)
    assert r.labels.max() + 1 == r.groups_after  # numbered 0..g-1


def test_a_column_with_a_negative_value_is_not_checked() -> None:
    X = np.array([[100, -5], [10, 1], [9, 2], [11, 3], [12, 4], [10, 5]], float)
    r = repair_dominance(np.repeat([0, 1], 3), X, p=10)
    assert r.columns.tolist() == [True, False]
    X[0, 0] = 10  # no dominance left on the magnitude; profit-like column ignored
    r = repair_dominance(np.repeat([0, 1], 3), X, p=10)
    assert r.merged == 0 and r.columns.tolist() == [True, False]


def test_a_dominated_file_ends_as_one_group_still_failing() -> None:
    X = np.array([1e6, 1, 2, 3, 4, 5], float)[:, None]
    r = repair_dominance(np.repeat([0, 1], 3), X, p=10)
    assert r.labels.tolist() == [0] * 6
    assert (r.groups_after, r.failing_after) == (1, 1)


@pytest.mark.parametrize(
    "args, error",
    [
        ({"labels": [0, 0], "X": [[1.0], [2.0], [3.0]]}, DataError),
        ({"labels": [0, 0], "X": [[1.0], [np.nan]]}, DataError),
        ({"labels": [0, 0], "X": [[1.0], [2.0]], "p": 0}, ParameterError),
    ],
)
def test_refusals(args: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        repair_dominance(**args)
