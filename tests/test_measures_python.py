"""``sdcflow.measures`` on notebook data: missing values counted as a release counts them
(the manifest's figure), nullable dtypes, rows paired by label, columns named in errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcflow import InputError, Reason
from sdcflow import measures as M


@pytest.fixture
def pair() -> tuple[pd.DataFrame, pd.DataFrame]:
    """12 records of 2 numeric keys under a filtered-looking index, released as pair means;
    ``a`` missing in record 101 (both files), ``b`` suppressed in the release of 105."""
    rng = np.random.default_rng(3)
    original = pd.DataFrame(
        {"a": rng.normal(10, 3, 12), "b": rng.integers(0, 50, 12).astype(float)},
        index=np.arange(100, 124, 2)[::-1],
    )
    released = original.groupby(np.arange(12) // 2).transform("mean").set_axis(original.index)
    original.loc[102, "a"] = released.loc[102, "a"] = np.nan
    released.loc[110, "b"] = np.nan
    return original, released


def own_loss(original: pd.DataFrame, released: pd.DataFrame) -> float:
    """IL over the values present: each column on the records that have it in both files."""
    sse = sst = 0.0
    for c in original:
        both = original[c].notna() & released[c].notna()
        x, y = original.loc[both, c], released.loc[both, c]
        sse += (((x - y) / x.std(ddof=0)) ** 2).sum()
        sst += both.sum()
    return 100 * sse / sst


def test_missing_values_are_counted_as_a_release_counts_them(pair):
    original, released = pair
    assert M.information_loss(original, released) == pytest.approx(own_loss(*pair), rel=1e-12)
    complete = original.notna().all(axis=1) & released.notna().all(axis=1)
    for measure in (M.record_linkage, M.interval_disclosure, M.generic_loss):
        assert measure(original, released) == measure(original[complete], released[complete])


def test_nullable_dtypes_and_none_give_the_float_figures(pair):
    original, released = pair
    nullable = original.astype({"a": "Float64", "b": "Int64"})
    objects = released.astype(object).where(released.notna(), None)
    assert nullable["b"].dtype == "Int64" and objects.loc[110, "b"] is None
    assert M.information_loss(nullable, objects) == M.information_loss(original, released)
    assert M.record_linkage(nullable, objects) == M.record_linkage(original, released)


def test_rows_are_paired_by_label_when_the_release_is_reordered(pair):
    original, released = pair
    shuffled = released.sample(frac=1, random_state=0)[["b", "a"]]
    assert M.information_loss(original, shuffled) == M.information_loss(original, released)
    keys = pd.DataFrame({"g": ["x"] * 6 + ["y"] * 6}, index=original.index)
    sensitive = pd.Series(["s", "t"] * 3 + ["u"] * 6, index=original.index)
    assert M.l_diversity(keys, sensitive) == 1
    assert M.l_diversity(keys, sensitive.sample(frac=1, random_state=1)) == 1
    assert M.l_diversity(keys.iloc[:6], sensitive.iloc[:6].iloc[::-1]) == 2


def test_errors_name_the_column(pair):
    original, released = pair
    text = original.assign(sex=["M", "F"] * 6)
    with pytest.raises(InputError) as e:
        M.information_loss(text, text)
    assert (e.value.code, e.value.field) == (Reason.COLUMN_TYPE, "sex")
    infinite = released.copy()
    infinite.loc[120, "b"] = np.inf
    with pytest.raises(InputError) as e:
        M.record_linkage(original, infinite)
    assert (e.value.code, e.value.field) == (Reason.VALUES_NONFINITE, "b")
    holes = original.copy()
    holes.loc[holes.index[::2], "a"] = np.nan
    holes.loc[holes.index[1::2], "b"] = np.nan
    with pytest.raises(InputError) as e:  # no record has both keys: nothing to link
        M.record_linkage(holes, released)
    assert e.value.code is Reason.VALUES_MISSING and e.value.field in ("a", "b")
    with pytest.raises(InputError) as e:
        M.information_loss(original, released[["a"]])
    assert (e.value.code, e.value.field) == (Reason.COLUMN_UNKNOWN, "b")


def test_a_column_name_as_sensitive_is_refused_by_field():
    """l_diversity(keys, "income") raised pandas' bare ValueError ('DataFrame constructor not
    properly called')."""
    keys = pd.DataFrame({"g": ["x", "x", "y", "y"]})
    for measure in (M.l_diversity, M.entropy_l_diversity):
        with pytest.raises(InputError) as e:
            measure(keys, "income")
        assert (e.value.code, e.value.field) == (Reason.PARAMETER, "sensitive")


def test_a_release_from_an_array_is_paired_by_position_with_a_shuffled_original(pair):
    """A default RangeIndex (a frame built from an array, a Series of values) carries no
    labels: with an original whose labels are a shuffle of 0..n-1 the rows pair by position,
    not reordered to the original's labels (which paired other records, silently)."""
    original, released = pair
    shuffled = original.set_axis(np.random.default_rng(0).permutation(len(original)))
    from_array = pd.DataFrame(released.to_numpy(), columns=released.columns)
    assert M.information_loss(shuffled, from_array) == M.information_loss(original, released)
    assert M.record_linkage(shuffled, from_array) == M.record_linkage(original, released)
    keys = pd.DataFrame({"g": ["x"] * 6 + ["y"] * 6}, index=shuffled.index)
    sensitive = pd.Series(["s", "t"] * 3 + ["u"] * 6)
    assert M.l_diversity(keys, sensitive) == 1


def test_reordered_rows_with_a_repeated_label_are_refused(pair):
    """Rows carrying the original's labels in another order with a label repeated cannot be
    paired by label, and by position they would measure other records: refused."""
    original, released = pair
    twice = np.arange(12) % 6
    original, released = original.set_axis(twice), released.set_axis(twice)
    assert M.information_loss(original, released) == M.information_loss(*pair)
    for measure in (M.information_loss, M.record_linkage):
        with pytest.raises(InputError) as e:
            measure(original, released.iloc[::-1])
        assert (e.value.code, e.value.field) == (Reason.DATA, "released")
    keys = pd.DataFrame({"g": ["x"] * 6 + ["y"] * 6}, index=twice)
    with pytest.raises(InputError) as e:
        M.l_diversity(keys, pd.Series(["s"] * 12, index=twice).iloc[::-1])
    assert (e.value.code, e.value.field) == (Reason.DATA, "sensitive")


def test_rows_sharing_only_some_labels_at_other_positions_are_refused(pair):
    """A reordered release with one label changed (only some labels shared) fell back to
    pairing by position, silently measuring other records; a release under other labels
    altogether, or beside an original with a default RangeIndex, still pairs by position."""
    original, released = pair
    relabelled = released.iloc[::-1].rename(index={released.index[-1]: 999})
    with pytest.raises(InputError) as e:
        M.information_loss(original, relabelled)
    assert (e.value.code, e.value.field) == (Reason.DATA, "released")
    figure = M.information_loss(original, released)
    assert M.information_loss(original, released.set_axis(released.index + 1000)) == figure
    sliced = released.set_axis(np.arange(5, 17))  # as df.iloc[5:17] beside a reset original
    assert M.information_loss(original.reset_index(drop=True), sliced) == figure
