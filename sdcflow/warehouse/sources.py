"""Reading a release's source file, and its profile (types and counts, never values)."""

from __future__ import annotations

import csv
import errno
import hashlib
import math
import os
import re
import stat
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from sdcflow.errors import InputError, Reason
from sdcflow.limits import MAX_SOURCE_COLUMNS, check_count
from sdcflow.warehouse.sql import quote_identifier
from sdcflow.warehouse.statistical import FORMATS, read_statistical


def read_source(
    source: Path,
    missing_values: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
    as_written: Collection[str] = (),
) -> pa.Table:
    """Read a CSV or Parquet file with DuckDB's readers, or an SPSS, Stata or SAS file with
    pyreadstat (:mod:`~sdcflow.warehouse.statistical`: value labels as the values),
    rejecting what cannot be trusted: :func:`open_source`, the whole table read into Arrow.

    ``missing_values`` are tokens read as missing (NULL) in every column: for CSV before the
    column types are detected (so ``?`` in a column of numbers leaves it numeric), for
    Parquet in its text columns. An empty CSV cell is always missing.

    Raises ``InputError`` for a missing, empty, corrupt or unsupported file and for duplicate
    column names (DuckDB would silently rename them, and the spec could then address the
    wrong column). Dates whose day and month cannot be told apart are refused in the
    ``columns`` given (every column when None): a column the release does not use is not
    published, whatever DuckDB made of it.

    ``as_written``: columns published unchanged (kept and sensitive ones). A CSV column of
    them that DuckDB types as numbers stays numbers only when every value is written as the
    published file writes it back (``12``, ``2.25``, ``1e+20``); else (``1.50``, ``1e3``,
    ``.5``, `` 5``, ``-0``) it is read as text and published as the file writes it.
    """
    return open_source(source, missing_values, columns, as_written).table()


#: Records per Arrow batch when a check streams a column (1 Mi: 8 MiB of a float column).
BATCH_ROWS = 1 << 20


class SourceData:
    """A source as the preflight decided to read it, without its records in memory (CSV and
    Parquet): the reader's SQL (:meth:`select_sql`: the file, its delimiter, NULL tokens and
    column types, one definition for every scan and for ingest), the column names and
    DuckDB types, and the record count. Statistical files (SPSS, Stata, SAS), and Parquet
    files holding durations (which Arrow restores, :func:`_restore_durations`), are held as
    the Arrow table read (``in_memory``).

    Each scan reads the file again through DuckDB (:meth:`attach`, :meth:`column`,
    :meth:`batches`): what a check holds is what it asks for, never the table.
    """

    def __init__(
        self,
        source: Path,
        *,
        reader: str = "",
        select: str = "*",
        types: dict[str, str] | None = None,
        rows: int = 0,
        table: pa.Table | None = None,
        delimiter: str = ",",
    ) -> None:
        self.path = Path(source)
        self._reader, self._select = reader, select
        self._table = table
        self.delimiter = delimiter
        if table is not None:
            con = duckdb.connect(":memory:")
            try:
                con.register("src", table)
                types = {r[0]: r[1] for r in con.execute("DESCRIBE src").fetchall()}
            finally:
                con.close()
            rows = table.num_rows
        self.types: dict[str, str] = dict(types or {})
        self.num_rows = int(rows)

    @property
    def in_memory(self) -> bool:
        """Whether the records are held here (an Arrow table) rather than read from the file."""
        return self._table is not None

    @property
    def column_names(self) -> list[str]:
        return list(self.types)

    @property
    def num_columns(self) -> int:
        return len(self.types)

    def select_sql(self, path: Path | None = None) -> str:
        """The reader as one SQL query over the file (``path``: a copy of it, read with the
        same reader, delimiter, NULL tokens and types); every value is a literal, so that
        the query can be a view or ``CREATE TABLE ... AS``."""
        if self.in_memory:
            raise ValueError("a source held in memory has no reader SQL; use table()")
        file = _sql_literal(str(path if path is not None else self.path))
        return f"SELECT {self._select} FROM {self._reader.replace('?', file, 1)}"

    def attach(self, con: duckdb.DuckDBPyConnection, name: str = "src") -> None:
        """Make ``name`` the source's records on ``con`` (a view over the file, or the Arrow
        table registered)."""
        if self._table is not None:
            con.register(name, self._table)
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {self.select_sql()}")

    def table(self) -> pa.Table:
        """Every record as one Arrow table (the in-memory path: what a file of millions of
        records should not need)."""
        if self._table is not None:
            return self._table
        return self._query(lambda con: con.sql(self.select_sql()).to_arrow_table())

    def select(self, columns: Sequence[str]) -> pa.Table:
        """The ``columns`` of every record, as one Arrow table (only those columns held)."""
        if self._table is not None:
            return self._table.select(list(columns))
        names = ", ".join(quote_identifier(c) for c in columns)
        return self._query(
            lambda con: con.sql(f"SELECT {names} FROM ({self.select_sql()})").to_arrow_table()
        )

    def column(self, name: str) -> pa.ChunkedArray:
        """One column of every record (Arrow), read from the file: that column held, no
        other."""
        return self.select([name]).column(0)

    def batches(self, columns: Sequence[str], rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """The ``columns`` in record batches of at most ``rows`` records, in file order."""
        if self._table is not None:
            yield from self._table.select(list(columns)).to_batches(rows)
            return
        names = ", ".join(quote_identifier(c) for c in columns)
        con = duckdb.connect(":memory:")
        try:
            reader = con.sql(f"SELECT {names} FROM ({self.select_sql()})").to_arrow_reader(rows)
            while True:
                try:
                    yield reader.read_next_batch()
                except StopIteration:
                    return
        except duckdb.Error as e:
            _read_error(self.path, self.path.suffix.lower(), self.delimiter, e)
        finally:
            con.close()

    def _query(self, run: Any) -> Any:
        con = duckdb.connect(":memory:")
        try:
            return run(con)
        except duckdb.Error as e:
            _read_error(self.path, self.path.suffix.lower(), self.delimiter, e)
        finally:
            con.close()


def _sql_literal(value: Any) -> str:
    """``value`` (text, number, list or dict of them) as a DuckDB literal: text quoted, its
    quotes doubled (DuckDB's strings have no other escape)."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_sql_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{_sql_literal(k)}: {_sql_literal(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def _read_error(source: Path, suffix: str, delimiter: str, e: duckdb.Error) -> NoReturn:
    """The ``InputError`` a DuckDB error reading ``source`` is: a ragged line named, text
    that is not UTF-8, else the reader's own first line."""
    if suffix == ".csv":
        _check_rectangular(source, delimiter)  # names a ragged line, the usual cause
    first = str(e).splitlines()[0]
    if "Invalid unicode" in str(e):  # past the header: a latin-1 or cp1252 file
        line = re.search(r"on Line: (\d+)", first)
        raise InputError(
            f"{source} is not UTF-8 text{f' (line {line[1]})' if line else ''} (latin-1 or "
            "cp1252 perhaps); convert it to UTF-8 CSV (iconv -f cp1252 -t utf-8)",
            code=Reason.SOURCE_FORMAT,
        ) from e
    raise InputError(
        f"cannot read {source}: {first[:200]}; check that it is valid {suffix}",
        code=Reason.SOURCE_FORMAT,
    ) from e


def open_source(
    source: Path,
    missing_values: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
    as_written: Collection[str] = (),
) -> SourceData:
    """:func:`read_source`'s checks and decisions (format, header, delimiter, NULL tokens,
    column types, text kept as written, dates whose day and month cannot be told apart,
    at least one record), made by DuckDB's scans of the file, without holding its
    records: the :class:`SourceData` that every later scan and the ingest read through."""
    source = Path(source)
    _check_is_file(source)
    suffix = source.suffix.lower()
    if suffix not in {".csv", ".parquet", ".pq", *FORMATS}:
        raise InputError(
            f"source {source}: unsupported format {suffix!r}; use .csv, .parquet, .sav, "
            ".dta or .sas7bdat",
            code=Reason.SOURCE_FORMAT,
        )
    if source.stat().st_size == 0:
        raise InputError(
            f"source file {source} is empty; it needs a header and records",
            code=Reason.SOURCE_EMPTY,
        )
    if suffix in FORMATS:
        return SourceData(source, table=_read_statistical(source, missing_values))
    header, delimiter = _header(source, suffix)
    # before DuckDB reads it: a file of a million columns would hold the run for hours
    check_count(len(header), MAX_SOURCE_COLUMNS, where=str(source), what="columns in the file")
    dupes = sorted(c for c, n in Counter(header).items() if n > 1)  # linear: a header can be huge
    if dupes:
        raise InputError(
            f"source {source} has duplicate column names {dupes}; rename them",
            code=Reason.SOURCE_COLUMNS,
        )
    _refuse_names_alike(source, header)
    if suffix == ".csv" and not any(name.strip() for name in header) and _blank(source):
        # DuckDB reads blank lines as records of one column, `column0`, that the spec lacks
        raise InputError(
            f"source file {source} holds only blank lines; it needs a header and records",
            code=Reason.SOURCE_EMPTY,
        )
    tokens = sorted({"", *missing_values}) if missing_values else None
    if suffix == ".csv":
        # The header is line 1 and the delimiter is its, so that the duplicate-name and
        # column-count checks above saw the columns DuckDB reads (it skipped a title line
        # and read the next as the header, unchecked). The types are detected on every line
        # (sample_size=-1): from a sample, a value past it was cast to the sample's type --
        # 12.5 rounded to 13 in an integer column, a code 01234 read as the number 1234.
        options = [f"delim={_sql_literal(delimiter)}"]
        if tokens:
            options.append(f"nullstr={_sql_literal(tokens)}")
        reader = "read_csv(?, header=true, skip=0, sample_size=-1, " + ", ".join(options) + ")"
    else:
        reader = "read_parquet(?)"
    file = _sql_literal(str(source))
    con = duckdb.connect(":memory:")
    line_size: int | None = None  # DuckDB's line limit raised for a long line
    select = "*"
    try:
        try:
            relation = con.sql(f"SELECT * FROM {reader.replace('?', file, 1)}")
        except duckdb.InvalidInputException as e:
            if suffix != ".csv" or "Maximum line size" not in str(e):
                raise
            # DuckDB's 2 MB line limit, reported at "Line: 1" whatever the line: read a
            # longer line as it is, name one over sdcflow's own limit
            line, size = _longest_line(source)
            if size > MAX_LINE_BYTES:
                raise InputError(
                    f"{source}: line {line} is {size / 2**20:.0f} MiB long, more than the "
                    f"{MAX_LINE_BYTES // 2**20} MiB a line may have; store such values "
                    "elsewhere (a Parquet source, or a file per record)",
                    code=Reason.SOURCE_FORMAT,
                ) from None
            line_size = size + 1
            reader = f"{reader[:-1]}, max_line_size={line_size})"
            relation = con.sql(f"SELECT * FROM {reader.replace('?', file, 1)}")
        typed = dict(zip(relation.columns, map(str, relation.types), strict=True))
        # Integers beyond 64 bits are identifiers, not quantities; as numbers they reached
        # pandas as floats, and a kept 20-digit id was published as 1.0000000000000002e+19
        text = [c for c, t in typed.items() if t in _WIDE] if suffix == ".csv" else []
        if suffix == ".csv":
            # and numbers DuckDB reads other than as written: 0x0007 came out 7, -0444 -444
            numbers = [c for c, t in typed.items() if is_numeric_type(t) and t not in _WIDE]
            numbers = [c for c in numbers if columns is None or c in columns]
            exact = {c: typed[c] for c in numbers if c in as_written}
            text += _not_as_written(con, source, delimiter, tokens, numbers, line_size, exact)
        if text:
            reader = f"{reader[:-1]}, types={_sql_literal(dict.fromkeys(text, 'VARCHAR'))})"
            relation = con.sql(f"SELECT * FROM {reader.replace('?', file, 1)}")
            typed = dict(zip(relation.columns, map(str, relation.types), strict=True))
        if suffix != ".csv" and _durations(source, typed):
            # Arrow restores them (DuckDB's reader has no duration type): held in memory
            data = _restore_durations(source, relation.to_arrow_table())
            if tokens:
                data = _null_tokens(con, data, tokens)
            if data.num_rows == 0:
                raise InputError(f"source file {source} has no records", code=Reason.SOURCE_EMPTY)
            return SourceData(source, table=data)
        if tokens and suffix != ".csv":
            # the text columns' tokens as NULL, in the reader itself (what _null_tokens does
            # to a table held in memory)
            select = ", ".join(
                f"CASE WHEN {quote_identifier(c)} IN {_in_list(tokens)} THEN NULL "
                f"ELSE {quote_identifier(c)} END AS {quote_identifier(c)}"
                if t == "VARCHAR"
                else quote_identifier(c)
                for c, t in typed.items()
            )
        # one scan: the record count (any value the reader cannot read fails here, named as
        # the whole read named it) and the largest day of each date column written day and
        # month first
        dated = [
            c
            for c, t in typed.items()
            if suffix == ".csv" and t in _DATED and (columns is None or c in columns)
        ]
        exprs = ["count(*)", *(f"max(day({quote_identifier(c)}))" for c in dated)]
        first = con.execute(
            f"SELECT {', '.join(exprs)} FROM (SELECT {select} FROM {reader.replace('?', file, 1)})"
        ).fetchone()
    except duckdb.Error as e:
        _read_error(source, suffix, delimiter, e)
    finally:
        con.close()
    if suffix == ".csv" and len(typed) < len(header):
        # The reader fell back to fewer columns than the header names: lines disagree.
        _check_rectangular(source, delimiter)
    if suffix == ".csv":
        _check_day_month(source, delimiter, dict(zip(dated, first[1:], strict=True)))
    if first[0] == 0:
        raise InputError(f"source file {source} has no records", code=Reason.SOURCE_EMPTY)
    return SourceData(
        source, reader=reader, select=select, types=typed, rows=first[0], delimiter=delimiter
    )


def _in_list(tokens: Sequence[str]) -> str:
    return "(" + ", ".join(_sql_literal(t) for t in tokens) + ")"


def _durations(source: Path, typed: dict[str, str]) -> bool:
    """Whether the Parquet file's Arrow schema holds a duration column DuckDB read as an
    integer (:func:`_restore_durations`)."""
    try:
        schema = pq.read_schema(source)
    except (pa.ArrowException, OSError):
        return False
    return any(
        pa.types.is_duration(f.type) and is_integer_type(typed.get(f.name, "")) for f in schema
    )


MAX_LINE_BYTES = 1 << 30  # a CSV line (one record) sdcflow reads: 1 GiB


def _read_statistical(source: Path, missing_values: Sequence[str] | None) -> pa.Table:
    """An SPSS, Stata or SAS file, under the checks a CSV or Parquet file gets: its column
    count, names that differ only in case or spacing, ``missing_values`` in its text
    columns (value labels included), and at least one record."""
    data = read_statistical(source)
    header = data.column_names
    check_count(len(header), MAX_SOURCE_COLUMNS, where=str(source), what="columns in the file")
    _refuse_names_alike(source, header)
    if missing_values:
        con = duckdb.connect(":memory:")
        try:
            data = _null_tokens(con, data, sorted({"", *missing_values}))
        finally:
            con.close()
    if data.num_rows == 0:
        raise InputError(f"source file {source} has no records", code=Reason.SOURCE_EMPTY)
    return data


def _longest_line(source: Path) -> tuple[int, int]:
    """``(line number, bytes)`` of the longest line of ``source`` (the first of them),
    streamed; a quoted line break counts as one, which only makes a line shorter."""
    best = (0, 0)
    with source.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if len(line) > best[1]:
                best = (number, len(line))
    return best


def _blank(source: Path) -> bool:
    """Whether ``source`` holds nothing but white space (streamed, stops at the first byte
    that is not)."""
    with source.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            if chunk.strip():
                return False
    return True


def _refuse_names_alike(source: Path, header: Sequence[str]) -> None:
    """Refuse column names that differ only in case or surrounding spaces (``Turnover``,
    ``turnover``, ``turnover ``): DuckDB does not tell them apart and renames the second
    (``turnover_1``), and the spec would then name a column the file does not have."""
    seen: dict[str, str] = {}
    for name in header:
        folded = name.strip().casefold()
        if folded in seen and seen[folded] != name:
            raise InputError(
                f"source {source} has columns {seen[folded]!r} and {name!r}, which differ only "
                "in case or spaces and which DuckDB reads as one name; rename one of them",
                code=Reason.SOURCE_COLUMNS,
                field=name,
            )
        seen.setdefault(folded, name)


def read_source_hashed(
    source: Path,
    missing_values: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
    as_written: Collection[str] = (),
) -> tuple[pa.Table, str]:
    """:func:`read_source`, and the sha256 of the file's bytes (hex): :func:`open_source_hashed`
    with the whole table read into Arrow."""
    data, digest = open_source_hashed(source, missing_values, columns, as_written)
    return data.table(), digest


def open_source_hashed(
    source: Path,
    missing_values: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
    as_written: Collection[str] = (),
) -> tuple[SourceData, str]:
    """:func:`open_source`, and the sha256 of the file's bytes (hex), computed once here.

    The hash is streamed (1 MiB at a time, never the whole file in memory) right after
    DuckDB's scans, while the file is in the page cache. The file's size, modification time
    and inode are compared before the scans and after the hash: when they differ the file
    changed while it was read, and the hash might not describe the records checked, so it
    is refused (reason ``source-changed``) rather than recorded. The ingest reads a private
    copy whose bytes have this hash (:func:`private_copy`), never the file again.
    """
    source = Path(source)
    _check_is_file(source)  # a missing or odd source is named as such, before its identity
    before = _identity(source)
    data = open_source(source, missing_values, columns, as_written)
    with source.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    if _identity(source) != before:
        raise InputError(
            f"source {source} changed while it was read; run the release again once the "
            "file is complete",
            code=Reason.SOURCE_CHANGED,
        )
    return data, digest


def private_copy(source: Path, folder: Path, sha256: str) -> Path:
    """Copy ``source`` into ``folder`` (the caller's private folder), hashing the bytes as
    they are copied, and return the copy; ``InputError`` (``source-changed``) when its
    sha256 is not ``sha256``, the hash of the file the preflight checked.

    The copy is what the ingest reads: the bytes hashed are the bytes ingested, whoever
    writes the source meanwhile (hashing the source again before or after DuckDB's read
    would leave a moment in which a rewrite goes unseen)."""
    source = Path(source)
    copy = Path(folder) / f"source{source.suffix.lower()}"
    digest = hashlib.sha256()
    with source.open("rb") as src, open(copy, "xb") as out:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != sha256:
        raise InputError(
            f"source {source} changed after the preflight read it (its bytes are no longer "
            "those checked); run the release again once the file is complete",
            code=Reason.SOURCE_CHANGED,
        )
    return copy


def _restore_durations(source: Path, data: pa.Table) -> pa.Table:
    """The duration columns of a Parquet file written by Arrow (pandas' ``timedelta64``) as
    durations again (DuckDB: INTERVAL).

    Parquet has no duration type: Arrow stores a duration as int64 and its type in the
    file's Arrow schema, which DuckDB's reader ignores. The column came back as BIGINT, a
    count of seconds or nanoseconds whose unit was lost, and was taken as a sampling weight,
    a numeric key or a number published unchanged. As INTERVAL it is refused as a weight
    (``weights``) and as a key (``column-type``), like the INTERVAL DuckDB writes."""
    try:
        schema = pq.read_schema(source)
    except (pa.ArrowException, OSError):  # DuckDB read it: its own schema stands
        return data
    for field in schema:
        if not pa.types.is_duration(field.type) or field.name not in data.column_names:
            continue
        i = data.column_names.index(field.name)
        if pa.types.is_integer(data.schema.field(i).type):
            data = data.set_column(i, field.name, data.column(i).cast(field.type))
    return data


# A number DuckDB reads but does not give back as written: zero-padded (0444, -0444), a hex,
# binary or octal literal (0x0007, 0b101), digits grouped with _ (1_000); and a value beyond
# a float's range (1e400 read as inf) that is not written inf or nan.
_NOT_AS_WRITTEN = r"'^[-+]?(0[0-9a-df-z_]|[0-9.]*_)'"
_NONFINITE_WORD = r"'^[-+]?(inf|infinity|nan)$'"


def _not_as_written(
    con: duckdb.DuckDBPyConnection,
    source: Path,
    delimiter: str,
    tokens: list[str] | None,
    columns: Sequence[str],
    line_size: int | None = None,
    exact: dict[str, str] | None = None,
) -> list[str]:
    """The ``columns`` of a CSV (typed numbers by DuckDB) holding a value that DuckDB reads
    as a number other than as written (see ``_NOT_AS_WRITTEN``): read as text, they are
    published as the file writes them, and a key among them is refused as numbers written
    as text (``plan.resolve_keys``).

    ``exact`` (column -> DuckDB type, of ``columns``): columns published unchanged, also
    returned when a value's text is not the text the published ``data.csv`` writes for
    the number (:func:`_written_back`): ``1.50`` was published ``1.5``, ``1e3`` ``1000.0``.
    One scan of the file's text; counts only."""
    if not columns:
        return []
    exact = exact or {}
    exprs = []
    for c in columns:
        v = f"lower(trim({quote_identifier(c)}))"
        flag = (
            f"regexp_matches({v}, {_NOT_AS_WRITTEN}) OR (NOT "
            f"isfinite(TRY_CAST({v} AS DOUBLE)) AND NOT regexp_matches({v}, {_NONFINITE_WORD}))"
        )
        if c in exact:
            flag += f" OR {_written_back(quote_identifier(c), exact[c])}"
        exprs.append(f"coalesce(bool_or({flag}), false)")
    reader = "read_csv(?, header=true, delim=?, skip=0, all_varchar=true"
    reader += ", nullstr=?" if tokens else ""
    reader += ", max_line_size=?)" if line_size else ")"
    params: list[Any] = [str(source), delimiter, *([tokens] if tokens else [])]
    params += [line_size] if line_size else []
    flags = con.execute(f"SELECT {', '.join(exprs)} FROM {reader}", params).fetchall()[0]
    return [c for c, flag in zip(columns, flags, strict=True) if flag]


def _written_back(text: str, duckdb_type: str) -> str:
    """SQL: whether the CSV text ``text`` of a number in a column DuckDB types
    ``duckdb_type`` differs from what the published ``data.csv`` writes for it.

    An integer is written in plain digits (``12``; not ``+12``, ``012``, `` 12``); a float
    as Python's ``repr``, the shortest text that reads back as it (``2.25``, ``1000.0``,
    ``1e+20``), which is DuckDB's DOUBLE-to-text cast too; NaN is written empty. So ``1.50``,
    ``1e3``, ``.5``, ``5.``, ``-0`` and ``1E5`` are not written back as they are."""
    if is_integer_type(duckdb_type):
        back = f"CAST(TRY_CAST({text} AS HUGEINT) AS VARCHAR)"
        return f"({text} IS DISTINCT FROM {back})"
    number = f"TRY_CAST({text} AS DOUBLE)"
    return f"({text} IS DISTINCT FROM CAST({number} AS VARCHAR) OR isnan({number}))"


def _identity(source: Path) -> tuple[int, int, int, int, int]:
    # the change time too: a rewrite that restores the size and the modification time
    # (touch -d) cannot restore it
    info = source.stat()
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


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


def _check_is_file(source: Path) -> None:
    """Refuse a source that is not a readable regular file, naming what it is instead."""
    try:
        info = source.stat()
    except FileNotFoundError:
        if source.is_symlink():
            raise InputError(
                f"source {source} is a symbolic link to nothing; point `source:` at the file",
                code=Reason.SOURCE_MISSING,
            ) from None
        raise InputError(
            f"source file {source} does not exist; check `source:` in the spec",
            code=Reason.SOURCE_MISSING,
        ) from None
    except OSError as e:
        what = "a symbolic link loop" if e.errno == errno.ELOOP else f"unreadable ({e.strerror})"
        raise InputError(
            f"source {source} is {what}; point `source:` at a data file (CSV, Parquet, SPSS, "
            "Stata or SAS)",
            code=Reason.SOURCE_NOT_FILE,
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(
            f"source {source} is a folder; name a data file (CSV, Parquet, SPSS, Stata or SAS)",
            code=Reason.SOURCE_NOT_FILE,
        )
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"source {source} is not a regular file (a device, pipe or socket); name a CSV or "
            "Parquet file",
            code=Reason.SOURCE_NOT_FILE,
        )
    if not os.access(source, os.R_OK):
        raise InputError(
            f"source {source} is not readable; fix its permissions", code=Reason.SOURCE_NOT_FILE
        )


def inexact_csv_numbers(source: Path, columns: Sequence[str]) -> dict[str, int]:
    """For a CSV ``source``, how many values of each of ``columns`` (read as DOUBLE) are
    written with more digits than the float they are read as holds (``0.1234567890123456789``
    comes back ``0.12345678901234568``): a column published unchanged would be published
    rounded. A value that is its float written out to more digits (numpy's ``savetxt``
    writes ``1.731136370204654495e-01``: 19 digits, the float's own) loses nothing and is
    not counted. Counts only, never a value; ``{}`` for Parquet (see ``inexact_decimals``)."""
    source = Path(source)
    if not columns or source.suffix.lower() != ".csv":
        return {}
    delimiter = _header(source, ".csv")[1]

    def digits(expr: str) -> str:  # the significant digits, without sign, point or exponent
        mantissa = f"regexp_replace(lower(trim({expr})), 'e.*$', '')"
        return f"trim(regexp_replace({mantissa}, '[^0-9]', '', 'g'), '0')"

    # one scan: per column, the text of each value whose shortest float text has other
    # digits (candidates only), NULL elsewhere
    texts, candidates = [], []
    for c in columns:
        v = quote_identifier(c)
        condition = (
            f"(TRY_CAST({v} AS DOUBLE) IS NOT NULL AND "
            f"{digits(v)} <> {digits(f'CAST(TRY_CAST({v} AS DOUBLE) AS VARCHAR)')})"
        )
        texts.append(f"CASE WHEN {condition} THEN {v} END")
        candidates.append(condition)
    con = duckdb.connect(":memory:")
    try:
        rows = con.execute(
            f"SELECT {', '.join(texts)} "
            "FROM read_csv(?, header=true, delim=?, skip=0, all_varchar=true) "
            f"WHERE {' OR '.join(candidates)}",
            [str(source), delimiter],
        ).fetchall()
    except duckdb.Error:
        return {}
    finally:
        con.close()
    return {
        c: sum(row[j] is not None and not _float_written_out(row[j]) for row in rows)
        for j, c in enumerate(columns)
    }


def _float_written_out(text: str) -> bool:
    """Whether ``text`` is exactly the float it reads as, written with as many significant
    digits as it shows: then publishing the float loses nothing the text held."""
    mantissa = re.sub(r"[eE].*$", "", text.strip().lstrip("+-"))
    shown = mantissa.replace(".", "").lstrip("0").rstrip("0")
    try:
        value = abs(float(text))
    except ValueError:
        return True
    if not shown or not math.isfinite(value):
        return True
    written = f"{value:.{len(shown) - 1}e}".split("e")[0].replace(".", "").rstrip("0")
    return written == shown


def _check_day_month(source: Path, delimiter: str, days: dict[str, int | None]) -> None:
    """Refuse dates whose day and month cannot be told apart: written ``02/01/2024`` with no
    day above 12 in the column, DuckDB reads them day first (2 January), silently, though
    the file may be American (1 February). ``days``: the date columns checked (the
    release's, all when it names none) -> their largest day as read (None: no date). Only
    those whose text is written day and month first: an ISO column beside them is not
    ambiguous. Counts only, never a value."""
    dated = [c for c, largest in days.items() if largest is not None and largest <= 12]
    if not dated:
        return
    # (not DuckDB's sniffer: without the spec's missing-value tokens it saw a column holding
    # `?` as text, found no date format, and the dates were read day first unchecked)
    con = duckdb.connect(":memory:")
    try:
        counts = con.execute(  # the text as written: which columns are day and month first
            "SELECT "
            + ", ".join(
                f"count_if(regexp_matches({quote_identifier(c)}, {_DAY_MONTH_SQL}))" for c in dated
            )
            + " FROM read_csv(?, header=true, delim=?, skip=0, all_varchar=true)",
            [str(source), delimiter],
        ).fetchone()
    except duckdb.Error:
        return
    finally:
        con.close()
    for name, written in zip(dated, counts or (), strict=False):
        if written:
            raise InputError(
                f"{source}: column {name} holds dates written day and month first "
                "(dd/mm/yyyy or mm/dd/yyyy) and no day above 12 tells which; write them as "
                "yyyy-mm-dd in the source (or drop the column)",
                code=Reason.SOURCE_FORMAT,
                field=name,
            )


def _check_rectangular(source: Path, delimiter: str) -> None:
    """Raise ``InputError`` naming the first line whose number of fields differs from the
    header's (a ragged CSV); return when every line agrees. Counts only, never a value."""
    try:
        with source.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            header = next(reader, [])
            for row in reader:
                if row and len(header) == 1 < len(row):
                    raise InputError(
                        f"{source}: line 1 is not a header: it has one field and line "
                        f"{reader.line_num} has {len(row)}; remove any title lines above the "
                        "column names",
                        code=Reason.SOURCE_FORMAT,
                    )
                if row and len(row) != len(header):
                    raise InputError(
                        f"{source} is ragged: line {reader.line_num} has {len(row)} fields "
                        f"where the header has {len(header)}; fix that line (a stray or missing "
                        f"{_NAMES[delimiter]}, or an unquoted {_NAMES[delimiter]} inside a value)",
                        code=Reason.SOURCE_FORMAT,
                    )
    except (UnicodeDecodeError, csv.Error):
        return


_DAY_MONTH_SQL = r"'^\s*\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}'"  # 02/01/2024, not 2024/01/02
_DATED = ("DATE", "TIMESTAMP", "TIMESTAMP_NS", "TIMESTAMP_MS", "TIMESTAMP_S")  # not with a zone
_WIDE = ("HUGEINT", "UHUGEINT", "BIGNUM")  # CSV integers over 64 bits: read as text
_DELIMITERS = (",", ";", "\t", "|")  # the first of those giving the most header fields wins
_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}
_MAGIC = {b"\x1f\x8b": "gzip-compressed", b"PAR1": "a Parquet file", b"PK\x03\x04": "a zip archive"}
_FIXES = {
    "gzip-compressed": "decompress it (gunzip) and point `source:` at the .csv",
    "a Parquet file": "name it .parquet",
    "a zip archive": "unzip it, or save a spreadsheet as UTF-8 CSV",
}


def _header(source: Path, suffix: str) -> tuple[list[str], str]:
    """The header's column names and (for CSV) its delimiter: of comma, semicolon, tab and
    bar, the one that cuts the header into the most fields among those cutting the second
    record into as many (else into the most fields; comma when none does)."""
    if suffix == ".csv":
        with source.open("rb") as fh:
            magic = fh.read(4)
        for start, what in _MAGIC.items():
            if magic.startswith(start):
                raise InputError(
                    f"{source} is {what}, not CSV text; {_FIXES[what]}",
                    code=Reason.SOURCE_FORMAT,
                )
        best: tuple[list[str], str] = ([], ",")
        rank = (False, False, 0)
        error: csv.Error | None = None
        for delimiter in _DELIMITERS:
            try:
                with source.open(encoding="utf-8-sig", newline="") as fh:
                    reader = csv.reader(fh, delimiter=delimiter)
                    names = next(reader, [])
                    second = _next_record(reader)
            except UnicodeDecodeError as e:
                raise InputError(
                    f"{source} is not UTF-8 text (latin-1 or cp1252 perhaps); convert it to "
                    "UTF-8 CSV (iconv -f cp1252 -t utf-8)",
                    code=Reason.SOURCE_FORMAT,
                ) from e
            except csv.Error as e:  # a header field over csv's 131072-character limit
                error = error or e  # (cut at another delimiter, it may be fine)
                continue
            # a delimiter the second record agrees with beats a longer cut of the header
            # alone: a quoted name holding ; or a tab cut the header of a comma file
            agrees = second is not None and len(second) == len(names) > 1
            # and a cut through a quoted name leaves a quote in the names: id,"a  b  c"
            whole = not any('"' in name for name in names)
            if (whole, agrees, len(names)) > rank:
                best, rank = (names, delimiter), (whole, agrees, len(names))
        if len(best[0]) == 1:  # one column, or a title line above a table
            best = (best[0], _one_field_header_delimiter(source))
        if not best[0] and error is not None:
            raise InputError(
                f"cannot read the header of {source}: {str(error)[:200]}; check that it is "
                "valid .csv",
                code=Reason.SOURCE_FORMAT,
            ) from error
        return best
    try:
        return list(pq.read_schema(source).names), ","
    except (pa.ArrowInvalid, OSError) as e:
        with source.open("rb") as fh:
            start = fh.read(4096)
        for magic, what in _MAGIC.items():
            if start.startswith(magic) and what != "a Parquet file":
                hint = f"it is {what}: {_FIXES[what]}"
                break
        else:
            try:
                start.decode("utf-8")  # (a cut multi-byte character at 4096 is text too)
                hint = "it is text: if it is CSV, name it .csv"
            except UnicodeDecodeError as cut:
                text = cut.start > len(start) - 4
                hint = "it is text: if it is CSV, name it .csv" if text else str(e)
        raise InputError(
            f"cannot read {source}: not a valid Parquet file ({hint})", code=Reason.SOURCE_FORMAT
        ) from e


# a number with a decimal comma, thousands separators (. , ' or space) or a percent sign
_FORMATTED_NUMBER = r"[-+]?(\d+,\d+|\d{1,3}([.,' ]\d{3})+([.,]\d+)?|\d+([.,]\d+)?\s?%)"
_FORMATTED_SQL = "'" + _FORMATTED_NUMBER.replace("'", "''") + "'"


def _next_record(reader: Any) -> list[str] | None:
    """The reader's next record; None at the end, or when it cannot be read (a field over
    csv's limit, a byte that is not UTF-8: the header alone decides then, as before)."""
    try:
        return next(reader, None)
    except (csv.Error, UnicodeDecodeError):
        return None


def _one_field_header_delimiter(source: Path) -> str:
    """The delimiter of a file whose first line is one field: a title line above a table, or
    the header of a one-column file.

    A title line: at one delimiter, every line after it has the same number of fields, more
    than one (a table); that delimiter is returned, so that the reader refuses line 1 as a
    title. Else a one-column file, whose values may hold a delimiter unquoted (``a;b`` in a
    column of notes: taken for a title line above two columns, and refused): the first
    delimiter that cuts no line, so that each line is one value. Counts only, never a
    value."""
    counts: dict[str, set[int]] = {}
    for delimiter in _DELIMITERS:
        seen: set[int] = set()
        try:
            with source.open(encoding="utf-8-sig", newline="") as fh:
                reader = csv.reader(fh, delimiter=delimiter)
                next(reader, None)
                for row in reader:
                    if row:  # an empty line: a trailing one, or an empty value
                        seen.add(len(row))
                        if len(seen) > 1:  # lines that disagree: not a table at this one
                            break
        except (UnicodeDecodeError, csv.Error):
            continue
        counts[delimiter] = seen
    tables = {d: max(seen) for d, seen in counts.items() if len(seen) == 1 and max(seen) > 1}
    if tables:
        return max(tables, key=lambda d: tables[d])
    for delimiter, seen in counts.items():
        if seen <= {1}:
            return delimiter
    return _second_line_delimiter(source)


def _second_line_delimiter(source: Path) -> str:
    """Of the delimiters, the one cutting the file's second record into the most fields."""
    best, most = ",", 1
    for delimiter in _DELIMITERS:
        try:
            with source.open(encoding="utf-8", newline="") as fh:
                reader = csv.reader(fh, delimiter=delimiter)
                next(reader, None)
                fields = len(next(reader, []))
        except (UnicodeDecodeError, csv.Error):
            continue
        if fields > most:
            best, most = delimiter, fields
    return best


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL")
_UNSIGNED = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")
_INTEGER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", *_UNSIGNED)
_TEXT = ("VARCHAR", "BOOLEAN", "ENUM")
_TEMPORAL = ("DATE", "TIME", "TIMESTAMP")


def profile_table(data: pa.Table | SourceData, columns: Sequence[str]) -> dict[str, Any]:
    """Column types, row count and per-column missing counts of a source read by
    :func:`read_source`.

    Returns ``{"rows": n, "types": {column: duckdb type}, "missing": {column: count},
    "nonfinite": {column: count of inf/NaN}, "numeric_text": {column: count}}`` for the
    requested ``columns`` that exist (``types`` covers every column of the file);
    ``numeric_text`` counts, in the text columns, the values that read as numbers (a column
    of numbers with an undeclared missing-value token reads as text), and
    ``formatted_numbers`` those written as numbers the reader does not take: a decimal
    comma (``12,5``), thousands separators (``1.234,56``, ``1,234``) or a percent sign
    (``12 %``), which leave a column of numbers as text; ``inexact_decimals`` counts, in the
    DECIMAL columns, the values a float64 does not hold exactly (the warehouse hands them on
    as floats). Counts only: no value leaves this function. One DuckDB scan (of the file,
    for a :class:`SourceData` read from one).
    """
    con = duckdb.connect(":memory:")
    try:
        if isinstance(data, SourceData):
            data.attach(con)
        else:
            con.register("src", data)
        types = {row[0]: row[1] for row in con.execute("DESCRIBE src").fetchall()}
        present = [c for c in columns if c in types]
        numeric = [c for c in present if is_numeric_type(types[c])]
        text = [c for c in present if types[c] == "VARCHAR" or types[c].startswith("ENUM")]
        decimal = [c for c in present if types[c].startswith("DECIMAL")]
        exprs = (
            [f"count(*) - count({quote_identifier(c)})" for c in present]
            + [f"count_if(NOT isfinite(CAST({quote_identifier(c)} AS DOUBLE)))" for c in numeric]
            + [f"count_if({looks_like_a_number(_text(c))})" for c in text]
            + [
                f"count_if(TRY_CAST({_text(c)} AS DOUBLE) IS NULL AND "
                f"regexp_full_match(trim({_text(c)}), {_FORMATTED_SQL}))"
                for c in text
            ]
            + [
                f"count_if(TRY_CAST(CAST({quote_identifier(c)} AS DOUBLE) AS {types[c]}) "
                f"IS DISTINCT FROM {quote_identifier(c)})"
                for c in decimal
            ]
        )
        # count_if is NULL, not 0, when its condition is NULL on every row (a column with no
        # value at all): coalesce, or int(None) ended the preflight with exit 3.
        exprs = [f"coalesce({e}, 0)" for e in exprs]
        counts = con.execute(f"SELECT {', '.join(['count(*)', *exprs])} FROM src").fetchone()
    except duckdb.Error as e:
        if not isinstance(data, SourceData):
            raise
        _read_error(data.path, data.path.suffix.lower(), data.delimiter, e)
    finally:
        con.close()
    missing = counts[1 : 1 + len(present)]
    nonfinite = counts[1 + len(present) : 1 + len(present) + len(numeric)]
    at = 1 + len(present) + len(numeric)
    numeric_text, formatted = (
        counts[at : at + len(text)],
        counts[at + len(text) : at + 2 * len(text)],
    )
    inexact = counts[at + 2 * len(text) :]
    return {
        "rows": int(counts[0]),
        "types": types,
        "missing": {c: int(v) for c, v in zip(present, missing, strict=True)},
        "nonfinite": {c: int(v) for c, v in zip(numeric, nonfinite, strict=True)},
        "numeric_text": {c: int(v) for c, v in zip(text, numeric_text, strict=True)},
        "formatted_numbers": {c: int(v) for c, v in zip(text, formatted, strict=True)},
        "inexact_decimals": {c: int(v) for c, v in zip(decimal, inexact, strict=True)},
    }


def _text(column: str) -> str:
    return f"CAST({quote_identifier(column)} AS VARCHAR)"


# a number in any script's decimal digits (Unicode Nd: Arabic-Indic, full-width,
# Devanagari...), with an optional sign, point and exponent: what Python's float() reads
# (float('٢٠') is 20.0) and DuckDB's DOUBLE does not
_DIGITS_ANY_SCRIPT = r"'[-+]?(\p{Nd}+(\.\p{Nd}*)?|\.\p{Nd}+)([eE][-+]?\p{Nd}+)?'"


def looks_like_a_number(text: str) -> str:
    """SQL: whether the text ``text`` (an SQL expression) reads as a number: anything a
    DOUBLE takes (``0444``, `` 5``, ``1e3``, ``inf``, ``nan``), hex, binary or octal
    literals (``0x0007``) and numbers in the decimal digits of any script (Arabic-Indic,
    full-width), which a DOUBLE does not take."""
    return (
        f"(TRY_CAST({text} AS DOUBLE) IS NOT NULL OR "
        f"regexp_full_match(trim({text}), '[-+]?0[xXbBoO][0-9a-fA-F_]+') OR "
        f"regexp_full_match(trim({text}), {_DIGITS_ANY_SCRIPT}))"
    )


def plain_number(text: str) -> str:
    """SQL: whether the text ``text`` (an SQL expression) is a number written plainly, which
    a float64 gives back as written: decimal digits with an optional sign, point and
    exponent, no zero padding, at most 15 significant digits, finite."""
    digits = (
        f"length(regexp_replace(regexp_replace(trim({text}), '[eE].*$', ''), '[^0-9]', '', 'g'))"
    )
    return (
        f"(regexp_full_match(trim({text}), "
        r"'[-+]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]{1,3})?')"
        f" AND {digits} <= 15 AND isfinite(TRY_CAST({text} AS DOUBLE)))"
    )


def first_record(data: pa.Table | SourceData, column: str, condition: str) -> int | None:
    """The 0-based index of the first record of ``data`` whose ``column``, as text ``v``,
    meets the SQL ``condition`` (NULLs never do); None when none does. A
    :class:`SourceData` is read one batch of that column at a time, in file order, and the
    search stops at the first batch holding such a record."""
    batches = data.batches([column]) if isinstance(data, SourceData) else [data.select([column])]
    con = duckdb.connect(":memory:")
    offset = 0
    try:
        for batch in batches:
            con.register("src", pa.table({"i": pa.array(range(offset, offset + batch.num_rows),
                                                         pa.int64()),
                                          "value": batch.column(0)}))  # fmt: skip
            (found,) = con.execute(
                f"SELECT min(i) FROM (SELECT i, CAST(value AS VARCHAR) AS v FROM src "
                f"WHERE value IS NOT NULL) WHERE {condition}"
            ).fetchall()[0]
            con.unregister("src")
            if found is not None:
                return int(found)
            offset += batch.num_rows
    finally:
        con.close()
    return None


def record_place(source: Path, index: int) -> str:
    """Where record ``index`` (0-based, in the order read) is in ``source``: ``line N`` of a
    CSV (the line it starts on; quoted line breaks and blank lines counted as the reader
    counts them), ``row N`` of a Parquet file."""
    source = Path(source)
    if source.suffix.lower() != ".csv":
        return f"row {index + 1}"
    header, delimiter = _header(source, ".csv")
    with source.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        next(reader, None)
        seen, start = -1, reader.line_num + 1
        for row in reader:
            if row or len(header) == 1:  # DuckDB skips a blank line, unless one column
                seen += 1
                if seen == index:
                    return f"line {start}"
            start = reader.line_num + 1
    return f"record {index + 1}"


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


_UNWRITABLE = ("STRUCT", "MAP", "UNION", "BLOB", "BYTEA", "BINARY", "VARBINARY", "BIT")


def csv_unwritable(duckdb_type: str) -> bool:
    """Whether a column of this DuckDB type has no faithful CSV field: a list or array, a
    struct, map or union (nested values), a blob or bit string (bytes that need not be
    text). The release writes ``data.csv`` beside ``data.parquet``, so such a column cannot be
    published as it is."""
    t = duckdb_type.upper()
    return "[" in t or t.startswith(_UNWRITABLE)


def key_kind(duckdb_type: str) -> str | None:
    """The kind of key a column of this DuckDB type is by default: ``numeric``, ``nominal``
    (text, booleans, enums), ``ordinal`` (dates and times, in time order: a key only when
    the spec declares it, ``plan.resolve_keys``), ``missing`` (a
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
