"""Reading a release's source file, and its profile (types and counts, never values)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from sdcflow.errors import InputError, Reason
from sdcflow.warehouse.sql import quote_identifier


def read_source(source: Path) -> pa.Table:
    """Read a CSV or Parquet file with DuckDB's readers, rejecting what cannot be trusted.

    Raises ``InputError`` for a missing, empty, corrupt or unsupported file and for duplicate
    column names (DuckDB would silently rename them, and the spec could then address the
    wrong column).
    """
    source = Path(source)
    if source.is_dir():
        raise InputError(
            f"source {source} is a folder; name a CSV or Parquet file", code=Reason.SOURCE_MISSING
        )
    if not source.is_file():
        raise InputError(
            f"source file {source} does not exist; check `source:` in the spec",
            code=Reason.SOURCE_MISSING,
        )
    suffix = source.suffix.lower()
    if suffix not in {".csv", ".parquet", ".pq"}:
        raise InputError(
            f"source {source}: unsupported format {suffix!r}; use .csv or .parquet",
            code=Reason.SOURCE_FORMAT,
        )
    if source.stat().st_size == 0:
        raise InputError(
            f"source file {source} is empty; it needs a header and records",
            code=Reason.SOURCE_EMPTY,
        )
    header = _header(source, suffix)
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise InputError(
            f"source {source} has duplicate column names {dupes}; rename them",
            code=Reason.SOURCE_COLUMNS,
        )
    reader = "read_csv(?, header=true)" if suffix == ".csv" else "read_parquet(?)"
    con = duckdb.connect(":memory:")
    try:
        data = con.sql(f"SELECT * FROM {reader}", params=[str(source)]).to_arrow_table()
    except duckdb.Error as e:
        first = str(e).splitlines()[0]
        raise InputError(
            f"cannot read {source}: {first}; check that it is valid {suffix}",
            code=Reason.SOURCE_FORMAT,
        ) from e
    finally:
        con.close()
    if data.num_rows == 0:
        raise InputError(f"source file {source} has no records", code=Reason.SOURCE_EMPTY)
    return data


def _header(source: Path, suffix: str) -> list[str]:
    if suffix == ".csv":
        try:
            with source.open(encoding="utf-8", newline="") as fh:
                return next(csv.reader(fh), [])
        except UnicodeDecodeError as e:
            raise InputError(
                f"{source} is not UTF-8 text; convert it to UTF-8 CSV", code=Reason.SOURCE_FORMAT
            ) from e
    try:
        return list(pq.read_schema(source).names)
    except (pa.ArrowInvalid, OSError) as e:
        raise InputError(
            f"cannot read {source}: not a valid Parquet file ({e})", code=Reason.SOURCE_FORMAT
        ) from e


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL")


def profile_table(data: pa.Table, columns: Sequence[str]) -> dict[str, Any]:
    """Column types, row count and per-column missing counts of a source read by
    :func:`read_source`.

    Returns ``{"rows": n, "types": {column: duckdb type}, "missing": {column: count},
    "nonfinite": {column: count of inf/NaN}}`` for the requested ``columns`` that exist
    (``types`` covers every column of the file). Counts only: no value leaves this function.
    """
    con = duckdb.connect(":memory:")
    try:
        con.register("src", data)
        types = {row[0]: row[1] for row in con.execute("DESCRIBE src").fetchall()}
        present = [c for c in columns if c in types]
        numeric = [c for c in present if is_numeric_type(types[c])]
        exprs = [f"count(*) - count({quote_identifier(c)})" for c in present] + [
            f"count_if(NOT isfinite(CAST({quote_identifier(c)} AS DOUBLE)))" for c in numeric
        ]
        counts = con.execute(f"SELECT {', '.join(['count(*)', *exprs])} FROM src").fetchone()
    finally:
        con.close()
    missing = counts[1 : 1 + len(present)]
    nonfinite = counts[1 + len(present) :]
    return {
        "rows": int(counts[0]),
        "types": types,
        "missing": {c: int(v) for c, v in zip(present, missing, strict=True)},
        "nonfinite": {c: int(v) for c, v in zip(numeric, nonfinite, strict=True)},
    }


def is_numeric_type(duckdb_type: str) -> bool:
    """Whether a DuckDB type name (``DESCRIBE`` output) is an integer, float or decimal type."""
    return duckdb_type.upper().startswith(_NUMERIC)
