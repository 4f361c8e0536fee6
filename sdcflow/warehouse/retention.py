"""Retention of the confidential copies a run leaves in the warehouse.

Every run stores the source as ingested (``raw.run_<id>``), the repaired records
(``edited.run_<id>``) and the masked records before their checks (``masked.run_<id>``). They
are confidential (the raw file; a masked table whose checks failed), so a release's
``retention:`` policy drops them after a number of runs or days, and the copies of refused,
failed and interrupted runs at the end of the run (:func:`apply_policy`, called by the flow);
``sdcflow prune`` applies a policy on demand (:func:`expired`, :func:`drop_copies`).

What is never dropped: ``audit.*`` (every run's figures, checks and verdicts stay), the
``published`` copies (what was released), the owner's secrets (``sdcflow remap`` needs
them), and any table that is not a run's copy: only the tables recorded in
``audit.run_tables`` and those of the ``raw``, ``edited`` and ``masked`` schemas named
``run_<id>`` after a run ``audit.runs`` records (unrecorded: a run that failed between
creating and recording one, a version that recorded none) are dropped, by names built from
the allow-listed schema and the run id. Dropping marks the table's row in
``audit.run_tables`` (made for an unrecorded one) and the run's ``copies_pruned_at`` in
``audit.runs`` in the same transaction. The caller holds the warehouse's writer lock (a
release holds it for its whole run; ``sdcflow prune`` takes it).

DuckDB reuses the space of a dropped table after a checkpoint (run here after every drop);
it does not overwrite it at once, so until then the bytes remain inside the database file.
:func:`compact` (``sdcflow prune --yes --compact``) rewrites the file without them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sdcflow.warehouse.sql import quote_identifier
from sdcflow.warehouse.warehouse import (
    RUN_TABLES_DDL,
    Warehouse,
    audit_kind,
    check_warehouse_file,
    table_name,
    unrecorded_ends,
)

__all__ = ["CONFIDENTIAL", "ENDED_BADLY", "Expired", "Policy", "apply_policy", "compact",
           "drop_copies", "expired", "sweep_compactions"]  # fmt: skip

CONFIDENTIAL = ("raw", "edited", "masked")
ENDED_BADLY = ("refused", "failed", "interrupted")
_KEPT_BY_STATUS = ("published", "checked")


@dataclass(frozen=True)
class Policy:
    """A retention policy (the spec's ``retention:``, or ``sdcflow prune``'s options).

    Parameters
    ----------
    keep_last : keep the copies of this many latest runs of each release, counted separately
        for the runs that published, those that only passed their checks (``sdcflow check``,
        ``compare`` variants) and, with ``keep_refused``, the refused, failed and interrupted
        ones: a check or a variant never displaces the copies of a published run.
    keep_days : keep the copies of runs started within this many days.
    keep_refused : keep the copies of refused, failed and interrupted runs (else dropped).

    A run's copies are dropped when it falls outside any limit given; with no limit, only the
    copies of refused, failed and interrupted runs are dropped (unless ``keep_refused``).
    """

    keep_last: int | None = None
    keep_days: float | None = None
    keep_refused: bool = False


@dataclass(frozen=True)
class Expired:
    """A run whose copies the policy drops: which tables (schemas) and why."""

    run_id: str
    release: str
    status: str
    started_at: datetime
    schemas: tuple[str, ...]
    why: str


def expired(
    warehouse: Warehouse,
    policy: Policy,
    *,
    release: str | None = None,
    now: datetime | None = None,
) -> list[Expired]:
    """The runs (of ``release``, or of every release) whose copies (recorded in
    ``audit.run_tables`` and not yet dropped, or present under a run's table name unrecorded)
    ``policy`` drops, oldest first. Runs still ``running`` are never listed. Read-only."""
    if not warehouse.path.exists():
        return []
    now = now or datetime.now(UTC)
    eligible = _KEPT_BY_STATUS + (ENDED_BADLY if policy.keep_refused else ())
    with warehouse.connect(read_only=True) as con:
        if audit_kind(con) != "sdcflow":
            return []  # no run recorded: no table is a run's
        recorded = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'audit' AND table_name = 'run_tables'"
        ).fetchone()[0]
        # a run's copies: those audit.run_tables records, and any table of a confidential
        # schema named after a run audit.runs records (a run that failed between creating and
        # recording it, or one of a version that recorded none); a table named so after no
        # recorded run is not sdcflow's
        copies = (
            "SELECT run_id, schema_name FROM audit.run_tables WHERE dropped_at IS NULL UNION "
            if recorded
            else ""
        ) + (
            "SELECT substr(table_name, 5) AS run_id, table_schema AS schema_name "
            "FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND list_contains(?, table_schema) "
            "AND regexp_full_match(table_name, 'run_[0-9a-f]{32}')"
        )
        # a run whose process was killed counts as what `prune --yes` or the next release
        # settles it to (`sdcflow runs` shows it so), so that a dry run lists what --yes drops
        ends = unrecorded_ends(con)
        interrupted = [r for r, s in ends.items() if s == "interrupted"]
        published = [r for r, s in ends.items() if s == "published"]
        # keep_last counts each kind of run on its own (published; checked only: `check`
        # and `compare` variants; ended badly, with keep_refused), so that a check or a
        # variant never displaces the copies of the run that published
        rows = con.execute(
            "WITH ranked AS (SELECT run_id, release, status, started_at, "
            "  CASE WHEN list_contains(?, status) THEN row_number() OVER ("
            "    PARTITION BY release, list_contains(?, status), "
            "      CASE WHEN list_contains(?, status) THEN status ELSE 'ended badly' END "
            "    ORDER BY started_at DESC) "
            "  END AS recency FROM (SELECT * REPLACE (CASE "
            "    WHEN list_contains(?, run_id) THEN 'interrupted' "
            "    WHEN list_contains(?, run_id) THEN 'published' ELSE status END AS status) "
            "  FROM audit.runs)) "
            "SELECT r.run_id, r.release, r.status, r.started_at, r.recency, "
            "  list(t.schema_name ORDER BY t.schema_name) "
            f"FROM ranked r JOIN ({copies}) t USING (run_id) "
            "WHERE r.status <> 'running' "
            "  AND list_contains(?, t.schema_name) AND (? IS NULL OR r.release = ?) "
            "GROUP BY ALL ORDER BY r.started_at",
            [
                list(eligible),
                list(eligible),
                list(_KEPT_BY_STATUS),
                interrupted,
                published,
                list(CONFIDENTIAL),  # the copies' schemas
                list(CONFIDENTIAL),
                release,
                release,
            ],
        ).fetchall()
    out = []
    for run_id, rel, status, started_at, recency, schemas in rows:
        why = _why(policy, status, started_at, recency, now)
        if why:
            out.append(Expired(run_id, rel, status, started_at, tuple(schemas), why))
    return out


def _why(
    policy: Policy, status: str, started_at: datetime, recency: int | None, now: datetime
) -> str | None:
    if recency is None:  # not eligible: refused, failed or interrupted (or an unknown status)
        return f"{status} run" if status in ENDED_BADLY else None
    if policy.keep_last is not None and recency > policy.keep_last:
        kind = status if status in _KEPT_BY_STATUS else "refused, failed or interrupted"
        return f"older than the last {policy.keep_last} {kind} runs"
    if policy.keep_days is not None:
        started = started_at if started_at.tzinfo else started_at.replace(tzinfo=UTC)
        try:
            cutoff = now - timedelta(days=policy.keep_days)
        except OverflowError:  # before any date (`keep_days: .inf`): every run is within it
            return None
        if started < cutoff:
            return f"started more than {policy.keep_days:g} days ago"
    return None


def drop_copies(warehouse: Warehouse, runs: Sequence[Expired], now: datetime | None = None) -> int:
    """Drop the listed runs' recorded copies and record it; return the tables dropped.

    One transaction: the drops, ``audit.run_tables.dropped_at`` and
    ``audit.runs.copies_pruned_at`` commit together. The caller holds the writer lock."""
    if not runs:
        return 0
    now = now or datetime.now(UTC)
    dropped = 0
    with warehouse.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(RUN_TABLES_DDL)  # a warehouse of a version that recorded no copies
            for run in runs:
                for schema in run.schemas:
                    if schema not in CONFIDENTIAL:  # never published, audit or secrets
                        continue
                    con.execute(f"DROP TABLE IF EXISTS {table_name(schema, run.run_id)}")
                    con.execute(  # an unrecorded copy is recorded as dropped too
                        "INSERT INTO audit.run_tables (run_id, schema_name, created_at, "
                        "dropped_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, schema_name) "
                        "DO UPDATE SET dropped_at = excluded.dropped_at",
                        [run.run_id, schema, run.started_at, now],
                    )
                    dropped += 1
                con.execute(
                    "UPDATE audit.runs SET copies_pruned_at = ? WHERE run_id = ?",
                    [now, run.run_id],
                )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("CHECKPOINT")
    return dropped


def apply_policy(
    warehouse: Warehouse, policy: Policy, release: str, now: datetime | None = None
) -> list[Expired]:
    """Drop what ``policy`` expires among ``release``'s runs (end of a run); return them."""
    runs = expired(warehouse, policy, release=release, now=now)
    drop_copies(warehouse, runs, now)
    return runs


def compact(warehouse: Warehouse) -> tuple[int, int]:
    """Rewrite the warehouse file with its live contents only, so that the blocks of dropped
    tables (their bytes) leave the disk; return the file's size before and after (bytes).

    Every schema, table, view and constraint is copied (``COPY FROM DATABASE``) into a new
    file in a private folder beside it (``.<name>.compact-…``, mode ``0700``, made by this
    call), which is flushed to disk and then renamed over the warehouse (``os.replace``: a
    reader sees the old file or the new one). The caller holds the writer lock, so no
    release writes meanwhile.

    The new file takes the old one's permission bits (a warehouse the owner keeps ``0600``
    stays so: it holds the raw copies and the owner's secrets; DuckDB creates files with the
    umask's bits, hence the private folder while the copy is written), and a warehouse
    reached through a symbolic link is rewritten where the link points: the link stays, and
    the file it names is the one that loses the bytes.
    """
    # a file with other hard links is refused (the other names would keep the bytes)
    check_warehouse_file(warehouse.path)
    sweep_compactions(warehouse)
    path = Path(os.path.realpath(warehouse.path))
    info = path.stat()
    before = info.st_size
    folder = Path(tempfile.mkdtemp(prefix=f".{path.name}.compact-", dir=path.parent))
    tmp = folder / path.name
    literal = "'" + str(tmp).replace("'", "''") + "'"
    try:
        with warehouse.connect() as con:
            con.execute("CHECKPOINT")
            name = con.execute("SELECT current_database()").fetchone()[0]
            con.execute(f"ATTACH {literal} AS sdc_compacted")
            try:
                con.execute(f"COPY FROM DATABASE {quote_identifier(name)} TO sdc_compacted")
            finally:
                con.execute("DETACH sdc_compacted")
        with open(tmp, "rb+") as fh:
            mode = stat.S_IMODE(info.st_mode)
            os.fchmod(fh.fileno(), mode & ~0o077)
            with contextlib.suppress(OSError):  # another owner's file: keep the bits at least
                os.fchown(fh.fileno(), info.st_uid, info.st_gid)
            if os.fstat(fh.fileno()).st_gid != info.st_gid:
                # the file's group could not be kept: its group bits would open the raw
                # copies to the members of another group (this user's), so they are dropped
                mode &= ~0o070
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:  # the folder and whatever DuckDB left in it were made by this call
        shutil.rmtree(folder, ignore_errors=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return before, path.stat().st_size


_COMPACT_SUFFIX = re.compile(r"[a-z0-9_]{8}")  # tempfile.mkdtemp's random part


def sweep_compactions(warehouse: Warehouse) -> list[Path]:
    """Remove the private folders of compactions that were killed before their end
    (``SIGKILL``, a power cut: :func:`compact`'s ``finally`` never ran); return them.

    Such a folder holds a partial copy of the warehouse (the raw copies of every kept run,
    the owner's secrets) that nothing else would ever remove. Only a folder this module made
    is touched: beside the warehouse's real file, named ``.<name>.compact-`` and the eight
    characters of :func:`tempfile.mkdtemp`, a folder (not a link) of mode ``0700``, holding
    nothing but that copy (``<name>``, its ``.wal``). The caller holds the writer lock, so no
    compaction of this warehouse is running.
    """
    path = Path(os.path.realpath(warehouse.path))
    prefix = f".{path.name}.compact-"
    removed: list[Path] = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        if not _COMPACT_SUFFIX.fullmatch(entry.name[len(prefix) :]):
            continue
        try:
            info = entry.lstat()
            names = {p.name for p in entry.iterdir()} if stat.S_ISDIR(info.st_mode) else None
        except OSError:
            continue
        if names is None or stat.S_IMODE(info.st_mode) != 0o700:
            continue
        if not names <= {path.name, f"{path.name}.wal"}:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
