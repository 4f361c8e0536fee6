"""Confidential copies readable by their owner only, whatever the umask.

The warehouse holds every raw record; DuckDB creates it, its write-ahead log (``.wal``,
removed at each checkpoint and created again at the next write) and its spill folder
(``.tmp``) itself, with the process's umask: under the usual ``022`` they were ``0644``, open
to every local user. :func:`owner_only_files` sets the umask to at least ``077`` for as long as
a block runs (a warehouse connection, from its opening to its close), so DuckDB creates
every file of the warehouse ``0600`` and every folder ``0700`` from its first byte: no window
in which raw data sits in a file others can read.

The umask belongs to the process, not to a thread: what another thread creates meanwhile is
owner-only too (stricter, never looser); the umask is restored when the last such block of the
process ends.

:func:`private_folder` makes the folders that hold figures about the confidential data (a
run's report folder and its Data Docs, the warehouse's folder when sdcflow creates it)
``0700``; :func:`private_tree` closes a whole tree a library wrote (the Data Docs: ``0700``
folders, ``0600`` files); :func:`exposed` says whether an existing file (a warehouse made
before, or by hand) can be read by others: sdcflow reports it and leaves its mode alone (the
owner may share it with a group on purpose).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "OWNER_ONLY_UMASK",
    "exposed",
    "make_folders",
    "owner_only_files",
    "private_folder",
    "private_tree",
    "process_umask",
]

OWNER_ONLY_UMASK = 0o077

_guard = threading.Lock()
_depth = 0
_saved = 0


@contextmanager
def owner_only_files() -> Iterator[None]:
    """Run the block with the process's umask at least ``077`` (files ``0600``, folders
    ``0700``); re-entrant and thread-safe (the umask is restored when the last block ends)."""
    global _depth, _saved
    with _guard:
        if _depth == 0:
            _saved = os.umask(OWNER_ONLY_UMASK)
            os.umask(_saved | OWNER_ONLY_UMASK)
        _depth += 1
    try:
        yield
    finally:
        with _guard:
            _depth -= 1
            if _depth == 0:
                os.umask(_saved)


def process_umask() -> int:
    """The process's own umask: the one it has outside :func:`owner_only_files` blocks (read
    from ``/proc/self/status`` where it can be, so no other thread sees it change)."""
    with _guard:
        if _depth:
            return _saved
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
        except (OSError, ValueError, IndexError):
            pass
        mask = os.umask(OWNER_ONLY_UMASK)  # stricter for the instant it takes, never looser
        os.umask(mask)
        return mask


def make_folders(path: Path, mode: int, *, exist_ok: bool = True) -> Path:
    """Create ``path`` and its missing parents with ``mode`` (set explicitly, whatever the
    umask); folders that exist already keep their mode (they are not sdcflow's to change).
    ``exist_ok=False``: ``FileExistsError`` when ``path`` exists. Returns ``path``."""
    path = Path(path)
    missing = [p for p in (path, *path.parents) if not os.path.lexists(p)]
    if not missing and not exist_ok:
        raise FileExistsError(17, "File exists", str(path))
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if folder == path and not exist_ok:
                raise
            continue  # made meanwhile by another process: its mode is its maker's
        os.chmod(folder, mode)
    if not os.path.isdir(path):  # a file there: as ``mkdir(exist_ok=True)`` says it
        raise FileExistsError(17, "File exists", str(path))
    return path


def private_folder(path: Path, *, exist_ok: bool = True) -> Path:
    """:func:`make_folders` with mode ``0700``: the folder and the missing parents sdcflow
    creates are their owner's only."""
    return make_folders(path, 0o700, exist_ok=exist_ok)


def private_tree(path: Path) -> Path:
    """Make the folder ``path`` and every folder below it ``0700`` and every file ``0600``
    (links are not followed): for a tree a library wrote, which may copy its files' modes
    from where they came from. Returns ``path``."""
    path = Path(path)
    os.chmod(path, 0o700)
    for root, folders, files in os.walk(path):
        for name in folders:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o700)
        for name in files:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o600)
    return path


def exposed(path: Path) -> str | None:
    """``"mode 0644"`` (its permission bits) when the existing file ``path`` can be read or
    written by its group or by others; None when it is owner-only or absent."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    return f"mode {mode:04o}" if mode & 0o066 else None
