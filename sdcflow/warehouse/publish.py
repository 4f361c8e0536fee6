"""Atomic publication of a release directory, and what sdcflow may replace or remove.

``<output>/<release>/`` holds ``data.parquet``, ``data.csv``, ``manifest.json`` and the marker
``.sdcflow-release`` (the release name, the run id and the sha256 of ``manifest.json``). A new
release is built in a temporary directory beside it (``.<release>.tmp-<pid>-<uuid>``, marked
from its first moment and ``flock``-ed by its run), every file and the directory are
fsync'ed, and only then does it replace the old one: by an atomic exchange of the two
directories (Linux ``renameat2(RENAME_EXCHANGE)``), or where that is unavailable by two
renames whose crash window is repaired on the next run (:func:`recover`). A failed or
interrupted run therefore leaves the previous release byte-for-byte as it was and never a
partial one. The temporary directory is ``0700`` while it is built; the release is then opened
to readers, never to writers: files ``0644``, folders ``0755`` at most, whatever the umask (a
stricter one, ``077``, keeps it private) (:func:`release_modes`).

sdcflow never removes or renames what it did not create:

* ``<output>/<release>`` is replaced only when it is a previous sdcflow release: a folder (not
  a link) whose marker names this release and matches its ``manifest.json``, holding nothing
  but the files that manifest lists (:func:`previous_release_problem`). Anything else is
  refused before the run (:func:`check_release_target`) and again just before the swap.
* The source, the warehouse, the rules and the run reports can never be, or be inside, a
  release target (:func:`check_release_paths`).
* :func:`recover` removes only temporary directories of the strict sdcflow pattern whose run
  is over (its process is gone and nobody holds the folder's ``flock``) and that carry an
  sdcflow marker (or are empty).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdcflow.errors import InputError, Reason
from sdcflow.warehouse import jsontext
from sdcflow.warehouse.ownership import hold, locked_by_other, process_alive
from sdcflow.warehouse.private import make_folders, process_umask
from sdcflow.warehouse.writable import cannot_create_in

DATA_FILES = ("data.parquet", "data.csv")
MARKER = ".sdcflow-release"
MANIFEST = "manifest.json"

# Records per chunk a release is written in: pyarrow's default row group (``write_table``
# cuts a table into groups of 1 Mi rows), so that a file written chunk by chunk has the row
# groups, and so the bytes, of one written whole.
CHUNK_ROWS = 1 << 20


@dataclass(frozen=True)
class Chunked:
    """A release's records read when written, as consecutive frames in published order.

    ``read()`` yields the frames (each ``CHUNK_ROWS`` records but the last, which may hold
    fewer; at least one frame, empty for an empty release, which carries the columns). The
    publication holds one frame at a time, never the release (:func:`write_release`).
    """

    read: Callable[[], Iterator[pd.DataFrame]]


def frame_chunks(frame: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """``frame`` as :class:`Chunked` frames: slices of ``CHUNK_ROWS`` records (views)."""
    yield frame.iloc[:CHUNK_ROWS]
    for start in range(CHUNK_ROWS, len(frame), CHUNK_ROWS):
        yield frame.iloc[start : start + CHUNK_ROWS]


_TEMP = re.compile(r"^\.(?P<release>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-(?P<key>[0-9a-f]{32})$")


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


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def _renameat2(a: Path, b: Path, flags: int) -> bool:
    """``renameat2(a, b, flags)``; False when the platform cannot (the caller falls back)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False when the platform cannot (caller falls back)."""
    return _renameat2(a, b, _RENAME_EXCHANGE)


# -- the marker ---------------------------------------------------------------------------------


def _write_marker(folder: Path, body: Mapping[str, Any]) -> None:
    """Write the marker atomically (a rename inside ``folder``) and fsync it."""
    part = folder / f"{MARKER}.part"
    part.write_text(json.dumps({"sdcflow": 1, **body}, sort_keys=True) + "\n")
    _fsync_path(part)
    part.replace(folder / MARKER)


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of ``folder`` as written by sdcflow, or None (absent, unreadable, foreign)."""
    try:
        body = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("sdcflow") != 1:
        return None
    return body


def published_run(folder: Path, release: str | None = None) -> str | None:
    """The run id of the sdcflow release in ``folder`` (checked against its manifest), or None.

    With ``release``, the marker must also name that release. A release whose data files
    were edited since is still the one that run published (:func:`files_intact` says whether
    they were)."""
    problem = previous_release_problem(folder, release, edited_ok=True)
    if problem is not None or not folder.exists():
        return None
    marker = read_marker(folder)
    return str(marker["run_id"]) if marker else None


def files_intact(folder: Path) -> bool:
    """Whether every data file ``folder``'s manifest lists is there with the sha256 the
    manifest records (a release edited or truncated since its publication is not)."""
    try:
        files = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return changed_file(folder, files) is None


def previous_release_problem(
    target: Path, release: str | None = None, *, edited_ok: bool = False
) -> str | None:
    """Why ``target`` is not a previous sdcflow release that a new run may replace; None when
    it is one, or when nothing is there.

    A previous release is a folder, not a symbolic link, whose marker says ``published``,
    names ``release`` (when given) and holds the sha256 of its ``manifest.json``, which
    holds nothing but the marker, the manifest and the files the manifest lists, and whose
    files are still those the manifest lists (:func:`changed_file`: the size, then the
    sha256): a release someone edited is theirs now. ``edited_ok`` (``--force``) lets a
    release whose listed files changed count as previous; nothing else does.
    """
    if not os.path.lexists(target):
        return None
    if target.is_symlink():
        return "it is a symbolic link"
    if not target.is_dir():
        return "it is a file, not a folder"
    marker = read_marker(target)
    if marker is None:
        return f"it has no sdcflow marker ({MARKER}): sdcflow did not publish it"
    if marker.get("state") != "published":
        return "its sdcflow marker is not that of a finished release"
    if release is not None and marker.get("release") != release:
        return "its sdcflow marker names another release"
    try:
        manifest_sha = _sha256(target / MANIFEST)
        manifest = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"its {MANIFEST} is missing or unreadable"
    if manifest_sha != marker.get("manifest_sha256"):
        return f"its {MANIFEST} is not the one sdcflow wrote"
    listed = set(manifest.get("files", {})) if isinstance(manifest, dict) else set()
    allowed = {MARKER, MANIFEST, *listed}
    foreign = sorted(p.name for p in target.iterdir() if p.name not in allowed or p.is_dir())
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        return f"it holds files sdcflow did not write ({shown})"
    if not edited_ok:
        changed = changed_file(target, manifest.get("files") if listed else None)
        if changed is not None:
            return (
                f"its {changed} is not the file sdcflow published (it no longer matches "
                f"{MANIFEST}); --force replaces it"
            )
    return None


def changed_file(folder: Path, files: Any) -> str | None:
    """The first file ``files`` (a manifest's ``files``: name -> ``{"sha256", "bytes"}``)
    lists whose bytes in ``folder`` are not the published ones, or None when none is (every
    one a regular file of the recorded size, when recorded, and sha256). Sizes are compared
    first, so that an appended line costs no hashing; the hashes are read in full."""
    if not isinstance(files, dict) or not files:
        return MANIFEST
    entries = sorted(files.items())
    for name, entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            return MANIFEST
        try:
            info = os.lstat(folder / name)
        except OSError:
            return name
        if not stat.S_ISREG(info.st_mode):
            return name
        size = entry.get("bytes")
        if isinstance(size, int) and info.st_size != size:
            return name
    for name, entry in entries:
        try:
            if _sha256(folder / name) != entry["sha256"]:
                return name
        except OSError:
            return name
    return None


# -- preflight ----------------------------------------------------------------------------------


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path("/")


def check_writable_folder(folder: Path, field: str, what: str, option: str = "") -> None:
    """Refuse (``InputError``, reason ``OUTPUT``) a folder sdcflow could neither create nor
    write into: its nearest existing part is not a folder, or no file can be created in it
    (:func:`~sdcflow.warehouse.writable.cannot_create_in`: a read-only file system, ``/proc``
    even for root). ``option``: how the user names the
    folder (default the spec field, ```field:```)."""
    option = option or f"`{field}:`"
    base = _nearest_existing(Path(folder))
    if not base.is_dir():
        raise InputError(
            f"{base} is not a folder, so {what} {folder} cannot be made there; point "
            f"{option} elsewhere",
            code=Reason.OUTPUT,
            field=field,
        )
    why = cannot_create_in(base)
    if why is not None:
        raise InputError(
            f"cannot write into {base} ({why}; to hold {what} {folder}); make it writable or "
            f"point {option} elsewhere",
            code=Reason.OUTPUT,
            field=field,
        )


def check_release_target(output: Path, release: str, *, force: bool = False) -> None:
    """Refuse (``InputError``, reason ``OUTPUT``) an output folder that cannot take the release:
    a file where the folder should be, a folder sdcflow cannot write, or a ``<release>`` entry
    in it that is not a previous sdcflow release (with ``force``, one whose listed files were
    edited still is)."""
    output = Path(output)
    if os.path.lexists(output) and not output.is_dir():
        raise InputError(
            f"output {output} is not a folder; point `output:` at a folder (it is created if "
            "missing)",
            code=Reason.OUTPUT,
        )
    check_writable_folder(output, "output", "the output folder")
    target = output / release
    problem = previous_release_problem(target, release, edited_ok=force)
    if problem is not None:
        raise InputError(
            f"{target} exists and sdcflow will not replace it: {problem}; choose another "
            "`release:` name or `output:` folder (sdcflow replaces only a release it published)",
            code=Reason.OUTPUT,
        )


def enclosing_release(path: Path) -> Path | None:
    """The sdcflow release folder (one with sdcflow's marker) that ``path`` or one of its
    folders is, after resolving symbolic links; None when there is none."""
    real = _real(path)
    for folder in (real, *real.parents):
        if read_marker(folder) is not None:
            return folder
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def check_release_paths(target: Path, protected: Mapping[str, Path | None]) -> None:
    """Refuse a release target that is, or contains, any ``protected`` path (the source, the
    warehouse, the rules file...), or that overlaps the run reports: publication would replace
    them. Paths are compared after resolving symbolic links.

    ``protected`` maps a label ("the source file") to a path; the label ``reports`` marks the
    reports folder of the release, which must not overlap the target in either direction.
    """
    real_target = _real(target)
    for label, path in protected.items():
        if path is None:
            continue
        real = _real(path)
        clash = _within(real, real_target)
        if label == "reports":
            clash = clash or _within(real_target, real)
            label = f"the run reports ({path})"
        else:
            label = f"{label} {path}"
        if clash:
            raise InputError(
                f"the release would be published to {target}, which overlaps {label}; choose "
                "another `output:` folder or `release:` name (or move the reports, the source "
                "or the warehouse out of it)",
                code=Reason.OUTPUT,
            )


# -- recovery -------------------------------------------------------------------------------------


def _owned_by_sdcflow(folder: Path) -> bool:
    """Empty, marked, or holding nothing but the marker's ``.part``: a run killed while it
    wrote its first marker (between ``write_text`` and the rename, an fsync apart) left
    that, which nobody else writes."""
    try:
        names = {p.name for p in folder.iterdir()}
    except OSError:
        return False
    return not names or names == {f"{MARKER}.part"} or read_marker(folder) is not None


def recover(output: Path, release: str | None = None) -> list[Path]:
    """Undo what interrupted publications left in ``output``: restore a set-aside release and
    remove the temporary directories of runs that are over. Returns what it removed or
    restored.

    Only entries named like sdcflow's temporary directories, holding an sdcflow marker (or
    empty), whose process is gone and whose ``flock`` nobody holds are touched; a concurrent
    run's are kept. ``release`` limits the sweep to one release (default: every release in
    the folder).
    """
    if not output.is_dir():
        return []
    touched: list[Path] = []
    entries = sorted(output.iterdir(), key=lambda p: p.name)
    for entry in entries:
        m = _TEMP.match(entry.name)
        if m is None or (release is not None and m["release"] != release):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        if process_alive(int(m["pid"])) or locked_by_other(entry):
            continue
        if not _owned_by_sdcflow(entry):
            continue
        target = output / m["release"]
        if m["kind"] == "old" and not os.path.lexists(target):
            marker = read_marker(entry)
            if marker and marker.get("state") == "published":
                entry.rename(target)
                touched.append(target)
                continue
        shutil.rmtree(entry, ignore_errors=True)
        touched.append(entry)
    return touched


# -- publication ----------------------------------------------------------------------------------


def write_release(
    output: Path,
    release: str,
    frame: pd.DataFrame | Chunked,
    manifest: dict[str, Any],
    *,
    before_swap: Callable[[Path], None] | None = None,
    after_swap: Callable[[Path], None] | None = None,
    extra_files: dict[str, bytes] | None = None,
    force: bool = False,
) -> Path:
    """Publish ``frame`` and ``manifest`` as ``output/release`` atomically; return its path.

    ``frame``: the records, or a :class:`Chunked` reader of them (a warehouse table read in
    chunks: the process holds one chunk, never the release). Both are written chunk by
    chunk, with the same bytes as the whole frame written at once (``pq.write_table``,
    :func:`write_csv`).

    ``extra_files`` (name -> bytes, e.g. the run report) are published beside the data and
    hashed in the manifest like them.

    ``manifest`` is completed with the row and column counts and the sha256 of each data file;
    the marker records the run id (``manifest["run_id"]``) and the manifest's sha256.
    ``before_swap`` (tests only) runs on the finished temporary directory just before the swap.
    ``after_swap`` is called with the release folder right after the swap: from then on the
    release is live whatever happens next, and the caller (the flow, the command line) must
    say so even when this function does not return.
    ``force`` (``--force``) replaces a previous release whose listed files were edited.

    Raises
    ------
    InputError
        Reason ``OUTPUT``: ``output/release`` exists and is not a previous sdcflow release
        (checked again just before the swap).
    """
    file_mode, folder_mode = release_modes()
    make_folders(output, folder_mode)  # the folders it creates; existing ones keep their mode
    recover(output)
    target = output / release
    _refuse_foreign(target, release, force)
    run_id = str(manifest.get("run_id", ""))
    tmp = output / f".{release}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    os.mkdir(tmp, 0o700)  # nobody else's while it is built, whatever the umask
    try:
        with hold(tmp):
            _write_marker(tmp, {"state": "building", "release": release, "run_id": run_id})
            _write_files(tmp, frame, manifest, extra_files)
            _write_marker(
                tmp,
                {
                    "state": "published",
                    "release": release,
                    "run_id": run_id,
                    "manifest_sha256": _sha256(tmp / MANIFEST),
                },
            )
            _open_to_readers(tmp, file_mode, folder_mode)
            _fsync_path(tmp)
            if before_swap is not None:
                before_swap(tmp)
            _refuse_foreign(target, release, force)  # again: the folder may have changed meanwhile
            previous = _swap(tmp, target, output, release)
            if after_swap is not None:
                after_swap(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # The release is live: nothing below may turn the run into a failure. What cannot be
    # tidied now (the previous release, set aside) is removed by the next run's recover().
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)
    try:
        _fsync_path(output)
    except OSError:
        pass
    return target


def release_modes() -> tuple[int, int]:
    """The modes of a release's files and folders: what the process's umask gives, with at
    least ``022`` (readable by others, never writable by them: files ``0644``, folders
    ``0755`` at most); a stricter umask (``077``: a private release) stays stricter."""
    mask = process_umask() | 0o022
    return 0o666 & ~mask, 0o777 & ~mask


def _open_to_readers(tmp: Path, file_mode: int, folder_mode: int) -> None:
    """Give the finished release its modes (:func:`release_modes`): its files first, the
    folder last (until then ``0700``, so no file is ever reachable with a looser mode)."""
    for entry in tmp.iterdir():
        if entry.is_file() and not entry.is_symlink():
            os.chmod(entry, file_mode)
    os.chmod(tmp, folder_mode)


def _refuse_foreign(target: Path, release: str, force: bool = False) -> None:
    problem = previous_release_problem(target, release, edited_ok=force)
    if problem is not None:
        raise InputError(
            f"{target} exists and sdcflow will not replace it: {problem}; nothing was published",
            code=Reason.OUTPUT,
        )


def _write_files(
    tmp: Path,
    frame: pd.DataFrame | Chunked,
    manifest: dict[str, Any],
    extra_files: dict[str, bytes] | None,
) -> None:
    extra = dict(extra_files or {})
    reserved = {*DATA_FILES, MANIFEST, MARKER, f"{MARKER}.part"}
    if set(extra) & reserved or any("/" in n or n.startswith(".") for n in extra):
        raise ValueError(f"extra file names {sorted(extra)} clash with the release files")
    chunks = frame.read() if isinstance(frame, Chunked) else frame_chunks(frame)
    rows, columns = _write_data(chunks, tmp / "data.parquet", tmp / "data.csv")
    for name, blob in extra.items():
        (tmp / name).write_bytes(blob)
    files = (*DATA_FILES, *extra)
    full = {
        **manifest,
        "rows": rows,
        "columns": columns,
        "files": {
            name: {"sha256": _sha256(tmp / name), "bytes": (tmp / name).stat().st_size}
            for name in files
        },
    }
    # valid JSON: a recoding's edge .inf is written "inf", not Infinity (see jsontext)
    (tmp / MANIFEST).write_text(jsontext.dumps(full, indent=2, default=str) + "\n")
    for name in (*files, MANIFEST):
        _fsync_path(tmp / name)


def _write_data(chunks: Iterator[pd.DataFrame], parquet: Path, csv: Path) -> tuple[int, list[str]]:
    """Write the chunks to ``parquet`` and ``csv`` one at a time; return the records and the
    column names.

    The Parquet schema (with pandas' metadata) is the first chunk's, as ``pq.write_table``
    of the whole frame takes it from the whole frame: the same bytes whenever the first chunk
    has the types of the rest (a column missing throughout the first chunk, Arrow's null
    type there, that holds values later is refused by :func:`_as_table`, never written with
    a type the whole frame would not have had). Each chunk of ``CHUNK_ROWS`` records is one
    row group, as ``write_table`` cuts the whole table. The CSV is :func:`write_csv`'s,
    chunk after chunk under one header: every value is written on its own, so the bytes are
    those of the whole frame."""
    chunk: pd.DataFrame | None = next(chunks)
    assert chunk is not None
    schema = pa.Schema.from_pandas(chunk, preserve_index=False)
    columns = list(map(str, chunk.columns))
    rows = 0
    with pq.ParquetWriter(parquet, schema) as writer, open(csv, "wb") as out:
        out.write(chunk.iloc[:0].to_csv(index=False).encode())
        while chunk is not None:
            writer.write_table(_as_table(chunk, schema))
            _append_csv(chunk, out, csv)
            rows += len(chunk)
            chunk = None  # let it go before the next one is read: one frame at a time
            chunk = next(chunks, None)
    return rows, columns


def _as_table(chunk: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """``chunk`` as Arrow with the first chunk's ``schema`` (a column missing throughout that
    chunk has Arrow's null type there: it is the chunk's own type then, for that column)."""
    if all(not pa.types.is_null(f.type) for f in schema):
        return pa.Table.from_pandas(chunk, schema=schema, preserve_index=False)
    table = pa.Table.from_pandas(chunk, preserve_index=False)
    if any(pa.types.is_null(f.type) and not pa.types.is_null(table.schema.field(i).type)
           for i, f in enumerate(schema)):  # fmt: skip
        raise ValueError(
            "a column missing throughout the release's first chunk of records holds values "
            "later, so its type is unknown when the files start; publish the release from "
            "a frame (write_release with a DataFrame), whose type is the whole column's"
        )
    return table.replace_schema_metadata(schema.metadata).cast(schema)


def _append_csv(chunk: pd.DataFrame, out: Any, path: Path) -> None:
    """Append the rows of ``chunk`` (no header) to ``out``: DuckDB's COPY where it writes
    every value as pandas does, pandas' writer otherwise (:func:`write_csv`)."""
    if not len(chunk):
        return
    body = path.with_name(path.name + ".body")
    if _duckdb_writes(chunk, body) and _copy_body(chunk, body):
        try:
            with open(body, "rb") as rows:
                shutil.copyfileobj(rows, out, 1 << 20)
        finally:
            body.unlink(missing_ok=True)
        return
    out.write(chunk.to_csv(index=False, header=False).encode())


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """``frame.to_csv(path, index=False)``, byte for byte; faster on frames of
    float64, int64 and text columns.

    Those are written by DuckDB's multi-threaded ``COPY``, whose numbers are the shortest
    round-trip digits pandas writes (``repr``: ``1.0``, ``1e-05``, ``-0.0``, ``inf``; a
    missing value an empty field), in the frame's row order; the header is pandas' own. A
    text column goes to DuckDB when its distinct values come out as pandas writes them
    (:func:`_text_as_pandas_writes`). Any other column (booleans, dates, nullable integers,
    text DuckDB would quote otherwise) and a single column (pandas quotes an empty line
    there) take pandas' writer, as does a frame DuckDB cannot scan.
    ``tests/test_publish_csv.py`` compares the bytes of both writers.

    Raises
    ------
    OSError
        The file could not be written (``errno`` as the system gave it, e.g. ENOSPC);
        nothing of DuckDB's is left beside ``path``.
    KeyboardInterrupt
        Interrupted while DuckDB wrote (DuckDB says ``Query interrupted``).
    """
    path = Path(os.path.abspath(path))  # DuckDB would expand a leading "~"; Python does not
    body = path.with_name(path.name + ".body")
    if not _duckdb_writes(frame, body) or not _copy_body(frame, body):
        frame.to_csv(path, index=False)
        return
    try:
        with open(path, "wb") as out:
            out.write(frame.iloc[:0].to_csv(index=False).encode())
            with open(body, "rb") as rows:
                shutil.copyfileobj(rows, out, 1 << 20)
    finally:
        body.unlink(missing_ok=True)


def _duckdb_writes(frame: pd.DataFrame, body: Path) -> bool:
    """Whether DuckDB's COPY writes every field of ``frame`` as pandas' writer does: at least
    two columns (pandas quotes the empty line of a single one), each float64, int64, or text
    (``object`` or pandas' ``str``) whose distinct values DuckDB renders as pandas does
    (:func:`_text_as_pandas_writes`, tried on ``body``, which is left absent)."""
    if frame.shape[1] < 2:
        return False
    for j in range(frame.shape[1]):
        column = frame.iloc[:, j]
        if column.dtype in (np.dtype("float64"), np.dtype("int64")):
            continue
        text = column.dtype == np.dtype("object") or isinstance(column.dtype, pd.StringDtype)
        if not text or not _text_as_pandas_writes(column, body):
            return False
    return True


def _text_as_pandas_writes(column: pd.Series, body: Path) -> bool:
    """Whether every distinct value of the text ``column`` (str, or missing) comes out of
    DuckDB's COPY as pandas writes it. The writers quote differently at the edges (DuckDB
    quotes an empty string, a leading ``#`` and a carriage return; pandas none of them), so
    rather than a list of rules, the distinct values are written by both, each after its
    position, and the bytes compared. Categorical keys hold a few distinct values, so the
    trial costs little beside the column."""
    if pd.api.types.infer_dtype(column, skipna=True) not in ("string", "empty"):
        return False
    values = pd.unique(column.to_numpy())
    trial = pd.DataFrame({"i": np.arange(len(values)), "v": pd.Series(values, dtype=object)})
    if not _copy_body(trial, body):
        return False
    try:
        return body.read_bytes() == trial.to_csv(index=False, header=False).encode()
    finally:
        body.unlink(missing_ok=True)


def _copy_body(frame: pd.DataFrame, body: Path) -> bool:
    """Write the rows of ``frame`` to ``body`` with DuckDB's COPY; False (and no file) when
    DuckDB cannot scan the frame."""
    if any(frame.iloc[:, j].to_numpy().strides[0] < 0 for j in range(frame.shape[1])):
        frame = frame.copy()  # DuckDB cannot scan a column laid out backwards (a reversed view)
    con = duckdb.connect()
    done = False
    try:
        # positional names: DuckDB needs none of the frame's (any string is a valid header)
        con.register("frame", frame.set_axis(range(frame.shape[1]), axis=1))
        quoted = str(body).replace("'", "''")
        con.execute(f"COPY frame TO '{quoted}' (FORMAT csv, HEADER false, DELIMITER ',')")
        done = True
    except duckdb.IOException as e:  # as pandas' writer would say it: an OSError
        raise OSError(_errno_of(str(e)), str(e).splitlines()[0], str(body)) from e
    except (duckdb.InterruptException, RuntimeError) as e:
        if isinstance(e, duckdb.InterruptException) or "interrupted" in str(e).lower():
            raise KeyboardInterrupt from e
        raise
    except duckdb.Error:
        pass  # a frame DuckDB cannot scan: pandas' writer gives the same bytes
    finally:
        con.close()
        if not done:
            body.unlink(missing_ok=True)
    return done


def _errno_of(message: str) -> int:
    """The errno in a DuckDB I/O error (its JSON carries it), else read from its words."""
    found = re.search(r'"errno"\s*:\s*"?(\d+)', message)
    if found:
        return int(found.group(1))
    for words, code in (
        ("No space left on device", errno.ENOSPC),
        ("Read-only file system", errno.EROFS),
        ("Permission denied", errno.EACCES),
        ("No such file or directory", errno.ENOENT),
    ):
        if words in message:
            return code
    return errno.EIO


_APPEARED = (
    "appeared while this run was publishing (another run, e.g. of the same release from "
    "another warehouse, published there first); run again to replace it"
)


def _swap(tmp: Path, target: Path, output: Path, release: str) -> Path | None:
    """Put ``tmp`` at ``target``; return where the previous release now is (None if none)."""
    if not os.path.lexists(target):
        # never onto something that appeared meanwhile (a plain rename would replace an
        # empty folder)
        try:
            if _renameat2(tmp, target, _RENAME_NOREPLACE):
                return None
        except FileExistsError:
            pass  # the kernel's bare "File exists" said neither what appeared nor what to do
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, _APPEARED, str(target))
        tmp.rename(target)
        return None
    if _exchange(tmp, target):
        return tmp  # tmp now holds the previous release
    old = output / f".{release}.old-{os.getpid()}-{uuid.uuid4().hex}"
    target.rename(old)
    tmp.rename(target)
    return old
