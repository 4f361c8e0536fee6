"""The whole file's units of the rules' columns: the same figures from the records in memory
and from the warehouse a chunk at a time, so a piece moves a group onto the rules as the
whole file does."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.file_units import exact_moments, file_units, resolution_lost
from sdcflow.core.linear.group_values import group_values_on_rules
from sdcflow.core.validation import lost_resolution
from sdcflow.errors import ParameterError
from sdcflow.warehouse.units import has_missing, rule_units
from sdcflow.warehouse.warehouse import Warehouse

RUN = "0123456789abcdef0123456789abcdef"


def test_the_moments_by_hand():
    # 1, 2, 3, 4 (a gap left out): mean 10 / 4, variance (2.25 + 0.25 + 0.25 + 2.25) / 4
    count, mean, sd = exact_moments(lambda: [np.array([1.0, np.nan, 2.0]), np.array([3.0, 4.0])])
    assert (count, mean, sd) == (4, 2.5, math.sqrt(1.25))
    assert exact_moments(lambda: [np.array([np.nan, np.nan])]) == (0, 0.0, 0.0)


def test_the_moments_do_not_depend_on_how_the_values_are_cut_or_ordered():
    rng = np.random.default_rng(0)
    x = rng.lognormal(8, 3, 100_003)
    x[rng.random(x.size) < 0.05] = np.nan
    whole = exact_moments(lambda: [x])
    shuffled = x[rng.permutation(x.size)]
    for size in (1, 777, 65_536):
        cut = exact_moments(
            lambda size=size: (shuffled[i : i + size] for i in range(0, x.size, size))
        )
        assert cut == whole  # to the last bit
    # numpy's pairwise sums are not: the figures of two orders differ in their last bits
    assert whole[1] == pytest.approx(np.nanmean(x), rel=1e-13)
    assert whole[2] == pytest.approx(np.nanstd(x), rel=1e-13)


def test_a_sum_past_the_float_range_is_infinite():
    # 2e308 has no float: the mean is infinite, and so are the squares about it
    assert exact_moments(lambda: [np.array([1e308, 1e308, 5.0])]) == (3, math.inf, math.inf)
    assert exact_moments(lambda: [np.array([-1e308, -1e308])]) == (2, -math.inf, math.inf)


def test_a_column_of_gaps_and_a_file_of_one_record():
    units = file_units(np.array([[1.0, np.nan], [3.0, np.nan]]), ["a", "b"])
    assert units.shift.tolist() == [2.0, 0.0] and units.scale.tolist() == [1.0, 0.0]
    one = file_units(np.array([[5.0, 7.0]]), ["a", "b"])
    assert one.shift.tolist() == [5.0, 7.0] and one.scale.tolist() == [1.0, 1.0]
    assert one.take(["b"]).shift.tolist() == [7.0]


def _columns(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "ordinary": rng.normal(50, 10, n),
            "counts": rng.integers(0, 40, n),  # an integer column, as DuckDB stores it
            "giant": rng.lognormal(3, 1, n),  # one turnover of 1e40 among thousands
            "flat": np.full(n, 3.0),
            "nearly_flat": np.full(n, 7.0),
            "gaps": np.full(n, np.nan),
        }
    )
    frame.loc[7, "giant"] = 1e40
    frame.loc[: n // 50, "nearly_flat"] = 7.5
    frame.loc[rng.random(n) < 0.1, "ordinary"] = np.nan
    return frame


@pytest.mark.parametrize("seed", [0, 1])
def test_the_warehouse_gives_the_units_of_the_records_in_memory(tmp_path, seed):
    frame = _columns(5_001, seed)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    columns = list(frame.columns)
    X = frame.to_numpy(np.float64)
    memory = file_units(X, columns)
    stored = rule_units(wh, "raw", RUN, columns, rows=1_000)  # in chunks of 1,000 values
    assert stored.columns == tuple(columns)
    assert stored.shift.tolist() == memory.shift.tolist()  # bit for bit
    assert stored.scale.tolist() == memory.scale.tolist()
    assert stored.lost.tolist() == lost_resolution(X).tolist()
    assert stored.lost.tolist() == [False, False, True, False, False, False]
    assert has_missing(wh, "raw", RUN, ["ordinary"])
    assert not has_missing(wh, "raw", RUN, ["counts", "giant"])


def test_the_verdict_from_a_files_figures_is_lost_resolutions():
    # spread 1 beside |mean| + sd of 1e15: the rounding 4 eps 1e15 = 0.9 passes 1e-3
    size, top = np.array([1e15, 1e10, 1.0]), np.array([1e15, 1e10, np.inf])
    assert resolution_lost(size, top, np.ones(3)).tolist() == [True, False, True]


def test_an_sd_past_the_float_range_gives_the_in_memory_verdict(tmp_path):
    """Values near 1e156 whose sd's squares pass the float range: the verdict is taken on
    the values over their largest magnitude, as in memory, not lost by the overflow."""
    rng = np.random.default_rng(2)
    x = rng.normal(1e156, 1e154, 1_001)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, pd.DataFrame({"x": x}))
    stored = rule_units(wh, "raw", RUN, ["x"])
    assert math.isinf(stored.scale[0])  # the sd itself overflows, on both paths
    assert stored.scale.tolist() == file_units(x[:, None], ["x"]).scale.tolist()
    assert stored.lost.tolist() == lost_resolution(x[:, None]).tolist() == [False]


def test_sums_past_the_float_range_do_not_depend_on_the_chunks():
    values = np.array([1e308, 1e308, -1e308])
    whole = exact_moments(lambda: [values])
    assert whole[1] == pytest.approx(1e308 / 3)
    assert exact_moments(lambda: [values[:1], values[1:]]) == whole
    assert exact_moments(lambda: [values[::-1]]) == whole
    both = exact_moments(lambda: [np.array([np.inf, -np.inf])])
    assert both[0] == 2 and math.isnan(both[1])


def test_units_without_a_column_the_rules_read_are_refused_by_name():
    units = file_units(np.array([[1.0, 2.0], [3.0, 4.0]]), ["a", "b"])
    with pytest.raises(ParameterError, match="no column 'c'"):
        units.take(["a", "c"])


def test_a_part_moved_in_the_files_units_is_moved_as_in_the_whole_file():
    """A group of a part of the file, moved onto ``total == a + b`` with the file's units,
    gets the values the whole file's call gives it; with the part's own units it does not."""
    rng = np.random.default_rng(3)
    n = 600
    a, b = rng.lognormal(5, 1, n), rng.lognormal(4, 1, n)
    X = np.column_stack([a, b, a + b])
    X[rng.random(X.shape) < 0.05] = np.nan
    labels = np.repeat(np.arange(n // 5), 5)
    released = X.copy()
    for g in range(n // 5):  # each group's means over the records that have each column
        rows = labels == g
        means = np.nanmean(np.where(np.isnan(X[rows]), np.nan, X[rows]), axis=0)
        released[rows] = np.where(np.isnan(X[rows]), np.nan, means)
    columns = ["a", "b", "total"]
    rules = LinearConstraints.from_rows(
        [("sum", [({"a": 1.0, "b": 1.0, "total": -1.0}, 0.0)], [])], columns
    )
    whole = group_values_on_rules(X, released, labels, columns, rules)
    assert whole.moved > 0
    part = labels < 40  # the first 40 groups
    units = file_units(X, columns)
    moved = group_values_on_rules(
        X[part], released[part], labels[part], columns, rules, units=units
    )
    assert np.array_equal(moved.values, whole.values[part], equal_nan=True)
    own = group_values_on_rules(X[part], released[part], labels[part], columns, rules)
    assert not np.array_equal(own.values, whole.values[part], equal_nan=True)


def test_a_column_no_rule_reads_is_neither_measured_nor_refused():
    """A key no rule reads never moves: its values past 1e154 (an infinite sd), which
    refused the move of the others before, leave them moved as without it."""
    rng = np.random.default_rng(5)
    n = 300
    a, b = rng.lognormal(5, 1, n), rng.lognormal(4, 1, n)
    X = np.column_stack([a, b, a + b, rng.lognormal(0, 1, n) * 1e200])
    X[rng.random(X.shape) < 0.05] = np.nan
    labels = np.repeat(np.arange(n // 5), 5)
    released = X.copy()
    for g in range(n // 5):
        rows = labels == g
        released[rows] = np.where(np.isnan(X[rows]), np.nan, np.nanmean(X[rows], axis=0))
    rule = [("sum", [({"a": 1.0, "b": 1.0, "total": -1.0}, 0.0)], [])]
    four = LinearConstraints.from_rows(rule, ["a", "b", "total", "other"])
    three = LinearConstraints.from_rows(rule, ["a", "b", "total"])
    with_other = group_values_on_rules(X, released, labels, ["a", "b", "total", "other"], four)
    without = group_values_on_rules(X[:, :3], released[:, :3], labels, ["a", "b", "total"], three)
    assert with_other.moved == without.moved > 0
    # to the last bits: the fourth column's gaps split the groups' patterns of columns,
    # and the projections' sums follow them
    np.testing.assert_allclose(with_other.values[:, :3], without.values, rtol=1e-14)
    assert np.array_equal(with_other.values[:, 3], released[:, 3], equal_nan=True)
