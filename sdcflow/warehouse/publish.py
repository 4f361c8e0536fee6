"""Atomic publication of a release directory.

``<output>/<release>/`` holds ``data.parquet``, ``data.csv`` and ``manifest.json``. A new
release is built in a temporary directory beside it, every file and the directory are
fsync'ed, and only then does it replace the old one: by an atomic exchange of the two
directories (Linux ``renameat2(RENAME_EXCHANGE)``), or where that is unavailable by two
renames whose crash window is repaired on the next run (:func:`recover`). A failed or
interrupted run therefore leaves the previous release byte-for-byte as it was and never a
partial one.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdcflow.warehouse.warehouse import process_alive

DATA_FILES = ("data.parquet", "data.csv")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False when the platform cannot (caller falls back)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def _owner_alive(path: Path) -> bool:
    """Temporary directories are named ``.<release>.<kind>-<pid>-<uuid>``: is <pid> running?"""
    try:
        pid = int(path.name.rsplit("-", 2)[-2])
    except (IndexError, ValueError):
        return False
    return process_alive(pid)


def recover(output: Path, release: str) -> None:
    """Undo what an interrupted publication left: restore a set-aside release and drop the
    temporary directories of runs that are no longer running (a concurrent run's are kept)."""
    if not output.is_dir():
        return
    target = output / release
    for old in sorted(output.glob(f".{release}.old-*")):
        if _owner_alive(old):
            continue
        if not target.exists():
            old.rename(target)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for tmp in output.glob(f".{release}.tmp-*"):
        if not _owner_alive(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def write_release(
    output: Path,
    release: str,
    frame: pd.DataFrame,
    manifest: dict[str, Any],
    *,
    before_swap: Callable[[Path], None] | None = None,
    extra_files: dict[str, bytes] | None = None,
) -> Path:
    """Publish ``frame`` and ``manifest`` as ``output/release`` atomically; return its path.

    ``extra_files`` (name -> bytes, e.g. the run report) are published beside the data and
    hashed in the manifest like them.

    ``manifest`` is completed with the row and column counts and the sha256 of each data file.
    ``before_swap`` (tests only) runs on the finished temporary directory just before the swap.
    """
    output.mkdir(parents=True, exist_ok=True)
    recover(output, release)
    target = output / release
    tmp = output / f".{release}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp / "data.parquet")
        frame.to_csv(tmp / "data.csv", index=False)
        extra = dict(extra_files or {})
        if set(extra) & {*DATA_FILES, "manifest.json"} or any("/" in n for n in extra):
            raise ValueError(f"extra file names {sorted(extra)} clash with the release files")
        for name, blob in extra.items():
            (tmp / name).write_bytes(blob)
        files = (*DATA_FILES, *extra)
        manifest = {
            **manifest,
            "rows": len(frame),
            "columns": list(map(str, frame.columns)),
            "files": {name: {"sha256": _sha256(tmp / name)} for name in files},
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        for name in (*files, "manifest.json"):
            _fsync_path(tmp / name)
        _fsync_path(tmp)
        if before_swap is not None:
            before_swap(tmp)
        if not target.exists():
            tmp.rename(target)
        elif _exchange(tmp, target):
            shutil.rmtree(tmp)  # tmp now holds the previous release
        else:
            old = output / f".{release}.old-{os.getpid()}-{uuid.uuid4().hex}"
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old)
        _fsync_path(output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
