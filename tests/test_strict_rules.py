"""Strict edit rules (``<``, ``>``): no record on the boundary meets them, so the repair, the
projections and the rounding aim inside. Figures by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from survey import release_frame

from sdcflow.core.linear.repair import minimal_adjustment, violating_records
from sdcflow.core.linear.rounding import round_keeping_equalities
from sdcflow.expectations.rules import parse_rules
from sdcflow.preflight.plan import linear_constraints


def test_the_rules_carry_which_rows_are_strict():
    rules = parse_rules(["turnover > 0", "0 <= wages < turnover", "costs == wages + other"])
    cons = linear_constraints(rules, ["turnover", "wages", "costs", "other"])
    assert cons.ineq_names == ("R1", "R2", "R2")
    assert cons.strict.tolist() == [True, False, True]
    assert cons.restrict(["turnover", "wages"]).strict.tolist() == [True, False, True]
    assert cons.restrict(["wages"]).strict.tolist() == [False]
    assert cons.with_rows(cons).strict.tolist() == [True, False, True] * 2


def test_a_strict_row_is_tightened_onto_the_grid_its_values_are_published_on():
    rules = parse_rules(["wages < 1", "wages < 0.9 * turnover", "share < turnover / 3"])
    cons = linear_constraints(rules, ["wages", "turnover", "share"])
    # integers: wages <= 0; wages - 0.9 turnover takes multiples of 0.1, so <= -0.1; share
    # - turnover / 3 multiples of 1/3 (3 share < turnover is 3 share <= turnover - 1)
    got = cons.tightened(decimals=[0, 0, 0])
    np.testing.assert_array_equal(got.h, [0.0, -0.1, -1 / 3])
    assert not got.strict.any()
    # cents in wages: wages <= 0.99, and multiples of 0.01 for the second row; no precision
    # for share: the allowance of a non-strict row, 1e-8 at magnitude 0
    np.testing.assert_array_equal(cons.tightened(decimals=[2, 0, None]).h, [0.99, -0.01, -1e-8])
    # a grid finer than the allowance: the allowance (1e-8 + 2e-14 at h = 1)
    fine = cons.tightened(decimals=[12, 12, 12])
    np.testing.assert_allclose(fine.h[0], 1 - 1e-8 - 2e-14, rtol=0, atol=1e-16)
    # a column without precision: the allowance at the columns' magnitude, 1e-8 + 2e-14 (|h|
    # + |g| m), here with m = (1e9, 1e9, 1e9)
    loose = cons.tightened(magnitude=np.full(3, 1e9))
    want = [1 - (1e-8 + 2e-14 * (1 + 1e9)), -(1e-8 + 2e-14 * 1.9e9), -(1e-8 + 2e-14 * 4e9 / 3)]
    np.testing.assert_allclose(loose.h, want, rtol=1e-12)
    # non-strict rows are untouched, and a set without strict rows is itself
    plain = linear_constraints(parse_rules(["wages <= 1"]), ["wages"])
    assert plain.tightened(decimals=[0]) is plain


def test_a_record_on_a_strict_boundary_violates_it_and_is_repaired_inside():
    cons = linear_constraints(parse_rules(["turnover > 0", "profit == turnover - costs"]),
                              ["turnover", "costs", "profit"])  # fmt: skip
    X = np.array([[0.0, 5.0, -5.0], [-4.0, 5.0, -9.0], [1e-300, 0.0, 1e-300], [7.0, 2.0, 5.0]])
    np.testing.assert_array_equal(violating_records(X, cons), [True, True, False, False])
    fixed, moved = minimal_adjustment(X, cons)
    np.testing.assert_array_equal(moved, [True, True, False, False])
    assert (fixed[:, 0] > 0).all() and not violating_records(fixed, cons).any()
    # the least change onto turnover >= m, m = 1e-8 + 2e-14 x 4 (the allowance at the
    # largest turnover of the records moved, both of largest value in [1, 10)): turnover
    # rises by m and, to keep profit == turnover - costs at the least sum of squares, profit
    # rises and costs fall by m / 2
    m = 1e-8 + 2e-14 * 4.0
    np.testing.assert_allclose(fixed[0], [m, 5.0 + m / 2, -5.0 + m / 2], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(fixed[2:], X[2:])


def test_a_strict_margin_is_not_taken_from_a_record_far_larger():
    # One turnover of 1e40 in the file must not make repair lift a turnover of 0 under
    # `turnover > 0` to 1e26 (1e-14 of the file's largest). The margin is the allowance at
    # the moved records' own magnitude, per decade.
    cons = linear_constraints(parse_rules(["turnover > 0", "profit == turnover - costs"]),
                              ["turnover", "costs", "profit"])  # fmt: skip
    X = np.array([[0.0, 5.0, -5.0], [1e40, 0.0, 1e40], [-3e39, 1e39, -4e39]])
    fixed, moved = minimal_adjustment(X, cons)
    np.testing.assert_array_equal(moved, [True, False, True])
    m = 1e-8  # 2e-14 x 0: the first record's turnover
    np.testing.assert_allclose(fixed[0], [m, 5.0 + m / 2, -5.0 + m / 2], rtol=0, atol=1e-15)
    assert 0 < fixed[2, 0] <= 1e-8 + 2e-14 * 3e39 * 1.01  # the large one at its own scale
    assert not violating_records(fixed, cons).any()


def test_rounding_keeps_a_strict_row_its_unrounded_values_meet():
    cons = linear_constraints(parse_rules(["wages < 2"]), ["wages"])
    done = round_keeping_equalities(np.array([[1.6], [1.4], [2.4]]), ["wages"], [0], cons)
    # 1.6 rounds to 2, on the boundary: rounded towards the row instead; 2.4 broke it before
    np.testing.assert_array_equal(done.values[:, 0], [1.0, 1.0, 2.0])


@pytest.mark.flow
@pytest.mark.parametrize("integers", [True, False], ids=["integers", "tenths"])
def test_a_strict_consequent_is_kept_by_the_group_it_binds(tmp_path, prefect_api, integers):
    # Under `if employees <= 1 then wages < 1` the group is moved inside the strict
    # consequent, not onto its closure wages <= 1 (the release would be refused). MDAV's
    # two groups of three; the first's means (4/3, 1) round to (1, 1) (integers), or are
    # (1.0, 1.0) already (tenths): the condition holds and wages sits on the excluded
    # boundary. By hand it moves onto the grid's wages <= 0 (integers) or <= 0.9 (tenths).
    if integers:
        employees, wages, first = [1, 1, 2, 10, 10, 11], [0, 0, 3, 500, 510, 520], (1, 0)
    else:
        employees = [0.5, 1.0, 1.5, 10.5, 11.0, 12.5]
        wages, first = [0.5, 1.0, 1.5, 500.5, 510.0, 520.5], (1.0, 0.9)
    frame = pd.DataFrame({"id": range(6), "employees": employees, "wages": wages})
    wages_key = "wages" if integers else {"name": "wages", "precision": 1}
    edits = ["if employees <= 1 then wages < 1"]
    out = release_frame(tmp_path, frame, edits, keys=["employees", wages_key])
    data = pd.read_csv(out / "data.csv").sort_values("employees").reset_index(drop=True)
    assert [tuple(r) for r in data.head(3).itertuples(index=False)] == [first] * 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["edit_rules"]["masked"] == {"R1": 0}
    assert manifest["method_details"]["groups_moved_onto_conditional_rules"] == 1


def test_a_strict_boundary_is_read_the_same_whatever_the_column_order():
    # 1910.19 > 1898.5 + 11.69 is false in decimals; the SQL's sum says so, and numpy's sum
    # in the matrix's column order leaves 2.3e-13 of the wrong sign: repair must read the
    # boundary as the validation does, whatever the column order
    rule = parse_rules(["turnover > wages + other_costs"])
    record = {"turnover": 1910.19, "wages": 1898.5, "other_costs": 11.69}
    for order in (["turnover", "wages", "other_costs"], ["wages", "other_costs", "turnover"]):
        X = np.array([[record[c] for c in order], [record[c] + (c == "turnover") for c in order]])
        np.testing.assert_array_equal(violating_records(X, linear_constraints(rule, order)),
                                      [True, False])  # fmt: skip


def test_the_grid_reads_a_bound_as_written_not_as_the_double_above_it():
    # 0.1 is stored as 0.1000000000000000055: the last cent below it is 0.09, not 0.1 - 1e-8
    cons = linear_constraints(parse_rules(["x < 0.1", "x > 0.7", "x < 1.1"]), ["x"])
    np.testing.assert_allclose(cons.tightened(decimals=[2]).h, [0.09, -0.71, 1.09], rtol=1e-15)


@pytest.mark.flow
@pytest.mark.parametrize(
    ("case", "order"),
    [
        ("cents", ["turnover", "wages", "other_costs"]),
        ("cents", ["wages", "other_costs", "turnover"]),
        ("1e9", None),
    ],
)
def test_strict_rules_publish_in_the_reviews_cases(tmp_path, prefect_api, case, order):
    # cents: groups whose means round onto turnover == wages + other_costs exactly, under
    # `turnover > wages + other_costs` (refused in one key order, the numpy sum's sign);
    # 1e9: a group moved onto `wages < 0.5 * turnover` by 1e-8 only, less than a double's
    # step there, so it stayed on the boundary (refused)
    if case == "cents":
        rows = [(1910.194, 1898.5, 11.69)] * 3 + [(4268.474, 4162.59, 105.88)] * 3
        rows += [(100.0 + j, 10.0, 20.0) for j in range(3)]
        frame = pd.DataFrame(rows, columns=["turnover", "wages", "other_costs"])
        keys = [{"name": c, "precision": 2} for c in order]
        edits = ["turnover > wages + other_costs"]
    else:
        rng = np.random.default_rng(1)
        frame = pd.DataFrame({
            "employees": [0.5, 1.0, 1.5, 10.5, 11.0, 12.5],
            "turnover": (np.array([1, 1, 1, 3, 3, 3]) + rng.uniform(0, 0.1, 6)) * 1e9,
            "wages": np.array([0.1, 0.1, 2.0, 1, 1, 1]) * 1e9 + rng.uniform(0, 1, 6),
        })  # fmt: skip
        keys, edits = (
            ["employees", "turnover", "wages"],
            ["if employees <= 1 then wages < 0.5 * turnover"],
        )
    frame.insert(0, "id", range(len(frame)))
    out = release_frame(tmp_path, frame, edits, keys=keys)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["edit_rules"]["masked"] == {"R1": 0}


def test_directed_rounding_lands_on_the_decimal_grid():
    # rounding towards a row lands on the decimal grid: multiplying the cents by 0.01 would
    # publish 23172108 cents as 231721.08000000002 (off the grid, and not counted as such)
    # (231721.0749 rounds to .07, below the bound .071: rounded up instead, to .08)
    cons = linear_constraints(parse_rules(["x > 231721.071"]), ["x"])
    done = round_keeping_equalities(np.array([[231721.0749]]), ["x"], [2], cons)
    assert float(done.values[0, 0]) == 231721.08


@pytest.mark.parametrize(
    ("edits", "conflict"),
    [
        (["turnover > 5", "turnover <= 5"], "R1, R2"),  # room for no value at all
        (["0 < employees < 1"], "R1"),  # integers: no value between 0 and 1
    ],
)
def test_a_strict_rule_set_with_no_room_is_refused_before_the_run(
    tmp_path, capsys, edits, conflict
):
    """Both are refused by the check before a run, which reads `<` as strict, rather than
    after masking with exit 1 and no line saying why."""
    from sdcflow.cli.main import main

    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {"id": range(30), "employees": rng.integers(1, 9, 30), "turnover": rng.normal(5, 1, 30)}
    )
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "strict", "source": "data.csv", "id_column": "id",
        "quasi_identifiers": ["employees", "turnover"], "edits": edits,
        "method": {"name": "mdav", "k": 3}, "checks": {"k_anonymity": 3},
        "output": "published/", "warehouse": "warehouse.duckdb",
    }  # fmt: skip
    (tmp_path / "release.yaml").write_text(json.dumps(spec))
    for command in ("check", "release"):
        assert main([command, str(tmp_path / "release.yaml")]) == 2
        err = capsys.readouterr().err
        assert (
            "[rules-infeasible]" in err and f"edit rule{'s' * (',' in conflict)} {conflict}" in err
        )
        assert "strict comparison" in err
    assert not (tmp_path / "published").exists()


@pytest.mark.flow
def test_a_narrow_strict_window_that_every_record_meets_publishes(tmp_path, prefect_api):
    # assay concentrations in (1e-6, 1.01e-6), every record inside, publish: the check
    # does not ask for the masking's allowance (1e-8) of room.
    rng = np.random.default_rng(8)
    frame = pd.DataFrame(
        {"id": range(60), "conc": rng.uniform(1.001e-6, 1.009e-6, 60), "dose": rng.normal(5, 1, 60)}
    )
    out = release_frame(tmp_path, frame, ["conc > 1e-6", "conc < 1.01e-6"])
    released = pd.read_csv(out / "data.csv")
    assert ((released["conc"] > 1e-6) & (released["conc"] < 1.01e-6)).all()
