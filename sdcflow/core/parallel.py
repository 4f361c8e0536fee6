"""Independent pieces of work, run by whichever map the caller installs.

The numerical core cuts large jobs into pieces that need nothing from each other (the spatial
cells of a blocked microaggregation, the parts of its border search, the chunks of a
nearest-neighbour query) and hands them to :func:`map_parts`. By default the pieces run one
after the other in this process (:func:`serial_map`); the Dask runner installs a map that
submits each piece as a Prefect task run to the cluster (:mod:`sdcflow.tasks.scale`).
A piece is ``fn(*args)`` with ``fn`` a module-level function (a map may ship it to another
process) and its arguments only what that piece needs; results come back in the order of the
calls, so nothing computed depends on the map.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

from sdcflow.errors import ParameterError

Call = tuple[Any, ...]
#: ``map(fn, calls, label) -> [fn(*args) for args in calls]``, in the order of ``calls``;
#: ``label`` names the kind of piece (``cell``, ``border``, ``bound``) for logs and task names.
PartMap = Callable[[Callable[..., Any], Sequence[Call], str], list[Any]]


def serial_map(fn: Callable[..., Any], calls: Sequence[Call], label: str = "part") -> list[Any]:
    """The default :data:`PartMap`: one piece after the other in this process."""
    return [fn(*args) for args in calls]


_MAP: ContextVar[PartMap] = ContextVar("sdcflow_part_map", default=serial_map)
_STAGE: ContextVar[str] = ContextVar("sdcflow_part_stage", default="")
_THREADS: ContextVar[int] = ContextVar("sdcflow_piece_threads", default=-1)


@contextmanager
def _holding(var: ContextVar[Any], value: Any) -> Iterator[None]:
    """``var`` is ``value`` inside this block (this thread and context only)."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def part_map(mapper: PartMap) -> AbstractContextManager[None]:
    """Run the pieces of :func:`map_parts` with ``mapper`` inside this block (this thread and
    context only), e.g. in parallel on a cluster; the results are the same."""
    return _holding(_MAP, mapper)


def map_parts(fn: Callable[..., Any], calls: Sequence[Call], label: str = "part") -> list[Any]:
    """``[fn(*args) for args in calls]`` with the installed map (:func:`part_map`)."""
    calls = list(calls)
    if len(calls) <= 1:  # nothing to spread
        return serial_map(fn, calls, label)
    return _MAP.get()(fn, calls, label)


def stage(name: str) -> AbstractContextManager[None]:
    """Name the part of the work that the pieces mapped inside this block belong to (e.g.
    ``stratum 2 of 5``, when a method runs once per stratum), for a map's progress reports."""
    return _holding(_STAGE, name)


def current_stage() -> str:
    """The name :func:`stage` set around this call, or ``""``."""
    return _STAGE.get()


def parallel() -> bool:
    """Whether a map other than :func:`serial_map` is installed (worth cutting work for)."""
    return _MAP.get() is not serial_map


def piece_threads(n: int) -> AbstractContextManager[None]:
    """Inside this block a multithreaded call of the core (SciPy's KD-tree queries) uses
    ``n`` threads (:func:`threads`). A map that runs a piece on one thread of a cluster's
    worker sets 1: the cluster, not the piece, spreads the work over the cores, as Dask sets
    ``OMP_NUM_THREADS=1`` in its workers for BLAS. Without it, a worker's piece would run on
    every core of its machine, beside the other workers' pieces."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError(f"threads must be an integer >= 1, got {n!r}", field="threads")
    return _holding(_THREADS, n)


def threads() -> int:
    """Threads a multithreaded call may use in the current context, as SciPy's ``workers``
    argument: -1 (every core) unless :func:`piece_threads` says otherwise."""
    return _THREADS.get()
