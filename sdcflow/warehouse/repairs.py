"""The repaired table of a release whose records stay in the warehouse: the numeric keys of
``raw.run_<id>`` read in row-id ranges, and ``edited.run_<id>`` created from ``raw`` and the
records a repair moved (:func:`~sdcflow.tasks.edits.repair_streamed` decides the moves).

The process reading the ranges holds one range of the repaired columns at a time; the moved
records go to a temporary table of the connection (DuckDB spills it under its memory
limit), and one ``CREATE TABLE ... AS SELECT`` joins them to ``raw``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence

import duckdb
import numpy as np
import pyarrow as pa

from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, _quoted, table_name

#: The temporary table of the moved records (row id and the repaired columns).
_MOVED = "sdc_moved_records"


def numeric_ranges(
    con: duckdb.DuckDBPyConnection, run_id: str, columns: Sequence[str], rows: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The ``columns`` of ``raw.run_<id>`` in row-id ranges of ``rows`` ids: each as (row
    ids (m,) int64, values (m, d) float64, NaN where missing), in row-id order, the values
    as :meth:`~sdcflow.warehouse.warehouse.Warehouse.read_frame` gives them to the in-memory
    repair (``to_numpy(float64)`` of DuckDB's frame)."""
    table = table_name("raw", run_id)
    top = con.execute(f"SELECT max({ROW_ID}) FROM {table}").fetchone()[0]
    names = ", ".join(_quoted(c) for c in columns)
    for lo in range(0, 0 if top is None else int(top) + 1, rows):
        frame = con.execute(
            f"SELECT {ROW_ID}, {names} FROM {table} WHERE {ROW_ID} >= ? AND {ROW_ID} < ? "
            f"ORDER BY {ROW_ID}",
            [lo, lo + rows],
        ).df()
        ids = frame.pop(ROW_ID).to_numpy(np.int64)
        yield ids, frame.to_numpy(dtype=np.float64, na_value=np.nan)
        del frame


def store_edited(
    wh: Warehouse,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    columns: Sequence[str],
    moved: Iterable[tuple[np.ndarray, np.ndarray]],
) -> str:
    """Create ``edited.run_<id>``: ``raw.run_<id>`` with ``columns`` as doubles (as the
    in-memory repair stores them), the records of ``moved`` -- pairs of row ids (m,) and
    their repaired values (m, d), NaN where missing -- taking their repaired values; record
    it for retention and return its name. ``moved`` is consumed while it is written, so it
    may read ``con`` between its pairs."""
    table = table_name("raw", run_id)
    quoted = [_quoted(c) for c in columns]
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {_MOVED} ({ROW_ID} BIGINT, "
        + ", ".join(f"{q} DOUBLE" for q in quoted)
        + ")"
    )
    try:
        for ids, values in moved:
            if not len(ids):
                continue
            batch = pa.table(
                {
                    ROW_ID: pa.array(np.asarray(ids, dtype=np.int64)),
                    # NaN is a missing value: NULL, as DuckDB stores pandas' NaN
                    **{
                        f"v{j}": pa.array(values[:, j], from_pandas=True)
                        for j in range(len(columns))
                    },
                }
            )
            con.register("sdc_moved_batch", batch)
            try:
                con.execute(f"INSERT INTO {_MOVED} SELECT * FROM sdc_moved_batch")
            finally:
                con.unregister("sdc_moved_batch")
        replaced = ", ".join(
            f"CASE WHEN f.{ROW_ID} IS NULL THEN CAST(r.{q} AS DOUBLE) ELSE f.{q} END AS {q}"
            for q in quoted
        )
        return wh.create_recorded(
            con,
            "edited",
            run_id,
            f"SELECT r.* REPLACE ({replaced}) FROM {table} r "
            f"LEFT JOIN {_MOVED} f ON r.{ROW_ID} = f.{ROW_ID} ORDER BY r.{ROW_ID}",
        )
    finally:
        with contextlib.suppress(duckdb.Error):  # a temporary table: gone with the connection
            con.execute(f"DROP TABLE IF EXISTS {_MOVED}")


__all__ = ["numeric_ranges", "store_edited"]
