"""Who owns what: processes, advisory locks, and the moments a signal must wait.

* :class:`FileLock` — an exclusive ``flock(2)`` on a lock file, held for as long as a run
  needs it and released by the kernel when the process ends in any way (``SIGKILL``
  included), so a crashed run never leaves a stale lock. The lock is re-entrant within one
  process (a ``flock`` taken on a second descriptor of the same file would wait for itself).
* :func:`locked_by_other` — whether a path is ``flock``-ed by a live holder (a temporary
  directory its run still works in), without waiting.
* :class:`IncompleteFolder` / :func:`sweep_incomplete` — a folder a run fills (its report
  folder) is marked incomplete until the run completes it; a later run removes the folders
  of runs that ended first.
* :func:`deferred_signals` — a critical section: ``SIGINT`` and ``SIGTERM`` that arrive inside
  it are held back and acted on when it ends, so that a publication and its audit record
  complete together or not at all.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from sdcflow.warehouse.private import private_folder

__all__ = [
    "INCOMPLETE",
    "FileLock",
    "IncompleteFolder",
    "LockTimeout",
    "deferred_signals",
    "hold",
    "locked_by_other",
    "pending_signals",
    "process_alive",
    "sweep_incomplete",
    "take_pending_signals",
]


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


class LockTimeout(Exception):
    """The lock stayed held by another process for the whole wait; ``holder`` is its pid as
    written in the lock file (None when unknown)."""

    def __init__(self, path: Path, holder: int | None, waited: float) -> None:
        super().__init__(f"{path} is locked by another process")
        self.path, self.holder, self.waited = path, holder, waited


_held: dict[str, tuple[int, int]] = {}  # resolved lock path -> (fd, depth)
_held_guard = threading.Lock()


class FileLock:
    """An exclusive, process-re-entrant ``flock`` on ``path`` (created if absent, never
    removed: removing a lock file while another process waits on it would let two holders in).

    Parameters
    ----------
    path : Path
        The lock file.
    wait : float
        Seconds to wait for another holder to let go before :class:`LockTimeout`.
    poll : float
        Seconds between attempts.
    """

    def __init__(self, path: str | Path, wait: float = 0.0, poll: float = 0.1) -> None:
        self.path = Path(path)
        self.wait = max(0.0, float(wait))
        self.poll = poll
        self._key = os.path.realpath(self.path)

    @property
    def held(self) -> bool:
        """Whether this process holds the lock."""
        return self._key in _held

    def acquire(self) -> None:
        with _held_guard:
            if self._key in _held:
                fd, depth = _held[self._key]
                _held[self._key] = (fd, depth + 1)
                return
        fd = os.open(self._key, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + self.wait
        start = time.monotonic()
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(
                            self.path, _holder(fd), time.monotonic() - start
                        ) from None
                    time.sleep(self.poll)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        with _held_guard:
            _held[self._key] = (fd, 1)

    def release(self) -> None:
        with _held_guard:
            fd, depth = _held[self._key]
            if depth > 1:
                _held[self._key] = (fd, depth - 1)
                return
            del _held[self._key]
        os.close(fd)  # closing the only descriptor releases the flock

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or "x")
    except (OSError, ValueError):
        return None


def locked_by_other(path: Path) -> bool:
    """Whether another open descriptor holds a ``flock`` on ``path`` (a file or a folder).

    False when ``path`` is gone. A holder in this very process counts as "other" too: the
    check takes a lock of its own on a new descriptor.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)  # also drops the lock just taken
    return False


@contextmanager
def hold(path: Path) -> Iterator[int]:
    """Keep a ``flock`` on ``path`` (a folder this run created) while the block runs: other
    processes' :func:`locked_by_other` then see it as in use. Yields the descriptor."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield fd
    finally:
        os.close(fd)


# -- signals --------------------------------------------------------------------------------

_DEFERRED = (signal.SIGINT, signal.SIGTERM)
_pending: list[int] = []


def pending_signals() -> list[int]:
    """Signals received inside a :func:`deferred_signals` block of this process, in order,
    not yet acted on (the command line reads them after the flow returns)."""
    return list(_pending)


def take_pending_signals() -> list[int]:
    """:func:`pending_signals`, and forget them."""
    out = list(_pending)
    _pending.clear()
    return out


@contextmanager
def deferred_signals(*, redeliver: bool = False) -> Iterator[None]:
    """Hold back ``SIGINT`` and ``SIGTERM`` while the block runs.

    A signal that arrives inside the block is recorded (:func:`pending_signals`) and the block
    runs to its end. On exit the previous handlers are restored; with ``redeliver=True`` each
    recorded signal is then sent again to this process (so the restored handler acts on it
    at once), otherwise it stays pending for the caller to act on.

    Python runs signal handlers in the main thread only; in another thread the block runs
    without deferral (nothing can be installed there), which is what a thread would get
    anyway: its signals are handled by the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def _record(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        _pending.append(signum)

    previous: dict[int, Any] = {}
    try:
        for sig in _DEFERRED:
            previous[sig] = signal.signal(sig, _record)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if redeliver and received:
            _pending[:] = [sig for sig in _pending if sig not in received]
            for sig in dict.fromkeys(received):
                os.kill(os.getpid(), sig)


# -- folders a run fills --------------------------------------------------------------------------

INCOMPLETE = ".sdcflow-incomplete"


class IncompleteFolder:
    """A folder this run creates and fills (a run's report folder): marked incomplete, with
    the marker ``flock``-ed, until :meth:`complete`; :meth:`discard` removes it.

    The marker names the process. If the run ends without completing (an error, a full disk,
    ``SIGKILL``), :func:`sweep_incomplete` in a later run removes the folder: its owner is gone
    and nobody holds the marker's lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def create(self) -> IncompleteFolder:
        """Make the folder (and its missing parents) ``0700``, whatever the umask: a run's
        report folder holds figures about the confidential records."""
        private_folder(self.path, exist_ok=False)
        marker = self.path / INCOMPLETE
        try:
            fd = os.open(marker, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except BaseException:  # a signal before the marker: leave no unmarked folder
            self.path.rmdir()
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, f"{os.getpid()}\n".encode())
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def complete(self) -> None:
        """The folder is whole: drop the marker (and its lock)."""
        try:
            (self.path / INCOMPLETE).unlink(missing_ok=True)
        finally:
            self._close()

    def discard(self) -> None:
        """Remove the folder and everything this run wrote into it: the marker last, so that
        a signal that stops the removal halfway (a burst of ``SIGTERM``) leaves a folder a
        later run's :func:`sweep_incomplete` still recognises and removes (a partial folder
        without its marker would stay for good)."""
        marker = self.path / INCOMPLETE
        try:
            entries = list(os.scandir(self.path))
        except OSError:
            entries = []
        for entry in entries:
            if entry.name == INCOMPLETE:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        self._close()
        with contextlib.suppress(OSError):
            if os.listdir(self.path) == [INCOMPLETE]:  # what could not go keeps the marker
                marker.unlink()
                self.path.rmdir()


def sweep_incomplete(root: Path, depth: int = 2) -> list[Path]:
    """Remove the folders ``depth`` levels below ``root`` whose :class:`IncompleteFolder`
    marker belongs to a run that is over (process gone, marker not locked). Returns them."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    pattern = "/".join(["*"] * depth) + f"/{INCOMPLETE}"
    for marker in root.glob(pattern):
        folder = marker.parent
        if folder.is_symlink() or marker.is_symlink():
            continue
        try:
            pid = int(marker.read_text().strip() or "0")
        except (OSError, ValueError):
            pid = 0
        if pid and process_alive(pid) and pid != os.getpid():
            continue
        if locked_by_other(marker):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
