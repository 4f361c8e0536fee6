"""The DuckDB warehouse: the only code in sdcflow that opens a database connection.

Layout (one DuckDB file): ``raw`` (one table per run, as ingested, plus ``sdc_row_id``),
``edited`` (after repair), ``masked`` (the method's output), ``published`` (what was released),
and ``audit`` (``runs``, ``checks``, and the edit-rule tables written by ``warehouse.edits``).

Table names are never taken from user input: they are built from an allow-listed schema and a
run id checked against a strict pattern, and every value travels as a ``?`` parameter.

One writer at a time: a release holds :meth:`Warehouse.lock`, an exclusive ``flock(2)`` on
``<warehouse>.lock``, for its whole run (the kernel releases it when the process ends, however
it ends); a second release waits for it up to a set time and then stops (exit 3). DuckDB
itself lets one process at a time open the file, readers included, so every connection
retries for a while on a lock conflict (:meth:`Warehouse.connect`) and the read-only commands
(:meth:`Warehouse.runs`) hold their connection for one query.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from sdcflow.errors import InputError, Reason, WarehouseBusy, WarehouseDamaged
from sdcflow.warehouse import jsontext
from sdcflow.warehouse.ownership import FileLock, LockTimeout, locked_by_other, process_alive
from sdcflow.warehouse.private import exposed, owner_only_files, private_folder
from sdcflow.warehouse.publish import published_run
from sdcflow.warehouse.sources import SourceData, private_copy
from sdcflow.warehouse.writable import cannot_create_in

SCHEMAS = ("raw", "edited", "masked", "published", "audit")
ROW_ID = "sdc_row_id"
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_HOST = socket.gethostname()
_MAGIC = b"DUCK"  # bytes 8..11 of every DuckDB database file

# How long a release waits for another one to let go of the warehouse (``--wait``), and how
# long any connection retries while another process has the file open (a reader, briefly).
LOCK_WAIT_ENV, CONNECT_RETRY_ENV = "SDCFLOW_LOCK_WAIT", "SDCFLOW_CONNECT_RETRY"
# DuckDB's memory limit for the warehouse's connections (DuckDB's own default, 80 % of the
# machine's memory, when unset): past it DuckDB's sorts and joins spill to disk beside the
# warehouse, so a release of a large file stays within what the process is given.
MEMORY_LIMIT_ENV = "SDCFLOW_DUCKDB_MEMORY_LIMIT"
_MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)
DEFAULT_LOCK_WAIT, DEFAULT_CONNECT_RETRY = 60.0, 30.0

__all__ = [
    "ROW_ID",
    "RUN_TABLES_DDL",
    "SCHEMAS",
    "Warehouse",
    "check_warehouse_file",
    "check_warehouse_intact",
    "process_alive",
    "table_name",
]


def env_memory_limit() -> str | None:
    """DuckDB's ``memory_limit`` from ``$SDCFLOW_DUCKDB_MEMORY_LIMIT`` (``2GB``, ``512MiB``),
    None when unset or blank; ``InputError`` for anything else."""
    value = os.environ.get(MEMORY_LIMIT_ENV)
    if value is None or value.strip() == "":
        return None
    if not _MEMORY.match(value):
        raise InputError(
            f"environment variable {MEMORY_LIMIT_ENV} must be an amount of memory such as "
            f"2GB or 512MiB, got {value!r}",
            code=Reason.PARAMETER,
        )
    return value.strip()


def env_seconds(env: str, default: float) -> float:
    """The seconds the environment variable ``env`` gives (``default`` when unset or blank);
    ``InputError`` unless a finite number >= 0 (``inf`` would wait for ever, as ``--wait``
    refuses)."""
    value = os.environ.get(env)
    if value is None or value.strip() == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise InputError(
            f"environment variable {env} must be a number of seconds", code=Reason.PARAMETER
        ) from None
    if not (seconds >= 0 and math.isfinite(seconds)):
        raise InputError(
            f"environment variable {env} must be a finite number of seconds >= 0",
            code=Reason.PARAMETER,
        )
    return seconds


# columns every sdcflow version's audit.runs has had: another table of that name is not ours
_AUDIT_COLUMNS = frozenset({"run_id", "release", "spec_sha256", "started_at", "status"})


def audit_kind(con: duckdb.DuckDBPyConnection) -> str:
    """``"sdcflow"`` when the database has sdcflow's ``audit.runs``, ``"none"`` when it has
    no such table, ``"foreign"`` when its ``audit.runs`` lacks sdcflow's columns (a table of
    the user's, which sdcflow must not alter)."""
    return _kind_of(_audit_columns(con))


def _audit_columns(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'audit' AND table_name = 'runs'"
        ).fetchall()
    }


def _kind_of(columns: set[str]) -> str:
    if not columns:
        return "none"
    return "sdcflow" if _AUDIT_COLUMNS <= columns else "foreign"


def warehouse_exists(path: Path) -> bool:
    """Whether something is at ``path``; a path that cannot be looked at (a folder of it not
    searchable: ``/proc/1/cwd``) is ``InputError`` (``WAREHOUSE``), not ``PermissionError``
    from inside the command (exit 3)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.islink(path)
    except OSError as e:
        raise InputError(
            f"cannot look at warehouse {path} ({e.strerror}); check the path and the "
            "permissions of its folders",
            code=Reason.WAREHOUSE,
            field="warehouse",
        ) from None
    return True


def check_warehouse_file(path: Path) -> None:
    """Refuse, before a run, a warehouse path that cannot be a DuckDB database: a folder, a
    file that is not a DuckDB database (by its header, without opening it), or a place that
    cannot be written. Raises ``InputError`` with reason ``WAREHOUSE``."""
    path = Path(path)
    if os.path.lexists(path):
        if path.is_symlink() and not path.exists():  # a link to nothing: not a permission
            raise InputError(
                f"warehouse {path} is a symbolic link to {os.readlink(path)}, which does not "
                "exist; point `warehouse:` at the file itself (a new path creates one)",
                code=Reason.WAREHOUSE,
            )
        if path.is_dir():
            raise InputError(
                f"warehouse {path} is a folder; point `warehouse:` at a DuckDB file",
                code=Reason.WAREHOUSE,
            )
        try:
            with path.open("rb") as fh:
                head = fh.read(12)
        except OSError as e:
            raise InputError(
                f"cannot read warehouse {path} ({e.strerror}); fix its permissions or point "
                "`warehouse:` elsewhere",
                code=Reason.WAREHOUSE,
            ) from e
        if head[8:12] != _MAGIC:
            raise InputError(
                f"warehouse {path} is not a DuckDB database, or one damaged from its first "
                "block (empty or cut short); if it was a warehouse, restore it from a backup, "
                "else point `warehouse:` at a DuckDB file (a new path creates one)",
                code=Reason.WAREHOUSE,
            )
        folders = [path.parent]
        links = os.stat(path).st_nlink
        if links > 1:
            # the writer lock is a file beside the name: each hard link would have its own,
            # so a run under one name and prune --yes under another could both write (prune
            # would take the run for ended and drop its copies)
            raise InputError(
                f"warehouse {path} has {links - 1} other hard link(s), and each name would take "
                "its own writer lock; keep one name (a symbolic link to the file is fine) or "
                "copy the file",
                code=Reason.WAREHOUSE,
            )
        if not os.access(path, os.W_OK):
            raise InputError(
                f"warehouse {path} is read-only; make it writable or point `warehouse:` elsewhere",
                code=Reason.WAREHOUSE,
            )
        real = Path(os.path.realpath(path)).parent
        if not os.path.samefile(real, path.parent):
            folders.append(real)  # a symbolic link: the lock goes beside the file it names
    else:
        folders = [next((p for p in path.parents if os.path.lexists(p)), Path("/"))]
    for writable in folders:
        why = cannot_create_in(writable) if writable.is_dir() else "not a folder"
        if why is not None:
            raise InputError(
                f"cannot write into {writable} ({why}; for the warehouse {path} and its lock); "
                "make it writable or point `warehouse:` elsewhere",
                code=Reason.WAREHOUSE,
            )
    if os.path.lexists(path):
        warehouse = Warehouse(path)
        # while another release holds the writer lock (and may hold the file open for longer
        # than a connection retries), its own check waits: the run checks the file again under
        # the lock, before its first write (Warehouse.start_run)
        if warehouse.locked_here or not locked_by_other(warehouse.lock_path):
            check_warehouse_intact(path)


# DuckDB's three file headers (4 KiB each) precede its blocks of B bytes, block i at
# 12288 + i * B: a file whose N blocks in use are all there is at least 12288 + N * B long
_BLOCKS_START = 3 * 4096
# what DuckDB says of a file it cannot read whole (lower case)
_DAMAGE_WORDS = (
    "could not read enough bytes",
    "corrupt",
    "checksum",
    "truncated",
    "failed to read block",
    "invalid block",
)


def is_damage(error: BaseException) -> bool:
    """Whether a DuckDB error says the database file is damaged (truncated, a checksum that
    does not match, a block that cannot be read), not that the disk is full or busy."""
    text = str(error).lower()
    return isinstance(error, duckdb.Error) and any(word in text for word in _DAMAGE_WORDS)


def damaged(path: Path, what: str) -> WarehouseDamaged:
    """The one-line error of a damaged warehouse: which file, what is wrong, what to do."""
    return WarehouseDamaged(
        f"warehouse {path} is damaged ({what}); nothing was written to it: restore it from a "
        f"backup, or move it aside (a new run then starts an empty warehouse at {path})"
    )


def check_warehouse_intact(path: Path) -> None:
    """Refuse (:class:`~sdcflow.errors.WarehouseDamaged`, exit 3) a DuckDB file that cannot
    be read whole, before anything writes to it: a file shorter than the blocks it uses
    (truncated, as a half-copied backup is), or one whose catalog or audit tables
    DuckDB cannot read. Read-only: no write-ahead log is made (a write to a damaged file
    left one holding the new run's raw records, which a backup restored at the same path
    then replayed). Cheap: the header, the catalog and the audit tables, not every block;
    a damaged block found later stops the run the same way (:meth:`Warehouse.connect`)."""
    path = Path(path)
    warehouse = Warehouse(path)
    with warehouse.connect(read_only=True) as con:
        _, _, block_size, _, used, *_ = con.execute("PRAGMA database_size").fetchone()
        # each block in use lies whole in the file at its own place: the file holds at least
        # that many (free blocks at the end may have been cut off, so not all it counts)
        needed = _BLOCKS_START + int(used) * int(block_size)
        size = os.path.getsize(path)
        if size < needed:
            raise damaged(
                path, f"the file is {size} bytes, its {used} blocks in use need {needed} bytes"
            )
        tables = {
            (schema, name)
            for schema, name in con.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema = 'audit'"
            ).fetchall()
        }
        for name in ("runs", "run_tables", "checks"):
            if ("audit", name) in tables and audit_kind(con) == "sdcflow":
                con.execute(f"SELECT * FROM audit.{name}").fetchall()


def _lock_conflict(error: Exception) -> bool:
    text = str(error)
    return "Could not set lock" in text or "Conflicting lock" in text


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
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS target VARCHAR;
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS input_sha256 VARCHAR;
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS copies_pruned_at TIMESTAMPTZ;
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS secrets_sha256 VARCHAR;
ALTER TABLE audit.runs ADD COLUMN IF NOT EXISTS release_sha256 VARCHAR;
"""

# The tables each run created (the only ones retention may drop), and when they were dropped.
_RUN_TABLES_DDL = """
CREATE SCHEMA IF NOT EXISTS audit;
CREATE TABLE IF NOT EXISTS audit.run_tables (
    run_id VARCHAR NOT NULL,
    schema_name VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    dropped_at TIMESTAMPTZ,
    PRIMARY KEY (run_id, schema_name)
);
"""
_DDL += _RUN_TABLES_DDL
RUN_TABLES_DDL = _RUN_TABLES_DDL

_RECORD_TABLE = (
    "INSERT OR REPLACE INTO audit.run_tables (run_id, schema_name, created_at, dropped_at) "
    "VALUES (?, ?, ?, NULL)"
)


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

    Parameters
    ----------
    path : the DuckDB file.
    connect_retry : seconds a connection keeps trying while another process has the file
        open; default ``$SDCFLOW_CONNECT_RETRY`` or 30.
    """

    def __init__(self, path: str | Path, *, connect_retry: float | None = None) -> None:
        self.path = Path(path)
        # set when DuckDB found the file damaged: no connection is opened again
        self.damaged: WarehouseDamaged | None = None
        self.connect_retry = (
            env_seconds(CONNECT_RETRY_ENV, DEFAULT_CONNECT_RETRY)
            if connect_retry is None
            else float(connect_retry)
        )

    @property
    def lock_path(self) -> Path:
        """The lock file of the warehouse (``<warehouse>.lock``), created on first use.

        Beside the file the path resolves to, so that a warehouse named through a symbolic
        link to the file and through its own path has one lock: with a lock per name, a
        release or ``prune`` holding one would take a release running under the other for
        ended (settle it ``interrupted``, drop its copies) and write beside it."""
        real = Path(os.path.realpath(self.path))
        return real.with_name(real.name + ".lock")

    @contextmanager
    def lock(self, wait: float | None = None) -> Iterator[None]:
        """Hold the warehouse's writer lock (``flock`` on :attr:`lock_path`) for the block.

        Waits up to ``wait`` seconds (default ``$SDCFLOW_LOCK_WAIT`` or 60) for another
        release to let go, then raises :class:`~sdcflow.errors.WarehouseBusy`. Re-entrant
        within a process (the command line takes it before the flow, which takes it again).
        """
        wait = env_seconds(LOCK_WAIT_ENV, DEFAULT_LOCK_WAIT) if wait is None else float(wait)
        private_folder(self.path.parent)  # the folders it creates: 0700
        lock = FileLock(self.lock_path, wait=wait)
        try:
            lock.acquire()
        except LockTimeout as e:
            holder = f" (process {e.holder})" if e.holder else ""
            raise WarehouseBusy(
                f"warehouse {self.path} is in use by another release{holder}; waited "
                f"{e.waited:.0f} s; try again later or wait longer with --wait SECONDS"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def exposure(self) -> str | None:
        """One line naming the warehouse's files (the database, its ``.wal``) that its group
        or other users can read or write, and the ``chmod`` that closes them; None when every
        one is owner-only. sdcflow creates them so; one made before (by an earlier version,
        by hand) keeps its mode, which is the owner's decision, and is reported."""
        real = Path(os.path.realpath(self.path))
        found = [
            (path, mode)
            for path in (real, real.with_name(real.name + ".wal"))
            if (mode := exposed(path)) is not None
        ]
        if not found:
            return None
        names = ", ".join(f"{path} ({mode})" for path, mode in found)
        files = " ".join(str(path) for path, _ in found)
        return (
            f"the warehouse holds every raw record and is readable by other local users: "
            f"{names}; `chmod 600 {files}` makes it its owner's only"
        )

    @property
    def locked_here(self) -> bool:
        """Whether this process holds the writer lock."""
        return FileLock(self.lock_path).held

    @contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for the duration of a ``with`` block, closed on exit.

        While another process has the file open (DuckDB allows one process per file) the
        connection is retried for :attr:`connect_retry` seconds, then
        :class:`~sdcflow.errors.WarehouseBusy` is raised. Raises ``InputError`` (reason
        ``WAREHOUSE``) when the file is not a DuckDB database.

        From the opening to the close the process's umask is at least ``077``
        (:func:`~sdcflow.warehouse.private.owner_only_files`): the files DuckDB creates for
        the warehouse (the database, its ``.wal`` at every write, its spill folder) are
        readable by their owner only from their first byte.

        A DuckDB error that says the file is damaged (:func:`is_damage`: a block that cannot
        be read or fails its checksum) becomes :class:`~sdcflow.errors.WarehouseDamaged`, and
        this object opens no connection again: nothing more is written to that file.
        """
        if self.damaged is not None:  # once found damaged, never written to again
            raise self.damaged
        try:
            with owner_only_files(), self._connect(read_only) as con:
                yield con
        except duckdb.Error as e:
            if not is_damage(e):
                raise
            self.damaged = damaged(self.path, str(e).splitlines()[0])
            raise self.damaged from e

    @contextmanager
    def _connect(self, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        if not read_only:
            private_folder(self.path.parent)  # the folders it creates: 0700
        deadline = time.monotonic() + self.connect_retry
        delay = 0.01
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                break
            except duckdb.Error as e:
                if isinstance(e, duckdb.OutOfMemoryException) or "Out of Memory" in str(e):
                    # the process's memory, not the file: no advice to point elsewhere (exit 3)
                    raise MemoryError(
                        f"out of memory opening warehouse {self.path} ({str(e).splitlines()[0]})"
                    ) from e
                if not _lock_conflict(e):
                    if is_damage(e):
                        raise  # said as such by connect()
                    raise InputError(
                        f"cannot open warehouse {self.path}: {str(e).splitlines()[0]}; point "
                        "`warehouse:` at a DuckDB file (a new path creates one)",
                        code=Reason.WAREHOUSE,
                    ) from e
                if time.monotonic() >= deadline:
                    raise WarehouseBusy(
                        f"warehouse {self.path} stayed open in another process for "
                        f"{self.connect_retry:.0f} s; try again when it has finished"
                    ) from e
                time.sleep(delay)
                delay = min(0.25, delay * 2)
        try:
            limit = env_memory_limit()
            if limit is not None:
                con.execute(f"SET memory_limit = '{limit}'")
            yield con
        finally:
            con.close()

    def initialize(self) -> None:
        """Create the schemas and audit tables if they do not exist (idempotent). A file whose
        ``audit.runs`` is not sdcflow's (:func:`audit_kind`) is refused (``InputError``,
        ``WAREHOUSE``) before anything is written: the migrations would alter that table."""
        with self.connect() as con:
            if audit_kind(con) == "foreign":
                raise InputError(
                    f"warehouse {self.path} has a table audit.runs that sdcflow did not create; "
                    "point `warehouse:` at another DuckDB file (a new path creates one)",
                    code=Reason.WAREHOUSE,
                )
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
        self._create("raw", run_id, data)
        return table

    def ingest_source(self, source: SourceData, run_id: str, sha256: str) -> str:
        """Store a source the preflight opened (:func:`~sdcflow.warehouse.sources.open_source`)
        as ``raw.run_<id>``, with ``sdc_row_id`` (0..n-1, file order), as :meth:`ingest` does
        with the table read; returns the table name.

        A CSV or Parquet source is read by DuckDB itself, with the preflight's reader
        (``SourceData.select_sql``: the same delimiter, NULL tokens and column types), into
        the table (``CREATE TABLE ... AS SELECT``): no record passes through this process.
        It reads a private copy of the file (a ``0700`` folder beside the warehouse, removed
        afterwards) whose bytes, hashed as they are copied, must have ``sha256``, the hash
        the preflight recorded: a file rewritten since is refused (``source-changed``),
        never ingested under the old hash. A source held in memory (a statistical file) is
        stored by :meth:`ingest`."""
        if ROW_ID in source.column_names:
            raise InputError(
                f"column name {ROW_ID!r} is reserved; rename it", code=Reason.SOURCE_COLUMNS
            )
        if source.in_memory:
            return self.ingest(source.table(), run_id)
        table = table_name("raw", run_id)
        private_folder(self.path.parent)
        folder = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.ingest-", dir=self.path.parent))
        try:
            copy = private_copy(source.path, folder, sha256)
            # row_number() over the reader in file order: DuckDB's streaming window keeps
            # the order the reader gives under preserve_insertion_order (its default, set
            # here so that no setting elsewhere changes it)
            query = (
                f"SELECT *, row_number() OVER () - 1 AS {ROW_ID} FROM ({source.select_sql(copy)})"
            )
            with self.connect() as con:
                con.execute("SET preserve_insertion_order = true")
                self.create_recorded(con, "raw", run_id, query)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return table

    def write_frame(self, schema: str, run_id: str, frame: pd.DataFrame) -> str:
        """Create or replace the ``schema`` table of ``run_id`` from ``frame``; return its name."""
        table = table_name(schema, run_id)
        self._create(schema, run_id, frame)
        return table

    def _create(self, schema: str, run_id: str, data: Any) -> None:
        """Create the ``schema`` table of ``run_id`` from ``data`` (a frame or an Arrow
        table), recorded for retention (:meth:`create_recorded`)."""
        with self.connect() as con:
            con.register("incoming", data)
            try:
                self.create_recorded(con, schema, run_id, "SELECT * FROM incoming")
            finally:
                con.unregister("incoming")

    @classmethod
    def create_recorded(
        cls, con: duckdb.DuckDBPyConnection, schema: str, run_id: str, select_sql: str
    ) -> str:
        """Create (or replace) the ``schema`` table of ``run_id`` as ``select_sql`` on
        ``con`` and record it in ``audit.run_tables``, in one transaction: a table is never
        there unrecorded (a failure between the two left a raw copy that retention, which
        read only the record, never dropped). Returns the table's name; an error rolls both
        back and is raised as it came."""
        table = table_name(schema, run_id)
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f"CREATE OR REPLACE TABLE {table} AS {select_sql}")
            cls._record_table(con, schema, run_id)
            con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error):  # the error that stopped it is the one
                con.execute("ROLLBACK")
            raise
        return table

    @staticmethod
    def _record_table(con: duckdb.DuckDBPyConnection, schema: str, run_id: str) -> None:
        """Record in ``audit.run_tables`` that the run created its ``schema`` table (what
        retention, :mod:`sdcflow.warehouse.retention`, drops)."""
        con.execute(_RUN_TABLES_DDL)
        con.execute(_RECORD_TABLE, [run_id, schema, datetime.now(UTC)])

    def count_rows(self, schema: str, run_id: str) -> int:
        """The records of the ``schema`` table of ``run_id`` (counted by DuckDB)."""
        with self.connect(read_only=True) as con:
            return int(
                con.execute(f"SELECT count(*) FROM {table_name(schema, run_id)}").fetchone()[0]
            )

    def shuffled_chunks(
        self, schema: str, run_id: str, order: np.ndarray, rows: int
    ) -> Iterator[pd.DataFrame]:
        """The ``schema`` table of ``run_id`` without its row id, record ``order[i]`` (in row
        id order) at position ``i``, read in frames of ``rows`` records (the last may hold
        fewer; one empty frame for an empty table), each as :meth:`read_frame` would give
        it.

        Each frame is one query: the table joined with that frame's positions (``rows`` row
        ids), so that DuckDB holds a frame's worth and this process one frame and ``order``
        (n / rows scans of the table: a sort of the whole shuffled table would need it in
        DuckDB's memory or spilled). ``order`` (n,) int64: a permutation of ``range(n)``."""
        table = table_name(schema, run_id)
        with self.connect() as con:
            ids = _row_ids(con, table, order)
            query = _shuffled_query(table)
            rel = con.sql(f"SELECT * EXCLUDE ({ROW_ID}) FROM {table} LIMIT 0")
            columns, types = rel.columns, rel.types
            for start in range(0, max(len(ids), 1), rows):
                con.register("positions", _positions(ids[start : start + rows]))
                try:
                    chunk = con.execute(query).df()
                finally:
                    con.unregister("positions")
                if len(chunk) != len(ids[start : start + rows]):  # ids that repeat or lack
                    raise ValueError(f"the {schema} table of run {run_id} has no row id order")
                yield _dates_as_dates(chunk, columns, types)
                del chunk  # not held while the next one is read

    def copy_shuffled(
        self, source: str, target: str, run_id: str, order: np.ndarray, rows: int = 1 << 20
    ) -> str:
        """Create the ``target`` table of ``run_id`` as :meth:`shuffled_chunks` reads the
        ``source`` table, inside DuckDB (nothing passes through this process but
        ``order``), ``rows`` records at a time; return its name."""
        table = table_name(target, run_id)
        source_table = table_name(source, run_id)
        with self.connect() as con:
            ids = _row_ids(con, source_table, order)
            query = _shuffled_query(source_table)
            con.execute("BEGIN TRANSACTION")
            try:
                for start in range(0, max(len(ids), 1), rows):
                    con.register("positions", _positions(ids[start : start + rows]))
                    into = (
                        f"CREATE OR REPLACE TABLE {table} AS"
                        if start == 0
                        else f"INSERT INTO {table}"
                    )
                    con.execute(f"{into} {query}")
                    con.unregister("positions")
                self._record_table(con, target, run_id)
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise
        return table

    def k_figures(
        self, schema: str, run_id: str, keys: Sequence[str], k: int | None = None
    ) -> dict[str, int]:
        """k-anonymity of the ``schema`` table of ``run_id`` over the columns ``keys``,
        counted by DuckDB: ``k``, the smallest class of identical rows (``GROUP BY`` the
        keys, a missing value a value of its own: DuckDB groups NULLs together), ``classes``,
        and with ``k`` given ``records_below_k``, the records in classes smaller than it.
        The release's convention ("identical",
        :func:`~sdcflow.core.measures.anonymity.k_anonymity`), without the table leaving
        DuckDB. An empty table: k 0, no classes."""
        names = ", ".join(_quoted(c) for c in keys)
        below = f"coalesce(sum(f) FILTER (WHERE f < {int(k)}), 0)" if k is not None else "NULL"
        query = (
            f"SELECT coalesce(min(f), 0), count(*), {below} FROM (SELECT count(*) AS f "
            f"FROM {table_name(schema, run_id)} GROUP BY {names})"
        )
        with self.connect(read_only=True) as con:
            smallest, classes, small = con.execute(query).fetchone()
        out = {"k": int(smallest), "classes": int(classes)}
        if k is not None:
            out["records_below_k"] = int(small)
        return out

    def median_cells(
        self, schema: str, run_id: str, columns: Sequence[str], size: int
    ) -> list[list[tuple[str, float, int, bool]]]:
        """Cells cut as :func:`~sdcflow.core.microaggregation.neighbours.spatial_cells` cuts
        them, on the standardized ``columns`` (:func:`~sdcflow.core.microaggregation.\
scaling.working_scale`) of the ``schema`` table of ``run_id``, found by DuckDB queries:
        the table never leaves DuckDB, the caller holds the cuts. The same cell sizes in the
        same order; not always the same records, since on the standardized scale the first
        cut's variances are all 1 up to rounding, which decides the column in either.

        A cell holding more than ``size`` records is cut at its median rank along the column
        of largest variance on the working scale (the population variance over the scale
        squared, the scale the column's population sd over the table, 1 if constant), the
        record of rank ``count // 2`` (by value, then row id) opening the upper half: the
        lower half holds its ``count // 2`` smallest records, as ``argpartition`` puts them.
        Two queries a cut (the variances; the median record), each a scan of the cell.

        Returns the cells in the tree's order (lower half first, as ``spatial_cells``), each
        the list of its cuts ``(column, value, row id, upper)``: a record is in the cell when
        for every cut ``(x, row id) >= (value, row id)`` if ``upper``, else ``<``
        (:func:`cell_condition`). Complete numeric keys only (a missing value has no rank).
        """
        table = table_name(schema, run_id)
        names = [_quoted(c) for c in columns]
        with self.connect(read_only=True) as con:
            sds = con.execute(
                "SELECT " + ", ".join(f"stddev_pop({q})" for q in names) + f" FROM {table}"
            ).fetchall()[0]
            scale = np.array([float(v) if v else 1.0 for v in sds])
            n = int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])
            todo: list[tuple[list[tuple[str, float, int, bool]], int]] = [([], n)]
            done: list[list[tuple[str, float, int, bool]]] = []
            while todo:
                path, count = todo.pop()
                if count <= size:
                    done.append(path)
                    continue
                where, params = cell_condition(path)
                variances = con.execute(
                    "SELECT " + ", ".join(f"var_pop({q})" for q in names)
                    + f" FROM {table} WHERE {where}",
                    params,
                ).fetchall()[0]  # fmt: skip
                j = int(np.argmax(np.array(variances, dtype=np.float64) / scale**2))
                mid = count // 2
                value, row = con.execute(
                    f"SELECT {names[j]}, {ROW_ID} FROM {table} WHERE {where} "
                    f"ORDER BY {names[j]}, {ROW_ID} LIMIT 1 OFFSET {mid}",
                    params,
                ).fetchall()[0]
                cut = (columns[j], float(value), int(row))
                todo += [([*path, (*cut, True)], count - mid), ([*path, (*cut, False)], mid)]
        return done

    def information_loss(
        self, original: str, released: str, run_id: str, columns: Sequence[str]
    ) -> float:
        """IL = 100 SSE / SST between the ``original`` and ``released`` tables of ``run_id``
        over the numeric ``columns``, as
        :func:`~sdcflow.core.measures.information_loss.sse_sst_loss_present` gives it, by
        sums in DuckDB over the two tables joined on the row id.

        Per column j, over the records with a value in both tables (n_j of them, original
        values x, released x'), standardized with that column's own mean and population
        variance v_j there: SSE_j = sum (x - x')^2 / v_j ([7] eq. 2), SST_j = n_j ([7] eq. 3,
        after standardization); IL = 100 sum_j SSE_j / sum_j SST_j ([1], [7] eq. 1), columns
        constant there contributing nothing. Sums of squares of raw values: exact to about
        1e-12 relative beside the core's, not near the float limits the core rescales for."""
        parts = []
        for c in columns:
            q = _quoted(c)
            both = f"o.{q} IS NOT NULL AND r.{q} IS NOT NULL AND NOT isnan(o.{q}) " + (
                f"AND NOT isnan(r.{q})"
            )
            parts.append(
                f"count(*) FILTER (WHERE {both}), var_pop(o.{q}) FILTER (WHERE {both}), "
                f"sum((o.{q} - r.{q}) ^ 2) FILTER (WHERE {both})"
            )
        if not parts:
            return 0.0
        query = (
            f"SELECT {', '.join(parts)} FROM {table_name(original, run_id)} o "
            f"JOIN {table_name(released, run_id)} r USING ({ROW_ID})"
        )
        with self.connect(read_only=True) as con:
            row = con.execute(query).fetchone()
        sse = sst = 0.0
        for j in range(len(columns)):
            n, var, ssd = row[3 * j : 3 * j + 3]
            if not n or not var or var <= 0.0:  # nothing present, or constant: no SST
                continue
            sse += float(ssd) / float(var)
            sst += float(n)
        return 100.0 * sse / sst if sst else 0.0

    def read_frame(self, schema: str, run_id: str) -> pd.DataFrame:
        """The ``schema`` table of ``run_id``, ordered by ``sdc_row_id``.

        Raises ``InputError`` (reason ``copy-pruned``) when retention dropped that table."""
        with self.connect(read_only=True) as con:
            try:
                table = table_name(schema, run_id)
                rel = con.sql(f"SELECT * FROM {table} ORDER BY {ROW_ID}")
                if any(str(t).startswith("DECIMAL") for t in rel.types):
                    # DuckDB's frame gives a DECIMAL of more than 15 digits a float one unit
                    # off in its last bit (a quarter of them); its cast is the nearest float,
                    # as Parquet's reader gives the streamed path's pieces
                    values = ", ".join(
                        f"CAST({_quoted(c)} AS DOUBLE) AS {_quoted(c)}"
                        if str(t).startswith("DECIMAL")
                        else _quoted(c)
                        for c, t in zip(rel.columns, rel.types, strict=True)
                    )
                    rel = con.sql(f"SELECT {values} FROM {table} ORDER BY {ROW_ID}")
                return _dates_as_dates(rel.df(), rel.columns, rel.types)
            except duckdb.CatalogException:
                dropped = _dropped_at(con, schema, run_id)
                if dropped is None:
                    raise
        raise InputError(
            f"the {schema} copy of run {run_id} was pruned on {dropped:%Y-%m-%d} by the "
            "retention policy; its figures stay in audit.runs; run the release again to "
            "recompute from the source",
            code=Reason.COPY_PRUNED,
        )

    # -- audit ----------------------------------------------------------------------------

    def start_run(
        self,
        run_id: str,
        release: str,
        spec_sha256: str,
        method: str,
        target: str | Path | None = None,
        kind: str = "release",
        input_sha256: str | None = None,
        secrets_sha256: str | None = None,
        release_sha256: str | None = None,
    ) -> None:
        """Record a run as ``running`` with this host, process id, what started it (``kind``:
        ``release``, ``check`` or ``compare``), the folder it may publish to (``target``) and
        the sha256 of its source file (``input_sha256``), of the spec's secrets
        (``secrets_sha256``) and of what decides its files (``release_sha256``,
        ``ReleasePlan.release_sha256``), after settling the runs of
        processes that are gone (:meth:`resolve_ended_runs`). A damaged file
        (:func:`check_warehouse_intact`) is refused before anything is written to it."""
        if self.path.exists():
            check_warehouse_intact(self.path)
        self.initialize()
        self.resolve_ended_runs()
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO audit.runs (run_id, release, spec_sha256, method, "
                "started_at, status, host, pid, target, kind, input_sha256, secrets_sha256, "
                "release_sha256) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    release,
                    spec_sha256,
                    method,
                    datetime.now(UTC),
                    _HOST,
                    os.getpid(),
                    str(target) if target is not None else None,
                    kind,
                    input_sha256,
                    secrets_sha256,
                    release_sha256,
                ],
            )

    def latest_published(self, release: str) -> dict[str, Any] | None:
        """The latest ``published`` run of ``release`` (``run_id``, ``input_sha256``,
        ``spec_sha256``, ``published_to``, ``started_at``, ``secrets_sha256``,
        ``release_sha256``), or None."""
        with self.connect() as con:
            row = con.execute(
                "SELECT run_id, input_sha256, spec_sha256, published_to, started_at, "
                "secrets_sha256, release_sha256 FROM audit.runs WHERE release = ? "
                "AND status = 'published' "
                "ORDER BY started_at DESC LIMIT 1",
                [release],
            ).fetchone()
        if row is None:
            return None
        keys = (
            "run_id",
            "input_sha256",
            "spec_sha256",
            "published_to",
            "started_at",
            "secrets_sha256",
            "release_sha256",
        )
        return dict(zip(keys, row, strict=True))

    def _ended(self, pid: int | None, run_id: str, active: set[str]) -> bool:
        if run_id in active:
            return False
        if pid is None:
            return False
        if pid == os.getpid():
            return True  # a run of this process that is not active any more
        # Holding the writer lock, no other release can be running on this warehouse.
        return self.locked_here or not process_alive(pid)

    def resolve_ended_runs(self, active: Sequence[str] = ()) -> list[tuple[str, str]]:
        """Settle runs left ``running`` by a process of this host that has ended (killed,
        crashed, machine restarted): ``published`` when the release folder the run was to
        publish carries its run id (the process died after the swap: the release is live),
        else ``interrupted``. Returns ``(run_id, status)`` of the runs settled.

        ``active``: run ids of this process that are still running (left alone).
        """
        settled: list[tuple[str, str]] = []
        with self.connect() as con:
            rows = con.execute(
                "SELECT run_id, pid, target FROM audit.runs WHERE status = 'running' AND host = ?",
                [_HOST],
            ).fetchall()
            for run_id, pid, target in rows:
                if not self._ended(pid, run_id, set(active)):
                    continue
                status, message, where = ended_status(run_id, target)
                con.execute(
                    "UPDATE audit.runs SET status = ?, ended_at = ?, message = ?, "
                    "published_to = coalesce(?, published_to) WHERE run_id = ?",
                    [status, datetime.now(UTC), message, where, run_id],
                )
                settled.append((run_id, status))
        return settled

    def mark_interrupted(self) -> None:
        """Settle runs of ended processes (kept for callers of earlier versions; see
        :meth:`resolve_ended_runs`)."""
        self.resolve_ended_runs()

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
        summary = jsontext.dumps(  # a figure may be inf or NaN: valid JSON all the same
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
        started it (``kind``; ``release`` for runs recorded before kinds were) and its checks'
        figures and verdicts as one JSON column.

        Read-only: one read-only connection for one query, no write (a release running
        meanwhile is not disturbed). A run whose process has ended without recording its end
        is shown with the status the next release will record for it (``published`` if its
        release folder carries its run id, else ``interrupted``), its message saying so; the
        ``status`` filter applies to that status.
        """
        if not self.path.exists():
            return pd.DataFrame()
        with self.connect(read_only=True) as con:
            columns = _audit_columns(con)
            owner = _kind_of(columns)
            if owner == "none":
                return pd.DataFrame()
            if owner == "foreign":
                raise InputError(
                    f"warehouse {self.path} has a table audit.runs that sdcflow did not "
                    "create; it records no sdcflow run",
                    code=Reason.WAREHOUSE,
                )
            extra = ", ".join(
                c if c in columns else f"NULL AS {c}"
                for c in ("host", "pid", "target", "input_sha256", "copies_pruned_at")
            )
            kind = "coalesce(kind, 'release')" if "kind" in columns else "'release'"
            frame = con.execute(
                f"SELECT run_id, release, {kind} AS kind, method, status, started_at, ended_at, "
                "n_rows, message, coalesce(checks, '{}') AS checks, published_to, "
                f"{extra} FROM audit.runs WHERE (? IS NULL OR release = ?) "
                "ORDER BY started_at DESC LIMIT ?",
                [release, release, limit if status is None else None],
            ).df()
        for i, row in frame.iterrows():
            if row["status"] != "running" or row["host"] != _HOST or pd.isna(row["pid"]):
                continue
            if process_alive(int(row["pid"])) and not self.locked_here:
                continue
            ended, message, where = ended_status(row["run_id"], row["target"])
            frame.loc[i, "status"] = ended
            frame.loc[i, "message"] = f"{message} (not yet recorded)"
            if where:
                frame.loc[i, "published_to"] = where
        if status is not None:
            frame = frame[frame["status"] == status].head(limit).reset_index(drop=True)
        return frame.drop(columns=["host", "pid", "target"])


def _row_ids(con: duckdb.DuckDBPyConnection, table: str, order: np.ndarray) -> np.ndarray:
    """The row ids of ``table``'s records ``order`` (ranks in row id order). Row ids
    ``0..n-1``, as ingest numbers them and every copy of the run keeps, are their own ranks
    (told by their count, least, greatest and sum: a count of distinct ids would hold them
    all in DuckDB's memory); other ids are read (8 bytes a record)."""
    order = np.asarray(order, dtype=np.int64)
    n, low, high, total = con.execute(
        f"SELECT count(*), min({ROW_ID}), max({ROW_ID}), sum({ROW_ID}::HUGEINT) FROM {table}"
    ).fetchall()[0]
    if len(order) != n:
        raise ValueError(f"order holds {len(order)} positions for {n} records")
    if n == 0 or (low == 0 and high == n - 1 and int(total) == n * (n - 1) // 2):
        return order
    ids = con.execute(f"SELECT {ROW_ID} FROM {table} ORDER BY {ROW_ID}").fetchnumpy()[ROW_ID]
    return np.asarray(ids, dtype=np.int64)[order]


def _shuffled_query(table: str) -> str:
    """The records of ``table`` without the row id whose ids the registered ``positions``
    table names (``j``), in its order (``sdc_pos``, a column: an unordered scan keeps no
    row order)."""
    return (
        f"SELECT t.* EXCLUDE ({ROW_ID}) FROM {table} t "
        f"JOIN positions p ON t.{ROW_ID} = p.j ORDER BY p.sdc_pos"
    )


def cell_condition(cuts: Sequence[tuple[str, float, int, bool]]) -> tuple[str, list[Any]]:
    """The SQL condition (and its parameters) of a cell of :meth:`Warehouse.median_cells`:
    every cut ``(column, value, row id, upper)`` holds, ``(x, sdc_row_id) >= (value, row
    id)`` when ``upper``, else ``<``."""
    terms, params = ["TRUE"], []
    for column, value, row, upper in cuts:
        q = _quoted(column)
        if upper:
            terms.append(f"({q} > ? OR ({q} = ? AND {ROW_ID} >= ?))")
        else:
            terms.append(f"({q} < ? OR ({q} = ? AND {ROW_ID} < ?))")
        params += [value, value, row]
    return " AND ".join(terms), params


def _quoted(name: str) -> str:
    """``name`` as a DuckDB identifier (double quotes, inner quotes doubled)."""
    return '"' + str(name).replace('"', '""') + '"'


def _positions(ids: np.ndarray) -> pa.Table:
    """``ids`` as a table of (``j``, ``sdc_pos``): the record of row id ``ids[i]`` to
    position ``i``."""
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"j": ids, "sdc_pos": np.arange(len(ids), dtype=np.int64)})


def _dates_as_dates(
    frame: pd.DataFrame, columns: Sequence[str], types: Sequence[Any]
) -> pd.DataFrame:
    """``frame`` with its DATE columns as ``datetime.date`` values (missing: None), as the
    source's reader gave them: DuckDB's ``.df()`` turns them into midnight timestamps, whose
    labels (``2021-06-10 00:00:00``) matched no category of the ordinal key the preflight
    ordered (``2021-06-10``), and which were published as timestamps."""
    for name, dtype in zip(columns, types, strict=True):
        if str(dtype) == "DATE":
            values = frame[name]
            dates = values.dt.date.astype(object)
            frame[name] = dates.where(values.notna(), None)
    return frame


def _dropped_at(con: duckdb.DuckDBPyConnection, schema: str, run_id: str) -> datetime | None:
    """When retention dropped the run's ``schema`` table, or None (never recorded dropped)."""
    present = con.execute(
        "SELECT count(*) FROM information_schema.tables "
        "WHERE table_schema = 'audit' AND table_name = 'run_tables'"
    ).fetchone()[0]
    if not present:
        return None
    row = con.execute(
        "SELECT dropped_at FROM audit.run_tables WHERE run_id = ? AND schema_name = ? "
        "AND dropped_at IS NOT NULL",
        [run_id, schema],
    ).fetchone()
    return row[0] if row else None


def unrecorded_ends(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Runs left ``running`` by a process of this host that is gone, each with the status the
    next release or ``sdcflow prune --yes`` records for it (:func:`ended_status`). Read-only:
    what a dry run or a reader shows before that settles them."""
    if not {"host", "pid", "target"} <= _audit_columns(con):
        return {}  # an earlier version's audit.runs: no run of it says which process ran it
    rows = con.execute(
        "SELECT run_id, pid, target FROM audit.runs WHERE status = 'running' AND host = ?",
        [_HOST],
    ).fetchall()
    return {
        run_id: ended_status(run_id, target)[0]
        for run_id, pid, target in rows
        if pid is not None and not process_alive(int(pid))
    }


def ended_status(run_id: str, target: str | None) -> tuple[str, str, str | None]:
    """``(status, message, published_to)`` of a run whose process ended without recording its
    end: ``published`` when ``target`` holds a release whose marker names the run."""
    if target and published_run(Path(target)) == run_id:
        return (
            "published",
            "published; the process ended after the swap, before recording it (recorded by "
            "recovery)",
            target,
        )
    return "interrupted", "the process ended before the run finished; nothing was published", None
