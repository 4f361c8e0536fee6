"""Undeclared linear relations among numeric keys with missing values (sdcflow.core.linear.
relations) and the release's refusal of them; sets of joined groups moved onto the rules as
one (Representatives.sets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.group_values import group_values_on_rules
from sdcflow.core.linear.relations import undeclared_relations
from sdcflow.core.microaggregation.heterogeneous import (
    MixedKeys,
    group_representatives,
    heterogeneous_groups,
)
from sdcflow.errors import Reason

COLS = ["a", "b", "total"]
#: A release of the three keys a, b and total from ``data.csv``.
SPEC = {
    "release": "r",
    "source": "data.csv",
    "quasi_identifiers": COLS,
    "missing_values": [""],
    "method": {"name": "mdav", "k": 5},
}


def _eq(name, coefficients, columns=COLS):
    return LinearConstraints.from_rows([(name, [(coefficients, 0.0)], [])], columns)


def _sums(n=600, share=0.1, seed=0):
    """a, b and total = a + b as integers, each missing with probability ``share``."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 1000, n), rng.integers(0, 500, n)
    x = np.c_[a, b, a + b].astype(float)
    x[rng.random(x.shape) < share] = np.nan
    return x


def test_a_set_whose_records_hold_different_keys_gives_a_records_combination_away():
    """The fault the refusal prevents, by hand (such records are read to rounding):
    total = a + b on every record, k = 5; record 0 lacks a, so its group {0..4} holds four
    values of a and joins {5..9}. The set releases a over nine records, b and total over
    ten, and 10 (total_S - b_S) - 9 a_S = total_0 - b_0 = 130 - 30 = 100 exactly. Declared
    as a rule, the set's means are moved onto it and the same arithmetic gives the set's
    moved mean of a instead (36.99 here)."""
    x = np.array(
        [[np.nan, 30, 130], [10, 20, 30], [12, 22, 34], [14, 24, 38], [16, 26, 42],
         [50, 60, 110], [52, 61, 113], [54, 62, 116], [56, 63, 119], [58, 64, 122]],
        dtype=float,
    )  # fmt: skip
    keys = MixedKeys.build(numeric=x)
    labels = np.repeat([0, 1], 5)
    rep = group_representatives(keys, labels, 5)
    sets = rep.sets(labels)
    assert sets.tolist() == [0] * 10
    a, b, total = rep.numeric[1]
    assert 10 * (total - b) - 9 * a == pytest.approx(100.0, abs=1e-9)
    rule = _eq("sum", {"total": 1, "a": -1, "b": -1})
    a, b, total = group_values_on_rules(x, rep.numeric, sets, COLS, rule).values[1]
    assert total == pytest.approx(a + b)
    assert 10 * (total - b) - 9 * a == pytest.approx(a) and abs(a - 100.0) > 50  # gone


def test_relations_the_data_hold_and_the_rules_do_not_are_found():
    x = _sums()
    (found,) = undeclared_relations(x, COLS)
    assert found.text() == "total == a + b"
    assert undeclared_relations(x, COLS, _eq("sum", {"total": 1, "a": -1, "b": -1})) == []
    # a rule over other columns too, or over a subset, counts for what it reads here
    wider = LinearConstraints.from_rows(
        [("sum", [({"total": 2, "a": -2, "b": -2}, 0.0)], [])], ["z", *COLS]
    )
    assert undeclared_relations(x, COLS, wider) == []
    # scaled, with a constant, the constant to 6 figures
    rng = np.random.default_rng(1)
    y = rng.normal(size=(500, 3))
    y[:, 2] = -y[:, 0] - 3 * y[:, 1] + 7
    y[rng.random(500) < 0.2, 2] = np.nan
    assert [r.text() for r in undeclared_relations(y, ["x", "y", "z"])] == ["z == -x - 3 * y + 7"]


def test_a_relation_broken_on_a_few_records_is_found():
    """A relation broken on a few records (data-entry errors on 1 % of them, released
    without the rules) is still found: the errors hide it from the covariance of all
    records, so concentration steps find what holds on 90 % of them, and
    its sets of records without errors give a record away as before. So do the two
    identities of the CPS extract in ../shared/data/census.csv (EIA's: its sales and
    revenues add up)."""
    x = _sums(n=2000, share=0.05, seed=5)
    broken = np.random.default_rng(6).choice(2000, 20, replace=False)
    x[broken, 2] += np.random.default_rng(7).integers(1, 200, 20)
    assert [r.text() for r in undeclared_relations(x, COLS)] == ["total == a + b"]
    # nor by a few outlying values of one key (an undeclared "unknown" code): the sd they
    # inflate must not hide the relation, which reads every record it holds on
    coded = x.copy()
    coded[np.random.default_rng(16).choice(2000, 10, replace=False), 0] = 99999999.0
    assert [r.text() for r in undeclared_relations(coded, COLS)] == ["total == a + b"]
    # zeros on most records (a key of exports, say) are no relation with the others
    rng = np.random.default_rng(8)
    z = rng.normal(size=(5000, 4))
    z[rng.random(5000) < 0.92, :2] = 0.0
    z[rng.random(z.shape) < 0.05] = np.nan
    assert undeclared_relations(z, list("abcd")) == []


def test_two_relations_one_declared_leaves_the_other():
    rng = np.random.default_rng(2)
    n = 800
    turnover, wages, other = rng.integers(100, 900, (3, n))
    x = np.c_[turnover, wages, other, wages + other, turnover - wages - other].astype(float)
    x[rng.random(x.shape) < 0.05] = np.nan
    cols = ["turnover", "wages", "other", "costs", "profit"]
    found = undeclared_relations(x, cols)
    assert [r.text() for r in found] == [
        "profit == turnover - wages - other",
        "costs == wages + other",
    ]
    costs = _eq("costs", {"costs": 1, "wages": -1, "other": -1}, cols)
    assert [r.text() for r in undeclared_relations(x, cols, costs)] == [
        "profit == turnover - wages - other"
    ]


def test_what_is_not_a_leak_is_not_refused():
    rng = np.random.default_rng(3)
    free = rng.normal(size=(3000, 5))
    free[rng.random(free.shape) < 0.1] = np.nan
    assert undeclared_relations(free, list("abcde")) == []  # independent keys
    tied = rng.normal(size=(3000, 4))
    tied[:, 2] = tied[:, 0] + tied[:, 1]
    tied[rng.random(3000) < 0.1, 3] = np.nan
    # the relation's keys have no gaps: their means are over the same records, and keep it
    assert undeclared_relations(tied, list("abcd")) == []
    # too few records holding every key to tell a relation from chance
    few = _sums(n=5, share=0.0)
    few[0, 0] = np.nan
    assert undeclared_relations(few, COLS) == []
    # a loose relation (1 % of an sd) is not taken for one (RELATION_SD = 0.1 %)
    loose = rng.normal(size=(3000, 3))
    loose[:, 2] = loose[:, 0] + loose[:, 1] + 0.01 * rng.normal(size=3000)
    loose[rng.random(3000) < 0.1, 0] = np.nan
    assert undeclared_relations(loose, COLS) == []


def test_a_set_of_joined_groups_is_moved_onto_the_rules_as_one():
    """A joined set is projected as one, with the set's holders' counts: one point per
    group would publish two points on y = 12 x, which solve for the set's means (then the
    gap's arithmetic above reads a record's own value to rounding). By
    hand, k = 3: the group {0, 1, 2} holds y on record 0 only and joins {3, 4, 5}; with
    y == 12 x declared, all six records publish one point."""
    x = np.array(
        [[1, 12], [2, np.nan], [3, np.nan], [10, 121], [11, 131], [12, 145], [20, 240],
         [21, 252], [22, 264]],
        dtype=float,
    )  # fmt: skip
    keys = MixedKeys.build(numeric=x)
    labels = heterogeneous_groups(keys, 3)
    rep = group_representatives(keys, labels, 3)
    sets = rep.sets(labels)
    assert sets.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1]
    rule = _eq("monthly", {"y": 1, "x": -12}, ["x", "y"])
    one = group_values_on_rules(x, rep.numeric, sets, ["x", "y"], rule).values
    assert np.unique(one[:6, 0]).size == 1 and np.unique(one[[0, 3, 4, 5], 1]).size == 1
    assert one[0, 1] == pytest.approx(12 * one[0, 0])
    per_group = group_values_on_rules(x, rep.numeric, labels, ["x", "y"], rule).values
    assert np.unique(per_group[:6, 0]).size == 2  # what was published before: two points


def _refused(tmp_path, spec, capsys, column):
    """Write ``spec``, release it, check it is refused for an undeclared relation at
    ``column`` (exit 2), and return the error line."""
    from errorline import cli_error

    from sdcflow.cli.main import main

    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.UNDECLARED_RELATION, column)
    return err


@pytest.mark.flow
def test_a_release_with_gaps_refuses_a_relation_no_rule_declares(tmp_path, prefect_api, capsys):

    from sdcflow.cli.main import main

    x = _sums(n=300, share=0.1, seed=4)
    frame = pd.DataFrame(x, columns=COLS).astype("Int64")
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = dict(SPEC)
    err = _refused(tmp_path, spec, capsys, "total")
    assert "`total == a + b`" in err and "Declare it in `edits:`" in err
    assert not (tmp_path / "published").exists()
    # declared, the same file is released, and every published record keeps it; its
    # amounts are magnitudes grouped with gaps (MDAV-generic, which has no dominance
    # remedy), so the spec accepts dominated groups explicitly: this is about the rule
    spec["edits"] = ["total == a + b"]
    spec["checks"] = {"max_p_dominated_groups": 300}
    spec["accept"] = {"looser_checks": ["max_p_dominated_groups"]}
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0
    out = pd.read_parquet(tmp_path / "published" / "r" / "data.parquet").dropna()
    assert (out["total"] == out["a"] + out["b"]).all()


def test_keys_missing_together_are_not_refused():
    """a, b and total missing on the same records (a block unanswered) are not refused:
    every set keeps total == a + b and nothing can be read, since no record holds some of
    them but not all."""
    x = _sums(n=600, share=0.0, seed=9)
    block = np.random.default_rng(10).random(600) < 0.1
    x[block] = np.nan
    assert undeclared_relations(x, COLS) == []
    x[np.flatnonzero(~block)[0], 0] = np.nan  # one record without a alone: refused
    assert [r.text() for r in undeclared_relations(x, COLS)] == ["total == a + b"]


def test_a_relation_is_searched_among_the_keys_enough_records_hold():
    """With 14 other keys each missing on a quarter of the records, 21 records hold every
    key, fewer than twice the keys; the search must not give up (43 records would be read
    exactly through total = a + b). The most missing keys are left out until enough
    records hold the rest."""
    rng = np.random.default_rng(11)
    n = 1500
    other = rng.normal(size=(n, 14))
    other[rng.random(other.shape) < 0.25] = np.nan
    x = np.hstack([_sums(n=n, share=0.03, seed=12), other])
    names = [*COLS, *(f"k{j}" for j in range(14))]
    assert [r.text() for r in undeclared_relations(x, names)] == ["total == a + b"]


def test_coefficients_found_up_to_rounding_are_whole():
    """Coefficients that hold as whole numbers are whole: no `2.57866e-06 * OTHREVENUE`
    or constant of -0.000363698 beside the whole sum (as EIA's revenues would give)."""
    rng = np.random.default_rng(13)
    parts = rng.integers(1, 10**6, (3000, 3)).astype(float)
    x = np.c_[parts, parts.sum(axis=1) + rng.integers(-1, 2, 3000)]  # rounded by one unit
    x[rng.random(3000) < 0.05, 0] = np.nan
    (found,) = undeclared_relations(x, ["r", "c", "i", "tot"])
    assert found.text() == "tot == r + c + i"


@pytest.mark.flow
def test_a_relation_with_a_column_published_as_it_is_is_refused(tmp_path, prefect_api, capsys):
    """With `sensitive: [total]` (published as it is) and total = a + b over the keys a
    (8 % missing) and b, a set's means would read each record lacking a (its b exactly):
    the release is refused."""
    from errorline import cli_error

    from sdcflow.cli.main import main

    x = _sums(n=300, share=0.0, seed=14)
    x[np.random.default_rng(15).random(300) < 0.08, 0] = np.nan
    pd.DataFrame(x, columns=COLS).astype("Int64").to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "r",
        "source": "data.csv",
        "quasi_identifiers": ["a", "b"],
        "sensitive": ["total"],
        "missing_values": [""],
        "method": {"name": "mdav", "k": 5},
    }
    err = _refused(tmp_path, spec, capsys, "total")
    assert "`total == a + b`" in err and "leave it out of the release" in err
    # one infinity in it must not switch the check off: it is no value to relate
    frame = pd.read_csv(tmp_path / "data.csv", dtype=str, keep_default_na=False)
    frame.loc[0, "total"] = "inf"
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err) == (Reason.UNDECLARED_RELATION, "total")
    # without gaps too: weights that are 2 a + 1 give every record's a back
    w = pd.DataFrame({"a": x[:, 0], "b": x[:, 1]}).fillna(7.0)
    w["w"] = 2 * w["a"] + 1
    w.to_csv(tmp_path / "data.csv", index=False)
    spec = {**spec, "weight_column": "w"}
    del spec["sensitive"]
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err) == (Reason.UNDECLARED_RELATION, "w")


def _planned(tmp_path, x):
    """Write ``x`` (a, b, total) and :data:`SPEC` releasing them, and plan the release."""
    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec

    pd.DataFrame(x, columns=COLS).astype("Int64").to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(SPEC))
    return plan_release(load_spec(tmp_path / "release.yaml"))


def test_the_preflight_searches_a_sample_of_a_large_file_and_refuses_the_same(
    tmp_path, monkeypatch
):
    """A file larger than the search's sample (4,000 records against 1,000 here, 10 million
    against 1 million in a census) is searched on a uniform sample: the search's matrices
    are the sample's, and the relation is refused as on the whole file."""
    from sdcflow.errors import DataError
    from sdcflow.methods import mixed
    from sdcflow.preflight import rules

    searched = []
    search = mixed.undeclared_relations

    def spy(X, *args, **kwargs):
        searched.append(X.shape[0])
        return search(X, *args, **kwargs)

    monkeypatch.setattr(mixed, "undeclared_relations", spy)
    monkeypatch.setattr(rules, "RELATION_SAMPLE", 1000)
    with pytest.raises(DataError) as refused:
        _planned(tmp_path, _sums(n=4000, share=0.05, seed=21))
    assert refused.value.code == Reason.UNDECLARED_RELATION
    assert "`total == a + b`" in str(refused.value)
    (rows,) = searched
    assert 850 < rows < 1150  # about the sample, not the file


def test_one_record_outside_the_sample_holding_part_of_a_relation_is_refused(tmp_path, monkeypatch):
    """Only one record of 4,000 lacks a value (a), and the sample leaves it out: the sample
    alone holds every key on every record and would show nothing to read. The file's
    patterns of missing values are read on every record, so the relation its means would
    give away (total - b of that record) is refused all the same."""
    from sdcflow.core.linear.relations import sample_rows
    from sdcflow.errors import DataError
    from sdcflow.preflight import rules

    monkeypatch.setattr(rules, "RELATION_SAMPLE", 1000)
    n = 4000
    x = _sums(n=n, share=0.0, seed=22)
    kept = sample_rows(np.random.default_rng(0), n, n, 1000)
    outside = int(np.flatnonzero(~kept)[0])
    x[outside, 0] = np.nan
    assert not np.isnan(x[kept]).any()  # the sample holds no missing value
    with pytest.raises(DataError) as refused:
        _planned(tmp_path, x)
    assert refused.value.code == Reason.UNDECLARED_RELATION
    # missing together on that record, nothing is read: released
    x[outside] = np.nan
    assert _planned(tmp_path, x).profile.rows == n


def test_missing_patterns_are_the_distinct_rows_however_gathered():
    rng = np.random.default_rng(23)
    from sdcflow.core.linear.relations import missing_patterns

    for p in (3, 70):  # packed into integers, and row by row past 62 columns
        m = rng.random((5000, p)) < 0.02 * (np.arange(p) % 3 == 0)
        whole = np.unique(m, axis=0)
        gathered = None
        for part in np.array_split(m, 7):
            gathered = missing_patterns(part, gathered)
        assert np.array_equal(gathered, whole)


def test_the_sample_does_not_depend_on_how_the_file_is_cut_into_batches():
    from sdcflow.core.linear.relations import sample_rows

    one = sample_rows(np.random.default_rng(0), 10_000, 10_000, 500)
    rng = np.random.default_rng(0)
    cut = np.concatenate([sample_rows(rng, k, 10_000, 500) for k in (3000, 1, 6999)])
    assert np.array_equal(one, cut) and 400 < one.sum() < 600
    assert sample_rows(np.random.default_rng(0), 7, 100, 500).all()  # small file: all
