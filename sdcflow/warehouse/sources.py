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


def read_source(source: Path, missing_values: Sequence[str] | None = None) -> pa.Table:
    """Read a CSV or Parquet file with DuckDB's readers, rejecting what cannot be trusted.

    ``missing_values`` are tokens read as missing (NULL) in every column: for CSV before the
    column types are detected (so ``?`` in a column of numbers leaves it numeric), for
    Parquet in its text columns. An empty CSV cell is always missing.

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
    tokens = sorted({"", *missing_values}) if missing_values else None
    if suffix == ".csv":
        reader = "read_csv(?, header=true, nullstr=?)" if tokens else "read_csv(?, header=true)"
        params: list[Any] = [str(source), tokens] if tokens else [str(source)]
    else:
        reader, params = "read_parquet(?)", [str(source)]
    con = duckdb.connect(":memory:")
    try:
        data = con.sql(f"SELECT * FROM {reader}", params=params).to_arrow_table()
        if tokens and suffix != ".csv":
            data = _null_tokens(con, data, tokens)
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


def _null_tokens(con: duckdb.DuckDBPyConnection, data: pa.Table, tokens: list[str]) -> pa.Table:
    """The text columns of ``data`` with every value equal to a token set to NULL."""
    con.register("src", data)
    types = {row[0]: row[1] for row in con.execute("DESCRIBE src").fetchall()}
    exprs = [
        f"CASE WHEN {quote_identifier(c)} IN (SELECT unnest(?)) THEN NULL "
        f"ELSE {quote_identifier(c)} END AS {quote_identifier(c)}"
        if t == "VARCHAR"
        else quote_identifier(c)
        for c, t in types.items()
    ]
    n_text = sum(1 for t in types.values() if t == "VARCHAR")
    out = con.sql(f"SELECT {', '.join(exprs)} FROM src", params=[tokens] * n_text).to_arrow_table()
    con.unregister("src")
    return out


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
_UNSIGNED = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")
_INTEGER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", *_UNSIGNED)
_TEXT = ("VARCHAR", "BOOLEAN", "ENUM")
_TEMPORAL = ("DATE", "TIME", "TIMESTAMP")


def profile_table(data: pa.Table, columns: Sequence[str]) -> dict[str, Any]:
    """Column types, row count and per-column missing counts of a source read by
    :func:`read_source`.

    Returns ``{"rows": n, "types": {column: duckdb type}, "missing": {column: count},
    "nonfinite": {column: count of inf/NaN}, "numeric_text": {column: count}}`` for the
    requested ``columns`` that exist (``types`` covers every column of the file);
    ``numeric_text`` counts, in the text columns, the values that read as numbers (a column
    of numbers with an undeclared missing-value token reads as text). Counts only: no value
    leaves this function.
    """
    con = duckdb.connect(":memory:")
    try:
        con.register("src", data)
        types = {row[0]: row[1] for row in con.execute("DESCRIBE src").fetchall()}
        present = [c for c in columns if c in types]
        numeric = [c for c in present if is_numeric_type(types[c])]
        text = [c for c in present if types[c] == "VARCHAR"]
        exprs = (
            [f"count(*) - count({quote_identifier(c)})" for c in present]
            + [f"count_if(NOT isfinite(CAST({quote_identifier(c)} AS DOUBLE)))" for c in numeric]
            + [f"count(TRY_CAST({quote_identifier(c)} AS DOUBLE))" for c in text]
        )
        counts = con.execute(f"SELECT {', '.join(['count(*)', *exprs])} FROM src").fetchone()
    finally:
        con.close()
    missing = counts[1 : 1 + len(present)]
    nonfinite = counts[1 + len(present) : 1 + len(present) + len(numeric)]
    numeric_text = counts[1 + len(present) + len(numeric) :]
    return {
        "rows": int(counts[0]),
        "types": types,
        "missing": {c: int(v) for c, v in zip(present, missing, strict=True)},
        "nonfinite": {c: int(v) for c, v in zip(numeric, nonfinite, strict=True)},
        "numeric_text": {c: int(v) for c, v in zip(text, numeric_text, strict=True)},
    }


def is_numeric_type(duckdb_type: str) -> bool:
    """Whether a DuckDB type name (``DESCRIBE`` output) is an integer (signed or unsigned),
    float or decimal type."""
    t = duckdb_type.upper()
    if "[" in t:  # a list or array of numbers is not a number
        return False
    return t.startswith(_NUMERIC + _UNSIGNED)


def is_integer_type(duckdb_type: str) -> bool:
    """Whether a DuckDB type name is an integer type (signed or unsigned)."""
    return duckdb_type.upper() in _INTEGER


def key_kind(duckdb_type: str) -> str | None:
    """The kind of key a column of this DuckDB type is by default: ``numeric``, ``nominal``
    (text, booleans, enums), ``ordinal`` (dates and times, in time order), ``missing`` (a
    column of nothing but missing values, typed NULL) or None (lists, structs, blobs...: not
    usable as a key)."""
    t = duckdb_type.upper()
    if is_numeric_type(t):
        return "numeric"
    if "[" in t:
        return None
    if t.startswith(_TEXT):
        return "nominal"
    if t.startswith(_TEMPORAL):
        return "ordinal"
    if t.strip('"') == "NULL":
        return "missing"
    return None
