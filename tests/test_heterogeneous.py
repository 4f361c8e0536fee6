"""Heterogeneous microaggregation (Domingo-Ferrer & Torra 2005) on a hand-computed file."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.core.measures.information_loss import sse_sst_loss_present
from sdcflow.core.microaggregation.heterogeneous import (
    MixedKeys,
    _Distances,
    group_representatives,
    heterogeneous_cells,
    heterogeneous_cells_release,
    heterogeneous_groups,
    short_group_sets,
)
from sdcflow.core.parallel import part_map
from sdcflow.errors import DataError
from sdcflow.methods import METHODS
from sdcflow.methods.keys import Key
from sdcflow.methods.mixed import mask_keys

# x numeric; o ordinal with 3 categories (ranks 0..2); c nominal (A = 0, B = 1)
X = np.array([[1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
RANKS = np.array([[0], [0], [1], [2], [2], [1]])
C = np.array([[0], [0], [1], [1], [1], [0]])


def test_groups_and_representatives_by_hand():
    # n = 6 < 3k: one step of MDAV-generic, then the rest. Scaled: z = (x - 6.5) / 4.5735
    # (population sd), ordinal rank / 3. Centroid: z 0, median rank 1/3, mode A (a 3-3 tie
    # goes to the lowest code). Squared distances to it: 1.557, 1.079, 1.586, 1.697, 2.079,
    # 1.446: record 4 is the farthest. Its nearest: itself, record 3 (0.048), record 5
    # (0.048 + 0.111 + 1 = 1.159) before record 2 (3.171): groups {3, 4, 5} and {0, 1, 2}.
    keys = MixedKeys.build(numeric=X, ordinal=RANKS, levels=np.array([3]), nominal=C)
    labels = heterogeneous_groups(keys, 3)
    assert labels.tolist() == [1, 1, 1, 0, 0, 0]
    rep = group_representatives(keys, labels, 3)
    # {0, 1, 2}: mean 2, lower median of ranks (0, 0, 1) = 0, mode A
    # {3, 4, 5}: mean 11, median of (2, 2, 1) = 2, mode B
    assert rep.numeric[:, 0].tolist() == [2, 2, 2, 11, 11, 11]
    assert rep.ordinal[:, 0].tolist() == [0, 0, 0, 2, 2, 2]
    assert rep.nominal[:, 0].tolist() == [0, 0, 0, 1, 1, 1]


def test_missing_values_stay_missing_and_means_use_the_values_present():
    Xm = X.copy()
    Xm[1, 0] = np.nan  # record 1 has no x: grouped on o and c only
    Cm = C.copy()
    Cm[4, 0] = -1
    keys = MixedKeys.build(numeric=Xm, ordinal=RANKS, levels=np.array([3]), nominal=Cm)
    labels = heterogeneous_groups(keys, 3)
    rep = group_representatives(keys, labels, 3)
    assert np.isnan(rep.numeric[1, 0]) and rep.nominal[4, 0] == -1
    assert np.bincount(labels).min() >= 3
    # the group {0, 1, 2} has x on 2 < k records (1 and 3): a mean of two would let each
    # read the other's, so it joins the other group, {3, 4, 5}, for x: all five holders
    # release (1 + 3 + 10 + 11 + 12) / 5 = 7.4
    assert np.flatnonzero(labels == labels[1]).tolist() == [0, 1, 2]
    assert rep.numeric[[0, 2, 3, 4, 5], 0].tolist() == [7.4] * 5


def test_an_all_missing_categorical_key_is_released_missing():
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame(
        {"a": rng.integers(0, 100, n), "s": rng.choice(["x", "y"], n), "gone": [None] * n}
    )
    keys = [Key("a", "numeric", decimals=0, integer=True), Key("s", "nominal")]
    keys.append(Key("gone", "nominal"))
    for method in ({"name": "mdav", "k": 5}, {"name": "heterogeneous", "k": 5}):
        params = METHODS[method["name"]].params.model_validate(method)
        result = mask_keys(frame, keys, params, rng)
        assert result.masked["gone"].isna().all()
        assert k_anonymity(result.released_identifiers) >= 5


@pytest.mark.parametrize("cell_size", [None, 60])
@pytest.mark.parametrize("categorical", ["mode", "suppress"])
def test_the_method_releases_every_key_k_anonymously(categorical, cell_size):
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["F", "M"], n).astype(object),
            "edu": rng.choice(["primary", "secondary", "tertiary"], n).astype(object),
        }
    )
    frame.loc[rng.random(n) < 0.1, "sex"] = None
    keys = [
        Key("age", "numeric", decimals=0, integer=True),
        Key("sex", "nominal"),
        Key("edu", "ordinal", order=("primary", "secondary", "tertiary")),
    ]
    params = METHODS["heterogeneous"].params.model_validate(
        {"name": "heterogeneous", "k": 4, "categorical": categorical, "cell_size": cell_size}
    )
    result = mask_keys(frame, keys, params, rng)
    cells = "within spatial cells of at most 60 records"
    assert (cells in result.details["strategy"]) == (cell_size is not None)
    released = result.released_identifiers
    assert list(released.columns) == ["age", "sex", "edu"]
    assert k_anonymity(released) >= 4
    assert result.promises == {"k_anonymity": 4.0}
    assert str(released["age"].dtype) == "Int64"  # integers published as integers
    assert released["sex"].isna().sum() >= frame["sex"].isna().sum()  # missing stays missing
    changed = result.details["categorical_values_changed"]
    suppressed = result.details["categorical_values_suppressed"]
    if categorical == "suppress":
        assert changed == suppressed  # every change is a suppression
        kept = released["edu"].notna()
        assert (released.loc[kept, "edu"] == frame.loc[kept, "edu"]).all()
    else:
        # a category is blanked only for a whole group where some record misses it (so that
        # the group releases one row); edu has no gap, so none of it is blanked
        assert suppressed["edu"] == 0
        blanked = released["sex"].isna() & frame["sex"].notna()
        classes = (
            released.astype(object).where(released.notna(), "").astype(str).agg("|".join, axis=1)
        )
        had_gap = frame["sex"].isna().groupby(classes).any()
        assert had_gap[classes[blanked].unique()].all()


def test_cells_by_hand_a_missing_value_is_cut_at_the_mean_and_grouped_inside_its_cell():
    # x = 0, 1, 2, 4, 10, 11, 13 and one record without x (row 7), k = 2, cells of <= 4.
    # The cut places row 7 at the mean of the present values, 41/7 = 5.86: the median cut
    # of 8 records puts the 4 lowest (rows 0-3) in one cell and rows 4-7 in the other.
    # Cell {0, 1, 2, 3}: 4 < 3k, so one step: centroid 1.75, farthest row 3 (x = 4), its
    # nearest row 2: {2, 3} (mean 3), then {0, 1} (mean 0.5). Cell {4, 5, 6, 7}: centroid of
    # the present values 11.33, farthest row 6 (x = 13); row 7 shares no key with it, so it
    # is at distance 0 and joins it: {6, 7}, then {4, 5} (10.5). Row 6 is the only one of
    # {6, 7} with x: its 13 alone would be published as it is. x is the only key, so the
    # group shares no other key with any and joins, over the file, the group numbered
    # first (cell by cell: {2, 3}): the set {2, 3, 6} releases (2 + 4 + 13) / 3 (row 7
    # stays missing). Chosen on x, the partner nearest 13 would give 13 back.
    x = np.array([[0.0], [1.0], [2.0], [4.0], [10.0], [11.0], [13.0], [np.nan]])
    keys = MixedKeys.build(numeric=x)
    labels = heterogeneous_cells(keys, 2, 4)
    groups = sorted(sorted(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels))
    assert groups == [[0, 1], [2, 3], [4, 5], [6, 7]]
    released = group_representatives(keys, labels, 2).numeric[:, 0]
    np.testing.assert_allclose(
        released, [0.5, 0.5, 19 / 3, 19 / 3, 10.5, 10.5, 19 / 3, np.nan], rtol=1e-15
    )
    # a file within one cell is grouped in one pass, whatever cell_size
    np.testing.assert_array_equal(heterogeneous_cells(keys, 2, 8), heterogeneous_groups(keys, 2))


def test_cells_keep_group_sizes_and_do_not_depend_on_the_map():
    rng = np.random.default_rng(5)
    n, k, size = 2400, 4, 300
    num = rng.standard_normal((n, 3)) * [1.0, 50.0, 0.01]
    num[rng.random(num.shape) < 0.1] = np.nan
    num[:7] = np.nan  # records with no number at all are grouped too
    keys = MixedKeys.build(
        numeric=num,
        ordinal=rng.integers(-1, 4, (n, 1)),
        levels=np.array([4]),
        nominal=rng.integers(-1, 3, (n, 1)),
    )
    seen: list[int] = []
    groups: list[int] = []

    def backwards(fn, calls, label):  # another "cluster": pieces in reverse order
        assert label == "cell"
        seen.extend(args[0].shape[0] for args in calls)
        parts = [fn(*args) for args in calls[::-1]][::-1]
        groups.extend(int(labels.max()) + 1 for labels, _ in parts)
        return parts

    serial = heterogeneous_cells(keys, k, size)
    with part_map(backwards):
        mapped = heterogeneous_cells(keys, k, size)
    np.testing.assert_array_equal(mapped, serial)
    # 8 cells of 300 records by halving: each piece received its own cell's records only
    assert seen == [size] * 8
    sizes = np.bincount(serial)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    # the cells' groups are numbered one cell after the other, none shared: each cell's
    # label range holds exactly that cell's records
    ends = np.cumsum([0, *groups])
    held = [int(((serial >= lo) & (serial < hi)).sum()) for lo, hi in itertools.pairwise(ends)]
    assert held == [size] * 8 and ends[-1] == serial.max() + 1
    with pytest.raises(Exception, match="cell_size"):
        heterogeneous_cells(keys, k, 2 * k - 1)
    # the representatives each piece computes for its cell: its groups' median and mode,
    # their means, and the sets a short group joins within its cell, whatever the map
    labels, rep = heterogeneous_cells_release(keys, k, size)
    with part_map(backwards):
        again = heterogeneous_cells_release(keys, k, size)[1]
    np.testing.assert_array_equal(labels, serial)
    assert rep.numeric.tobytes() == again.numeric.tobytes()
    whole = group_representatives(keys, labels, k)
    for got, want in zip((rep.ordinal, rep.nominal), (whole.ordinal, whole.nominal), strict=True):
        assert got.tobytes() == want.tobytes()
    cell_of = np.searchsorted(ends, labels, side="right") - 1  # the cell of each group
    for j in range(3):
        for members in _sets(num[:, j], rep.numeric[:, j], labels, k):
            assert np.unique(cell_of[members]).size == 1  # joined within its cell


def _regions_with_gaps(n: int) -> tuple[pd.DataFrame, list[Key]]:
    """Two numeric keys, each value missing with probability 0.08, and a region."""
    rng = np.random.default_rng(8)
    frame = pd.DataFrame(
        {
            "a": rng.normal(40, 9, n).round(1),
            "b": rng.lognormal(3, 1, n).round(2),
            "region": rng.choice(["north", "south"], n),
        }
    )
    frame.loc[rng.random(n) < 0.08, "a"] = np.nan
    frame.loc[rng.random(n) < 0.08, "b"] = np.nan
    keys = [
        Key("a", "numeric", decimals=1),
        Key("b", "numeric", decimals=2),
        Key("region", "nominal"),
    ]
    return frame, keys


def _mdav_in_cells(frame: pd.DataFrame, keys: list[Key], columns: list[str], k: int):
    chosen = [key for key in keys if key.name in columns]
    params = METHODS["mdav"].params.model_validate({"k": k, "cell_size": 200})
    return mask_keys(frame[columns], chosen, params, np.random.default_rng(0))


def test_missing_numbers_in_cells_release_k_anonymous_and_every_gap_stays_missing():
    k = 5
    frame, keys = _regions_with_gaps(1500)
    for columns in (["a", "b"], ["a", "b", "region"]):
        result = _mdav_in_cells(frame, keys, columns, k)
        released = result.masked
        assert k_anonymity(released[columns]) >= k  # identical released rows
        for c in ("a", "b"):  # a gap stays a gap; a group mixing gaps and values is blanked
            assert released[c].isna()[frame[c].isna()].all()
        assert "within spatial cells of at most 200 records" in json.dumps(result.details)


def test_a_release_with_missing_numbers_reports_its_loss_and_why_it_has_no_bound():
    """The manifest's method figures never leave the loss out because its bound is missing:
    the figure is the gate's, over the values present, with or without categorical keys."""
    frame, keys = _regions_with_gaps(900)
    for columns, why in ((["a", "b"], "have missing values"), (["a", "b", "region"], "strata")):
        result = _mdav_in_cells(frame, keys, columns, 5)
        X = frame[["a", "b"]].to_numpy(np.float64)
        released = result.masked[["a", "b"]].to_numpy(np.float64)
        assert result.details["information_loss"] == pytest.approx(
            sse_sst_loss_present(X, released), rel=1e-12
        )
        assert 0.0 < result.details["information_loss"] < 100.0
        status = result.details["lower_bound"]["status"]
        assert status.startswith("not computed: ") and why in status


def test_the_missing_cells_benchmark_gives_each_figure_against_one_pass(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "missing_cells.py"
    spec = importlib.util.spec_from_file_location("missing_cells_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "runs.json"
    args = ["--n", "800", "--cell-size", "200", "--baseline-n", "800", "--json", str(out)]
    assert bench.main(args) == 0
    one_pass, cells = json.loads(out.read_text())["runs"]
    assert one_pass["cell_size"] is None and cells["cell_size"] == 200
    assert one_pass["k"] >= 5 and cells["k"] >= 5 and cells["missing_kept"]
    X = bench.records(800, 5, 0.05, 0)
    assert 0.04 < np.isnan(X).mean() < 0.06
    assert cells["il_over_one_pass_pct"] == round(100 * (cells["il"] / one_pass["il"] - 1), 3)
    assert "one pass" in capsys.readouterr().out


def test_every_pointer_to_a_benchmarks_readme_section_names_one_that_exists():
    # README.md, heterogeneous.py and benchmarks/missing_cells.py sent readers to the figures
    # of "Missing numbers at scale" in benchmarks/README.md, a section it did not have. The
    # sections are now dated pages under docs/benchmarks/ (benchmarks/README.md lists them):
    # a pointer by name must name one of their headings, a link must reach an existing page.
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    pages = sorted((repo / "docs" / "benchmarks").glob("*.md"))
    headings = [
        re.sub(r"^#+\s*", "", line).strip()
        for page in pages
        for line in page.read_text().splitlines()
        if line.startswith("#")
    ]
    pointer = re.compile(
        r'(?:benchmarks/README\.md|docs/benchmarks/)`*\)?,?\s*(?:section\s+)?"([^"]+)"'
    )
    link = re.compile(r"\]\((?:\.\./)*benchmarks/([\w.-]+\.md)(?:#[\w-]*)?\)")
    files = [repo / "README.md", *repo.glob("sdcflow/**/*.py"), *repo.glob("benchmarks/*.py")]
    files += [p for p in repo.glob("docs/**/*.md") if "_generated" not in p.parts]
    named = {
        (path.relative_to(repo).as_posix(), title)
        for path in files
        for title in pointer.findall(re.sub(r"\s+", " ", path.read_text()))
    }
    assert any(title == "Missing numbers at scale" for _, title in named)
    missing = sorted(
        (where, title)
        for where, title in named
        if not any(h == title or h.startswith(f"{title} (") for h in headings)
    )
    linked = {
        (path.relative_to(repo).as_posix(), name)
        for path in files
        if path.suffix == ".md"
        for name in link.findall(path.read_text())
    }
    assert ("docs/howto/scale-out.md", "2026-11-29-missing-numbers-at-scale.md") in linked
    missing += sorted((w, n) for w, n in linked if not (repo / "docs" / "benchmarks" / n).exists())
    assert missing == []


def test_the_report_does_not_say_cells_of_missing_numbers_are_refined_across_borders():
    # The report's "Method and parameters" table gives each set parameter with its field's
    # description as its meaning. mdav's cell_size read "MDAV within cells, refined across
    # their borders" also for a release whose numeric keys have missing values, where
    # MDAV-generic runs within the cells and nothing searches across them.
    from sdcflow.methods.microaggregation import MdavParams

    meaning = MdavParams.model_fields["cell_size"].description
    assert "missing values: MDAV-generic within cells, not refined across them" in meaning


def _sets(x, released, labels, k):
    """The sets of records whose released value of one key is one mean (checked: each is a
    union of whole groups' holders, at least k of them, releasing the mean of their values;
    missing stays missing). Shapes: (n,) each -> list of row arrays."""
    held = ~np.isnan(x)
    assert np.array_equal(held, ~np.isnan(released))
    rows = np.flatnonzero(held)
    values, which = np.unique(released[held], return_inverse=True)
    out = []
    for v in range(values.size):
        members = rows[which.reshape(-1) == v]
        assert members.size >= k
        assert x[members].mean() == pytest.approx(values[v], rel=1e-12)
        whole = rows[np.isin(labels[rows], labels[members])]
        assert np.array_equal(whole, members)  # whole groups, never part of one
        out.append(members)
    return out


def _released(keys, k, cell_size):
    """Groups and released numeric keys, in one pass or within cells: (n,), (n, p)."""
    if cell_size is None:
        labels = heterogeneous_groups(keys, k)
        return labels, group_representatives(keys, labels, k).numeric
    labels, rep = heterogeneous_cells_release(keys, k, cell_size)
    return labels, rep.numeric


def _pair_reads(x, released, labels, k, other=None):
    """For groups holding the key on two records: how far 2 R - x1 lands from x2, and how
    far apart x1 and x2 are (medians); for groups holding it on k or more, the same read
    of the second from the mean and the first, (m R - x1) / (m - 1), against their gap."""
    short, full = ([], []), ([], [])
    for g in np.unique(labels):
        r = np.flatnonzero((labels == g) & ~np.isnan(x))
        if other is not None and not other[labels == g].any():
            continue  # a group sharing no other key: ranked on the key alone (docstring)
        if r.size == 2:
            short[0].append(abs(2 * released[r[0]] - x[r[0]] - x[r[1]]))
            short[1].append(abs(x[r[0]] - x[r[1]]))
        elif r.size >= k:
            m = r.size
            full[0].append(abs((m * released[r[0]] - x[r[0]]) / (m - 1) - x[r[1]]))
            full[1].append(abs(x[r[0]] - x[r[1]]))
    return [float(np.median(v)) if v else np.nan for v in (*short, *full)], len(short[0])


def test_a_value_alone_in_its_group_joins_the_nearest_group():
    """A value alone in its group joins the nearest group: a mean over one value is the
    value, and the mean of the k file values nearest it lies within 0.3 % of an sd of
    it. By hand, k = 3, keys (a, b): the group {0, 1, 2} holds b on
    record 0 only (10). Its nearest group on a (the other key) is {3, 4, 5} (centroids
    1 and 11, against 21 for {6, 7, 8}): the four holders of b release
    (10 + 20 + 21 + 22) / 4 = 18.25, and the set, one unit for every key, releases a as
    (0 + 1 + 2 + 10 + 11 + 12) / 6 = 6; {6, 7, 8} keeps 31 and 21."""
    x = np.array(
        [[0, 10], [1, np.nan], [2, np.nan], [10, 20], [11, 21], [12, 22], [20, 30], [21, 31],
         [22, 32]],
        dtype=float,
    )  # fmt: skip
    keys = MixedKeys.build(numeric=x)
    labels = heterogeneous_groups(keys, 3)
    groups = sorted(sorted(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels))
    assert groups == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    released = group_representatives(keys, labels, 3).numeric
    np.testing.assert_array_equal(released[:, 1], [18.25, np.nan, np.nan, *[18.25] * 3, 31, 31, 31])
    np.testing.assert_array_equal(released[:, 0], [6, 6, 6, 6, 6, 6, 21, 21, 21])
    # fewer than k values in the file: nothing can mask them (a mean of two lets each of
    # its records read the other's), refused; so is one alone
    with pytest.raises(DataError, match="values on 2 records only, fewer than k = 5"):
        group_representatives(MixedKeys.build(numeric=x[:, 1:][[0, 3]]), np.zeros(2, int), 5)
    with pytest.raises(DataError, match="one record only"):
        group_representatives(MixedKeys.build(numeric=x[:3, 1:]), np.zeros(3, int), 3)


@pytest.mark.parametrize("cell_size", [None, 60])
@pytest.mark.parametrize(("gaps_a", "gaps_b", "k"), [(0.0, 0.6, 5), (0.05, 0.3, 5), (0.5, 0.9, 3)])
def test_a_group_short_of_a_key_joins_whole_groups_and_gives_no_value_away(
    cell_size, gaps_a, gaps_b, k
):
    """A group holding a key on 2..k-1 records does not release their mean (each of two
    would read the other's value exactly); averaging with the records nearest the group
    would read it to a few units where the two are hundreds apart, and a value lent to two
    averages is read by difference. Whole groups are joined in disjoint sets: each set is
    whole groups, k or more holders, their mean; and the partner read from the mean misses
    by more than a full group's own read does (a full group's members are its nearest; the
    joined groups' mean is not the short group's)."""
    rng = np.random.default_rng(3)
    n = 2000
    x = np.c_[rng.normal(50, 10, n), rng.normal(0, 1000, n)]
    x[rng.random(n) < gaps_a, 0] = np.nan
    x[rng.random(n) < gaps_b, 1] = np.nan
    keys = MixedKeys.build(numeric=x)
    labels, released = _released(keys, k, cell_size)
    for j in range(2):
        _sets(x[:, j], released[:, j], labels, k)
    (short_miss, short_gap, full_miss, _), pairs = _pair_reads(
        x[:, 1], released[:, 1], labels, k, other=~np.isnan(x[:, 0])
    )
    if gaps_a >= 0.5:
        return  # nearly every group shares no other key: joined on b alone (README)
    assert pairs >= 5
    # before: 0 (the other's value exactly); the records nearest: 2.5 where the gap was 896
    assert short_miss > 0.5 * short_gap and short_miss > full_miss


@pytest.mark.parametrize("k", [3, 5])
def test_the_partner_is_read_no_better_than_a_full_groups_member(k):
    """Groups are joined ranked on the other keys, never the key itself: ranked with it,
    partners' mean of it lies near the short group's, so a pair's partner is read to 0.17
    of the gap (0.29 at k = 5) where a full group's member is read to 0.54 (0.61): three
    keys, half of each missing. Ranked on the other keys only, the read misses by more
    than a full group's. A set being one unit for every key, a group short of two keys
    joined for one and ranked on the other would get that other's set mean near its own
    (0.31 of the gap at k = 3, 0.44 unless a set already full is taken last); a unit does
    not rank on a key it holds on one or two records (3.26 against 0.72; k = 5: 3.88
    against 0.76)."""
    rng = np.random.default_rng(0)
    n = 4000
    x = rng.normal(size=(n, 3)) * [10, 100, 1000]
    x[rng.random((n, 3)) < 0.5] = np.nan
    keys = MixedKeys.build(numeric=x)
    labels = heterogeneous_groups(keys, k)
    released = group_representatives(keys, labels, k).numeric
    _sets(x[:, 2], released[:, 2], labels, k)
    other = ~np.isnan(x[:, :2]).all(axis=1)
    (short_miss, short_gap, full_miss, full_gap), pairs = _pair_reads(
        x[:, 2], released[:, 2], labels, k, other=other
    )
    assert pairs >= 20
    assert short_miss / short_gap > full_miss / full_gap


@pytest.mark.parametrize("cell_size", [None, 600])
def test_a_key_the_others_determine_gives_no_lone_value_back(cell_size):
    """With ``total = a + b`` in the data (not declared as a rule), a group joined for
    ``a`` that kept its own means of ``b`` and ``total`` would release ``total - b`` as its
    mean of ``a``, and the set's mean of ``a`` would give the short group's sum by
    difference (lone values read to rounding). A set is one unit for every numeric key, so within it
    no record releases a mean of its own group: that attack needs two (``blocks``). The
    relation still gives away the own ``total - b`` of a record lacking ``a`` (the holders
    of the keys differ): a release refuses it undeclared (tests/test_relations.py)."""
    rng = np.random.default_rng(1)
    n, k = 3000, 5
    a, b = rng.normal(100, 20, n), rng.normal(50, 10, n)
    x = np.c_[a, b, a + b]
    x[rng.random(n) < 0.3, 0] = np.nan
    keys = MixedKeys.build(numeric=x)
    labels, released = _released(keys, k, cell_size)
    sets = _sets(x[:, 0], released[:, 0], labels, k)
    joined = 0
    for members in sets:
        rows = np.flatnonzero(np.isin(labels, labels[members]))  # the whole groups
        blocks = np.unique(released[rows][:, 1:], axis=0)  # (b, total) as released
        joined += np.unique(labels[rows]).size > 1
        assert blocks.shape[0] == 1
        # the one block: its mean of total - b is the set's, not a group's
        assert blocks[0, 1] - blocks[0, 0] == pytest.approx(x[rows, 2].mean() - x[rows, 1].mean())
    assert joined >= 20  # sets of several groups were formed, and read nothing
    for j in range(3):
        _sets(x[:, j], released[:, j], labels, k)


@pytest.mark.parametrize("cell_size", [None, 1000])
def test_a_sparse_key_does_not_pile_its_groups_into_one_set(cell_size):
    """A set already joined and holding k comes after the units near enough, so no set
    holds 2k: joining the nearest set holding the key whatever it holds, a key held by 40
    of 5000 records would make sets of 15, 12, 8 and 5 holders (and, a set being one unit
    for every key, average the dense keys over 75 records)."""
    rng = np.random.default_rng(0)
    n, k = 5000, 5
    x = rng.normal(size=(n, 3))
    x[rng.permutation(n)[40:], 2] = np.nan
    labels, released = _released(MixedKeys.build(numeric=x), k, cell_size)
    holders = [m.size for m in _sets(x[:, 2], released[:, 2], labels, k)]
    assert sum(holders) == 40 and max(holders) < 2 * k


@pytest.mark.flow
def test_a_release_publishes_no_value_of_a_sparse_key_as_it_was(tmp_path, prefect_api, capsys):
    import yaml
    from errorline import cli_error

    from sdcflow.cli.main import main
    from sdcflow.errors import Reason

    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {"a": np.round(rng.normal(50, 10, n), 1), "b": np.round(rng.normal(1000, 100, n), 2)}
    )
    frame.loc[rng.random(n) < 0.9, "b"] = np.nan
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "s",
        "source": "data.csv",
        "quasi_identifiers": ["a", "b"],
        "missing_values": [""],
        "method": {"name": "mdav", "k": 5},
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0
    out = pd.read_parquet(tmp_path / "published" / "s" / "data.parquet")
    has = out["b"].notna()
    assert has.sum() <= frame["b"].notna().sum()
    # before: every present b was a raw b (each group held one); now none is
    assert not np.isin(out.loc[has, "b"].to_numpy(), frame["b"].dropna().to_numpy()).any()
    # a key with one value in the file cannot be masked: refused, named, nothing published
    frame["b"] = np.nan
    frame.loc[7, "b"] = 123.45
    frame.to_csv(tmp_path / "data.csv", index=False)
    capsys.readouterr()
    assert main(["release", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err) == (Reason.TOO_FEW_RECORDS, "b")
    # nor with fewer than k values in the file, even all in one group, where no value is
    # alone: their mean lets each of the records read the others' sum
    frame.loc[[3, 11, 19], "b"] = [98.5, 101.25, 99.0]  # 4 values with 123.45
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(tmp_path / "release.yaml")]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.TOO_FEW_RECORDS, "b")
    assert "values on 4 records only, fewer than k = 5" in err
    assert not any(v in err for v in ("98.5", "101.25", "123.45"))


@pytest.mark.parametrize("cell_size", [None, 40])
def test_a_lone_value_in_a_stratum_is_not_published_and_k_holds(cell_size):
    """A stratum holding one value of a numeric key (the file holds 81): its group mixes that
    record with records missing the key, so releasing the value would set the record apart
    from its group's identical rows. The key is blanked for the group, the release is not
    refused, and k over identical released rows holds."""
    from sdcflow.methods import get_method
    from sdcflow.methods.keys import Key

    rng = np.random.default_rng(1)
    n = 200
    b = rng.normal(1000, 100, n)
    b[100:] = np.nan
    b[150] = 1234.5  # stratum S holds one b; stratum N most of the others
    b[rng.choice(100, 20, replace=False)] = np.nan
    frame = pd.DataFrame({"region": ["N"] * 100 + ["S"] * 100, "a": rng.normal(50, 10, n), "b": b})
    keys = [Key("region", "nominal"), Key("a", "numeric"), Key("b", "numeric")]
    params = get_method("mdav").params.model_validate(
        {"name": "mdav", "k": 5, "cell_size": cell_size}
    )
    masked = mask_keys(frame, keys, params, np.random.default_rng(0)).masked
    released = masked["b"].to_numpy()
    assert not np.isin(1234.5, released)
    assert np.isnan(released[np.isnan(b)]).all()  # every gap stays a gap
    assert k_anonymity(masked[["region", "a", "b"]]) >= 5


@pytest.mark.parametrize("u", [10, 200, 3000])
def test_groups_sharing_no_other_key_pair_among_themselves(u):
    """Units sharing no other key with any do not all join one set, also past 128 units,
    where the KD-tree's shortlist (such a unit stands at every key's mean) would give them
    all the same 32 candidates. Each set that takes in a short unit holds k values, and
    none grows past the units needed."""
    rng = np.random.default_rng(1)
    for k in (2, 3, 5):
        units = np.repeat(np.arange(u), 3)
        held = rng.random(units.size) < 0.15
        others = _Distances(np.full((units.size, 1), np.nan), 1, np.zeros((units.size, 0), int))
        sets, reached = short_group_sets(units, held, np.ones(u, bool), others, k)
        count = np.bincount(units[held], minlength=u)
        total = np.bincount(sets, weights=count, minlength=u)
        used = sets[count > 0]
        assert (total[used] >= k).all() == bool(reached[count > 0].all())
        # units with a value: at most 2k in a set (the last short ones join a full set)
        assert np.bincount(used).max() <= 2 * k and total[used].max() <= 3 * k


@pytest.mark.parametrize("decimals", [None, 0])
def test_a_complete_stratums_group_joined_to_a_short_one_stays_on_the_rules(decimals):
    """Stratum Y holds a on one record; its group joins groups of stratum X, which has no
    gap and is masked (on the rules) by the method; their a becomes the set's mean, so the
    joined groups are moved back onto total == a + b and b <= a like the partial strata's."""
    from sdcflow.core.linear.constraints import LinearConstraints
    from sdcflow.methods.keys import Key
    from sdcflow.methods.microaggregation import MdavParams

    rng = np.random.default_rng(1)
    n = 60
    a = rng.uniform(100, 200, n)
    b = a - rng.uniform(0, 3, n)
    frame = pd.DataFrame({"c": ["X"] * 50 + ["Y"] * 10, "a": a, "b": b, "total": a + b})
    frame.loc[50, ["a", "b", "total"]] = [20.0, 15.0, 35.0]
    frame.loc[51:59, "a"] = np.nan
    cols = ["a", "b", "total"]
    rules = LinearConstraints.from_rows(
        [
            ("sum", [({"total": 1.0, "a": -1.0, "b": -1.0}, 0.0)], []),
            ("b_le_a", [], [({"b": 1.0, "a": -1.0}, 0.0)]),
        ],
        cols,
    )
    keys = [Key("c", "nominal")] + [Key(c, "numeric", decimals=decimals) for c in cols]
    masked = mask_keys(frame, keys, MdavParams(k=3), np.random.default_rng(0), rules).masked
    assert masked.loc[50, "a"] != 20.0  # the lone a was joined, not published
    full = masked.dropna()
    assert ((full["total"] - full["a"] - full["b"]).abs() <= 1e-6).all()
    assert (full["b"] <= full["a"] + 1e-9).all()


@pytest.mark.parametrize("cell_size", [None, 10])
def test_a_key_with_one_value_in_the_file_is_refused_by_its_name(cell_size):
    """The message and the error's field name the column (never its value), not "a
    numeric key"."""
    X = np.column_stack([np.arange(20.0), np.full(20, np.nan)])
    X[7, 1] = 123456.0
    params = METHODS["heterogeneous"].params.model_validate(
        {"name": "heterogeneous", "k": 3, "cell_size": cell_size}
    )
    with pytest.raises(DataError, match="numeric key income has a value on one record") as e:
        METHODS["heterogeneous"].mask(
            X, ["turnover", "income"], params, np.random.default_rng(0), None
        )
    assert e.value.field == "income" and "123456" not in str(e.value)


@pytest.mark.parametrize("cell_size", [None, 200])
def test_whole_numbers_with_gaps_are_grouped_alike_in_either_memory_layout(cell_size):
    # numpy sums a column of a row-major array in another order than a column-major one;
    # whole numbers tie often, and the z-scores' last bits decided the ties: the in-memory
    # path (the file column-major) and a streamed piece (row-major) published other groups
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [
            np.floor(rng.lognormal(0, 1.6, 1500)),
            rng.integers(0, 90, 1500),
            rng.integers(0, 60, 1500),
        ]
    ).astype(np.float64)
    X[rng.random(X.shape) < 0.02] = np.nan
    keys = MixedKeys.build(numeric=np.ascontiguousarray(X))
    by_rows = (
        heterogeneous_groups(keys, 5)
        if cell_size is None
        else heterogeneous_cells(keys, 5, cell_size)
    )
    keys = MixedKeys.build(numeric=np.asfortranarray(X))
    by_columns = (
        heterogeneous_groups(keys, 5)
        if cell_size is None
        else heterogeneous_cells(keys, 5, cell_size)
    )
    np.testing.assert_array_equal(by_rows, by_columns)
