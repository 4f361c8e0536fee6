"""The warehouse side of the streamed mask (``docs/concepts/scale.md``, "The mask in pieces"):
the categorical combinations' counts, the pieces written as Parquet files by DuckDB, and the
masked pieces loaded back beside the unchanged columns of ``raw``, all in DuckDB: the
calling process holds the combinations and the cuts, never the records."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, _quoted, table_name

#: The piece of every record, in the table :func:`write_pieces` builds (and drops).
PIECE = "sdc_piece"
#: The per-key flag "released blank" of a categorical key ``j``: ``sdc_blank_<j>``.
BLANK = "sdc_blank_{}"
_COMBO, _RANK = "sdc_combo", "sdc_rank"


@dataclass(frozen=True)
class Piece:
    """One piece written by :func:`write_pieces`: its number, its records, its folder (the
    Parquet files DuckDB wrote for it) and the stratum it belongs to."""

    number: int
    records: int
    path: Path
    stratum: int


def combinations(wh: Warehouse, schema: str, run_id: str, columns: Sequence[str]) -> pa.Table:
    """The distinct combinations of ``columns`` with their counts (column ``sdc_count``),
    a missing value a value of its own (``GROUP BY`` groups NULLs together)."""
    names = ", ".join(_quoted(c) for c in columns)
    with wh.connect(read_only=True) as con:
        return con.sql(
            f"SELECT {names}, count(*) AS sdc_count FROM {table_name(schema, run_id)} GROUP BY ALL"
        ).to_arrow_table()


def write_pieces(
    wh: Warehouse,
    schema: str,
    run_id: str,
    numeric: Sequence[str],
    categorical: Sequence[str],
    combos: pa.Table | None,
    runs: pa.Table | None,
    bound: int,
    folder: Path,
) -> list[Piece]:
    """Write every piece's records as Parquet under ``folder / "pieces"``, one DuckDB
    ``COPY ... PARTITION_BY`` pass over the table.

    A record's stratum comes from ``runs``: its combination (``combos``: the categorical
    columns and ``sdc_combo``, joined with a missing value equal to a missing value) and its
    rank among that combination's records in row-id order (``sdc_combo``, ``lo``, ``hi``,
    ``stratum`` and the flags ``sdc_blank_<j>``: ranks lo..hi of the combination are in
    ``stratum``, its key j released blank where the flag is set). Without categorical keys
    the table is one stratum. A stratum of more than ``bound`` records is cut, as
    :func:`~sdcflow.core.microaggregation.neighbours.spatial_cells` cuts cells, at the median
    record (by value then row id, a missing value above every value) of the numeric key of
    largest variance on the stratum's standardized scale, until no piece holds more than
    ``bound``: one query for the variances and three linear scans for the median record per
    cut, all over the piece's records only (:func:`_median`).

    Returns the pieces by number (0..P-1)."""
    table = table_name(schema, run_id)
    work = f"masked.sdc_pieces_{run_id}"
    cols = [ROW_ID, *numeric, *categorical]
    select = ", ".join(f"r.{_quoted(c)}" for c in cols)
    out = folder / "pieces"
    with wh.connect() as con:
        try:
            if combos is None or runs is None:
                con.execute(
                    f"CREATE OR REPLACE TABLE {work} AS SELECT {select}, 0 AS {PIECE} "
                    f"FROM {table} r"
                )
            else:
                con.register("sdc_combos", combos)
                con.register("sdc_runs", runs)
                on = " AND ".join(
                    f"r.{_quoted(c)} IS NOT DISTINCT FROM c.{_quoted(c)}" for c in categorical
                )
                flags = ", ".join(f"u.{BLANK.format(j)}" for j in range(len(categorical)))
                con.execute(
                    f"CREATE OR REPLACE TABLE {work} AS "
                    f"WITH a AS (SELECT {select}, c.{_COMBO}, row_number() OVER "
                    f"(PARTITION BY c.{_COMBO} ORDER BY r.{ROW_ID}) - 1 AS {_RANK} "
                    f"FROM {table} r JOIN sdc_combos c ON {on}) "
                    f"SELECT a.* EXCLUDE ({_COMBO}, {_RANK}), {flags}, u.stratum AS {PIECE} "
                    f"FROM a JOIN sdc_runs u ON a.{_COMBO} = u.{_COMBO} "
                    f"AND a.{_RANK} BETWEEN u.lo AND u.hi"
                )
                con.unregister("sdc_combos")
                con.unregister("sdc_runs")
            counts = dict(
                con.execute(f"SELECT {PIECE}, count(*) FROM {work} GROUP BY ALL").fetchall()
            )
            stratum = {int(p): int(p) for p in counts}
            following = max(counts, default=-1) + 1
            todo = [int(p) for p, c in counts.items() if c > bound]
            scales: dict[int, np.ndarray] = {}
            while todo:
                p = todo.pop()
                if stratum[p] not in scales:  # before its first cut, p is the whole stratum
                    scales[stratum[p]] = _scale(con, work, numeric, p)
                n_upper = _cut(con, work, numeric, p, counts[p], scales[stratum[p]], following)
                counts[following], counts[p] = n_upper, counts[p] - n_upper
                stratum[following] = stratum[p]
                todo += [q for q in (p, following) if counts[q] > bound]
                following += 1
            if out.exists():
                shutil.rmtree(out)
            con.execute(
                f"COPY (SELECT * FROM {work}) TO '{out}' (FORMAT parquet, PARTITION_BY ({PIECE}))"
            )
        finally:
            con.execute(f"DROP TABLE IF EXISTS {work}")
    return [
        Piece(int(p), int(c), out / f"{PIECE}={int(p)}", stratum[int(p)])
        for p, c in sorted(counts.items())
    ]


def _scale(con: Any, work: str, numeric: Sequence[str], piece: int) -> np.ndarray:
    """The population sd of every numeric key over ``piece`` (1 where constant or empty):
    the working scale of :func:`~sdcflow.core.microaggregation.scaling.working_scale`."""
    sd = con.execute(
        "SELECT " + ", ".join(f"stddev_pop({_quoted(c)})" for c in numeric)
        + f" FROM {work} WHERE {PIECE} = ?",
        [piece],
    ).fetchall()[0]  # fmt: skip
    return np.array([float(v) if v else 1.0 for v in sd])


def _cut(
    con: Any,
    work: str,
    numeric: Sequence[str],
    piece: int,
    count: int,
    scale: np.ndarray,
    new: int,
) -> int:
    """Cut ``piece`` of ``count`` records at its median record along the numeric key of
    largest variance over ``scale`` squared (its stratum's); the upper half (the
    ``count - count // 2`` records from the median on) becomes piece ``new``. Returns the
    records of the upper half."""
    names = [_quoted(c) for c in numeric]
    figures = con.execute(
        "SELECT " + ", ".join(f"var_pop({q}), count({q})" for q in names)
        + f" FROM {work} WHERE {PIECE} = ?",
        [piece],
    ).fetchall()[0]  # fmt: skip
    var = np.array([float(v) if v is not None else 0.0 for v in figures[0::2]])
    j = int(np.argmax(var / scale**2))
    q, held, mid = names[j], int(figures[2 * j + 1]), count // 2
    value, row = _median(con, work, q, piece, mid, held)
    if value is None:  # the median record misses the key: the upper half, by row id
        above = f"({q} IS NULL AND {ROW_ID} >= ?)"
        params: list = [piece, row]
    else:
        above = f"({q} IS NULL OR {q} > ? OR ({q} = ? AND {ROW_ID} >= ?))"
        params = [piece, value, value, row]
    con.execute(f"UPDATE {work} SET {PIECE} = {new} WHERE {PIECE} = ? AND {above}", params)
    return count - mid


def _median(con: Any, work: str, q: str, piece: int, mid: int, held: int) -> tuple[Any, int]:
    """The record of rank ``mid`` (from 0) of ``piece`` by ``(q, row id)``, a missing value
    ranking above every value: its value and row id. Linear scans: the value by
    ``quantile_disc`` over the ``held`` values, then the records below it and tied with it
    counted, and the row id among the ties (a top-n sort of half the piece, ``ORDER BY ...
    OFFSET``, grows faster than the piece); that sort only where the quantile's index
    misses the rank (``held`` small) or the rank falls among the missing values."""
    where = f"{PIECE} = ?"
    if 0 < mid < held:
        (value,) = con.execute(
            f"SELECT quantile_disc({q}, ?) FROM {work} WHERE {where}",
            [mid / max(held - 1, 1), piece],
        ).fetchall()[0]
        below, tied = con.execute(
            f"SELECT count(*) FILTER (WHERE {q} < ?), count(*) FILTER (WHERE {q} = ?) "
            f"FROM {work} WHERE {where}",
            [value, value, piece],
        ).fetchall()[0]
        if below <= mid < below + tied:
            (row,) = con.execute(
                f"SELECT {ROW_ID} FROM {work} WHERE {where} AND {q} = ? "
                f"ORDER BY {ROW_ID} LIMIT 1 OFFSET {mid - below}",
                [piece, value],
            ).fetchall()[0]
            return value, int(row)
    value, row = con.execute(
        f"SELECT {q}, {ROW_ID} FROM {work} WHERE {where} "
        f"ORDER BY {q} NULLS LAST, {ROW_ID} LIMIT 1 OFFSET {mid}",
        [piece],
    ).fetchall()[0]
    return value, int(row)


def load_masked(
    wh: Warehouse,
    schema: str,
    run_id: str,
    parts: Path,
    keys: Sequence[tuple[str, str]],
    copied: Sequence[str],
) -> str:
    """Create ``masked.run_<id>`` from the masked pieces (``parts``: a folder of Parquet
    files holding the row id, the masked numeric keys and the categorical keys' blank
    flags) joined on the row id with the ``schema`` table's unchanged columns, in row-id
    order, and record it for retention: one ``CREATE TABLE ... AS SELECT`` in DuckDB.

    ``keys``: the released keys in order, each ``(name, how)``: ``"double"`` / ``"bigint"``
    a masked numeric key (as stored in the parts, or cast to integers), ``"blank:<j>"`` a
    categorical key taken from the table, blank where flag j is set. ``copied``: the
    columns published as they are (``keep``, ``sensitive``, the weights)."""
    table = table_name(schema, run_id)
    terms = []
    for name, how in keys:
        q = _quoted(name)
        if how == "double":
            terms.append(f"m.{q} AS {q}")
        elif how == "bigint":
            terms.append(f"CAST(m.{q} AS BIGINT) AS {q}")
        else:
            flag = BLANK.format(int(how.split(":")[1]))
            terms.append(f"CASE WHEN m.{flag} THEN NULL ELSE r.{q} END AS {q}")
    terms += [f"r.{_quoted(c)}" for c in copied]
    terms.append(f"r.{ROW_ID}")
    with wh.connect() as con:
        return wh.create_recorded(
            con,
            "masked",
            run_id,
            f"SELECT {', '.join(terms)} FROM read_parquet('{parts}/*.parquet') m "
            f"JOIN {table} r ON m.{ROW_ID} = r.{ROW_ID} ORDER BY r.{ROW_ID}",
        )


def sample_columns(wh: Warehouse, schema: str, run_id: str, columns: Sequence[str]) -> dict:
    """Each of ``columns`` of the ``schema`` table as ``read_frame`` reads it, on a sample:
    a missing value if the column has one (it decides pandas' type: an integer column with
    a NULL is read as floats) and up to 1000 values. Column name -> pandas Series."""
    out = {}
    table = table_name(schema, run_id)
    with wh.connect(read_only=True) as con:
        for c in columns:
            q = _quoted(c)
            rel = con.sql(
                f"(SELECT {q} FROM {table} WHERE {q} IS NULL LIMIT 1) UNION ALL "
                f"(SELECT {q} FROM {table} WHERE {q} IS NOT NULL LIMIT 1000)"
            )
            out[c] = rel.df()[c]
    return out
