"""The DuckDB warehouse: the only code in sdcflow that opens a database connection.

Layout (one DuckDB file): ``raw`` (one table per run, as ingested, plus ``sdc_row_id``),
``edited`` (after repair), ``masked`` (the method's output), ``published`` (what was released),
and ``audit`` (``runs``, ``checks``, and the edit-rule tables written by ``warehouse.edits``).

Table names are never taken from user input: they are built from an allow-listed schema and a
run id checked against a strict pattern, and every value travels as a ``?`` parameter.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdcflow.errors import InputError, Reason

SCHEMAS = ("raw", "edited", "masked", "published", "audit")
ROW_ID = "sdc_row_id"
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_HOST = socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (a permission error means it does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_DDL = """
CREATE TABLE IF NOT EXISTS audit.runs (
    run_id VARCHAR PRIMARY KEY,
    release VARCHAR NOT NULL,
    spec_sha256 VARCHAR NOT NULL,
    method VARCHAR,
    started_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ,
    status VARCHAR NOT NULL,
    message VARCHAR,
    n_rows BIGINT,
    published_to VARCHAR,
    checks JSON
);
CREATE TABLE IF NOT EXISTS audit.checks (
    run_id VARCHAR NOT NULL,
    check_name VARCHAR NOT NULL,
    figure DOUBLE,
    threshold DOUBLE,
    rule VARCHAR,
    verdict VARCHAR NOT NULL
);
-- warehouses created by earlier versions gain the columns added since
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS checks JSON;
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS host VARCHAR;
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS pid BIGINT;
"""


def table_name(schema: str, run_id: str) -> str:
    """The quoted, schema-qualified table of ``run_id`` in ``schema`` (allow-listed)."""
    if schema not in SCHEMAS:
        raise ValueError(f"unknown warehouse schema {schema!r}; one of {SCHEMAS}")
    if not _RUN_ID.match(run_id):
        raise ValueError(f"run id must be 32 lowercase hex digits, got {run_id!r}")
    return f'{schema}."run_{run_id}"'


class Warehouse:
    """A DuckDB file with the sdcflow schemas.

    Connections are short-lived (one per operation) so that the file is never held open
    between steps and a crashed step cannot leave a lock behind.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for the duration of a ``with`` block, closed on exit.

        Raises ``InputError`` (reason ``WAREHOUSE``) when the file is not a DuckDB database.
        """
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as e:
            raise InputError(
                f"cannot open warehouse {self.path}: {e}; remove or move the file if it is not "
                "a DuckDB database",
                code=Reason.WAREHOUSE,
            ) from e
        try:
            yield con
        finally:
            con.close()

    def initialize(self) -> None:
        """Create the schemas and audit tables if they do not exist (idempotent)."""
        with self.connect() as con:
            for schema in SCHEMAS:
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            con.execute(_DDL)

    # -- data -----------------------------------------------------------------------------

    def ingest(self, source: Path, run_id: str) -> str:
        """Load a CSV or Parquet file into ``raw.run_<id>`` with DuckDB's own reader.

        Types are those DuckDB infers (CSV) or stores (Parquet); a ``sdc_row_id`` column
        (0..n-1, file order) is added so that violations can be traced back to records.
        Returns the table name.
        """
        table = table_name("raw", run_id)
        data = read_source(source)
        if ROW_ID in data.column_names:
            raise InputError(
                f"{source}: column name {ROW_ID!r} is reserved; rename it",
                code=Reason.SOURCE_COLUMNS,
            )
        data = data.append_column(ROW_ID, pa.array(range(data.num_rows), pa.int64()))
        with self.connect() as con:
            con.register("incoming", data)
            con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM incoming")
            con.unregister("incoming")
        return table

    def write_frame(self, schema: str, run_id: str, frame: pd.DataFrame) -> str:
        """Create or replace the ``schema`` table of ``run_id`` from ``frame``; return its name."""
        table = table_name(schema, run_id)
        with self.connect() as con:
            con.register("incoming", frame)
            con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM incoming")
            con.unregister("incoming")
        return table

    def read_frame(self, schema: str, run_id: str) -> pd.DataFrame:
        """The ``schema`` table of ``run_id``, ordered by ``sdc_row_id``."""
        with self.connect(read_only=True) as con:
            return con.sql(f"SELECT * FROM {table_name(schema, run_id)} ORDER BY {ROW_ID}").df()

    # -- audit ----------------------------------------------------------------------------

    def start_run(self, run_id: str, release: str, spec_sha256: str, method: str) -> None:
        """Record a run as ``running`` with this host and process id (after marking the runs of
        dead processes ``interrupted``)."""
        self.initialize()
        self.mark_interrupted()
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO audit.runs (run_id, release, spec_sha256, method, "
                "started_at, status, host, pid) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                [run_id, release, spec_sha256, method, datetime.now(UTC), _HOST, os.getpid()],
            )

    def mark_interrupted(self) -> None:
        """Runs left ``running`` by a process of this host that no longer exists (killed,
        machine restarted) become ``interrupted``."""
        with self.connect() as con:
            rows = con.execute(
                "SELECT run_id, pid FROM audit.runs WHERE status = 'running' AND host = ?",
                [_HOST],
            ).fetchall()
            dead = [run_id for run_id, pid in rows if pid is not None and not process_alive(pid)]
            for run_id in dead:
                con.execute(
                    "UPDATE audit.runs SET status = 'interrupted', ended_at = ?, "
                    "message = 'the process ended before the run finished' WHERE run_id = ?",
                    [datetime.now(UTC), run_id],
                )

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        message: str | None = None,
        n_rows: int | None = None,
        published_to: str | None = None,
    ) -> None:
        """Record the end of a run: its status, message, row count and where it was published."""
        with self.connect() as con:
            con.execute(
                "UPDATE audit.runs SET ended_at = ?, status = ?, message = ?, "
                "n_rows = coalesce(?, n_rows), published_to = ? WHERE run_id = ?",
                [datetime.now(UTC), status, message, n_rows, published_to, run_id],
            )

    def record_checks(self, run_id: str, outcomes: Sequence[Mapping[str, Any]]) -> None:
        """Replace the run's rows in ``audit.checks`` and its JSON summary in ``audit.runs``.

        ``outcomes``: mappings with keys ``check``, ``figure``, ``threshold``, ``rule``,
        ``verdict``.
        """
        rows = [
            (run_id, o["check"], o["figure"], o["threshold"], o["rule"], o["verdict"])
            for o in outcomes
        ]
        summary = json.dumps(
            {o["check"]: {"figure": o["figure"], "verdict": o["verdict"]} for o in outcomes}
        )
        with self.connect() as con:
            con.execute("DELETE FROM audit.checks WHERE run_id = ?", [run_id])
            if rows:
                con.executemany("INSERT INTO audit.checks VALUES (?, ?, ?, ?, ?, ?)", rows)
            con.execute("UPDATE audit.runs SET checks = ? WHERE run_id = ?", [summary, run_id])

    def runs(self, limit: int = 50) -> pd.DataFrame:
        """The latest runs, each with its checks' figures and verdicts as one JSON column."""
        if not self.path.exists():
            return pd.DataFrame()
        self.initialize()
        self.mark_interrupted()
        with self.connect(read_only=True) as con:
            return con.execute(
                "SELECT run_id, release, method, status, started_at, ended_at, n_rows, message, "
                "coalesce(checks, '{}') AS checks FROM audit.runs ORDER BY started_at DESC LIMIT ?",
                [limit],
            ).df()


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
                import csv

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


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes, embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def profile_source(source: Path, columns: Sequence[str]) -> dict[str, Any]:
    """Column types, row count and per-column missing counts of a source file.

    Returns ``{"rows": n, "types": {column: duckdb type}, "missing": {column: count},
    "nonfinite": {column: count of inf/NaN}}`` for the requested ``columns`` that exist
    (``types`` covers every column of the file). Counts only: no value leaves this function.
    """
    data = read_source(source)
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
