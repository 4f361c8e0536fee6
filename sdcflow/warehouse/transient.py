"""Which errors of the warehouse and the file system are transient: worth a retry.

A retry helps when the same operation can succeed a moment later without anything being
fixed: another process holding the DuckDB file past the connection's own retries
(:class:`~sdcflow.errors.WarehouseBusy`), an interrupted or timed-out system call, a busy or
stale (network) file handle. It never helps with bad input (:class:`~sdcflow.errors.InputError`
and every other error sdcflow raises on purpose), a full disk or quota, a read-only file
system, missing permissions or a corrupt database: those fail at once, with their own message.
"""

from __future__ import annotations

import errno

import duckdb

from sdcflow.errors import SdcflowError, WarehouseBusy

__all__ = ["TRANSIENT_ERRNOS", "is_interrupted", "is_transient"]

# Interrupted, would block, busy, timed out, stale NFS handle, lock table full, I/O error of a
# network file system: each may clear by itself. ENOSPC, EDQUOT, EROFS, EACCES, EPERM, ENOENT
# never do.
TRANSIENT_ERRNOS = frozenset(
    {
        errno.EINTR,
        errno.EAGAIN,
        errno.EBUSY,
        errno.ETIMEDOUT,
        errno.ESTALE,
        errno.ENOLCK,
        errno.EIO,
        errno.ECONNRESET,
    }
)

_PERMANENT_TEXT = ("No space left", "Disk quota", "Read-only file system", "Permission denied")


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` may clear by itself, so that retrying the same step is worth it."""
    if isinstance(error, WarehouseBusy):
        return True
    if isinstance(error, SdcflowError):  # bad input, checks refused: a retry changes nothing
        return False
    if isinstance(error, OSError):
        return error.errno in TRANSIENT_ERRNOS
    if isinstance(error, duckdb.IOException):
        text = str(error)
        return not any(t in text for t in _PERMANENT_TEXT)
    return False


def is_interrupted(error: BaseException | None) -> bool:
    """Whether ``error`` is (or was caused by) a signal: ``KeyboardInterrupt`` (``SIGINT``, or
    ``SIGTERM`` as the command line raises it), or what DuckDB makes of one that arrives
    while a query runs, or pydantic of one while a model is serialized. DuckDB swallows the
    ``KeyboardInterrupt`` its query raised and raises ``RuntimeError('Query interrupted')``
    instead, which would otherwise read as an unexpected error (exit 3, the run ``failed``)
    instead of an interruption (exit 130, ``interrupted``).
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (KeyboardInterrupt, duckdb.InterruptException)):
            return True
        if type(error) is RuntimeError and str(error).startswith("Query interrupted"):
            return True
        # pydantic wraps what a serializer raised -- a signal's KeyboardInterrupt while
        # Prefect serializes its models too -- in its own error, without a cause; the
        # error's text names it
        if type(error).__name__ == "PydanticSerializationError" and (
            "KeyboardInterrupt" in str(error)
        ):
            return True
        error = error.__cause__ or error.__context__
    return False
