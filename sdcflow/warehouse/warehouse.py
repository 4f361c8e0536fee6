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
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS kind VARCHAR;
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

    def ingest(self, data: pa.Table, run_id: str) -> str:
        """Store a source read by :func:`~sdcflow.warehouse.sources.read_source` as
        ``raw.run_<id>``, with a ``sdc_row_id`` column (0..n-1, file order) so that violations
        can be traced back to records. Returns the table name."""
        table = table_name("raw", run_id)
        if ROW_ID in data.column_names:
            raise InputError(
                f"column name {ROW_ID!r} is reserved; rename it", code=Reason.SOURCE_COLUMNS
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

    def start_run(
        self, run_id: str, release: str, spec_sha256: str, method: str, kind: str = "release"
    ) -> None:
        """Record a run as ``running`` with this host and process id (after marking the runs of
        dead processes ``interrupted``); ``kind``: what started it (``release``, ``check``,
        ``compare``)."""
        self.initialize()
        self.mark_interrupted()
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO audit.runs (run_id, release, spec_sha256, method, "
                "started_at, status, host, pid, kind) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                [run_id, release, spec_sha256, method, datetime.now(UTC), _HOST, os.getpid(), kind],
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

    def runs(
        self, limit: int = 50, *, release: str | None = None, status: str | None = None
    ) -> pd.DataFrame:
        """The latest runs (of one ``release`` and ``status`` when given), each with what
        started it (``kind``; ``release`` for runs recorded before kinds were) and its
        checks' figures and verdicts as one JSON column."""
        if not self.path.exists():
            return pd.DataFrame()
        self.initialize()
        self.mark_interrupted()
        with self.connect(read_only=True) as con:
            return con.execute(
                "SELECT run_id, release, coalesce(kind, 'release') AS kind, method, status, "
                "started_at, ended_at, n_rows, message, coalesce(checks, '{}') AS checks "
                "FROM audit.runs WHERE (? IS NULL OR release = ?) AND (? IS NULL OR status = ?) "
                "ORDER BY started_at DESC LIMIT ?",
                [release, release, status, status, limit],
            ).df()
