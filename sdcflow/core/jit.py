"""The core's compiled kernels: ``numba.njit`` with the on-disk cache, safe when several
processes compile the same kernel at once.

numba's cache keeps, per function, one index (key -> data file name) and one data file per
key (signature, target). Saving a new key reads the index, takes the first free name, writes
the index, then the data. Two processes saving different keys of one function at the same
moment can both take the same name; the index one of them wrote then names the data the
other wrote, and the next process to load that key runs machine code compiled for other
types: a segfault or wrong figures (numba issue 4807). It can happen wherever two processes
compile at once: two releases, a Dask cluster's worker processes, a parallel test run. Here
every save holds an exclusive lock on a file in the cache's folder and every load a shared
one, so an index never names data written for another key, nor data half written.

A kernel that runs a parfor (``parallel=True``), and every kernel between it and the cached
kernel that calls it, is compiled in the process and never cached (:func:`uncached_njit`):
numba links a callee loaded from the cache into a caller it compiles, and a parfor linked so
leaves the caller's cache entry calling code that no later process has, a segfault in every
process that loads it. That happens whenever the callee is cached and the caller is not: a
process that stopped between the two saves, a second process compiling beside the first, or
an upgrade that changes the caller's module and not the callee's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numba
from numba.core.caching import IndexDataCacheFile

F = TypeVar("F", bound=Callable[..., Any])

#: The lock beside numba's index and data files (empty; it holds no record).
LOCK_NAME = "sdcflow-kernels.lock"


@contextlib.contextmanager
def _locked(folder: str, operation: int) -> Iterator[None]:
    """Hold ``fcntl.flock(operation)`` on the folder's lock file, opened read-only (``flock``
    needs no write access, so a lock file another user made serves too). Without the folder
    (nothing cached yet), the right to create the file there (a cache numba cannot write to
    either) or locks on its file system (``flock`` refused, as on some network and FUSE file
    systems), the block runs unlocked, as numba alone runs it."""
    try:
        fd = os.open(os.path.join(folder, LOCK_NAME), os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):  # no locks on this file system: numba's behaviour
            fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)  # releases the lock


class LockedCacheFile(IndexDataCacheFile):
    """numba's index and data files, read under a shared lock and written under an
    exclusive one (the lock of :func:`_locked`, one per cache folder)."""

    def save(self, key: Any, data: Any) -> None:
        with _locked(self._cache_path, fcntl.LOCK_EX):
            super().save(key, data)

    def load(self, key: Any) -> Any:
        with _locked(self._cache_path, fcntl.LOCK_SH):
            return super().load(key)

    def flush(self) -> None:
        with _locked(self._cache_path, fcntl.LOCK_EX):
            super().flush()


def cached_njit(**options: Any) -> Callable[[F], F]:
    """``numba.njit(cache=True, **options)`` whose cache files are read and written under
    :class:`LockedCacheFile`'s locks: ``@cached_njit(nogil=True)`` on a function of a
    module (numba caches no function it cannot find a source file for)."""

    if options.get("parallel"):
        raise ValueError(
            "a parallel kernel is linked into its callers: compile it with uncached_njit "
            "(a cached one, loaded into a caller compiled later, leaves that caller's cache "
            "entry calling code no later process has)"
        )

    def decorate(function: F) -> F:
        dispatcher = numba.njit(cache=True, **options)(function)
        cache = getattr(dispatcher, "_cache", None)
        files = getattr(cache, "_cache_file", None)
        if type(files) is IndexDataCacheFile:  # the same fields; only save and load differ
            files.__class__ = LockedCacheFile
        return dispatcher

    return decorate


def uncached_njit(**options: Any) -> Callable[[F], F]:
    """``numba.njit(**options)`` without the on-disk cache: for a kernel that runs a parfor
    and for every kernel between it and the cached kernel that calls it, so that a caller
    compiled later links them from this process's compilation, never from the cache (the
    module's docstring says why). Their code is cached inside that caller's entry."""
    return numba.njit(cache=False, **options)


__all__ = ["LOCK_NAME", "LockedCacheFile", "cached_njit", "uncached_njit"]
