"""Integer publication with equality rules: rounded values still add up."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.rounding import round_keeping_equalities
from sdcflow.methods import MdavParams
from sdcflow.methods.keys import Key
from sdcflow.methods.mixed import mask_keys

COLS = ["turnover", "wages", "other_costs", "total_costs", "profit"]
RULES = LinearConstraints.from_rows(
    [
        ("costs", [({"total_costs": 1, "wages": -1, "other_costs": -1}, 0.0)], []),
        ("profit", [({"profit": 1, "turnover": -1, "total_costs": 1}, 0.0)], []),
    ],
    COLS,
)


def test_rounding_by_hand_keeps_the_sum():
    # 0.4 + 0.4 = 0.8: rounded separately 0 + 0 != 1. A non-zero value never rounds to zero
    # (so `if wages == 0 then ...` reads the same): wages 1, other 1, profit 9; the total is
    # solved from its rounded parts, 2, and turnover from profit and total, 11 (the larger
    # columns are the derived ones).
    X = np.array([[10.0, 0.4, 0.4, 0.8, 9.2]])
    done = round_keeping_equalities(X, COLS, [0] * 5, RULES)
    assert set(done.derived) == {"turnover", "total_costs"}
    assert done.values.tolist() == [[11.0, 1.0, 1.0, 2.0, 9.0]]
    assert done.off_precision == {}


def test_a_coarse_precision_is_kept_when_finer_columns_can_carry_the_rule():
    # turnover asks for hundreds (precision -2), every other key whole: profit (whole)
    # carries the rule, so turnover is not solved from the rest and stays on its hundreds
    # (solving the largest column would leave nearly every turnover off). By hand: turnover rounds
    # to 1200, wages 301 and other 100 to themselves, total = 401, profit = 1200 - 401 = 799.
    X = np.array([[1234.0, 300.6, 100.2, 400.8, 833.2]])
    done = round_keeping_equalities(X, COLS, [-2, 0, 0, 0, 0], RULES)
    assert "turnover" not in done.derived and done.off_precision == {}
    assert done.values.tolist() == [[1200.0, 301.0, 100.0, 401.0, 799.0]]


def test_zero_stays_zero_and_non_zero_stays_non_zero():
    X = np.array([[0.0, 0.3, -0.2, 0.6, 1240.0]])
    cols = ["a", "b", "c", "d", "e"]
    done = round_keeping_equalities(X, cols, [0, 0, 0, 0, -2])
    assert done.values.tolist() == [[0.0, 1.0, -1.0, 1.0, 1200.0]]


def test_a_column_without_precision_absorbs_the_rounding():
    X = np.array([[10.25, 3.3, 2.6, 5.9, 4.35]])
    done = round_keeping_equalities(X, COLS, [0, 0, 0, None, None], RULES)
    assert set(done.derived) == {"total_costs", "profit"}  # the two without a precision
    v = done.values[0]
    assert v[:3].tolist() == [10.0, 3.0, 3.0] and v[3] == 6.0 and v[4] == pytest.approx(4.0)


def test_missing_values_are_left_alone():
    X = np.array([[10.0, np.nan, 0.4, np.nan, 9.2]])
    done = round_keeping_equalities(X, COLS, [0] * 5, RULES)
    assert np.isnan(done.values[0, 1]) and done.values[0, 0] == 10.0


def test_integer_keys_are_published_as_integers_and_satisfy_the_rules():
    rng = np.random.default_rng(1)
    n = 300
    wages = rng.integers(10, 900, n)
    other = rng.integers(0, 400, n)
    turnover = wages + other + rng.integers(-50, 300, n)
    frame = pd.DataFrame(
        {
            "turnover": turnover,
            "wages": wages,
            "other_costs": other,
            "total_costs": wages + other,
            "profit": turnover - wages - other,
        }
    )
    keys = [Key(c, "numeric", decimals=0, integer=True) for c in COLS]
    result = mask_keys(frame, keys, MdavParams(k=5), rng, RULES)
    released = result.masked
    assert all(str(released[c].dtype) == "Int64" for c in COLS)
    v = released.astype("int64")
    assert (v.total_costs == v.wages + v.other_costs).all()
    assert (v.profit == v.turnover - v.total_costs).all()
    # the points the gates measure are the published integers
    assert np.array_equal(result.points, v[COLS].to_numpy(dtype=float))
    # MDAV's group means moved by at most half a unit per rounded column (one per rule
    # is derived: at most the sum of the others' rounding)
    assert result.details["precision"]["off_precision"] == {}


def test_unsigned_integer_keys_beyond_int64_are_published_as_unsigned_integers():
    """A Parquet UBIGINT key with values past 2**63 is published as unsigned integers: the
    group means are not cast to Int64 ('cannot safely cast non-equivalent float64 to
    int64', exit 3)."""
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame(
        {
            "big": rng.integers(2**62, 2**63, n, dtype=np.uint64) * np.uint64(2),
            "small": rng.integers(0, 100, n),
            "s": rng.choice(["x", "y"], n),
        }
    )
    keys = [
        Key("big", "numeric", decimals=0, integer=True),
        Key("small", "numeric", decimals=0, integer=True),
        Key("s", "nominal"),
    ]
    released = mask_keys(
        frame, keys, MdavParams.model_validate({"name": "mdav", "k": 5}), rng
    ).masked
    assert str(released["big"].dtype) == "UInt64" and str(released["small"].dtype) == "Int64"
    assert (
        released["big"].min() >= frame["big"].min() and released["big"].max() <= frame["big"].max()
    )
    assert released.groupby(list(released.columns)).size().min() >= 5


# A missing value of a column no equality involves (age beside net + tax == gross) left the
# equality unsolved on that record alone: gross was rounded on its own (13, not 10 + 2), the
# record broke the rule and no longer matched its group (k = 1 on a mixed release).
NET_COLS = ["age", "net", "tax", "gross"]
NET_RULE = LinearConstraints.from_rows(
    [("R1", [({"gross": 1, "net": -1, "tax": -1}, 0.0)], [])], NET_COLS
)


def test_a_missing_value_outside_the_equality_does_not_stop_the_solve():
    X = np.array([[40.0, 10.4, 2.4, 12.8], [np.nan, 10.4, 2.4, 12.8]])
    done = round_keeping_equalities(X, NET_COLS, [0] * 4, NET_RULE)
    assert done.values[:, 1:].tolist() == [[10.0, 2.0, 12.0], [10.0, 2.0, 12.0]]


def test_a_record_missing_a_term_takes_the_solved_value_of_its_group():
    # Group means: the third record has no net; before rounding it agrees with the others
    # on tax and gross, so it is released with their gross and still matches them.
    X = np.array([[40.0, 10.4, 2.4, 12.8], [41.0, 10.4, 2.4, 12.8], [42.0, np.nan, 2.4, 12.8]])
    done = round_keeping_equalities(X, NET_COLS, [0] * 4, NET_RULE)
    assert done.values[:, 3].tolist() == [12.0, 12.0, 12.0]
    assert np.isnan(done.values[2, 1])


def test_missing_values_in_a_mixed_release_keep_k_and_the_rule():
    from sdcflow.core.measures.anonymity import k_anonymity

    rng = np.random.default_rng(3)
    n = 200
    net = rng.integers(500, 6000, n)
    tax = np.round(net * 0.2).astype(int)
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "age": pd.array(rng.integers(16, 90, n), dtype="Int64"),
            "net": pd.array(net, dtype="Int64"),
            "tax": tax,
            "gross": net + tax,
        }
    )
    frame.loc[rng.choice(n, 15, replace=False), "age"] = pd.NA
    frame.loc[rng.choice(n, 15, replace=False), "net"] = pd.NA
    keys = [Key("sex", "nominal")] + [Key(c, "numeric", decimals=0, integer=True) for c in NET_COLS]
    result = mask_keys(frame, keys, MdavParams(k=5), rng, NET_RULE)
    released = result.masked
    assert k_anonymity(released) >= 5
    whole = released.dropna(subset=["net", "tax", "gross"])
    assert (whole.net + whole.tax == whole.gross).all()


def test_a_value_left_off_precision_is_published_as_solved():
    # tax == 0.2 * net over integer keys: the solved tax is not whole. The rounding left it
    # off precision (and said so) but the integer cast rounded it afterwards, so the file
    # broke the rule and differed from the points IL and the gates were measured on.
    cols = ["net", "tax"]
    rule = LinearConstraints.from_rows([("R1", [({"tax": 1, "net": -0.2}, 0.0)], [])], cols)
    rng = np.random.default_rng(4)
    net = rng.integers(500, 6000, 60).astype(float)
    frame = pd.DataFrame({"net": net, "tax": 0.2 * net})
    keys = [Key(c, "numeric", decimals=0, integer=True) for c in cols]
    result = mask_keys(frame, keys, MdavParams(k=5), rng, rule)
    published = result.masked[cols].to_numpy(dtype=np.float64)
    assert result.details["precision"]["off_precision"]  # some tax is not whole
    assert np.array_equal(published, result.points)
    assert np.abs(published[:, 1] - 0.2 * published[:, 0]).max() < 1e-9


def test_a_borrowed_value_is_snapped_like_its_groups():
    # c == 0.1 a + 0.2 b solves c = 3.0000000000000004 on (2, 14): the complete record's c
    # was snapped to 3, the record missing b borrowed the unsnapped 3.0000000000000004, so
    # the two no longer matched (k) and the integer column was no longer whole.
    cols = ["a", "b", "c"]
    rule = LinearConstraints.from_rows([("R1", [({"c": 1, "a": -0.1, "b": -0.2}, 0.0)], [])], cols)
    X = np.array([[2.0, 14.0, 3.0], [2.0, np.nan, 3.0]])
    done = round_keeping_equalities(X, cols, [0, 0, 0], rule)
    assert done.derived == ["c"] and done.off_precision == {}
    assert done.values[0, 2] == done.values[1, 2] == 3.0


def test_a_record_on_an_inequality_is_rounded_towards_it():
    # Census under constrained_fuzzy: a centre on `FICA <= 0.1 * WSALVAL + 100` rounded to
    # nearest (223.66 -> 224, 1236.6 -> 1237) broke the rule (224 > 223.7) and the release
    # was refused. Rounded towards the row (FICA down, WSALVAL up) it holds; records with
    # equal values stay equal, and the equality's total is still solved from its parts.
    cols = ["fica", "wsal", "total", "earn", "other"]
    rules = LinearConstraints.from_rows(
        [
            ("fica", [], [({"fica": 1, "wsal": -0.1}, 100.0)]),
            ("total", [({"total": 1, "earn": -1, "other": -1}, 0.0)], []),
            ("other", [], [({"other": -1}, 0.0)]),
        ],
        cols,
    )
    X = np.array([[223.66, 1236.6, 10.6, 10.3, 0.3]] * 2 + [[200.2, 1000.4, 5.0, 5.0, 0.0]])
    done = round_keeping_equalities(X, cols, [0] * 5, rules)
    V = done.values
    assert (V[:, 0] <= 0.1 * V[:, 1] + 100).all()
    assert (V[:, 2] == V[:, 3] + V[:, 4]).all() and (V[:, 4] >= 0).all()
    assert V[0].tolist() == V[1].tolist() == [223.0, 1237.0, 11.0, 10.0, 1.0]
    assert V[2].tolist() == [200.0, 1000.0, 5.0, 5.0, 0.0]  # nothing broken: rounded as before


def test_an_inequality_through_a_solved_total_is_rounded_towards():
    # `total >= 20.5` with total = a + b solved from its rounded parts: 10.3 + 10.2 = 20.5
    # rounds to 10 + 10 = 20 < 20.5; the parts are rounded up instead (the row reads
    # -a - b <= -20.5 once the total is substituted), as few as it takes: a alone (it adds
    # the least rounding error, 0.4 of a unit against b's 0.6) gives 21. Pulling every part
    # gave 11 + 11 = 22, a total moved by 1.5.
    cols = ["a", "b", "total"]
    rules = LinearConstraints.from_rows(
        [
            ("sum", [({"total": 1, "a": -1, "b": -1}, 0.0)], []),
            ("floor", [], [({"total": -1}, -20.5)]),
        ],
        cols,
    )
    done = round_keeping_equalities(np.array([[10.3, 10.2, 20.5]]), cols, [0] * 3, rules)
    assert done.derived == ["total"]
    assert done.values.tolist() == [[11.0, 10.0, 21.0]]


def test_a_record_with_a_missing_value_follows_its_group_towards_an_inequality():
    # Two records equal on every value the second has (k counts a missing value as matching
    # any): the complete one breaks `a + e <= 0.5 * d` once rounded (6 + 0 > 5.5) and is
    # rounded towards it; the other cannot be checked on the rule (e missing) and was left
    # rounded to nearest, so the two no longer matched. It now takes its group's values.
    # Rounding a down alone is enough (5 + 0 <= 5.5), so d stays at its nearest, 11.
    cols = ["a", "d", "e"]
    rules = LinearConstraints.from_rows([("r", [], [({"a": 1, "e": 1, "d": -0.5}, 0.0)])], cols)
    X = np.array([[5.6, 11.2, 0.0], [5.6, 11.2, np.nan]])
    V = round_keeping_equalities(X, cols, [0, 0, 0], rules).values
    assert V[0].tolist() == [5.0, 11.0, 0.0]
    assert V[1, :2].tolist() == [5.0, 11.0] and np.isnan(V[1, 2])


def test_many_records_on_a_boundary_are_rounded_towards_it_at_once():
    # 200k records on `f <= 0.1 * w + 100`: a loop over the broken records took seconds.
    rng = np.random.default_rng(0)
    w = rng.uniform(1000, 5000, 200_000)
    X = np.column_stack([0.1 * w + 100, w])
    rules = LinearConstraints.from_rows([("f", [], [({"f": 1, "w": -0.1}, 100.0)])], ["f", "w"])
    V = round_keeping_equalities(X, ["f", "w"], [0, 0], rules).values
    assert (V[:, 0] <= 0.1 * V[:, 1] + 100 + 1e-9).all()
    assert (np.abs(V - X) < 1).all()


def test_rounding_towards_an_inequality_keeps_a_solved_total_non_zero():
    # total = a + b is solved from the parts; rounded towards `a <= 1.6` (a down to 1) the
    # total of 1.6 + -0.7 = 0.9 became 1 + -1 = 0: zero where it was not, so a rule such as
    # `if total == 0 then ...` read the published record otherwise. Rounded to nearest
    # (2 + -1 = 1) it keeps its sign; the rule is left to the validation of what is published.
    cols = ["a", "b", "total"]
    rules = LinearConstraints.from_rows(
        [("s", [({"total": 1, "a": -1, "b": -1}, 0.0)], []), ("cap", [], [({"a": 1}, 1.6)])],
        cols,
    )
    done = round_keeping_equalities(np.array([[1.6, -0.7, 0.9], [0, 30, 30]]), cols, [0] * 3, rules)
    assert done.derived == ["total"]
    assert done.values[0, 2] != 0
    assert (done.values[:, 2] == done.values[:, 0] + done.values[:, 1]).all()


def test_rounding_towards_an_inequality_keeps_a_solved_column_on_its_precision():
    # tax = 0.2 * net (tax solved); net 100.4 on `net >= 100.4` rounds to 100 (tax 20, an
    # integer). Rounded up to 101 it met the rule but made tax 20.2 in an integer column
    # (off_precision). The directed rounding is not taken where it moves a solved column off
    # its precision; the broken rule is left to the validation of what is published.
    cols = ["net", "tax"]
    rules = LinearConstraints.from_rows(
        [("t", [({"tax": 1, "net": -0.2}, 0.0)], []), ("floor", [], [({"net": -1}, -100.4)])],
        cols,
    )
    done = round_keeping_equalities(np.array([[100.4, 20.08]]), cols, [0, 0], rules)
    assert done.derived == ["tax"] and done.off_precision == {}
    assert done.values.tolist() == [[100.0, 20.0]]


def test_rounding_towards_an_inequality_pulls_only_the_columns_it_needs():
    # Three parts of a solved total, `total >= 30.6`: 10.2 + 10.2 + 10.2 rounds to 30 < 30.6.
    # One part up is enough (31); pulling all three gave 33. With `total >= 31.5` two are
    # needed (32), and records with equal values are still rounded alike.
    cols = ["a", "b", "c", "total"]
    for floor, want in ((30.6, [11.0, 10.0, 10.0, 31.0]), (31.5, [11.0, 11.0, 10.0, 32.0])):
        rules = LinearConstraints.from_rows(
            [
                ("sum", [({"total": 1, "a": -1, "b": -1, "c": -1}, 0.0)], []),
                ("floor", [], [({"total": -1}, -floor)]),
            ],
            cols,
        )
        X = np.array([[10.2, 10.2, 10.2, floor]] * 2 + [[10.0, 12.0, 10.0, 32.0]])
        V = round_keeping_equalities(X, cols, [0] * 4, rules).values
        assert V[0].tolist() == V[1].tolist() == want
        assert V[2].tolist() == [10.0, 12.0, 10.0, 32.0]
        assert (V[:, 3] == V[:, :3].sum(axis=1)).all() and (V[:, 3] >= floor).all()


def test_a_solved_value_is_snapped_within_the_rounding_of_its_terms_only():
    # ``share == net / 3`` at 1e9 solves share as 333333335.333; a snap of 1e-9 of the
    # value (0.33) would move it onto 333333335, breaking the rule by a third. Only what a
    # solve can leave (1e-15 of the record's terms) is snapped: the third stays, counted
    # off precision.
    rules = LinearConstraints.from_rows(
        [("third", [({"share": 1.0, "net": -1.0 / 3.0}, 0.0)], [])], ["net", "share"]
    )
    X = np.array([[1000000006.0, 333333335.4], [999.0, 333.1]])
    done = round_keeping_equalities(X, ["net", "share"], [0, 0], rules)
    assert done.values[0, 1] == pytest.approx(1000000006.0 / 3.0, abs=1e-6)
    assert done.values[1, 1] == 333.0  # 999 / 3 up to a solve's rounding: snapped exactly
    assert done.off_precision == {"share": 1}
    # cancellation: profit = turnover - costs at 1e9 with cents carries 1e-7 of the terms'
    # rounding, not of the profit; it is snapped onto the cents
    rules = LinearConstraints.from_rows(
        [("profit", [({"profit": 1.0, "turnover": -1.0, "costs": 1.0}, 0.0)], [])],
        ["turnover", "costs", "profit"],
    )
    X = np.array([[1234567890.12, 1234567880.11, 10.01]])
    done = round_keeping_equalities(X, ["turnover", "costs", "profit"], [2, 2, 2], rules)
    np.testing.assert_array_equal(done.values, X)  # the solved column snapped onto its cents
    assert done.derived and done.off_precision == {}
