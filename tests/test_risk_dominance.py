"""Dominance (sdcflow.core.risk.dominance): the (n, k) rule and the p % rule per group/column."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.risk import dominance
from sdcflow.errors import DataError, ParameterError


def test_rules_by_hand() -> None:
    groups = ["a", "a", "a", "b", "b", "b", "c", "d", "d"]
    x = np.array([100, 5, 1, 10, 9, 8, 7, 0, 0], float)[:, None]
    r = dominance(groups, x, n=1, k=50, p=10)
    assert r.groups.tolist() == ["a", "b", "c", "d"]
    assert r.total[:, 0].tolist() == [106, 27, 7, 0]
    # a: 106 - 100 - 5 = 1 < 10 -> fails; b: 27 - 10 - 9 = 8 >= 1 passes; c: alone fails
    assert r.p_fail[:, 0].tolist() == [True, False, True, False]
    assert r.nk_fail[:, 0].tolist() == [True, False, True, False]
    assert r.n_groups_p_fail == 2


def test_matches_a_loop_over_groups() -> None:
    rng = np.random.default_rng(5)
    g = rng.integers(0, 40, size=400)
    x = rng.lognormal(sigma=2, size=(400, 3))
    r = dominance(g, x, n=2, k=80, p=15)
    for i, lab in enumerate(r.groups):
        for j in range(3):
            v = np.sort(x[g == lab, j])[::-1]
            t = v.sum()
            x2 = v[1] if v.size > 1 else 0.0
            assert r.top_share[i, j] == pytest.approx(v[:2].sum() / t)
            assert r.p_fail[i, j] == (t - v[0] - x2 < 0.15 * v[0])
            assert r.nk_fail[i, j] == (v[:2].sum() > 0.8 * t)
    assert r.n_p_fail.tolist() == r.p_fail.sum(axis=0).tolist()


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        ({"X": [[-1.0], [2.0]]}, DataError, "X"),
        ({"n": 0}, ParameterError, "n"),
        ({"k": 0}, ParameterError, "k"),
        ({"p": -5}, ParameterError, "p"),
    ],
)
def test_validation(kwargs: dict, error: type, field: str) -> None:
    args = {"groups": [0, 0], "X": [[1.0], [2.0]]} | kwargs
    with pytest.raises(error) as info:
        dominance(**args)
    assert info.value.field == field
