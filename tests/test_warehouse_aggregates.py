"""The gates' figures as aggregations in the warehouse (issue 45, step 2 of
``docs/concepts/scale.md``): k-anonymity by ``GROUP BY`` over the released keys and IL by
sums over the raw and released tables joined on the row id give the core's figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.core.measures.information_loss import sse_sst_loss_present
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

RUN = "b" * 32


def _warehouse(tmp_path, **tables: pd.DataFrame) -> Warehouse:
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    for schema, frame in tables.items():
        wh.write_frame(schema, RUN, frame)
    return wh


def test_k_by_group_by_is_the_cores_k_with_missing_values_as_values(tmp_path):
    """Identical released rows, a missing number or category a value of its own: the
    smallest class, the classes and the records below k as the core counts them."""
    rng = np.random.default_rng(0)
    n = 4000
    x = rng.integers(0, 6, n).astype(np.float64)
    x[rng.random(n) < 0.05] = np.nan
    region = rng.choice(np.array(["N", "S", "E"], dtype=object), n)
    region[rng.random(n) < 0.03] = None
    frame = pd.DataFrame({"x": x, "y": rng.integers(0, 3, n), "region": region})
    frame[ROW_ID] = np.arange(n)
    wh = _warehouse(tmp_path, masked=frame)
    keys = ["x", "y", "region"]
    figures = wh.k_figures("masked", RUN, keys, k=5)
    codes = frame[keys].astype(object).where(frame[keys].notna(), "<missing>")
    sizes = codes.groupby(keys, dropna=False).size()
    assert figures["k"] == k_anonymity(frame[keys]) == sizes.min()
    assert figures["classes"] == len(sizes)
    assert figures["records_below_k"] == int(sizes[sizes < 5].sum()) > 0
    assert "records_below_k" not in wh.k_figures("masked", RUN, keys)


def test_k_of_an_empty_release_is_zero(tmp_path):
    frame = pd.DataFrame({"x": np.zeros(0), ROW_ID: np.zeros(0, dtype=np.int64)})
    wh = _warehouse(tmp_path, masked=frame)
    assert wh.k_figures("masked", RUN, ["x"], k=3) == {
        "k": 0,
        "classes": 0,
        "records_below_k": 0,
    }


@pytest.mark.parametrize("missing", [0.0, 0.08])
def test_il_by_sums_is_the_cores_sse_over_sst(tmp_path, missing):
    """Group means of standard-normal keys (a microaggregation), a constant column (no
    SST), with and without missing values in either file, in shuffled row order."""
    rng = np.random.default_rng(1)
    n, d = 5000, 4
    X = rng.standard_normal((n, d)) * [1.0, 100.0, 1e-3, 1.0] + [0.0, 5e3, 0.0, 0.0]
    X[:, 3] = 7.0
    labels = rng.integers(0, n // 5, n)
    P = pd.DataFrame(X).groupby(labels).transform("mean").to_numpy().copy()
    if missing:
        X[rng.random((n, d)) < missing] = np.nan
        P[rng.random((n, d)) < missing / 2] = np.nan
    columns = [f"x{j}" for j in range(d)]
    order = rng.permutation(n)  # the tables' storage order does not matter: the join does
    raw = pd.DataFrame(X, columns=columns).assign(**{ROW_ID: np.arange(n)}).iloc[order]
    masked = pd.DataFrame(P, columns=columns).assign(**{ROW_ID: np.arange(n)})
    wh = _warehouse(tmp_path, raw=raw, masked=masked)
    il = wh.information_loss("raw", "masked", RUN, columns)
    assert il == pytest.approx(sse_sst_loss_present(X, P), rel=1e-11)
    assert 0.0 < il < 100.0
    assert wh.information_loss("raw", "masked", RUN, []) == 0.0


def _inside(X: np.ndarray, ids: np.ndarray, cuts, columns) -> np.ndarray:
    """Which records satisfy every cut ``(column, value, row id, upper)``."""
    mask = np.ones(len(ids), dtype=bool)
    for column, value, row, upper in cuts:
        x = X[:, columns.index(column)]
        above = (x > value) | ((x == value) & (ids >= row))
        mask &= above if upper else ~above
    return mask


@pytest.mark.parametrize(("n", "size"), [(5000, 300), (4097, 1000), (10, 20)])
def test_median_cells_in_duckdb_cut_as_spatial_cells_does(tmp_path, n, size):
    """The cells found by queries (the flow holds the cuts, never the table) are a partition
    of the records into the cell sizes of ``spatial_cells`` in its order, each cut at the
    median rank (the lower half ``count // 2`` records) along the column of largest
    variance on the working scale. Not the same records as ``spatial_cells``: on the
    standardized scale the first cut's variances are all 1 up to rounding, and which column
    wins is the rounding's choice in either implementation."""
    from sdcflow.core.microaggregation.neighbours import spatial_cells
    from sdcflow.core.microaggregation.scaling import working_scale
    from sdcflow.warehouse.warehouse import cell_condition

    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 3)) * [1.0, 50.0, 0.01] + [0.0, 1e4, 3.0]
    X[:, 2] += 0.008 * X[:, 0]  # correlated keys: the variances differ inside the cells
    columns = ["a", "b", "c"]
    ids = np.arange(n)
    frame = pd.DataFrame(X, columns=columns).assign(**{ROW_ID: ids})
    wh = _warehouse(tmp_path, raw=frame.iloc[rng.permutation(n)])
    cells = wh.median_cells("raw", RUN, columns, size)
    found = []
    with wh.connect(read_only=True) as con:
        for cuts in cells:
            where, params = cell_condition(cuts)
            rows = con.execute(f'SELECT {ROW_ID} FROM raw."run_{RUN}" WHERE {where}', params)
            found.append({int(r[0]) for r in rows.fetchall()})
    assert sum(map(len, found)) == n and len(set().union(*found)) == n  # a partition
    _, bounds = spatial_cells(working_scale(X, True), size)
    assert [len(c) for c in found] == np.diff(bounds).tolist()
    for cuts, cell in zip(cells, found, strict=True):
        assert np.flatnonzero(_inside(X, ids, cuts, columns)).tolist() == sorted(cell)
    Z = working_scale(X, True)
    for cuts in cells:
        for i, (column, _, _, _) in enumerate(cuts):
            node = _inside(X, ids, cuts[:i], columns)
            lower = node & _inside(X, ids, [(*cuts[i][:3], False)], columns)
            assert lower.sum() == node.sum() // 2
            var = Z[node].var(axis=0)
            assert var[columns.index(column)] >= var.max() * (1 - 1e-9)
