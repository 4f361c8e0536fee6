"""What killed runs leave beside the warehouse, and its removal by the next run.

A run killed by ``SIGKILL`` or a power cut never reaches the ``finally`` blocks that remove
its private working copies:

* the ingest's copy of the source (``.<warehouse>.ingest-<random>/source.<ext>``: every byte
  of the confidential file, :meth:`~sdcflow.warehouse.warehouse.Warehouse.ingest_source`);
* the streamed mask's pieces (``.sdcflow-pieces-<run id>/``: every record's keys as Parquet,
  :mod:`sdcflow.tasks.cells`) and its work table in the warehouse
  (``masked.sdc_pieces_<run id>``).

All are owner-only and confidential, and nothing else would ever remove them. The next run
of the warehouse and ``sdcflow prune --yes`` remove them: both hold the warehouse's writer
lock, which every run holds from start to end, so no run that made them is alive.

Only what sdcflow made is touched: a folder (not a link) of mode ``0700`` owned by this user,
named as the code that makes it names it, holding nothing but what that code writes (the
copy; the ``pieces`` and ``masked`` folders of Parquet files), and, for the pieces, of a run
this warehouse's ``audit.runs`` records. Anything else, even under a matching name, stays.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

import duckdb

from sdcflow.warehouse.warehouse import Warehouse, audit_kind

__all__ = ["PIECES_PREFIX", "pieces_folder", "sweep_run_leftovers"]

#: The streamed mask's private folder of a run, beside the warehouse.
PIECES_PREFIX = ".sdcflow-pieces-"
_RUN_ID = re.compile(r"[0-9a-f]{32}")
_MKDTEMP = re.compile(r"[a-z0-9_]{8}")  # tempfile.mkdtemp's random part
_COPY = re.compile(r"source(\.[a-z0-9]+)?")  # sdcflow.warehouse.sources.private_copy
_PIECE_FILE = re.compile(r"[A-Za-z0-9_.=-]+\.parquet")  # DuckDB's partitions, the parts
_PIECE_DIR = re.compile(r"sdc_piece=[0-9]+")  # DuckDB's PARTITION_BY folders
_PIECE_TOP = {"pieces", "masked"}


def pieces_folder(warehouse: Warehouse, run_id: str) -> Path:
    """The private folder of ``run_id``'s pieces, beside the warehouse (made by the caller)."""
    return warehouse.path.parent / f"{PIECES_PREFIX}{run_id}"


def sweep_run_leftovers(warehouse: Warehouse, current: str | None = None) -> list[Path]:
    """Remove the ingest copies and the pieces (folders and work tables) that killed runs of
    this warehouse left; return the folders removed. ``current``: the caller's own run, whose
    pieces stay. The caller holds the writer lock."""
    folder = warehouse.path.parent
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    ingest = f".{warehouse.path.name}.ingest-"
    removed = [
        e
        for e in entries
        if e.name.startswith(ingest)
        and _MKDTEMP.fullmatch(e.name[len(ingest) :])
        and _ingest_copy(e)
        and _remove(e)
    ]
    runs = {
        e.name[len(PIECES_PREFIX) :]: e
        for e in entries
        if e.name.startswith(PIECES_PREFIX)
        and _RUN_ID.fullmatch(e.name[len(PIECES_PREFIX) :])
        and e.name[len(PIECES_PREFIX) :] != current
    }
    if not runs:  # the usual case: no query of the warehouse at all
        return removed
    ended = _recorded_runs(warehouse, current) & set(runs)
    for run_id in sorted(ended):
        if _pieces(runs[run_id]) and _remove(runs[run_id]):
            removed.append(runs[run_id])
    # a killed mask's work table goes with its folder (made before it, removed after it)
    _drop_work_tables(warehouse, ended)
    return removed


def _own_private_folder(path: Path) -> list[Path] | None:
    """The entries of ``path`` if it is a folder (not a link) of mode 0700 owned by this
    user, else None."""
    try:
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != 0o700:
            return None
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return None
        return list(path.iterdir())
    except OSError:
        return None


def _ingest_copy(path: Path) -> bool:
    """Whether ``path`` holds what an ingest writes: nothing, or its copy of the source."""
    entries = _own_private_folder(path)
    if entries is None or len(entries) > 1:
        return False
    return all(_COPY.fullmatch(e.name) and e.is_file() and not e.is_symlink() for e in entries)


def _pieces(path: Path) -> bool:
    """Whether ``path`` holds only what the streamed mask writes: the ``pieces`` and
    ``masked`` folders of Parquet files (partition folders inside), no link."""
    entries = _own_private_folder(path)
    if entries is None or not {e.name for e in entries} <= _PIECE_TOP:
        return False
    for top in entries:
        if top.is_symlink() or not top.is_dir():
            return False
        for root, dirs, files in os.walk(top):
            if any(not _PIECE_DIR.fullmatch(d) or (Path(root) / d).is_symlink() for d in dirs):
                return False
            if any(not _PIECE_FILE.fullmatch(f) or (Path(root) / f).is_symlink() for f in files):
                return False
    return True


def _remove(path: Path) -> bool:
    shutil.rmtree(path, ignore_errors=True)
    return not path.exists()


def _recorded_runs(warehouse: Warehouse, current: str | None) -> set[str]:
    """The runs this warehouse's ``audit.runs`` records, the caller's own left out."""
    if not warehouse.path.exists():
        return set()
    try:
        with warehouse.connect(read_only=True) as con:
            if audit_kind(con) != "sdcflow":
                return set()
            ids = {str(r[0]) for r in con.execute("SELECT run_id FROM audit.runs").fetchall()}
    except duckdb.Error:
        return set()
    return ids - {current}


def _drop_work_tables(warehouse: Warehouse, runs: set[str]) -> None:
    """Drop the streamed mask's work tables (``masked.sdc_pieces_<run id>``) of ``runs``."""
    if not runs or not warehouse.path.exists():
        return
    with warehouse.connect() as con:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_catalog = current_database() AND table_schema = 'masked' "
                "AND regexp_full_match(table_name, 'sdc_pieces_[0-9a-f]{32}')"
            ).fetchall()
        ]
        for name in names:
            if name[len("sdc_pieces_") :] in runs:
                con.execute(f"DROP TABLE IF EXISTS masked.{name}")
