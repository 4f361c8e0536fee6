"""Group values moved onto the linear edit rules when some values are missing: figures
computed by hand, and releases of the survey with gaps that publish with every rule kept."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from survey import EXAMPLE, QIS, release_frame

from sdcflow.cli.main import main
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.group_values import breaking_conditions, group_values_on_rules
from sdcflow.core.linear.repair import violating_records

COLUMNS = ["net", "tax", "gross"]
NAN = np.nan
# mean 0 and standard deviation 1 in every column: standardized units are the raw ones
UNIT_SPREAD = np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])


def net_plus_tax(*, net_nonnegative: bool = False) -> LinearConstraints:
    rows = [("sum", [({"net": 1.0, "tax": 1.0, "gross": -1.0}, 0.0)], [])]
    if net_nonnegative:
        rows.append(("net_nonneg", [], [({"net": -1.0}, 0.0)]))
    return LinearConstraints.from_rows(rows, COLUMNS)


def test_a_group_of_means_over_different_records_is_projected_onto_the_equality():
    # group 0: net and tax means over different records, 1 + 2 != 4; each column weighs as
    # many records as have it, n = (2, 2, 3): r = m - W^-1 a (a . m) / (a' W^-1 a) with
    # a = (1, 1, -1), a . m = -1, a' W^-1 a = 1/2 + 1/2 + 1/3 = 4/3, so
    # r = (1, 2, 4) + 3/4 (1/2, 1/2, -1/3) = (11/8, 19/8, 15/4)
    # group 1: its values keep the rule and stay bit for bit
    # group 2: gross is missing on every record, so no rule binds its values
    released = np.array(
        [
            [1.0, NAN, 4.0],
            [1.0, 2.0, 4.0],
            [NAN, 2.0, 4.0],
            [0.1, 0.2, 0.30000000000000004],
            [0.1, 0.2, 0.30000000000000004],
            [5.0, 7.0, NAN],
            [5.0, NAN, NAN],
        ]
    )
    labels = np.array([0, 0, 0, 1, 1, 2, 2])
    out, moved, *_ = group_values_on_rules(UNIT_SPREAD, released, labels, COLUMNS, net_plus_tax())
    assert moved == 1
    expected = np.array(
        [
            [11 / 8, NAN, 15 / 4],
            [11 / 8, 19 / 8, 15 / 4],
            [NAN, 19 / 8, 15 / 4],
        ]
    )
    np.testing.assert_allclose(out[:3], expected, rtol=1e-14)
    assert np.array_equal(out[3:], released[3:], equal_nan=True)
    assert np.array_equal(np.isnan(out), np.isnan(released))  # missing stays missing


def test_an_inequality_the_projection_onto_the_equality_breaks_is_kept():
    # m = (-1, 3, 1) under net + tax == gross, net >= 0, n = (2, 1, 1): on the face net = 0,
    # tax = gross the least (tax - 3)^2 + (gross - 1)^2 is at (0, 2, 2)
    released = np.array([[-1.0, 3.0, NAN], [-1.0, NAN, 1.0]])
    out, moved, *_ = group_values_on_rules(
        UNIT_SPREAD, released, np.zeros(2, int), COLUMNS, net_plus_tax(net_nonnegative=True)
    )
    assert moved == 1
    np.testing.assert_allclose(out, [[0.0, 2.0, NAN], [0.0, NAN, 2.0]], atol=1e-14)


def test_the_change_is_least_in_standardized_units():
    # one record, n = (1, 1, 1); spread: sd 1 for net and tax, 10 for gross; a = (1, 1, -1)
    # in x is (1, 1, -10) in z, so z moves by (1, 1, -10) (-1) / 102 and gross by 10 times
    # its z step
    spread = np.array([[-1.0, -1.0, -10.0], [1.0, 1.0, 10.0]])
    released = np.array([[1.0, 2.0, 4.0]])
    out, *_ = group_values_on_rules(spread, released, np.zeros(1, int), COLUMNS, net_plus_tax())
    step = 1 / 102
    np.testing.assert_allclose(out[0], [1 + step, 2 + step, 4 - 100 * step], rtol=1e-14)


def test_a_small_group_keeps_the_equality_at_its_own_magnitude_beside_a_large_scale():
    # net's mean and standard deviation over the file are S (one very large firm), tax's
    # and gross's 0 and 1. Group means over different records n = (2, 2, 3), w_j = n_j /
    # s_j^2 = (2 / S^2, 2, 3); a = (1, 1, -1), D = a' W^-1 a = S^2 / 2 + 1/2 + 1/3, so
    # r = m - W^-1 a (a . m) / D, by hand in exact fractions. Back from standardized units
    # the group carried the rounding of S: net off by about 1e-6, the rule broken by as much
    # (the validation allows 1e-8 at 4), and a release of heavy-tailed amounts was refused.
    from fractions import Fraction

    for S in (7.3e9 * np.pi, 1.1e10 / 3, 2.9e10 * np.e):
        spread = np.array([[0.0, -1.0, -1.0], [2 * S, 1.0, 1.0]])
        m = (1.37, 2.71, 4.19)
        released = np.array([[m[0], NAN, m[2]], [m[0], m[1], m[2]], [NAN, m[1], m[2]]])
        out, moved, *_ = group_values_on_rules(
            spread, released, np.zeros(3, int), COLUMNS, net_plus_tax()
        )
        assert moved == 1
        fm = [Fraction(v) for v in m]
        s2 = Fraction(np.std(spread[:, 0])) ** 2
        D = s2 / 2 + Fraction(1, 2) + Fraction(1, 3)
        excess = fm[0] + fm[1] - fm[2]
        expected = [fm[0] - s2 / 2 * excess / D, fm[1] - excess / 2 / D, fm[2] + excess / 3 / D]
        got = np.nanmax(out, axis=0)
        error = max(abs(Fraction(float(g)) - e) for g, e in zip(got, expected, strict=True))
        assert error <= Fraction(1, 10**15) * 5
        assert abs(got[0] + got[1] - got[2]) <= 8 * np.finfo(float).eps * 5


def _exact_projection(m, w, rules):
    """The least ``sum w (x - m)^2`` under ``rules``, in exact fractions: every active set
    of the inequalities, the KKT point of each (multipliers >= 0, every row kept), the
    best. An independent reference for a few columns and rows."""
    from fractions import Fraction
    from itertools import combinations

    def exact(a):
        return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(a)]

    m, w = exact(m)[0], exact(w)[0]
    A, G = exact(rules.A) if rules.A.size else [], exact(rules.G) if rules.G.size else []
    b, h = exact(rules.b)[0] if len(A) else [], exact(rules.h)[0] if len(G) else []
    d, best = len(m), None
    for size in range(len(G) + 1):
        for face in combinations(range(len(G)), size):
            rows, rhs = A + [G[i] for i in face], b + [h[i] for i in face]
            k = len(rows)  # solve (M W^-1 M') lam = M m - rhs by Gauss-Jordan
            aug = [
                [sum(rows[i][j] * rows[t][j] / w[j] for j in range(d)) for t in range(k)]
                + [sum(rows[i][j] * m[j] for j in range(d)) - rhs[i]]
                for i in range(k)
            ]
            for c in range(k):
                p = next((r for r in range(c, k) if aug[r][c] != 0), None)
                if p is None:
                    break
                aug[c], aug[p] = aug[p], aug[c]
                for r in range(k):
                    if r != c and aug[r][c] != 0:
                        f = aug[r][c] / aug[c][c]
                        aug[r] = [x - f * y for x, y in zip(aug[r], aug[c], strict=True)]
            else:
                lam = [aug[i][k] / aug[i][i] for i in range(k)]
                x = [m[j] - sum(lam[i] * rows[i][j] for i in range(k)) / w[j] for j in range(d)]
                feasible = all(
                    sum(g * v for g, v in zip(G[i], x, strict=True)) <= h[i] for i in range(len(G))
                )
                if feasible and all(v >= 0 for v in lam[len(A) :]):
                    cost = sum(wj * (xj - mj) ** 2 for wj, xj, mj in zip(w, x, m, strict=True))
                    if best is None or cost < best[0]:
                        best = (cost, x)
    return np.array([float(v) for v in best[1]])


@pytest.mark.parametrize("case", ["nonnegative", "caps"])
def test_small_groups_beside_giants_move_as_an_exact_solver_moves_them(case):
    # The polish in own units reads its face in own units: from standardized units, a
    # shift of 1e9 makes rows a group of 1.5 is a unit away from look active, and
    # "nonnegative" would publish (1.15, 0, 0, 0, 1.15) for means (5, 1.5, 2.6, 4, 1); "caps"
    # would force turnover to 0 and break total_costs == wages + other_costs by 0.37.
    columns = ["turnover", "wages", "other_costs", "total_costs", "profit"]
    sums = [
        ("costs", [({"total_costs": 1, "wages": -1, "other_costs": -1}, 0.0)], []),
        ("profit", [({"profit": 1, "turnover": -1, "total_costs": 1}, 0.0)], []),
    ]
    rng = np.random.default_rng(0)
    if case == "nonnegative":
        bounds = [("w", [], [({"wages": -1.0}, 0.0)]), ("o", [], [({"other_costs": -1.0}, 0.0)])]
        turnover = rng.uniform(100, 1e4, 1000)
        turnover[:5] = 1e12 * rng.uniform(1, 3, 5)
        means = [5.0, 1.5, 2.6, 4.0, 1.0]
    else:
        bounds = [
            ("o", [], [({"other_costs": -1.0}, 0.0)]),
            ("cap", [], [({"total_costs": 1.0, "turnover": -3.0}, 0.0)]),
            ("loss", [], [({"profit": -1.0, "turnover": -1.0}, 0.0)]),
        ]
        turnover = rng.uniform(100, 1e4, 500)
        turnover[:2] = [5e10, 9e10]
        means = [1.07, 0.75, 0.67, 1.44, -0.40]
    rules = LinearConstraints.from_rows(sums + bounds, columns)
    X = np.column_stack([turnover, 0.3 * turnover, 0.5 * turnover, 0.8 * turnover, 0.2 * turnover])
    released = np.array([means] * 3)
    released[1, 1] = released[2, 2] = NAN  # wages and other_costs: means over other records
    out, moved, *_ = group_values_on_rules(X, released, np.zeros(3, int), columns, rules)
    assert moved == 1
    counts = np.array([3, 2, 2, 3, 3])
    expected = _exact_projection(means, counts / X.std(axis=0) ** 2, rules)
    # exactly: projected onto its face in own units (before, only to the standardized
    # units' rounding of the giants' scale along the face, 3e-7)
    np.testing.assert_allclose(out[0], expected, rtol=1e-14, atol=1e-14)
    assert not violating_records(out[:1], rules).any()


def test_a_row_the_means_break_by_rounding_does_not_join_the_face():
    # Beside giants of 1e17 the standardized move of a group of 5 is under an ulp, so its
    # means come back bit for bit; they break profit >= -turnover by 0.075 and wages <=
    # turnover by 1.5e-13. Polished onto every row broken, wages == turnover would be held
    # too (4.1 times the least cost); its multiplier is negative, so it leaves the face.
    columns = ["turnover", "wages", "other_costs", "total_costs", "profit"]
    rules = LinearConstraints.from_rows(
        [
            ("costs", [({"total_costs": 1, "wages": -1, "other_costs": -1}, 0.0)], []),
            ("profit", [({"profit": 1, "turnover": -1, "total_costs": 1}, 0.0)], []),
            ("w", [], [({"wages": -1.0}, 0.0)]),
            ("o", [], [({"other_costs": -1.0}, 0.0)]),
            ("loss", [], [({"profit": -1.0, "turnover": -1.0}, 0.0)]),
            ("wt", [], [({"wages": 1.0, "turnover": -1.0}, 0.0)]),
        ],
        columns,
    )
    turnover = np.random.default_rng(1).uniform(100, 1e6, 400)
    turnover[:3] = [1e17, 2e17, 3e17]
    X = np.column_stack([turnover, 0.3 * turnover, 0.5 * turnover, 0.8 * turnover, 0.2 * turnover])
    means = [5.766489070953271, 5.766489070953418, 5.841567162579917, 11.608056233533336]
    means.append(-5.8415671625800645)
    released = np.array([means] * 3)
    released[1, 3] = NAN
    out, moved, *_ = group_values_on_rules(X, released, np.zeros(3, int), columns, rules)
    counts = np.array([3, 3, 3, 2, 3])
    expected = _exact_projection(means, counts / X.std(axis=0) ** 2, rules)
    assert moved == 1 and not violating_records(out[:1], rules).any()
    np.testing.assert_allclose(out[0], expected, rtol=1e-14, atol=1e-14)


def test_a_value_whose_scale_has_no_weight_is_refused_not_a_crash():
    # one turnover of 1e200 makes the scale's square overflow (weight 0): the refusal is
    # reached, not a LinAlgError in the own-units polish
    from sdcflow.errors import DataError, Reason

    spread = np.array([[1e200, 1.0, 1e200]] + [[float(i), 1.0, i + 1.0] for i in range(9)])
    off = np.array([[1.0, NAN, 4.0], [1.0, 2.0, 4.0], [NAN, 2.0, 4.0]])
    with pytest.raises(DataError) as e:
        group_values_on_rules(spread, off, np.zeros(3, int), COLUMNS, net_plus_tax())
    assert e.value.code is Reason.VALUES_RANGE and e.value.field == "net"


def test_a_group_off_by_more_than_the_validation_allows_is_moved_at_any_magnitude():
    # total_costs == wages + other_costs broken by 1.4e-6 at 2.5e6 (the validation allows
    # 1e-8 + 1e-14 * 5e6 = 6e-8) is moved: the test of which groups must move allows no
    # more than the validation does (1e-12 of the terms, 5e-6, would leave it)
    columns = ["turnover", "wages", "other_costs", "total_costs", "profit"]
    rules = LinearConstraints.from_rows(
        [
            ("costs", [({"total_costs": 1, "wages": -1, "other_costs": -1}, 0.0)], []),
            ("profit", [({"profit": 1, "turnover": -1, "total_costs": 1}, 0.0)], []),
        ],
        columns,
    )
    turnover = np.round(np.random.default_rng(1).lognormal(12, 1, 400), 2)
    X = np.column_stack([turnover, 0.3 * turnover, 0.5 * turnover, 0.8 * turnover, 0.2 * turnover])
    means = [3858018.3966620853, 2.667512137051423, 2539632.875573378, 2539635.5430841367]
    means.append(1318382.8535760152)
    released = np.array([means] * 3)
    released[1, 1] = NAN
    out, moved, *_ = group_values_on_rules(X, released, np.zeros(3, int), columns, rules)
    assert moved == 1 and not violating_records(out, rules).any()


def test_a_strict_margin_is_each_groups_own_not_the_largest_firms():
    # The margin inside `turnover > wages` is the allowance at each group's own magnitude,
    # 1e-8 + 2e-14 (|h| + |g| |v|): taken at the largest value held and the column's scale,
    # it would be 205 beside one turnover of 2e16, moving a group at (11, 9), which keeps
    # the rule, to (214, 9), and constrained_fuzzy would publish turnover 11 at 40.
    from sdcflow.core.fuzzy.microaggregation import _polish

    columns = ["turnover", "wages"]
    rules = LinearConstraints.from_rows(
        [("t>w", [], [({"turnover": -1.0, "wages": 1.0}, 0.0)], [True])], columns
    )
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(100, 1e4, 1500), rng.uniform(10, 90, 1500)])
    X[0, 0] = 2e16
    labels = np.array([0, 0, 0, 1, 1, 1])
    for kept in (11.0, 9.0):  # (11, 9) keeps the rule; (9, 9) is on its boundary
        released = np.array([[kept, 9.0]] * 3 + [[2e16 / 3, NAN]] * 3)
        out = group_values_on_rules(X, released, labels, columns, rules).values
        gap = out[0, 0] - out[0, 1]
        if kept == 11.0:
            assert np.array_equal(out[:3], released[:3])
        else:
            assert 1e-8 < gap <= 1e-8 + 2e-14 * 18 + 1e-15  # moved just inside, both ways
            assert abs(out[0, 0] - 9.0) < 1e-7 and abs(out[0, 1] - 9.0) < 1e-7
    centres = np.array([[11.0, 9.0], [2e16, 1.0], [9.0, 9.0]])
    polished = _polish(centres, rules, X.std(axis=0))
    assert np.array_equal(polished[:2], centres[:2])
    assert 1e-8 < polished[2, 0] - polished[2, 1] < 1e-7


def test_a_group_on_a_strict_boundary_is_moved_inside_and_stays_inside_once_rounded():
    # The margins at each group's own magnitude:
    # - a group mean exactly on `turnover > wages` (10000.5, 10000.5) is 1e-14 of its
    #   terms from the aimed bound, under the 1e-12 the test of which groups must move
    #   would allow: it must move, or the release is refused;
    # - at 1.46e9, with integer turnover and wages in cents, the margin 1e-8 + 1e-14 terms
    #   clears the validation's slack (1e-14 terms) by 1e-8, under an ulp: the rounding
    #   must still find the moved point inside and round towards the row, or turnover is
    #   published 0.19 under wages (exit 1; a three-record file).
    columns = ["turnover", "wages"]
    rules = LinearConstraints.from_rows(
        [("t>w", [], [({"turnover": -1.0, "wages": 1.0}, 0.0)], [True])], columns
    )
    on = np.array([[10000.5, 9000.5], [NAN, 11000.5], [50000.5, 40000.5], [NAN, 41000.5]])
    released = np.array([[10000.5, 10000.5]] * 2 + [[50000.5, 40500.5]] * 2)
    released[1, 0] = released[3, 0] = NAN
    out, moved, *_ = group_values_on_rules(on, released, np.array([0, 0, 1, 1]), columns, rules)
    assert moved == 1 and np.nanmax(out[:2, 0]) > np.nanmax(out[:2, 1])
    assert not violating_records(np.nanmax(out[:2], axis=0)[None, :], rules).any()
    big = np.array([[1455442530.0, 1440888104.70], [NAN, 1470478055.77], [NAN, 1479115891.89]])
    means = np.array([[1455442530.0, np.mean(big[:, 1])]] * 3)
    means[1:, 0] = NAN
    out, moved, rounded, _ = group_values_on_rules(
        big, means, np.zeros(3, int), columns, rules, decimals=[0, None]
    )
    assert moved == 1 and rounded == ("turnover", "wages")
    assert out[0, 0] == np.round(out[0, 0]) and out[0, 0] > out[0, 1]
    assert not violating_records(out[:1], rules).any()


def test_a_key_the_group_projection_would_lose_is_refused_not_published_as_noise():
    # one net of 1e40 among a few: standardized units cannot keep the others apart, so a
    # group that must move is refused (naming the column, no value); groups already on the
    # rules need no projection and are released as they are
    from sdcflow.errors import DataError, Reason

    spread = np.array([[1e40, 1.0, 1e40 + 1.0]] + [[float(i), 1.0, i + 1.0] for i in range(9)])
    off = np.array([[1.0, NAN, 4.0], [1.0, 2.0, 4.0], [NAN, 2.0, 4.0]])
    with pytest.raises(DataError) as e:
        group_values_on_rules(spread, off, np.zeros(3, int), COLUMNS, net_plus_tax())
    assert e.value.code is Reason.VALUES_RANGE and e.value.field == "net"
    assert "1e+40" not in str(e.value)
    on = np.array([[1.0, NAN, 3.0], [1.0, 2.0, 3.0], [NAN, 2.0, 3.0]])
    out, moved, *_ = group_values_on_rules(spread, on, np.zeros(3, int), COLUMNS, net_plus_tax())
    assert moved == 0 and np.array_equal(out, on, equal_nan=True)


def test_a_lost_column_no_row_ties_to_the_move_keeps_its_value_and_is_not_refused():
    # interest has one value of 1e40 (standardized units cannot keep its others apart). A
    # group breaking net + tax == gross moves along net, tax and gross, in own units, and
    # keeps its interest bit for bit, under interest >= 0 or held at 0 by it; one below 0 is
    # moved onto its own bound in own units. Before, each was refused, naming interest. A
    # row tying interest to another column (interest <= gross) that the group breaks would
    # carry its rounding into the move: refused.
    from sdcflow.errors import DataError, Reason

    columns = [*COLUMNS, "interest"]
    sums = [("sum", [({"net": 1.0, "tax": 1.0, "gross": -1.0}, 0.0)], [])]
    bound = [("interest", [], [({"interest": -1.0}, 0.0)])]
    rules = LinearConstraints.from_rows(sums + bound, columns)
    spread = np.array([[i, i, 2.0 * i, 0.25 * i] for i in range(10)], dtype=float)
    spread[0, 3] = 1e40
    # least (n - 1)^2 / s^2 + (t - 2)^2 / s^2 + (g - 4)^2 / (2 s)^2 with n + t = g (gross
    # spreads twice as far): n + t - g = -1 shared as (1, 1, -4) / 6
    for interest, published in ((0.37, 0.37), (0.0, 0.0), (-0.37, 0.0)):
        released = np.array([[1.0, 2.0, 4.0, interest]] * 2)
        out, moved, *_ = group_values_on_rules(spread, released, np.zeros(2, int), columns, rules)
        assert moved == 1 and np.all(out[:, 3] == published), interest
        np.testing.assert_allclose(out[0, :3], [7 / 6, 13 / 6, 10 / 3], rtol=1e-14)
    tied = LinearConstraints.from_rows(
        [*sums, ("cap", [], [({"interest": 1.0, "gross": -1.0}, 0.0)])], columns
    )
    released = np.array([[1.0, 2.0, 4.0, 5.0]] * 2)
    with pytest.raises(DataError) as e:
        group_values_on_rules(spread, released, np.zeros(2, int), columns, tied)
    assert e.value.code is Reason.VALUES_RANGE and e.value.field == "interest"


def test_rules_reading_a_column_not_released_as_a_number_are_left_out():
    # `gross` binned by recode: the rule cannot be applied to the numbers here
    released = np.array([[1.0, 2.0]])
    out, moved, *_ = group_values_on_rules(
        UNIT_SPREAD[:, :2], released, np.zeros(1, int), ["net", "tax"], net_plus_tax()
    )
    assert moved == 0 and np.array_equal(out, released)


def test_without_rules_nothing_moves():
    released = np.array([[1.0, NAN, 4.0]])
    out, moved, *_ = group_values_on_rules(UNIT_SPREAD, released, np.zeros(1, int), COLUMNS, None)
    assert moved == 0 and np.array_equal(out, released, equal_nan=True)


def test_a_conditional_consequent_binds_a_group_whose_values_meet_its_condition():
    # columns (employees, wages, other, total); total == wages + other; if employees == 0
    # then wages == 0. Group 0's means (0, 3, 5, 8) keep the sum but employees is 0 on the
    # records that have it (a record missing employees brought its wages into the mean):
    # from the means onto {total = wages + other, wages = 0}, n = (2, 3, 3, 3), unit
    # spread: least 3 (o - 5)^2 + 3 (t - 8)^2 with t = o is o = t = 6.5. Group 1 has no
    # employees value: the condition is undetermined there and nothing binds it.
    columns = ["employees", "wages", "other", "total"]
    rules = LinearConstraints.from_rows(
        [("sum", [({"total": 1.0, "wages": -1.0, "other": -1.0}, 0.0)], [])], columns
    )
    consequent = LinearConstraints.from_rows([("staff", [({"wages": 1.0}, 0.0)], [])], columns)
    released = np.array(
        [
            [0.0, 3.0, 5.0, 8.0],
            [0.0, 3.0, 5.0, 8.0],
            [NAN, 3.0, 5.0, 8.0],
            [NAN, 3.0, 5.0, 8.0],
            [NAN, 3.0, 5.0, 8.0],
        ]
    )
    labels = np.array([0, 0, 0, 1, 1])
    spread = np.array([[-1.0] * 4, [1.0] * 4])
    seen = []

    def no_staff(values):
        seen.append(values["employees"].copy())
        return values["employees"] == 0  # NaN: False

    out, moved, *_ = group_values_on_rules(
        spread, released, labels, columns, rules, conditional=[(no_staff, consequent)]
    )
    assert moved == 1
    np.testing.assert_allclose(out[:3], [[0, 0, 6.5, 6.5], [0, 0, 6.5, 6.5], [NAN, 0, 6.5, 6.5]])
    assert np.array_equal(out[3:], released[3:], equal_nan=True)
    assert any(np.isnan(v).any() for v in seen)  # the group without employees was asked


def test_group_values_are_rounded_keeping_the_equalities_each_group_can_be_checked_on():
    # group 0 lacks `net` on every record, so only gross == tax + fee binds it; rounded
    # record by record its columns would round on their own: 10.4 + 2.4 -> 10 + 2 != 13
    columns = ["net", "tax", "fee", "gross"]
    rules = LinearConstraints.from_rows(
        [
            ("g", [({"gross": 1.0, "tax": -1.0, "fee": -1.0}, 0.0)], []),
            ("n", [({"net": 1.0, "tax": 1.0, "gross": -1.0}, 0.0)], []),
        ],
        columns,
    )
    released = np.array([[NAN, 10.4, 2.4, 12.8], [NAN, 10.4, 2.4, 12.8]])
    spread = np.array([[-1.0] * 4, [1.0] * 4])
    out, *_ = group_values_on_rules(
        spread, released, np.zeros(2, int), columns, rules, decimals=[0, 0, 0, 0]
    )
    assert np.array_equal(out[:, 1] + out[:, 2], out[:, 3])
    assert np.array_equal(out, np.round(out), equal_nan=True)
    assert (out[0] == out[1])[1:].all()  # one group, one set of values


def test_a_condition_on_a_missing_value_is_undetermined_not_true():
    # DuckDB orders NaN above every number: NaN != 0 and NaN > 5 would be true
    from sdcflow.tasks.edits import SqlCondition

    values = {"employees": np.array([0.0, 3.0, NAN]), "wages": np.array([1.0, 2.0, 3.0])}
    assert SqlCondition('("employees" > 2.0)')(values).tolist() == [False, True, False]
    assert SqlCondition('(abs("employees") > 0.0)')(values).tolist() == [False, True, False]


def test_a_condition_travels_to_a_worker_as_its_sql():
    # a piece of the streamed mask runs on a Dask worker: the condition is pickled, without
    # the connection its first call opened
    import pickle

    from sdcflow.tasks.edits import SqlCondition

    values = {"employees": np.array([0.0, 3.0, NAN])}
    holds = SqlCondition('("employees" > 2.0)')
    assert holds(values).tolist() == [False, True, False]
    copy = pickle.loads(pickle.dumps(holds))
    assert copy.sql == holds.sql and copy(values).tolist() == [False, True, False]


def test_a_condition_called_from_several_threads_reads_each_calls_values():
    # the connection's registered table is the call's: threads sharing one condition read
    # each other's values (almost every call wrong with four threads)
    from concurrent.futures import ThreadPoolExecutor

    from sdcflow.tasks.edits import SqlCondition

    holds = SqlCondition('("x" > 0.0)')

    def wrong(seed: int) -> int:
        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal(rng.integers(1, 50)) for _ in range(200)]
        return sum(not np.array_equal(holds({"x": x}), x > 0) for x in xs)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(wrong, range(4))) == [0, 0, 0, 0]


def _survey_with_gaps(tmp_path, share: float = 0.05, rows: int = 800, floats: bool = False):
    """The survey's first ``rows`` records, each key missing with probability ``share``;
    with ``floats`` the money columns have halves (read as DOUBLE: no rounding step)."""
    frame = pd.read_csv(EXAMPLE / "data.csv").head(rows)
    if floats:  # the sums still hold: x.5 + y.5 = z + 1, (t + 1) - (z + 1) = profit
        frame = frame.astype({c: float for c in QIS})
        frame[["wages", "other_costs"]] += 0.5
        frame[["total_costs", "turnover"]] += 1.0
    rng = np.random.default_rng(7)
    for column in QIS:
        if not floats:
            frame[column] = frame[column].astype("Int64")
        frame.loc[rng.random(rows) < share, column] = pd.NA if not floats else np.nan
    frame.to_csv(tmp_path / "data.csv", index=False)


def _released(tmp_path, release: str, edits: list, method: dict, **fields):
    """Write a spec over ``tmp_path/data.csv`` (the survey's keys and region unless
    ``fields`` say otherwise), release it (exit 0) and return the published folder.

    The keys are magnitudes, whose group means get the p % rule gate by default, and the
    remedy (``dominance: true``) is not applied by MDAV-generic, which groups records with
    gaps: these releases are about the edit rules, so they accept dominated groups
    explicitly, as an office that judges the keys no contributions would (a threshold no
    release reaches, under ``accept: looser_checks``)."""
    spec = {
        "release": release,
        "source": "data.csv",
        "id_column": "respondent_id",
        "quasi_identifiers": [*QIS, "region"],
        "missing_values": [""],
        "edits": edits,
        "method": method,
        "checks": {"k_anonymity": 5, "max_p_dominated_groups": 3000},
        "accept": {"looser_checks": ["max_p_dominated_groups"]},
        "output": "published/",
        "warehouse": "warehouse.duckdb",
        **fields,
    }
    (tmp_path / "release.yaml").write_text(json.dumps(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0
    return tmp_path / "published" / release


def _violations(data: pd.DataFrame, tol: float = 0.0) -> tuple[int, int]:
    """Records breaking each equality by more than ``tol``, among those that have its
    values."""
    costs = data["total_costs"] - data["wages"] - data["other_costs"]
    profit = data["profit"] - data["turnover"] + data["total_costs"]
    return int((costs.dropna().abs() > tol).sum()), int((profit.dropna().abs() > tol).sum())


@pytest.mark.flow
@pytest.mark.parametrize(
    ("method", "rows", "floats"),
    [
        ({"name": "mdav", "k": 5}, 800, True),
        ({"name": "mdav", "k": 5, "cell_size": 200}, 3000, False),
        ({"name": "heterogeneous", "k": 5}, 800, True),
    ],
    ids=["one-pass-decimals", "cells-integers", "heterogeneous-decimals"],
)
def test_the_survey_with_gaps_and_edit_rules_publishes_with_every_rule_kept(
    tmp_path, prefect_api, method, rows, floats
):
    # before, each was refused by the post-release validation: with decimals, means over
    # the values present broke the sums on most records (2 304 of 3 000 on the whole
    # survey); with integers the rounding solved the sums on complete records only, and
    # in cells, where groups had no complete record, a sum broke by a unit (17 records)
    _survey_with_gaps(tmp_path, rows=rows, floats=floats)
    source = pd.read_csv(tmp_path / "data.csv")
    edits = [
        "total_costs == wages + other_costs",
        "profit == turnover - total_costs",
        "wages >= 0",
        "if employees == 0 then wages == 0",
    ]
    out = _released(tmp_path, "survey-gaps", edits, method)
    data = pd.read_csv(out / "data.csv")
    assert _violations(data, tol=1e-8) == (0, 0)  # the validation's default tolerance
    assert (data["wages"].dropna() >= 0).all()
    # every gap stays a gap; a group mixing gaps and values releases the key missing for all
    # of its records (k counts identical rows), so there are at least as many gaps per key
    assert (data[QIS].isna().sum() >= source[QIS].isna().sum()).all()
    manifest = json.loads((out / "manifest.json").read_text())
    details = manifest["method_details"]
    assert details["groups_moved_onto_edit_rules"] > 0
    assert manifest["edit_rules"]["masked"] == {"R1": 0, "R2": 0, "R3": 0, "R4": 0}
    staff = data.dropna(subset=["employees", "wages"])
    assert (staff.loc[staff["employees"] == 0, "wages"] == 0).all()


@pytest.mark.flow
def test_heavy_tailed_amounts_with_gaps_publish_and_an_absurd_one_is_refused(
    tmp_path, prefect_api, capsys
):
    # amounts in cents of a currency unit where ten firms are ten million times the others
    # (turnover's standard deviation about 4e9, most firms' about 1e3): mdav with gaps moved
    # the groups in standardized units and left the small ones off `profit == turnover -
    # total_costs` by about 1e-6, so the release was refused (hundreds of violations). The
    # same file with one turnover of 1e40 cannot be moved there at all: refused, naming the
    # column, nothing published.
    from errorline import cli_error

    from sdcflow.errors import Reason

    _survey_with_gaps(tmp_path, floats=True)
    frame = pd.read_csv(tmp_path / "data.csv")
    large = frame["turnover"].nlargest(10).index
    money = ["turnover", "wages", "other_costs", "total_costs", "profit"]
    frame.loc[large, money] *= 1e7
    frame.to_csv(tmp_path / "data.csv", index=False)
    edits = ["total_costs == wages + other_costs", "profit == turnover - total_costs"]
    out = _released(tmp_path, "heavy", edits, {"name": "mdav", "k": 5})
    data = pd.read_csv(out / "data.csv")
    for terms in (["total_costs", "wages", "other_costs"], ["turnover", "total_costs", "profit"]):
        residual = data[terms[0]] - data[terms[1]] - data[terms[2]]
        allowed = 1e-8 + 1e-14 * data[terms].abs().sum(axis=1)  # the validation's allowance
        assert not (residual.abs() > allowed).any()
    frame.loc[large[0], ["turnover", "profit"]] = 1e40
    frame.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "release.yaml").write_text(
        (tmp_path / "release.yaml").read_text().replace('"heavy"', '"absurd"')
    )
    capsys.readouterr()
    assert main(["release", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.VALUES_RANGE
    assert not (tmp_path / "published" / "absurd").exists()


def test_each_group_gets_the_least_sum_of_squares_a_general_solver_finds():
    # independent: SLSQP minimizes each group's own sum of squares over the values present,
    # under the rules, from scratch; 40 random groups with gaps
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    rules = net_plus_tax(net_nonnegative=True)
    spread = rng.normal(size=(50, 3)) * [1.0, 2.0, 5.0] + [0.5, 1.0, 1.5]
    scale = spread.std(axis=0)  # the file's spread sets the units
    for _ in range(40):
        X = rng.normal(size=(6, 3)) * [1.0, 2.0, 5.0] + [0.5, 1.0, 1.5]
        X[rng.random(X.shape) < 0.3] = NAN
        X[0] = [0.2, 0.3, 0.5]  # every column present somewhere
        means = np.nanmean(X, axis=0)
        released = np.where(np.isnan(X), NAN, means)
        out, *_ = group_values_on_rules(spread, released, np.zeros(6, int), COLUMNS, rules)
        r = np.nanmax(out, axis=0)

        def sse(v, X=X):
            return np.nansum(((X - v) / scale) ** 2)

        best = minimize(
            sse,
            means,
            method="SLSQP",
            constraints=[
                {"type": "eq", "fun": lambda v: v[0] + v[1] - v[2]},
                {"type": "ineq", "fun": lambda v: v[0]},
            ],
            options={"ftol": 1e-14, "maxiter": 500},
        )
        assert best.success
        assert abs(r[0] + r[1] - r[2]) <= 1e-12 * (1 + np.abs(r).max()) and r[0] >= 0
        assert sse(r) <= best.fun + 1e-9 * (1 + best.fun)
        np.testing.assert_allclose(r, best.x, atol=1e-6)


@pytest.mark.flow
def test_a_record_with_gaps_is_repaired_onto_the_rules_it_can_be_checked_against(
    tmp_path, prefect_api
):
    # before: repair skipped every record missing any key, so the 80 sums it could check
    # stayed broken in the edited table (the groups' projection still kept the release)
    frame = pd.read_csv(EXAMPLE / "data.csv").head(400)
    for column in QIS:
        frame[column] = frame[column].astype("Int64")
    frame.loc[0:9, "employees"] = pd.NA  # the sum of costs can be checked, and is broken
    frame.loc[0:9, "total_costs"] += 7
    frame.loc[10:19, "wages"] = pd.NA  # only profit == turnover - total_costs applies
    frame.loc[10:19, "profit"] += 5
    frame.loc[20:29, "wages"] = pd.NA  # and the consequent reads wages: undetermined
    frame.loc[20:29, "employees"] = 0
    frame.to_csv(tmp_path / "data.csv", index=False)
    edits = [
        "total_costs == wages + other_costs",
        "profit == turnover - total_costs",
        "if employees == 0 then wages == 0",
    ]
    method = {"name": "mdav", "k": 5}
    out = _released(tmp_path, "gaps-repaired", edits, method, on_violation="repair")
    manifest = json.loads((out / "manifest.json").read_text())
    run = manifest["run_id"]
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        edited = con.sql(f'SELECT * FROM edited."run_{run}" ORDER BY sdc_row_id').df()
    assert manifest["edit_rules"]["repaired_records"] >= 20
    assert _violations(edited, tol=1e-9) == (0, 0)  # repaired values are not rounded
    assert edited[QIS].isna().equals(frame[QIS].isna())  # gaps stay gaps (input order)
    np.testing.assert_array_equal(edited.loc[20:29, "employees"], 0)


def test_a_condition_on_a_key_binned_by_recode_is_not_applied_to_group_values():
    # employees is published as bin labels: its condition cannot be read on numbers (DuckDB
    # stopped the mask step with a binder error)
    from sdcflow.expectations.rules import parse_rules
    from sdcflow.preflight.plan import linear_constraints
    from sdcflow.tasks.edits import group_conditions

    columns = ["employees", "wages"]
    [rule] = parse_rules(["if employees == 0 then wages == 0"])
    spec = type("Spec", (), {"quasi_identifiers": columns})()
    constraints = linear_constraints([], columns)
    assert len(group_conditions(spec, [rule], constraints, columns)) == 1
    assert group_conditions(spec, [rule], constraints, ["wages"]) == []


def test_a_column_of_one_value_across_the_file_is_moved_last():
    # c is 10 on every record: a + b == c is kept by moving a and b, not c (in raw units,
    # as a column of spread 0 was measured before, c took most of the move: 9.87)
    columns = ["a", "b", "c"]
    rules = LinearConstraints.from_rows(
        [("sum", [({"a": 1.0, "b": 1.0, "c": -1.0}, 0.0)], [])], columns
    )
    spread = np.array([[0.0, 0.0, 10.0], [20.0, 200.0, 10.0], [5.0, 5.0, 10.0]])
    released = np.array([[4.0, NAN, 10.0], [NAN, 6.5, 10.0]])
    out, moved, *_ = group_values_on_rules(spread, released, np.zeros(2, int), columns, rules)
    assert moved == 1
    assert np.allclose(out[:, 2], 10.0, rtol=1e-9)
    assert out[0, 0] + out[1, 1] == pytest.approx(10.0, rel=1e-12)


def test_a_bound_at_zero_is_published_as_0_not_minus_0():
    # `wages >= 0` is -wages <= 0, whose bound 0 / -1 is -0.0: a CSV showed "-0.0"
    rules = LinearConstraints.from_rows([("w", [], [({"wages": -1.0}, 0.0)])], ["wages"])
    snapped = rules.snap_bounds(np.array([[-1e-16], [0.0], [-0.0], [3.0]]))
    assert not np.signbit(snapped).any() and snapped.ravel().tolist() == [0.0, 0.0, 0.0, 3.0]


def test_the_batched_weighted_projection_is_the_projectors():
    # every group at once onto the equalities, each with its own weights, against the
    # projector built for each weight vector; a dependent row (the sum of the two) included
    from sdcflow.core.linear.own_units import onto_equalities
    from sdcflow.core.linear.projection import PolyhedronProjector

    rng = np.random.default_rng(11)
    A = np.array([[1.0, 1.0, -1.0, 0.0, 0.0], [0.0, -0.2, 0.0, 1.0, 0.0]])
    A = np.vstack([A, A[0] + A[1]])
    b = np.array([0.5, 0.0, 0.5])
    Z = rng.normal(size=(30, 5)) * 3
    W = rng.integers(1, 9, size=(30, 5)).astype(float)
    got = onto_equalities(Z, W, A, b)
    for z, w, g in zip(Z, W, got, strict=True):
        want = PolyhedronProjector(A, b, np.zeros((0, 5)), np.zeros(0), weights=w).project(
            z[None, :], skip_feasible=False
        )[0]
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got @ A.T, np.broadcast_to(b, (30, 3)), atol=1e-12)


def _ineq(columns, name, coefficients, bound):
    return LinearConstraints.from_rows([(name, [], [(coefficients, bound)])], columns)


def test_a_condition_rounding_makes_true_binds_its_consequent():
    # if employees <= 1 then wages <= 50: the means (1.4, 60, 15, 75) do not meet the
    # condition, rounding makes employees 1 and (1, 60, 15, 75) would break the rule; the
    # group is moved again with the consequent and rounded
    columns = ["employees", "wages", "other", "total"]
    rules = LinearConstraints.from_rows(
        [("sum", [({"total": 1.0, "wages": -1.0, "other": -1.0}, 0.0)], [])], columns
    )
    small = _ineq(columns, "small", {"wages": 1.0}, 50.0)
    released = np.array([[1.4, 60.0, 15.0, 75.0]] * 5)
    released[1, 3] = NAN
    spread = np.array([[0, 0, 10, 10], [1, 40, 10, 50], [1, 45, 5, 50.0]])
    out, *_ = group_values_on_rules(
        spread,
        released,
        np.zeros(5, int),
        columns,
        rules,
        decimals=[0, 0, 0, 0],
        conditional=[(lambda v: v["employees"] <= 1, small)],
    )
    employees, wages, other, total = out[0]
    assert employees <= 1 and wages <= 50 and wages + other == total
    assert np.array_equal(out, np.round(out), equal_nan=True)


def test_a_consequent_whose_move_makes_another_condition_true_binds_that_one_too():
    # if wages >= 250 then other >= 150; if other >= 140 then total <= 370. The means
    # (330, 100, 385) meet the first; moving other to 150 meets the second, which must be
    # added too: (273, 150, 423) would break it
    columns = ["wages", "other", "total"]
    rules = LinearConstraints.from_rows(
        [("sum", [({"wages": 1.0, "other": 1.0, "total": -1.0}, 0.0)], [])], columns
    )
    first = _ineq(columns, "c1", {"other": -1.0}, -150.0)
    second = _ineq(columns, "c2", {"total": 1.0}, 370.0)
    X = np.array(
        [[400, NAN, NAN], [240, 100, 340], [NAN, 100, NAN], [350, NAN, NAN], [NAN, NAN, 430.0]]
    )
    released = np.where(np.isnan(X), NAN, np.nanmean(X, axis=0))
    out, moved, *_ = group_values_on_rules(
        X,
        released,
        np.zeros(5, int),
        columns,
        rules,
        decimals=[0, 0, 0],
        conditional=[
            (lambda v: v["wages"] >= 250, first),
            (lambda v: v["other"] >= 140, second),
        ],
    )
    wages, other, total = np.nanmax(out, axis=0)
    assert moved == 1 and wages + other == total
    assert wages < 250 or other >= 150
    assert other < 140 or total <= 370


@pytest.mark.flow
def test_values_a_rule_keeps_off_integers_are_not_rounded_again_record_by_record(
    tmp_path, prefect_api
):
    # tax == 0.2 * net on integers: a group's net 9143 gives tax 1828.6, published as
    # solved. The whole-file rounding after it must not round that tax to 1829 on records
    # missing another key with no complete record to copy, which would break the rule
    rng = np.random.default_rng(5)
    n = 1500
    net = 5 * rng.integers(200, 4000, n)
    frame = pd.DataFrame(
        {
            "id": np.arange(n),
            "net": net,
            "tax": net // 5,
            "staff": rng.integers(1, 60, n),
            "turnover": rng.integers(1000, 90000, n),
        }
    )
    frame["gross"] = frame["net"] + frame["tax"]
    for column in ["net", "tax", "staff", "turnover", "gross"]:
        frame[column] = frame[column].astype("Int64")
        frame.loc[rng.random(n) < 0.1, column] = pd.NA
    frame.to_csv(tmp_path / "data.csv", index=False)
    keys = ["net", "tax", "staff", "turnover", "gross"]
    edits = ["tax == 0.2 * net", "gross == net + tax"]
    method = {"name": "mdav", "k": 5}
    out = _released(tmp_path, "tax", edits, method, id_column="id", quasi_identifiers=keys)
    data = pd.read_csv(out / "data.csv")
    both = data.dropna(subset=["net", "tax"])
    assert (np.abs(both["tax"] - 0.2 * both["net"]) <= 1e-8).all()
    summed = data.dropna(subset=["net", "tax", "gross"])
    assert (np.abs(summed["gross"] - summed["net"] - summed["tax"]) <= 1e-8).all()
    precision = json.loads((out / "manifest.json").read_text())["method_details"]["precision"]
    off = precision["off_precision"]  # the manifest counts what is on disk
    assert off.get("tax", 0) == int((data["tax"].dropna() % 1 != 0).sum())
    assert off.get("gross", 0) == int((data["gross"].dropna() % 1 != 0).sum())


@pytest.mark.flow
def test_integer_keys_stay_integers_when_the_only_rule_is_conditional(tmp_path, prefect_api):
    # the group rounding skipped groups no rule bound while saying it had rounded every
    # rule column, so the record rounding left them: employees 17.4 was published
    _survey_with_gaps(tmp_path)
    edits = ["if employees == 0 then wages == 0"]
    # the sums' columns left out: undeclared, their relations are refused with gaps
    keys = ["employees", "turnover", "wages", "other_costs", "region"]
    out = _released(
        tmp_path, "conditional-only", edits, {"name": "mdav", "k": 5}, quasi_identifiers=keys
    )
    data = pd.read_csv(out / "data.csv")
    assert all((data[c].dropna() % 1 == 0).all() for c in keys[:-1])
    staff = data.dropna(subset=["employees", "wages"])
    assert (staff.loc[staff["employees"] == 0, "wages"] == 0).all()


def test_breaking_conditions_reads_the_condition_and_the_consequent():
    columns = ["employees", "wages"]
    small = _ineq(columns, "small", {"wages": 1.0}, 50.0)
    values = np.array([[1.0, 60.0], [1.0, 50.0], [2.0, 60.0], [NAN, 60.0], [1.0, 50.0 + 1e-9]])
    bad = breaking_conditions(values, columns, [(lambda v: v["employees"] <= 1, small)])
    # 50 + 1e-9 is within the default tolerance; a missing employees is undetermined
    np.testing.assert_array_equal(bad, [True, False, False, False, False])
    # a consequent reading a column not released as a number is not checked
    binned = _ineq(["employees", "wages", "other"], "b", {"other": 1.0}, 0.0)
    assert not breaking_conditions(values, columns, [(lambda v: v["employees"] <= 1, binned)]).any()


@pytest.mark.flow
@pytest.mark.parametrize("integers", [True, False], ids=["rounding-meets-it", "the-mean-meets-it"])
def test_complete_records_keep_a_condition_their_group_values_meet(tmp_path, prefect_api, integers):
    # no gaps, the spec's MDAV: two groups of three, each a way into the condition:
    # - integers: the means (4/3, 175/3) do not meet employees <= 1; rounded, (1, 58) does
    #   and would break wages <= 50;
    # - decimals: the means (1.0, 120.333...) meet it with no rounding at all.
    # By hand: the group moves onto wages <= 50 alone (a one-column bound), so it is
    # (4/3 -> 1, 50) and (1.0, 50.0); the other group keeps its means bit for bit.
    if integers:
        employees, wages = [1, 1, 2, 10, 10, 11], [45, 50, 80, 500, 510, 520]
        first = (1, 50)
    else:
        employees, wages = (
            [0.5, 1.0, 1.5, 10.5, 11.0, 12.5],
            [10.5, 50.0, 300.5, 500.5, 510.0, 520.25],
        )
        first = (1.0, 50.0)
    frame = pd.DataFrame({"id": range(6), "employees": employees, "wages": wages})
    out = release_frame(tmp_path, frame, ["if employees <= 1 then wages <= 50"])
    data = pd.read_csv(out / "data.csv").sort_values("employees").reset_index(drop=True)
    assert [tuple(r) for r in data.head(3).itertuples(index=False)] == [first] * 3
    second = frame.iloc[3:][["employees", "wages"]].mean()
    if integers:
        second = second.round()
    assert [tuple(r) for r in data.tail(3).itertuples(index=False)] == [tuple(second)] * 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["method_details"]["groups_moved_onto_conditional_rules"] == 1
    assert manifest["edit_rules"]["masked"] == {"R1": 0}


@pytest.mark.flow
def test_a_group_within_its_rules_own_tolerance_is_left_as_it_is(tmp_path, prefect_api):
    # the consequent is judged with the rule's own tolerance, not the default: a group the
    # validation passes (50 250 under wages <= 50 000 with tolerance 300 ... once rounding
    # meets the condition) stays, rather than move to 50 000 and double the loss
    frame = pd.DataFrame(
        {
            "id": range(6),
            "employees": [1, 1, 2, 2, 2, 3],
            "wages": [49800, 49900, 50250, 50100, 50200, 50300],
        }
    )
    edits = [{"rule": "if employees <= 1 then wages <= 50000", "name": "small", "tolerance": 300}]
    out = release_frame(tmp_path, frame, edits)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "groups_moved_onto_conditional_rules" not in manifest["method_details"]
    # MDAV's groups: employees (1, 1, 2) with wages (49 800, 49 900, 50 100), whose rounded
    # means (1, 49 933) meet the rule, and (2, 2, 3) with (50 250, 50 200, 50 300)
    data = pd.read_csv(out / "data.csv")
    published = sorted(tuple(int(v) for v in r) for r in data.itertuples(index=False))
    assert published == [(1, 49933)] * 3 + [(2, 50250)] * 3


@pytest.mark.flow
def test_the_manifest_counts_the_groups_whose_values_changed(tmp_path, prefect_api):
    # a group re-solved without a projection counts too. Group one's means (1, 1033.33,
    # 1198.67) meet gross == 1.16 * net; rounded record by record, gross 1199 breaks it
    # (1.16 x 1033 = 1198.28); redone, gross is solved from net. Group two
    # (5025, 5829) is exact and kept.
    frame = pd.DataFrame(
        {
            "id": range(6),
            "vat": [1] * 6,
            "net": [1000, 1025, 1075, 5000, 5025, 5050],
            "gross": [1160, 1189, 1247, 5800, 5829, 5858],
        }
    )
    out = release_frame(tmp_path, frame, ["if vat == 1 then gross == 1.16 * net"])
    manifest = json.loads((out / "manifest.json").read_text())
    details = manifest["method_details"]
    assert details["groups_moved_onto_conditional_rules"] == 1
    assert details["precision"]["off_precision"] == {"gross": 3}
    data = pd.read_csv(out / "data.csv").sort_values("net")
    assert [tuple(r) for r in data.itertuples(index=False)] == [(1, 1033, 1198.28)] * 3 + [
        (1, 5025, 5829.0)
    ] * 3


def test_with_blocks_groups_are_not_redone_across_them():
    # with `blocks:` a group of one block is not a set of equal whole rows, so redoing rows
    # would split the second block's groups of 3 into 1s and 2s (block k 1); a broken rule
    # blocks publication, and the released values are the method's
    from sdcflow.methods.keys import Key
    from sdcflow.methods.microaggregation import MdavParams
    from sdcflow.methods.mixed import mask_keys

    rng = np.random.default_rng(14)
    rows = []
    for j in range(40):
        cap = 100000 * (j + 1)
        for dw in (-int(rng.integers(10, 200)), -int(rng.integers(10, 200)), 4000):
            rows.append((1 if dw < 0 else 2, int(rng.uniform(1e5, 1e7)), cap + dw, cap))
    columns = ["employees", "turnover", "wages", "cap"]
    frame = pd.DataFrame(rows, columns=columns)
    keys = [Key(c, "numeric", decimals=0, integer=True) for c in columns]
    small = _ineq(columns, "small", {"wages": 1.0, "cap": -1.0}, 0.0)
    blocks = [["employees", "turnover"], ["wages", "cap"]]
    params = MdavParams(k=3, standardize=False)
    plain = mask_keys(frame, keys, params, np.random.default_rng(0), blocks=blocks)
    kept = mask_keys(
        frame,
        keys,
        params,
        np.random.default_rng(0),
        blocks=blocks,
        conditional=[(lambda v: v["employees"] <= 1, small)],
    )
    np.testing.assert_array_equal(kept.points, plain.points)
    assert "groups_moved_onto_conditional_rules" not in kept.details
