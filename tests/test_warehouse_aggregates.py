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
