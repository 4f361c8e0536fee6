"""Infeasible rule sets are caught, and the error names a minimal conflicting subset."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sdcflow.core.lp import open_room
from sdcflow.errors import InfeasibleRulesError, InputError
from sdcflow.expectations.feasibility import check_feasible
from sdcflow.expectations.rules import parse_rules


def conflict(texts: list, columns: list[str] | None = None) -> tuple[str, ...]:
    with pytest.raises(InfeasibleRulesError) as info:
        check_feasible(parse_rules(texts), columns)
    assert isinstance(info.value, InputError)
    return info.value.rules


def test_bounds_conflict_names_only_the_two_rules() -> None:
    rules = ["y <= 10", "x >= 5", "z == x + y", "x <= 3"]
    assert conflict(rules) == ("R2", "R4")


def test_message_quotes_rules_and_fix() -> None:
    with pytest.raises(InfeasibleRulesError) as info:
        check_feasible(parse_rules([{"rule": "x >= 5", "name": "lo"}, {"rule": "x <= 3"}]))
    message = str(info.value)
    assert "lo, R2 contradict each other" in message
    assert "lo: x >= 5; R2: x <= 3" in message and "fix or drop one" in message


def test_inconsistent_equalities() -> None:
    assert conflict(["t == a + b", "a >= 0", "t == a + b + 1"]) == ("R1", "R3")


def test_conflict_through_a_chain_of_rules() -> None:
    rules = ["t == a + b", "a >= 0", "b >= 0", "0 <= c <= 9", "t <= -1", "c >= 1"]
    assert conflict(rules) == ("R1", "R2", "R3", "R5")


def test_range_against_bound() -> None:
    assert conflict(["0 <= employees <= 100", "employees >= 101"]) == ("R1", "R2")


def test_numeric_set_relaxation() -> None:
    assert conflict(["size in [1, 2, 3]", "size >= 5"]) == ("R1", "R2")


def test_conditional_that_forbids_its_condition() -> None:
    rules = ["if employees == 0 then wages == 0", "wages >= 1", "employees >= 0", "x >= 0"]
    assert conflict(rules) == ("R1", "R2")


def test_feasible_sets_pass_and_report() -> None:
    rules = parse_rules(
        [
            "total_costs == wages + other_costs",
            "profit == turnover - total_costs",
            "wages >= 0.2 * total_costs",
            "0 <= employees <= 100000",
            "if employees == 0 then wages == 0",
            "if employees <= -1 then wages >= 5",
            "region in ['N', 'S']",
            "not_null(region)",
        ]
    )
    report = check_feasible(rules)
    assert report.linear_rules == ["R1", "R2", "R3", "R4"]
    assert report.conditionals_checked == ["R5", "R6"]
    assert report.vacuous == ["R6"]
    assert report.linear_programs >= 1


@pytest.mark.parametrize(
    ("edits", "decimals", "conflict"),
    [
        (["x > 5", "x <= 5"], None, ["R1", "R2"]),  # only x = 5, which `>` excludes
        (["y >= 0", "x > 5", "x <= 5"], None, ["R2", "R3"]),
        (["0 < x < 1"], {"x": 0}, ["R1"]),  # no whole number between 0 and 1
        (["x + y < 1", "x >= 0.5", "y >= 0.5"], None, ["R1", "R2", "R3"]),
        (["x + y < 1.01", "x >= 0.5", "y >= 0.51"], {"x": 1, "y": 2}, ["R1", "R2", "R3"]),
        (["x > 1e12", "x <= 1e12"], None, ["R1", "R2"]),  # at 1e12 too
        (["x > 1e12", "x <= 1e12 + 0.005"], {"x": 2}, ["R1", "R2"]),  # next cent is past it
        (["y > 0", "y <= 0", "x > 0", "x <= 1e12"], None, ["R1", "R2"]),
    ],
)
def test_a_strict_set_empty_but_for_its_bound_is_refused(edits, decimals, conflict) -> None:
    rules = parse_rules(edits)
    with pytest.raises(InfeasibleRulesError) as err:
        check_feasible(rules, ["x", "y"], decimals)
    assert list(err.value.rules) == conflict
    assert "strict comparison" in str(err.value) and "`<=`" in str(err.value)
    closed = [re.sub(r"([<>])(?!=)", r"\1=", e) for e in edits]  # the same, not strict
    check_feasible(parse_rules(closed), ["x", "y"], decimals)


@pytest.mark.parametrize(
    ("edits", "decimals"),
    [
        (["x > 5", "x <= 5.000001"], None),
        (["0 < x < 2"], {"x": 0}),  # x = 1
        (["0 < x < 1"], None),  # no grid: any value in between
        (["0 < x < 1"], {"x": 1}),
        (["x + y < 1.01", "x >= 0.5", "y >= 0.5"], {"x": 1, "y": 2}),  # 0.5 + 0.5
        (["x > 1e12", "x <= 1e12 + 0.01"], {"x": 2, "y": None}),  # reads x only
        (["x > 1e12", "x <= 1e12 + 1"], None),
        (["x + y > 3e13", "x + y <= 3e13 + 1", "y == 1e8 * x"], None),
        # no false refusals: windows narrower than the masking's allowance (1e-8), and
        # grids finer than it at large bounds
        (["x > 1e-6", "x < 1.01e-6"], None),
        (["0 < x < 1.5e-8"], None),
        (["0 < x < 1e-9", "y <= 1e12"], None),
        (["x < 1e13", "x > 9999999999999.98"], {"x": 2}),
        (["x < 1e15", "x > 999999999999998"], {"x": 0}),
        # each row judged at its own magnitude, not by one common inset
        (["x > 0", "x <= 1e12", "y > 0", "y < 0.001"], None),
        (["x == y - 1e12", "y > 1e12", "0 < x < 0.001"], None),
        (["x > 1e15", "x < 1e15 + 1"], None),  # 7 doubles in between
    ],
)
def test_a_strict_set_with_room_is_accepted(edits, decimals) -> None:
    check_feasible(parse_rules(edits), ["x", "y"], decimals)


def test_a_conditional_whose_strict_consequent_cannot_hold_is_refused() -> None:
    rules = parse_rules(["if x > 5 then y < 1", "y >= 1"])
    with pytest.raises(InfeasibleRulesError, match="can never hold when its condition"):
        check_feasible(rules)
    # a strict condition that cannot occur is vacuous, not a conflict
    assert check_feasible(parse_rules(["if x > 5 then y < 1", "x <= 5"])).vacuous == ["R1"]


def test_rules_outside_columns_are_left_out() -> None:
    rules = parse_rules(["x >= 5", "x <= 3", "y >= 0"])
    assert check_feasible(rules, ["y"]).linear_rules == ["R3"]


@pytest.mark.parametrize(
    ("upper", "room"),
    [(1.0, True), (1e-9, True), (1e-300, True), (0.0, False), (-1.0, None)],
)
def test_an_open_window_by_hand(upper, room) -> None:
    # 0 < x < upper: room while upper > 0, none at 0, and an empty closed set below
    G, h = np.array([[-1.0], [1.0]]), np.array([0.0, upper])
    assert open_room(np.zeros((0, 1)), np.zeros(0), G, h, np.array([True, True])) is room


@pytest.mark.parametrize("at", [5.0, 1e-6, 1e12, 3e15])
def test_an_open_window_is_decided_at_any_magnitude(at) -> None:
    # x > at with x <= at: the closed set is {at}, which `>` excludes; read raw, HiGHS's
    # 1e-7 tolerance on rows of 1e12 admitted it. A window of 1e-9 of at is room.
    G, open_rows = np.array([[-1.0], [1.0]]), np.array([True, False])
    none = open_room(np.zeros((0, 1)), np.zeros(0), G, np.array([-at, at]), open_rows)
    some = open_room(np.zeros((0, 1)), np.zeros(0), G, np.array([-at, at * (1 + 1e-9)]), open_rows)
    assert (none, some) == (False, True)


def test_a_thin_set_of_mixed_magnitudes_is_not_refused_by_presolve() -> None:
    # 9 rules met exactly by a known point (checked in fractions), which HiGHS's presolve
    # calls infeasible ("contradict each other", 8 rules named): presolve stays off.
    rules = [
        "c5 == -256.0 * c3",
        "0.0006262511939039381 * c5 + -1.4497322423059522e-09 * c2"
        " + -0.0008376632991216277 * c6 <= 67.02524186571137",
        "7.823288946135962e-11 * c7 <= 1.3023367503213932",
        "-8343.637186432994 * c0 <= 0.06828764552979116",
        "0.012378735312070092 * c6 + -2.258418549105272e-11 * c7 <= -6.522639411581424",
        "c3 == 0.001953125 * c6",
        "-52.493129020796864 * c3 + 0.6971569680493674 * c1"
        " + 3.194885333597638e-08 * c7 <= 582.4724076376393",
        "0.0003751210092518751 * c5 <= 0.0931334903203018",
        "-6.797263714853279e-05 * c6 + -0.006437917395614288 * c5"
        " + -1.2542120226397537 * c1 <= -1.0484444614093444",
    ]
    check_feasible(parse_rules(rules), [f"c{j}" for j in range(8)])
