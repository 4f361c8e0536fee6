"""Scale-out: the mask's independent pieces as Prefect tasks on the flow's Dask task runner.

Under ``runner: dask`` the release flow runs with prefect-dask's ``DaskTaskRunner``
(:mod:`sdcflow.flows.runners`). Inside the mask step, :func:`scaled_out` installs
:func:`submitted_parts` as the core's map (:mod:`sdcflow.core.parallel`): every piece the
core cuts -- a spatial cell to group (``mask-cell``), a part of the border search
(``mask-border``), a chunk of the exact neighbour search of the loss's lower bound
(``mask-bound``) -- is one :func:`run_part` task run submitted to the cluster (or, when a
step cuts many more pieces than the cluster has workers, one of a bundle of consecutive
pieces: ``TASK_RUNS_PER_WORKER``), and receives that piece's data only. Cutting, assembling,
and everything after the mask (edit rules, gates, publication) run in the flow's process on
the assembled release, so every gate is computed over the whole release, and the pieces do
not depend on the map: the labels are those of the local runner, record for record.
:func:`warm_up` has every worker load the mask's code while the flow ingests.

Which methods run under Dask is declared by the method (``Method.scale_out``);
:func:`sdcflow.preflight.runner.check_runner` refuses the others before any work (reason
``runner``).
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from prefect import get_run_logger, task
from prefect.context import FlowRunContext, TaskRunContext
from prefect.futures import PrefectFuture

from sdcflow.core.microaggregation.blocked import warm_mask
from sdcflow.core.parallel import current_stage, part_map, piece_threads
from sdcflow.methods import get_method
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.tasks.progress import Progress


def on_dask() -> bool:
    """True inside a flow run whose task runner is prefect-dask's ``DaskTaskRunner``."""
    context = FlowRunContext.get()
    if context is None or "prefect_dask" not in sys.modules:
        # a DaskTaskRunner's module is imported before it runs anything; without it (the
        # dask extra not installed, or a local run) this never imports distributed
        return False
    from prefect_dask import DaskTaskRunner

    return isinstance(context.task_runner, DaskTaskRunner)


#: At most this many task runs per worker for one kind of piece: more pieces than that are
#: run in bundles of consecutive pieces, one task run each. A task run costs its worker a
#: fixed share of Prefect's bookkeeping (its states and logs sent to the API), which for
#: hundreds of small cells outweighs the cells themselves; a bundle pays it once. The
#: pieces and their results are the same whatever the bundles.
TASK_RUNS_PER_WORKER = 16


@task(name="mask-part", **STEP)
def run_part(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """One independent piece of the mask: ``fn(*args)`` on a worker (a cell to group, a part
    of the border search, a chunk of a neighbour query); it receives only that piece's data.

    Logs the piece's (or bundle's) wall seconds and the CPU seconds of the thread that ran
    it, so that the time the workers spent on the pieces themselves can be told from the
    rest of the mask step (``benchmarks/scale.py`` reads these lines). The piece runs on
    this one thread (:func:`~sdcflow.core.parallel.piece_threads`)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    with piece_threads(1):  # one task, one of the worker's threads: no more
        out = fn(*args)
    pieces = len(args[1]) if fn is run_bundle else 1
    get_run_logger().info(
        "%s done in %.2f s wall, %.2f s CPU",
        "piece" if pieces == 1 else f"{pieces} pieces",
        time.perf_counter() - wall,
        time.thread_time() - cpu,
    )
    return out


def _size(calls: Sequence[tuple[Any, ...]]) -> int:
    """The bytes of the arrays the pieces ``calls`` receive: how large their work is."""
    return sum(a.nbytes for args in calls for a in args if isinstance(a, np.ndarray))


def run_bundle(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Consecutive pieces in one task run: ``[fn(*args) for args in calls]``."""
    return [fn(*args) for args in calls]


@contextmanager
def _nothing_but_the_piece() -> Iterator[None]:
    """Submit without the run's parameters: Prefect serializes the submitting flow run's and
    task run's contexts, *with their parameters*, into every task it sends to a worker -- the
    release flow's ``plan`` (the whole source file as read) and the mask task's ``frame``
    (every record). Inside this block both contexts are copies without parameters, so a
    worker receives a piece's own data only."""
    tokens = []
    for context in (FlowRunContext, TaskRunContext):
        current = context.get()
        if current is not None and current.parameters:
            bare = current.model_copy(update={"parameters": {}})
            tokens.append((context, context.__var__.set(bare)))
    try:
        yield
    finally:
        for context, token in reversed(tokens):
            context.__var__.reset(token)


def submitted_parts(
    fn: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    label: str,
    release: str = "",
    workers: int = 0,
) -> list[Any]:
    """A :data:`~sdcflow.core.parallel.PartMap` that submits the pieces as task runs
    (``mask-<label>``: ``mask-cell``, ``mask-border``, ``mask-bound``) to the flow's task
    runner and collects the results in the order of ``calls``: one task run per piece, or,
    with more than ``TASK_RUNS_PER_WORKER`` pieces per worker (``workers``; 0: unknown,
    never bundle), bundles of consecutive pieces. With ``release``, the pieces done so far
    move a progress artifact (``<release>-mask-<label>-progress``) and the command line's
    bar as each task run ends."""
    per = -(-len(calls) // (TASK_RUNS_PER_WORKER * workers)) if workers > 0 else 1
    bounds = [*range(0, len(calls), max(per, 1)), len(calls)]
    spans = list(itertools.pairwise(bounds))
    runner = run_part.with_options(name=f"mask-{label}")
    # largest first: the cluster starts pieces in the order they come, and a large piece
    # started last leaves the other workers idle at the end of the stage
    futures: list[Any] = [None] * len(spans)
    with _nothing_but_the_piece(), warnings.catch_warnings():
        # distributed warns of a "large graph" (over 10 MB) and advises loading the data
        # with Dask: a piece's data is its own, sent once however it is sent
        warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
        for i in sorted(range(len(spans)), key=lambda i: -_size(calls[slice(*spans[i])])):
            lo, hi = spans[i]
            futures[i] = (
                runner.submit(fn, calls[lo])
                if hi - lo == 1
                else runner.submit(run_bundle, (fn, calls[lo:hi]))
            )
    names = [f"{label} {lo + 1}" if hi - lo == 1 else f"{label}s {lo + 1}-{hi}" for lo, hi in spans]
    if current_stage():  # e.g. once per stratum: say which, as the count starts again
        names = [f"{current_stage()}: {name}" for name in names]
    progress = Progress(release, f"mask-{label}", names) if release else None
    index = {id(future): i for i, future in enumerate(futures)}
    for future in completed(futures, f"mask-{label} task runs"):
        if progress is not None:
            progress.advance(names[index[id(future)]])
    results: list[Any] = []
    for (lo, hi), future in zip(spans, futures, strict=True):
        results.extend([future.result()] if hi - lo == 1 else future.result())
    get_run_logger().info(
        "ran %d %s pieces as %d task runs on the cluster", len(calls), label, len(futures)
    )
    return results


#: How long pieces wait on a cluster without any worker before the run fails: an embedded
#: cluster restarts a dead worker within seconds, but an external cluster (``dask.address``)
#: whose workers all died would hold the run "running" for ever.
NO_WORKER_SECONDS = 300.0
#: How often the wait looks at the cluster's workers while no piece ends.
WATCH_SECONDS = 5.0


class ClusterError(RuntimeError):
    """The cluster has had no worker for ``NO_WORKER_SECONDS`` while pieces waited (the run
    fails: exit 3, nothing published)."""


def completed(futures: Sequence[PrefectFuture], what: str = "task runs") -> Iterator[PrefectFuture]:
    """``futures`` as each one ends (in the order they end), watching the cluster meanwhile:
    when it has had no worker at all for ``NO_WORKER_SECONDS`` (every worker of an external
    cluster died, or its scheduler), raise :class:`ClusterError` instead of waiting for ever.
    Futures of another runner are awaited in turn.

    The futures' own done-callbacks wake the wait: not ``distributed.wait`` (it needs a
    default client, which the flow's process does not have) nor Prefect's ``as_completed``
    with a timeout (it arms ``SIGALRM`` in the main thread while the caller runs)."""
    if not futures:
        return
    from distributed import Future

    pending: dict[int, PrefectFuture] = {}
    ended: list[int] = []
    lock = threading.Lock()
    woken = threading.Event()

    def ended_one(wrapped: Future) -> None:
        with lock:
            ended.append(id(wrapped))
        woken.set()

    for future in futures:
        wrapped = getattr(future, "wrapped_future", None)
        if not isinstance(wrapped, Future):
            future.wait()
            yield future
            continue
        pending[id(wrapped)] = future
        wrapped.add_done_callback(ended_one)
    alone_since: float | None = None
    while pending:
        if woken.wait(WATCH_SECONDS):
            with lock:
                batch = [i for i in ended if i in pending]
                ended.clear()
                woken.clear()
            alone_since = None
            for i in batch:
                yield pending.pop(i)
            continue
        if _live_workers() > 0:
            alone_since = None
            continue
        now = time.monotonic()
        alone_since = now if alone_since is None else alone_since
        if now - alone_since >= NO_WORKER_SECONDS:
            raise ClusterError(
                f"the Dask cluster has had no worker for {now - alone_since:.0f} s while "
                f"{len(pending)} {what} waited; start workers on it (`dask worker "
                "<scheduler address>`) and run the release again"
            )


def _live_workers() -> int:
    """Workers the flow's cluster has now; 0 when its scheduler does not answer within 5 s."""
    try:
        client = FlowRunContext.get().task_runner.client
        return len(client.nthreads(callback_timeout=5))
    except Exception:
        return 0


def warm_up(spec: ReleaseSpec) -> list[PrefectFuture]:
    """On a Dask cluster, one piece per worker that loads the mask's code (the modules and
    their compiled kernels, the Prefect task engine) while the flow's process ingests and
    validates, so that the first cells do not pay for it; no data leaves the flow's process.
    Nothing on the local runner or for a method that does not scale out."""
    if not on_dask() or get_method(spec.method.name).scaling(spec.method) is None:
        return []
    runner = run_part.with_options(name="mask-warm")
    with _nothing_but_the_piece():
        return [runner.submit(_warm, ()) for _ in range(_workers(spec))]


def _workers(spec: ReleaseSpec) -> int:
    """How many workers the cluster has: those it started with, or those an existing
    cluster (``dask.address``) reports now; the local CPUs when it cannot say."""
    if spec.dask.workers:
        return spec.dask.workers
    # a cluster that does not answer: the mask step will say so
    return _live_workers() or os.cpu_count() or 1


def _warm() -> None:
    """One warm-up piece: a failure here costs the first cell its load time, never the run
    (nor an error line in its logs)."""
    try:
        warm_mask()
    except Exception:
        pass


def settle(futures: Sequence[PrefectFuture], timeout: float) -> None:
    """Wait for ``futures`` (e.g. the warm-up pieces) ``timeout`` seconds in all, not each."""
    deadline = time.monotonic() + timeout
    for future in futures:
        future.wait(timeout=max(0.0, deadline - time.monotonic()))


@contextmanager
def scaled_out(warm: Sequence[PrefectFuture] = (), release: str = "") -> Iterator[bool]:
    """Inside this block, the mask's independent pieces run on the Dask cluster when the flow
    runs on one; yields whether it does. ``warm``: the futures of :func:`warm_up`, awaited
    here (they are done long before); ``release``: names the pieces' progress artifacts."""
    for _ in completed(warm, "mask-warm task runs"):
        pass
    if not on_dask():
        yield False
        return
    # warm_up submitted one piece per worker
    with part_map(functools.partial(submitted_parts, release=release, workers=len(warm))):
        yield True
